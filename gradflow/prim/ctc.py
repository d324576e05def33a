"""The primitives of connectionist temporal classification (``ctc_loss`` and its gradient,
the greedy decoder's paths) and of ``edit_distance``.

``ctc_loss`` runs the forward (alpha) and backward (beta) recursions of Graves et al.
(2006) in log space on the backend's arrays, one time step of every sequence of the
batch at a time, over the labels extended with blanks (``2 L + 1`` states). The
labels come as TF1's ``SparseTensor``, one row per sequence, read on the host (they
are small) into the extended labels' one-hot matrix, so that taking each state's
log-probability at every step is one batched matrix product (exact: one term of each
sum is non-zero). The gradient op runs both recursions and gives TF1's gradient in
the logits, ``softmax(logits)`` less each class's share of the state occupancy, zero
past each sequence's length. The blank is the last class, ``num_classes - 1``.

The decoder and ``edit_distance`` make and read sparse tensors whose sizes depend on
the values: host ops (NumPy), as TF1's are CPU kernels. TF1's functions over them are
in ``gradflow.ops.ctc_ops``.
"""

from __future__ import annotations

import numpy as np
from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim.registry import apply, register


def _declared(shapes, in_dtypes, shape, dtype, **_):
    """The shape and dtype given as attributes: these ops' results depend on the values."""
    return shape, dtype


def _sequences(indices, values, lengths, steps, classes, ignore, what):
    """Each batch entry's label sequence from the sparse labels (host arrays), after
    TF1's checks; and whether each fits in its time."""
    batch = len(lengths)
    for b, n in enumerate(lengths):
        if not 0 <= n <= steps:
            raise InvalidArgumentError(f"{what}: sequence_length({b}) = {n} is not in "
                                       f"[0, {steps}] (the inputs' max_time)")
    if indices.ndim != 2 or indices.shape[1] != 2 or values.shape != (indices.shape[0],):
        raise InvalidArgumentError(f"{what}: the labels must be a SparseTensor of rank 2 "
                                   f"(indices {indices.shape}, values {values.shape})")
    rows, cols = indices[:, 0], indices[:, 1]
    bad = np.flatnonzero((rows < 0) | (rows >= batch) | (cols < 0))
    if bad.size:
        i = bad[0]
        raise InvalidArgumentError(f"{what}: labels.indices[{i}] = [{rows[i]}, {cols[i]}] "
                                   f"is outside a batch of {batch}")
    order = rows * (int(cols.max(initial=0)) + 1) + cols
    bad = np.flatnonzero(np.diff(order) <= 0)
    if bad.size:
        i = bad[0] + 1
        raise InvalidArgumentError(f"{what}: labels.indices[{i}] = [{rows[i]}, {cols[i]}] "
                                   "is out of order: the indices must be in row-major order, "
                                   "each once")
    bad = np.flatnonzero((values < 0) | (values >= classes - 1))
    if bad.size:
        i = bad[0]
        raise InvalidArgumentError(f"{what}: labels.values[{i}] = {values[i]} is not in "
                                   f"[0, {classes - 1}): the last of the {classes} classes is "
                                   "the blank")
    starts = np.searchsorted(rows, np.arange(batch + 1))
    sequences = [values[starts[b]:starts[b + 1]] for b in range(batch)]
    fits = []
    for b, seq in enumerate(sequences):
        if not len(seq):
            raise InvalidArgumentError(f"{what}: labels length is zero in batch {b}")
        need = len(seq) + int(np.count_nonzero(seq[1:] == seq[:-1]))
        fits.append(need <= lengths[b])
        if not fits[-1] and not ignore:
            raise InvalidArgumentError(
                f"{what}: not enough time for target transition sequence (required: {need}, "
                f"available: {lengths[b]}) in batch entry {b}; "
                "ignore_longer_outputs_than_inputs=True gives such entries a loss of 0")
    return sequences, np.asarray(fits)


def _extended_onehot(sequences, classes):
    """The labels with blanks between and around, one-hot: ``[B, 2 L + 1, C]``; states
    past a sequence's own ``2 len + 1`` are all zero."""
    width = max([len(seq) for seq in sequences] + [0])
    onehot = np.zeros((len(sequences), 2 * width + 1, classes), dtype=np.float64)
    for b, seq in enumerate(sequences):
        onehot[b, 0:2 * len(seq) + 1:2, classes - 1] = 1.0
        onehot[b, 2 * np.arange(len(seq)) + 1, seq] = 1.0
    return onehot


