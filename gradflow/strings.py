"""TF1's ``tf.strings`` and the string ops of ``tf`` itself (``tf.string_split``,
``tf.as_string``, ``tf.string_to_number``, ``tf.reduce_join``, ``tf.substr``...).

gradflow's strings are host values, so these ops run on the host (see
``gradflow.prim.strings``), on every backend; their numeric results (lengths, numbers,
hash buckets) then go to the session's backend. Splitting gives a ``SparseTensor`` as
TF1's does (``RaggedTensor`` results are not supported). Patterns are RE2's as TF's,
run by Python's ``re``, which reads the common RE2 syntax the same way.

>>> words = gf.string_split(lines)              # SparseTensor of the words of each line
>>> ids = gf.strings.to_hash_bucket_fast(words.values, 1000)
"""

from __future__ import annotations

import re

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import static_value
from gradflow.prim import strings as _prim
from gradflow.prim import strings_hash as _hash  # noqa: F401 - registers its host ops
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["as_string", "join", "length", "lower", "reduce_join", "regex_full_match",
           "regex_replace", "split", "string_split", "string_to_hash_bucket_fast",
           "string_to_number", "strip", "substr", "to_hash_bucket_fast", "to_number", "upper",
           "fingerprint", "string_strip", "string_to_hash_bucket", "string_to_hash_bucket_strong",
           "to_hash_bucket", "to_hash_bucket_strong", "unsorted_segment_join"]


def _strings(value, what):
    x = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype=dtypes.string)
    if x.dtype is not dtypes.string:
        raise TypeError(f"{what}: '{x.name}' must be a string tensor, got {x.dtype.name}")
    return x


def _shape(x):
    return None if x.shape is None else tuple(x.shape)


def _text_attr(value, what):
    """A string argument that must be known when the graph is built, as bytes."""
    found = static_value(value)
    if found is None or np.asarray(found).ndim:
        raise ValueError(f"{what} must be one string known when the graph is built")
    item = np.asarray(found, dtype=object).item()
    return item.encode() if isinstance(item, str) else bytes(item)


def _sparse_split(x, mode, sep, skip_empty, maxsplit, name):
    rank = None if x.shape is None else len(x.shape) + 1
    node = apply("string_split", [x], name=name or "StringSplit", mode=mode, sep=sep,
                 skip_empty=skip_empty, maxsplit=maxsplit, shape=None, dtype=VARIANT)
    indices = pick(node, 0, (None, rank), dtypes.int64)
    values = pick(node, 1, (None,), dtypes.string)
    dense_shape = pick(node, 2, (rank,), dtypes.int64)
    return SparseTensor(indices, values, dense_shape)


def string_split(source, delimiter=" ", skip_empty=True, sep=None, name=None):
    """The tokens of each string of the vector ``source`` as a ``SparseTensor`` ``[len(source),
    most tokens]`` (TF1 ``tf.string_split``): every byte of ``delimiter`` separates
    tokens (an empty one splits into single bytes); empty tokens are dropped unless
    ``skip_empty`` is false."""
    x = _strings(source, "string_split")
    if x.shape is not None and len(x.shape) != 1:
        raise ValueError(f"string_split: source '{x.name}' must be a vector, got shape "
                         f"{tuple(x.shape)}")
    sep = _text_attr(delimiter if sep is None else sep, "string_split: delimiter")
    return _sparse_split(x, "chars", sep, bool(skip_empty), -1, name)


def split(input=None, sep=None, maxsplit=-1, result_type="SparseTensor", source=None,  # noqa: A002
          name=None):
    """The tokens of each string of ``input`` (any rank) as a ``SparseTensor`` one rank
    higher (TF1 ``tf.strings.split``): ``sep`` None (or empty) splits at runs of white
    space; a ``sep`` splits at each of its occurrences, keeping empty tokens; at most
    ``maxsplit`` splits per string (-1: all)."""
    if result_type != "SparseTensor":
        raise NotImplementedError("strings.split: only result_type='SparseTensor' is "
                                  "supported (gradflow has no RaggedTensor)")
    x = _strings(input if source is None else source, "strings.split")
    sep = b"" if sep is None else _text_attr(sep, "strings.split: sep")
    maxsplit = int(maxsplit)
    return _sparse_split(x, "sep" if sep else "whitespace", sep or None, False,
                         maxsplit, name)


