"""One training step of a char-level LSTM (vocab 65, hidden 128, 50 steps, batch 32, Adam).

float32, inputs by ``embedding_lookup`` of int ids, softmax cross-entropy over
every step. gradflow (``static_rnn`` of an ``LSTMCell``) against PyTorch eager
on the CPU with ``torch.nn.LSTM`` and with a hand-written LSTM cell loop of the
same sizes, in one process. Reports milliseconds per step and the ratios,
then the time to build, differentiate and compile an LSTM unrolled 100 steps.

    python benchmarks/lstm_step.py [--backend numpy] [--seconds 2] [--threads N]

``--threads N`` sets the BLAS threads of NumPy (OPENBLAS/OMP/MKL_NUM_THREADS,
before NumPy loads) and of PyTorch: on a small or shared machine, many BLAS
threads make these small matmuls (32 x 192 x 512) far slower, not faster.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import pin_threads_from_argv, pin_torch_threads, time_ms  # noqa: E402

pin_threads_from_argv()

import numpy as np  # noqa: E402

import gradflow as gf  # noqa: E402

VOCAB, EMBED, HIDDEN, STEPS, BATCH = 65, 64, 128, 50, 32


def init_weights(seed=0):
    """Embedding, fused LSTM kernel [E + H, 4H] (gates i, j, f, o) and bias, softmax layer."""
    rng = np.random.default_rng(seed)
    limit = np.sqrt(6 / (EMBED + HIDDEN + 4 * HIDDEN))
    return {
        "emb": rng.normal(0, 1, (VOCAB, EMBED)).astype(np.float32),
        "kernel": rng.uniform(-limit, limit, (EMBED + HIDDEN, 4 * HIDDEN)).astype(np.float32),
        "bias": np.zeros(4 * HIDDEN, np.float32),
        "w_out": rng.normal(0, HIDDEN ** -0.5, (HIDDEN, VOCAB)).astype(np.float32),
        "b_out": np.zeros(VOCAB, np.float32),
    }


def gradflow_model(steps, weights=None):
    """The graph: ids and targets placeholders, the loss, and the Adam train op."""
    ids = gf.placeholder(gf.int32, (None, steps), name="ids")
    targets = gf.placeholder(gf.int32, (None, steps), name="targets")
    init = weights or init_weights()
    emb = gf.get_variable("emb", initializer=init["emb"])
    inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(steps)]
    cell = gf.nn.rnn_cell.LSTMCell(HIDDEN)
    outputs, state = gf.nn.static_rnn(cell, inputs, dtype=gf.float32)
    w_out = gf.get_variable("softmax/w", initializer=init["w_out"])
    b_out = gf.get_variable("softmax/b", initializer=init["b_out"])
    logits = gf.matmul(gf.concat(outputs, 0), w_out) + b_out  # time-major rows
    labels = gf.reshape(gf.transpose(targets), (-1,))
    loss = gf.reduce_mean(
        gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return ids, targets, cell, loss


def gradflow_step(weights, x, y, backend):
    graph = gf.Graph()
    with graph.as_default():
        ids, targets, cell, loss = gradflow_model(STEPS, weights)
        kernel, bias = cell.trainable_variables
        init_ops = [kernel.assign(weights["kernel"]), bias.assign(weights["bias"])]
        train = gf.train.AdamOptimizer(1e-3).minimize(loss)
    sess = gf.Session(graph=graph, backend=backend)
    sess.run(gf.variables_initializer(graph.get_collection("variables")))
    sess.run(init_ops)
    feed = {ids: x, targets: y}
    first_loss = float(sess.run(loss, feed))
    return (lambda: sess.run(train, feed)), first_loss, sess, loss, feed


def torch_nn_step(weights, x, y):
    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(VOCAB, EMBED)
            self.lstm = torch.nn.LSTM(EMBED, HIDDEN, batch_first=True)
            self.out = torch.nn.Linear(HIDDEN, VOCAB)

        def forward(self, ids):
            h, _ = self.lstm(self.emb(ids))
            return self.out(h)

    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(xt).reshape(-1, VOCAB), yt.reshape(-1)).backward()
        opt.step()

    return step


def torch_loop_step(weights, x, y):
    """The same LSTM written as a cell loop in PyTorch eager, with the same weights."""
    import torch

    params = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    opt = torch.optim.Adam(params.values(), lr=1e-3)
    xt, yt = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
    targets = yt.t().reshape(-1)

    def loss_fn():
        emb, kernel, bias = params["emb"], params["kernel"], params["bias"]
        h = c = torch.zeros(x.shape[0], HIDDEN)
        outputs = []
        for t in range(STEPS):
            z = torch.cat([emb[xt[:, t]], h], 1) @ kernel + bias
            i, j, f, o = z.chunk(4, 1)
            c = torch.sigmoid(f + 1.0) * c + torch.sigmoid(i) * torch.tanh(j)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        logits = torch.cat(outputs, 0) @ params["w_out"] + params["b_out"]
        return torch.nn.functional.cross_entropy(logits, targets)

    first_loss = float(loss_fn().detach())

    def step():
        opt.zero_grad()
        loss_fn().backward()
        opt.step()

    return step, first_loss


def build_time(steps=100, backend=None):
    """Seconds to build, differentiate (Adam minimize) and compile (first run) an LSTM
    unrolled ``steps`` steps, and the node counts."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, VOCAB, (BATCH, steps)).astype(np.int32)
    start = time.perf_counter()
    graph = gf.Graph()
    with graph.as_default():
        ids, targets, _, loss = gradflow_model(steps)
        built = time.perf_counter()
        forward_nodes = len(graph.nodes)
        train = gf.train.AdamOptimizer(1e-3).minimize(loss)
        differentiated = time.perf_counter()
        init = gf.global_variables_initializer()
    sess = gf.Session(graph=graph, backend=backend)
    sess.run(init)
    init_done = time.perf_counter()
    sess.run(train, {ids: x, targets: x})
    compiled = time.perf_counter()
    return (forward_nodes, len(graph.nodes), built - start, differentiated - built,
            compiled - init_done)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads for NumPy and PyTorch (default: their own)")
    args = parser.parse_args(argv)
    pin_torch_threads(args.threads)
    weights = init_weights()
    rng = np.random.default_rng(1)
    x = rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32)
    y = rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32)
    name = args.backend or gf.backends.default_name()
    gf_step, gf_loss, *_ = gradflow_step(weights, x, y, args.backend)
    results = {}
    try:
        import torch  # noqa: F401

        loop_step, torch_loss = torch_loop_step(weights, x, y)
        print(f"first loss: gradflow {gf_loss:.6f}, torch cell loop {torch_loss:.6f}")
        results["torch nn.LSTM"] = time_ms(torch_nn_step(weights, x, y), args.seconds)
        results["torch cell loop"] = time_ms(loop_step, args.seconds)
    except ImportError:
        print("torch is not installed: gradflow only")
    results[f"gradflow ({name})"] = time_ms(gf_step, args.seconds)
    t_gf = results[f"gradflow ({name})"]
    print(f"char LSTM: vocab {VOCAB}, embed {EMBED}, hidden {HIDDEN}, {STEPS} steps, "
          f"batch {BATCH}, Adam, float32")
    for label, ms in results.items():
        print(f"  {label:22s} {ms:8.2f} ms/step   gf/this {t_gf / ms:5.2f}")
    fwd, total, t_build, t_diff, t_compile = build_time(100, args.backend)
    print(f"LSTM unrolled 100 steps: {fwd} forward nodes, {total} with gradient and Adam; "
          f"build {t_build * 1e3:.0f} ms, differentiate {t_diff * 1e3:.0f} ms, "
          f"compile+first run {t_compile * 1e3:.0f} ms")
    return results


if __name__ == "__main__":
    main()
