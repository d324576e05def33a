"""Summary ops: graph nodes whose value is a serialized ``Summary`` protobuf (bytes).

Each summary op is an op of kind ``"call"``: when a plan is compiled, its impl
gets the session and returns a function that copies its input to the host
(``backend.to_numpy``), builds the ``Summary`` with tensorboardX's protobuf
classes and returns ``SerializeToString()``. The executor passes that ``bytes``
object along like any other value, and ``Session.run`` returns it unchanged,
so ``sess.run(merged)`` gives the same bytes on every backend, as TF1 does.

Tags follow TF1: the summary's name, cleaned of characters TensorBoard does not
allow, under the current name scope and made unique in the graph (the tag is
the summary node's name); with ``family`` the tag is ``family/<node name>``.
"""

from __future__ import annotations

import functools
import io
import math
import re
from collections import Counter

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Operation, Tensor, get_default_graph, user_source_line
from gradflow.prim.registry import apply, convert_to_tensor, register
from gradflow.summary import _tbx
from gradflow.variables import GraphKeys


class _StringDType(dtypes.DType):
    """The dtype of a summary's value: one serialized protobuf (TF1's ``tf.string``).
    It is no array dtype: such a value is a Python ``bytes`` object."""

    __slots__ = ()

    @property
    def as_numpy_dtype(self):
        return np.object_

    @property
    def size(self) -> int:
        raise TypeError("a string (summary) value has no fixed size")

    def _limits(self):
        raise TypeError("a string (summary) value has no minimum or maximum")

    def resolve(self, xp):
        raise TypeError("a summary's value is a serialized protobuf (bytes), not an array")

    def __reduce__(self):
        return (_string_dtype, ())


def _string_dtype():
    return string


string = _StringDType("string", "s", 0)

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def clean_tag(name):
    """``name`` with every character TensorBoard does not take in a tag replaced by
    ``_`` and leading slashes removed (as TF1 does)."""
    if name is None:
        return None
    return _INVALID_TAG_CHARACTERS.sub("_", str(name)).lstrip("/")


def summary_tag(node) -> str:
    """The tag of the summary node ``node``: its name, prefixed with its family."""
    family = node.attrs.get("family")
    return node.name if family is None else f"{family}/{node.name}"


def _infer(shapes, in_dtypes, **attrs):
    return (), string


def _what(kind, name):
    return f"summary.{kind}('{name}')"


def _value_tensor(kind, name, value, source):
    """``value`` as a tensor holding a value (not an operation or a summary)."""
    t = convert_to_tensor(value)
    if isinstance(t, Operation):
        raise TypeError(f"{_what(kind, name)}: '{t.name}' is an operation ({t.type}) and "
                        f"has no value to summarize; at {source}")
    if t.dtype is None or t.dtype is string or t.dtype.name == "variant":
        dt = "no" if t.dtype is None else t.dtype.name
        raise TypeError(f"{_what(kind, name)}: '{t.name}' has {dt} dtype, not a numeric "
                        f"one; at {source}")
    return t


def _real_tensor(kind, name, value, source):
    t = _value_tensor(kind, name, value, source)
    if not (t.dtype.is_floating or t.dtype.is_integer):
        raise TypeError(f"{_what(kind, name)}: '{t.name}' is {t.dtype.name}; it must be a "
                        f"real number type (float or integer; cast bools with gf.cast); "
                        f"at {source}")
    return t


def _build(op_name, kind, name, inputs, family, collections, graph=None, **attrs):
    """The summary node of ``op_name`` named after ``name``, added to ``collections``."""
    _tbx.require()
    tag = clean_tag(name)
    if not tag:
        raise ValueError(f"summary.{kind}: the name must be a non-empty string, got {name!r}")
    family = clean_tag(family) or None
    base = tag if family is None else f"{family}/{tag}"
    node = apply(op_name, inputs, name=base, graph=graph, family=family, **attrs)
    for key in [GraphKeys.SUMMARIES] if collections is None else collections:
        node.graph.add_to_collection(key, node)
    return node


def _serialize(tbx, values):
    return tbx.Summary(value=values).SerializeToString()


# -- scalar -----------------------------------------------------------------------------


