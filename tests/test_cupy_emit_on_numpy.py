"""Parts of the CuPy backend's emitter that capture needs, run on NumPy.

The per-buffer matmul plans (``cupy_matmul.MatmulPlans``), with a stand-in plan: an
operand that lives somewhere new on every run (a copy a reshape made) gets a staged
plan on the second run, so the third run, a capture, finds one. ``lower_concat``
copies each part into ``out`` (CuPy's own concatenation sends the parts' addresses
from the host, which a capture refuses). Both were seen on an H100: the CNN and
LSTM steps could not be captured without them. The LSTM step lowerings, with their
kernels' CUDA C text run by g++ in place of NVRTC's build."""

from __future__ import annotations

import numpy as np
import pytest

from gradflow.backends.cupy.matmul import MAX_MATMUL_PLANS, MatmulPlans
from gradflow.capture import NotCapturable


class _Product:
    made = 0

    def __init__(self, a, b, out, transpose_a, transpose_b):
        self.a, self.b, self.out = a, b, out
        self.ta, self.tb = transpose_a, transpose_b
        self.captured = False
        self.freed = False
        _Product.made += 1

    def execute(self):
        a = self.a.swapaxes(-1, -2) if self.ta else self.a
        b = self.b.swapaxes(-1, -2) if self.tb else self.b
        np.matmul(a, b, out=self.out)
        return self.out

    def free(self):
        self.freed = True


def _plans(capturing):
    return MatmulPlans(_Product, lambda: capturing[0], lambda x: x,
                       lambda x: x.__array_interface__["data"][0], np.empty)


def _operands(rng):
    return rng.random((6, 4)), rng.random((5, 4))


def test_steady_buffers_make_one_plan_and_a_capture_reuses_it():
    capturing = [False]
    plans = _plans(capturing)
    rng = np.random.default_rng(0)
    a, b = _operands(rng)
    out = np.empty((6, 5))
    for run in range(3):
        capturing[0] = run == 2
        a[...] = rng.random(a.shape)
        np.testing.assert_allclose(plans(a, b, out, False, True), a @ b.T)
    assert len(plans.exact) == 1 and not plans.staged


def test_batched_products_of_one_batch_shape_are_planned_too():
    """Attention's 4-D products (a batch of heads) take a plan like matrices do."""
    capturing = [False]
    plans = _plans(capturing)
    rng = np.random.default_rng(2)
    a, b = rng.random((2, 3, 6, 4)), rng.random((2, 3, 5, 4))
    out = np.empty((2, 3, 6, 5))
    for run in range(3):
        capturing[0] = run == 2
        a[...] = rng.random(a.shape)
        np.testing.assert_allclose(plans(a, b, out, False, True), a @ b.swapaxes(-1, -2))
    assert len(plans.exact) == 1 and not plans.staged


@pytest.mark.parametrize("view, takes", [
    (lambda x: x, True), (lambda x: x.swapaxes(-1, -2), True),
    (lambda x: x[:, ::2], True),  # every other matrix: one strided batch axis
    (lambda x: x[::2, ::2], False),  # two batch axes that do not merge
    (lambda x: np.broadcast_to(x[:1], x.shape), False),  # a broadcast batch
    (lambda x: x[..., ::2, :], False)])  # rows with gaps: a matrix reaches into the next
def test_the_blas_layout_of_batches(view, takes):
    from gradflow.backends.cupy.matmul import blas_layout

    x = np.zeros((4, 4, 3, 5), np.float32)
    assert blas_layout(view(x)) is takes