# The log-probability of an impossible state: finite, so that log-sum-exp needs no guards
# (the largest term gives exp(0) = 1, so the sum is never 0) and no -inf - -inf appears;
# added to any log-probability the sum stays near it, and exp of it is 0.
_IMPOSSIBLE = -1e30


def _lse3(xp, a, b, c):
    """log(exp(a) + exp(b) + exp(c)), elementwise."""
    top = xp.maximum(xp.maximum(a, b), c)
    return top + xp.log(xp.exp(a - top) + xp.exp(b - top) + xp.exp(c - top))


class _Lattice:
    """One batch's CTC lattice: the states' log-probabilities ``lp`` ``[B, T, S]`` and the
    forward recursion ``alpha``; ``grad`` runs the backward one."""

    def __init__(self, backend, logits, indices, values, seq_len, ignore, what):
        xp = backend.xp
        steps, batch, classes = logits.shape
        host = backend.host_value
        lengths = [int(n) for n in host(seq_len).reshape(-1)]
        if len(lengths) != batch:
            raise InvalidArgumentError(f"{what}: sequence_length has {len(lengths)} entries "
                                       f"for a batch of {batch}")
        sequences, fits = _sequences(host(indices).astype(np.int64),
                                     host(values).astype(np.int64), lengths, steps, classes,
                                     ignore, what)
        dtype, dev = logits.dtype, _device(logits)
        onehot = xp.astype(backend.asarray(_extended_onehot(sequences, classes)), dtype)
        counts = backend.asarray(np.asarray([2 * len(q) + 1 for q in sequences], np.int64))
        self.lengths = backend.asarray(np.asarray(lengths, np.int64))
        self.fits = backend.asarray(fits)
        self.xp, self.onehot, self.steps = xp, onehot, steps
        states = onehot.shape[1]
        shifted = logits - xp.max(logits, axis=2, keepdims=True)
        self.logp = shifted - xp.log(xp.sum(xp.exp(shifted), axis=2, keepdims=True))
        s = xp.arange(states, device=dev)
        self.never = xp.full((batch, states), _IMPOSSIBLE, dtype=dtype, device=dev)
        lp = xp.matmul(xp.permute_dims(self.logp, (1, 0, 2)), xp.permute_dims(onehot, (0, 2, 1)))
        # states past a sequence's own end have no class: impossible, not the product's 0
        self.lp = xp.where((s < counts[:, None])[:, None, :], lp, self.never[:, None, :])
        # a label state is entered from two states back unless that holds the same label
        same = xp.sum(onehot[:, 2:, :] * onehot[:, :-2, :], axis=2) > 0
        self.skip = xp.concat([xp.zeros((batch, 2), dtype=xp.bool, device=dev),
                               xp.logical_not(same)], axis=1)
        self.ends = (s == counts[:, None] - 1) | (s == counts[:, None] - 2)
        self.alpha = self._forward(s)

    def _forward(self, s):
        xp, lp, never, lengths = self.xp, self.lp, self.never, self.lengths
        empty = xp.where(s == 0, xp.zeros_like(never), never)  # no steps: the empty label
        if not self.steps:
            return [empty]
        pad = never[:, :2]
        alpha = [xp.where((lengths > 0)[:, None], xp.where(s < 2, lp[:, 0, :], never), empty)]
        for t in range(1, self.steps):
            prev = alpha[-1]
            padded = xp.concat([pad, prev], axis=1)
            into = _lse3(xp, prev, padded[:, 1:-1], xp.where(self.skip, padded[:, :-2], never))
            alpha.append(xp.where((t < lengths)[:, None], into + lp[:, t, :], prev))
        return alpha

    def log_likelihood(self):
        """log p(labels | inputs) of each sequence (near ``_IMPOSSIBLE`` where none)."""
        xp = self.xp
        last = xp.where(self.ends, self.alpha[-1], self.never)
        top = xp.max(last, axis=1)
        return top + xp.log(xp.sum(xp.exp(last - top[:, None]), axis=1))

    def grad(self):
        """d(-log p) / d logits, ``[T, B, C]``; zero past each length and for the entries
        that do not fit."""
        xp, lp, never, lengths = self.xp, self.lp, self.never, self.lengths
        if not self.steps:
            return xp.zeros(self.logp.shape, dtype=self.logp.dtype, device=_device(self.logp))
        log_like = self.log_likelihood()
        skip_next = xp.concat([self.skip[:, 2:], self.skip[:, :2] & False], axis=1)
        pad = never[:, :2]
        beta = never
        gammas = [None] * self.steps
        for t in reversed(range(self.steps)):
            padded = xp.concat([beta, pad], axis=1)
            out = _lse3(xp, beta, padded[:, 1:-1], xp.where(skip_next, padded[:, 2:], never))
            here = lp[:, t, :]
            beta = xp.where((t == lengths - 1)[:, None], xp.where(self.ends, here, never),
                            xp.where((t < lengths - 1)[:, None], out + here, never))
            # the state's own log-probability is in alpha and in beta: once off
            gammas[t] = self.alpha[t] + beta - here
        gamma = xp.stack(gammas, axis=1) - log_like[:, None, None]  # [B, T, S]
        occupied = xp.permute_dims(xp.matmul(xp.exp(gamma), self.onehot), (1, 0, 2))
        live = (xp.arange(self.steps, device=_device(lengths))[:, None] < lengths[None, :]) \
            & self.fits[None, :]
        return xp.where(live[:, :, None], xp.exp(self.logp) - occupied,
                        xp.zeros_like(occupied))


