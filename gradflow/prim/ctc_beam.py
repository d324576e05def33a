"""CTC prefix beam search (TF1 ``tf.nn.ctc_beam_search_decoder``), a host op.

``ctc_beam_search`` runs, for each sequence, the beam search of TensorFlow's
``CTCBeamSearchDecoder`` with its default scorer, step by step as TF's kernel does: the
beam is a tree of label prefixes, each with the log-probabilities (over the log-softmax
of the step's logits) of the prefix ending in a blank and in its last label; each step
first advances every prefix in the beam, then extends the prefixes, best first, by
every label, keeping the ``beam_width`` best (an extension that does not beat the
worst prefix is dropped, and one that does evicts it). Its value packs, per sequence
and path, the path's log-probability and then its labels (float64, -1 past the end);
``ctc_beam_path`` unpacks one path as an int64 matrix padded with -1, for
``padded_sparse_part`` (gradflow/prim/ctc.py) to make its SparseTensor.
"""

from __future__ import annotations

import numpy as np

from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register

_ZERO = -np.inf  # log 0


def _logsumexp(a, b):
    if a == _ZERO:
        return b
    if b == _ZERO:
        return a
    top = max(a, b)
    return top + np.log1p(np.exp(-abs(a - b)))


class _Prefix:
    """A node of the prefix tree: its probabilities at the previous step (``old``) and
    now (``new``), each ``[blank, label, total]`` in log space."""

    __slots__ = ("parent", "label", "children", "old", "new")

    def __init__(self, parent, label):
        self.parent, self.label, self.children = parent, label, None
        self.old = [_ZERO, _ZERO, _ZERO]
        self.new = [_ZERO, _ZERO, _ZERO]

    def active(self):
        return self.new[2] != _ZERO

    def labels(self, merge_repeated):
        out, prev, node = [], -1, self
        while node.parent is not None:
            if not merge_repeated or node.label != prev:
                out.append(node.label)
            prev, node = node.label, node.parent
        return out[::-1]


class _Beam:
    """The ``beam_width`` best prefixes (TF's TopN by total probability)."""

    def __init__(self, width):
        self.width, self.items = width, []

    def bottom(self):
        return min(self.items, key=lambda p: p.new[2])

    def is_candidate(self, total):
        return total > _ZERO and (len(self.items) < self.width or
                                  total > self.bottom().new[2])

    def push(self, prefix):
        if len(self.items) == self.width:
            worst = self.bottom()
            worst.new = [_ZERO, _ZERO, _ZERO]  # out of the beam
            self.items.remove(worst)
        self.items.append(prefix)

    def best_first(self):
        return sorted(self.items, key=lambda p: -p.new[2])


def _advance(beam, logp, blank):
    """Every prefix of the beam one step on; returns them best first (as they were)."""
    branches = beam.best_first()
    beam.items = []
    for b in branches:
        b.old = list(b.new)
    for b in branches:
        if b.parent is not None:
            if b.parent.active():
                prev = b.parent.old[0] if b.label == b.parent.label else b.parent.old[2]
                b.new[1] = _logsumexp(b.new[1], prev)
            b.new[1] += logp[b.label]
        b.new[0] = b.old[2] + logp[blank]
        b.new[2] = _logsumexp(b.new[0], b.new[1])
        beam.push(b)
    return branches


def _step(beam, logp, blank):
    for b in _advance(beam, logp, blank):
        if not beam.is_candidate(b.old[2]):
            continue
        if b.children is None:
            b.children = [_Prefix(b, k) for k in range(blank)]
        for c in b.children:
            if c.active():
                continue
            prev = b.old[0] if c.label == b.label else b.old[2]
            c.new = [_ZERO, logp[c.label] + prev, logp[c.label] + prev]
            if beam.is_candidate(c.new[2]):
                beam.push(c)
            else:
                c.old, c.new = [_ZERO, _ZERO, _ZERO], [_ZERO, _ZERO, _ZERO]