def _scalar_impl(run_state, node):
    tbx = _tbx.require()
    to_numpy = run_state.backend.to_numpy
    tag, source = summary_tag(node), node.inputs[0].name

    def run(value):
        v = to_numpy(value)
        if v.ndim != 0:
            raise InvalidArgumentError(
                f"summary.scalar '{tag}': the value of '{source}' must be a scalar (shape ()), "
                f"but has shape {tuple(v.shape)}; summary created at {node.source}")
        return _serialize(tbx, [tbx.Summary.Value(tag=tag, simple_value=float(v))])

    return run


register("ScalarSummary", _scalar_impl, _infer, grad=None, kind="call")


def scalar(name, tensor, collections=None, family=None):
    """A summary of the single value of ``tensor`` (a real number tensor of shape ``()``
    or a Python number), shown in TensorBoard's scalars tab (TF1 ``tf.summary.scalar``).

    The result is a string tensor: fetched with ``Session.run``, it is the serialized
    ``Summary`` protobuf (``bytes``) to hand to ``FileWriter.add_summary``. The tag is
    ``name`` under the current name scope (``family/`` in front with ``family``). The
    summary is added to ``collections`` (default ``[GraphKeys.SUMMARIES]``). The value
    is stored as a 32-bit float, as in TF1.
    """
    source = user_source_line()
    t = _real_tensor("scalar", name, tensor, source)
    if t.shape is not None and len(t.shape) != 0:
        raise ValueError(f"{_what('scalar', name)}: '{t.name}' must be a scalar (shape ()), "
                         f"but has shape {tuple(t.shape)}; reduce it first (for instance "
                         f"gf.reduce_mean) or summarize it with summary.histogram; at {source}")
    return _build("ScalarSummary", "scalar", name, [t], family, collections)


# -- histogram --------------------------------------------------------------------------

_DBL_MAX = float(np.finfo(np.float64).max)
_limits_cache: list = []


def bucket_limits() -> np.ndarray:
    """TF1's default histogram bucket edges: 0, and +-1e-12 growing by 10% up to 1e20,
    closed by +-DBL_MAX. Bucket ``i`` holds the values in ``[limit[i-1], limit[i])``."""
    if not _limits_cache:
        positive = []
        v = 1.0e-12
        while v < 1.0e20:
            positive.append(v)
            v *= 1.1
        positive.append(_DBL_MAX)
        negative = [-x for x in reversed(positive)]
        _limits_cache.append(np.array(negative + [0.0] + positive, dtype=np.float64))
    return _limits_cache[0]


_LOG_STEP = math.log(1.1)
_LOG_FIRST = math.log(1.0e-12)


def bucket_index(v):
    """``np.searchsorted(bucket_limits(), v, side="right")`` for finite float64 ``v``,
    in a few passes instead of a binary search per value (2.5x faster on 200,000
    values): the edges grow by 10%, so a logarithm gives each value's bucket to within
    one, and comparisons with the edges settle it."""
    limits = bucket_limits()
    half = (len(limits) - 1) // 2  # the index of the edge 0
    padded = _padded_limits()
    with np.errstate(divide="ignore"):
        estimate = (np.log(np.abs(v)) - _LOG_FIRST) / _LOG_STEP
    count = np.clip(np.floor(estimate) + 1, 0, half).astype(np.intp)  # positive edges <= |v|
    index = np.where(v >= 0, half + 1 + count, half - count)
    for _ in range(2):  # padded[k] is limits[k - 1]: -inf and +inf at the ends
        index += padded[index + 1] <= v
        index -= padded[index] > v
    return index


@functools.lru_cache(maxsize=1)
def _padded_limits():
    return np.concatenate(([-np.inf], bucket_limits(), [np.inf]))


def histogram_proto(tbx, values):
    """The ``HistogramProto`` of ``values`` (finite numbers) with TF1's buckets, runs of
    empty buckets merged into one as TF1 writes them."""
    limits = bucket_limits()
    v = values.astype(np.float64, copy=False).ravel()
    index = np.minimum(bucket_index(v), len(limits) - 1)
    counts = np.bincount(index, minlength=len(limits)).astype(np.float64)
    keep = counts > 0  # a bucket with values, or the last of a run of empty ones
    keep[:-1] |= counts[1:] > 0
    keep[-1] = True
    if v.size:
        low, high = float(v.min()), float(v.max())
    else:  # TF1's empty histogram
        low, high = _DBL_MAX, -_DBL_MAX
    return tbx.HistogramProto(min=low, max=high, num=float(v.size), sum=float(v.sum()),
                              sum_squares=float(np.dot(v, v)),
                              bucket_limit=limits[keep].tolist(), bucket=counts[keep].tolist())


