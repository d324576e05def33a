"""Fused elementwise nodes on NumPy: a generated numba loop, or a ufunc sequence.

A fused node (``gradflow.passes.fusion``) of fixed shape whose every member
has a scalar expression (``OpDef.scalar``) becomes one
numba kernel: one pass over the output that reads each input element once
and writes each output once, once the output is large enough to pay for
compiling it. A kernel of ``PARALLEL_SIZE`` elements or more runs on the free
cores (``threads.team()``) where numba's threads are OpenMP's, the pool that
OpenBLAS and oneDNN share (``openmp.shared()``): each thread takes a part of the
rows, and every element gets the same bits on any number of threads. Elsewhere
kernels run on one thread: numba's own pool beside OpenBLAS's made the products
around a parallel kernel up to 20x slower (3.9 ms for Adam's update of a 784 x 512
weight, 0.19 ms in one pool, 0.27 ms on one thread). Inputs are read whole, as rows
(a bias: the trailing dimensions), as columns (a per-row value such as a
softmax's row maximum: the leading dimensions) or as one scalar; other
broadcasts, unknown shapes, and a machine without numba take the fallback,
which calls the members' own NumPy functions in turn and gives the numbers
of the unfused graph.

Programs with a transcendental op (``OpDef.transcendental``: exp, log, sin...) take
the fallback too, except float32 ``tanh`` (``FAST_TANH``). numba
calls the C library's scalar function for each element, where NumPy's ufuncs are
vectorized: measured over 262k float32 on this project's 2-core AVX-512 VM, a
numba loop of ``exp`` took 5x NumPy's ``np.exp``, ``log`` 7x, ``sin`` 13x,
``log1p`` 26x, ``expm1`` 33x and ``tanh`` 45x, so even a softmax gradient
(``exp(x) * g - onehot * g``) ran 3x faster as four ufunc passes than as one
kernel. ``sqrt`` compiles to the vector instruction and stays in kernels (2x
faster than ``np.sqrt`` there).

Both accept ``out=`` (one array, or a tuple with one entry per output, None
where the kernel should allocate), so the executor's memory plan applies.
"""

from __future__ import annotations

import math

import numpy as np

from gradflow.backends.base import generated_function
from gradflow.backends.cpu import openmp, threads
from gradflow.backends.cpu.numba_support import get_numba, load_kernel, on_team
from gradflow.backends.kernel_text import input_patterns, program_inputs, step_arguments

# Outputs smaller than this run the ufunc sequence: a kernel's compile time (paid
# once per kernel and machine, then cached on disk) is not worth it for tiny arrays.
MIN_KERNEL_SIZE = 2048
# ... unless the program is this long: then one call beats a call per op at any size;
# or it has several outputs written to variables (``FusedProgram.updates``: an
# optimizer's update of a variable and its slots): its kernel, shared by every variable
# of the same update, then updates them in place. Other small programs of several
# outputs (a forward keeping what its gradient reads) stay ufunc sequences: numba never
# frees a compiled kernel (about 1 MB each), and the op specs alone made about 740.
LONG_PROGRAM = 32
# Outputs this large run on several threads where the pool is shared: a parallel region
# costs a few microseconds; Adam's update of 262k floats takes about 130 us on one thread.
PARALLEL_SIZE = 1 << 17


def lower_fused(program, fns, shape, in_turn):
    """The callable of one fused node of static shape ``shape`` (None dims allowed), its
    members' functions ``fns``: a kernel, or ``in_turn(program, fns)``."""
    if len(fns) == 1 and isinstance(fns[0], np.ufunc):
        return fns[0]  # already one pass that writes into out=
    kernel = None
    # numba would compute a half-precision program in float32 and round only its
    # outputs; the ufuncs called in turn round after every op, as the unfused graph does
    vectorizable = not _has_half(program) and all(
        not m.opdef.transcendental or _fast_tanh(m) for m in program.members)
    if vectorizable and shape is not None and None not in tuple(shape) and (
            math.prod(shape) >= MIN_KERNEL_SIZE or len(fns) >= LONG_PROGRAM
            or (len(program.outputs) > 1 and program.updates)):
        kernel = _numba_kernel(program, tuple(int(d) for d in shape))
    if kernel is not None:
        return kernel
    run = in_turn(program, [_tiled(member, fn) for member, fn in zip(program.members, fns)])
    return _blocked(program, run, shape) or run


def _has_half(program):
    """Whether a member or an input of ``program`` is float16 or bfloat16."""
    return any(getattr(t.dtype, "is_half", False)
               for t in list(program.members) + list(program_inputs(program)))


# A ufunc sequence over a large output runs a block of rows at a time, so that its
# temporaries stay in the cache: the GELU of BERT's feed-forward layer (ten passes over
# 2048 x 512 float32, tanh among them) took 9.3 ms as whole-array passes.
BLOCK_ELEMENTS = 1 << 15
BLOCKED_MIN = 1 << 17


