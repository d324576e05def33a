"""TF1's ``SparseTensor``: a tensor given by the positions and values of its entries.

A ``SparseTensor`` is three tensors of one graph: ``indices`` (int64, ``[N, rank]``, one
row per entry), ``values`` (``[N]``) and ``dense_shape`` (int64, ``[rank]``). It is not an
op of its own: ``Session.run`` fetches its three parts and returns a
:class:`SparseTensorValue`, and a ``feed_dict`` key that is a ``SparseTensor`` (such as
:func:`sparse_placeholder`'s) takes a ``SparseTensorValue`` or an ``(indices, values,
dense_shape)`` tuple, fed to the three parts. The ops that read or make them:
``sparse_tensor_to_dense``, ``nn.ctc_loss``, ``nn.ctc_greedy_decoder``, ``edit_distance``.

>>> labels = gf.sparse_placeholder(gf.int32)
>>> dense = gf.sparse_tensor_to_dense(labels)
>>> sess.run(dense, {labels: ([[0, 0], [1, 2]], [7, 9], [2, 3])})   # [[7 0 0] [0 0 9]]
"""

from __future__ import annotations

import collections

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape, _find_session
from gradflow.prim.array import static_value
from gradflow.prim.math import cast, divide
from gradflow.prim.registry import apply, constant, convert_to_tensor
from gradflow.prim.state import placeholder


class SparseTensorValue(collections.namedtuple("SparseTensorValue",
                                               ["indices", "values", "dense_shape"])):
    """A fetched ``SparseTensor``: its ``indices``, ``values`` and ``dense_shape`` arrays."""

    __slots__ = ()


class SparseTensor:
    """A sparse tensor of ``dense_shape`` holding ``values[i]`` at ``indices[i]`` (TF1
    ``tf.SparseTensor``). ``indices`` and ``dense_shape`` are int64 tensors (lists and
    arrays are made constants), ``values`` a tensor of any dtype."""

    def __init__(self, indices, values, dense_shape):
        parts = []
        for what, part in (("indices", indices), ("dense_shape", dense_shape)):
            if isinstance(part, Tensor):
                if not part.dtype.is_integer:
                    raise TypeError(f"SparseTensor: {what} '{part.name}' must be int64, got "
                                    f"{part.dtype.name}")
                part = part if part.dtype is dtypes.int64 else cast(part, dtypes.int64)
            else:
                part = convert_to_tensor(part, dtype=dtypes.int64)
            parts.append(part)
        self._indices, self._dense_shape = parts
        self._values = values if isinstance(values, Tensor) else convert_to_tensor(values)
        shape = self._indices.shape
        if shape is not None and len(shape) != 2:
            raise ValueError(f"SparseTensor: indices '{self._indices.name}' must be a matrix "
                             f"[entries, rank], got shape {tuple(shape)}")
        if self._values.shape is not None and len(self._values.shape) != 1:
            raise ValueError(f"SparseTensor: values '{self._values.name}' must be a vector, "
                             f"got shape {tuple(self._values.shape)}")

    @classmethod
    def from_value(cls, value):
        """A ``SparseTensor`` of constants from a ``SparseTensorValue`` (or triple)."""
        return cls(*value)

    @property
    def indices(self) -> Tensor:
        """The int64 ``[entries, rank]`` tensor of the entries' positions."""
        return self._indices

    @property
    def values(self) -> Tensor:
        """The ``[entries]`` tensor of the entries' values."""
        return self._values

    @property
    def dense_shape(self) -> Tensor:
        """The int64 ``[rank]`` tensor of the dense tensor's shape."""
        return self._dense_shape

    @property
    def dtype(self):
        """The values' dtype."""
        return self._values.dtype

    @property
    def graph(self):
        """The graph its tensors belong to."""
        return self._values.graph

    @property
    def op(self):
        """The node that gives its values (TF1 names the op that made the tensor)."""
        return self._values

    @property
    def shape(self):
        """The static dense shape: known where ``dense_shape`` is a constant, else only
        its rank, or None where that is unknown too (as a ``Tensor``'s)."""
        known = static_value(self._dense_shape)
        if known is not None:
            return TensorShape([int(d) for d in known.reshape(-1)])
        rank = None if self._indices.shape is None else self._indices.shape[1]
        if rank is None and self._dense_shape.shape is not None:
            rank = self._dense_shape.shape[0]
        return None if rank is None else TensorShape([None] * int(rank))

    def get_shape(self):
        """``shape``: the static dense shape, e.g. ``[2, 3]`` or ``[None, None]``."""
        return self.shape

    def eval(self, feed_dict=None, session=None):
        """This sparse tensor's value in ``session`` (default: the default session)."""
        return _find_session(session, self._values).run(self, feed_dict=feed_dict)

    def _scaled(self, other, op, symbol):
        other = convert_to_tensor(other, like=self._values)
        if other.shape is None or len(other.shape) != 0:
            raise NotImplementedError(f"SparseTensor {symbol} a tensor of shape "
                                      f"{other.shape}: only a scalar is supported")
        return SparseTensor(self._indices, op(self._values, other), self._dense_shape)

    def __mul__(self, other):
        """The entries times a scalar (TF1's ``SparseTensor * dense``, for scalars)."""
        return self._scaled(other, lambda a, b: apply("multiply", [a, b]), "*")

    __rmul__ = __mul__

    def __truediv__(self, other):
        """The entries divided by a scalar."""
        return self._scaled(other, divide, "/")

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices.name!r}, values={self._values.name!r}, "
                f"dense_shape={self._dense_shape.name!r})")


