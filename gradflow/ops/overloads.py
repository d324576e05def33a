"""Python operators on tensors: ``+ - * / // % @ ** unary- abs`` and comparisons."""

from __future__ import annotations

from gradflow.graph import Tensor
from gradflow.ops import array_ops, index_ops, math_ops, state_ops


def _binary(fn):
    return lambda self, other: fn(self, other)


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _no_bool(self):
    raise TypeError(f"the truth value of the symbolic tensor '{self.name}' is unknown "
                    "while the graph is built; run it in a Session, or use gf.where")


def _no_iter(self):
    raise TypeError(f"the symbolic tensor '{self.name}' cannot be iterated; use gf.unstack")


_OPERATORS = {
    "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": math_ops.divide, "floordiv": math_ops.floordiv, "mod": math_ops.floormod,
    "pow": math_ops.pow,
    "matmul": array_ops.matmul,
}

for _name, _fn in _OPERATORS.items():
    setattr(Tensor, f"__{_name}__", _binary(_fn))
    setattr(Tensor, f"__r{_name}__", _reflected(_fn))

Tensor.__neg__ = lambda self: math_ops.negative(self)
Tensor.__abs__ = lambda self: math_ops.abs(self)
Tensor.__lt__ = _binary(math_ops.less)
Tensor.__le__ = _binary(math_ops.less_equal)
Tensor.__gt__ = _binary(math_ops.greater)
Tensor.__ge__ = _binary(math_ops.greater_equal)
Tensor.__and__ = _binary(math_ops.logical_and)
Tensor.__or__ = _binary(math_ops.logical_or)
Tensor.__invert__ = lambda self: math_ops.logical_not(self)
Tensor.__getitem__ = lambda self, key: index_ops.getitem(self, key)
Tensor.__bool__ = _no_bool
Tensor.__iter__ = _no_iter
Tensor.set_shape = state_ops.set_shape
Tensor.__array_ufunc__ = None  # so numpy_array * tensor defers to Tensor.__rmul__