def _histogram_impl(run_state, node):
    tbx = _tbx.require()
    to_numpy = run_state.backend.to_numpy
    tag, source = summary_tag(node), node.inputs[0].name

    def run(value):
        v = to_numpy(value)
        if not bool(np.all(np.isfinite(v))):
            what = "Nan" if bool(np.any(np.isnan(v))) else "Infinity"
            raise InvalidArgumentError(
                f"{what} in summary histogram for: {tag} (the value of '{source}'; summary "
                f"created at {node.source})")
        return _serialize(tbx, [tbx.Summary.Value(tag=tag, histo=histogram_proto(tbx, v))])

    return run


register("HistogramSummary", _histogram_impl, _infer, grad=None, kind="call")


def histogram(name, values, collections=None, family=None):
    """A summary of the distribution of ``values`` (a real number tensor of any shape),
    shown in TensorBoard's histograms and distributions tabs (TF1
    ``tf.summary.histogram``).

    It records the count, sum, sum of squares, minimum and maximum of the values and
    how many fall in each of TF1's default buckets (edges growing by 10% from 1e-12).
    A NaN or infinity in ``values`` fails the run with ``InvalidArgumentError``, as in
    TF1. Tag, result and ``collections`` as for ``scalar``.
    """
    source = user_source_line()
    t = _real_tensor("histogram", name, values, source)
    return _build("HistogramSummary", "histogram", name, [t], family, collections)


# -- image ------------------------------------------------------------------------------

_IMAGE_DTYPES = ("uint8", "float16", "float32", "float64")
_BAD_COLOR = np.array([255, 0, 0, 255], dtype=np.uint8)  # TF1's color for NaN/Inf pixels


def to_uint8_image(image) -> np.ndarray:
    """One ``(height, width, channels)`` image as uint8, as TF1's image summary makes it.

    uint8 images are kept. Float images are rescaled: if no finite pixel is negative,
    by ``255 / max``; otherwise by ``127 / max(|min|, |max|)`` around 128. Pixels with
    a non-finite channel become red (its first channels)."""
    if image.dtype == np.uint8:
        return image
    work = np.float64 if image.dtype == np.float64 else np.float32
    pixels = image.astype(work)
    finite = np.all(np.isfinite(pixels), axis=-1)
    good = pixels[finite]
    low = float(good.min()) if good.size else np.inf
    high = float(good.max()) if good.size else -np.inf
    if low < 0:
        top = max(abs(low), abs(high))
        scale, offset = (0.0 if top < 1e-6 else 127.0 / top), 128.0
    else:
        scale, offset = (0.0 if high < 1e-6 else 255.0 / high), 0.0
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = pixels * work(scale) + work(offset)
        out = np.where(finite[..., None], scaled, 0).astype(np.uint8)
    out[~finite] = _BAD_COLOR[:image.shape[-1]]
    return out


def encode_png(image) -> bytes:
    """PNG bytes of a uint8 ``(height, width, channels)`` image with 1, 3 or 4 channels."""
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError("summary.image encodes PNG images with Pillow, which is not "
                          "installed: pip install pillow") from err
    channels = image.shape[-1]
    picture = Image.fromarray(np.ascontiguousarray(image[..., 0] if channels == 1 else image),
                              mode={1: "L", 3: "RGB", 4: "RGBA"}[channels])
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue()


def _check_image_shape(shape, fail):
    if len(shape) != 4:
        fail(f"must have rank 4 (batch, height, width, channels), but has shape "
             f"{tuple(shape)}")
    if shape[-1] is not None and shape[-1] not in (1, 3, 4):
        fail(f"must have 1, 3 or 4 channels (its last dimension), but has shape "
             f"{tuple(shape)}")


