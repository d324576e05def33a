"""One training step of a char-level LSTM (vocab 65, hidden 128, 50 steps, batch 32, Adam).

float32, inputs by ``embedding_lookup`` of int ids, softmax cross-entropy over
every step. gradflow (``static_rnn`` of an ``LSTMCell``, with and without the
plan optimizations of ``Session(optimize=...)``) against a hand-written NumPy
step (``NumpyLSTM``: the same model, checked to give gradflow's first and second
losses), PyTorch eager on the CPU with ``torch.nn.LSTM`` and with an LSTM cell
loop of the same sizes, and where installed TensorFlow's ``dynamic_rnn`` (TF1
graph) and JAX's ``lax.scan`` under ``jit`` from the same weights (``rnn_peers.py``;
``--peers`` picks them), in one process. Reports milliseconds per step (the
rows timed in turn, round by round, so that a busy spell of a shared machine
hits them all) and the ratios, then the time to build, differentiate and
compile an LSTM unrolled 100 steps.

    python benchmarks/lstm_step.py [--backend numpy] [--seconds 2] [--threads N] [--peers tf jax]
    python benchmarks/lstm_step.py --profile [--optimize 0]   # time per op of the step

``--threads N`` sets the BLAS threads of NumPy (OPENBLAS/OMP/MKL_NUM_THREADS,
before NumPy loads), of PyTorch, and of TensorFlow and JAX (``rnn_peers.pin_threads``):
on a small or shared machine, many BLAS threads make these small matmuls
(32 x 192 x 512) far slower, not faster.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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
import op_profile  # noqa: E402  (it loads NumPy: after the threads are pinned)

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


def gradflow_step(weights, x, y, backend, optimize=True, session_options=None):
    """``(step, first loss, session, loss tensor, feed)`` of the gradflow model."""
    graph = gf.Graph()
    with graph.as_default():
        ids, targets, cell, loss = gradflow_model(STEPS, weights)
        kernel, bias = cell.trainable_variables
        init_ops = [kernel.assign(weights["kernel"]), bias.assign(weights["bias"])]
        train = gf.train.AdamOptimizer(1e-3).minimize(loss)
    sess = gf.Session(graph=graph, backend=backend, optimize=optimize, **(session_options or {}))
    sess.run(gf.variables_initializer(graph.get_collection("variables")))
    sess.run(init_ops)
    feed = {ids: x, targets: y}
    first_loss = float(sess.run(loss, feed))
    return (lambda: sess.run(train, feed)), first_loss, sess, loss, feed


class NumpyLSTM:
    """The same training step written by hand in NumPy, as tight as NumPy allows.

    Every array of the step is allocated once: the gates, cell states and
    outputs of all T steps, their gradients, the logits. The input projection
    ``x_t @ W_x + b`` of all T steps is one GEMM before the loop (only ``h @ W_h``
    runs per step), and so are the weight gradients after the backward loop
    (``X^T dZ``, ``H_prev^T dZ``). The gate nonlinearities run in place on the
    pre-activations (``sigmoid(x) = tanh(x / 2) / 2 + 1/2``, one ``tanh`` for all
    four blocks, whose scale and shift are folded into a scaled copy of the kernel
    and bias made once per step); the backward ``dz @ W_h^T`` runs as
    ``(W_h @ dz^T)^T``, which OpenBLAS does faster at these sizes. The parameters,
    their gradients and Adam's moments are each one flat float32 vector (the
    weights are views into it), so Adam is a handful of in-place passes over one
    array. ``step()`` returns the loss before its update.
    """

    def __init__(self, weights, x, y, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                 forget_bias=1.0):
        f32 = np.float32
        t_, b_, e_, h_, v_ = STEPS, x.shape[0], EMBED, HIDDEN, VOCAB
        n = t_ * b_
        shapes = {k: w.shape for k, w in weights.items()}
        sizes = {k: int(np.prod(s)) for k, s in shapes.items()}
        total = sum(sizes.values())
        self.flat = np.empty(total, f32)
        self.grad = np.empty(total, f32)
        self.m, self.v = np.zeros(total, f32), np.zeros(total, f32)
        self.p, self.g = {}, {}
        start = 0
        for k in weights:
            end = start + sizes[k]
            self.p[k] = self.flat[start:end].reshape(shapes[k])
            self.g[k] = self.grad[start:end].reshape(shapes[k])
            self.p[k][...] = weights[k]
            start = end
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.t = 0
        self.ids = np.ascontiguousarray(x.T).reshape(-1)  # time-major rows: t * batch + b
        self.targets = np.ascontiguousarray(y.T).reshape(-1)
        self.rows = np.arange(n)
        self.vocab = np.arange(v_)
        # pre-activations, then (in place) activated gates, of all steps
        self.gates = np.empty((t_, b_, 4 * h_), f32)
        self.cs = np.zeros((t_ + 1, b_, h_), f32)  # cs[0] = hs[0] = the zero state
        self.hs = np.zeros((t_ + 1, b_, h_), f32)
        self.tanh_c = np.empty((t_, b_, h_), f32)
        self.xs = np.empty((n, e_), f32)
        self.logits = np.empty((n, v_), f32)
        self.row_max = np.empty((n, 1), f32)
        self.row_sum = np.empty((n, 1), f32)
        self.d_gates = np.empty((t_, b_, 4 * h_), f32)
        self.d_hs = np.empty((t_, b_, h_), f32)
        self.d_xs = np.empty((n, e_), f32)
        self.one_hot = np.empty((n, v_), f32)
        self.dh = np.empty((b_, h_), f32)
        self.dc = np.empty((b_, h_), f32)
        self.tmp = np.empty((b_, h_), f32)
        self.rec = np.empty((b_, 4 * h_), f32)
        self.dh_t = np.empty((h_, b_), f32)
        self.kernel_scaled = np.empty((e_ + h_, 4 * h_), f32)
        self.bias_scaled = np.empty(4 * h_, f32)
        self.adam_tmp = np.empty(total, f32)
        half = np.full(4 * h_, 0.5, f32)
        self.scale, self.mul, self.add = half.copy(), half.copy(), half.copy()
        self.scale[h_:2 * h_] = self.mul[h_:2 * h_] = 1.0
        self.add[h_:2 * h_] = 0.0
        self.shift = np.zeros(4 * h_, f32)
        self.shift[2 * h_:3 * h_] = 0.5 * forget_bias
        self.j_mask = np.zeros(4 * h_, f32)
        self.j_mask[h_:2 * h_] = 1.0

    def forward(self):
        """The loss; leaves every activation in place for ``backward``."""
        p, h_ = self.p, HIDDEN
        np.multiply(p["kernel"], self.scale, out=self.kernel_scaled)  # z * scale + shift
        np.multiply(p["bias"], self.scale, out=self.bias_scaled)
        self.bias_scaled += self.shift
        w_x, w_h = self.kernel_scaled[:EMBED], self.kernel_scaled[EMBED:]
        np.take(p["emb"], self.ids, axis=0, out=self.xs)
        z_all = self.gates.reshape(-1, 4 * h_)
        np.matmul(self.xs, w_x, out=z_all)
        z_all += self.bias_scaled
        for t in range(STEPS):
            z = self.gates[t]
            np.matmul(self.hs[t], w_h, out=self.rec)
            z += self.rec
            np.tanh(z, out=z)
            z *= self.mul
            z += self.add
            c = self.cs[t + 1]
            np.multiply(z[:, 2 * h_:3 * h_], self.cs[t], out=c)
            np.multiply(z[:, :h_], z[:, h_:2 * h_], out=self.tmp)
            c += self.tmp
            np.tanh(c, out=self.tanh_c[t])
            np.multiply(z[:, 3 * h_:], self.tanh_c[t], out=self.hs[t + 1])
        logits = self.logits
        np.matmul(self.hs[1:].reshape(-1, h_), p["w_out"], out=logits)
        logits += p["b_out"]
        np.max(logits, axis=1, keepdims=True, out=self.row_max)
        logits -= self.row_max
        picked = logits[self.rows, self.targets]
        np.exp(logits, out=logits)
        np.sum(logits, axis=1, keepdims=True, out=self.row_sum)
        return float(np.mean(np.log(self.row_sum[:, 0]) - picked))

    def backward(self):
        """Every gradient, written into the flat gradient vector."""
        p, g, h_ = self.p, self.g, HIDDEN
        n = self.logits.shape[0]
        d_logits = self.logits  # softmax - one_hot, over n, in place
        self.row_sum *= n
        d_logits /= self.row_sum
        d_logits[self.rows, self.targets] -= 1.0 / n
        hs_all = self.hs[1:].reshape(-1, h_)
        np.matmul(hs_all.T, d_logits, out=g["w_out"])
        np.sum(d_logits, axis=0, out=g["b_out"])
        np.matmul(d_logits, p["w_out"].T, out=self.d_hs.reshape(-1, h_))
        w_h = p["kernel"][EMBED:]
        dh, dc, tmp = self.dh, self.dc, self.tmp
        dh[...] = 0.0
        dc[...] = 0.0
        for t in range(STEPS - 1, -1, -1):
            a, da = self.gates[t], self.d_gates[t]
            tc = self.tanh_c[t]
            dh += self.d_hs[t]
            np.multiply(dh, tc, out=da[:, 3 * h_:])  # d o
            np.multiply(tc, tc, out=tmp)  # dc += dh o (1 - tanh(c)^2)
            np.subtract(1.0, tmp, out=tmp)
            tmp *= dh
            tmp *= a[:, 3 * h_:]
            dc += tmp
            np.multiply(dc, a[:, h_:2 * h_], out=da[:, :h_])  # d i
            np.multiply(dc, a[:, :h_], out=da[:, h_:2 * h_])  # d j
            np.multiply(dc, self.cs[t], out=da[:, 2 * h_:3 * h_])  # d f
            dc *= a[:, 2 * h_:3 * h_]  # dc_prev
            np.add(a, self.j_mask, out=self.rec)  # dz = da (1 - a)(a + m)
            da *= self.rec
            np.subtract(1.0, a, out=self.rec)
            da *= self.rec
            if t:
                np.matmul(w_h, da.T, out=self.dh_t)
                np.copyto(dh, self.dh_t.T)
        dz_all = self.d_gates.reshape(-1, 4 * h_)
        np.matmul(self.xs.T, dz_all, out=g["kernel"][:EMBED])
        np.matmul(self.hs[:-1].reshape(-1, h_).T, dz_all, out=g["kernel"][EMBED:])
        np.sum(dz_all, axis=0, out=g["bias"])
        np.matmul(dz_all, p["kernel"][:EMBED].T, out=self.d_xs)
        np.equal(self.ids[:, None], self.vocab[None, :], out=self.one_hot)
        np.matmul(self.one_hot.T, self.d_xs, out=g["emb"])

    def adam(self):
        """TF1's Adam on the flat vectors, in place."""
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        lr_t = self.lr * np.sqrt(1 - b2 ** self.t) / (1 - b1 ** self.t)
        grad, tmp = self.grad, self.adam_tmp
        self.m *= b1
        np.multiply(grad, 1 - b1, out=tmp)
        self.m += tmp
        self.v *= b2
        np.multiply(grad, grad, out=tmp)
        tmp *= 1 - b2
        self.v += tmp
        np.sqrt(self.v, out=tmp)
        tmp += self.eps
        np.divide(self.m, tmp, out=tmp)
        tmp *= lr_t
        self.flat -= tmp

    def step(self):
        """One training step; returns the loss before the update."""
        loss = self.forward()
        self.backward()
        self.adam()
        return loss


