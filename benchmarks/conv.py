"""Convolutions, pass by pass, and the TF1 deep-MNIST training step: gradflow against PyTorch.

Each row is one convolution (float32, NHWC for gradflow, NCHW for PyTorch, its
native layout) and one pass: the forward pass, the gradient in the input and the
gradient in the filter, each run alone (gradflow: a Session fetching that one
tensor; PyTorch: ``conv2d`` and ``aten.convolution_backward`` with one output).
Every row is measured twice, on the machine as it is ("quiet") and with one
CPU-bound process started beside it ("loaded"), the two contenders taking turns
round after round in one process. Each row gives milliseconds, the ratio
gradflow / PyTorch, and gradflow's GFLOP/s beside the machine's GEMM GFLOP/s (a
1024^3 float32 NumPy product measured in the same state). ``load`` is
``os.getloadavg()[0]`` and ``others`` the cores other processes used while the
row was timed (``timing.OtherLoad``), both for the loaded state.

Then the deep-MNIST network of TF1's tutorial (5x5 SAME convs 1 -> 32 -> 64, max
pool, dense 3136 -> 1024, dropout 0.5, dense 10, Adam) as training steps from the
same weights. TensorFlow is measured where it is installed; here it is not.

    python benchmarks/conv.py [--seconds S] [--rows 5x5 ...] [--batches 50 128]
                              [--skip-network] [--skip-rows] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from timing import OtherLoad, pin_threads_from_argv, pin_torch_threads, time_ms_each  # noqa: E402

pin_threads_from_argv()

import gradflow as gf  # noqa: E402

# name: (batch, size, kernel, in channels, out channels, stride, padding)
SHAPES = {
    "5x5 1->32 28x28": (128, 28, 5, 1, 32, 1, "SAME"),
    "5x5 32->64 14x14": (128, 14, 5, 32, 64, 1, "SAME"),
    "5x5 32->64 14x14 b1": (1, 14, 5, 32, 64, 1, "SAME"),
    "5x5 32->64 VALID": (128, 14, 5, 32, 64, 1, "VALID"),
    "3x3 3->64 32x32": (64, 32, 3, 3, 64, 1, "SAME"),
    "3x3 64->64 16x16": (64, 16, 3, 64, 64, 1, "SAME"),
    "3x3 64->128 s2": (64, 16, 3, 64, 128, 2, "SAME"),
    "1x1 64->128 16x16": (64, 16, 1, 64, 128, 1, "SAME"),
    "7x7 3->64 s2 64x64": (32, 64, 7, 3, 64, 2, "SAME"),
}
PASSES = ("forward", "input grad", "filter grad")


@contextlib.contextmanager
def cpu_bound_neighbour(count):
    """``count`` processes spinning on a core each, for the loaded measurements."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def timed(steps, seconds, load):
    """``time_ms_each(steps)`` with ``load`` neighbours, and the load seen meanwhile."""
    with cpu_bound_neighbour(load):
        other = OtherLoad()
        times = time_ms_each(steps, seconds)
        return times, other.cores(), os.getloadavg()[0]


def gemm_gflops(seconds):
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    ms = time_ms_each({"gemm": lambda: a @ a}, seconds)["gemm"]
    return 2 * 1024 ** 3 / ms / 1e6


def gradflow_passes(x, w, g, stride, padding):
    graph = gf.Graph()
    with graph.as_default():
        xp = gf.placeholder(gf.float32, x.shape)
        gp = gf.placeholder(gf.float32, g.shape)
        wv = gf.Variable(w)
        y = gf.nn.conv2d(xp, wv, stride, padding)
        dx, dw = gf.gradients(y, [xp, wv], grad_ys=gp)
        init = gf.global_variables_initializer()
    sess = gf.Session(graph=graph)
    sess.run(init)
    return {"forward": lambda: sess.run(y, {xp: x}),
            "input grad": lambda: sess.run(dx, {xp: x, gp: g}),
            "filter grad": lambda: sess.run(dw, {xp: x, gp: g})}


