"""Which ops are elementwise, and each one as a scalar expression for generated kernels.

``SCALAR[op](args, node)`` returns the expression of one output element from
the expressions ``args`` of the input elements, in the Python subset that
numba compiles (the same text serves any other scalar code generator), or
``None`` where the op's dtypes are not supported there; the kernel then runs
as a sequence of the backend's own calls. ``T`` is the output dtype's scalar
type in the generated module (``np.float32``...), so constants keep the
dtype: a float32 kernel computes in float32, as the ufuncs do.

Every expression must give what the op's Array API implementation gives,
NaN propagation included: ``maximum`` keeps a NaN of either side.
"""

from __future__ import annotations


def _float(node):
    return node.dtype is not None and node.dtype.is_floating and all(
        i.dtype is not None and i.dtype.is_floating for i in node.inputs)


def _t(node):
    return f"np.{node.dtype.name}"


def _binary(symbol):
    def expr(args, node):
        return f"({args[0]} {symbol} {args[1]})" if _float(node) else None

    return expr


def _call(fn):
    def expr(args, node):
        return f"{fn}({', '.join(args)})" if _float(node) else None

    return expr


def _compare(symbol):
    def expr(args, node):
        return f"({args[0]} {symbol} {args[1]})" if all(
            i.dtype.is_floating for i in node.inputs) else None

    return expr


def _relu(args, node):
    return f"np.maximum({args[0]}, {_t(node)}(0))" if _float(node) else None


def _relu_grad(args, node):  # where(x > 0, g, 0)
    if not _float(node):
        return None
    return f"({args[0]} if {args[1]} > {_t(node)}(0) else {_t(node)}(0))"


def _sigmoid(args, node):  # the tanh form of math_ops._sigmoid_impl
    if not _float(node):
        return None
    t = _t(node)
    return f"({t}(0.5) * np.tanh({t}(0.5) * {args[0]}) + {t}(0.5))"


def _square(args, node):
    return f"({args[0]} * {args[0]})" if _float(node) else None


def _where(args, node):
    a, b = node.inputs[1:]
    if not (node.inputs[0].dtype.is_bool and a.dtype.is_floating and b.dtype.is_floating):
        return None
    return f"({args[1]} if {args[0]} else {args[2]})"


def _cast(args, node):
    src = node.inputs[0].dtype
    if not node.dtype.is_floating or not (src.is_floating or src.is_bool):
        return None
    return f"{_t(node)}({args[0]})"


def _filled(value):
    def expr(args, node):
        return f"{_t(node)}({value})" if node.dtype.is_floating else None

    return expr


def _logical(symbol):
    def expr(args, node):
        if not all(i.dtype.is_bool for i in node.inputs):
            return None
        if symbol == "not":
            return f"(not {args[0]})"
        return f"({args[0]} {symbol} {args[1]})"

    return expr


SCALAR = {
    "add": _binary("+"),
    "subtract": _binary("-"),
    "multiply": _binary("*"),
    "divide": _binary("/"),
    "maximum": _call("np.maximum"),
    "minimum": _call("np.minimum"),
    "negative": lambda a, n: f"(-{a[0]})" if _float(n) else None,
    "abs": _call("np.abs"),
    "exp": _call("np.exp"),
    "expm1": _call("np.expm1"),
    "log": _call("np.log"),
    "log1p": _call("np.log1p"),
    "sqrt": _call("np.sqrt"),
    "square": _square,
    "tanh": _call("np.tanh"),
    "sin": _call("np.sin"),
    "cos": _call("np.cos"),
    "sigmoid": _sigmoid,
    "relu": _relu,
    "relu_grad": _relu_grad,
    "greater": _compare(">"),
    "greater_equal": _compare(">="),
    "less": _compare("<"),
    "less_equal": _compare("<="),
    "equal": _compare("=="),
    "not_equal": _compare("!="),
    "logical_and": _logical("and"),
    "logical_or": _logical("or"),
    "logical_not": _logical("not"),
    "where": _where,
    "cast": _cast,
    "zeros_like": _filled(0),
    "ones_like": _filled(1),
}


def is_elementwise(node) -> bool:
    """Whether ``node`` may join a fused elementwise kernel: an elementwise op over
    inputs of known rank whose output has the broadcast shape of its inputs."""
    if node.opdef.name not in SCALAR or node.opdef.kind != "compute":
        return False
    if node.shape is None or node.dtype is None or any(i.shape is None for i in node.inputs):
        return False
    if node.opdef.name == "cast" and node.inputs[0].dtype == node.dtype:
        return False  # may return its input itself: not a value of its own
    return all(len(i.shape) <= len(node.shape) for i in node.inputs)
