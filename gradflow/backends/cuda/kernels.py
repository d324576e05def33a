"""CUDA C text of fused elementwise groups, for ``cupy.ElementwiseKernel`` and ``RawKernel``.

A fused node's ``FusedProgram`` (``gradflow.passes.fusion``) becomes one kernel
body: one ``const`` per step, each step the CUDA C form of the member's scalar
expression (``OpDef.scalar``, the very text the numba kernels compile), printed by
``gradflow.backends.cuda.scalar``; a member the printer declines declines the
kernel, so the numba kernels and the CUDA kernels cover the same programs.

The numbers are NumPy's, element for element (how each form is printed to keep them
so: ``gradflow.backends.cuda.scalar``). Every float16 step is rounded to half at once
(``GF_ROUND_HALF``), and the kernels are compiled with ``--fmad=false``
(``OPTIONS``): NVCC would otherwise contract ``a * b + c`` into one FMA, rounding
once where NumPy rounds twice.

Inputs are read whole, as rows, as columns or as one scalar (the kinds of
``kernel_text.input_patterns``). ``ElementwiseKernel`` broadcasts by itself; the ``RawKernel``
text takes ``n`` (output size) and ``C`` (the columns of a row/column split) and
indexes each input by its kind, in a grid-stride loop.

Example::

    >>> k = print_kernel(program, (128, 512))          # doctest: +SKIP
    >>> cupy.ElementwiseKernel(k.in_params, k.out_params, k.operation, k.name,
    ...                        preamble=k.preamble, options=k.options)  # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from gradflow.backends.cuda.device_random import C_TYPES
from gradflow.backends.cuda.philox import HELPERS as PHILOX_HELPERS
from gradflow.backends.cuda.philox import draw_kernel
from gradflow.backends.cuda.scalar import COMPUTE, cuda_expression
from gradflow.backends.kernel_text import input_patterns, program_inputs, step_arguments

STORAGE = {"float16": "__half", "float32": "float", "float64": "double", "bool": "bool"}
OPTIONS = ("--fmad=false",)

RAW_PREAMBLE = ("#include <cuda_fp16.h>\n"
                "#define GF_ROUND_HALF(x) __half2float(__float2half_rn(x))\n")
# CuPy's ``float16`` parameter type converts to and from float by rounding to nearest.
ELEMENTWISE_PREAMBLE = "#define GF_ROUND_HALF(x) static_cast<float>(static_cast<float16>(x))\n"


@dataclass(frozen=True)
class CudaKernel:
    """The printed kernel of one fused program at one shape pattern."""

    name: str
    in_params: str  # ElementwiseKernel's "float32 x0, ..."
    out_params: str
    operation: str  # ElementwiseKernel's body: reads, the steps, writes
    preamble: str  # ElementwiseKernel's preamble
    raw_source: str  # a whole ``extern "C" __global__`` kernel named ``name``
    kinds: tuple  # per input: "full", "row", "col" or "scalar"
    columns: int  # the RawKernel's ``C`` argument (1 for a flat kernel)
    size: int  # the RawKernel's ``n`` argument
    options: tuple = OPTIONS


def _compute(node):
    return COMPUTE[node.dtype.name]


def _drawn(member, word):
    """A uniform draw's value from its Philox word ``word``, as ``gf_random_uniform_<T>``
    computes it (``gradflow.backends.cuda.device_random``), or None (another distribution, no
    finite bounds)."""
    if member.attrs.get("dist") != "random_uniform":
        return None
    low, high = float(member.attrs["minval"]), float(member.attrs["maxval"])
    if not (math.isfinite(low) and math.isfinite(high)) or member.dtype.name not in C_TYPES:
        return None
    return (f"(({C_TYPES[member.dtype.name]})((double)({low!r}) + ((double)({high!r}) - "
            f"(double)({low!r})) * (double)gf_philox_uniform({word})))")


def steps_source(program, words=None, sums=None):
    """The body lines computing every step into ``t0, t1...`` from ``a0, a1...``, or None
    if a member has no CUDA form. A random member (``absorb_draws``) is computed from
    its Philox word ``words[k]`` (``w0, w1...``), a row sum (``absorb_row_sums``) is
    the row's total ``sums[k]``; without them these have none."""
    lines = []
    for k, (member, args) in enumerate(step_arguments(program)):
        if member.opdef.kind == "random":
            expr = None if words is None or k not in words else _drawn(member, words[k])
        elif member.opdef.scalar is None:
            expr = None if sums is None or k not in sums else sums[k]
        else:
            expr = cuda_expression(member, args)
        if expr is None:
            return None
        if member.dtype.name == "float16":
            expr = f"GF_ROUND_HALF({expr})"
        lines.append(f"const {_compute(member)} t{k} = {expr};")
    return lines


