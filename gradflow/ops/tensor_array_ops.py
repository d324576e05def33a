"""TF1's ``tf.TensorArray``: a list of tensors written and read one element at a time,
the loop variable of hand-written decoders and ``raw_rnn``.

A ``TensorArray`` object stands for a handle (one array per run, made by its
``tensor_array`` node) and a *flow*, a float32 scalar that orders the operations on it
(``gradflow.prim.tensor_array``). As in TF1 each write returns a new ``TensorArray``
(``ta = ta.write(t, x)``); a ``while_loop`` or ``cond`` carries it as its flow, so it
may be a loop variable, also inside nested lists, tuples and dicts. Gradients flow
through write, read, stack, unstack, gather, scatter, concat and split.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape
from gradflow.ops.state_ops import group, identity
from gradflow.prim import tensor_array as _prim  # noqa: F401 - registers the primitives
from gradflow.prim.registry import apply, constant, convert_to_tensor
from gradflow.prim.state import static_shape


class _Meta:
    """What the TensorArray objects of one handle share: the handle, the dtype and the
    element shape learnt from the writes (with ``infer_shape``)."""

    def __init__(self, handle, dtype, size, dynamic_size, element_shape, infer_shape, name):
        self.handle = handle
        self.dtype = dtype
        self.size = size  # the static size, or None
        self.dynamic_size = dynamic_size
        self.element_shape = element_shape  # a tuple (None entries unknown) or None
        self.infer_shape = infer_shape
        self.name = name


def _static_size(size):
    if isinstance(size, Tensor):
        if size.opdef.kind == "constant":
            return int(size.attrs["value"].array)
        return None
    return int(size)


class TensorArray:
    """A list of ``size`` tensors of one dtype, written and read by index (TF1).

    ``dynamic_size=True`` lets writes past the end grow it; ``clear_after_read``
    (default True) frees an element when it is read, so that reading it twice is an
    error; ``element_shape`` (or, with ``infer_shape``, the first write) fixes the
    elements' shape. Each write returns a new TensorArray, which the next operation
    must use: ``ta = ta.write(t, x)``.

    >>> ta = gf.TensorArray(gf.float32, size=0, dynamic_size=True)
    >>> _, ta = gf.while_loop(lambda t, ta: t < 3,
    ...                       lambda t, ta: (t + 1, ta.write(t, gf.cast(t, gf.float32))),
    ...                       (0, ta))
    >>> ys = ta.stack()    # [0., 1., 2.]
    """

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None,
                 _meta=None):
        if _meta is not None:
            self._meta, self._flow = _meta, flow
            return
        if handle is not None:
            raise ValueError("TensorArray: building one from a handle is not supported; "
                             "use the TensorArray a write returned")
        if size is None:
            raise ValueError("TensorArray: size must be provided")
        dtype = dtypes.as_dtype(dtype)
        shape = static_shape(element_shape, "TensorArray: element_shape")
        label = name or tensor_array_name or "TensorArray"
        size_t = convert_to_tensor(size, dtype=dtypes.int32) if not isinstance(size, Tensor) \
            else size
        if not size_t.dtype.is_integer or (size_t.shape is not None and len(size_t.shape)):
            raise TypeError(f"TensorArray: size must be a scalar int, got '{size_t.name}'")
        handle = apply("tensor_array", [size_t], name=label, dtype=dtype,
                       element_shape=shape, dynamic_size=bool(dynamic_size),
                       clear_after_read=True if clear_after_read is None
                       else bool(clear_after_read), infer_shape=bool(infer_shape),
                       label=label)
        self._meta = _Meta(handle, dtype, _static_size(size_t), bool(dynamic_size), shape,
                           bool(infer_shape), label)
        self._flow = constant(0.0, dtype=dtypes.float32, name=f"{label}/flow",
                              _graph=handle.graph)

    # -- properties -------------------------------------------------------------------
    @property
    def flow(self):
        """The float32 scalar that orders this array's operations."""
        return self._flow

    @property
    def handle(self):
        """The array's handle (a ``variant`` tensor)."""
        return self._meta.handle

    @property
    def dtype(self):
        """The elements' dtype."""
        return self._meta.dtype

    @property
    def dynamic_size(self):
        """Whether writes past the end grow the array."""
        return self._meta.dynamic_size

    @property
    def element_shape(self):
        """The elements' static shape (``TensorShape(None)`` while unknown)."""
        return TensorShape(self._meta.element_shape)

    def _with_flow(self, flow):
        return TensorArray(self._meta.dtype, flow=flow, _meta=self._meta)

    def _merge_shape(self, shape, what):
        meta = self._meta
        if not meta.infer_shape or shape is None:
            return
        shape = tuple(None if d is None else int(d) for d in shape)
        known = meta.element_shape
        if known is None:
            meta.element_shape = shape
            return
        if len(known) != len(shape) or any(a is not None and b is not None and a != b
                                           for a, b in zip(known, shape)):
            raise ValueError(f"TensorArray '{meta.name}': {what} has shape {shape}, but the "
                             f"elements have shape {known} (pass infer_shape=False to let "
                             "them differ)")
        meta.element_shape = tuple(a if a is not None else b for a, b in zip(known, shape))

    def _value(self, value, what):
        meta = self._meta
        value = convert_to_tensor(value, dtype=meta.dtype) if not isinstance(value, Tensor) \
            else value
        if value.dtype is not meta.dtype:
            raise TypeError(f"TensorArray '{meta.name}' holds {meta.dtype.name}, but {what} "
                            f"'{value.name}' is {value.dtype.name}")
        return value

    def _index(self, index, what):
        index = convert_to_tensor(index, dtype=dtypes.int32) if not isinstance(index, Tensor) \
            else index
        if not index.dtype.is_integer:
            raise TypeError(f"TensorArray '{self._meta.name}': {what} must be integers, got "
                            f"'{index.name}' of dtype {index.dtype.name}")
        return index

    def _shape(self, lead):
        elem = self._meta.element_shape
        return None if elem is None else (lead, *elem)

    # -- one element ----------------------------------------------------------------------
    def write(self, index, value, name=None):
        """A new TensorArray with ``value`` at ``index`` (each index is written once)."""
        value = self._value(value, "the value written")
        self._merge_shape(value.shape, f"the value written ('{value.name}')")
        flow = apply("tensor_array_write", [self.handle, self._index(index, "the index"),
                                            value, self._flow],
                     name=name or "TensorArrayWrite")
        return self._with_flow(flow)

    def read(self, index, name=None):
        """The element at ``index``."""
        elem = self._meta.element_shape
        return apply("tensor_array_read", [self.handle, self._index(index, "the index"),
                                           self._flow],
                     name=name or "TensorArrayRead", dtype=self._meta.dtype, shape=elem)

    # -- all elements ---------------------------------------------------------------------
    def stack(self, name=None):
        """The elements stacked along a new first axis."""
        meta = self._meta
        lead = None if meta.dynamic_size else meta.size
        return apply("tensor_array_stack", [self.handle, self._flow],
                     name=name or "TensorArrayStack", dtype=meta.dtype, shape=self._shape(lead))

    def gather(self, indices, name=None):
        """The elements at ``indices`` (a vector), stacked."""
        indices = self._index(indices, "the indices")
        lead = None if indices.shape is None or len(indices.shape) != 1 else indices.shape[0]
        return apply("tensor_array_gather", [self.handle, indices, self._flow],
                     name=name or "TensorArrayGather", dtype=self._meta.dtype,
                     shape=self._shape(lead))

    def concat(self, name=None):
        """The elements concatenated along their first axis."""
        elem = self._meta.element_shape
        shape = None if elem is None or not elem else (None, *elem[1:])
        return apply("tensor_array_concat", [self.handle, self._flow],
                     name=name or "TensorArrayConcat", dtype=self._meta.dtype, shape=shape)

    def unstack(self, value, name=None):
        """A new TensorArray whose element ``i`` is ``value[i]``."""
        value = self._value(value, "the value unstacked")
        self._merge_shape(None if value.shape is None else value.shape[1:],
                          f"a row of the value unstacked ('{value.name}')")
        flow = apply("tensor_array_unstack", [self.handle, value, self._flow],
                     name=name or "TensorArrayUnstack")
        return self._with_flow(flow)

    def scatter(self, indices, value, name=None):
        """A new TensorArray with ``value[k]`` at ``indices[k]``."""
        value = self._value(value, "the value scattered")
        self._merge_shape(None if value.shape is None else value.shape[1:],
                          f"a row of the value scattered ('{value.name}')")
        flow = apply("tensor_array_scatter",
                     [self.handle, self._index(indices, "the indices"), value, self._flow],
                     name=name or "TensorArrayScatter")
        return self._with_flow(flow)

    def split(self, value, lengths, name=None):
        """A new TensorArray whose elements are ``value`` cut along its first axis into
        pieces of ``lengths`` rows."""
        value = self._value(value, "the value split")
        self._merge_shape(None if value.shape is None else (None, *value.shape[1:]),
                          f"a piece of the value split ('{value.name}')")
        lengths = self._index(lengths, "the lengths")
        flow = apply("tensor_array_split", [self.handle, value, lengths, self._flow],
                     name=name or "TensorArraySplit")
        return self._with_flow(flow)

    # -- the rest -------------------------------------------------------------------------
    def size(self, name=None):
        """The number of elements (an int32 scalar)."""
        return apply("tensor_array_size", [self.handle, self._flow],
                     name=name or "TensorArraySize")

    def identity(self):
        """A TensorArray of the same elements whose flow is a new node (TF1: used to
        place control dependencies)."""
        return self._with_flow(identity(self._flow))

    def close(self, name=None):
        """An operation that runs after this array's operations (TF1 frees the array;
        here it lives until the end of the run)."""
        return group(self._flow, name=name or "TensorArrayClose")

    def __repr__(self):
        return f"<gf.TensorArray '{self._meta.name}' dtype={self._meta.dtype.name}>"


__all__ = ["TensorArray"]
