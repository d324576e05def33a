"""An op's scalar expression (``OpDef.scalar``) read as a typed tree, for the code
generators that do not run its Python text: the CUDA C printer
(``gradflow.backends.cuda.scalar``) and the ONNX export (``gradflow.onnx``). The numba
kernels compile the text itself; these read the same text, so an op has one scalar
expression for every generated kernel.

``parse(text, names, dtypes)`` reads the Python subset below, where ``names[i]``
(``"a0"``...) stands for an input element of dtype ``dtypes[i]`` (a dtype name), and
returns the ``Scalar`` tree with a dtype on every node, or None where the text leaves
the subset (the generator then declines the op, as it does where ``scalar`` returns
None). The subset, and the tree's ``op`` for each form (gradflow's own op names):

- an input name: ``"arg"`` (``value``: its position);
- ``np.float32(0.5)``: ``"const"`` of that dtype (the value rounded to it); a bare
  number is a Python scalar and takes the dtype of what it meets, as in NumPy 2;
  ``True``/``False``: a bool ``"const"``;
- ``np.float32(x)`` of an expression: ``"cast"``;
- ``x + y``, ``-``, ``*``, ``/``: ``"add"``, ``"subtract"``, ``"multiply"``,
  ``"divide"``; ``-x``: ``"negative"``;
- ``x < y`` (and ``<=``, ``>``, ``>=``, ``==``, ``!=``): ``"less"``, ``"less_equal"``,
  ``"greater"``, ``"greater_equal"``, ``"equal"``, ``"not_equal"``; a chain
  ``x < y < z`` is both comparisons joined by ``"logical_and"``;
- ``a and b``, ``a or b``, ``not a`` on bools: ``"logical_and"``, ``"logical_or"``,
  ``"logical_not"``;
- ``x if c else y``: ``"where"`` (arguments ``c, x, y``);
- ``np.f(...)`` for ``f`` in ``FUNCTIONS``: ``"f"`` (``np.abs(x)`` is ``"abs"``).

Dtypes follow NumPy's promotion among ``float16 < float32 < float64`` (a bool meeting
a float takes the float's dtype); integers are outside the subset, as the scalar
expressions of ``gradflow.prim.scalar`` decline them.

>>> tree = parse("(np.float32(0.5) * np.tanh(a0))", ["a0"], ["float32"])
>>> tree.op, tree.dtype, [a.op for a in tree.args]
('multiply', 'float32', ['const', 'tanh'])
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

FLOATS = ("float16", "float32", "float64")
DTYPES = FLOATS + ("bool",)

# NumPy functions of the subset -> their number of arguments (the op of the tree is the
# function's name, which is also the gradflow op computing it)
FUNCTIONS = {
    "abs": 1, "exp": 1, "expm1": 1, "log": 1, "log1p": 1, "sqrt": 1, "square": 1,
    "floor": 1, "ceil": 1, "tanh": 1, "sin": 1, "cos": 1, "maximum": 2, "minimum": 2,
    "tan": 1, "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "asinh": 1, "acosh": 1,
    "atanh": 1, "atan2": 2,
}
ARITHMETIC = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide"}
COMPARISONS = {ast.Lt: "less", ast.LtE: "less_equal", ast.Gt: "greater",
               ast.GtE: "greater_equal", ast.Eq: "equal", ast.NotEq: "not_equal"}
LOGICAL = {ast.And: "logical_and", ast.Or: "logical_or"}


@dataclass(frozen=True)
class Scalar:
    """One node of a parsed scalar expression: ``op`` (see the module's list), its
    ``args`` (trees), its ``dtype`` (a dtype name; None only for a Python number that
    met nothing typed) and ``value`` (a constant's value, an argument's position)."""

    op: str
    args: tuple = ()
    dtype: str | None = None
    value: object = None

    @property
    def is_leaf(self) -> bool:
        """An input element or a constant: no operation to compute."""
        return self.op in ("arg", "const")


class _Outside(Exception):
    """The text leaves the subset."""


def parse(text, names, dtypes):
    """The ``Scalar`` tree of the expression ``text`` over the input names ``names`` of
    dtype names ``dtypes``, or None where it leaves the subset (see the module)."""
    if text is None or any(d not in DTYPES for d in dtypes):
        return None
    try:
        body = ast.parse(text, mode="eval").body
        return _typed(_Reader(list(names), list(dtypes)).read(body))
    except (SyntaxError, _Outside):
        return None


def _typed(tree):
    """``tree``, refusing a Python number that met nothing typed as its result."""
    if tree.dtype is None:
        raise _Outside
    return tree


class _Reader:
    def __init__(self, names, dtypes):
        self.names, self.dtypes = names, dtypes

    def read(self, node):
        kind = type(node)
        if kind is ast.Name:
            if node.id not in self.names:
                raise _Outside
            k = self.names.index(node.id)
            return Scalar("arg", (), self.dtypes[k], k)
        if kind is ast.Constant or (kind is ast.UnaryOp and _number(node) is not None):
            return _python_constant(node)
        if kind is ast.BinOp and type(node.op) in ARITHMETIC:
            return _arithmetic(ARITHMETIC[type(node.op)], self.read(node.left),
                               self.read(node.right))
        if kind is ast.UnaryOp:
            return self._unary(node)
        if kind is ast.Compare:
            return self._compare(node)
        if kind is ast.BoolOp and type(node.op) in LOGICAL:
            args = [_boolean(self.read(v)) for v in node.values]
            tree = args[0]
            for arg in args[1:]:
                tree = Scalar(LOGICAL[type(node.op)], (tree, arg), "bool")
            return tree
        if kind is ast.IfExp:
            cond = _boolean(self.read(node.test))
            a, b = _meet(self.read(node.body), self.read(node.orelse))
            return Scalar("where", (cond, a, b), promote(a.dtype, b.dtype))
        if kind is ast.Call:
            return self._call(node)
        raise _Outside

    def _unary(self, node):
        operand = self.read(node.operand)
        if isinstance(node.op, ast.Not):
            return Scalar("logical_not", (_boolean(operand),), "bool")
        if isinstance(node.op, ast.USub) and operand.dtype in FLOATS:
            return Scalar("negative", (operand,), operand.dtype)
        if isinstance(node.op, ast.UAdd) and operand.dtype in FLOATS:
            return operand
        raise _Outside

    def _compare(self, node):
        operands = [self.read(node.left)] + [self.read(c) for c in node.comparators]
        tree = None
        for op, left, right in zip(node.ops, operands, operands[1:]):
            if type(op) not in COMPARISONS:
                raise _Outside
            left, right = _meet(left, right)
            if "bool" in (left.dtype, right.dtype) and left.dtype != right.dtype:
                raise _Outside
            step = Scalar(COMPARISONS[type(op)], (left, right), "bool")
            tree = step if tree is None else Scalar("logical_and", (tree, step), "bool")
        return tree

    def _call(self, node):
        fn = node.func
        if node.keywords or not (isinstance(fn, ast.Attribute) and isinstance(fn.value, ast.Name)
                                 and fn.value.id == "np"):
            raise _Outside
        if fn.attr in DTYPES:  # np.float32(0.5), np.float32(x)
            if len(node.args) != 1:
                raise _Outside
            number = _number(node.args[0])
            if number is not None:
                return _constant(number, fn.attr)
            return Scalar("cast", (self.read(node.args[0]),), fn.attr)
        if FUNCTIONS.get(fn.attr) != len(node.args):
            raise _Outside
        args = [self.read(a) for a in node.args]
        if len(args) == 2:
            args = list(_meet(*args))
        if any(a.dtype not in FLOATS for a in args):
            raise _Outside
        dtype = args[0].dtype if len(args) == 1 else promote(args[0].dtype, args[1].dtype)
        return Scalar(fn.attr, tuple(args), dtype)


def _number(node):
    """The value of a numeric literal (``2``, ``0.5``, ``-1.0``), or None."""
    sign = 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -1.0 if isinstance(node.op, ast.USub) else 1.0
        node = node.operand
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return sign * float(node.value)
    return None


def _python_constant(node):
    if isinstance(node, ast.Constant) and type(node.value) is bool:
        return Scalar("const", (), "bool", node.value)
    number = _number(node)
    if number is None:
        raise _Outside
    return Scalar("const", (), None, number)


def _constant(value, dtype):
    """A constant of ``dtype``, its value rounded to that dtype (a finite one only)."""
    if dtype == "bool":
        return Scalar("const", (), "bool", bool(value))
    with np.errstate(over="ignore"):
        rounded = float(np.dtype(dtype).type(value))
    if not np.isfinite(rounded):
        raise _Outside
    return Scalar("const", (), dtype, rounded)


def _meet(a, b):
    """``a, b`` with a Python number among them given the other's dtype."""
    if a.dtype is None and b.dtype is not None:
        a = _weak(a, b.dtype)
    elif b.dtype is None and a.dtype is not None:
        b = _weak(b, a.dtype)
    return a, b


def _weak(number, other):
    """The Python number ``number`` as a constant beside a value of dtype ``other``."""
    if number.op != "const":
        raise _Outside  # arithmetic of Python numbers alone: write its value instead
    return _constant(number.value, other if other in FLOATS else "float64")


def promote(a, b):
    """The dtype name NumPy gives an operation over dtype names ``a`` and ``b`` of the
    subset (None: a Python number, which takes the other's)."""
    if a is None or b is None:
        return a or b
    if a == b:
        return a
    if "bool" in (a, b):
        return b if a == "bool" else a
    return max(a, b, key=FLOATS.index)


def _arithmetic(op, a, b):
    a, b = _meet(a, b)
    dtype = promote(a.dtype, b.dtype)
    if dtype not in FLOATS and dtype is not None:
        raise _Outside  # bool arithmetic: NumPy's own rules, outside the subset
    return Scalar(op, (a, b), dtype)


def _boolean(tree):
    if tree.dtype != "bool":
        raise _Outside
    return tree


def expression_tree(node, names):
    """The ``Scalar`` tree of graph or plan node ``node``'s own scalar expression over
    the argument names ``names`` (one per input), or None where its op has none, the
    expression declines the node's dtypes or leaves the subset."""
    scalar = node.opdef.scalar
    if scalar is None or node.dtype is None or any(i.dtype is None for i in node.inputs):
        return None
    tree = parse(scalar(list(names), node), names, [i.dtype.name for i in node.inputs])
    if tree is None or tree.dtype != node.dtype.name:
        return None  # an expression of another dtype than the op's: not the op's value
    return tree
