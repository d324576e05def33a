"""Convolutions, pass by pass, and the TF1 deep-MNIST training step: gradflow against PyTorch.

Each row is one convolution (float32, in gradflow's NHWC or NCHW, NCHW for PyTorch,
its native layout) and one pass: the forward pass, the gradient in the input and the
gradient in the filter, each run alone (gradflow: a Session fetching that one
tensor as the backend's array; PyTorch: ``conv2d`` and ``aten.convolution_backward``
with one output; TensorFlow: a Session running the op).
Every row is measured twice, on the machine as it is ("quiet") and with one
CPU-bound process started beside it ("loaded"), the contenders taking turns
round after round in one process: quiet, the best of 5 rounds (the cost of the
work); loaded, the median of 9 (what a run typically gets beside the other process:
the best loaded round favours whichever library's share of the cores swings most,
``timing.time_ms_each``). Each row gives milliseconds, the ratio
gradflow / PyTorch, and gradflow's GFLOP/s beside the machine's GEMM GFLOP/s (a
1024^3 float32 NumPy product measured in the same state). ``load`` is
``os.getloadavg()[0]`` and ``others`` the cores other processes used while the
row was timed (``timing.OtherLoad``), both for the loaded state.

Then whole networks as training steps (Adam) from the same weights: the deep-MNIST
network of TF1's tutorial (5x5 SAME convs 1 -> 32 -> 64, max pool, dense 3136 ->
1024, dropout 0.5, dense 10), LeNet-5 (5x5 convs 1 -> 6 SAME and 6 -> 16 VALID,
tanh, average pooling, dense 400 -> 120 -> 84 -> 10) and the project's own CNN
(``benchmarks/mnist_cnn.py``: 3x3 convs 1 -> 32 -> 64, max pool, dense 256,
dropout). gradflow runs each conv row and network in NHWC and in NCHW
(``data_format="NCHW"``: between networks' layers the NHWC kernels with the layout
copies cancelled, and a lone convolution's passes as NCHW ops that oneDNN runs on the
NCHW arrays, ``gradflow.passes.conv_layouts``); PyTorch in NCHW.
TensorFlow 2.x (``tensorflow.compat.v1`` graph mode) is a third contender where it
is installed (``pip install -e ".[benchmark]"``), in the same format as each gradflow
row: a program written with ``data_format="NCHW"`` runs NCHW in both (TensorFlow's
CPU kernels take NCHW through oneDNN, at about twice the time of its NHWC).

    python benchmarks/conv.py [--seconds S] [--rows 5x5 ...] [--batches 50 128]
                              [--networks deep-MNIST LeNet-5 "MNIST CNN"]
                              [--formats NHWC NCHW] [--skip-network] [--skip-rows]
                              [--skip-tf] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from timing import (  # noqa: E402
    OtherLoad,
    parse_args,
    pin_threads_from_argv,
    pin_torch_threads,
    time_ms_each,
)

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


def timing_rule(load):
    """``time_ms_each``'s keyword arguments for a state with ``load`` neighbours: the
    best of 5 rounds quiet, the median of 9 loaded."""
    return {"rounds": 9, "stat": "median"} if load else {"rounds": 5, "stat": "best"}


def timed(steps, seconds, load):
    """``time_ms_each(steps)`` with ``load`` neighbours (``timing_rule``), and the load
    seen meanwhile."""
    with cpu_bound_neighbour(load):
        other = OtherLoad()
        times = time_ms_each(steps, seconds, **timing_rule(load))
        return times, other.cores(), os.getloadavg()[0]


def gemm_gflops(seconds, load):
    """GFLOP/s of a 1024^3 float32 NumPy product with ``load`` neighbours, OpenBLAS on
    every core the process may use (what the machine gives a GEMM in that state)."""
    from threadpoolctl import threadpool_limits

    from gradflow.backends.cpu import threads

    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    with threadpool_limits(threads.cores(), user_api="blas"), cpu_bound_neighbour(load):
        ms = time_ms_each({"gemm": lambda: a @ a}, seconds, **timing_rule(load))["gemm"]
    return 2 * 1024 ** 3 / ms / 1e6


def gradflow_passes(x, w, g, stride, padding, fmt="NHWC"):
    """The three passes as Session runs; ``x`` and ``g`` NHWC, fed in ``fmt``."""
    if fmt == "NCHW":
        x, g = (np.ascontiguousarray(a.transpose(0, 3, 1, 2)) for a in (x, g))
    graph = gf.Graph()
    with graph.as_default():
        xp = gf.placeholder(gf.float32, x.shape)
        gp = gf.placeholder(gf.float32, g.shape)
        wv = gf.Variable(w)
        y = gf.nn.conv2d(xp, wv, stride, padding, data_format=fmt)
        dx, dw = gf.gradients(y, [xp, wv], grad_ys=gp)
        init = gf.global_variables_initializer()
    sess = gf.Session(graph=graph)
    sess.run(init)
    # output="native": the arrays as computed, without Session.run's copy to fresh NumPy
    # arrays (5 ms of the 5x5 1 -> 32 forward row at batch 128); PyTorch returns its own
    # tensors and TensorFlow here fetches nothing
    return {"forward": lambda: sess.run(y, {xp: x}, output="native"),
            "input grad": lambda: sess.run(dx, {xp: x, gp: g}, output="native"),
            "filter grad": lambda: sess.run(dw, {xp: x, gp: g}, output="native")}


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


def tf_passes(tf, config, x, w, g, stride, padding, fmt="NHWC"):
    """The three passes in TensorFlow (``compat.v1`` graph mode); ``x`` and ``g`` NHWC,
    fed in ``fmt`` (TensorFlow's NCHW runs on the CPU through oneDNN too)."""
    if fmt == "NCHW":
        x, g = (np.ascontiguousarray(a.transpose(0, 3, 1, 2)) for a in (x, g))
    graph = tf.Graph()
    with graph.as_default():
        xp = tf.placeholder(tf.float32, x.shape)
        gp = tf.placeholder(tf.float32, g.shape)
        wv = tf.Variable(w)
        strides = [1, 1, stride, stride] if fmt == "NCHW" else [1, stride, stride, 1]
        y = tf.nn.conv2d(xp, wv, strides, padding, data_format=fmt)
        dx, dw = tf.gradients(y, [xp, wv], grad_ys=gp)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph, config=config)
    sess.run(init)
    return {"forward": lambda: sess.run(y.op, {xp: x}),
            "input grad": lambda: sess.run(dx.op, {xp: x, gp: g}),
            "filter grad": lambda: sess.run(dw.op, {xp: x, gp: g})}


