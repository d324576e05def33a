"""More recurrent training steps of the char-LSTM's sizes, gradflow against PyTorch.

Every model is the char-LSTM benchmark's (``lstm_step.py``) training step with another
recurrent part: vocab 65, embed 64, hidden 128, 50 time steps, batch 32, float32, inputs
by ``embedding_lookup`` of int ids, softmax cross-entropy over every step, Adam 1e-3.
Each is written once for gradflow, TF1 style as users write it, and once for PyTorch
eager from the SAME initial weights (so the first losses agree; they are printed); GRU,
LSTM x2 and biLSTM also for TensorFlow (TF1 graph, ``dynamic_rnn``) and JAX (``lax.scan``
under ``jit``) where installed, from the same weights (``rnn_peers.py``, ``--peers``):

* ``GRU``: ``GRUCell(128)`` under ``static_rnn``. TF1's GRU applies the reset gate
  before the candidate's matmul, ``(r * h) @ W``, PyTorch's ``nn.GRU`` after it,
  ``r * (h @ W_hn + b_hn)``: no weights make them the same function. So the
  same-weights peer is a PyTorch cell loop with TF's formula ("torch TF-GRU loop"), and
  ``torch.nn.GRU`` with its own initial weights is timed as the speed peer;
* ``LSTM x2``: ``MultiRNNCell([LSTMCell(128), LSTMCell(128)])`` under ``static_rnn``
  against ``nn.LSTM(num_layers=2)``;
* ``biLSTM``: ``bidirectional_dynamic_rnn`` of two ``LSTMCell(128)`` on
  ``[batch, time, embed]`` inputs, both directions' outputs concatenated before the
  softmax layer (256 -> 65), against ``nn.LSTM(bidirectional=True)``;
* ``LSTM dynamic``: ``dynamic_rnn`` of an ``LSTMCell(128)`` where the time length is
  known only at run time (ids placeholder of shape ``(None, None)``, so a
  ``while_loop``), fed 50 steps, against the static model of ``lstm_step.py`` (the goal:
  dynamic within 1.1x of static) and ``nn.LSTM``;
* ``LSTM peephole``: ``LSTMCell(128, use_peepholes=True)`` under ``static_rnn``, its
  peephole weights starting at 0 (so its first loss is the plain LSTM's), against the
  plain static LSTM of ``lstm_step.py`` and ``nn.LSTM``, which has no peepholes (the
  nearest cuDNN/ATen kernel: a speed peer, the same function only at the first step);
* ``biLSTM dynamic``: the ``biLSTM`` model with the time length known only at run time,
  against the static ``biLSTM`` and ``nn.LSTM(bidirectional=True)``.

TF's LSTM kernel ``[inputs + H, 4H]`` (gates i, j, f, o; ``forget_bias`` 1.0 added to
f) maps onto PyTorch's ``weight_ih``/``weight_hh`` (gates i, f, g, o) with ``bias_ih``
= TF's bias (plus 1.0 on f) and ``bias_hh`` = 0. The biases start small and random,
so the loss check covers their mapping.

    python benchmarks/rnn_models.py [--seconds 1] [--threads N] [--only GRU biLSTM ...] [--plan]
                                    [--peers tf jax]
    python benchmarks/rnn_models.py --gpu [--seconds 1] [--skip-compile]   # CUDA rows

On a small machine give ``--threads 1``: with their default threads, a PyTorch step
that starts while OpenBLAS's threads still spin after a gradflow step took seconds
instead of milliseconds on the 2-core VM (the timed rounds skip that moment, so the
figures hold, but the run took 3 minutes instead of 20 s).

On the CPU (``cpu_rows``) it prints milliseconds per step, the best of 5 rounds, every
row of every model timed in turn so a busy spell of a shared machine hits them all, and
the ratio of the gradflow step to each row. ``gpu_rows(gpu)`` prints the same models
through ``benchmarks/gpu.py``'s ``report`` (gradflow's Session variants and PyTorch's
eager, fused-Adam, CUDA-graph and ``torch.compile`` rows). A row that fails prints
FAILED and the run goes on.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import plan_steps  # noqa: E402
import rnn_peers  # noqa: E402
from timing import (  # noqa: E402
    OtherLoad,
    parse_args,
    pin_threads_from_argv,
    pin_torch_threads,
    time_ms_each,
)

pin_threads_from_argv()

import numpy as np  # noqa: E402

import gradflow as gf  # noqa: E402

# the sizes, read when a model is built (the tests make them tiny)
VOCAB, EMBED, HIDDEN, STEPS, BATCH = 65, 64, 128, 50, 32
FORGET_BIAS = 1.0  # TF1 LSTMCell's default
AGREE = 1e-5  # relative difference of the first losses printed as agreeing
F32 = np.float32


def make_data(seed=1):
    """Input ids and target ids, int32 ``[BATCH, STEPS]`` (``lstm_step.py``'s layout)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32)
    y = rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32)
    return x, y