@pytest.mark.parametrize("moving", ["a", "out", "a and out"])
def test_operands_that_move_every_run_are_staged_by_the_second(moving):
    capturing = [False]
    plans = _plans(capturing)
    rng = np.random.default_rng(1)
    _, b = _operands(rng)
    a_home, out_home = np.empty((6, 4)), np.empty((6, 5))
    for run in range(4):
        capturing[0] = run >= 2
        a = rng.random((6, 4)) if "a" in moving.split() else a_home
        a[...] = rng.random(a.shape)
        out = np.empty((6, 5)) if "out" in moving else out_home
        got = plans(a, b, out, False, True)
        assert got is out
        np.testing.assert_allclose(out, a @ b.T)
    (staged,) = plans.staged.values()
    assert staged.fixed == ("a" not in moving.split(), True, "out" not in moving)


def test_a_fixed_operand_that_moves_under_capture_is_refused():
    capturing = [False]
    plans = _plans(capturing)
    rng = np.random.default_rng(2)
    b = rng.random((5, 4))
    out = np.empty((6, 5))
    for _ in range(2):  # a moves: staged over a fixed b
        plans(rng.random((6, 4)), b, out, False, True)
    capturing[0] = True
    with pytest.raises(NotCapturable, match="no plan for while capturing"):
        plans(rng.random((6, 4)), b.copy(), out, False, True)


class _StrictProduct(_Product):
    """Refuses what nvmath's cuBLASLt ``Matmul`` refuses (seen on an H100: a broadcast
    operand, strides (0, 0), raised "Unsupported layout")."""

    def __init__(self, a, b, out, transpose_a, transpose_b):
        for x in (a, b, out):
            if x.strides[0] != x.itemsize and x.strides[1] != x.itemsize:
                raise ValueError("Unsupported layout.")
        super().__init__(a, b, out, transpose_a, transpose_b)


@pytest.mark.parametrize("broadcast", ["a", "b", "a and b"])
def test_broadcast_operands_are_staged_from_the_first_run(broadcast):
    """A gradient's ``broadcast_like`` reaches a matmul as a view with zero strides."""
    capturing = [False]
    plans = MatmulPlans(_StrictProduct, lambda: capturing[0], lambda x: x,
                        lambda x: x.__array_interface__["data"][0], np.empty)
    rng = np.random.default_rng(5)
    a_home, b_home, out = np.empty((6, 4)), np.empty((5, 4)), np.empty((6, 5))
    for run in range(3):
        capturing[0] = run == 2
        a_home[...], b_home[...] = rng.random((6, 4)), rng.random((5, 4))
        a = np.broadcast_to(rng.random(()), (6, 4)) if "a" in broadcast else a_home
        b = np.broadcast_to(rng.random(4), (5, 4)) if "b" in broadcast else b_home
        assert plans(a, b, out, False, True) is out
        np.testing.assert_allclose(out, a @ b.T)
    (staged,) = plans.staged.values()
    assert staged.fixed == ("a" not in broadcast, "b" not in broadcast.split(), True)
    assert not plans.exact


def test_too_many_buffer_sets_free_the_uncaptured_plans():
    plans = _plans([False])
    rng = np.random.default_rng(3)
    made = {}
    for k in range(MAX_MATMUL_PLANS + 1):
        a = rng.random((k + 1, 4))  # a new shape: a new exact plan each
        out = np.empty((k + 1, 5))
        plans(a, rng.random((5, 4)), out, False, True)
        made.update((id(p), p) for p in plans.exact.values())
    assert len(made) == MAX_MATMUL_PLANS + 1
    assert [p.freed for p in made.values()] == [True] * MAX_MATMUL_PLANS + [False]
    assert len(plans.exact) == 1


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cupys_concat_copies_each_part_into_out(axis):
    """``cupy_emit.lower_concat``, run on NumPy: many parts, into ``out`` or a new array."""
    from array_api_compat import numpy as xp

    from gradflow.backends.cupy.emit import lower_concat

    rng = np.random.default_rng(4)
    parts = [rng.random((3, k + 1, 2)) if axis == 1 else rng.random((k + 1, 3, 2))
             if axis == 0 else rng.random((3, 2, k + 1)) for k in range(12)]
    want = np.concatenate(parts, axis=axis)
    concat = lower_concat(xp, axis)
    np.testing.assert_array_equal(concat(*parts), want)
    out = np.empty_like(want)
    assert concat(*parts, out=out) is out
    np.testing.assert_array_equal(out, want)