def _blocked(program, run, shape):
    """``run`` (a fused program's ufunc sequence, taking ``out=``) called on blocks of
    the output's rows, or None where that cannot be done: a small, unknown or 1-D
    shape, a member of another shape, an input that broadcasts along the rows in some
    other way than being constant along them, or no block size dividing the rows."""
    if not getattr(run, "accepts_out", False) or shape is None or None in tuple(shape) \
            or len(shape) < 2 or math.prod(shape) < BLOCKED_MIN:
        return None
    shape = tuple(int(d) for d in shape)
    if any(m.shape is None or tuple(m.shape) != shape for m in program.members):
        return None
    rank, sliced = len(shape), []
    for inp in program_inputs(program):
        if inp.shape is None or None in tuple(inp.shape) or len(inp.shape) > rank:
            return None
        full = len(inp.shape) == rank and inp.shape[0] == shape[0]
        if not full and len(inp.shape) == rank and inp.shape[0] != 1:
            return None
        sliced.append(full)
    rows = _block_rows(shape[0], max(1, BLOCK_ELEMENTS // math.prod(shape[1:])))
    if rows is None:
        return None
    dtypes = [program.members[k].dtype.as_numpy_dtype for k in program.outputs]
    single = len(dtypes) == 1

    def blocked(*inputs, out=None):
        outs = (out,) if single else tuple(out or (None,) * len(dtypes))
        outs = tuple(np.empty(shape, d) if o is None else o for o, d in zip(outs, dtypes))
        for start in range(0, shape[0], rows):
            part = slice(start, start + rows)
            run(*[x[part] if cut else x for x, cut in zip(inputs, sliced)],
                out=outs[0][part] if single else tuple(o[part] for o in outs))
        return outs[0] if single else outs

    blocked.accepts_out = True
    return blocked


def _block_rows(rows, target):
    """The largest divisor of ``rows`` at most ``target`` and at least a quarter of it
    (every block the same size: the sequence keeps its temporaries between calls), or
    None when there is none, or only one block."""
    for size in range(min(target, rows), max(1, target // 4) - 1, -1):
        if rows % size == 0:
            return size if size < rows else None
    return None


# A ufunc broadcasting a vector of fewer than TILE_BELOW values along the last axis of an
# array of at least TILE_MIN_SIZE elements runs on rows of TILE_ROW values or more, the
# vector repeated to match: NumPy's inner loop then runs over a row, not over the few
# channels (measured on the 2-core VM over 600k float32: adding 6 channels took 0.69
# ms, 0.13 on rows of 240; 32 channels 0.17 against 0.13). It happens in programs that
# take this sequence, such as a bias add before a tanh.
TILE_BELOW = 64
TILE_MIN_SIZE = 1 << 16
TILE_ROW = 256


def _tiled(member, fn):
    """``fn`` (a member's function), or where it is a two-input ufunc that broadcasts a
    short vector (of static size) over the last axis of an array, a function that
    computes it over longer rows when the array is large."""
    if not isinstance(fn, np.ufunc) or fn.nin != 2 or fn.nout != 1 \
            or len(member.inputs) != 2 or member.shape is None or len(member.shape) < 2:
        return fn
    shapes = [None if i.shape is None else tuple(i.shape) for i in member.inputs]
    full = tuple(member.shape)
    channels = full[-1]
    if channels is None or channels >= TILE_BELOW \
            or None in shapes or (channels,) not in shapes:
        return fn
    vector_first = shapes[0] == (channels,)
    if len(shapes[vector_first]) != len(full):
        return fn
    rows_of = {}  # the shape (rows, row) to compute in, per array shape; None: as it is

    def rows(shape):
        leading, fewest = math.prod(shape[:-1]), -(-TILE_ROW // channels)
        if leading * channels < TILE_MIN_SIZE:
            return None
        repeat = next((k for k in range(fewest, 16 * fewest) if leading % k == 0), None)
        return None if repeat is None else (leading // repeat, repeat * channels)

    def run(a, b, out=None):
        big, small = (b, a) if vector_first else (a, b)
        shape = big.shape
        found = rows_of[shape] if shape in rows_of else rows_of.setdefault(shape, rows(shape))
        if found is None or not big.flags.c_contiguous \
                or (out is not None and not out.flags.c_contiguous):
            return fn(a, b, out=out)
        row = np.tile(small, found[1] // channels)
        args = (row, big.reshape(found)) if vector_first else (big.reshape(found), row)
        if out is None:
            return fn(*args).reshape(shape)
        fn(*args, out=out.reshape(found))
        return out

    run.accepts_out = run.elementwise_out = True
    return run


def _expressions(program):
    """The scalar expression text of each member, or None if one has none."""
    lines = []
    for k, (member, args) in enumerate(step_arguments(program)):
        scalar = member.opdef.scalar  # None: a draw or a row sum (``kernel_passes``)
        expr = None if scalar is None else scalar(args, member)
        if expr is None:
            return None
        lines.append(f"t{k} = {expr}")
    return lines


# float32 tanh compiles to the LSTM kernels' rational tanh, which LLVM vectorizes
# (``numpy_lstm_jit._tanh``: within 4e-7 of np.tanh): BERT's GELU, ten passes over
# 2048 x 512 floats, is then one pass. (Not sigmoid: its 1/2 tanh + 1/2 would turn that
# absolute error into a relative one of 3e-5 for outputs near 0.) The comment naming
# it is part of the kernel's text, so a new version recompiles.
FAST_TANH = ("from gradflow.backends.numpy.lstm_jit import _tanh as tanh32"
             "  # numpy_lstm_jit._tanh, version 1\n")


_TANH_OPS = ("tanh", "gelu_tanh", "gelu_tanh_grad")  # ops whose only libm call is np.tanh


def _fast_tanh(member):
    """Whether ``member`` is a transcendental op that kernels compute without libm."""
    return member.opdef.name in _TANH_OPS and member.dtype is not None \
        and member.dtype.as_numpy_dtype == np.float32


def _numba_kernel(program, shape):
    numba = get_numba()
    if numba is None:
        return None
    lines = _expressions(program)
    if lines is None:
        return None
    lines = [line.replace("np.tanh(", "tanh32(") if _fast_tanh(member) else line
             for line, member in zip(lines, program.members)]
    split, kinds = input_patterns(program, shape, cycles=True)
    if split == "none":
        return None
    variants = {}
    team = math.prod(shape) >= PARALLEL_SIZE and openmp.shared()

    def kernel(over, threaded=False):
        """The kernel writing each output ``j`` over input ``over[j]`` (-1: its own), on
        ``threaded`` several threads."""
        found = variants.get((over, threaded))
        if found is None:
            source = _kernel_source(program, kinds, split is not None, lines, over,
                                    team, threaded)
            found = variants[over, threaded] = load_kernel(source, "kernel")
        return found

    return _kernel_caller(program, kernel, kinds, shape, split, team)


def _kernel_source(program, kinds, two_d, lines, over=None, team=False, threaded=False):
    """The kernel's module text. It takes the row and column counts (rows only for a
    flat kernel) and the arrays as they are (C-contiguous), and views them itself: the
    text does not depend on sizes, so every shape with these patterns shares it. With
    ``team`` it takes a thread count first (numba's own is set by the caller: inside a
    kernel it would keep numba from caching it), and a ``threaded`` kernel splits its
    rows over the threads (numba's ``prange``).

    ``over[j] = i`` (not -1) writes output ``j`` over input ``i`` (read in full), which
    the kernel then takes once: given twice, LLVM's run-time overlap check would fail
    and the loop would not vectorize."""
    n = program.num_inputs
    over = over or (-1,) * len(program.outputs)
    outs = [f"y{j}" for j in range(len(program.outputs)) if over[j] < 0]
    params = ", ".join(["T"] * team + ["R", "C"] + [f"x{i}" for i in range(n)] + outs)
    rows = "numba.prange(R)" if threaded else "range(R)"
    full = "(R, C)" if two_d else "R"
    views = {"full": full, "row": "C", "col": "R", "cycle": "x{i}.size"}
    body = []
    for i, kind in enumerate(kinds):
        body.append(f"s{i} = x{i}.reshape(1)[0]" if kind == "scalar"
                    else f"x{i} = x{i}.reshape({views[kind].format(i=i)})")
        if kind == "cycle":
            body.append(f"m{i} = x{i}.size")
    body += [f"{y} = {y}.reshape({full})" for y in outs]
    if two_d:
        body += [f"for r in {rows}:", "    for c in range(C):"]
        indent = "        "
        index = {"full": "[r, c]", "row": "[c]", "col": "[r]", "cycle": "[r % m{i}]"}
    else:
        body.append(f"for r in {rows}:")
        indent = "    "
        index = {"full": "[r]"}
    reads = [f"a{i} = s{i}" if kind == "scalar" else f"a{i} = x{i}{index[kind].format(i=i)}"
             for i, kind in enumerate(kinds)]
    writes = [f"{f'x{over[j]}' if over[j] >= 0 else f'y{j}'}{index['full']} = t{k}"
              for j, k in enumerate(program.outputs)]
    body += [indent + line for line in reads + lines + writes]
    flags = ", parallel=True" if threaded else ""
    fast = FAST_TANH if any("tanh32(" in line for line in lines) else ""
    return ("# generated by gradflow.backends.numpy.fused: one fused elementwise kernel\n"
            "import numba\nimport numpy as np\n" + fast + "\n\n"
            f"@numba.njit(cache=CACHE, nogil=True, error_model='numpy'{flags})\n"
            f"def kernel({params}):\n" + "".join(f"    {line}\n" for line in body))


def _kernel_caller(program, kernel, kinds, shape, split, team=False):
    """A generated Python function that checks the inputs, makes the outputs and calls
    ``kernel``: the few attribute reads per array a call costs, nothing more. With
    ``team``, on the threads ``threads.team()`` gives at each call."""
    if split is None:
        rows, cols = math.prod(shape), 1
    else:
        rows, cols = math.prod(shape[:split]), math.prod(shape[split:])
    n = program.num_inputs
    out_types = [m.dtype.as_numpy_dtype for m in (program.members[k] for k in program.outputs)]
    single = len(out_types) == 1
    names = [m.name for m in program.members]
    env = {"kernel": kernel, "empty": np.empty, "contiguous": _contiguous,
           "ndarray": np.ndarray,
           "SHAPE": shape, "mismatch": _shape_mismatch(names, shape), "copyto": np.copyto}
    params = [f"a{i}" for i in range(n)]
    lines = []
    for i, kind in enumerate(kinds):
        if kind == "full":
            lines.append(f"if a{i}.shape != SHAPE: mismatch({i}, a{i})")
        # a NumPy scalar (what a full reduction returns) becomes an array here too; a
        # strided view (a broadcast) is copied into an array kept for the next call
        env[f"B{i}"] = [None]
        lines.append(f"if type(a{i}) is not ndarray or not a{i}.flags.c_contiguous: "
                     f"a{i} = contiguous(B{i}, a{i})")
    outs = [f"y{j}" for j in range(len(out_types))]
    if not single:
        lines.append(f"{', '.join(outs)}, = out if out is not None else {(None,) * len(outs)}")
    else:
        lines.append("y0 = out")
    for j, t in enumerate(out_types):
        env[f"T{j}"] = t
        lines += [f"if y{j} is None: y{j} = empty(SHAPE, T{j})",
                  f"d{j} = y{j} if y{j}.flags.c_contiguous else empty(SHAPE, T{j})"]
    dests = [f"d{j}" for j in range(len(outs))]
    full = [i for i, kind in enumerate(kinds) if kind == "full"]
    none = (-1,) * len(outs)
    env.update(variant=kernel)
    over_expr = _over_expression(dests, full)
    # an output written over a full input (an update in place, an arena buffer reused)
    # takes the kernel that writes it there
    apart = " and ".join(f"{d} is not a{i}" for d in dests for i in full) or "True"
    if team:
        env.update(team=threads.team, NONE=none, on_team=on_team)
        lines += ["t = team()",
                  f"o = NONE if {apart} else {over_expr}",
                  f"args = (t, {rows}, {cols}, {', '.join(params)}, "
                  f"*[d for d, i in zip(({', '.join(dests)},), o) if i < 0])",
                  "if t > 1: on_team(variant(o, True), t, *args)",
                  "else: variant(o, False)(*args)"]
    else:
        env.update(plain=kernel(none))
        lines += [f"if {apart}: plain({rows}, {cols}, {', '.join(params + dests)})",
                  "else:",
                  f"    o = {over_expr}",
                  f"    variant(o)({rows}, {cols}, {', '.join(params)}, "
                  f"*[d for d, i in zip(({', '.join(dests)},), o) if i < 0])"]
    for j in range(len(outs)):
        lines.append(f"if d{j} is not y{j}: copyto(y{j}, d{j})")
    run = generated_function(params, lines, outs, env, "<gradflow-kernel-call>")
    run.accepts_out = True
    run.elementwise_out = True  # each element's inputs are read before it is written
    return run


def _over_expression(dests, full):
    """The text of a tuple giving, for each output ``dests[j]``, the position of the
    full input ``a{i}`` that is that very array, or -1: identity tests written out, a
    few microseconds less per call than a loop over them (Adam's in-place updates)."""
    def position(d):
        return "".join(f"{i} if {d} is a{i} else " for i in full) + "-1"

    return "(" + "".join(f"{position(d)}, " for d in dests) + ")"


def _contiguous(box, array):
    """``array`` as a C-contiguous array: copied into ``box[0]`` where that array fits
    (a view of the same shape as last call's), else into a new one kept there."""
    kept = box[0]
    if type(array) is np.ndarray and kept is not None and kept.shape == array.shape \
            and kept.dtype == array.dtype:
        np.copyto(kept, array)
        return kept
    box[0] = np.ascontiguousarray(array)
    return box[0]


def _shape_mismatch(names, shape):
    def mismatch(i, array):
        raise ValueError(f"input {i} of the fused ops {names} has shape {array.shape}, "
                         f"expected {shape}")

    return mismatch