# -- initial weights ----------------------------------------------------------------------


def _glorot(rng, rows, cols):
    limit = np.sqrt(6 / (rows + cols))
    return rng.uniform(-limit, limit, (rows, cols)).astype(F32)


def _small(rng, n):
    return rng.uniform(-0.1, 0.1, n).astype(F32)


def _embed_and_softmax(rng, features):
    return {"emb": rng.normal(0, 1, (VOCAB, EMBED)).astype(F32),
            "w_out": rng.normal(0, features ** -0.5, (features, VOCAB)).astype(F32),
            "b_out": _small(rng, VOCAB)}


def gru_weights(seed=0):
    """TF1 GRUCell's layout: gates kernel ``[E + H, 2H]`` (r, u), candidate ``[E + H, H]``."""
    rng = np.random.default_rng(seed)
    w = _embed_and_softmax(rng, HIDDEN)
    w.update(gate_kernel=_glorot(rng, EMBED + HIDDEN, 2 * HIDDEN),
             gate_bias=(1.0 + _small(rng, 2 * HIDDEN)).astype(F32),  # TF starts it at 1
             cand_kernel=_glorot(rng, EMBED + HIDDEN, HIDDEN),
             cand_bias=_small(rng, HIDDEN))
    return w


def _lstm_weights(seed, suffixes, inputs, features):
    rng = np.random.default_rng(seed)
    w = _embed_and_softmax(rng, features)
    for suffix, n_in in zip(suffixes, inputs):
        w["kernel" + suffix] = _glorot(rng, n_in + HIDDEN, 4 * HIDDEN)
        w["bias" + suffix] = _small(rng, 4 * HIDDEN)
    return w


def lstm2_weights(seed=0):
    return _lstm_weights(seed, ("0", "1"), (EMBED, HIDDEN), HIDDEN)


def bilstm_weights(seed=0):
    return _lstm_weights(seed, ("_fw", "_bw"), (EMBED, EMBED), 2 * HIDDEN)


def lstm_weights(seed=0):
    """``lstm_step.init_weights``'s layout (emb, kernel, bias, w_out, b_out)."""
    return _lstm_weights(seed, ("",), (EMBED,), HIDDEN)


# -- gradflow -----------------------------------------------------------------------------


def _softmax_loss(weights, outputs, labels):
    """Mean cross-entropy of ``outputs [rows, features] @ softmax/w + softmax/b``."""
    w_out = gf.get_variable("softmax/w", initializer=weights["w_out"])
    b_out = gf.get_variable("softmax/b", initializer=weights["b_out"])
    logits = gf.matmul(outputs, w_out) + b_out
    return gf.reduce_mean(
        gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))


def _ids_and_embedding(weights, steps):
    ids = gf.placeholder(gf.int32, (None, steps), name="ids")
    targets = gf.placeholder(gf.int32, (None, steps), name="targets")
    emb = gf.get_variable("emb", initializer=weights["emb"])
    return ids, targets, emb