class _HostKernel:
    launched = []

    def __init__(self, lib, name, all_blocks=False):
        self.lib, self.name, self.all_blocks = lib, name, all_blocks

    def __call__(self, grid, block, args):
        from cuda_host import launch

        launch(self.lib, self.name, list(args),
               blocks=grid[0] if self.all_blocks else min(grid[0], 3))
        self.launched.append(self.name)


@pytest.fixture
def host_step_kernels(monkeypatch, tmp_path):
    """``cupy_rnn``'s LSTM step lowerings on NumPy: the kernels' CUDA C text run by g++
    (the recurrent ones with tiles of ones, every block), NumPy in CuPy's place for their
    outputs."""
    import types

    from cuda_host import GXX, build

    from gradflow.backends.cuda import lstm as cuda_lstm
    from gradflow.backends.cupy import rnn as cupy_rnn

    if GXX is None:
        pytest.skip("g++ is not installed: the CUDA C text is compiled on the host with it")
    made, rec = {}, {}
    for dtype in ("float32", "float64"):
        made[dtype] = {k: _HostKernel(build(text, str(tmp_path)), name)
                       for k, (text, name) in cuda_lstm.step_sources(dtype).items()}
        rec[dtype] = {k: _HostKernel(build(text, str(tmp_path)), name, all_blocks=True)
                      for k, (text, name) in cuda_lstm.recurrent_sources(
                          dtype, (1, 1, 1), (1, 1, 1, 1)).items()}
    monkeypatch.setitem(__import__("sys").modules, "cupy",
                        types.SimpleNamespace(empty=np.empty, copyto=np.copyto))
    monkeypatch.setattr(cupy_rnn._STEP_KERNELS, "get",
                        lambda dtype: made.get(np.dtype(dtype).name))
    monkeypatch.setattr(cupy_rnn._REC_KERNELS, "get",
                        lambda dtype, tiles: rec.get(np.dtype(dtype).name))
    monkeypatch.setattr(cuda_lstm, "STEP_TILE", (1, 1, 1))
    monkeypatch.setattr(cuda_lstm, "GRAD_TILE", (1, 1, 1, 1))
    _HostKernel.launched.clear()
    return cupy_rnn


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_lstm_step_lowerings_run_one_kernel_each_way(host_step_kernels, dtype):
    from array_api_compat import numpy as xp

    from gradflow.prim import rnn as prim_rnn

    rng = np.random.default_rng(6)
    batch, units = 3, 5
    x, y = (rng.standard_normal((batch, 4 * units)).astype(dtype) for _ in range(2))
    row = rng.standard_normal(4 * units).astype(dtype)
    c_prev = rng.standard_normal((batch, units)).astype(dtype)
    step = host_step_kernels.lower_lstm_step(xp, 1.0)
    grad = host_step_kernels.lower_lstm_step_grad(xp)
    tol = 2e-6 if dtype == "float32" else 1e-14
    for inputs in ((x, y, row, c_prev), (x, row, c_prev), (x, y, row, c_prev[:1])):
        want = prim_rnn._lstm_step_impl(xp, *inputs, forget_bias=1.0)
        outs = (np.empty_like(x), np.empty((batch, units), dtype), None)
        got = step(*inputs, out=outs)
        assert got[0] is outs[0] and got[1] is outs[1]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    a, c, _ = step(x, y, row, c_prev)
    dh, dc_next = (rng.standard_normal((batch, units)).astype(dtype) for _ in range(2))
    want = prim_rnn._lstm_step_grad_impl(xp, dh, dc_next, a, c, c_prev)
    for g, w in zip(grad(dh, dc_next, a, c, c_prev), want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    # the state of batch 1 (broadcast) took the op's own function
    assert [n.split("_")[2] for n in _HostKernel.launched] == ["step3", "step2", "step3",
                                                                "step"]


@pytest.mark.parametrize("capture", [False, True])
def test_cupys_concat_in_a_training_step_gives_the_same_bits(monkeypatch, capture):
    """``lower_concat`` bound by a NumPy session (the arena's buffers, and the recorded
    replay of ``capture=True``) in an LSTM step that concatenates its ten outputs."""
    import gradflow as gf
    from gradflow.backends.cupy.emit import lower_concat

    bound = []

    def lower(xp, axis):
        bound.append(axis)
        return lower_concat(xp, axis)

    def train(use_it):
        graph = gf.Graph()
        with graph.as_default():
            gf.set_random_seed(0)
            ids = gf.placeholder(gf.int32, [None, 10])
            emb = gf.get_variable("emb", [20, 8])
            inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(10)]
            outputs, _ = gf.nn.static_rnn(gf.nn.rnn_cell.LSTMCell(16), inputs,
                                          dtype=gf.float32)
            loss = gf.reduce_sum(gf.square(gf.layers.dense(gf.concat(outputs, 0), 3)))
            step = gf.train.AdamOptimizer(1e-2).minimize(loss)
            init = gf.global_variables_initializer()
        feed = {ids: np.random.default_rng(0).integers(0, 20, (4, 10)).astype(np.int32)}
        with gf.Session(graph=graph, capture=capture) as sess:
            if use_it:
                monkeypatch.setitem(sess.backend.overrides, "concat", lower)
            sess.run(init)
            losses = [sess.run([loss, step], feed)[0] for _ in range(5)]
            return losses, [sess.run(v) for v in graph.get_collection("variables")]

    want, got = train(False), train(True)
    assert bound  # the step's concats took it
    np.testing.assert_array_equal(got[0], want[0])
    for a, b in zip(got[1], want[1]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_recurrent_lstm_lowerings_run_one_kernel_each_way(host_step_kernels, dtype):
    from array_api_compat import numpy as xp

    from gradflow.prim import rnn as prim_rnn

    rng = np.random.default_rng(8)
    batch, units, inner = 3, 5, 40
    x = rng.standard_normal((batch, 4 * units)).astype(dtype)
    h_prev = rng.standard_normal((batch, inner)).astype(dtype)
    w = (rng.standard_normal((inner, 4 * units)) / 6).astype(dtype)
    row = rng.standard_normal(4 * units).astype(dtype)
    c_prev = rng.standard_normal((batch, units)).astype(dtype)
    step = host_step_kernels.lower_lstm_step_rec(xp, 1.0)
    grad = host_step_kernels.lower_lstm_step_rec_grad(xp)
    tol = 2e-5 if dtype == "float32" else 1e-13
    for inputs in ((x, h_prev, w, row, c_prev), (x, h_prev, w, row, c_prev[:1]),
                   (x, h_prev, np.asfortranarray(w), row, c_prev)):
        want = prim_rnn._lstm_step_rec_impl(xp, *inputs, forget_bias=1.0)
        for g, want_part in zip(step(*inputs), want):
            np.testing.assert_allclose(g, want_part, rtol=tol, atol=tol)
    w_sq = np.ascontiguousarray(w[:units])
    a, c, _ = step(x, h_prev[:, :units].copy(), w_sq, row, c_prev)
    dy, dc_next = (rng.standard_normal((batch, units)).astype(dtype) for _ in range(2))
    dz_next = rng.standard_normal(a.shape).astype(dtype)
    want = prim_rnn._lstm_step_rec_grad_impl(xp, dy, dz_next, w_sq, dc_next, a, c, c_prev)
    outs = (np.empty_like(a), np.empty_like(c))
    got = grad(dy, dz_next, w_sq, dc_next, a, c, c_prev, out=outs)
    assert got[0] is outs[0] and got[1] is outs[1]
    for g, want_part in zip(got, want):
        np.testing.assert_allclose(g, want_part, rtol=tol, atol=tol)
    # rows of a larger array (a slice along a time axis) for the gates' terms and the
    # output's gradient: their row strides go to the kernels
    wide = rng.standard_normal((batch, 3, 4 * units)).astype(dtype)
    want = prim_rnn._lstm_step_rec_impl(xp, wide[:, 1], h_prev, w, row, c_prev,
                                       forget_bias=1.0)
    for g, want_part in zip(step(wide[:, 1], h_prev, w, row, c_prev), want):
        np.testing.assert_allclose(g, want_part, rtol=tol, atol=tol)
    dys = rng.standard_normal((batch, 5, units)).astype(dtype)
    want = prim_rnn._lstm_step_rec_grad_impl(xp, dys[:, 2], dz_next, w_sq, dc_next, a, c,
                                            c_prev)
    for g, want_part in zip(grad(dys[:, 2], dz_next, w_sq, dc_next, a, c, c_prev), want):
        np.testing.assert_allclose(g, want_part, rtol=tol, atol=tol)
    # a state of batch 1 (broadcast) and a Fortran-ordered w took the op's own function
    kinds = [n.split("_")[3] for n in _HostKernel.launched]
    assert kinds == ["step", "step", "grad", "step", "grad"], kinds


def _char_lstm(steps, units, cell_of, seed=0):
    """A small char-LSTM training graph: ids, loss, Adam step, initializer."""
    import gradflow as gf

    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        ids = gf.placeholder(gf.int32, [None, steps])
        emb = gf.get_variable("emb", [11, 6], dtype=gf.float64)
        inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(steps)]
        outputs, _ = gf.nn.static_rnn(cell_of(units), inputs, dtype=gf.float64)
        logits = gf.layers.dense(gf.concat(outputs, 0), 11)
        labels = gf.reshape(gf.transpose(ids), [-1])
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        step = gf.train.AdamOptimizer(1e-2).minimize(loss)
        init = gf.global_variables_initializer()
    return graph, ids, loss, step, init


