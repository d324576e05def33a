"""gradflow.distributed: fusion buffers in one process, and real jobs under mpiexec.

The multi-process tests launch this very file under ``mpiexec -n 2`` and
``-n 4`` (``python tests/test_distributed.py SCENARIO``), with a timeout, and
read what the ranks print. One launch checks many things on every CPU
backend, to keep the suite fast: process start-up and imports cost more than
the checks. They skip, saying why, where mpi4py or mpiexec is missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gradflow as gf
import gradflow.distributed as hvd
from gradflow import backends
from gradflow.distributed import _context
from gradflow.distributed.fusion import (
    FusionBuffers,
    Layout,
    describe_line,
    first_difference,
    threshold_bytes,
)

HERE = Path(__file__).resolve()
CPU_BACKENDS = [name for name in ("numpy", "array_api_strict", "torch")
                if backends.available().get(name) is None]


# -- one process ---------------------------------------------------------------------


@pytest.fixture
def one_process(monkeypatch):
    """``hvd.init()`` as a job of one process, undone afterwards."""
    for name in _context._LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    hvd.shutdown()
    hvd.init(engine="local")
    yield
    hvd.shutdown()


def _specs(entries, compress=False):
    out = []
    for name, shape, dtype in entries:
        wire = "float16" if compress and dtype.startswith("float") else dtype
        out.append((name, shape, dtype, wire))
    return out


ENTRIES = [("w1", (3, 4), "float32"), ("b1", (4,), "float32"), ("steps", (), "int64"),
           ("w2", (4, 2), "float64"), ("b2", (2,), "float32"), ("empty", (0, 3), "float32")]


def test_layout_fuses_by_dtype_under_the_threshold():
    fused = Layout(_specs(ENTRIES), threshold_bytes(64))
    assert fused.buckets == (("float32", 18), ("int64", 1), ("float64", 8))
    assert [e.bucket for e in fused.entries] == [0, 0, 1, 2, 0, 0]
    assert [e.offset for e in fused.entries] == [0, 12, 0, 0, 16, 18]
    # 60 bytes: w1 (48 bytes) and b1 (16) do not fit together; a bucket is never empty
    small = Layout(_specs(ENTRIES), 60)
    assert [e.bucket for e in small.entries] == [0, 1, 2, 3, 1, 1]
    unfused = Layout(_specs(ENTRIES), threshold_bytes(0))
    assert len(unfused.buckets) == len(ENTRIES)


def test_layout_digest_and_first_difference():
    a = Layout(_specs(ENTRIES), 1 << 20, ("allreduce", "average"))
    b = Layout(_specs(ENTRIES), 1 << 20, ("allreduce", "average"))
    assert a.digest() == b.digest()
    changed = list(ENTRIES)
    changed[3] = ("w2", (4, 3), "float64")
    c = Layout(_specs(changed), 1 << 20, ("allreduce", "average"))
    assert c.digest() != a.digest()
    k, ours, theirs = first_difference(a.describe(), c.describe())
    assert "'w2' of shape (4, 2)" in describe_line(ours)
    assert "'w2' of shape (4, 3)" in describe_line(theirs)
    assert first_difference(a.describe(), a.describe()) is None
    cut = Layout(_specs(ENTRIES), 60, ("allreduce", "average"))
    assert cut.digest() != a.digest()  # the same tensors cut into other buckets


def test_threshold_from_argument_environment_and_default(monkeypatch):
    monkeypatch.delenv("GRADFLOW_FUSION_THRESHOLD_MB", raising=False)
    assert threshold_bytes() == 64 * 1024 * 1024
    assert threshold_bytes(0.5) == 512 * 1024
    monkeypatch.setenv("GRADFLOW_FUSION_THRESHOLD_MB", "0")
    assert threshold_bytes() == 0
    assert threshold_bytes(2) == 2 * 1024 * 1024
    monkeypatch.setenv("GRADFLOW_FUSION_THRESHOLD_MB", "lots")
    with pytest.raises(ValueError, match="GRADFLOW_FUSION_THRESHOLD_MB"):
        threshold_bytes()
    with pytest.raises(ValueError, match="fusion_threshold_mb"):
        threshold_bytes(-1)


@pytest.mark.parametrize("backend", CPU_BACKENDS)
@pytest.mark.parametrize("threshold", [0, 60, 1 << 20])
def test_pack_unpack_round_trip(backend, threshold):
    be = backends.get(backend)
    rng = np.random.default_rng(0)
    hosts = [(rng.standard_normal(shape) * 10).astype(dtype) for _, shape, dtype in ENTRIES]
    arrays = [be.asarray(h) for h in hosts]
    buffers = FusionBuffers(Layout(_specs(ENTRIES), threshold), be.xp, be.copy)
    buffers.pack(arrays)
    kept = buffers.arrays
    for scale in (None, 0.25):
        buffers.pack(arrays, scale)
        assert buffers.arrays is kept  # allocated once, reused
        for host, out in zip(hosts, buffers.unpack(scale)):
            out = be.to_numpy(out)
            assert out.dtype == host.dtype and out.shape == host.shape
            want = host if scale is None or host.dtype.kind != "f" else host * scale
            np.testing.assert_allclose(out, want, rtol=1e-6)
    first = buffers.unpack()
    buffers.pack([a * 0 + 1 if h.dtype.kind == "f" else a for a, h in zip(arrays, hosts)])
    np.testing.assert_array_equal(be.to_numpy(first[0]), hosts[0])  # unpacked values own memory


@pytest.mark.parametrize("backend", [b for b in CPU_BACKENDS if b != "array_api_strict"])
def test_fp16_packing_scales_before_the_cast(backend):
    be = backends.get(backend)
    host = [np.full((5,), 60000.0, np.float32), np.arange(3, dtype=np.int64)]
    specs = _specs([("g", (5,), "float32"), ("n", (3,), "int64")], compress=True)
    buffers = FusionBuffers(Layout(specs, 1 << 20), be.xp, be.copy)
    buffers.pack([be.asarray(h) for h in host], 0.5)
    assert buffers.arrays[0].dtype == be.xp.float16
    g, n = (be.to_numpy(a) for a in buffers.unpack(0.5))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 30000.0, rtol=1e-3)  # scaled once, before float16
    np.testing.assert_array_equal(n, [0, 1, 2])


@pytest.mark.parametrize("backend", CPU_BACKENDS)
def test_collectives_of_one_process_are_the_identity(one_process, backend):
    assert (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size()) == (0, 1, 0, 1)
    rng = np.random.default_rng(1)
    hosts = [rng.standard_normal((3, 2)).astype(np.float32), np.arange(4.0),
             np.array([3, 1], np.int32)]
    with gf.Graph().as_default() as g:
        tensors = [gf.constant(h) for h in hosts]
        summed = hvd.grouped_allreduce(tensors, op=hvd.Sum, fusion_threshold_mb=0)
        mean = hvd.allreduce(tensors[0])
        gathered = hvd.allgather(tensors[0])
        broadcast = hvd.broadcast(tensors[1], 0)
        v = gf.Variable(np.ones(3, np.float32))
        sync = hvd.broadcast_global_variables(0)
        grad = gf.gradients(gf.reduce_sum(hvd.allreduce(v * 2.0)), [v])[0]
    with gf.Session(graph=g, backend=backend) as sess:
        for _ in range(2):
            out = sess.run(summed + [mean, gathered, broadcast, grad])
            for have, want in zip(out, hosts + [hosts[0], hosts[0], hosts[1]]):
                np.testing.assert_array_equal(have, want)
            np.testing.assert_array_equal(out[-1], [2.0, 2.0, 2.0])
        sess.run(sync)
    assert hvd.broadcast_object({"a": 1}) == {"a": 1}
    assert hvd.allgather_object(5) == [5]


def test_average_of_integers_and_bad_arguments_are_errors(one_process):
    with gf.Graph().as_default():
        n = gf.constant(np.array([1, 2], np.int64))
        with pytest.raises(TypeError, match="op=Average needs floating-point"):
            hvd.allreduce(n)
        with pytest.raises(ValueError, match="op must be"):
            hvd.allreduce(gf.constant(1.0), op="max")
        with pytest.raises(ValueError, match="root_rank 1 is not a rank"):
            hvd.broadcast(gf.constant(1.0), 1)
        with pytest.raises(ValueError, match="unknown compression 'zip'"):
            hvd.allreduce(gf.constant(1.0), compression="zip")
        with pytest.raises(TypeError, match="Compression.none or Compression.fp16"):
            hvd.allreduce(gf.constant(1.0), compression=3)
    with pytest.raises(TypeError, match="wraps a gradflow optimizer"):
        hvd.DistributedOptimizer(object())


def test_strict_backend_refuses_fp16_compression(one_process):
    if "array_api_strict" not in CPU_BACKENDS:
        pytest.skip("array_api_strict is not installed")
    with gf.Graph().as_default() as g:
        out = hvd.allreduce(gf.constant([1.0, 2.0]), compression=hvd.Compression.fp16)
    with gf.Session(graph=g, backend="array_api_strict") as sess:
        with pytest.raises(TypeError, match="no float16"):
            sess.run(out)


def test_distributed_optimizer_of_one_process_leaves_gradients_alone(one_process):
    with gf.Graph().as_default():
        w = gf.Variable(np.ones(3, np.float32), name="w")
        loss = gf.reduce_sum(w * w)
        inner = gf.train.AdamOptimizer(0.1)
        opt = hvd.DistributedOptimizer(inner, compression=hvd.Compression.fp16)
        (grad, var), = opt.compute_gradients(loss)
        assert var is w and grad.opdef.name != "dist_output"
        assert isinstance(opt, gf.train.Optimizer)
        opt.minimize(loss)
        assert opt.get_slot(w, "m") is inner.get_slot(w, "m") is not None
        with pytest.raises(TypeError, match="already a DistributedOptimizer"):
            hvd.DistributedOptimizer(opt)


def test_rank_before_init_is_a_clear_error():
    hvd.shutdown()
    with pytest.raises(ValueError, match=r"needs gradflow.distributed.init\(\)"):
        hvd.rank()
    with gf.Graph().as_default():
        with pytest.raises(ValueError, match="init"):
            hvd.DistributedOptimizer(gf.train.GradientDescentOptimizer(0.1)).compute_gradients(
                gf.reduce_sum(gf.Variable(1.0) ** 2))


def test_engine_names_are_checked(monkeypatch):
    hvd.shutdown()
    with pytest.raises(ValueError, match="engine must be one of"):
        hvd.init(engine="gloo")
    monkeypatch.setenv("GRADFLOW_DISTRIBUTED_ENGINE", "smoke-signals")
    with pytest.raises(ValueError, match="GRADFLOW_DISTRIBUTED_ENGINE"):
        hvd.init()
    assert not hvd.is_initialized()


def test_nccl_without_cupy_is_a_clear_error():
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001 - absent or broken: both must give the clear error
        pass
    else:
        pytest.skip("CuPy is installed here")
    hvd.shutdown()
    with pytest.raises(ImportError, match=r"NCCL engine needs CuPy.*pip install cupy-cuda12x"):
        hvd.init(engine="nccl")
    assert not hvd.is_initialized()


@pytest.mark.gpu
def test_nccl_engine_with_one_rank(monkeypatch):
    reason = backends.available().get("cupy")
    if reason is not None:
        pytest.skip(f"cupy: {reason}")
    try:
        from cupy.cuda import nccl  # noqa: F401
    except ImportError as err:
        pytest.skip(f"CuPy has no NCCL here: {err}")
    from gradflow.distributed.nccl_engine import NCCLEngine

    for name in _context._LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    hvd.shutdown()
    hvd.init(engine="nccl")
    try:
        with gf.Graph().as_default() as g:
            a = gf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
            b = gf.constant(np.arange(3, dtype=np.float64))
            summed = hvd.grouped_allreduce([a, b], op=hvd.Sum)
            half = hvd.allreduce(a, compression=hvd.Compression.fp16)
            gathered = hvd.allgather(a)
            same = hvd.broadcast(b, 0)
        with gf.Session(graph=g, backend="cupy") as sess:
            assert isinstance(_context.current("test").engine_for(sess.backend), NCCLEngine)
            out = sess.run(summed + [half, gathered, same])
        for have, want in zip(out, [a, b, a, a, b]):
            np.testing.assert_allclose(have, want.attrs["value"].array)
    finally:
        hvd.shutdown()


def test_init_outside_mpiexec_is_one_process_and_imports_no_mpi():
    env = {k: v for k, v in os.environ.items() if k not in _context._LAUNCHER_VARIABLES}
    code = ("import sys, gradflow.distributed as hvd; hvd.init(); "
            "print(hvd.size(), hvd.rank(), 'mpi4py' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "0", "False"]


def test_batches_shard_partitions_each_global_batch():
    x = np.arange(23)
    for size in (1, 2, 3):
        whole = [b[0] for b in gf.data.batches(x, batch_size=3 * size, seed=5)]
        parts = [[b[0] for b in gf.data.batches(x, batch_size=3, seed=5, shard=(r, size))]
                 for r in range(size)]
        assert len({len(p) for p in parts}) == 1  # every rank takes as many steps
        for step, batch in enumerate(whole[:len(parts[0])]):
            np.testing.assert_array_equal(np.concatenate([p[step] for p in parts]), batch)
    # a last run shorter than the number of ranks is dropped on every rank
    assert [len(b[0]) for b in gf.data.batches(np.arange(9), batch_size=4,
                                               shuffle=False, shard=(0, 2))] == [4]
    assert [len(b[0]) for b in gf.data.batches(np.arange(9), 2, shuffle=False)] == [2] * 4 + [1]
    with pytest.raises(ValueError, match="needs seed="):
        list(gf.data.batches(x, batch_size=2, shard=(0, 2)))
    with pytest.raises(ValueError, match="0 <= rank < size"):
        list(gf.data.batches(x, batch_size=2, seed=0, shard=(2, 2)))


# -- jobs of several processes ---------------------------------------------------------


def _mpiexec():
    """The mpiexec of the MPI that mpi4py uses: the venv's (the mpich wheel), else PATH's."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install mpi4py mpich)")
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("mpiexec is not installed (pip install mpich, or a system MPI)")
    return found