def _static_rnn_graph(weights, cell):
    """ids -> per-step embeddings -> ``static_rnn(cell)`` -> softmax over time-major rows."""
    ids, targets, emb = _ids_and_embedding(weights, STEPS)
    inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(STEPS)]
    outputs, _ = gf.nn.static_rnn(cell, inputs, dtype=gf.float32)
    labels = gf.reshape(gf.transpose(targets), (-1,))
    return ids, targets, _softmax_loss(weights, gf.concat(outputs, 0), labels)


def gru_graph(weights):
    cell = gf.nn.rnn_cell.GRUCell(HIDDEN)
    ids, targets, loss = _static_rnn_graph(weights, cell)
    names = ("gate_kernel", "gate_bias", "cand_kernel", "cand_bias")
    return ids, targets, loss, list(zip(cell.trainable_variables, (weights[k] for k in names)))


def lstm2_graph(weights):
    cell = gf.nn.rnn_cell.MultiRNNCell([gf.nn.rnn_cell.LSTMCell(HIDDEN),
                                        gf.nn.rnn_cell.LSTMCell(HIDDEN)])
    ids, targets, loss = _static_rnn_graph(weights, cell)
    names = ("kernel0", "bias0", "kernel1", "bias1")
    return ids, targets, loss, list(zip(cell.trainable_variables, (weights[k] for k in names)))


def bilstm_graph(weights):
    ids, targets, emb = _ids_and_embedding(weights, STEPS)
    inputs = gf.nn.embedding_lookup(emb, ids)  # [batch, time, embed]
    fw, bw = gf.nn.rnn_cell.LSTMCell(HIDDEN), gf.nn.rnn_cell.LSTMCell(HIDDEN)
    (out_fw, out_bw), _ = gf.nn.bidirectional_dynamic_rnn(fw, bw, inputs, dtype=gf.float32)
    outputs = gf.reshape(gf.concat([out_fw, out_bw], 2), (-1, 2 * HIDDEN))
    loss = _softmax_loss(weights, outputs, gf.reshape(targets, (-1,)))
    names = ("kernel_fw", "bias_fw", "kernel_bw", "bias_bw")
    variables = fw.trainable_variables + bw.trainable_variables
    return ids, targets, loss, list(zip(variables, (weights[k] for k in names)))


def bilstm_dynamic_graph(weights):
    """``bilstm_graph`` over a time axis of unknown length (ids placeholder ``(None, None)``):
    two ``dynamic_rnn`` loops, the backward one over the inputs reversed in time."""
    ids, targets, emb = _ids_and_embedding(weights, None)
    inputs = gf.nn.embedding_lookup(emb, ids)  # [batch, None, embed]
    fw, bw = gf.nn.rnn_cell.LSTMCell(HIDDEN), gf.nn.rnn_cell.LSTMCell(HIDDEN)
    (out_fw, out_bw), _ = gf.nn.bidirectional_dynamic_rnn(fw, bw, inputs, dtype=gf.float32)
    outputs = gf.reshape(gf.concat([out_fw, out_bw], 2), (-1, 2 * HIDDEN))
    loss = _softmax_loss(weights, outputs, gf.reshape(targets, (-1,)))
    names = ("kernel_fw", "bias_fw", "kernel_bw", "bias_bw")
    variables = fw.trainable_variables + bw.trainable_variables
    return ids, targets, loss, list(zip(variables, (weights[k] for k in names)))


def lstm_dynamic_graph(weights):
    """``dynamic_rnn`` over a time axis of unknown length (ids placeholder ``(None, None)``)."""
    ids, targets, emb = _ids_and_embedding(weights, None)
    inputs = gf.nn.embedding_lookup(emb, ids)  # [batch, None, embed]
    cell = gf.nn.rnn_cell.LSTMCell(HIDDEN)
    outputs, _ = gf.nn.dynamic_rnn(cell, inputs, dtype=gf.float32)
    loss = _softmax_loss(weights, gf.reshape(outputs, (-1, HIDDEN)),
                         gf.reshape(targets, (-1,)))
    return ids, targets, loss, list(zip(cell.trainable_variables,
                                        (weights["kernel"], weights["bias"])))


