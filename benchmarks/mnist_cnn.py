"""One MNIST CNN training step (the model of examples/mnist_cnn.py, Adam, float32).

conv 3x3x32 + ReLU, max-pool 2, conv 3x3x64 + ReLU, max-pool 2, dense 256 + ReLU,
dropout 0.5, dense 10, softmax cross-entropy. gradflow (with its graph compiler,
and with ``Session(optimize=False)``) against PyTorch eager on the CPU (NCHW, its
native layout), at several batch sizes, in one process; ``direct`` is gradflow with
its 3x3 convolutions on oneDNN's direct kernels instead of Winograd's blocks on
OpenMP's pool (``gf/direct``: what those blocks gain). The contenders take turns,
round after round, and each keeps its best round, so that a busy machine slows
them alike. Reports milliseconds per step and the ratios to PyTorch.

    python benchmarks/mnist_cnn.py [--backend numpy] [--threads N] [--batches 32 128]
                                   [--seconds S]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import parse_args, pin_threads_from_argv, pin_torch_threads, time_ms  # noqa: E402

pin_threads_from_argv()

import numpy as np  # noqa: E402

import gradflow as gf  # noqa: E402


def init_weights(seed=0):
    """HWIO conv filters and (in, out) dense matrices, He-normal, zero biases."""
    rng = np.random.default_rng(seed)
    shapes = [(3, 3, 1, 32), (3, 3, 32, 64), (7 * 7 * 64, 256), (256, 10)]
    out = []
    for shape in shapes:
        fan_in = int(np.prod(shape[:-1]))
        out.append(rng.normal(0, np.sqrt(2 / fan_in), shape).astype(np.float32))
        out.append(np.zeros(shape[-1], np.float32))
    return out


def gradflow_step(weights, x, y, backend, optimize=True, session_options=None):
    graph = gf.Graph()
    with graph.as_default():
        xp = gf.placeholder(gf.float32, (None, 28, 28, 1))
        yp = gf.placeholder(gf.int64, (None,))
        k1, b1, k2, b2, w3, b3, w4, b4 = [gf.Variable(w) for w in weights]
        h = gf.nn.relu(gf.nn.bias_add(gf.nn.conv2d(xp, k1, 1, "SAME"), b1))
        h = gf.nn.max_pool(h, 2, 2, "VALID")
        h = gf.nn.relu(gf.nn.bias_add(gf.nn.conv2d(h, k2, 1, "SAME"), b2))
        h = gf.nn.max_pool(h, 2, 2, "VALID")
        h = gf.nn.relu(gf.matmul(gf.reshape(h, (-1, 7 * 7 * 64)), w3) + b3)
        logits = gf.matmul(gf.nn.dropout(h, rate=0.5), w4) + b4
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp,
                                                                             logits=logits))
        train = gf.train.AdamOptimizer(1e-3).minimize(loss)
    sess = gf.Session(graph=graph, backend=backend, optimize=optimize, **(session_options or {}))
    feed = {xp: x, yp: y}
    return lambda: sess.run(train, feed)


def torch_model(weights):
    """The CNN (NCHW) as a ``torch.nn.Sequential`` holding ``weights`` (HWIO filters)."""
    import torch

    k1, b1, k2, b2, w3, b3, w4, b4 = weights
    conv1, conv2 = torch.nn.Conv2d(1, 32, 3, padding=1), torch.nn.Conv2d(32, 64, 3, padding=1)
    fc1, fc2 = torch.nn.Linear(7 * 7 * 64, 256), torch.nn.Linear(256, 10)
    with torch.no_grad():
        for conv, k, b in ((conv1, k1, b1), (conv2, k2, b2)):
            conv.weight.copy_(torch.from_numpy(k.transpose(3, 2, 0, 1).copy()))
            conv.bias.copy_(torch.from_numpy(b))
        # gradflow flattens NHWC, torch NCHW: permute the dense rows to match
        w3_nchw = w3.reshape(7, 7, 64, 256).transpose(2, 0, 1, 3).reshape(-1, 256)
        for fc, w, b in ((fc1, w3_nchw, b3), (fc2, w4, b4)):
            fc.weight.copy_(torch.from_numpy(w.T.copy()))
            fc.bias.copy_(torch.from_numpy(b))
    return torch.nn.Sequential(conv1, torch.nn.ReLU(), torch.nn.MaxPool2d(2), conv2,
                               torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), fc1,
                               torch.nn.ReLU(), torch.nn.Dropout(0.5), fc2)


def torch_step(weights, x, y):
    import torch

    model = torch_model(weights)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
    yt = torch.from_numpy(y)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()

    return step


def with_direct_3x3(step):
    """``step`` with its 3x3 convolutions on oneDNN's direct kernels instead of
    Winograd's blocks on OpenMP's pool (``numpy_conv_winograd.MIN_POOLED_BLOCKS`` out of
    reach while it runs): in the same process, so the ratio is that change's alone."""
    from gradflow.backends.numpy import conv_winograd as numpy_conv_winograd

    def run():
        keep = numpy_conv_winograd.MIN_POOLED_BLOCKS
        numpy_conv_winograd.MIN_POOLED_BLOCKS = 1 << 62
        try:
            step()
        finally:
            numpy_conv_winograd.MIN_POOLED_BLOCKS = keep

    return run


def best_ms(steps, seconds, rounds=5):
    """Milliseconds per call of each of ``steps`` (None: not available): they take
    turns for ``rounds`` rounds of ``seconds / rounds`` in all, each keeping its best."""
    best = [float("nan") if step is None else float("inf") for step in steps]
    share = seconds / rounds / max(1, sum(step is not None for step in steps))
    for _ in range(rounds):
        for k, step in enumerate(steps):
            if step is not None:
                best[k] = min(best[k], time_ms(step, share))
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads for NumPy and PyTorch (default: their own)")
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--seconds", type=float, default=6.0,
                        help="timing per batch size, shared by the contenders")
    args = parse_args(parser, argv)
    pin_torch_threads(args.threads)
    weights = init_weights()
    rng = np.random.default_rng(1)
    print(f"{'batch':>6} {'torch':>9} {'gradflow':>9} {'no-opt':>9} {'direct':>9}  gf/torch  "
          f"no-opt/torch  gf/direct  (ms/step; no-opt: Session(optimize=False); direct: "
          f"3x3 convolutions on oneDNN's direct kernels, not Winograd's pooled blocks)")
    for batch in args.batches:
        x = rng.random((batch, 28, 28, 1), dtype=np.float32)
        y = rng.integers(0, 10, batch).astype(np.int64)
        try:
            torch = torch_step(weights, x, y)
        except ImportError:
            torch = None
        t_torch, t_gf, t_plain, t_direct = best_ms(
            [torch, gradflow_step(weights, x, y, args.backend),
             gradflow_step(weights, x, y, args.backend, optimize=False),
             with_direct_3x3(gradflow_step(weights, x, y, args.backend))], args.seconds)
        print(f"{batch:6d} {t_torch:9.3f} {t_gf:9.3f} {t_plain:9.3f} {t_direct:9.3f}  "
              f"{t_gf / t_torch:8.2f}  {t_plain / t_torch:12.2f}  {t_gf / t_direct:9.2f}")


if __name__ == "__main__":
    main()