def beam_search(logits, length, beam_width, top_paths, merge_repeated):
    """The ``top_paths`` best ``(log_probability, labels)`` of one sequence's logits
    ``[time, classes]`` (the last class the blank), its first ``length`` steps."""
    x = logits[:length].astype(np.float64)
    logp = x - x.max(axis=1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(axis=1, keepdims=True))
    root = _Prefix(None, -1)
    root.new = [0.0, _ZERO, 0.0]
    beam = _Beam(beam_width)
    beam.push(root)
    blank = x.shape[1] - 1
    for t in range(length):
        _step(beam, logp[t], blank)
    best = beam.best_first()
    if top_paths > len(best):
        return None
    return [(p.new[2], p.labels(merge_repeated)) for p in best[:top_paths]]


def _search_impl(run_state, node):
    backend, attrs = run_state.backend, node.attrs
    width, top, merge = attrs["beam_width"], attrs["top_paths"], attrs["merge_repeated"]

    def run(logits, seq_len):
        x = np.asarray(backend.to_numpy(logits))
        lengths = np.asarray(backend.to_numpy(seq_len)).reshape(-1).astype(np.int64)
        steps, batch, _ = x.shape
        if len(lengths) != batch or np.any((lengths < 0) | (lengths > steps)):
            raise InvalidArgumentError(f"ctc_beam_search_decoder '{node.name}': "
                                       f"sequence_length {lengths.tolist()} for {batch} "
                                       f"sequences of at most {steps} steps")
        found = []
        for b in range(batch):
            paths = beam_search(x[:, b, :], int(lengths[b]), width, top, merge)
            if paths is None:
                raise InvalidArgumentError(f"ctc_beam_search_decoder '{node.name}': fewer "
                                           f"paths in the beam of sequence {b} than "
                                           f"top_paths={top}")
            found.append(paths)
        longest = max([len(p[1]) for paths in found for p in paths] + [0])
        packed = np.full((batch, top, 1 + longest), -1.0)
        for b, paths in enumerate(found):
            for i, (logprob, labels) in enumerate(paths):
                packed[b, i, 0] = logprob
                packed[b, i, 1:1 + len(labels)] = labels
        return backend.device_value(packed)

    return run


def _path_impl(run_state, node):
    backend, index = run_state.backend, node.attrs["index"]

    def run(packed):
        labels = np.asarray(backend.to_numpy(packed))[:, index, 1:].astype(np.int64)
        used = np.flatnonzero((labels >= 0).any(axis=0))
        width = int(used[-1]) + 1 if used.size else 0
        return backend.device_value(np.ascontiguousarray(labels[:, :width]))

    return run


# kind "call", no gradient (TF1's decoder has none): logits [T, B, C] and sequence_length
# [B] -> float64 [B, top_paths, 1 + longest path]; attrs beam_width, top_paths,
# merge_repeated, shape, dtype
register("ctc_beam_search", _search_impl, declared, grad=None, kind="call")
# the packed value -> path ``index`` as int64 [B, its longest], -1 past each path's end
register("ctc_beam_path", _path_impl, declared, grad=None, kind="call")


def _unique_impl(run_state, node):
    backend = run_state.backend

    def run(labels):
        rows = np.asarray(backend.to_numpy(labels)).astype(np.int64)
        out = np.zeros((2,) + rows.shape, np.int64)
        for b, row in enumerate(rows):
            values, first, index = np.unique(row, return_index=True, return_inverse=True)
            order = np.argsort(first)  # distinct labels in order of first appearance
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            out[0, b, :len(order)] = values[order]
            out[1, b] = rank[index.reshape(-1)]
        return backend.device_value(out)

    return run


# kind "call", no gradient: int64 labels [B, L] -> [2, B, L], each row's distinct labels
# in order of first appearance (0-padded) over each label's position among them
register("ctc_unique", _unique_impl, declared, grad=None, kind="call")