def launch(n, *args, timeout=120, python_args=(), script=HERE):
    """Run ``script`` (this file: ``args`` is a scenario) under ``mpiexec -n N``:
    ``(returncode, output, seconds)``;
    a job still running after ``timeout`` seconds is killed and fails the test."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONUNBUFFERED="1")
    env.pop("GRADFLOW_BACKEND", None)
    command = [_mpiexec(), "-n", str(n), sys.executable, *python_args, str(script), *args]
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"{' '.join(command)} did not finish in {timeout} s:\n{output}")
    return proc.returncode, output, time.perf_counter() - start


@pytest.mark.parametrize("n", [2, 4])
def test_job_on_every_cpu_backend(n):
    code, output, _ = launch(n, "checks", *CPU_BACKENDS)
    assert code == 0, output
    for rank in range(n):
        for backend in CPU_BACKENDS:
            assert f"rank {rank} {backend}: all checks passed" in output, output
    assert output.count("mismatch raised on every rank") == len(CPU_BACKENDS), output


@pytest.mark.parametrize("runner", ["python", "python -m mpi4py"])
def test_a_crash_on_one_rank_ends_the_job(runner):
    # rank 1 raises while rank 0 waits for it in the next allreduce: without the abort,
    # rank 0 would wait forever (the launch's timeout would fail the test)
    python_args = runner.split()[1:]
    code, output, _ = launch(2, "crash", timeout=90, python_args=python_args)
    assert code != 0, output
    assert "rank 1 fails on purpose" in output, output
    assert "rank 0 finished" not in output, output
    if not python_args:  # mpi4py's runner aborts by itself; without it, our excepthook does
        assert "rank 1 of 2 failed (RuntimeError); aborting the job" in output, output


def test_mnist_example_on_two_ranks_matches_one_process(tmp_path):
    """``--distributed`` keeps the global batch, so two ranks take the same steps as one
    process and reach the same accuracy; rank 0 alone prints and writes files."""
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")
    try:
        folder = gf.data.mnist.load(download=False).folder
    except gf.data.mnist.MnistError:
        pytest.skip("MNIST is not on disk here (set GRADFLOW_DATA)")
    script = HERE.parent.parent / "examples" / "mnist_mlp.py"
    flags = ["--epochs", "1", "--limit", "3000", "--backend", "numpy", "--data-dir",
             str(folder)]
    spec = importlib.util.spec_from_file_location("gradflow_example_mnist_mlp", script)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    alone = 100 * example.main([*flags, "--out", str(tmp_path / "a")])["accuracy"]
    code, output, _ = launch(2, *flags, "--distributed", "--out", str(tmp_path / "b"),
                             "--checkpoint-dir", str(tmp_path / "ckpt"), timeout=300,
                             python_args=("-m", "mpi4py"), script=script)
    assert code == 0, output

    def accuracy(text):
        lines = [ln for ln in text.splitlines() if "epoch 1: test accuracy" in ln]
        assert len(lines) == 1, text  # one report, from rank 0
        return float(lines[0].split("accuracy ")[1].split("%")[0])

    assert abs(accuracy(output) - alone) <= 0.3, (alone, output)
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["mnist_mlp_curves_numpy.png"]
    assert (tmp_path / "ckpt" / "checkpoint").exists()


# -- what the ranks run ---------------------------------------------------------------------


def _model(seed, hidden=8, dtype=gf.float32):
    """A small classifier; returns (graph, x, y, loss)."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        x = gf.placeholder(dtype, (None, 6), name="x")
        y = gf.placeholder(gf.int64, (None,), name="y")
        h = gf.layers.dense(x, hidden, activation=gf.nn.relu)
        logits = gf.layers.dense(h, 3)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
    return graph, x, y, loss