def join(inputs, separator="", name=None):
    """The strings of ``inputs`` (tensors of one shape, or scalars) joined element by
    element with ``separator`` between them (TF1 ``tf.strings.join``, ``tf.string_join``)."""
    xs = [_strings(v, "strings.join") for v in inputs]
    if not xs:
        raise ValueError("strings.join: inputs is empty")
    shapes = {_shape(x) for x in xs if _shape(x) != ()}
    known = {s for s in shapes if s is not None and None not in s}
    if len(known) > 1:
        raise ValueError(f"strings.join: the inputs must have one shape or be scalars, got "
                         f"{sorted(known)}")
    shape = next(iter(shapes)) if len(shapes) == 1 else (next(iter(known)) if known else None)
    return apply("string_join", xs, name=name or "StringJoin",
                 separator=_text_attr(separator, "strings.join: separator"),
                 shape=() if not shapes else shape, dtype=dtypes.string)


def reduce_join(inputs, axis=None, keep_dims=None, separator="", name=None,
                reduction_indices=None, keepdims=None):
    """The strings of ``inputs`` joined with ``separator`` along ``axis`` (all axes when
    None), as TF1's ``tf.reduce_join``: along several axes, the first one named varies
    fastest; ``keepdims`` keeps the joined axes with size 1."""
    x = _strings(inputs, "reduce_join")
    if x.shape is None:
        raise ValueError(f"reduce_join: the rank of '{x.name}' must be known")
    rank = len(x.shape)
    axis = axis if reduction_indices is None else reduction_indices
    if axis is None:
        axes = list(range(rank - 1, -1, -1))
    else:
        axes = [int(a) for a in np.atleast_1d(static_value(axis))]
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"reduce_join: axis {a} is out of range for '{x.name}' of rank "
                             f"{rank}")
    axes = [a % rank for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"reduce_join: axis {axes} names an axis twice")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape) if keep or a not in axes)
    return apply("reduce_join", [x], name=name or "ReduceJoin", axes=tuple(axes),
                 keepdims=keep, separator=_text_attr(separator, "reduce_join: separator"),
                 shape=shape, dtype=dtypes.string)


def length(input, name=None, unit="BYTE"):  # noqa: A002
    """The int32 length of each string of ``input``: in bytes, or in UTF-8 characters
    with ``unit="UTF8_CHAR"`` (TF1 ``tf.strings.length``)."""
    x = _strings(input, "strings.length")
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"strings.length: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    return apply("string_length", [x], name=name or "StringLength", unit=unit,
                 shape=_shape(x), dtype=dtypes.int32)


def _transform(input, transform, name, what):  # noqa: A002
    x = _strings(input, what)
    return apply("string_transform", [x], name=name, transform=transform, shape=_shape(x),
                 dtype=dtypes.string)


def strip(input, name=None):  # noqa: A002
    """Each string of ``input`` without the ASCII white space at its ends
    (TF1 ``tf.strings.strip``)."""
    return _transform(input, "strip", name or "StringStrip", "strings.strip")


def _case(input, encoding, case, name):  # noqa: A002
    if encoding not in ("", "utf-8", "utf8", "UTF-8"):
        raise ValueError(f"strings.{case}: encoding must be '' (ASCII) or 'utf-8', got "
                         f"{encoding!r}")
    transform = case + ("_utf8" if encoding else "")
    return _transform(input, transform, name or f"String{case.capitalize()}",
                      f"strings.{case}")


def lower(input, encoding="", name=None):  # noqa: A002
    """Each string of ``input`` in lower case: ASCII letters only, or every letter with
    ``encoding="utf-8"`` (TF1 ``tf.strings.lower``)."""
    return _case(input, encoding, "lower", name)


def upper(input, encoding="", name=None):  # noqa: A002
    """Each string of ``input`` in upper case (see ``lower``)."""
    return _case(input, encoding, "upper", name)


def substr(input, pos, len, name=None, unit="BYTE"):  # noqa: A002
    """The part of each string of ``input`` that starts at ``pos`` (from the end when
    negative) and has at most ``len`` bytes, or UTF-8 characters with
    ``unit="UTF8_CHAR"`` (TF1 ``tf.substr``, ``tf.strings.substr``). ``pos`` and ``len``
    are integers or int tensors of one shape that broadcasts against ``input``; a
    ``pos`` past the end of its string is an ``InvalidArgumentError`` when run."""
    x = _strings(input, "substr")
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"substr: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    pos = convert_to_tensor(pos, dtype=dtypes.int32)
    size = convert_to_tensor(len, dtype=dtypes.int32)
    for what, t in (("pos", pos), ("len", size)):
        if not t.dtype.is_integer:
            raise TypeError(f"substr: {what} '{t.name}' must be an integer tensor")
    if _shape(pos) is not None and _shape(size) is not None and _shape(pos) != _shape(size):
        raise ValueError(f"substr: pos '{pos.name}' and len '{size.name}' must have one shape, "
                         f"got {_shape(pos)} and {_shape(size)}")
    shape = None
    if x.shape is not None and pos.shape is not None:
        shape = np.broadcast_shapes(*(tuple(1 if d is None else d for d in s)
                                      for s in (x.shape, pos.shape)))
        if None in x.shape or None in pos.shape:
            shape = None
    return apply("substr", [x, pos, size], name=name or "Substr", unit=unit, shape=shape,
                 dtype=dtypes.string)


