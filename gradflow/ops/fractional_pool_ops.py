"""TF1's ``tf.nn.fractional_max_pool`` and ``tf.nn.fractional_avg_pool`` over the
primitives of ``gradflow.prim.fractional_pool``: the pooling regions' boundaries are a
random node drawn on the host (seeded like every random op: the same ones on every
backend), the pooling and its gradient are compute ops over them.
"""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.ops import state_ops
from gradflow.prim import fractional_pool as _fp
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["fractional_avg_pool", "fractional_max_pool"]

state_ops.HOST_DRAWS["fractional_pool_sequences"] = _fp.draw_sequences


def _fractional(kind, value, pooling_ratio, pseudo_random, overlapping, deterministic, seed,
                seed2, name):
    what = f"fractional_{kind}_pool"
    x = convert_to_tensor(value)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: value '{x.name}' must be floating, got {x.dtype.name}")
    if x.shape is None or len(x.shape) != 4 or None in x.shape[1:3]:
        raise ValueError(f"{what}: value '{x.name}' must be [batch, height, width, channels] "
                         f"with height and width known when built, got shape {x.shape}")
    ratio = [float(r) for r in pooling_ratio]
    if len(ratio) != 4 or ratio[0] != 1.0 or ratio[3] != 1.0 or min(ratio[1:3]) < 1.0:
        raise ValueError(f"{what}: pooling_ratio must be [1.0, rows >= 1, cols >= 1, 1.0] "
                         f"(pooling over batch and channels is not supported), got "
                         f"{list(pooling_ratio)}")
    size = (int(x.shape[1]), int(x.shape[2]))
    out = tuple(int(math.floor(n / r)) for n, r in zip(size, ratio[1:3]))
    if min(out) < 1:
        raise ValueError(f"{what}: pooling_ratio {ratio} leaves no output of the input size "
                         f"{size}")
    graph = x.graph
    seeded = bool(seed) or bool(seed2)
    if seeded and not deterministic:
        raise ValueError(f"{what}: seed and seed2 must both be 0 unless deterministic=True "
                         f"(as TF1 requires)")
    op_seed = (int(seed) << 32) + int(seed2) if seeded else (
        None if graph.seed is None else len(graph.nodes))
    entropy = (int(seed), int(seed2)) if seeded else \
        (0 if graph.seed is None else int(graph.seed), len(graph.nodes))
    bounds = apply("fractional_pool_sequences", [], name=f"{what}_sequences", graph=graph,
                   shape=(out[0] + out[1] + 2,), dtype=dtypes.int64,
                   dist="fractional_pool_sequences", graph_seed=graph.seed if not seeded
                   else int(seed), op_seed=op_seed, in_size=size, out_size=out,
                   pseudo_random=bool(pseudo_random), deterministic=bool(deterministic),
                   entropy=entropy)
    rows, cols = bounds[:out[0] + 1], bounds[out[0] + 1:]
    pooled = apply("fractional_pool", [x, rows, cols], name=name or what.title().replace(
        "_", ""), kind=kind, overlapping=bool(overlapping))
    return pooled, rows, cols


def fractional_max_pool(value, pooling_ratio, pseudo_random=False, overlapping=False,
                        deterministic=False, seed=0, seed2=0, name=None):
    """Max pooling over random regions of mean size ``pooling_ratio`` (TF1
    ``tf.nn.fractional_max_pool``, Graham's fractional max-pooling).

    ``value``: ``[batch, height, width, channels]`` with height and width known;
    ``pooling_ratio``: ``[1.0, rows, cols, 1.0]``, each at least 1: the output is
    ``floor(size / ratio)``. The region sizes are ``floor`` or ``ceil`` of the ratio in
    random order, or TF's pseudo-random sequence with ``pseudo_random``;
    ``overlapping`` also pools each region's boundary on its far side. New regions every
    run unless ``deterministic`` (the same ones every run, those of ``seed``/``seed2`` if
    given, which TF1 allows only then); the graph seed makes them reproducible, and the
    same on every backend (not TensorFlow's numbers). Returns
    ``(output, row_pooling_sequence, col_pooling_sequence)``, the sequences int64.
    """
    return _fractional("max", value, pooling_ratio, pseudo_random, overlapping,
                       deterministic, seed, seed2, name)


def fractional_avg_pool(value, pooling_ratio, pseudo_random=False, overlapping=False,
                        deterministic=False, seed=0, seed2=0, name=None):
    """Average pooling over random regions (TF1 ``tf.nn.fractional_avg_pool``); see
    ``fractional_max_pool``."""
    return _fractional("avg", value, pooling_ratio, pseudo_random, overlapping,
                       deterministic, seed, seed2, name)
