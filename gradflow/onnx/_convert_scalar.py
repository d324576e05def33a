"""ONNX nodes from an elementwise op's scalar expression: an op whose record declares one
(``OpDef.scalar``) and that has no converter of its own exports from that expression,
so the record alone suffices. The expression is read as a tree
(``gradflow.prim.scalar_tree``), each of its operations written as the ONNX node of the
gradflow op of the same name (``BINARY`` and ``UNARY`` of ``_convert_math``): ``a if c
else b`` is ``Where``, ``np.float32(0.5)`` a constant, ``np.float32(x)`` a ``Cast``. An
operand of another dtype than its operation's (NumPy's promotion) is cast first, as
ONNX wants both sides of ``Add`` of one type. Where a form has no ONNX node of the
same meaning (``np.expm1``, ``np.log1p``), or the expression does not read every
input (its result would not broadcast to the node's shape), there is no mapping.

An explicit converter wins where one exists: ``sigmoid`` is ONNX's ``Sigmoid``, not
its ``0.5 * tanh(0.5 * x) + 0.5``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.onnx._builder import onnx_dtype
from gradflow.onnx._convert_math import BINARY, UNARY
from gradflow.prim.scalar_tree import expression_tree, promote

_OWN = {"not_equal", "square", "where", "cast"}  # written below, not by a table


def scalar_converter(node):
    """``convert(model, node, inputs)`` writing ``node`` from its op's scalar expression,
    or None where it has none or the expression has no ONNX form."""
    tree = expression_tree(node, [f"a{i}" for i in range(len(node.inputs))])
    if tree is None or not _writable(tree) or _read(tree) != set(range(len(node.inputs))):
        return None
    return lambda m, node, ins: _write(m, tree, ins, node.name, node.name)


def _writable(tree):
    if tree.is_leaf:
        return True
    known = tree.op in _OWN or tree.op in BINARY or tree.op in UNARY
    return known and all(_writable(a) for a in tree.args)


def _read(tree):
    """The input positions the expression reads."""
    if tree.op == "arg":
        return {tree.value}
    return set().union(*(_read(a) for a in tree.args))


def _write(m, tree, ins, hint, name):
    """The ONNX value of ``tree`` (the node's own name ``name`` for the root)."""
    if tree.op == "arg":
        return ins[tree.value]
    if tree.op == "const":
        return m.const(tree.value, dtypes.as_dtype(tree.dtype).as_numpy_dtype)
    inner = f"{hint}/{tree.op}"
    if tree.op == "where":
        cond, a, b = (_write(m, arg, ins, inner, None) for arg in tree.args)
        a, b = (_as(m, v, arg.dtype, tree.dtype, inner)
                for v, arg in zip((a, b), tree.args[1:]))
        return m.add("Where", [cond, a, b], name or inner)
    args = [_write(m, arg, ins, inner, None) for arg in tree.args]
    if tree.op == "cast":
        return m.add("Cast", args, name or inner, to=onnx_dtype(dtypes.as_dtype(tree.dtype)))
    if len(args) == 2:  # the operands in one dtype, their promoted one
        common = tree.dtype if tree.dtype != "bool" else promote(*(a.dtype for a in tree.args))
        args = [_as(m, v, arg.dtype, common, inner) for v, arg in zip(args, tree.args)]
    if tree.op == "not_equal":
        return m.add("Not", [m.add("Equal", args, inner + "/equal")], name or inner)
    if tree.op == "square":
        return m.add("Mul", [args[0], args[0]], name or inner)
    return m.add(BINARY.get(tree.op) or UNARY[tree.op], args, name or inner)


def _as(m, value, dtype, wanted, hint):
    if dtype == wanted:
        return value
    return m.add("Cast", [value], hint + "/cast", to=onnx_dtype(dtypes.as_dtype(wanted)))