def _data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((48, 6)).astype(np.float32), rng.integers(0, 3, 48)


def _train(backend, make_optimizer, distributed, per_rank=3, wrap=None):
    """Weights after one epoch: on this rank's shards (``distributed``), or alone on the
    whole of each global batch. Rank-dependent seeds: the broadcast must fix them."""
    seed = 100 + (hvd.rank() if distributed else 0)
    graph, x, y, loss = _model(seed)
    with graph.as_default():
        opt = make_optimizer()
        if distributed:
            opt = hvd.DistributedOptimizer(opt, **(wrap or {}))
        train_op = opt.minimize(loss)
        sync = hvd.broadcast_global_variables(0) if distributed else None
        weights = gf.trainable_variables()
        init = gf.global_variables_initializer()
    xs, ys = _data()
    with gf.Session(graph=graph, backend=backend) as sess:
        sess.run(init)
        if sync is not None:
            sess.run(sync)
        for epoch in range(2):
            if distributed:
                stream = gf.data.batches(xs, ys, batch_size=per_rank, seed=epoch,
                                         shard=(hvd.rank(), hvd.size()))
            else:
                stream = gf.data.batches(xs, ys, batch_size=per_rank * hvd.size(), seed=epoch)
            for xb, yb in stream:
                sess.run(train_op, {x: xb, y: yb})
        return sess.run(weights)