def lstm_peephole_graph(weights):
    """``LSTMCell(128, use_peepholes=True)`` under ``static_rnn``, its peephole weights
    starting at 0: the first loss is the plain LSTM's (``lstm_step.py``, ``nn.LSTM``)."""
    cell = gf.nn.rnn_cell.LSTMCell(HIDDEN, use_peepholes=True)
    ids, targets, loss = _static_rnn_graph(weights, cell)
    zeros = np.zeros(HIDDEN, np.float32)
    values = (weights["kernel"], weights["bias"], zeros, zeros, zeros)
    return ids, targets, loss, list(zip(cell.trainable_variables, values))


def _stepper(graph_fn):
    def gradflow_step(weights, x, y, backend=None, optimize=True, session_options=None):
        """``(step, first loss, session, loss tensor, feed)`` of the model's graph, its
        cells' variables assigned from ``weights``, trained by Adam 1e-3 on ``x, y``."""
        graph = gf.Graph()
        with graph.as_default():
            ids, targets, loss, pairs = graph_fn(weights)
            init_ops = [var.assign(value) for var, value in pairs]
            train = gf.train.AdamOptimizer(1e-3).minimize(loss)
        sess = gf.Session(graph=graph, backend=backend, optimize=optimize,
                          **(session_options or {}))
        sess.run(gf.variables_initializer(graph.get_collection("variables")))
        sess.run(init_ops)
        feed = {ids: x, targets: y}
        first_loss = float(sess.run(loss, feed))
        return (lambda: sess.run(train, feed)), first_loss, sess, loss, feed

    gradflow_step.__name__ = f"gradflow_step_{graph_fn.__name__}"
    return gradflow_step


def static_lstm_step(weights, x, y, backend=None, optimize=True, session_options=None):
    """``lstm_step.gradflow_step``: the static char-LSTM, the reference of ``LSTM dynamic``."""
    import lstm_step

    ours = (VOCAB, EMBED, HIDDEN, STEPS)
    theirs = (lstm_step.VOCAB, lstm_step.EMBED, lstm_step.HIDDEN, lstm_step.STEPS)
    if ours != theirs:
        raise ValueError(f"lstm_step's sizes {theirs} differ from rnn_models' {ours}")
    return lstm_step.gradflow_step(weights, x, y, backend, optimize, session_options)


# -- PyTorch ------------------------------------------------------------------------------


def _lstm_arrays(kernel, bias, n_in):
    """TF's ``kernel [n_in + H, 4H]`` (i, j, f, o) and ``bias`` as PyTorch's ``weight_ih,
    weight_hh, bias_ih, bias_hh`` (i, f, g, o; ``forget_bias`` folded into ``bias_ih``)."""
    i, j, f, o = np.split(kernel, 4, axis=1)
    k = np.concatenate([i, f, j, o], 1).T
    bi, bj, bf, bo = np.split(bias, 4)
    b = np.concatenate([bi, bf + FORGET_BIAS, bj, bo]).astype(F32)
    return k[:, :n_in], k[:, n_in:], b, np.zeros_like(b)


def _copy(param, value):
    import torch

    with torch.no_grad():
        param.copy_(torch.from_numpy(np.ascontiguousarray(value, dtype=F32)))


def _torch_rnn_model(rnn, features, weights=None):
    """Embedding, ``rnn`` (batch first) and the softmax layer: ids ``[batch, time]``
    (int64) -> logits ``[batch, time, vocab]``; the embedding and the softmax layer
    from ``weights`` when given."""
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(VOCAB, EMBED)
            self.rnn = rnn
            self.out = torch.nn.Linear(features, VOCAB)

        def forward(self, ids):
            h, _ = self.rnn(self.emb(ids))
            return self.out(h)

    model = Model()
    if weights is not None:
        _copy(model.emb.weight, weights["emb"])
        _copy(model.out.weight, weights["w_out"].T)
        _copy(model.out.bias, weights["b_out"])
    return model


