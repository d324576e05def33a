"""Per-op overhead of Session.run against direct NumPy calls and PyTorch eager.

A chain of 400 small elementwise ops (float32, 16 elements: ``x = x * 1.0001 +
0.0001`` 200 times). Reports microseconds per op and the ratios to NumPy called
directly, all taken in this one process, for gradflow with its compiler passes
(the default) and without them (``Session(optimize=False)``), plus the time to
build, differentiate and compile a graph of about 2,000 nodes.

    python benchmarks/overhead.py [--backend numpy] [--repeat 2000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import gradflow as gf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import OtherLoad  # noqa: E402

CHAIN = 200  # multiply + add per link: 400 ops
SIZE = 16


def best_per_op(fn, repeat, ops):
    """The fastest of several timing rounds, in microseconds per op."""
    best = float("inf")
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return best / ops * 1e6


def numpy_direct(x0):
    mul, add = np.multiply, np.add
    a, b = np.float32(1.0001), np.float32(0.0001)
    consts = [(np.asarray(a), np.asarray(b)) for _ in range(CHAIN)]

    def run():
        x = x0
        for ca, cb in consts:
            x = add(mul(x, ca), cb)
        return x

    return run


def torch_eager(x0):
    import torch

    x0 = torch.from_numpy(x0)

    def run():
        with torch.no_grad():
            x = x0
            for _ in range(CHAIN):
                x = x * 1.0001 + 0.0001
        return x

    return run


def gradflow_run(x0, backend, gf=gf, optimize=True):
    """The chain as one Session.run; ``gf`` may be another gradflow version (so
    ``optimize`` reaches the Session only when False)."""
    graph = gf.Graph()
    with graph.as_default():
        x_in = gf.placeholder(gf.float32, (SIZE,))
        x = x_in
        for _ in range(CHAIN):
            x = x * 1.0001 + 0.0001
    options = {} if optimize else {"optimize": False}
    sess = gf.Session(graph=graph, backend=backend, **options)
    sess.run(x, {x_in: x0})
    return lambda: sess.run(x, {x_in: x0})


def build_time():
    """Seconds to build a ~2,000-node graph, differentiate it, and compile both."""
    start = time.perf_counter()
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, (None, 32))
        h = x
        for i in range(66):
            w = gf.Variable(np.full((32, 32), 0.01, np.float32), name=f"w{i}")
            h = gf.tanh(h @ w + 0.1) * 0.5 + h * 0.5
        loss = gf.reduce_mean(gf.square(h))
        built = time.perf_counter()
        grads = gf.gradients(loss, gf.trainable_variables())
        differentiated = time.perf_counter()
    sess = gf.Session(graph=graph)
    sess.run([loss] + grads, {x: np.ones((4, 32), np.float32)})
    compiled = time.perf_counter()
    return len(graph.nodes), built - start, differentiated - built, compiled - differentiated


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args(argv)
    x0 = np.linspace(0, 1, SIZE, dtype=np.float32)
    ops = 2 * CHAIN
    load = OtherLoad()
    results = {"numpy direct": best_per_op(numpy_direct(x0), args.repeat, ops)}
    try:
        results["torch eager"] = best_per_op(torch_eager(x0), args.repeat // 4, ops)
    except ImportError:
        pass
    name = args.backend or gf.backends.default_name()
    results[f"gradflow ({name})"] = best_per_op(gradflow_run(x0, args.backend), args.repeat, ops)
    results[f"gradflow ({name}, optimize=False)"] = best_per_op(
        gradflow_run(x0, args.backend, optimize=False), args.repeat, ops)
    base = results["numpy direct"]
    print(f"chain of {ops} elementwise ops on {SIZE} float32 elements")
    for label, us in results.items():
        print(f"  {label:34s} {us:6.3f} us/op   {us / base:5.2f}x numpy direct")
    others = load.cores()
    if others is not None:
        print(f"  (other processes kept {others:.2f} cores busy meanwhile; above 0.1: disturbed)")
    nodes, t_build, t_grad, t_compile = build_time()
    print(f"graph of {nodes} nodes (with its gradient): build {t_build * 1e3:.1f} ms, "
          f"differentiate {t_grad * 1e3:.1f} ms, compile {t_compile * 1e3:.1f} ms")
    return results


if __name__ == "__main__":
    main()