def _same_everywhere(values, what):
    everyone = hvd.allgather_object([np.asarray(v) for v in values])
    for r, theirs in enumerate(everyone):
        for a, b in zip(values, theirs):
            np.testing.assert_array_equal(a, b, err_msg=f"{what}: rank {r} differs from "
                                                        f"rank {hvd.rank()}")


def _check_training(backend):
    def adam():
        return gf.train.AdamOptimizer(0.01)

    def sgd():
        return gf.train.GradientDescentOptimizer(0.5)

    def sgd_for_sum():
        return gf.train.GradientDescentOptimizer(0.5 / hvd.size())

    reference_adam = _train(backend, adam, distributed=False)
    reference_sgd = _train(backend, sgd, distributed=False)
    cases = [
        ("adam fused", adam, {}, reference_adam, 1e-5),
        ("adam unfused", adam, {"fusion_threshold_mb": 0}, reference_adam, 1e-5),
        ("sgd in two buckets", sgd, {"fusion_threshold_mb": 100 / 2**20}, reference_sgd, 1e-5),
        ("sgd summed", sgd_for_sum, {"op": hvd.Sum}, reference_sgd, 1e-5),
    ]
    if backend != "array_api_strict":
        cases.append(("sgd fp16", sgd, {"compression": hvd.Compression.fp16}, reference_sgd,
                      2e-2))
    for label, make, wrap, reference, tol in cases:
        weights = _train(backend, make, distributed=True, wrap=wrap)
        _same_everywhere(weights, label)
        for w, r in zip(weights, reference):
            np.testing.assert_allclose(w, r, rtol=tol, atol=tol, err_msg=label)


