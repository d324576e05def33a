"""The ``custom_gradient`` primitive: the identity of a function's result whose gradient
is the one the function gave (``gradflow.ops.functional_ops.custom_gradient``).

Node inputs ``[y, *arguments, *variables]``; its value is ``y``. Its gradient rule
(attribute ``rule``) returns no gradient for ``y``, so the walk never enters the
function's own ops, and the user's gradients for the arguments and variables.
"""

from __future__ import annotations

from gradflow.prim.registry import register


def _impl(xp, y, *rest, rule, index):
    return y


def _infer(shapes, in_dtypes, rule, index):
    return shapes[0], in_dtypes[0]


def _grad(node, g):
    return node.attrs["rule"](node, g)


register("custom_gradient", _impl, _infer, grad=_grad, pass_through=True,
         takes_strings=True)
