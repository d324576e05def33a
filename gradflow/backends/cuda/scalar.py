"""The CUDA C form of one fused member: its op's scalar expression (``OpDef.scalar``, the
text the numba kernels compile) read as a tree (``gradflow.prim.scalar_tree``) and
printed as C. No op has a CUDA table entry of its own: a new elementwise op prints
from its record alone.

The numbers are NumPy's, element for element:

- ``np.maximum``/``np.minimum`` keep a NaN of either side and, on equal operands
  (``-0.0`` and ``0.0``), return the second one, as NumPy 2's float32 and float64
  loops do (its float16 loop returns the first; numba's the first).
- float16 values are held in ``float``: every operation of a float16 result is
  rounded to half at once (``GF_ROUND_HALF``, defined by the kernel's preamble), as
  NumPy rounds after every float16 op; float's 24 bits make that double rounding exact
  for ``+ - * /`` and ``sqrt``. The member's own result is rounded by the kernel.
- a NumPy function ``np.tanh`` is C's ``tanhf`` on ``float``, ``tanh`` on ``double``
  (CUDA's own, within its documented ulp bounds of the C library's);
  ``a if c else b`` is ``(c ? a : b)``, ``np.float32(0.5)`` is ``0.5f``.

What is CUDA's alone here is the C spelling of those forms (``MATH``, ``INFIX``), not
any op's.

>>> cuda_expression(sigmoid_node, ["a0"])          # doctest: +SKIP
'((0.5f * tanhf((0.5f * a0))) + 0.5f)'
"""

from __future__ import annotations

from gradflow.prim.scalar_tree import expression_tree

# the C type a value of each dtype is computed in
COMPUTE = {"float16": "float", "float32": "float", "float64": "double", "bool": "bool"}
# NumPy function -> C math function (``f`` appended for float)
MATH = {"abs": "fabs", "exp": "exp", "expm1": "expm1", "log": "log", "log1p": "log1p",
        "sqrt": "sqrt", "floor": "floor", "ceil": "ceil", "tanh": "tanh", "sin": "sin",
        "cos": "cos", **{f: f for f in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                                        "acosh", "atanh", "atan2")}}
INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "less": "<",
         "less_equal": "<=", "greater": ">", "greater_equal": ">=", "equal": "==",
         "not_equal": "!=", "logical_and": "&&", "logical_or": "||"}
_PICK = {"maximum": ">", "minimum": "<"}  # the first operand where it is NaN or wins


def cuda_expression(member, args):
    """The CUDA C expression of ``member`` (a plan node) over the C names ``args`` of its
    inputs' elements, or None: its op has no scalar expression, declines the dtypes,
    or writes one that has no C form here (its kernel then is not printed)."""
    if member.dtype is None or member.dtype.name not in COMPUTE:
        return None
    tree = expression_tree(member, args)
    return None if tree is None else _print(tree, args, True)


def _print(tree, names, top=False):
    if tree.op == "arg":
        return names[tree.value]
    if tree.op == "const":
        return _literal(tree.value, tree.dtype)
    args = [_print(a, names) for a in tree.args]
    if any(a is None for a in args):
        return None
    text = _operation(tree, args)
    if text is None or top or tree.dtype != "float16" or tree.op == "where":
        return text  # (a choice between two halves is one already)
    return f"GF_ROUND_HALF({text})"


def _operation(tree, args):
    op = tree.op
    if op in INFIX:
        return f"({args[0]} {INFIX[op]} {args[1]})"
    if op in _PICK:
        a, b = args
        return f"(({a} != {a} || {a} {_PICK[op]} {b}) ? {a} : {b})"
    if op in MATH:
        suffix = "f" if COMPUTE[tree.dtype] == "float" else ""
        return f"{MATH[op]}{suffix}({', '.join(args)})"
    if op == "square":
        return f"({args[0]} * {args[0]})"
    if op == "negative":
        return f"(-{args[0]})"
    if op == "logical_not":
        return f"(!{args[0]})"
    if op == "where":
        return f"({args[0]} ? {args[1]} : {args[2]})"
    if op == "cast":
        return f"(({COMPUTE[tree.dtype]})({args[0]}))"
    return None


def _literal(value, dtype):
    if dtype == "bool":
        return "true" if value else "false"
    return f"{float(value)!r}f" if COMPUTE[dtype] == "float" else f"{float(value)!r}"