def _pattern(pattern, what):
    text = _text_attr(pattern, f"{what}: pattern").decode()
    try:
        return text, re.compile(text).groups
    except re.error as err:
        raise ValueError(f"{what}: pattern {text!r} is not a regular expression: {err}") \
            from None


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string of ``input`` with the matches of ``pattern`` replaced by ``rewrite``
    (``\\1`` a group, ``\\0`` the whole match), every match or the first one only (TF1
    ``tf.regex_replace``, ``tf.strings.regex_replace``)."""
    x = _strings(input, "regex_replace")
    text, groups = _pattern(pattern, "regex_replace")
    rewrite = _text_attr(rewrite, "regex_replace: rewrite").decode()
    parts = tuple(_prim.rewrite_parts(rewrite, groups, "regex_replace"))
    return apply("regex_replace", [x], name=name or "RegexReplace", pattern=text, parts=parts,
                 replace_global=bool(replace_global), shape=_shape(x), dtype=dtypes.string)


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string of ``input`` matches ``pattern`` (TF1
    ``tf.strings.regex_full_match``), a bool tensor."""
    x = _strings(input, "regex_full_match")
    text, _ = _pattern(pattern, "regex_full_match")
    return apply("regex_full_match", [x], name=name or "RegexFullMatch", pattern=text,
                 shape=_shape(x), dtype=dtypes.bool_)


_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def string_to_number(string_tensor, out_type=dtypes.float32, name=None):
    """The number each string of ``string_tensor`` spells, as ``out_type`` (float32,
    float64, int32 or int64; TF1 ``tf.string_to_number``). White space around it is
    allowed; anything else that is not a number is an ``InvalidArgumentError`` when run."""
    x = _strings(string_tensor, "string_to_number")
    out_type = dtypes.as_dtype(out_type)
    if out_type not in _NUMBER_TYPES:
        raise TypeError(f"string_to_number: out_type must be float32, float64, int32 or "
                        f"int64, got {out_type.name}")
    return apply("string_to_number", [x], name=name or "StringToNumber",
                 out_type=out_type.name, shape=_shape(x), dtype=out_type)


def to_number(input, out_type=dtypes.float32, name=None):  # noqa: A002
    """``string_to_number`` under its ``tf.strings`` name."""
    return string_to_number(input, out_type, name)


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="",  # noqa: A002
              name=None):
    """Each number (or bool) of ``input`` as text (TF1 ``tf.as_string``): floats as
    printf's ``%f`` (``%e`` with ``scientific``, ``%g`` with ``shortest``) with
    ``precision`` digits, integers as ``%d``, bools as ``true``/``false``; ``width``
    pads on the left with spaces, or zeros with ``fill="0"``."""
    x = convert_to_tensor(input)
    if x.dtype is dtypes.string:
        raise TypeError(f"as_string: '{x.name}' is already a string tensor")
    if fill not in ("", " ", "0"):
        raise ValueError(f"as_string: fill must be '', ' ' or '0', got {fill!r}")
    if scientific and shortest:
        raise ValueError("as_string: scientific and shortest cannot both be true")
    if not x.dtype.is_floating and (precision > -1 or scientific or shortest):
        raise ValueError(f"as_string: precision, scientific and shortest are for floats; "
                         f"'{x.name}' is {x.dtype.name}")
    form = _prim.number_format(x.dtype, int(precision), scientific, shortest, int(width),
                                  fill)
    return apply("as_string", [x], name=name or "AsString", format=form, shape=_shape(x),
                 dtype=dtypes.string)


def string_to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Each string of ``input`` hashed into one of ``num_buckets`` buckets, an int64 (TF1
    ``tf.string_to_hash_bucket_fast``): FarmHash's Fingerprint64 modulo
    ``num_buckets``, the same buckets as TensorFlow's."""
    x = _strings(input, "string_to_hash_bucket_fast")
    if int(num_buckets) < 1:
        raise ValueError(f"string_to_hash_bucket_fast: num_buckets must be at least 1, got "
                         f"{num_buckets}")
    return apply("string_to_hash_bucket_fast", [x], name=name or "StringToHashBucketFast",
                 num_buckets=int(num_buckets), shape=_shape(x), dtype=dtypes.int64)


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """``string_to_hash_bucket_fast`` under its ``tf.strings`` name."""
    return string_to_hash_bucket_fast(input, num_buckets, name)