def _loss_impl(run_state, node):
    ignore = node.attrs["ignore_longer"]
    key = ("ctc_lattice", node)

    def run(logits, indices, values, seq_len):
        lattice = _Lattice(run_state.backend, logits, indices, values, seq_len, ignore,
                           f"ctc_loss '{node.name}'")
        xp = run_state.backend.xp
        loss = -lattice.log_likelihood()
        loss = xp.where(lattice.fits, loss, xp.zeros_like(loss))
        # for this run's gradient op, which knows it by this very loss array
        run_state.resources[key] = (loss, lattice)
        return loss

    return run


def _grad_impl(run_state, node):
    ignore = node.attrs["ignore_longer"]
    key = ("ctc_lattice", node.inputs[5])

    def run(logits, indices, values, seq_len, g, loss):
        kept = run_state.resources.get(key)
        if kept is not None and kept[0] is loss:
            # the loss op made it from these inputs in this run: the array is new in every
            # run and the entry holds it, so no later array can be mistaken for it
            lattice = kept[1]
            run_state.resources.pop(key, None)
        else:  # another thread's run took the slot since: recompute
            lattice = _Lattice(run_state.backend, logits, indices, values, seq_len, ignore,
                               f"ctc_loss '{node.name}'")
        return lattice.grad() * g[None, :, None]

    return run


def _loss_infer(shapes, in_dtypes, **_):
    logits = shapes[0]
    if in_dtypes[0] not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"inputs must be float32 or float64, got {in_dtypes[0].name}")
    if logits is None:
        return (None,), in_dtypes[0]
    if len(logits) != 3:
        raise ValueError(f"inputs must be [max_time, batch, num_classes], got rank "
                         f"{len(logits)}")
    if shapes[3] is not None and len(shapes[3]) != 1:
        raise ValueError(f"sequence_length must be a vector, got rank {len(shapes[3])}")
    return (logits[1],), in_dtypes[0]


def _grad_infer(shapes, in_dtypes, **_):
    return shapes[0], in_dtypes[0]


def _loss_grad(n, g):
    # the loss itself is an input, so that its op (which keeps the forward recursion for
    # this op) runs first, and so that this op can tell that run's lattice
    grad = apply("ctc_loss_grad", list(n.inputs) + [g, n], name=n.name + "/grad",
                 ignore_longer=n.attrs["ignore_longer"])
    return [grad, None, None, None]


register("ctc_loss", _loss_impl, _loss_infer, grad=_loss_grad, kind="call")
register("ctc_loss_grad", _grad_impl, _grad_infer, grad=None, kind="call")


def _host_parts(run_state):
    backend = run_state.backend
    return backend.host_value, backend.asarray


