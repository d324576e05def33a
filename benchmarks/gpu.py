"""gradflow on one CUDA GPU against PyTorch (and JAX where it has a GPU), in one process.

Rows: the MNIST MLP step (784-512-512-10, Adam) at batch 128 and 1024, the MNIST CNN
step at 128 and 512, the char-LSTM step (and its recurrent kernels alone, tile by tile),
GRU, 2-layer, bidirectional and run-time-length recurrent steps
(``benchmarks/rnn_models.py``), BERT-style encoder steps
(``benchmarks/gpu_transformer.py``), and one epoch of MNIST MLP training (60,000
examples of MNIST's shapes drawn at random on the GPU, shuffled there each epoch,
batch 128, the last partial batch dropped so the step keeps one shape). Columns:

* ``ms/step``: the best of 5 rounds of GPU-synchronized wall time per step;
* ``kernels/step``: GPU kernels and copies per step as CUPTI records them through
  ``torch.profiler`` (process-wide, so CuPy's kernels are counted too); ``-``
  without PyTorch's CUDA build;
* ``host ms``: CPU time the process spends per step (``time.process_time``).

The gradflow rows: the cupy backend with its compiler passes (``optimize=True``), with
``capture=False`` and with TF32 matmuls when the Session takes those options (read
from its signature), and with ``optimize=False`` (today's per-op path). The char-LSTM
also runs with its layer on cuDNN's RNN (``gradflow.cupy cuDNN RNN``, the default where
libcudnn 9 loads; ``... persistent``: cuDNN's persistent kernel) and on the per-step
kernels (``gradflow.cupy step kernels``). The PyTorch
rows: eager (foreach Adam), fused Adam, the whole step replayed as a CUDA graph, and
``torch.compile``; JAX ``jit`` for the MLP when JAX sees a GPU.

    python benchmarks/gpu.py [--seconds 1.0] [--skip-compile]
                             [--only mlp cnn lstm rnn transformer epoch]
                             [--top N] [--rows REGEX ...]

Without a CUDA device (or without CuPy) it prints why and exits 0 having measured
nothing; any other failure of a row is printed in that row and the run goes on.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_common as common  # noqa: E402
import numpy as np  # noqa: E402

# -- the models -------------------------------------------------------------------------


def classifier_rows(group, module, x, y, torch_x, seconds, compile_too):
    """The gradflow and PyTorch rows of an MNIST benchmark module (``mnist_mlp``,
    ``mnist_cnn``) on images ``x`` (``torch_x``: the same in PyTorch's layout)."""
    weights = module.init_weights()
    xd, yd = common.device_feeds(x, y)
    for name, (optimize, options) in common.gradflow_variants().items():
        common.report(group, name, lambda: module.gradflow_step(
            weights, xd, yd, common.BACKEND, optimize=optimize, session_options=options), seconds)
    torch = common._torch_cuda()
    if torch is not None:
        xt, yt = torch.from_numpy(torch_x).cuda(), torch.from_numpy(y).cuda()
        for name, make in common.torch_variants(lambda: module.torch_model(weights), xt, yt,
                                                common._cross_entropy, compile_too).items():
            common.report(group, name, make, seconds)
    return weights


def mlp_rows(batch, seconds, compile_too):
    import mnist_mlp

    rng = np.random.default_rng(0)
    x = rng.random((batch, 784), dtype=np.float32)
    y = rng.integers(0, 10, batch).astype(np.int64)
    group = f"MLP b={batch}"
    weights = classifier_rows(group, mnist_mlp, x, y, x, seconds, compile_too)
    common.report(group, "JAX jit", lambda: _jax_mlp(weights, x, y), seconds)


def _jax_mlp(weights, x, y):
    try:
        import jax
    except ImportError:
        return None
    if not any(d.platform == "gpu" for d in jax.devices()):
        return None
    import mnist_mlp

    return mnist_mlp.jax_step(weights, x, y)


def cnn_rows(batch, seconds, compile_too):
    import mnist_cnn

    rng = np.random.default_rng(0)
    x = rng.random((batch, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, batch).astype(np.int64)
    classifier_rows(f"CNN b={batch}", mnist_cnn, x, y, x.transpose(0, 3, 1, 2).copy(),
                    seconds, compile_too)


# the recurrent LSTM kernels' tiles: forward (LANES, KS, TB), backward (LANES, KS, TU, TB)
STEP_TILES = tuple((32, ks, tb) for ks in (4, 8, 16) for tb in (1, 2, 4, 8)
                   if (ks * tb * 4 * 32 + tb * 128) * 4 <= 48 * 1024)  # fits shared memory
GRAD_TILES = tuple((32, ks, tu, tb) for ks in (2, 4, 8) for tu in (1, 2, 4, 8)
                   for tb in (2, 4, 8))


def _graph_us(cupy, run, rounds):
    """Microseconds per replay of ``run()``'s launches captured as one CUDA graph."""
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        run()
        stream.begin_capture()
        run()
        graph = stream.end_capture()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    graph.launch(stream)
    start.record(stream)
    for _ in range(rounds):
        graph.launch(stream)
    end.record(stream)
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) * 1e3 / rounds


def lstm_tile_rows(rounds=20):
    """Each tile of the recurrent LSTM step kernels (``cuda_lstm.recurrent_sources``) at
    the char-LSTM's sizes, alone: ``STEPS`` forward launches chained through their states
    as in the training step, and ``STEPS - 1`` backward ones, each captured as one CUDA
    graph; prints microseconds per kernel and returns the fastest ``(forward tile,
    backward tile)`` (None for a direction where none ran)."""
    import cupy
    import lstm_step

    from gradflow.backends.cuda import lstm as cuda_lstm
    from gradflow.backends.cuda.kernels import OPTIONS

    t_, b, u = lstm_step.STEPS, lstm_step.BATCH, lstm_step.HIDDEN
    rng = cupy.random.default_rng(0)
    xs = rng.standard_normal((t_, b, 4 * u), dtype=np.float32)
    w = rng.standard_normal((u, 4 * u), dtype=np.float32) * np.float32(u ** -0.5)
    row, dy = cupy.zeros(4 * u, np.float32), rng.standard_normal((t_, b, u), np.float32)
    hs, cs, dcs = (cupy.zeros((t_ + 1, b, u), np.float32) for _ in range(3))
    gates = rng.random((t_, b, 4 * u), np.float32)
    dzs = cupy.zeros((t_ + 1, b, 4 * u), np.float32)
    sizes, half = (np.int64(b), np.int64(u)), np.float32(0.5)

    def forward(kernel, tile):
        grid, block = (cuda_lstm.step_blocks(b, u, tile),), (cuda_lstm.threads(tile),)
        for t in range(t_):
            kernel(grid, block, (xs[t], hs[t], w, row, cs[t], gates[t], cs[t + 1],
                                 hs[t + 1], *sizes, sizes[1], half, 4 * sizes[1]))

    def backward(kernel, tile):
        grid, block = (cuda_lstm.grad_blocks(b, u, tile),), (cuda_lstm.threads(tile),)
        for t in reversed(range(1, t_)):
            kernel(grid, block, (dy[t], dzs[t + 1], w, dcs[t + 1], gates[t], cs[t + 1],
                                 cs[t], dzs[t], dcs[t], *sizes, sizes[1]))

    best = {}
    for key, tiles, run, count in (("step", STEP_TILES, forward, t_),
                                   ("grad", GRAD_TILES, backward, t_ - 1)):
        for tile in tiles:
            name = f"{key} {'x'.join(map(str, tile))}"
            try:
                printed = cuda_lstm.recurrent_sources(
                    "float32", *((tile, None) if key == "step" else (None, tile)))
                kernel = cupy.RawKernel(*printed[key], options=OPTIONS)
                us = _graph_us(cupy, lambda k=kernel, t=tile: run(k, t), rounds) / count
                print(f"{'LSTM kernels':<14} {name:<34} {us:9.2f} us/kernel", flush=True)
                if key not in best or us < best[key][0]:
                    best[key] = (us, tile)
            except Exception as err:  # noqa: BLE001 - one tile failing must not end the run
                print(f"{'LSTM kernels':<14} {name:<34} FAILED: {type(err).__name__}: {err}",
                      flush=True)
    return tuple(best[k][1] if k in best else None for k in ("step", "grad"))


def lstm_rows(seconds, compile_too):
    import lstm_step

    rng = np.random.default_rng(0)
    x = rng.integers(0, lstm_step.VOCAB, (lstm_step.BATCH, lstm_step.STEPS)).astype(np.int32)
    y = rng.integers(0, lstm_step.VOCAB, (lstm_step.BATCH, lstm_step.STEPS)).astype(np.int32)
    weights = lstm_step.init_weights()
    group = "char-LSTM"
    xd, yd = common.device_feeds(x, y)
    if common.BACKEND == "cupy":
        from gradflow.backends.cuda import lstm as cuda_lstm

        step_tile, grad_tile = lstm_tile_rows()
        cuda_lstm.STEP_TILE = step_tile or cuda_lstm.STEP_TILE
        cuda_lstm.GRAD_TILE = grad_tile or cuda_lstm.GRAD_TILE
        print(f"    (the gradflow rows run the recurrent kernels with tiles "
              f"{cuda_lstm.STEP_TILE} and {cuda_lstm.GRAD_TILE})", flush=True)
    for name, (optimize, options) in common.gradflow_variants().items():
        common.report(group, name, lambda: lstm_step.gradflow_step(
            weights, xd, yd, common.BACKEND, optimize=optimize,
            session_options=options)[0], seconds)
    if common.BACKEND == "cupy":
        common.report(group, f"gradflow {common.BACKEND} steps op by op",
                      lambda: _op_by_op(lstm_step.gradflow_step(weights, xd, yd,
                                                                common.BACKEND)), seconds)
        for name, algo in (("gradflow.cupy cuDNN RNN", "standard"),
                           ("gradflow.cupy cuDNN RNN persistent", "persist_static"),
                           ("gradflow.cupy step kernels", None)):
            common.report(group, name, lambda algo=algo: _cudnn_rnn(
                lstm_step.gradflow_step(weights, xd, yd, common.BACKEND), algo), seconds)
    torch = common._torch_cuda()
    if torch is None:
        return
    xt = torch.from_numpy(x.astype(np.int64)).cuda()
    yt = torch.from_numpy(y.astype(np.int64)).cuda()

    def loss_of(model, ids, targets):
        logits = model(ids)
        return torch.nn.functional.cross_entropy(logits.reshape(-1, lstm_step.VOCAB),
                                                 targets.reshape(-1))

    rows = common.torch_variants(lstm_step.torch_nn_model, xt, yt, loss_of, compile_too)
    for name, make in rows.items():
        common.report(group, name.replace("PyTorch", "PyTorch nn.LSTM"), make, seconds)
    common.report(group, "PyTorch cell loop eager",
           lambda: lstm_step.torch_loop_step(weights, x, y, device="cuda")[0], seconds)


def _op_by_op(made):
    """The step of ``gradflow_step``'s result with the recurrent products outside the LSTM
    step kernels (the path before ``passes/lstm_recurrence.py``)."""
    step, _, sess, _, _ = made
    sess.backend.lstm_recurrence = False
    return step


def _cudnn_rnn(made, algo):
    """The step of ``gradflow_step``'s result with whole LSTM layers on cuDNN's RNN with
    algorithm ``algo`` (``passes/cudnn_rnn.py``; None where libcudnn 9 does not load) or,
    with ``algo`` None, on the per-step kernels."""
    from gradflow.backends.cupy import cudnn_rnn

    step, _, sess, _, _ = made
    if algo is not None and not cudnn_rnn.available():
        return None
    sess.backend.cudnn_rnn = algo is not None
    sess.backend.cudnn_rnn_algo = algo or "standard"
    return step


# -- one epoch --------------------------------------------------------------------------

EPOCH_EXAMPLES, EPOCH_BATCH = 60_000, 128


def epoch_rows():
    """Seconds for one MNIST MLP epoch with the data on the GPU, after one warm-up epoch."""
    import cupy
    import mnist_mlp

    weights = mnist_mlp.init_weights()
    host = np.random.default_rng(0)
    data_x = cupy.asarray(host.random((EPOCH_EXAMPLES, 784), dtype=np.float32))
    data_y = cupy.asarray(host.integers(0, 10, EPOCH_EXAMPLES).astype(np.int64))
    steps = EPOCH_EXAMPLES // EPOCH_BATCH
    cupy.random.seed(2)

    def gradflow_epoch(optimize, options):
        step = mnist_mlp.gradflow_step(weights, data_x[:EPOCH_BATCH], data_y[:EPOCH_BATCH],
                                       common.BACKEND, optimize=optimize, session_options=options)
        sess, train, xp, yp = step.parts

        def run():
            order = cupy.random.permutation(EPOCH_EXAMPLES)  # shuffled on the GPU
            for i in range(steps):
                take = order[i * EPOCH_BATCH:(i + 1) * EPOCH_BATCH]
                sess.run(train, {xp: data_x[take], yp: data_y[take]})

        return run

    for name, (optimize, options) in common.gradflow_variants().items():
        _report_epoch(name, lambda: gradflow_epoch(optimize, options))
    torch = common._torch_cuda()
    if torch is None:
        return
    tx = torch.as_tensor(data_x, device="cuda")
    ty = torch.as_tensor(data_y, device="cuda")

    def torch_epoch():
        model = mnist_mlp.torch_model(weights).cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)

        def run():
            order = torch.randperm(EPOCH_EXAMPLES, device="cuda")
            for i in range(steps):
                take = order[i * EPOCH_BATCH:(i + 1) * EPOCH_BATCH]
                opt.zero_grad(set_to_none=True)
                common._cross_entropy(model, tx[take], ty[take]).backward()
                opt.step()

        return run

    _report_epoch("PyTorch fused Adam", torch_epoch)


