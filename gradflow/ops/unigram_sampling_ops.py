"""TF1's ``tf.nn.fixed_unigram_candidate_sampler`` (also ``tf.random.``): candidates
drawn from a fixed unigram distribution given as counts (``unigrams``) or read from a
vocabulary file, each count raised to ``distortion``.

The draw is a ``candidate_sampler`` node (gradflow/prim/sampling.py) of ``dist``
``"fixed_unigram"``, drawn on the host from the op's seeded generator like every random
op; its value is the sampled classes then the number of draws, and the expected counts
are TF1's formulas over the class probabilities (``candidate_sampling_ops``).
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.ops import state_ops
from gradflow.ops.candidate_sampling_ops import _expected_count
from gradflow.ops.index_ops import gather
from gradflow.ops.math_ops import cast, less, maximum, minimum, where, zeros_like
from gradflow.prim import learned_unigram as _learned  # noqa: F401 - registers its draw
from gradflow.prim import sampling as _sampling  # noqa: F401 - registers candidate_sampler
from gradflow.prim.registry import apply, constant, convert_to_tensor

__all__ = ["fixed_unigram_candidate_sampler", "learned_unigram_candidate_sampler"]


def _draw_unigram(rng, attrs):
    """The value of a fixed-unigram ``candidate_sampler``: int64 ``[num_sampled + 1]``."""
    p = np.asarray(attrs["probs"], np.float64)
    num_sampled = attrs["num_sampled"]
    if not attrs["unique"]:
        classes = rng.choice(len(p), size=num_sampled, p=p).astype(np.int64)
        return np.concatenate([classes, np.array([num_sampled], np.int64)])
    # without replacement: draws until num_sampled distinct classes came up, each kept at
    # its first appearance; the tries counted up to the last one needed (TF1's loop)
    draws = np.empty(0, np.int64)
    chunk = max(2 * num_sampled, 64)
    while True:
        draws = np.concatenate([draws, rng.choice(len(p), size=chunk, p=p).astype(np.int64)])
        _, first = np.unique(draws, return_index=True)
        if len(first) >= num_sampled:
            first = np.sort(first)[:num_sampled]
            return np.concatenate([draws[first], np.array([int(first[-1]) + 1], np.int64)])
        chunk *= 2


state_ops.HOST_DRAWS["fixed_unigram"] = _draw_unigram


def _read_counts(vocab_file):
    """The last comma-separated field of each line of ``vocab_file``, as a count."""
    counts = []
    with open(vocab_file, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                counts.append(float(line.rstrip("\n").split(",")[-1]))
            except ValueError:
                raise ValueError(f"fixed_unigram_candidate_sampler: line {number} of "
                                 f"{vocab_file!r} does not end with a count: "
                                 f"{line.strip()!r}") from None
    return counts


def _weights(vocab_file, unigrams, distortion, num_reserved_ids, num_shards, shard):
    """The unnormalized weights of the shard's classes, in order (TF1's FixedUnigram)."""
    what = "fixed_unigram_candidate_sampler"
    if bool(vocab_file) == bool(len(unigrams)):
        raise ValueError(f"{what}: give exactly one of vocab_file and unigrams")
    counts = _read_counts(vocab_file) if vocab_file else [float(u) for u in unigrams]
    if any(c < 0 for c in counts):
        raise ValueError(f"{what}: unigram counts must not be negative")
    if not 0 <= shard < num_shards:
        raise ValueError(f"{what}: need 0 <= shard < num_shards, got shard={shard}, "
                         f"num_shards={num_shards}")
    weights = [0.0] * int(num_reserved_ids) + [c ** float(distortion) for c in counts]
    return np.array([w for i, w in enumerate(weights) if i % num_shards == shard], np.float64)


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max,
                                    vocab_file="", distortion=1.0, num_reserved_ids=0,
                                    num_shards=1, shard=0, unigrams=(), seed=None,
                                    name=None):
    """Classes drawn from a fixed unigram distribution (TF1
    ``tf.nn.fixed_unigram_candidate_sampler``): ``P(k)`` proportional to ``count_k **
    distortion``, the counts given as ``unigrams`` or as the last comma-separated field
    of each line of ``vocab_file``, after ``num_reserved_ids`` classes of weight 0.
    With ``num_shards`` > 1, only the classes ``k % num_shards == shard`` are kept, and
    the sampled values are their positions among those, as in TF1.

    Returns ``(sampled_candidates, true_expected_count, sampled_expected_count)``, as
    ``log_uniform_candidate_sampler``. New classes every run; ``seed`` and
    ``gf.set_random_seed`` make them reproducible, the same on every backend (not
    TensorFlow's numbers).
    """
    what = "fixed_unigram_candidate_sampler"
    num_true, num_sampled, range_max = int(num_true), int(num_sampled), int(range_max)
    if num_sampled < 1 or range_max < 1 or num_true < 1:
        raise ValueError(f"{what}: num_true, num_sampled and range_max must be positive, "
                         f"got {num_true}, {num_sampled}, {range_max}")
    weights = _weights(vocab_file, list(unigrams), distortion, num_reserved_ids,
                       int(num_shards), int(shard))
    if len(weights) != range_max:
        raise ValueError(f"{what}: range_max={range_max} but there are {len(weights)} "
                         f"classes (num_reserved_ids and the unigrams, in this shard)")
    if weights.sum() <= 0:
        raise ValueError(f"{what}: the unigram weights sum to 0")
    probs = weights / weights.sum()
    if unique and num_sampled > int(np.count_nonzero(probs)):
        raise ValueError(f"{what}: cannot draw {num_sampled} distinct classes (unique=True) "
                         f"from {int(np.count_nonzero(probs))} of non-zero weight")
    true_classes = convert_to_tensor(true_classes)
    if not true_classes.dtype.is_integer:
        raise TypeError(f"{what}: true_classes '{true_classes.name}' must be int64, got "
                        f"{true_classes.dtype.name}")
    shape = true_classes.shape
    if shape is not None and (len(shape) != 2 or shape[1] not in (None, num_true)):
        raise ValueError(f"{what}: true_classes '{true_classes.name}' must have shape "
                         f"[batch_size, num_true={num_true}], got {tuple(shape)}")
    graph = true_classes.graph
    op_seed = None if seed is None else int(seed)
    if op_seed is None and graph.seed is not None:
        op_seed = len(graph.nodes)  # deterministic per position in the graph
    packed = apply("candidate_sampler", [], name=name or what, graph=graph,
                   shape=(num_sampled + 1,), dtype=dtypes.int64, dist="fixed_unigram",
                   graph_seed=graph.seed, op_seed=op_seed, probs=tuple(probs.tolist()),
                   num_sampled=num_sampled, unique=bool(unique))
    sampled, num_tries = packed[:num_sampled], packed[num_sampled]
    table = constant(probs, dtype=dtypes.float64)

    def probability(classes):
        k = cast(classes, dtypes.int64)
        inside = less(k, len(probs))
        p = gather(table, minimum(maximum(k, 0), len(probs) - 1))
        return where(inside, p, zeros_like(p))  # a class outside the shard: 0

    return (sampled, _expected_count(probability(true_classes), num_tries, num_sampled),
            _expected_count(probability(sampled), num_tries, num_sampled))


def _checked_true(what, true_classes, num_true):
    true_classes = convert_to_tensor(true_classes)
    if not true_classes.dtype.is_integer:
        raise TypeError(f"{what}: true_classes '{true_classes.name}' must be int64, got "
                        f"{true_classes.dtype.name}")
    shape = true_classes.shape
    if shape is not None and (len(shape) != 2 or shape[1] not in (None, num_true)):
        raise ValueError(f"{what}: true_classes '{true_classes.name}' must have shape "
                         f"[batch_size, num_true={num_true}], got {tuple(shape)}")
    return true_classes


def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique,
                                      range_max, seed=None, name=None):
    """Classes drawn from a unigram distribution learnt from the true classes seen so far
    (TF1 ``tf.nn.learned_unigram_candidate_sampler``): each class starts with a count of
    1, a run draws from ``count / sum(count)`` and then adds 1 for each of its true
    classes; the counts live in the Session (a new Session starts again).

    Returns ``(sampled_candidates, true_expected_count, sampled_expected_count)``, as
    ``log_uniform_candidate_sampler``, the counts from the probabilities of the draw.
    ``seed`` and ``gf.set_random_seed`` make the classes reproducible, the same on every
    backend (not TensorFlow's numbers).
    """
    what = "learned_unigram_candidate_sampler"
    num_true, num_sampled, range_max = int(num_true), int(num_sampled), int(range_max)
    if num_sampled < 1 or range_max < 1 or num_true < 1:
        raise ValueError(f"{what}: num_true, num_sampled and range_max must be positive, "
                         f"got {num_true}, {num_sampled}, {range_max}")
    if unique and num_sampled > range_max:
        raise ValueError(f"{what}: cannot draw {num_sampled} distinct classes (unique=True) "
                         f"from range_max={range_max}")
    true_classes = _checked_true(what, true_classes, num_true)
    graph = true_classes.graph
    op_seed = None if seed is None else int(seed)
    if op_seed is None and graph.seed is not None:
        op_seed = len(graph.nodes)
    packed = apply("learned_unigram_sampler", [true_classes], name=name or what, graph=graph,
                   shape=(num_sampled + 1 + range_max,), dtype=dtypes.float64,
                   graph_seed=graph.seed, op_seed=op_seed, range_max=range_max,
                   num_sampled=num_sampled, unique=bool(unique))
    sampled = cast(packed[:num_sampled], dtypes.int64)
    num_tries = cast(packed[num_sampled], dtypes.int64)
    table = packed[num_sampled + 1:]

    def probability(classes):
        return gather(table, cast(classes, dtypes.int64))

    return (sampled, _expected_count(probability(true_classes), num_tries, num_sampled),
            _expected_count(probability(sampled), num_tries, num_sampled))