def _check_collectives(backend):
    rank, size = hvd.rank(), hvd.size()
    with gf.Graph().as_default() as g:
        mine = gf.constant(np.full((2, 3), rank + 1.0, np.float32))
        mean = hvd.allreduce(mine)
        total = hvd.allreduce(mine, op=hvd.Sum)
        rows = gf.constant(np.full((rank + 1, 2), rank, np.int64))
        gathered = hvd.allgather(rows)
        from_last = hvd.broadcast(mine, size - 1)
        half = hvd.allreduce(mine * 1000.0, compression=hvd.Compression.fp16) \
            if backend != "array_api_strict" else mean
        v = gf.Variable(np.ones(3, np.float32) * (rank + 1))
        grad = gf.gradients(gf.reduce_sum(hvd.allreduce(v * v, op=hvd.Sum)), [v])[0]
    with gf.Session(graph=g, backend=backend) as sess:
        out = sess.run([mean, total, gathered, from_last, half, grad])
    np.testing.assert_allclose(out[0], (size + 1) / 2)
    np.testing.assert_allclose(out[1], size * (size + 1) / 2)
    want = np.concatenate([np.full((r + 1, 2), r, np.int64) for r in range(size)])
    np.testing.assert_array_equal(out[2], want)
    np.testing.assert_array_equal(out[3], size)
    if backend != "array_api_strict":
        np.testing.assert_allclose(out[4], 1000.0 * (size + 1) / 2, rtol=1e-3)
    # d/dv sum_ranks(v*v) on each rank: the incoming gradient (1) summed over ranks, times 2v
    np.testing.assert_allclose(out[5], 2.0 * (rank + 1) * size)
    assert hvd.broadcast_object({"from": rank}, root_rank=1) == {"from": 1}
    assert hvd.allgather_object(rank * 10) == [r * 10 for r in range(size)]
    assert (hvd.local_rank(), hvd.local_size()) == (rank, size)