def print_kernel(program, shape, name=None):
    """The ``CudaKernel`` of ``program`` at the static ``shape`` of its output, or None
    (a member without a CUDA form, an input of another dtype, a broadcast that is not
    whole/row/column/scalar, or a random member: see ``print_draw_kernel``)."""
    shape = tuple(int(d) for d in shape)
    steps = steps_source(program)
    layout = _layout(program, shape, steps)
    if layout is None:
        return None
    inputs, outputs, kinds, columns, digest = layout
    name = name or "gf_fused_" + digest
    in_params = ", ".join(f"{i.dtype.name} x{k}" for k, i in enumerate(inputs))
    out_params = ", ".join(f"{o.dtype.name} y{j}" for j, o in enumerate(outputs))
    reads = [f"const {_compute(i)} a{k} = static_cast<{_compute(i)}>(x{k});"
             for k, i in enumerate(inputs)]
    writes = [f"y{j} = {_store(o, f't{k}', 'float16')};"
              for j, (o, k) in enumerate(zip(outputs, program.outputs))]
    operation = "\n".join(reads + steps + writes)
    raw = _raw_source(name, inputs, outputs, program.outputs, kinds, steps)
    return CudaKernel(name, in_params, out_params, operation, ELEMENTWISE_PREAMBLE, raw,
                      tuple(kinds), columns, math.prod(shape))


def _layout(program, shape, steps):
    """``(inputs, outputs, kinds, columns, digest)`` of a printable program, or None."""
    inputs = program_inputs(program)
    if steps is None or any(i.dtype.name not in COMPUTE for i in inputs):
        return None
    split, kinds = input_patterns(program, shape)
    if split == "none":
        return None
    outputs = [program.members[k] for k in program.outputs]
    digest = hashlib.sha1(
        "\n".join(steps + list(kinds) + [str(split is None)]).encode()).hexdigest()[:12]
    return inputs, outputs, kinds, 1 if split is None else math.prod(shape[split:]), digest


@dataclass(frozen=True)
class DrawKernel:
    """The printed ``RawKernel`` of a fused program with one random member: it draws the
    member's numbers from its Philox stream and advances the stream's offset in device
    memory, as ``gf_random_uniform_<T>`` would have (both are ``philox.draw_kernel``),
    then computes the program on them. Arguments: ``(seed, state, n, C, x..., y...)``;
    launch it on ``device_random.grid_for(n)`` blocks."""

    name: str
    source: str
    kinds: tuple
    columns: int
    size: int
    draws: tuple  # the step index of the random member
    options: tuple = OPTIONS


def print_draw_kernel(program, shape):
    """The ``DrawKernel`` of ``program`` (with one random member) at the static ``shape``
    of its output, or None where ``print_kernel`` would decline."""
    shape = tuple(int(d) for d in shape)
    draws = tuple(k for k, m in enumerate(program.members) if m.opdef.kind == "random")
    if len(draws) != 1:
        return None
    steps = steps_source(program, {draws[0]: "w"})
    layout = _layout(program, shape, steps)
    if layout is None:
        return None
    inputs, outputs, kinds, columns, digest = layout
    name = "gf_drawn_" + digest
    params = ", ".join(["const long long C"] + _pointers(inputs, outputs))
    element = "\n            ".join(_element(inputs, outputs, program.outputs, kinds, steps))
    source = RAW_PREAMBLE + PHILOX_HELPERS + draw_kernel(name, params, element)
    return DrawKernel(name, source, tuple(kinds), columns, math.prod(shape), draws)


