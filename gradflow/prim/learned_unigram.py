"""The draw of TF1's ``tf.nn.learned_unigram_candidate_sampler``: classes drawn from a
unigram distribution learnt from the true classes seen so far.

``learned_unigram_sampler`` is a host op of kind ``"call"``: each Session keeps, per
node, a count per class (``run_state.resources``), 1 for every class at first; a run
draws from ``count / sum(count)`` with the node's seeded generator (the same classes on
every backend for a seed), then adds 1 for each true class it was given, as TF1's
sampler learns. Its value is float64: the sampled classes, the number of draws, and the
class probabilities the draw used (for the expected counts, graph ops in
``gradflow.ops.unigram_sampling_ops``).
"""

from __future__ import annotations

import threading

import numpy as np

from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register

_LOCK = threading.Lock()


def _draw(rng, p, num_sampled, unique):
    """``num_sampled`` classes from ``p`` and the number of draws it took."""
    if not unique:
        return rng.choice(len(p), size=num_sampled, p=p), num_sampled
    draws = np.empty(0, np.int64)
    chunk = max(2 * num_sampled, 64)
    while True:  # without replacement: each class at its first appearance (TF1's loop)
        draws = np.concatenate([draws, rng.choice(len(p), size=chunk, p=p)])
        _, first = np.unique(draws, return_index=True)
        if len(first) >= num_sampled:
            first = np.sort(first)[:num_sampled]
            return draws[first], int(first[-1]) + 1
        chunk *= 2


def _impl(run_state, node):
    backend, attrs = run_state.backend, node.attrs
    range_max, num_sampled = attrs["range_max"], attrs["num_sampled"]
    key = ("learned_unigram", node)

    def run(true_classes):
        true = np.asarray(backend.to_numpy(true_classes)).astype(np.int64).reshape(-1)
        bad = true[(true < 0) | (true >= range_max)]
        if bad.size:
            raise InvalidArgumentError(f"learned_unigram_candidate_sampler '{node.name}': "
                                       f"true class {int(bad[0])} out of range "
                                       f"[0, {range_max})")
        with _LOCK:
            counts = run_state.resources.setdefault(key, np.ones(range_max, np.float64))
            p = counts / counts.sum()
            classes, tries = _draw(run_state.host_rng(node), p, num_sampled, attrs["unique"])
            np.add.at(counts, true, 1.0)
        packed = np.concatenate([np.asarray(classes, np.float64), [float(tries)], p])
        return backend.device_value(packed)

    return run


# kind "call", no gradient: true_classes -> float64 [num_sampled + 1 + range_max]; attrs
# range_max, num_sampled, unique, graph_seed, op_seed, shape, dtype
register("learned_unigram_sampler", _impl, declared, grad=None, kind="call")
