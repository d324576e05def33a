"""TF1's ``tf.IndexedSlices``: some rows of a dense tensor, as ``values`` at ``indices``
(the form TF1 gives the gradient of a lookup). Wherever a tensor is expected
(``convert_to_tensor``, the ops, an optimizer's ``apply_gradients``) it stands for the
dense tensor of ``dense_shape`` whose rows at ``indices`` are the sums of ``values``
there, zeros elsewhere."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape
from gradflow.ops.array_ops import static_value
from gradflow.ops.segment_ops import unsorted_segment_sum
from gradflow.prim.registry import convert_to_tensor


class IndexedSlices:
    """``values`` (rows) at ``indices`` of a tensor of shape ``dense_shape`` (TF1).

    >>> s = gf.IndexedSlices(gf.constant([[1.0, 2.0]]), gf.constant([2]), [4, 2])
    >>> dense = gf.convert_to_tensor(s)   # row 2 is [1, 2], the others zeros
    """

    def __init__(self, values, indices, dense_shape=None):
        self._values = convert_to_tensor(values)
        self._indices = convert_to_tensor(indices)
        if not self._indices.dtype.is_integer:
            raise TypeError(f"IndexedSlices: indices '{self._indices.name}' must be integers, "
                            f"got {self._indices.dtype.name}")
        self._dense_shape = None if dense_shape is None else \
            convert_to_tensor(dense_shape, dtype=None if isinstance(dense_shape, Tensor)
                              else dtypes.int64)
        self._dense = None

    values = property(lambda self: self._values, doc="The rows (a tensor).")
    indices = property(lambda self: self._indices, doc="The row of each of ``values``.")
    dense_shape = property(lambda self: self._dense_shape,
                           doc="The dense tensor's shape (a 1-D int tensor), or None.")
    dtype = property(lambda self: self._values.dtype, doc="The values' dtype.")
    graph = property(lambda self: self._values.graph, doc="The graph of the values.")
    name = property(lambda self: self._values.name, doc="The values' name.")
    op = property(lambda self: self._values.op, doc="The operation of the values.")

    @property
    def shape(self):
        """The dense tensor's static shape, as far as it is known."""
        known = static_value(self._dense_shape) if self._dense_shape is not None else None
        if known is not None:
            return TensorShape([int(d) for d in known])
        rows = self._values.shape
        return TensorShape(None if rows is None else (None, *rows[1:]))

    def get_shape(self):
        """``shape`` (TF1's method)."""
        return self.shape

    def _as_graph_tensor(self):
        if self._dense is None:
            if self._dense_shape is None:
                raise ValueError(f"IndexedSlices of '{self._values.name}': converting it to a "
                                 "tensor needs its dense_shape")
            with self.graph.as_default():
                self._dense = unsorted_segment_sum(self._values, self._indices,
                                                   self._dense_shape[0])
        return self._dense

    def __neg__(self):
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def __repr__(self):
        return (f"IndexedSlices(indices={self._indices.name}, values={self._values.name}"
                + (f", dense_shape={self._dense_shape.name})" if self._dense_shape is not None
                   else ")"))


__all__ = ["IndexedSlices"]