def _torch_lstm(weights, layers):
    """``nn.LSTM`` with ``weights``' kernels: ``layers`` is ``[(torch suffix, TF suffix,
    inputs)]``."""
    import torch

    bidirectional = any(s.endswith("_reverse") for s, _, _ in layers)
    lstm = torch.nn.LSTM(EMBED, HIDDEN, num_layers=len(layers) // (1 + bidirectional),
                         batch_first=True, bidirectional=bidirectional)
    for suffix, tf_suffix, n_in in layers:
        arrays = _lstm_arrays(weights["kernel" + tf_suffix], weights["bias" + tf_suffix], n_in)
        for name, value in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), arrays):
            _copy(getattr(lstm, f"{name}_{suffix}"), value)
    return lstm


def torch_lstm2(weights):
    """``nn.LSTM(num_layers=2)`` from the same weights as the gradflow model."""
    lstm = _torch_lstm(weights, [("l0", "0", EMBED), ("l1", "1", HIDDEN)])
    return _torch_rnn_model(lstm, HIDDEN, weights)


def torch_bilstm(weights):
    """``nn.LSTM(bidirectional=True)`` from the same weights as the gradflow model."""
    lstm = _torch_lstm(weights, [("l0", "_fw", EMBED), ("l0_reverse", "_bw", EMBED)])
    return _torch_rnn_model(lstm, 2 * HIDDEN, weights)


def torch_lstm(weights):
    """One ``nn.LSTM`` layer from the same weights (``lstm_weights``' layout)."""
    return _torch_rnn_model(_torch_lstm(weights, [("l0", "", EMBED)]), HIDDEN, weights)


def torch_nn_gru(weights=None):
    """``nn.GRU`` with PyTorch's own initial weights (its gates are not TF's: the speed
    peer only); the embedding and softmax layer from ``weights`` when given."""
    import torch

    return _torch_rnn_model(torch.nn.GRU(EMBED, HIDDEN, batch_first=True), HIDDEN, weights)