def _image_impl(run_state, node):
    tbx = _tbx.require()
    to_numpy = run_state.backend.to_numpy
    tag, source, max_outputs = summary_tag(node), node.inputs[0].name, node.attrs["max_outputs"]

    def fail(message):
        raise InvalidArgumentError(f"summary.image '{tag}': the value of '{source}' {message}; "
                                   f"summary created at {node.source}")

    def run(value):
        batch = to_numpy(value)
        _check_image_shape(batch.shape, fail)
        values = []
        for i in range(min(max_outputs, batch.shape[0])):
            image = to_uint8_image(batch[i])
            height, width, channels = image.shape
            encoded = tbx.Summary.Image(height=height, width=width, colorspace=channels,
                                        encoded_image_string=encode_png(image))
            values.append(tbx.Summary.Value(
                tag=f"{tag}/image" if max_outputs == 1 else f"{tag}/image/{i}", image=encoded))
        return _serialize(tbx, values)

    return run


register("ImageSummary", _image_impl, _infer, grad=None, kind="call")


def image(name, tensor, max_outputs=3, collections=None, family=None):
    """A summary of up to ``max_outputs`` images of ``tensor``, shown in TensorBoard's
    images tab (TF1 ``tf.summary.image``).

    ``tensor`` is ``(batch, height, width, channels)`` with 1 (grayscale), 3 (RGB) or
    4 (RGBA) channels, uint8 or float. uint8 values are written as they are; a float
    image is rescaled as TF1 does, each image on its own: when it has no negative
    value, so that its largest value becomes 255 (an image in ``[0, 1]`` that reaches
    1 becomes ``value * 255``, truncated); otherwise so that 0 maps to 128 and the
    largest magnitude to 1 or 255. Tags are ``<tag>/image/0``, ``<tag>/image/1``...,
    or ``<tag>/image`` when ``max_outputs`` is 1. Needs Pillow to encode the PNGs.
    """
    source = user_source_line()
    t = _value_tensor("image", name, tensor, source)
    if t.dtype.name not in _IMAGE_DTYPES:
        raise TypeError(f"{_what('image', name)}: '{t.name}' is {t.dtype.name}; images must "
                        f"be uint8, float16, float32 or float64; at {source}")

    def fail(message):
        raise ValueError(f"{_what('image', name)}: '{t.name}' {message}; at {source}")

    if t.shape is not None:
        _check_image_shape(t.shape, fail)
    if isinstance(max_outputs, bool) or int(max_outputs) != max_outputs or max_outputs < 1:
        raise ValueError(f"{_what('image', name)}: max_outputs must be a positive integer, "
                         f"got {max_outputs!r}")
    return _build("ImageSummary", "image", name, [t], family, collections,
                  max_outputs=int(max_outputs))


# -- text -------------------------------------------------------------------------------


def _as_text(item) -> str:
    """One element of a numeric tensor as text, as TF1's ``tf.as_string`` writes it."""
    if isinstance(item, (bool, np.bool_)):
        return "true" if item else "false"
    if isinstance(item, (float, np.floating)):
        return f"{float(item):f}"
    return str(item)


def _string_tensor_value(tbx, strings, shape):
    dims = [tbx.TensorShapeProto.Dim(size=int(d)) for d in shape]
    return tbx.TensorProto(dtype=7, tensor_shape=tbx.TensorShapeProto(dim=dims),  # DT_STRING
                           string_val=strings)


def _text_value(tbx, tag, strings, shape):
    plugin = tbx.SummaryMetadata.PluginData(
        plugin_name="text", content=tbx.TextPluginData(version=0).SerializeToString())
    return tbx.Summary.Value(tag=tag, metadata=tbx.SummaryMetadata(plugin_data=plugin),
                             tensor=_string_tensor_value(tbx, strings, shape))


def _text_impl(run_state, node):
    tbx = _tbx.require()
    tag = summary_tag(node)
    if not node.inputs:  # the text is fixed: serialize it once
        fixed = _serialize(tbx, [_text_value(tbx, tag, list(node.attrs["text"]),
                                             node.attrs["text_shape"])])
        return lambda: fixed
    to_host = run_state.backend.host_value

    def run(value):
        v = to_host(value)
        strings = [x if isinstance(x, bytes) else _as_text(x).encode("utf-8")
                   for x in v.ravel().tolist()]
        return _serialize(tbx, [_text_value(tbx, tag, strings, v.shape)])

    return run


register("TensorSummaryV2", _text_impl, _infer, grad=None, kind="call",
         takes_strings=True)