def _ratios(times, formats):
    """The row cells of each gradflow format: its ms, its ratios to torch and to TF in the
    same format, and TF's ms (None where TF is not timed)."""
    for fmt in formats:
        ours, tf_ms = times[fmt], times.get("tf " + fmt)
        to_tf = "-" if tf_ms is None else f"{ours / tf_ms:.2f}"
        yield fmt, ours, f"{ours / times['torch']:.2f}", to_tf, tf_ms


def _ms(value):
    return "-" if value is None else f"{value:.2f}"


def conv_rows(torch, tf, names, formats, seconds):
    """Each shape and pass: gradflow in each of ``formats``, PyTorch and TensorFlow (where
    installed), taking turns in one process, quiet and loaded."""
    rng = np.random.default_rng(0)
    print("| shape | gf format | pass | state | load | others | gradflow ms | torch ms "
          "| tf ms | gf / torch | gf / tf | gf GFLOP/s | GEMM GFLOP/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        n, size, k, c, co, s, padding = SHAPES[name]
        out = -(-size // s) if padding == "SAME" else (size - k) // s + 1
        x = rng.standard_normal((n, size, size, c), dtype=np.float32)
        w = rng.standard_normal((k, k, c, co), dtype=np.float32) * 0.1
        g = rng.standard_normal((n, out, out, co), dtype=np.float32)
        flops = 2 * n * out * out * k * k * c * co
        contenders = {fmt: gradflow_passes(x, w, g, s, padding, fmt) for fmt in formats}
        contenders["torch"] = torch_passes(torch, x, w, g, s, padding)
        if tf is not None:
            for fmt in formats:
                contenders["tf " + fmt] = tf_passes(*tf, x, w, g, s, padding, fmt)
        for load, state in ((0, "quiet"), (1, "loaded")):
            gemm = gemm_gflops(seconds / 2, load)
            for p in PASSES:
                times, others, avg = timed({who: run[p] for who, run in contenders.items()},
                                           seconds, load)
                others = "?" if others is None else f"{others:.2f}"
                for fmt, ours, to_torch, to_tf, tf_ms in _ratios(times, formats):
                    print(f"| {name} | {fmt} | {p} | {state} | {avg:.1f} | {others} "
                          f"| {ours:.2f} | {times['torch']:.2f} | {_ms(tf_ms)} "
                          f"| {to_torch} | {to_tf} | {flops / ours / 1e6:.0f} | {gemm:.0f} |",
                          flush=True)


def deep_mnist_weights(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for shape in [(5, 5, 1, 32), (5, 5, 32, 64), (3136, 1024), (1024, 10)]:
        out.append(rng.normal(0, 0.1, shape).astype(np.float32))  # the tutorial's init
        out.append(np.full(shape[-1], 0.1, np.float32))
    return out


def lenet_weights(seed=0):
    """LeNet-5 on 28x28 MNIST: conv 5x5 1 -> 6 (SAME), conv 5x5 6 -> 16 (VALID), dense
    400 -> 120 -> 84 -> 10; Glorot-uniform, zero biases."""
    rng = np.random.default_rng(seed)
    out = []
    for shape in [(5, 5, 1, 6), (5, 5, 6, 16), (400, 120), (120, 84), (84, 10)]:
        fan_in, fan_out = int(np.prod(shape[:-1])), shape[-1] * int(np.prod(shape[:-2]))
        limit = np.sqrt(6 / (fan_in + fan_out))
        out.append(rng.uniform(-limit, limit, shape).astype(np.float32))
        out.append(np.zeros(shape[-1], np.float32))
    return out


def _graph_step(m, build, weights, x, y, lr, config=None):
    """One Adam step of ``build(xp, variables) -> logits`` in TF1 graph mode, written
    once for ``m`` = gradflow or ``tensorflow.compat.v1`` (``config``: TF's)."""
    graph = m.Graph()
    with graph.as_default():
        xp = m.placeholder(m.float32, (None,) + x.shape[1:])
        yp = m.placeholder(m.int64, (None,))
        logits = build(xp, [m.Variable(v) for v in weights])
        loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(
            labels=yp, logits=logits))
        train = m.train.AdamOptimizer(lr).minimize(loss)
        init = m.global_variables_initializer()
    sess = m.Session(graph=graph) if config is None else m.Session(graph=graph, config=config)
    sess.run(init)
    return lambda: sess.run(train, {xp: x, yp: y})


def _flat_nhwc(m, h, fmt):
    """``h`` flattened in NHWC order whatever its layout (the dense weights are NHWC's)."""
    if fmt == "NCHW":
        h = m.transpose(h, [0, 2, 3, 1])
    return m.reshape(h, [-1, int(np.prod(h.shape[1:]))])


def _windows(fmt):
    """TF1's ``[1, 1, 1, 1]`` and ``[1, 2, 2, 1]`` strides/ksize in ``fmt`` order."""
    return ([1, 1, 1, 1], [1, 1, 2, 2]) if fmt == "NCHW" else ([1, 1, 1, 1], [1, 2, 2, 1])


def _conv_layer(m, h, k, b, padding, fmt, act):
    one = _windows(fmt)[0]
    return act(m.nn.bias_add(m.nn.conv2d(h, k, one, padding, data_format=fmt), b,
                             data_format=fmt))


def _two_convs(m, weights, x, y, fmt, config, pool_padding, lr):
    """conv 5x5 or 3x3 (SAME) + ReLU, max-pool 2 (``pool_padding``), twice; dense + ReLU,
    dropout 0.5, dense 10."""
    def build(xp, variables):
        k1, b1, k2, b2, w3, b3, w4, b4 = variables
        two = _windows(fmt)[1]
        h = m.nn.max_pool(_conv_layer(m, xp, k1, b1, "SAME", fmt, m.nn.relu), two, two,
                          pool_padding, data_format=fmt)
        h = m.nn.max_pool(_conv_layer(m, h, k2, b2, "SAME", fmt, m.nn.relu), two, two,
                          pool_padding, data_format=fmt)
        h = m.nn.relu(m.matmul(_flat_nhwc(m, h, fmt), w3) + b3)
        return m.matmul(m.nn.dropout(h, keep_prob=0.5), w4) + b4

    return _graph_step(m, build, weights, x, y, lr, config)


def deep_mnist(m, weights, x, y, fmt="NHWC", config=None):
    """TF1's deep-MNIST tutorial network (5x5 convs, dense 1024)."""
    return _two_convs(m, weights, x, y, fmt, config, "SAME", 1e-4)


def mnist_cnn(m, weights, x, y, fmt="NHWC", config=None):
    """The project's CNN (``benchmarks/mnist_cnn.py``, ``examples/mnist_cnn.py``: 3x3
    convs, dense 256)."""
    return _two_convs(m, weights, x, y, fmt, config, "VALID", 1e-3)


def lenet(m, weights, x, y, fmt="NHWC", config=None):
    def build(xp, variables):
        k1, b1, k2, b2, w3, b3, w4, b4, w5, b5 = variables
        two = _windows(fmt)[1]
        h = m.nn.avg_pool(_conv_layer(m, xp, k1, b1, "SAME", fmt, m.tanh), two, two, "VALID",
                          data_format=fmt)
        h = m.nn.avg_pool(_conv_layer(m, h, k2, b2, "VALID", fmt, m.tanh), two, two, "VALID",
                          data_format=fmt)
        h = m.tanh(m.matmul(_flat_nhwc(m, h, fmt), w3) + b3)
        h = m.tanh(m.matmul(h, w4) + b4)
        return m.matmul(h, w5) + b5

    return _graph_step(m, build, weights, x, y, 1e-3, config)


def _torch_step(torch, weights, x, y, lr, forward):
    """One Adam step of ``forward(tx, params) -> logits`` in PyTorch (NCHW; HWIO filters
    transposed to OIHW)."""
    params = [torch.tensor(np.ascontiguousarray(v.transpose(3, 2, 0, 1)) if v.ndim == 4
                           else v, requires_grad=True) for v in weights]
    opt = torch.optim.Adam(params, lr=lr)
    tx = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    ty = torch.from_numpy(y)

    def step():
        loss = torch.nn.functional.cross_entropy(forward(tx, params), ty)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def _torch_flat_nhwc(h):
    return h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)  # NHWC order, as the weights


def _torch_two_convs(torch, weights, x, y, lr):
    """``_two_convs`` in PyTorch (SAME padding: half the filter's size)."""
    f = torch.nn.functional
    pad = weights[0].shape[0] // 2

    def forward(tx, params):
        k1, b1, k2, b2, w3, b3, w4, b4 = params
        h = f.max_pool2d(f.relu(f.conv2d(tx, k1, b1, padding=pad)), 2)
        h = f.max_pool2d(f.relu(f.conv2d(h, k2, b2, padding=pad)), 2)
        h = f.relu(_torch_flat_nhwc(h) @ w3 + b3)
        return f.dropout(h, 0.5) @ w4 + b4

    return _torch_step(torch, weights, x, y, lr, forward)


def torch_deep_mnist(torch, weights, x, y):
    return _torch_two_convs(torch, weights, x, y, 1e-4)


def torch_mnist_cnn(torch, weights, x, y):
    return _torch_two_convs(torch, weights, x, y, 1e-3)


def torch_lenet(torch, weights, x, y):
    f = torch.nn.functional

    def forward(tx, params):
        k1, b1, k2, b2, w3, b3, w4, b4, w5, b5 = params
        h = f.avg_pool2d(torch.tanh(f.conv2d(tx, k1, b1, padding=2)), 2)
        h = f.avg_pool2d(torch.tanh(f.conv2d(h, k2, b2)), 2)
        h = torch.tanh(_torch_flat_nhwc(h) @ w3 + b3)
        return torch.tanh(h @ w4 + b4) @ w5 + b5

    return _torch_step(torch, weights, x, y, 1e-3, forward)


def _mnist_cnn_weights():
    from mnist_cnn import init_weights

    return init_weights()


# name: (weights, graph-mode step (gradflow and TensorFlow), torch step)
NETWORKS = {
    "deep-MNIST": (deep_mnist_weights, deep_mnist, torch_deep_mnist),
    "LeNet-5": (lenet_weights, lenet, torch_lenet),
    "MNIST CNN": (_mnist_cnn_weights, mnist_cnn, torch_mnist_cnn),
}


def network_rows(torch, tf, names, batches, formats, seconds):
    """Training steps of whole networks from the same weights: gradflow in each of
    ``formats`` (its NCHW through ``data_format="NCHW"``), PyTorch in NCHW, TensorFlow
    (where installed) in the same format as each gradflow row."""
    print("\n| network | batch | gf format | state | load | others | gradflow ms | torch ms "
          "| tf ms | gf / torch | gf / tf |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    for name in names:
        make_weights, graph_step, torch_step = NETWORKS[name]
        for batch in batches:
            x = rng.random((batch, 28, 28, 1), dtype=np.float32)
            y = rng.integers(0, 10, batch).astype(np.int64)
            weights = make_weights()
            steps = {}
            for fmt in formats:
                fed = x.transpose(0, 3, 1, 2).copy() if fmt == "NCHW" else x
                steps[fmt] = graph_step(gf, weights, fed, y, fmt)
                if tf is not None:
                    steps["tf " + fmt] = graph_step(tf[0], weights, fed, y, fmt, config=tf[1])
            steps["torch"] = torch_step(torch, weights, x, y)
            for load, state in ((0, "quiet"), (1, "loaded")):
                times, others, avg = timed(steps, seconds * 2, load)
                others = "?" if others is None else f"{others:.2f}"
                for fmt, ours, to_torch, to_tf, tf_ms in _ratios(times, formats):
                    print(f"| {name} | {batch} | {fmt} | {state} | {avg:.1f} | {others} "
                          f"| {ours:.1f} | {times['torch']:.1f} | {_ms(tf_ms)} "
                          f"| {to_torch} | {to_tf} |", flush=True)


def add_peer_arguments(parser):
    """``--skip-tf`` and ``--threads``, the options of the peers' setup (``load_peers``)."""
    parser.add_argument("--skip-tf", action="store_true", help="leave TensorFlow out")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS and PyTorch threads (gradflow's count then stays at most this)")


def load_peers(args, script):
    """``(torch, tf)``: PyTorch on ``args.threads`` (the script exits without it) and
    TensorFlow as ``load_tensorflow`` gives it (None with ``--skip-tf``)."""
    try:
        import torch
    except ImportError:
        sys.exit(f"{script} compares against PyTorch: pip install torch")
    pin_torch_threads(args.threads)
    return torch, None if args.skip_tf else load_tensorflow(args.threads)


def load_tensorflow(threads):
    """``(tensorflow.compat.v1, ConfigProto)`` in graph mode, or None where TF is not
    installed (``pip install -e ".[benchmark]"``)."""
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    tf.disable_eager_execution()
    tf.logging.set_verbosity(tf.logging.ERROR)
    count = threads or 0  # 0: TensorFlow's own choice
    return tf, tf.ConfigProto(intra_op_parallelism_threads=count,
                              inter_op_parallelism_threads=count)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per contender")
    parser.add_argument("--rows", nargs="*", default=None,
                        help="shape names (prefixes) of SHAPES to run; default all")
    parser.add_argument("--batches", type=int, nargs="*", default=[50, 128])
    parser.add_argument("--networks", nargs="*", default=list(NETWORKS),
                        help=f"of {list(NETWORKS)}")
    parser.add_argument("--formats", nargs="*", default=["NHWC", "NCHW"],
                        help="gradflow's data_format in the conv rows and networks")
    parser.add_argument("--skip-network", action="store_true")
    parser.add_argument("--skip-rows", action="store_true")
    add_peer_arguments(parser)
    args = parse_args(parser)
    torch, tf = load_peers(args, "benchmarks/conv.py")
    print("TensorFlow: " + ("not timed" if tf is None else tf[0].VERSION))
    from gradflow.backends.cpu import threads

    threads.refresh()
    print(f"cores allowed: {threads.allowed_cores()}, GRADFLOW_THREADS="
          f"{os.environ.get('GRADFLOW_THREADS', 'auto')}, torch threads: "
          f"{torch.get_num_threads()}, load before: {os.getloadavg()[0]:.1f}\n")
    names = [n for n in SHAPES if args.rows is None or any(n.startswith(r) for r in args.rows)]
    if not args.skip_rows:
        conv_rows(torch, tf, names, args.formats, args.seconds)
    if not args.skip_network:
        network_rows(torch, tf, args.networks, args.batches, args.formats, args.seconds)


if __name__ == "__main__":
    main()