def torch_passes(torch, x, w, g, stride, padding):
    kh = w.shape[0]
    pad = [0, 0] if padding == "VALID" else [(kh - 1) // 2] * 2
    tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    tw = torch.from_numpy(np.ascontiguousarray(w.transpose(3, 2, 0, 1)))
    tg = torch.from_numpy(np.ascontiguousarray(g.transpose(0, 3, 1, 2)))
    back = torch.ops.aten.convolution_backward

    def grad(mask):
        with torch.no_grad():
            return back(tg, tx, tw, None, [stride] * 2, pad, [1, 1], False, [0, 0], 1, mask)

    def forward():
        with torch.no_grad():
            return torch.nn.functional.conv2d(tx, tw, stride=stride, padding=pad)

    return {"forward": forward, "input grad": lambda: grad([True, False, False]),
            "filter grad": lambda: grad([False, True, False])}


def conv_rows(torch, names, seconds):
    rng = np.random.default_rng(0)
    print("| shape | pass | state | load | others | gradflow ms | torch ms | gf / torch "
          "| gf GFLOP/s | GEMM GFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        n, size, k, c, co, s, padding = SHAPES[name]
        out = -(-size // s) if padding == "SAME" else (size - k) // s + 1
        x = rng.standard_normal((n, size, size, c), dtype=np.float32)
        w = rng.standard_normal((k, k, c, co), dtype=np.float32) * 0.1
        g = rng.standard_normal((n, out, out, co), dtype=np.float32)
        flops = 2 * n * out * out * k * k * c * co
        ours = gradflow_passes(x, w, g, s, padding)
        theirs = torch_passes(torch, x, w, g, s, padding)
        for load, state in ((0, "quiet"), (1, "loaded")):
            gemm = gemm_gflops(seconds / 2)
            for p in PASSES:
                times, others, avg = timed({"gf": ours[p], "torch": theirs[p]}, seconds, load)
                others = "?" if others is None else f"{others:.2f}"
                print(f"| {name} | {p} | {state} | {avg:.1f} | {others} | {times['gf']:.2f} "
                      f"| {times['torch']:.2f} | {times['gf'] / times['torch']:.2f} "
                      f"| {flops / times['gf'] / 1e6:.0f} | {gemm:.0f} |", flush=True)


def deep_mnist_weights(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for shape in [(5, 5, 1, 32), (5, 5, 32, 64), (3136, 1024), (1024, 10)]:
        out.append(rng.normal(0, 0.1, shape).astype(np.float32))  # the tutorial's init
        out.append(np.full(shape[-1], 0.1, np.float32))
    return out


def gradflow_deep_mnist(weights, x, y):
    graph = gf.Graph()
    with graph.as_default():
        xp = gf.placeholder(gf.float32, (None, 28, 28, 1))
        yp = gf.placeholder(gf.int64, (None,))
        k1, b1, k2, b2, w3, b3, w4, b4 = [gf.Variable(v) for v in weights]
        h = gf.nn.relu(gf.nn.conv2d(xp, k1, [1, 1, 1, 1], "SAME") + b1)
        h = gf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        h = gf.nn.relu(gf.nn.conv2d(h, k2, [1, 1, 1, 1], "SAME") + b2)
        h = gf.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "SAME")
        h = gf.nn.relu(gf.matmul(gf.reshape(h, [-1, 3136]), w3) + b3)
        logits = gf.matmul(gf.nn.dropout(h, keep_prob=0.5), w4) + b4
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=yp, logits=logits))
        train = gf.train.AdamOptimizer(1e-4).minimize(loss)
        init = gf.global_variables_initializer()
    sess = gf.Session(graph=graph)
    sess.run(init)
    return lambda: sess.run(train, {xp: x, yp: y})


def torch_deep_mnist(torch, weights, x, y):
    f = torch.nn.functional
    k1, b1, k2, b2, w3, b3, w4, b4 = weights
    params = [torch.tensor(np.ascontiguousarray(v.transpose(3, 2, 0, 1)) if v.ndim == 4
                           else v, requires_grad=True)
              for v in (k1, b1, k2, b2, w3, b3, w4, b4)]
    opt = torch.optim.Adam(params, lr=1e-4)
    tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    ty = torch.from_numpy(y)

    def step():
        k1, b1, k2, b2, w3, b3, w4, b4 = params
        h = f.max_pool2d(f.relu(f.conv2d(tx, k1, b1, padding=2)), 2)
        h = f.max_pool2d(f.relu(f.conv2d(h, k2, b2, padding=2)), 2)
        h = f.relu(h.permute(0, 2, 3, 1).reshape(-1, 3136) @ w3 + b3)  # NHWC order, as TF1
        loss = f.cross_entropy(f.dropout(h, 0.5) @ w4 + b4, ty)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def network_rows(torch, batches, seconds):
    print("\n| deep-MNIST step | state | load | others | gradflow ms | torch ms | gf / torch |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for batch in batches:
        x = rng.random((batch, 28, 28, 1), dtype=np.float32)
        y = rng.integers(0, 10, batch).astype(np.int64)
        weights = deep_mnist_weights()
        steps = {"gf": gradflow_deep_mnist(weights, x, y),
                 "torch": torch_deep_mnist(torch, weights, x, y)}
        for load, state in ((0, "quiet"), (1, "loaded")):
            times, others, avg = timed(steps, seconds * 2, load)
            others = "?" if others is None else f"{others:.2f}"
            print(f"| batch {batch} | {state} | {avg:.1f} | {others} | {times['gf']:.1f} "
                  f"| {times['torch']:.1f} | {times['gf'] / times['torch']:.2f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per contender")
    parser.add_argument("--rows", nargs="*", default=None,
                        help="shape names (prefixes) of SHAPES to run; default all")
    parser.add_argument("--batches", type=int, nargs="*", default=[50, 128])
    parser.add_argument("--skip-network", action="store_true")
    parser.add_argument("--skip-rows", action="store_true")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS and PyTorch threads (gradflow's count then stays at most this)")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("benchmarks/conv.py compares against PyTorch: pip install torch")
    pin_torch_threads(args.threads)
    try:
        import tensorflow  # noqa: F401
        print("TensorFlow is installed, but this script does not time it yet")
    except ImportError:
        print("TensorFlow is not installed: no TensorFlow column")
    from gradflow.backends import threads

    threads.refresh()
    print(f"cores allowed: {threads.allowed_cores()}, GRADFLOW_THREADS="
          f"{os.environ.get('GRADFLOW_THREADS', 'auto')}, torch threads: "
          f"{torch.get_num_threads()}, load before: {os.getloadavg()[0]:.1f}\n")
    names = [n for n in SHAPES if args.rows is None or any(n.startswith(r) for r in args.rows)]
    if not args.skip_rows:
        conv_rows(torch, names, args.seconds)
    if not args.skip_network:
        network_rows(torch, args.batches, args.seconds)


if __name__ == "__main__":
    main()
