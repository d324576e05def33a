"""What every printer of a fused program's kernel shares, whatever the library it prints
for: the numba kernels of the NumPy backend (``gradflow.backends.numpy.fused``) and the
CUDA C kernels of the CuPy backend (``gradflow.backends.cuda.kernels``) read a
``FusedProgram`` (``gradflow.passes.fusion``) through these.

- ``program_inputs``: the fused node's inputs, in order, as the members see them (their
  shapes and dtypes);
- ``input_patterns``: how each input is read when the output is seen as rows and
  columns (whole, a row, a column, one scalar, a repeating row);
- ``step_arguments``: each step's member with the names of the values it reads in the
  printed text: ``a0, a1...`` for the inputs' elements, ``t0, t1...`` for the steps'.
  A member's own expression over those names is its ``OpDef.scalar``; the numba
  printer writes its text as it is and the CUDA printer reads it as a tree
  (``gradflow.prim.scalar_tree``).
"""

from __future__ import annotations


def program_inputs(program):
    """The fused node's inputs, one per input position: the tensor the first member
    reading it takes there (its shape and dtype are what the kernel reads)."""
    first_use = {}
    for member, args in program.steps:
        for inp, a in zip(member.inputs, args):
            if a < program.num_inputs:
                first_use.setdefault(a, inp)
    return [first_use[k] for k in range(program.num_inputs)]


def step_arguments(program):
    """``[(member, [argument names])]``, one per step of ``program``, in order."""
    n = program.num_inputs
    names = [f"a{i}" for i in range(n)] + [f"t{k}" for k in range(len(program.steps))]
    return [(member, [names[a] for a in args]) for member, args in program.steps]


def input_patterns(program, shape, cycles=False):
    """``(split, [pattern per input])``: how each input is indexed when the output of
    static ``shape`` is seen as ``(rows, cols)`` split before axis ``split`` (``None``
    split: flat), or ``("none", None)`` if some input broadcasts in another way. The
    patterns are ``"full"``, ``"row"``, ``"col"`` and ``"scalar"``; with ``cycles`` an
    input may also repeat along the rows (``"cycle"``: row ``r`` reads element ``r``
    modulo its size), as an NCHW bias of shape ``(C, 1, 1)`` does."""
    rank = len(shape)
    kinds = []
    for inp in program_inputs(program):
        s = (1,) * (rank - len(inp.shape)) + tuple(inp.shape)
        if None in s:
            return "none", None
        kinds.append(_kind(s, shape, cycles))
    splits = None
    for kind, options in kinds:
        if kind == "split":
            here = set().union(*options)
            splits = here if splits is None else splits & here
    if splits is None:
        return None, [k for k, _ in kinds]
    if not splits:
        return "none", None
    split = min(splits)
    out = []
    for kind, options in kinds:
        if kind == "split":
            out.append("row" if split in options[0] else "col" if split in options[1]
                       else "cycle")
        else:
            out.append(kind)
    return split, out


def _kind(s, shape, cycles):
    """``(kind, options)`` of an input of shape ``s`` (padded to the output's rank):
    ``("scalar", None)``, ``("full", None)`` or ``("split", (rows, cols, repeats))``,
    the axes before which a split reads it as a row, a column or a repeating row."""
    rank = len(shape)
    if all(d == 1 for d in s):  # one element (also where the output has one)
        return "scalar", None
    if s == shape:
        return "full", None
    rows = {p for p in range(rank + 1)
            if all(d == 1 for d in s[:p]) and s[p:] == shape[p:]}
    cols = {p for p in range(rank + 1)
            if s[:p] == shape[:p] and all(d == 1 for d in s[p:])}
    repeats = {q for q in range(1, rank + 1) if cycles and all(d == 1 for d in s[q:])
               and any(all(d == 1 for d in s[:p]) and s[p:q] == shape[p:q]
                       for p in range(q))} - cols
    return "split", (rows, cols, repeats)