@pytest.mark.parametrize("cell", ["LSTMCell", "BasicLSTMCell"])
def test_a_numpy_session_given_the_gpu_lstm_pass_and_kernels_trains_the_same(
        host_step_kernels, monkeypatch, cell):
    """The CuPy backend's kernel pass (``fuse_lstm_recurrence``) and its kernels' CUDA C
    text (g++, 1 x 1 tiles) in a NumPy session: every time step takes one kernel each
    way, and training gives the numbers of the plain NumPy session."""
    import gradflow as gf
    from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence

    steps = 6
    feed_ids = np.random.default_rng(1).integers(0, 11, (4, steps)).astype(np.int32)

    def train(gpu_path):
        graph, ids, loss, step, init = _char_lstm(steps, 9, getattr(gf.nn.rnn_cell, cell))
        with gf.Session(graph=graph) as sess:
            if gpu_path:
                monkeypatch.setattr(sess.backend, "kernel_passes", (fuse_lstm_recurrence,))
                for op, lower in host_step_kernels.LOWERINGS.items():
                    monkeypatch.setitem(sess.backend.overrides, op, lower)
            sess.run(init)
            return [sess.run([loss, step], {ids: feed_ids})[0] for _ in range(4)]

    want = train(False)
    _HostKernel.launched.clear()
    got = train(True)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    kinds = [n.split("_")[2:4] for n in _HostKernel.launched]
    # every forward step; every backward step but the last time step's (no dz_next)
    assert kinds.count(["rec", "step"]) == 4 * steps, kinds
    assert kinds.count(["rec", "grad"]) == 4 * (steps - 1), kinds
    assert len(kinds) == 8 * steps - 4, kinds