def torch_nn_model():
    """Embedding, ``nn.LSTM`` and the softmax layer as one ``torch.nn.Module`` (logits of
    every step, batch first)."""
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

    return Model()


def torch_nn_step(weights, x, y):
    import torch

    model = torch_nn_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(xt).reshape(-1, VOCAB), yt.reshape(-1)).backward()
        opt.step()

    return step


def torch_loop_step(weights, x, y, device="cpu"):
    """The same LSTM written as a cell loop in PyTorch eager, with the same weights."""
    import torch

    params = {k: torch.tensor(v, requires_grad=True, device=device) for k, v in weights.items()}
    opt = torch.optim.Adam(params.values(), lr=1e-3)
    xt = torch.from_numpy(x.astype(np.int64)).to(device)
    yt = torch.from_numpy(y.astype(np.int64)).to(device)
    targets = yt.t().reshape(-1)

    def loss_fn():
        emb, kernel, bias = params["emb"], params["kernel"], params["bias"]
        h = c = torch.zeros(x.shape[0], HIDDEN, device=device)
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


def profile_ops(weights, x, y, backend=None, optimize=True, steps=20):
    """Milliseconds per training step spent in each kind of op of the gradflow step, and
    outside the ops (``op_profile.profile_ops``: ``(wall ms, {op: (ms, calls per step)})``,
    medians over ``steps`` runs)."""
    return op_profile.profile_ops(
        lambda: gradflow_step(weights, x, y, backend, optimize=optimize)[0], backend, steps)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads for NumPy and PyTorch (default: their own)")
    parser.add_argument("--profile", action="store_true",
                        help="only print the time per op of the gradflow step")
    parser.add_argument("--optimize", type=int, default=1,
                        help="with --profile: Session(optimize=...) (default 1)")
    rnn_peers.add_argument(parser)
    args = parse_args(parser, argv)
    pin_torch_threads(args.threads)
    rnn_peers.pin_threads(args.threads)
    weights = init_weights()
    rng = np.random.default_rng(1)
    x = rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32)
    y = rng.integers(0, VOCAB, (BATCH, STEPS)).astype(np.int32)
    name = args.backend or gf.backends.default_name()
    if args.profile:
        op_profile.print_profile(*profile_ops(weights, x, y, args.backend, bool(args.optimize)))
        return None
    gf_step, gf_loss, gf_sess, gf_loss_t, gf_feed = gradflow_step(weights, x, y, args.backend)
    raw_step, raw_loss, *_ = gradflow_step(weights, x, y, args.backend, optimize=False)
    reference = NumpyLSTM(weights, x, y)
    np_loss = reference.step()
    gf_step()  # one Adam step each: the second losses check the gradients and the update
    np_loss2, gf_loss2 = reference.forward(), float(gf_sess.run(gf_loss_t, gf_feed))
    print(f"first loss: gradflow {gf_loss:.6f} (optimize=False {raw_loss:.6f}), "
          f"NumPy reference {np_loss:.6f}; after one step: gradflow {gf_loss2:.6f}, "
          f"NumPy reference {np_loss2:.6f}")
    for what, a, b in (("first", gf_loss, np_loss), ("first (optimize=False)", raw_loss, np_loss),
                       ("second", gf_loss2, np_loss2)):
        if not abs(a - b) <= 1e-5 * abs(b):
            raise SystemExit(f"the NumPy reference's {what} loss {b!r} differs from "
                             f"gradflow's {a!r}")
    steps = {}
    try:
        import torch  # noqa: F401

        loop_step, torch_loss = torch_loop_step(weights, x, y)
        print(f"first loss: torch cell loop {torch_loss:.6f}")
        steps["torch nn.LSTM"] = torch_nn_step(weights, x, y)
        steps["torch cell loop"] = loop_step
    except ImportError:
        print("torch is not installed: no PyTorch rows")
    rnn_peers.add_rows(steps, weights, x, y, rnn_peers.installed(args.peers), gf_loss)
    label = f"gradflow ({name})"
    steps["NumPy by hand"] = reference.step
    steps[f"{label} optimize=False"] = raw_step
    steps[label] = gf_step
    load = OtherLoad()
    results = time_ms_each(steps, args.seconds)  # rounds in turn: a busy spell hits all
    cores = load.cores()
    t_gf = results[label]
    print(f"char LSTM: vocab {VOCAB}, embed {EMBED}, hidden {HIDDEN}, {STEPS} steps, "
          f"batch {BATCH}, Adam, float32; other processes used "
          f"{'?' if cores is None else f'{cores:.2f}'} cores meanwhile")
    for row, ms in results.items():
        print(f"  {row:34s} {ms:8.2f} ms/step   gf/this {t_gf / ms:5.2f}")
    fwd, total, t_build, t_diff, t_compile = build_time(100, args.backend)
    print(f"LSTM unrolled 100 steps: {fwd} forward nodes, {total} with gradient and Adam; "
          f"build {t_build * 1e3:.0f} ms, differentiate {t_diff * 1e3:.0f} ms, "
          f"compile+first run {t_compile * 1e3:.0f} ms")
    return results


if __name__ == "__main__":
    main()