def _fixed_text(value):
    """``(utf-8 strings, shape)`` of a str, bytes, or nested list / NumPy array of them,
    or None when ``value`` is none of these."""
    if isinstance(value, (str, bytes)):
        value = np.array(value, dtype=object)
    elif isinstance(value, (list, tuple)):
        value = np.array(value, dtype=object)
    elif not (isinstance(value, np.ndarray) and value.dtype.kind in "USO"):
        return None
    strings = []
    for item in value.ravel().tolist():
        if isinstance(item, str):
            strings.append(item.encode("utf-8"))
        elif isinstance(item, bytes):
            strings.append(item)
        else:
            return None
    return tuple(strings), tuple(int(d) for d in value.shape)


def text(name, tensor, collections=None):
    """A summary of text, shown in TensorBoard's text tab (TF1 ``tf.summary.text``);
    markdown is rendered, and a list (or a list of lists) is shown as a table.

    ``tensor`` is fixed text, a ``str`` (or ``bytes``, utf-8) or a nested list / NumPy
    array of them, written each time the summary runs; or a string tensor (a text
    constant, a string placeholder, a ``py_func`` result), whose bytes are written; or a
    numeric or bool tensor, whose elements are written as TF1's ``tf.as_string`` writes
    them (``3``, ``0.500000``, ``true``), in its shape.
    Tag, result and ``collections`` as for ``scalar``.
    """
    source = user_source_line()
    fixed = None if isinstance(tensor, Tensor) or hasattr(tensor, "_as_graph_tensor") \
        else _fixed_text(tensor)
    if fixed is not None:
        strings, shape = fixed
        return _build("TensorSummaryV2", "text", name, [], None, collections,
                      graph=get_default_graph(), text=strings, text_shape=shape)
    if not (isinstance(tensor, Tensor) or hasattr(tensor, "_as_graph_tensor")):
        raise TypeError(f"{_what('text', name)}: takes a str, a list of str, a NumPy array "
                        f"of str or a tensor; got {type(tensor).__name__}; at {source}")
    t = _value_tensor("text", name, tensor, source)
    return _build("TensorSummaryV2", "text", name, [t], None, collections)


# -- merge ------------------------------------------------------------------------------


def _merge_impl(run_state, node):
    tbx = _tbx.require()

    def run(*serialized):
        merged = tbx.Summary()
        for part in serialized:
            merged.MergeFromString(part)
        repeated = [tag for tag, n in Counter(v.tag for v in merged.value).items() if n > 1]
        if repeated:
            raise InvalidArgumentError(
                f"Duplicate tag {repeated[0]} found in summary inputs of merge "
                f"'{node.name}' (created at {node.source})")
        return merged.SerializeToString()

    return run


register("MergeSummary", _merge_impl, _infer, grad=None, kind="call")


def merge(inputs, collections=None, name=None):
    """One summary holding every value of the summaries ``inputs`` (TF1
    ``tf.summary.merge``); fetched, it is the serialized merged ``Summary``. Two values
    with one tag fail the run with ``InvalidArgumentError``. The merged summary is
    added to ``collections`` (default: none)."""
    source = user_source_line()
    if isinstance(inputs, Tensor) or not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    tensors = []
    for item in inputs:
        item = item._as_graph_tensor() if hasattr(item, "_as_graph_tensor") else item
        if not isinstance(item, Tensor) or item.dtype is not string:
            what = f"'{item.name}' ({item.type})" if isinstance(item, Tensor) else repr(item)
            raise TypeError(f"summary.merge: {what} is not a summary (the result of "
                            f"summary.scalar, histogram, image, text or merge); at {source}")
        tensors.append(item)
    if not tensors:
        raise ValueError(f"summary.merge: no summaries to merge; at {source}")
    _tbx.require()
    node = apply("MergeSummary", tensors, name=name or "Merge/MergeSummary")
    for key in collections or ():
        node.graph.add_to_collection(key, node)
    return node


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None):
    """Merge every summary of the default graph's collection ``key`` (TF1
    ``tf.summary.merge_all``); with ``scope``, only those whose name matches it from
    the start. ``None`` when there is none, as in TF1."""
    summaries = get_default_graph().get_collection(key, scope=scope)
    if not summaries:
        return None
    return merge(summaries, name=name)