def _report_epoch(name, make):
    label = f"{'MLP epoch':<14} {name:<34}"
    try:
        run = make()
        run()  # warm-up epoch: plans, captures, compiles
        common.sync()
        t = time.perf_counter()
        run()
        common.sync()
        print(f"{label} {time.perf_counter() - t:9.3f} s", flush=True)
    except Exception as err:
        print(f"{label} FAILED: {type(err).__name__}: {err}", flush=True)
        traceback.print_exc(limit=4, file=sys.stdout)


# -- main -------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per row")
    parser.add_argument("--skip-compile", action="store_true", help="no torch.compile rows")
    groups = ["mlp", "cnn", "lstm", "rnn", "transformer", "epoch"]
    parser.add_argument("--only", nargs="+", default=groups, choices=groups)
    parser.add_argument("--top", type=int, default=0,
                        help="under each row, its N kernels with the most GPU time per step")
    parser.add_argument("--rows", nargs="+", default=(), metavar="REGEX",
                        help="only the rows whose names match one of these in full")
    args = parser.parse_args(argv)
    common.TOP, common.ROWS = args.top, tuple(args.rows)
    # a layer cuDNN refuses would time the step kernels under a cuDNN row's name: fail it
    warnings.filterwarnings("error", message="cuDNN's LSTM refused")
    status = common.begin("benchmarks/gpu.py")
    if status is not None:
        return status
    compile_too = not args.skip_compile
    if "mlp" in args.only:
        for batch in (128, 1024):
            mlp_rows(batch, args.seconds, compile_too)
    if "cnn" in args.only:
        for batch in (128, 512):
            cnn_rows(batch, args.seconds, compile_too)
    if "lstm" in args.only:
        lstm_rows(args.seconds, compile_too)
    if "rnn" in args.only:  # GRU, a 2-layer stack, bidirectional, run-time length
        import rnn_models

        rnn_models.gpu_rows(common, args.seconds, compile_too)
    if "transformer" in args.only:
        import gpu_transformer

        gpu_transformer.transformer_rows(args.seconds, compile_too)
    if "epoch" in args.only:
        epoch_rows()
    return 0


if __name__ == "__main__":
    sys.exit(main())
