"""Scalar expressions of elementwise ops, for generated kernels: an op declares its own
with ``register(..., scalar=...)`` (see ``OpDef``).

``scalar(args, node)`` returns the expression of one output element from
the expressions ``args`` of the input elements, in the Python subset that
numba compiles, or ``None`` where the op's dtypes are not supported there; the
kernel then runs as a sequence of the backend's own calls. That one text is the
op's form in every generated kernel: the numba kernels compile it as it is, the
CUDA C printer (``gradflow.backends.cuda.scalar``) and the ONNX export read it as
a tree (``gradflow.prim.scalar_tree``, which lists the subset they read: NumPy
functions, ``np.float32(...)`` constants and casts, arithmetic, comparisons,
``and``/``or``/``not`` and ``a if c else b``). ``T`` is the output dtype's scalar
type in the generated module (``np.float32``...), so constants keep the
dtype: a float32 kernel computes in float32, as the ufuncs do.

Every expression must give what the op's Array API implementation gives,
NaN propagation included: ``maximum`` keeps a NaN of either side.

>>> binary("+")(["a0", "a1"], node)   # node: a float32 add
'(a0 + a1)'
"""

from __future__ import annotations


def floating(node):
    return node.dtype is not None and node.dtype.is_floating and all(
        i.dtype is not None and i.dtype.is_floating for i in node.inputs)


def scalar_type(node):
    return f"np.{node.dtype.name}"


def binary(symbol):
    def expr(args, node):
        return f"({args[0]} {symbol} {args[1]})" if floating(node) else None

    return expr


def call(fn):
    def expr(args, node):
        return f"{fn}({', '.join(args)})" if floating(node) else None

    return expr


def compare(symbol):
    def expr(args, node):
        return f"({args[0]} {symbol} {args[1]})" if all(
            i.dtype.is_floating for i in node.inputs) else None

    return expr


def relu(args, node):
    return f"np.maximum({args[0]}, {scalar_type(node)}(0))" if floating(node) else None


def relu_grad(args, node):  # where(x > 0, g, 0)
    if not floating(node):
        return None
    return f"({args[0]} if {args[1]} > {scalar_type(node)}(0) else {scalar_type(node)}(0))"


def sigmoid(args, node):  # the tanh form of gradflow.prim.math._sigmoid_impl
    if not floating(node):
        return None
    t = scalar_type(node)
    return f"({t}(0.5) * np.tanh({t}(0.5) * {args[0]}) + {t}(0.5))"


def square(args, node):
    return f"({args[0]} * {args[0]})" if floating(node) else None


def where(args, node):
    a, b = node.inputs[1:]
    if not (node.inputs[0].dtype.is_bool and a.dtype.is_floating and b.dtype.is_floating):
        return None
    return f"({args[1]} if {args[0]} else {args[2]})"


def cast(args, node):
    src = node.inputs[0].dtype
    if not node.dtype.is_floating or not (src.is_floating or src.is_bool):
        return None
    return f"{scalar_type(node)}({args[0]})"


def filled(value):
    def expr(args, node):
        return f"{scalar_type(node)}({value})" if node.dtype.is_floating else None

    return expr


def logical(symbol):
    def expr(args, node):
        if not all(i.dtype.is_bool for i in node.inputs):
            return None
        if symbol == "not":
            return f"(not {args[0]})"
        return f"({args[0]} {symbol} {args[1]})"

    return expr


def negative(args, node):
    return f"(-{args[0]})" if floating(node) else None