def print_row_kernel(program, shape, max_columns=4096):
    """The ``RowKernel`` of ``program`` with row sums (``absorb_row_sums``) at the static
    ``shape`` of its output, or None (float16, more than ``max_columns`` columns, a sum
    over another sum, a member without a CUDA form, an input broadcast otherwise than
    whole, along the rows, along the columns or as one scalar)."""
    shape = tuple(int(d) for d in shape)
    members = program.members
    sums = {k: f"s{k}" for k, m in enumerate(members) if m.opdef.name == "reduce_sum"}
    if not sums or not shape or shape[-1] > max_columns or any(
            m.dtype.name not in ("float32", "float64", "bool") for m in members):
        return None
    steps = steps_source(program, sums=sums)
    inputs = program_inputs(program)
    if steps is None or any(i.dtype.name not in COMPUTE or i.dtype.name == "float16"
                            for i in inputs):
        return None
    kinds = [_row_kind(tuple(i.shape), shape) for i in inputs]
    needed = _needed(program, sums)
    if None in kinds or any(k in needed for k in sums):  # a sum of a sum: two passes
        return None
    outputs = [members[k] for k in program.outputs]
    name = "gf_rows_" + hashlib.sha1("\n".join(steps + kinds).encode()).hexdigest()[:12]
    first = [steps[k] for k in sorted(needed)]
    first += [f"s{k} += {_arg_name(program, k)};" for k in sums]
    params = ["const long long n", "const long long C"] + _pointers(inputs, outputs)
    loads = [f"const {_compute(i)} a{k} = x{k}[{_INDEX[kind]}];"
             for k, (i, kind) in enumerate(zip(inputs, kinds))]
    writes = [f"y{j}[i] = t{k};" for j, k in enumerate(program.outputs)]
    column = ["for (long long c = 0; c < C; ++c) {", "    const long long i = r * C + c;"]
    body = [f"{_compute(members[k])} s{k} = 0;" for k in sums]
    body += column + [f"    {line}" for line in loads + first] + ["}"]
    body += column + [f"    {line}" for line in loads + steps + writes] + ["}"]
    source = (RAW_PREAMBLE + f'\nextern "C" __global__ void {name}(' + ", ".join(params)
              + ") {\n    const long long rows = n / C;\n"
              "    for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; "
              "r < rows;\n         r += (long long)blockDim.x * gridDim.x) {\n"
              + "".join(f"        {line}\n" for line in body) + "    }\n}\n")
    return RowKernel(name, source, tuple(kinds), shape[-1], math.prod(shape))


@dataclass(frozen=True)
class RowKernel:
    """The printed ``RawKernel`` of a fused program with row sums: one thread per row
    (of ``columns`` values) sums, then computes every element of its row. Arguments
    ``(n, C, x..., y...)`` as ``CudaKernel.raw_source``'s, ``C`` the columns."""

    name: str
    source: str
    kinds: tuple
    columns: int
    size: int
    options: tuple = OPTIONS


def _row_kind(s, shape):
    """How a row kernel reads an input of shape ``s``: whole, the same row for every row,
    one value per row, one scalar; None otherwise."""
    s = (1,) * (len(shape) - len(s)) + s
    if all(d == 1 for d in s):
        return "scalar"
    if s == shape:
        return "full"
    if s[-1] == shape[-1] and all(d == 1 for d in s[:-1]):
        return "row"
    if s[-1] == 1 and s[:-1] == shape[:-1]:
        return "col"
    return None


def _arg_name(program, k):
    (arg,) = program.steps[k][1]
    return f"a{arg}" if arg < program.num_inputs else f"t{arg - program.num_inputs}"


def _needed(program, sums):
    """The steps the row sums read, directly or not (the first pass computes them)."""
    needed, stack = set(), [k for k in sums]
    while stack:
        for arg in program.steps[stack.pop()][1]:
            step = arg - program.num_inputs
            if step >= 0 and step not in needed:
                needed.add(step)
                stack.append(step)
    return needed


def _store(node, value, half_type):
    if node.dtype.name == "float16":
        return (f"static_cast<{half_type}>({value})" if half_type == "float16"
                else f"__float2half_rn({value})")
    return value


def _load(node, element):
    return f"__half2float({element})" if node.dtype.name == "float16" else element


# how a kernel indexes an input of each kind: ``i`` the element, ``r`` its row, ``c`` its
# column (of ``C`` columns)
_INDEX = {"full": "i", "row": "c", "col": "r", "scalar": "0"}


def _pointers(inputs, outputs):
    return ([f"const {STORAGE[i.dtype.name]} *x{k}" for k, i in enumerate(inputs)]
            + [f"{STORAGE[o.dtype.name]} *y{j}" for j, o in enumerate(outputs)])


def _element(inputs, outputs, output_steps, kinds, steps):
    """The lines computing and storing element ``i`` (of ``C`` columns a row)."""
    body = []
    if any(kind in ("row", "col") for kind in kinds):
        body += ["const long long r = i / C;", "const long long c = i - r * C;"]
    body += [f"const {_compute(i)} a{k} = {_load(i, f'x{k}[{_INDEX[kind]}]')};"
             for k, (i, kind) in enumerate(zip(inputs, kinds))]
    body += steps
    body += [f"y{j}[i] = {_store(o, f't{k}', '__half')};"
             for j, (o, k) in enumerate(zip(outputs, output_steps))]
    return body


def _raw_source(name, inputs, outputs, output_steps, kinds, steps):
    params = ["const long long n", "const long long C"] + _pointers(inputs, outputs)
    body = _element(inputs, outputs, output_steps, kinds, steps)
    head = (f'extern "C" __global__ void {name}(' + ", ".join(params) + ") {\n"
            "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            "         i += (long long)blockDim.x * gridDim.x) {\n")
    return RAW_PREAMBLE + "\n" + head + "".join(f"        {line}\n" for line in body) + "    }\n}\n"
