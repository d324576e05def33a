"""More of TF1's ``tf.nn`` over the convolution, pooling and gather primitives: the
adjoints of conv2d as public functions (``conv2d_backprop_input``/``_filter``),
``conv1d_transpose``, ``max_pool_with_argmax``, the 1-D and rank-dispatching pooling
names (``max_pool1d``, ``max_pool_v2``...) and ``embedding_lookup_sparse``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import expand_dims, squeeze, transpose
from gradflow.ops.conv3d_ops import _filled, _shape_list, avg_pool3d, max_pool3d
from gradflow.ops.conv_ops import (
    _check_format,
    _no_dilation,
    _pair,
    _to_nhwc,
    avg_pool,
    conv2d_transpose,
    max_pool,
)
from gradflow.ops.index_ops import concat, gather
from gradflow.ops.math_ops import (
    cast,
    divide,
    equal,
    multiply,
    ones_like,
    sqrt,
    square,
    where,
    zeros_like,
)
from gradflow.ops.nn_ops import embedding_lookup
from gradflow.ops.segment_ops import segment_sum
from gradflow.ops.state_ops import identity
from gradflow.prim import conv3d as _prim3d  # noqa: F401 - registers max_pool_argmax
from gradflow.prim.conv import _conv_shape
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

# -- the adjoints of conv2d --------------------------------------------------------------


def conv2d_backprop_input(input_sizes, filter=None, out_backprop=None, strides=None,  # noqa: A002
                          padding=None, use_cudnn_on_gpu=True, data_format="NHWC",
                          dilations=None, name=None, filters=None):
    """The gradient of ``conv2d`` in its input, an input of shape ``input_sizes`` (TF1
    ``tf.nn.conv2d_backprop_input``): ``conv2d_transpose`` of ``out_backprop``.

    >>> dx = gf.nn.conv2d_backprop_input([8, 28, 28, 1], w, dy, [1, 1, 1, 1], "SAME")
    """
    filter = filters if filter is None else filter  # noqa: A001
    if filter is None or out_backprop is None or strides is None or padding is None:
        raise ValueError("conv2d_backprop_input needs input_sizes, filter, out_backprop, "
                         "strides and padding")
    return conv2d_transpose(out_backprop, filter, input_sizes, strides, padding,
                            data_format=data_format, name=name or "Conv2DBackpropInput",
                            dilations=dilations)


def conv2d_backprop_filter(input, filter_sizes, out_backprop, strides, padding,  # noqa: A002
                           use_cudnn_on_gpu=True, data_format="NHWC", dilations=None,
                           name=None):
    """The gradient of ``conv2d`` in its filter, a filter of shape ``filter_sizes``
    ``[kh, kw, in_channels, out_channels]`` (TF1 ``tf.nn.conv2d_backprop_filter``).

    >>> dw = gf.nn.conv2d_backprop_filter(x, [3, 3, 1, 8], dy, [1, 1, 1, 1], "SAME")
    """
    padding = _check_format(padding, data_format, "conv2d_backprop_filter")
    _no_dilation(dilations, "conv2d_backprop_filter")
    x = _to_nhwc(convert_to_tensor(input), data_format, "conv2d_backprop_filter")
    g = _to_nhwc(convert_to_tensor(out_backprop, like=x), data_format,
                 "conv2d_backprop_filter")
    strides = _pair(strides, "strides", data_format)
    known, dims = _shape_list(filter_sizes, "conv2d_backprop_filter")
    if len(known) != 4:
        raise ValueError(f"conv2d_backprop_filter: filter_sizes must have 4 entries, got "
                         f"{known}")
    if x.shape is not None and g.shape is not None and None not in known[:2]:
        want = _conv_shape(tuple(x.shape), known, strides, padding)
        if any(None not in (a, b) and a != b for a, b in zip(want, g.shape)):
            raise ValueError(f"conv2d_backprop_filter: a conv2d of input '{x.name}' "
                             f"{tuple(x.shape)} with a filter {known} gives {want}, but "
                             f"out_backprop '{g.name}' has shape {tuple(g.shape)}")
    like = _filled(known, dims, convert_to_tensor(0, dtype=x.dtype))
    return apply("conv2d_backprop_filter", [x, g, like], name=name or "Conv2DBackpropFilter",
                 strides=strides, padding=padding)


def _stride1(value, what):
    """A 1-D stride or window: an int, or a list of 1 or 3 ints (``[1, s, 1]``)."""
    if isinstance(value, int):
        return value
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value[0]
    if len(value) == 3 and value[0] == 1 and value[2] == 1:
        return value[1]
    raise ValueError(f"{what} must be an int or a list [1, s, 1], got {value}")


def _insert_height(shape):
    """A 1-D ``output_shape`` ``[batch, width, channels]`` with a height of 1 inserted."""
    if isinstance(shape, Tensor):
        one = convert_to_tensor([1], dtype=shape.dtype)
        return concat([shape[:1], one, shape[1:]], 0)
    shape = list(shape.reshape(-1)) if hasattr(shape, "reshape") else list(shape)
    if len(shape) != 3:
        raise ValueError(f"conv1d_transpose: output_shape must have 3 entries, got {shape}")
    return [shape[0], 1, shape[1], shape[2]]


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NWC", dilations=None, name=None):
    """The transpose of ``conv1d`` (TF1 ``tf.nn.conv1d_transpose``): ``input``
    ``[batch, width, in_channels]``, ``filters`` ``[width, out_channels, in_channels]``,
    ``output_shape`` ``[batch, out_width, out_channels]``; as TF, a ``conv2d_transpose``
    over an inserted axis of height 1. ``data_format="NCW"`` takes and gives NCW.

    >>> up = gf.nn.conv1d_transpose(h, w, [batch, 64, 8], 2, "SAME")
    """
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"conv1d_transpose: data_format must be 'NWC' or 'NCW', got "
                         f"{data_format!r}")
    if dilations is not None and _stride1(dilations, "dilations") != 1:
        raise NotImplementedError("conv1d_transpose: dilations other than 1 are not supported")
    x = convert_to_tensor(input)
    w = convert_to_tensor(filters, like=x)
    for t, what in ((x, "input"), (w, "filters")):
        if t.shape is not None and len(t.shape) != 3:
            raise ValueError(f"conv1d_transpose: {what} '{t.name}' must have rank 3, got "
                             f"shape {tuple(t.shape)}")
    if data_format == "NCW":
        x = transpose(x, (0, 2, 1))
        output_shape = gather(output_shape, [0, 2, 1]) if isinstance(output_shape, Tensor) \
            else [list(output_shape)[i] for i in (0, 2, 1)]
    stride = _stride1(strides, "conv1d_transpose: strides")
    y = conv2d_transpose(expand_dims(x, 1), expand_dims(w, 0), _insert_height(output_shape),
                         [1, 1, stride, 1], padding)
    if data_format == "NCW":
        return transpose(squeeze(y, [1]), (0, 2, 1), name=name or "conv1d_transpose")
    return squeeze(y, [1], name=name or "conv1d_transpose")


# -- pooling: the argmax, 1-D windows, and the names that dispatch on the rank ------------


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC",  # noqa: A002
                         Targmax=None, name=None, output_dtype=None,  # noqa: N803 - TF1's
                         include_batch_in_index=False):
    """``(max_pool(input), argmax)`` (TF1 ``tf.nn.max_pool_with_argmax``): ``argmax`` is
    the flat index of each window's first maximum, ``(y * width + x) * channels + c``
    (plus ``b * height * width * channels`` with ``include_batch_in_index``), int64
    unless ``Targmax``/``output_dtype`` says int32. The gradient flows through the
    pooled values; ``argmax`` has none.

    >>> pooled, where = gf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
    """
    if data_format != "NHWC":
        raise ValueError(f"max_pool_with_argmax: data_format must be 'NHWC', got "
                         f"{data_format!r}")
    padding = _check_format(padding, data_format, "max_pool_with_argmax")
    dtype = dtypes.as_dtype(output_dtype or Targmax or dtypes.int64)
    if dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"max_pool_with_argmax: Targmax must be int32 or int64, got "
                        f"{dtype.name}")
    x = convert_to_tensor(input)
    window = dict(ksize=_pair(ksize, "ksize"), strides=_pair(strides, "strides"),
                  padding=padding)
    pooled = apply("max_pool", [x], name=name or "MaxPoolWithArgmax", **window)
    argmax = apply("max_pool_argmax", [x], name=f"{name or 'MaxPoolWithArgmax'}_argmax",
                   include_batch=bool(include_batch_in_index), dtype=dtype.name, **window)
    return pooled, argmax


def _pool1d(pool, input, ksize, strides, padding, data_format, name):  # noqa: A002
    if data_format not in ("NWC", "NCW"):
        raise ValueError(f"data_format must be 'NWC' or 'NCW', got {data_format!r}")
    x = convert_to_tensor(input)
    x = transpose(x, (0, 2, 1)) if data_format == "NCW" else x
    y = squeeze(pool(expand_dims(x, 1), (1, _stride1(ksize, "ksize")),
                     (1, _stride1(strides, "strides")), padding), [1])
    return transpose(y, (0, 2, 1), name=name) if data_format == "NCW" else \
        identity(y, name=name)


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Max pooling over the width of ``[batch, width, channels]`` (TF1
    ``tf.nn.max_pool1d``): a 2-D pooling of height 1."""
    return _pool1d(max_pool, input, ksize, strides, padding, data_format,
                   name or "MaxPool1d")


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    """Average pooling over the width of ``[batch, width, channels]`` (TF1
    ``tf.nn.avg_pool1d``)."""
    return _pool1d(avg_pool, input, ksize, strides, padding, data_format,
                   name or "AvgPool1D")


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """``max_pool`` with TF2's argument name ``input`` (TF1 ``tf.nn.max_pool2d``)."""
    return max_pool(input, ksize, strides, padding, data_format=data_format, name=name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """``avg_pool`` with TF2's argument name ``input`` (TF1 ``tf.nn.avg_pool2d``)."""
    return avg_pool(input, ksize, strides, padding, data_format=data_format, name=name)


def _by_rank(what, input, pools, ksize, strides, padding, data_format, name):  # noqa: A002
    x = convert_to_tensor(input)
    rank = None if x.shape is None else len(x.shape)
    if rank not in pools:
        raise ValueError(f"{what}: input '{x.name}' must have rank 3, 4 or 5 (known when the "
                         f"graph is built), got shape {x.shape}")
    pool, default = pools[rank]
    return pool(x, ksize, strides, padding, data_format=data_format or default, name=name)


def max_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Max pooling in 1, 2 or 3 dimensions, after the input's rank (TF1
    ``tf.nn.max_pool_v2``)."""
    pools = {3: (max_pool1d, "NWC"), 4: (max_pool, "NHWC"), 5: (max_pool3d, "NDHWC")}
    return _by_rank("max_pool_v2", input, pools, ksize, strides, padding, data_format, name)


def avg_pool_v2(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    """Average pooling in 1, 2 or 3 dimensions, after the input's rank (TF1
    ``tf.nn.avg_pool_v2``)."""
    pools = {3: (avg_pool1d, "NWC"), 4: (avg_pool, "NHWC"), 5: (avg_pool3d, "NDHWC")}
    return _by_rank("avg_pool_v2", input, pools, ksize, strides, padding, data_format, name)


# -- embedding_lookup_sparse ---------------------------------------------------------------


def embedding_lookup_sparse(params, sp_ids, sp_weights, partition_strategy="mod", name=None,
                            combiner=None, max_norm=None, allow_fast_lookup=False):
    """The rows of ``params`` at the ids of each row of the ``SparseTensor`` ``sp_ids``,
    combined per row (TF1 ``tf.nn.embedding_lookup_sparse``): ``"mean"`` (the default),
    ``"sum"`` or ``"sqrtn"``, weighted by ``sp_weights`` (a ``SparseTensor`` of the same
    positions, or None for weights of 1).

    As TF1, the result has one row per row of ``sp_ids`` up to the last that holds an
    id: later rows are left out; a row without ids inside that range is zero.

    >>> vec = gf.nn.embedding_lookup_sparse(emb, sp_ids, None, combiner="sum")
    """
    combiner = "mean" if combiner is None else combiner
    if combiner not in ("mean", "sqrtn", "sum"):
        raise ValueError(f"embedding_lookup_sparse: combiner must be one of 'mean', 'sqrtn' "
                         f"or 'sum', got {combiner!r}")
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"embedding_lookup_sparse: sp_ids must be a SparseTensor, got "
                        f"{type(sp_ids).__name__}")
    if sp_weights is not None and not isinstance(sp_weights, SparseTensor):
        raise TypeError(f"embedding_lookup_sparse: sp_weights must be a SparseTensor or None, "
                        f"got {type(sp_weights).__name__}")
    rows = cast(sp_ids.indices[:, 0], dtypes.int32)
    emb = embedding_lookup(params, sp_ids.values, partition_strategy=partition_strategy,
                           max_norm=max_norm)
    if sp_weights is None:
        weights = None
        total = segment_sum(emb, rows)
    else:
        weights = cast(sp_weights.values, emb.dtype)
        total = segment_sum(multiply(emb, expand_dims(weights, 1)), rows)
    if combiner == "sum":
        return total if name is None else identity(total, name=name)
    if weights is None:
        weights = ones_like(cast(sp_ids.values, emb.dtype))
    scale = segment_sum(weights, rows) if combiner == "mean" else \
        sqrt(segment_sum(square(weights), rows))
    scale = expand_dims(scale, 1)
    empty = equal(scale, 0.0)  # a row without ids (or of weights summing to 0) is zero
    return where(empty, zeros_like(total), divide(total, where(empty, ones_like(scale), scale)),
                 name=name or "embedding_lookup_sparse")