def sparse_placeholder(dtype, shape=None, name=None) -> SparseTensor:
    """A ``SparseTensor`` to feed (TF1 ``tf.sparse_placeholder``): feed it a
    ``SparseTensorValue`` or an ``(indices, values, dense_shape)`` tuple. A fully known
    ``shape`` makes ``dense_shape`` that constant; else ``shape``'s rank, where given,
    fixes the indices' width."""
    name = name or "SparsePlaceholder"
    rank = None
    if isinstance(shape, Tensor):  # the dense shape as a tensor (a constant, usually)
        rank = None if shape.shape is None else shape.shape[0]
        values = placeholder(dtype, (None,), name=name + "/values")
        indices = placeholder(dtypes.int64, (None, rank), name=name + "/indices")
        return SparseTensor(indices, values, shape)
    if shape is not None:
        shape = [None if d is None or (not isinstance(d, int) and getattr(d, "value", 0)
                                       is None) else int(d) for d in shape]
        rank = len(shape)
    values = placeholder(dtype, (None,), name=name + "/values")
    indices = placeholder(dtypes.int64, (None, rank), name=name + "/indices")
    if shape is not None and None not in shape:
        dense_shape = constant(shape, dtype=dtypes.int64, name=name + "/shape")
    else:
        dense_shape = placeholder(dtypes.int64, (rank,), name=name + "/shape")
    return SparseTensor(indices, values, dense_shape)


def expand_feeds(feed_items):
    """``feed_items`` (pairs of a ``feed_dict``) with each ``SparseTensor`` key given as
    its three parts."""
    out = []
    for key, value in feed_items:
        if not isinstance(key, SparseTensor):
            out.append((key, value))
            continue
        if isinstance(value, SparseTensor) or not isinstance(value, (tuple, list)) \
                or len(value) != 3:
            raise TypeError(f"feed_dict: the value fed to {key!r} must be a "
                            "SparseTensorValue or an (indices, values, dense_shape) tuple, "
                            f"got {type(value).__name__}")
        indices, values, dense_shape = value
        out += [(key.indices, indices), (key.values, values)]
        if key.dense_shape.opdef.kind != "constant":
            out.append((key.dense_shape, dense_shape))
            continue
        fixed = [int(d) for d in key.shape]
        given = np.asarray(dense_shape).reshape(-1).tolist()
        if given != fixed:
            raise ValueError(f"feed_dict: {key!r} has the dense shape {fixed}, but the value "
                             f"fed to it has {given}")
    return out
