"""``tf.parse_single_example`` and ``tf.parse_example``: ``tf.train.Example`` records
(serialized, as strings) to tensors, one per feature asked for, on the host.

Each ``FixedLenFeature(shape, dtype, default_value)`` gives a tensor of ``shape``
(with a leading batch axis for ``parse_example``) of ``float32``, ``int64`` or
``string``. A record without the feature takes ``default_value``, or fails naming it;
a feature of another kind, or with another number of values, fails naming it. Each
``VarLenFeature(dtype)`` gives a ``SparseTensor`` of the values each record has (none
where it lacks the feature): ``[n]`` for ``parse_single_example``, ``[batch, most
values]`` for ``parse_example``, as TF1.

>>> features = gf.parse_single_example(record, {
...     "image_raw": gf.FixedLenFeature([], gf.string),
...     "label": gf.FixedLenFeature([], gf.int64)})
"""

from __future__ import annotations

import collections

import numpy as np

from gradflow import dtypes
from gradflow.ops.sparse_shape_ops import sparse_merge
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.parsing import LISTS  # importing it registers parse_example
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor

__all__ = ["FixedLenFeature", "SparseFeature", "VarLenFeature", "parse_example",
           "parse_single_example"]

FixedLenFeature = collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])
FixedLenFeature.__new__.__defaults__ = (None,)
FixedLenFeature.__doc__ = ("A feature of a fixed ``shape`` and ``dtype`` (float32, int64 or "
                           "string), ``default_value`` where a record lacks it.")

VarLenFeature = collections.namedtuple("VarLenFeature", ["dtype"])
VarLenFeature.__doc__ = "A feature of any length, parsed into a ``SparseTensor``."

SparseFeature = collections.namedtuple(
    "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])
SparseFeature.__new__.__defaults__ = (False,)
SparseFeature.__doc__ = (
    "A ``SparseTensor`` of dense shape ``size`` made of two features of a record: the "
    "int64 indices ``index_key`` (a list of keys and sizes for several axes) and the "
    "values ``value_key``; entries sorted unless ``already_sorted``, as TF1's.")


def _sparse_features(features, what):
    """``(features with each SparseFeature's parts as VarLenFeatures, {key: SparseFeature},
    the keys of those parts not asked for themselves)``."""
    plain = {k: v for k, v in features.items() if not isinstance(v, SparseFeature)}
    sparse = {k: v for k, v in features.items() if isinstance(v, SparseFeature)}
    helpers = set()
    for key, spec in sparse.items():
        index_keys = spec.index_key if isinstance(spec.index_key, (list, tuple)) \
            else [spec.index_key]
        parts = [(k, VarLenFeature(dtypes.int64)) for k in index_keys]
        for part, want in parts + [(spec.value_key, VarLenFeature(spec.dtype))]:
            have = plain.get(part)
            if have is None:
                plain[part] = want
                helpers.add(part)
            elif have != want:
                raise ValueError(f"{what}: feature '{part}' of SparseFeature '{key}' is also "
                                 f"asked for as {have!r}")
    return plain, sparse, helpers - set(features)


def _merge_sparse(out, sparse):
    """Each SparseFeature's ``SparseTensor``, made of its parts parsed in ``out``."""
    for key, spec in sparse.items():
        many = isinstance(spec.index_key, (list, tuple))
        ids = [out[k] for k in spec.index_key] if many else out[spec.index_key]
        sizes = list(spec.size) if isinstance(spec.size, (list, tuple)) else spec.size
        out[key] = sparse_merge(ids, out[spec.value_key], sizes,
                                already_sorted=spec.already_sorted)



def _specs(features, what):
    """``(key, dtype, shape, default)`` per feature, in key order; ``shape`` is None for a
    ``VarLenFeature``."""
    specs = []
    for key in sorted(features):
        spec = features[key]
        if not isinstance(spec, (FixedLenFeature, VarLenFeature)):
            raise TypeError(f"{what}: feature '{key}' must be a FixedLenFeature or a "
                            f"VarLenFeature, got {spec!r}")
        dtype = dtypes.as_dtype(spec.dtype)
        if dtype not in LISTS:
            raise TypeError(f"{what}: feature '{key}' must be float32, int64 or string, got "
                            f"{dtype.name}")
        if isinstance(spec, VarLenFeature):
            specs.append((key, dtype, None, None))
            continue
        shape = tuple(int(d) for d in spec.shape)
        default = None  # kept as a flat tuple of values: node attributes stay hashable
        if spec.default_value is not None:
            value = dtypes.bytes_array(spec.default_value) if dtype is dtypes.string \
                else np.asarray(spec.default_value, dtype=dtype.as_numpy_dtype)
            try:
                default = tuple(np.broadcast_to(value, shape).ravel().tolist())
            except ValueError:
                raise ValueError(f"{what}: the default of feature '{key}' has shape "
                                 f"{value.shape}, not {list(shape)}") from None
        specs.append((key, dtype, shape, default))
    return specs


def _parse(serialized, features, name, single):
    what = "parse_single_example" if single else "parse_example"
    x = convert_to_tensor(serialized, dtype=dtypes.string)
    if x.dtype is not dtypes.string:
        raise TypeError(f"{what}: '{x.name}' must be a string tensor (serialized records)")
    if single and x.shape is not None and len(x.shape) != 0:
        raise ValueError(f"{what}: '{x.name}' must be one string, got shape {x.shape}")
    if not single and x.shape is not None and len(x.shape) != 1:
        raise ValueError(f"{what}: '{x.name}' must be a vector of strings, got shape "
                         f"{x.shape}")
    features, sparse, helpers = _sparse_features(features, what)
    specs = _specs(features, what)
    node = apply("parse_example", [x], name=name or "ParseExample", specs=tuple(specs),
                 single=single, shape=None, dtype=VARIANT)
    batch = () if single else (None if x.shape is None else x.shape[0],)
    out, k = {}, 0
    for key, dtype, shape, _ in specs:
        if shape is None:
            rank = len(batch) + 1
            out[key] = SparseTensor(pick(node, k, (None, rank), dtypes.int64),
                                    pick(node, k + 1, (None,), dtype),
                                    pick(node, k + 2, (rank,), dtypes.int64))
            k += 3
        else:
            out[key] = pick(node, k, batch + shape, dtype)
            k += 1
    _merge_sparse(out, sparse)
    return {k: v for k, v in out.items() if k not in helpers}


def parse_single_example(serialized, features, name=None, example_names=None):
    """``{name: tensor}`` of one serialized ``tf.train.Example`` (see the module)."""
    return _parse(serialized, features, name, True)


def parse_example(serialized, features, name=None, example_names=None):
    """``{name: tensor}`` of a vector of serialized ``tf.train.Example`` records, each
    tensor with the batch as its first axis (see the module)."""
    return _parse(serialized, features, name, False)
