"""``tf.parse_single_sequence_example`` and ``tf.io.parse_sequence_example``: serialized
``tf.train.SequenceExample`` records to tensors, on the host.

``context_features`` are read as ``parse_single_example`` reads features
(``FixedLenFeature``, ``VarLenFeature``). Each ``sequence_features`` entry is a
``FixedLenSequenceFeature(shape, dtype, allow_missing)``, a dense ``[steps, *shape]``
tensor (a record without it fails naming it, or has no steps with ``allow_missing``), or a
``VarLenFeature``, a ``SparseTensor`` of ``[steps, values]``. For a batch the records'
steps are padded with zeros to the longest, and a third dict gives each dense sequence
feature's lengths, as TF1.

>>> context, sequence = gf.parse_single_sequence_example(
...     record, context_features={"length": gf.FixedLenFeature([], gf.int64)},
...     sequence_features={"tokens": gf.FixedLenSequenceFeature([], gf.int64)})
"""

from __future__ import annotations

import collections

from gradflow import dtypes
from gradflow.ops.parsing_ops import VarLenFeature, _specs
from gradflow.prim import sequence_parsing as _sequence_parsing  # noqa: F401 - registers it
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.parsing import LISTS
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["FixedLenSequenceFeature", "parse_sequence_example",
           "parse_single_sequence_example"]

FixedLenSequenceFeature = collections.namedtuple(
    "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])
FixedLenSequenceFeature.__new__.__defaults__ = (False, None)
FixedLenSequenceFeature.__doc__ = (
    "A sequence feature of ``shape`` per step and ``dtype`` (float32, int64 or string); "
    "with ``allow_missing``, a record may lack it (no steps). ``default_value`` must be "
    "None (TF1 pads with zeros).")


def _sequence_specs(features, what):
    """``(key, dtype, shape or None, allow_missing)`` per sequence feature, in key order."""
    specs = []
    for key in sorted(features or {}):
        spec = features[key]
        if not isinstance(spec, (FixedLenSequenceFeature, VarLenFeature)):
            raise TypeError(f"{what}: sequence feature '{key}' must be a "
                            f"FixedLenSequenceFeature or a VarLenFeature, got {spec!r}")
        dtype = dtypes.as_dtype(spec.dtype)
        if dtype not in LISTS:
            raise TypeError(f"{what}: sequence feature '{key}' must be float32, int64 or "
                            f"string, got {dtype.name}")
        if isinstance(spec, VarLenFeature):
            specs.append((key, dtype, None, False))
            continue
        if spec.default_value is not None:
            raise ValueError(f"{what}: the default_value of sequence feature '{key}' must "
                             "be None")
        specs.append((key, dtype, tuple(int(d) for d in spec.shape), bool(spec.allow_missing)))
    return specs


def _sparse(node, k, rank, dtype):
    return SparseTensor(pick(node, k, (None, rank), dtypes.int64),
                        pick(node, k + 1, (None,), dtype), pick(node, k + 2, (rank,),
                                                                  dtypes.int64))


def _outputs(node, context, sequence, batch):
    single = not batch
    out_context, out_sequence, lengths, k = {}, {}, {}, 0
    for key, dtype, shape, _ in context:
        if shape is None:
            out_context[key] = _sparse(node, k, len(batch) + 1, dtype)
            k += 3
        else:
            out_context[key] = pick(node, k, batch + shape, dtype)
            k += 1
    for key, dtype, shape, _ in sequence:
        if shape is None:
            out_sequence[key] = _sparse(node, k, len(batch) + 2, dtype)
            k += 3
        else:
            out_sequence[key] = pick(node, k, batch + (None,) + shape, dtype)
            k += 1
    if not single:
        for key, _, shape, _ in sequence:
            if shape is not None:
                lengths[key] = pick(node, k, batch, dtypes.int64)
                k += 1
    return out_context, out_sequence, lengths


def _parse(serialized, context_features, sequence_features, name, single):
    what = "parse_single_sequence_example" if single else "parse_sequence_example"
    x = convert_to_tensor(serialized, dtype=dtypes.string)
    if x.dtype is not dtypes.string:
        raise TypeError(f"{what}: '{x.name}' must be a string tensor (serialized records)")
    rank = 0 if single else 1
    if x.shape is not None and len(x.shape) != rank:
        raise ValueError(f"{what}: '{x.name}' must be " + ("one string" if single else
                         "a vector of strings") + f", got shape {list(x.shape)}")
    context = _specs(context_features or {}, what)
    sequence = _sequence_specs(sequence_features, what)
    if not context and not sequence:
        raise ValueError(f"{what}: give context_features or sequence_features")
    node = apply("parse_sequence_example", [x], name=name or "ParseSequenceExample",
                 context=tuple(context), sequence=tuple(sequence), single=single,
                 shape=None, dtype=VARIANT)
    batch = () if single else (None if x.shape is None else x.shape[0],)
    return _outputs(node, context, sequence, batch)


def parse_single_sequence_example(serialized, context_features=None, sequence_features=None,
                                  example_name=None, name=None):
    """``(context, sequence)`` dicts of tensors of one serialized ``SequenceExample``
    (see the module)."""
    context, sequence, _ = _parse(serialized, context_features, sequence_features, name, True)
    return context, sequence


def parse_sequence_example(serialized, context_features=None, sequence_features=None,
                           example_names=None, name=None):
    """``(context, sequence, lengths)`` dicts of tensors of a vector of serialized
    ``SequenceExample`` records, the batch first, the steps padded (see the module)."""
    return _parse(serialized, context_features, sequence_features, name, False)