def _check_half_op(backend):
    """MPI libraries without a native float16 sum get a reduction op of ours."""
    engine = hvd.engine()
    saved = engine.native_half
    engine.native_half = False
    try:
        with gf.Graph().as_default() as g:
            out = hvd.grouped_allreduce([gf.constant(np.full(5, 0.5 + hvd.rank(), np.float32))],
                                        op=hvd.Sum, compression=hvd.Compression.fp16)
        with gf.Session(graph=g, backend=backend) as sess:
            value = sess.run(out)[0]
    finally:
        engine.native_half = saved
    size = hvd.size()
    np.testing.assert_allclose(value, 0.5 * size + size * (size - 1) / 2)


def _check_mismatch(backend):
    graph, x, y, loss = _model(0, hidden=8 if hvd.rank() == 0 else 9)
    with graph.as_default():
        train_op = hvd.DistributedOptimizer(gf.train.GradientDescentOptimizer(0.1)).minimize(
            loss)
    xs, ys = _data()
    with gf.Session(graph=graph, backend=backend) as sess:
        with pytest.raises(hvd.DistributedMismatchError) as info:
            sess.run(train_op, {x: xs[:4], y: ys[:4]})
    text = str(info.value)
    assert "'dense/kernel' of shape (6, 8)" in text and "(6, 9)" in text, text
    assert "rank 0 has" in text and "rank 1 has" in text, text
    if all(hvd.allgather_object(True)) and hvd.rank() == 0:
        print(f"{backend}: mismatch raised on every rank: {text[:160]}...", flush=True)


def _check_different_fetches(backend):
    """Rank 0 fetching more than the others (its summaries, say; no collective) runs
    another plan holding the same allreduce node: that must neither hang nor change the
    weights."""
    graph, x, y, loss = _model(7)
    with graph.as_default():
        train_op = hvd.DistributedOptimizer(gf.train.GradientDescentOptimizer(0.1)).minimize(
            loss)
        weights = gf.trainable_variables()
    xs, ys = _data()
    with gf.Session(graph=graph, backend=backend) as sess:
        for step in range(4):
            fetches = [train_op, loss] if hvd.rank() == 0 and step % 2 else train_op
            sess.run(fetches, {x: xs[:4], y: ys[:4]})
        _same_everywhere(sess.run(weights), "different fetches")


def _worker_checks(backend_names):
    hvd.init()
    assert hvd.size() > 1, "run this under mpiexec -n N (N > 1)"
    for backend in backend_names:
        _check_collectives(backend)
        _check_training(backend)
        _check_mismatch(backend)
        if backend == "numpy":
            _check_half_op(backend)
            _check_different_fetches(backend)
        print(f"rank {hvd.rank()} {backend}: all checks passed", flush=True)


def _worker_crash():
    hvd.init()
    graph, x, y, loss = _model(0)
    with graph.as_default():
        train_op = hvd.DistributedOptimizer(gf.train.GradientDescentOptimizer(0.1)).minimize(
            loss)
        init = gf.global_variables_initializer()
    xs, ys = _data()
    with gf.Session(graph=graph, backend="numpy") as sess:
        sess.run(init)
        for step in range(1000):
            if step == 2 and hvd.rank() == 1:
                raise RuntimeError("rank 1 fails on purpose")
            sess.run(train_op, {x: xs[:4], y: ys[:4]})
    print(f"rank {hvd.rank()} finished", flush=True)


if __name__ == "__main__":
    scenario, *rest = sys.argv[1:]
    if scenario == "checks":
        _worker_checks(rest)
    elif scenario == "crash":
        _worker_crash()
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