string_strip = strip


def _buckets(num_buckets, what):
    if num_buckets is None or int(num_buckets) < 1:
        raise ValueError(f"{what}: num_buckets must be at least 1, got {num_buckets}")
    return int(num_buckets)


def string_to_hash_bucket(string_tensor=None, num_buckets=None, name=None, input=None):  # noqa: A002
    """Each string hashed into one of ``num_buckets`` buckets, an int64 (TF1
    ``tf.string_to_hash_bucket``, ``tf.strings.to_hash_bucket``): TensorFlow's own
    ``Hash64`` (MurmurHash64A with TF's seed) modulo ``num_buckets``, the same buckets as
    TensorFlow's."""
    x = _strings(input if string_tensor is None else string_tensor, "string_to_hash_bucket")
    buckets = _buckets(num_buckets, "string_to_hash_bucket")
    return apply("string_to_hash_bucket", [x], name=name or "StringToHashBucket",
                 num_buckets=buckets, shape=_shape(x), dtype=dtypes.int64)


to_hash_bucket = string_to_hash_bucket


def string_to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """Each string hashed into one of ``num_buckets`` buckets by SipHash-2-4 under
    ``key`` (two 64-bit ints, read as unsigned), an int64 (TF1 ``tf.string_to_hash_bucket_strong``,
    ``tf.strings.to_hash_bucket_strong``): the same buckets as TensorFlow's."""
    x = _strings(input, "string_to_hash_bucket_strong")
    buckets = _buckets(num_buckets, "string_to_hash_bucket_strong")
    key = [int(k) for k in key]
    if len(key) != 2 or not all(-(1 << 63) <= k < 1 << 63 for k in key):
        raise ValueError(f"string_to_hash_bucket_strong: key must be two 64-bit ints, got "
                         f"{key}")
    return apply("string_to_hash_bucket_strong", [x], name=name or "StringToHashBucketStrong",
                 num_buckets=buckets, key=tuple(k & ((1 << 64) - 1) for k in key),
                 shape=_shape(x), dtype=dtypes.int64)


to_hash_bucket_strong = string_to_hash_bucket_strong


def fingerprint(data, method="farmhash64", name=None):
    """The 8-byte fingerprint (FarmHash's Fingerprint64, little endian) of each row of
    ``data`` along its first axis, ``[rows, 8]`` uint8 (TF1 ``tf.fingerprint``): of the
    row's bytes for numbers, of its strings' fingerprints for strings. The values are
    TensorFlow's."""
    if method != "farmhash64":
        raise ValueError(f"fingerprint: method must be 'farmhash64', got {method!r}")
    x = data if isinstance(data, Tensor) else convert_to_tensor(data)
    if x.shape is not None and len(x.shape) < 1:
        raise ValueError(f"fingerprint: '{x.name}' must have rank 1 or more, got a scalar")
    rows = None if x.shape is None else x.shape[0]
    return apply("fingerprint", [x], name=name or "Fingerprint", shape=(rows, 8),
                 dtype=dtypes.uint8)


def unsorted_segment_join(inputs, segment_ids, num_segments, separator="", name=None):
    """The strings of ``inputs`` joined with ``separator`` per segment: output row ``s``
    joins, in order, the rows of ``inputs`` whose ``segment_ids`` is ``s``
    (``segment_ids`` a prefix of ``inputs``' shape); segments without rows are empty
    strings (TF1 ``tf.strings.unsorted_segment_join``)."""
    x = _strings(inputs, "unsorted_segment_join")
    ids = convert_to_tensor(segment_ids)
    if not ids.dtype.is_integer:
        raise TypeError(f"unsorted_segment_join: segment_ids '{ids.name}' must be integers")
    count = convert_to_tensor(num_segments, dtype=dtypes.int32)
    known = static_value(count)
    shape = None
    if x.shape is not None and ids.shape is not None and known is not None:
        shape = (int(known),) + tuple(x.shape[len(ids.shape):])
    sep = _text_attr(separator, "unsorted_segment_join: separator")
    return apply("unsorted_segment_join", [x, ids, count], name=name or "UnsortedSegmentJoin",
                 separator=sep, shape=shape, dtype=dtypes.string)
