"""One MNIST MLP training step (784-512-512-10, ReLU, softmax cross-entropy, Adam, float32).

gradflow against a hand-written NumPy forward/backward/Adam of the same model
and against PyTorch eager on the CPU, at several batch sizes, in one process.
Reports milliseconds per step and the ratios.

    python benchmarks/mnist_mlp.py [--backend numpy] [--threads N] [--batches 32 128 1024]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import pin_threads_from_argv, pin_torch_threads, time_ms  # noqa: E402

pin_threads_from_argv()

import numpy as np  # noqa: E402

import gradflow as gf  # noqa: E402

SIZES = (784, 512, 512, 10)


def init_weights(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        out.append(rng.normal(0, np.sqrt(2 / fan_in), (fan_in, fan_out)).astype(np.float32))
        out.append(np.zeros(fan_out, np.float32))
    return out


def gradflow_step(weights, x, y, backend, gf=gf):
    """One Adam step of the MLP as a function; ``gf`` may be another gradflow version
    (benchmarks/compare_revisions.py)."""
    graph = gf.Graph()
    with graph.as_default():
        xp = gf.placeholder(gf.float32, (None, 784))
        yp = gf.placeholder(gf.int64, (None,))
        params = [gf.Variable(w) for w in weights]
        h = xp
        for i in range(0, len(params), 2):
            h = gf.matmul(h, params[i]) + params[i + 1]
            if i + 2 < len(params):
                h = gf.nn.relu(h)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp, logits=h))
        train = gf.train.AdamOptimizer(1e-3).minimize(loss)
    sess = gf.Session(graph=graph, backend=backend)
    feed = {xp: x, yp: y}
    return lambda: sess.run(train, feed)


def numpy_step(weights, x, y):
    """The same model written by hand, with in-place Adam updates."""
    params = [w.copy() for w in weights]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    state = {"t": 0}
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 1e-3
    onehot = np.eye(10, dtype=np.float32)[y]

    def step():
        w1, c1, w2, c2, w3, c3 = params
        a1 = x @ w1 + c1
        h1 = np.maximum(a1, 0)
        a2 = h1 @ w2 + c2
        h2 = np.maximum(a2, 0)
        logits = h2 @ w3 + c3
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        probs = e / e.sum(axis=1, keepdims=True)
        d3 = (probs - onehot) / len(x)
        g3, gc3 = h2.T @ d3, d3.sum(0)
        d2 = (d3 @ w3.T) * (a2 > 0)
        g2, gc2 = h1.T @ d2, d2.sum(0)
        d1 = (d2 @ w2.T) * (a1 > 0)
        g1, gc1 = x.T @ d1, d1.sum(0)
        state["t"] += 1
        t = state["t"]
        lr_t = float(lr * np.sqrt(1 - b2**t) / (1 - b1**t))  # a Python float keeps float32
        for p, g, mi, vi in zip(params, (g1, gc1, g2, gc2, g3, gc3), m, v):
            mi *= b1
            mi += (1 - b1) * g
            vi *= b2
            vi += (1 - b2) * g * g
            p -= lr_t * mi / (np.sqrt(vi) + eps)

    return step


def torch_step(weights, x, y):
    import torch

    layers = []
    for i in range(0, len(weights), 2):
        lin = torch.nn.Linear(*weights[i].shape)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(weights[i].T.copy()))
            lin.bias.copy_(torch.from_numpy(weights[i + 1]))
        layers += [lin, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()

    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads for NumPy and PyTorch (default: their own)")
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 128, 1024])
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args(argv)
    pin_torch_threads(args.threads)
    weights = init_weights()
    rng = np.random.default_rng(1)
    print(f"{'batch':>6} {'numpy':>9} {'torch':>9} {'gradflow':>9}  gf/numpy  gf/torch  (ms/step)")
    for batch in args.batches:
        x = rng.random((batch, 784), dtype=np.float32)
        y = rng.integers(0, 10, batch).astype(np.int64)
        t_np = time_ms(numpy_step(weights, x, y), args.seconds)
        try:
            t_torch = time_ms(torch_step(weights, x, y), args.seconds)
        except ImportError:
            t_torch = float("nan")
        t_gf = time_ms(gradflow_step(weights, x, y, args.backend), args.seconds)
        print(f"{batch:6d} {t_np:9.3f} {t_torch:9.3f} {t_gf:9.3f}  {t_gf / t_np:8.2f}"
              f"  {t_gf / t_torch:8.2f}")


if __name__ == "__main__":
    main()