def torch_tf_gru(weights):
    """TF1's GRU cell written as a PyTorch loop, from the same weights: the input halves
    of both kernels as one matmul over all steps, then per step
    ``r, u = sigmoid(x W_xg + h W_hg + b_g)``, ``c = tanh(x W_xc + (r h) W_hc + b_c)``,
    ``h = u h + (1 - u) c``."""
    import torch

    class TFGRU(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.ParameterDict(
                {k: torch.nn.Parameter(torch.tensor(v)) for k, v in weights.items()})

        def forward(self, ids):
            p = self.p
            x = torch.nn.functional.embedding(ids, p["emb"])  # [batch, time, embed]
            xg = x @ p["gate_kernel"][:EMBED] + p["gate_bias"]
            xc = x @ p["cand_kernel"][:EMBED] + p["cand_bias"]
            w_hg, w_hc = p["gate_kernel"][EMBED:], p["cand_kernel"][EMBED:]
            h = x.new_zeros(x.shape[0], HIDDEN)
            outputs = []
            for t in range(x.shape[1]):
                r, u = torch.sigmoid(xg[:, t] + h @ w_hg).chunk(2, 1)
                c = torch.tanh(xc[:, t] + (r * h) @ w_hc)
                h = u * h + (1 - u) * c
                outputs.append(h)
            return torch.stack(outputs, 1) @ p["w_out"] + p["b_out"]

    return TFGRU()


def torch_loss(model, ids, targets):
    """Mean cross-entropy of ``model(ids)`` over every step (``gpu.torch_variants``'s
    ``loss_of``)."""
    import torch

    return torch.nn.functional.cross_entropy(model(ids).reshape(-1, VOCAB),
                                             targets.reshape(-1))


def torch_step(model, x, y):
    """``(step, first loss)`` of ``model`` trained by Adam 1e-3 on the CPU."""
    import torch

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
    first_loss = float(torch_loss(model, xt, yt).detach())

    def step():
        opt.zero_grad()
        torch_loss(model, xt, yt).backward()
        opt.step()

    return step, first_loss


# -- the models ---------------------------------------------------------------------------

MODELS = {
    "GRU": types.SimpleNamespace(
        group="GRU", init_weights=gru_weights, gradflow_step=_stepper(gru_graph),
        torch_model=torch_tf_gru, torch_label="torch TF-GRU loop (same weights)",
        gpu_label="PyTorch TF-GRU loop", gpu_peer_label="PyTorch nn.GRU",
        torch_peer=torch_nn_gru, peer_label="torch nn.GRU (own init)", reference=None),
    "LSTM x2": types.SimpleNamespace(
        group="LSTM x2", init_weights=lstm2_weights, gradflow_step=_stepper(lstm2_graph),
        torch_model=torch_lstm2, torch_label="torch nn.LSTM(num_layers=2)",
        gpu_label="PyTorch nn.LSTM x2",
        torch_peer=None, peer_label=None, reference=None),
    "biLSTM": types.SimpleNamespace(
        group="biLSTM", init_weights=bilstm_weights, gradflow_step=_stepper(bilstm_graph),
        torch_model=torch_bilstm, torch_label="torch nn.LSTM(bidirectional)",
        gpu_label="PyTorch nn.LSTM bidir",
        torch_peer=None, peer_label=None, reference=None),
    "LSTM dynamic": types.SimpleNamespace(
        group="LSTM dyn", init_weights=lstm_weights,
        gradflow_step=_stepper(lstm_dynamic_graph),
        torch_model=torch_lstm, torch_label="torch nn.LSTM", gpu_label="PyTorch nn.LSTM",
        torch_peer=None, peer_label=None,
        reference=static_lstm_step, reference_label="gradflow static (lstm_step)"),
    "LSTM peephole": types.SimpleNamespace(
        group="LSTM peep", init_weights=lstm_weights,
        gradflow_step=_stepper(lstm_peephole_graph),
        torch_model=torch_lstm, torch_label="torch nn.LSTM (no peepholes)",
        gpu_label="PyTorch nn.LSTM (no peepholes)", torch_peer=None, peer_label=None,
        reference=static_lstm_step, reference_label="gradflow LSTM (no peepholes)",
        same_after_steps=False),
    "biLSTM dynamic": types.SimpleNamespace(
        group="biLSTM dyn", init_weights=bilstm_weights,
        gradflow_step=_stepper(bilstm_dynamic_graph),
        torch_model=torch_bilstm, torch_label="torch nn.LSTM(bidirectional)",
        gpu_label="PyTorch nn.LSTM bidir", torch_peer=None, peer_label=None,
        reference=_stepper(bilstm_graph), reference_label="gradflow static (biLSTM)"),
}


def _has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _failed(label, err):
    """The FAILED line of a row and the last lines of its traceback."""
    tail = traceback.format_exception(type(err), err, err.__traceback__)
    lines = "".join(tail).rstrip().splitlines()[-6:]
    print(f"  {label:36s} FAILED: {type(err).__name__}: {err}")
    print("\n".join("      " + line for line in lines))


def model_steps(model, x, y, backend="numpy", peers=()):
    """``({row: step or None (failed)}, {row: first loss})`` of one model on the CPU, the
    gradflow row first; each step has run once. ``peers``: ``rnn_peers``' rows to add."""
    weights = model.init_weights()
    makers = {f"gradflow ({backend})":
              lambda: model.gradflow_step(weights, x, y, backend)[:2]}
    if model.reference is not None:
        makers[model.reference_label] = \
            lambda: model.reference(weights, x, y, backend)[:2]
    if _has_torch():
        makers[model.torch_label] = lambda: torch_step(model.torch_model(weights), x, y)
        if model.torch_peer is not None:
            makers[model.peer_label] = lambda: torch_step(model.torch_peer(weights), x, y)
    if model.group in rnn_peers.PEER_MODELS:
        makers.update(rnn_peers.peer_makers(weights, x, y, peers))
    steps, losses = {}, {}
    for label, make in makers.items():
        try:
            step, losses[label] = make()
            step()
            steps[label] = step
        except Exception as err:  # one failed row must not end the run
            _failed(label, err)
            steps[label] = None
    return steps, losses


def check_losses(name, model, losses):
    """Print the first losses of the same-weights rows against gradflow's; returns the
    largest relative difference (None with fewer than two)."""
    same = {k: v for k, v in losses.items() if k != model.peer_label}
    gf_label = next((k for k in same if k.startswith("gradflow (")), None)
    if gf_label is None or len(same) < 2:
        return None
    first = same[gf_label]
    worst = max(abs(v - first) / abs(first) for v in same.values())
    text = ", ".join(f"{k} {v:.6f}" for k, v in same.items())
    verdict = "agree" if worst <= AGREE else "DIFFER"
    print(f"{name}: first loss {text}: {verdict} (largest relative difference {worst:.1e})")
    return worst


def cpu_rows(seconds, backend="numpy", only=None, peers=None):
    """Every model's gradflow step and its peers, timed on the CPU in one process with
    the rows taking turns (``time_ms_each``); prints ms/step and gradflow / each row.
    ``peers``: TF/JAX rows (default: those installed). Returns ``{model: {row: ms or
    None}}``."""
    x, y = make_data()
    if peers is None:
        peers = rnn_peers.installed()
    per_model, timed = {}, {}
    for name, model in MODELS.items():
        if only and name not in only:
            continue
        steps, losses = model_steps(model, x, y, backend, peers)
        check_losses(name, model, losses)
        per_model[name] = list(steps)
        timed.update({(name, row): step for row, step in steps.items() if step is not None})
    load = OtherLoad()
    results = time_ms_each(timed, seconds)
    cores = load.cores()
    print(f"recurrent models: vocab {VOCAB}, embed {EMBED}, hidden {HIDDEN}, {STEPS} steps, "
          f"batch {BATCH}, Adam, float32, best of 5 rounds; other processes used "
          f"{'?' if cores is None else f'{cores:.2f}'} cores meanwhile")
    table = {}
    for name, rows in per_model.items():
        ms = {row: results.get((name, row)) for row in rows}
        table[name] = ms
        t_gf = ms[rows[0]]
        for row, t in ms.items():
            if t is None:
                print(f"  {name:13s} {row:36s}   FAILED")
                continue
            ratio = "    -" if t_gf is None else f"{t_gf / t:5.2f}"
            print(f"  {name:13s} {row:36s} {t:8.2f} ms/step   gf/this {ratio}")
    return table


def gpu_rows(gpu_module, seconds, compile_too, only=None):
    """The models' CUDA rows through ``benchmarks/gpu.py`` (``rnn_models_gpu.gpu_rows``)."""
    import rnn_models_gpu

    rnn_models_gpu.gpu_rows(sys.modules[__name__], gpu_module, seconds, compile_too, only)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per row")
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads (NumPy, torch)")
    parser.add_argument("--only", nargs="+", default=None, metavar="MODEL",
                        help=f"some of {', '.join(MODELS)} (case and spaces ignored)")
    parser.add_argument("--gpu", action="store_true",
                        help="the CUDA rows of benchmarks/gpu.py's kind instead (cupy)")
    parser.add_argument("--skip-compile", action="store_true", help="--gpu: no torch.compile")
    parser.add_argument("--plan", action="store_true", help="plan steps by op kind instead")
    rnn_peers.add_argument(parser)
    args = parse_args(parser, argv)
    pin_torch_threads(args.threads)
    rnn_peers.pin_threads(args.threads)
    only = None
    if args.only:
        keys = {k.lower().replace(" ", ""): k for k in MODELS}
        wanted = [keys.get(w.lower().replace(" ", "")) for w in args.only]
        if None in wanted:
            parser.error(f"--only: choose from {', '.join(MODELS)}")
        only = set(wanted)
    if args.plan:  # each model's plan steps by op kind (benchmarks/plan_steps.py)
        return plan_steps.print_plans(sys.modules[__name__], args.backend, only)
    if args.gpu:
        return _main_gpu(args, only)
    if not _has_torch():
        print("torch is not installed: no PyTorch rows")
    return cpu_rows(args.seconds, args.backend, only, rnn_peers.installed(args.peers))


def _main_gpu(args, only):
    import rnn_models_gpu

    return rnn_models_gpu.main_gpu(sys.modules[__name__], args, only)


if __name__ == "__main__":
    main()