def _greedy_impl(run_state, node):
    to_host, asarray = _host_parts(run_state)
    merge = node.attrs["merge_repeated"]

    def run(logits, seq_len):
        x = to_host(logits)
        lengths = to_host(seq_len).reshape(-1).astype(np.int64)
        steps, batch, classes = x.shape
        if len(lengths) != batch or np.any((lengths < 0) | (lengths > steps)):
            raise InvalidArgumentError(f"ctc_greedy_decoder '{node.name}': sequence_length "
                                       f"{lengths.tolist()} for {batch} sequences of at most "
                                       f"{steps} steps")
        best = np.argmax(x, axis=2)  # [T, B]: the first of equal maxima, as TF1
        paths = []
        for b in range(batch):
            path = best[:lengths[b], b]
            if merge and len(path):
                path = path[np.concatenate([[True], path[1:] != path[:-1]])]
            paths.append(path[path != classes - 1])
        width = max([len(p) for p in paths] + [0])
        padded = np.full((batch, width), -1, np.int64)
        for b, path in enumerate(paths):
            padded[b, :len(path)] = path
        return asarray(padded)

    return run


def _padded_part_impl(run_state, node):
    """One part of the SparseTensor of a padded matrix (-1 marks no entry)."""
    to_host, asarray = _host_parts(run_state)
    part = node.attrs["part"]

    def run(padded):
        dense = to_host(padded)
        if part == "indices":
            return asarray(np.argwhere(dense >= 0).astype(np.int64).reshape(-1, 2))
        if part == "values":
            return asarray(dense[dense >= 0].astype(np.int64))
        return asarray(np.asarray(dense.shape, np.int64))

    return run


register("ctc_greedy_paths", _greedy_impl, _declared, grad=None, kind="call")
register("padded_sparse_part", _padded_part_impl, _declared, grad=None, kind="call")


def _edit_distance_impl(run_state, node):
    to_host, asarray = _host_parts(run_state)
    normalize = node.attrs["normalize"]
    what = f"edit_distance '{node.name}'"

    def groups(indices, values, shape, which):
        indices, shape = to_host(indices).astype(np.int64), to_host(shape).astype(np.int64)
        values = to_host(values)
        if indices.ndim != 2 or indices.shape[1] != shape.shape[0] or \
                values.shape[0] != indices.shape[0] or shape.shape[0] < 2:
            raise InvalidArgumentError(f"{what}: {which} must be a SparseTensor of rank 2 or "
                                       f"more (indices {indices.shape}, values {values.shape}, "
                                       f"dense_shape {shape.tolist()})")
        bad = np.flatnonzero(np.any((indices < 0) | (indices >= shape), axis=1))
        if bad.size:
            raise InvalidArgumentError(f"{what}: {which}.indices[{bad[0]}] = "
                                       f"{indices[bad[0]].tolist()} is outside the dense shape "
                                       f"{shape.tolist()}")
        order = np.lexsort(indices.T[::-1])
        seqs = {}
        for i in order:
            seqs.setdefault(tuple(indices[i, :-1]), []).append(values[i])
        return seqs, shape

    def run(h_idx, h_vals, h_shape, t_idx, t_vals, t_shape):
        hyp, h_shape = groups(h_idx, h_vals, h_shape, "hypothesis")
        truth, t_shape = groups(t_idx, t_vals, t_shape, "truth")
        if len(h_shape) != len(t_shape):
            raise InvalidArgumentError(f"{what}: hypothesis and truth have ranks "
                                       f"{len(h_shape)} and {len(t_shape)}")
        out_shape = tuple(int(v) for v in np.maximum(h_shape, t_shape)[:-1])
        out = np.zeros(out_shape, np.float32)
        for at in np.ndindex(*out_shape):
            h, t = hyp.get(at, []), truth.get(at, [])
            d = _levenshtein(h, t)
            if normalize:
                d = d / len(t) if len(t) else (np.inf if d else 0.0)
            out[at] = d
        return asarray(out)

    return run


def _levenshtein(a, b):
    """The edit distance (insertions, deletions, substitutions) between two sequences."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


register("edit_distance", _edit_distance_impl, _declared, grad=None, kind="call",
         takes_strings=True)


