"""CUDA C text of fused elementwise groups, for ``cupy.ElementwiseKernel`` and ``RawKernel``.

A fused node's ``FusedProgram`` (``gradflow.passes.fusion``) becomes one kernel
body: one ``const`` per step, each step the CUDA C form of the member's scalar
expression. ``CUDA_SCALAR`` prints that form for every op of
``gradflow.passes.elementwise.SCALAR`` and declines (None) exactly where SCALAR
does, so the numba kernels and the CUDA kernels cover the same programs.

The numbers are NumPy's, element for element:

- ``maximum``/``minimum``/``relu`` keep a NaN of either side and, on equal
  operands (``-0.0`` and ``0.0``), return the second one, as NumPy 2's float32
  and float64 loops do (its float16 loop returns the first; numba's the first).
- float16 values are loaded into ``float``, each op computes in ``float`` and a
  float16 step is rounded to half at once (``GF_ROUND_HALF``): NumPy rounds
  after every float16 op, and float's 24 bits make that double rounding exact
  for ``+ - * /`` and ``sqrt``.
- The kernels are compiled with ``--fmad=false`` (``OPTIONS``): NVCC would
  otherwise contract ``a * b + c`` into one FMA, rounding once where NumPy
  rounds twice. Transcendentals (``expf``, ``tanhf``...) are CUDA's own, within
  CUDA's documented ulp bounds of the C library's.

Inputs are read whole, as rows, as columns or as one scalar (the kinds of
``numpy_fused``). ``ElementwiseKernel`` broadcasts by itself; the ``RawKernel``
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

from gradflow.backends.numpy_fused import _inputs, _patterns
from gradflow.passes.elementwise import SCALAR

COMPUTE = {"float16": "float", "float32": "float", "float64": "double", "bool": "bool"}
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


def _literal(value, node):
    return f"{float(value)!r}f" if _compute(node) == "float" else f"{float(value)!r}"


def _math(fn):
    def expr(args, node):
        suffix = "f" if _compute(node) == "float" else ""
        return f"{fn}{suffix}({', '.join(args)})"

    return expr


def _infix(symbol):
    return lambda args, node: f"({args[0]} {symbol} {args[1]})"


def _pick(symbol):  # NumPy's maximum/minimum: NaN of either side, the second on ties
    return lambda a, node: f"(({a[0]} != {a[0]} || {a[0]} {symbol} {a[1]}) ? {a[0]} : {a[1]})"


def _relu(args, node):
    zero = _literal(0, node)
    return f"(({args[0]} != {args[0]} || {args[0]} > {zero}) ? {args[0]} : {zero})"


def _relu_grad(args, node):  # where(x > 0, g, 0)
    zero = _literal(0, node)
    return f"({args[1]} > {zero} ? {args[0]} : {zero})"


def _sigmoid(args, node):  # the tanh form of math_ops._sigmoid_impl, as SCALAR's
    half = _literal(0.5, node)

    def op(text):  # NumPy rounds each of the three ops of a float16 sigmoid
        return f"GF_ROUND_HALF({text})" if node.dtype.name == "float16" else text

    inner = op(_math("tanh")([op(f"{half} * {args[0]}")], node))
    return f"({op(f'{half} * {inner}')} + {half})"


_CUDA = {
    "add": _infix("+"),
    "subtract": _infix("-"),
    "multiply": _infix("*"),
    "divide": _infix("/"),
    "maximum": _pick(">"),
    "minimum": _pick("<"),
    "negative": lambda a, n: f"(-{a[0]})",
    "abs": _math("fabs"),
    "exp": _math("exp"),
    "expm1": _math("expm1"),
    "log": _math("log"),
    "log1p": _math("log1p"),
    "sqrt": _math("sqrt"),
    "square": lambda a, n: f"({a[0]} * {a[0]})",
    "tanh": _math("tanh"),
    "sin": _math("sin"),
    "cos": _math("cos"),
    "sigmoid": _sigmoid,
    "relu": _relu,
    "relu_grad": _relu_grad,
    "greater": _infix(">"),
    "greater_equal": _infix(">="),
    "less": _infix("<"),
    "less_equal": _infix("<="),
    "equal": _infix("=="),
    "not_equal": _infix("!="),
    "logical_and": _infix("&&"),
    "logical_or": _infix("||"),
    "logical_not": lambda a, n: f"(!{a[0]})",
    "where": lambda a, n: f"({a[0]} ? {a[1]} : {a[2]})",
    "cast": lambda a, n: f"(({_compute(n)})({a[0]}))",
    "zeros_like": lambda a, n: _literal(0, n),
    "ones_like": lambda a, n: _literal(1, n),
}


def _declining_as_scalar_does(name):
    def expr(args, node):
        if SCALAR[name](list(args), node) is None or node.dtype.name not in COMPUTE:
            return None
        return _CUDA[name](args, node)

    return expr


# op name -> (argument expressions, node) -> CUDA C expression, or None (unsupported dtypes)
CUDA_SCALAR = {name: _declining_as_scalar_does(name) for name in SCALAR}


def steps_source(program):
    """The body lines computing every step into ``t0, t1...`` from ``a0, a1...``, or None
    if a member has no CUDA form."""
    n = program.num_inputs
    names = [f"a{i}" for i in range(n)] + [f"t{k}" for k in range(len(program.steps))]
    lines = []
    for k, (member, args) in enumerate(program.steps):
        expr = CUDA_SCALAR[member.opdef.name]([names[a] for a in args], member)
        if expr is None:
            return None
        if member.dtype.name == "float16":
            expr = f"GF_ROUND_HALF({expr})"
        lines.append(f"const {_compute(member)} t{k} = {expr};")
    return lines


def print_kernel(program, shape, name=None):
    """The ``CudaKernel`` of ``program`` at the static ``shape`` of its output, or None
    (a member without a CUDA form, an input of another dtype, or a broadcast that is not
    whole/row/column/scalar)."""
    shape = tuple(int(d) for d in shape)
    steps = steps_source(program)
    inputs = _inputs(program)
    if steps is None or any(i.dtype.name not in COMPUTE for i in inputs):
        return None
    split, kinds = _patterns(program, shape)
    if split == "none":
        return None
    outputs = [program.members[k] for k in program.outputs]
    name = name or "gf_fused_" + hashlib.sha1(
        "\n".join(steps + list(kinds) + [str(split is None)]).encode()).hexdigest()[:12]
    columns = 1 if split is None else math.prod(shape[split:])
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


def _store(node, value, half_type):
    if node.dtype.name == "float16":
        return (f"static_cast<{half_type}>({value})" if half_type == "float16"
                else f"__float2half_rn({value})")
    return value


def _load(node, element):
    return f"__half2float({element})" if node.dtype.name == "float16" else element


def _raw_source(name, inputs, outputs, output_steps, kinds, steps):
    index = {"full": "i", "row": "c", "col": "r", "scalar": "0"}
    params = ["const long long n", "const long long C"]
    params += [f"const {STORAGE[i.dtype.name]} *x{k}" for k, i in enumerate(inputs)]
    params += [f"{STORAGE[o.dtype.name]} *y{j}" for j, o in enumerate(outputs)]
    body = []
    if any(kind in ("row", "col") for kind in kinds):
        body += ["const long long r = i / C;", "const long long c = i - r * C;"]
    body += [f"const {_compute(i)} a{k} = {_load(i, f'x{k}[{index[kind]}]')};"
             for k, (i, kind) in enumerate(zip(inputs, kinds))]
    body += steps
    body += [f"y{j}[i] = {_store(o, f't{k}', '__half')};"
             for j, (o, k) in enumerate(zip(outputs, output_steps))]
    head = (f'extern "C" __global__ void {name}(' + ", ".join(params) + ") {\n"
            "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
            "         i += (long long)blockDim.x * gridDim.x) {\n")
    return RAW_PREAMBLE + "\n" + head + "".join(f"        {line}\n" for line in body) + "    }\n}\n"
