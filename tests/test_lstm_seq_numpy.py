"""Whole LSTM layers as one loop each way on NumPy (``backends/numpy/lstm_seq.py``): the
NumPy backend's kernel pass ``fuse_lstm_layers`` (the recurrence pass, the sequence pass
``passes/cudnn_rnn.py``, then ``unfuse_lstm_recurrence`` for the layers it leaves) and
the lowerings of ``lstm_seq`` / ``lstm_seq_grad``.

Each model trains here three Adam steps, fetching the loss and the gradients, against
a Session with ``optimize=False`` (float64: rtol 1e-12; float32: rtol 2e-4, the numba
kernels' rational ``tanh`` being within 4e-7 of NumPy's and the optimized plan's sums
ordered differently, over three steps of Adam) and, in float32, against a Session whose
kernel passes leave out ``fuse_lstm_layers``: there the numbers are equal bit for bit
(the loops make the step plan's array calls in its order). Every case asserts how many
``lstm_seq`` the plan has, so that a pass that silently stops applying fails here.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.numpy import lstm_seq
from gradflow.passes.cudnn_rnn import SequenceLink
from gradflow.prim import rnn_seq

VOCAB, STEPS, BATCH, UNITS = 11, 6, 4, 7


def _without_layers(sess):
    """``sess`` with the NumPy backend's kernel passes minus the sequence pass."""
    sess.backend.kernel_passes = tuple(p for p in sess.backend.kernel_passes
                                       if p is not lstm_seq.fuse_lstm_layers)


def _embedded(dtype, steps=STEPS):
    ids = gf.placeholder(gf.int32, [None, steps])
    emb = gf.get_variable("emb", [VOCAB, 6], dtype=dtype)
    return ids, emb


def _loss(outputs, ids, units=UNITS):
    """Softmax cross-entropy of a dense layer over ``outputs`` ([time * batch, units],
    time-major) against the ids."""
    logits = gf.layers.dense(outputs, VOCAB)
    labels = gf.reshape(gf.transpose(ids), [-1])
    return gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))


def _static(cell):
    def build(dtype):
        ids, emb = _embedded(dtype)
        inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(STEPS)]
        outputs, _ = gf.nn.static_rnn(cell(), inputs, dtype=dtype)
        return ids, _loss(gf.concat(outputs, 0), ids)

    return build


def _dynamic(lengths=False, bidirectional=False, steps=None):
    """``dynamic_rnn`` (or ``bidirectional_dynamic_rnn``) over a time length known at run
    time only (the while_unroll pass unrolls it per fed length), with ``sequence_length``
    masking when ``lengths``; ``steps``: the time length known statically instead (the
    backward direction then reads the input projection's rows last to first)."""
    def build(dtype):
        ids = gf.placeholder(gf.int32, (None, steps))
        emb = gf.get_variable("emb", [VOCAB, 6], dtype=dtype)
        x = gf.nn.embedding_lookup(emb, ids)
        extra = {"sequence_length": gf.fill([gf.shape(ids)[0]], gf.shape(ids)[1] - 1)} \
            if lengths else {}
        if bidirectional:
            (fw, bw), _ = gf.nn.bidirectional_dynamic_rnn(
                gf.nn.rnn_cell.LSTMCell(UNITS), gf.nn.rnn_cell.LSTMCell(UNITS), x,
                dtype=dtype, **extra)
            outputs = gf.concat([fw, bw], 2)
        else:
            outputs, _ = gf.nn.dynamic_rnn(gf.nn.rnn_cell.LSTMCell(UNITS), x, dtype=dtype,
                                           **extra)
        width = 2 * UNITS if bidirectional else UNITS
        logits = gf.layers.dense(gf.reshape(outputs, (-1, width)), VOCAB)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=gf.reshape(ids, (-1,)), logits=logits))
        return ids, loss

    return build


def _initial_state_variables(last_c):
    """A static LSTM whose initial state is two trained variables: the plan reads the
    gradient of ``c0`` (``lstm_seq_grad``'s second output) and of ``h0``; with ``last_c``
    the last cell state is in the loss too (a gradient from outside the layer: the
    sequence pass leaves it)."""
    def build(dtype):
        return _initial_state(dtype, last_c)

    return build


def _initial_state(dtype, last_c):
    ids, emb = _embedded(dtype)
    inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(STEPS)]
    c0 = gf.get_variable("c0", [BATCH, UNITS], dtype=dtype)
    h0 = gf.get_variable("h0", [BATCH, UNITS], dtype=dtype)
    state = gf.nn.rnn_cell.LSTMStateTuple(c0, h0)
    outputs, last = gf.nn.static_rnn(gf.nn.rnn_cell.LSTMCell(UNITS), inputs,
                                     initial_state=state)
    loss = _loss(gf.concat(outputs, 0), ids)
    return ids, (loss + 0.1 * gf.reduce_sum(last.c)) if last_c else loss


def _stack():
    return gf.nn.rnn_cell.MultiRNNCell([gf.nn.rnn_cell.LSTMCell(UNITS) for _ in range(2)])


# (builder, lstm_seq per plan): what the sequence pass takes of each model
MODELS = {
    "LSTMCell": (_static(lambda: gf.nn.rnn_cell.LSTMCell(UNITS)), 1),
    "BasicLSTMCell": (_static(lambda: gf.nn.rnn_cell.BasicLSTMCell(UNITS)), 1),
    "MultiRNNCell x2": (_static(_stack), 2),
    "dynamic_rnn": (_dynamic(), 1),
    "initial state variables": (_initial_state_variables(False), 1),
    "last cell state in the loss": (_initial_state_variables(True), 0),
    "bidirectional_dynamic_rnn": (_dynamic(bidirectional=True), 2),
    "bidirectional_dynamic_rnn static length": (_dynamic(bidirectional=True, steps=STEPS), 2),
    # the masking's selects sit between the steps: no whole layer, the steps stay
    "dynamic_rnn sequence_length": (_dynamic(lengths=True), 0),
}


def _train(build, dtype, feeds, optimize=True, layers=True, seed=3):
    """Loss and gradients of each of three Adam steps (one per feed), and the plan."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        ids, loss = build(dtype)
        opt = gf.train.AdamOptimizer(1e-2)
        grads = opt.compute_gradients(loss)
        train = opt.apply_gradients(grads)
        init = gf.global_variables_initializer()
    fetches = [loss] + [g for g, _ in grads]
    with gf.Session(graph=graph, optimize=optimize) as sess:
        if not layers:
            _without_layers(sess)
        sess.run(init)
        got = [sess.run(fetches + [train], {ids: f})[:-1] for f in feeds]
        plan = sess.describe_plan(fetches + [train], {ids: feeds[-1]})
    return got, plan


def _feeds(steps=STEPS, count=3):
    rng = np.random.default_rng(7)
    return [rng.integers(0, VOCAB, (BATCH, steps)).astype(np.int32) for _ in range(count)]


def _assert_close(got, want, rtol, atol=0.0):
    for g_step, w_step in zip(got, want, strict=True):
        for g, w in zip(g_step, w_step, strict=True):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_float64_trains_as_the_unoptimized_session(model):
    build, layers = MODELS[model]
    feeds = _feeds()
    got, plan = _train(build, gf.float64, feeds)
    want, _ = _train(build, gf.float64, feeds, optimize=False)
    assert _ops(plan, "lstm_seq") == _ops(plan, "lstm_seq_grad") == layers, plan
    _assert_close(got, want, rtol=1e-12, atol=1e-15)


def _ops(plan, op):
    """How many steps of ``plan`` (``describe_plan``'s text) are ``op``."""
    return sum(1 for line in plan.splitlines() if line.split()[1:2] == [op])


@pytest.mark.parametrize("model", sorted(MODELS))
def test_float32_is_bit_equal_to_the_step_plan(model):
    build, layers = MODELS[model]
    feeds = _feeds()
    got, plan = _train(build, gf.float32, feeds)
    steps, step_plan = _train(build, gf.float32, feeds, layers=False)
    assert _ops(plan, "lstm_seq") == layers and _ops(step_plan, "lstm_seq") == 0
    assert "lstm_step_rec" not in plan  # the layers left run the step plan's nodes
    for g_step, w_step in zip(got, steps, strict=True):
        for g, w in zip(g_step, w_step, strict=True):
            np.testing.assert_array_equal(g, w)
    want, _ = _train(build, gf.float32, feeds, optimize=False)
    _assert_close(got, want, rtol=2e-4, atol=1e-6)


def test_a_layer_the_lowerings_refuse_runs_the_step_plan(monkeypatch):
    """Where ``accepts`` says no, the layer's steps are the step plan's nodes again
    (``unfuse_lstm_recurrence``: no ``lstm_step_rec`` left for the reference impl), the
    backward products read the row-major ``w^T``, and the numbers are the step plan's."""
    build = MODELS["LSTMCell"][0]
    feeds = _feeds()
    want, step_plan = _train(build, gf.float32, feeds, layers=False)
    asked = []
    monkeypatch.setattr(lstm_seq, "accepts", lambda link: asked.append(link.sizes) and False)
    got, plan = _train(build, gf.float32, feeds)
    assert asked and asked[0] == (STEPS, BATCH, UNITS, np.float32)
    assert "lstm_step_rec" not in plan and _ops(plan, "lstm_seq") == 0
    for op in ("lstm_step", "lstm_step_grad", "transposed_copy", "matmul", "add"):
        assert _ops(plan, op) == _ops(step_plan, op), op
    for g_step, w_step in zip(got, want, strict=True):
        for g, w in zip(g_step, w_step, strict=True):
            np.testing.assert_array_equal(g, w)


def test_two_threads_running_one_training_step():
    """Two threads run one Session's training step at once (each run gets its own plan
    instance, so its own link state): each run's loss and gradients are the ones a lone
    run gives for its feed. The learning rate is 0 so that every run sees the same
    weights whatever the interleaving."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(5)
        ids, loss = MODELS["LSTMCell"][0](gf.float32)
        opt = gf.train.AdamOptimizer(0.0)
        grads = opt.compute_gradients(loss)
        fetches = [loss] + [g for g, _ in grads] + [opt.apply_gradients(grads)]
        init = gf.global_variables_initializer()
    feeds = _feeds(count=8)
    with gf.Session(graph=graph) as sess:
        sess.run(init)
        want = [sess.run(fetches, {ids: f})[:-1] for f in feeds]
        got, errors = {}, []
        barrier = threading.Barrier(2)

        def worker(k):
            try:
                barrier.wait()
                for rounds in range(6):
                    for i in range(k, len(feeds), 2):
                        got[rounds, i] = sess.run(fetches, {ids: feeds[i]})[:-1]
            except Exception as err:  # reported below, in the test's thread
                errors.append(err)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        plan = sess.describe_plan(fetches, {ids: feeds[0]})
    assert not errors, errors
    assert _ops(plan, "lstm_seq") == 1
    assert len(got) == 6 * len(feeds)
    for (_, i), values in got.items():
        for g, w in zip(values, want[i], strict=True):
            np.testing.assert_array_equal(g, w)


def _layer_arrays(dtype, steps=5, batch=3, units=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in
            ((steps * batch, 4 * units), (batch, units), (units, 4 * units), (4 * units,),
             (batch, units))]


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_the_lowerings_give_the_reference_numbers(dtype, rtol):
    """Forward and backward against the ops' Array API functions, without ``out`` and
    into given buffers (float32: numba's ``tanh`` within 4e-7 of NumPy's)."""
    x, h0, w, row, c0 = _layer_arrays(dtype)
    steps, forget_bias = 5, 1.0
    dy = np.random.default_rng(1).standard_normal((15, 4)).astype(dtype)
    want_y, want_c = rnn_seq._lstm_seq_impl(np, x, h0, w, row, c0, forget_bias, steps)
    want_dz, want_dc0 = rnn_seq._lstm_seq_grad_impl(np, dy, x, h0, w, row, c0, want_y,
                                                    forget_bias, steps)
    link = SequenceLink((steps, 3, 4, dtype))
    seq = lstm_seq.lower_lstm_seq(np, forget_bias, steps, link)
    grad = lstm_seq.lower_lstm_seq_grad(np, forget_bias, steps, link)
    for out in (None, (np.empty_like(want_y), None)):
        y, c = seq(x, h0, w, row, c0, out=out)
        assert out is None or y is out[0]
        np.testing.assert_allclose(y, want_y, rtol=rtol, atol=rtol)
        np.testing.assert_allclose(c, want_c, rtol=rtol, atol=rtol)
        for gout in (None, (None, np.empty_like(c0))):
            dz, dc0 = grad(dy, x, h0, w, row, c0, y, out=gout)
            assert gout is None or dc0 is gout[1]
            np.testing.assert_allclose(dz, want_dz, rtol=rtol, atol=rtol)
            np.testing.assert_allclose(dc0, want_dc0, rtol=rtol, atol=rtol)


def test_a_backward_without_its_forward_here_recomputes_it():
    """A ``y`` this link's forward did not write (another array, a fresh link) sends the
    backward to the reference, which recomputes the forward: the numbers stay right."""
    x, h0, w, row, c0 = _layer_arrays(np.float64)
    dy = np.random.default_rng(2).standard_normal((15, 4))
    y, _ = rnn_seq._lstm_seq_impl(np, x, h0, w, row, c0, 1.0, 5)
    want = rnn_seq._lstm_seq_grad_impl(np, dy, x, h0, w, row, c0, y, 1.0, 5)
    link = SequenceLink((5, 3, 4, np.float64))
    grad = lstm_seq.lower_lstm_seq_grad(np, 1.0, 5, link)
    for got in (grad(dy, x, h0, w, row, c0, y),
                (lstm_seq.lower_lstm_seq(np, 1.0, 5, link)(x, h0, w, row, c0),
                 grad(dy, x, h0, w, row, c0, y.copy()))[1]):
        for g, v in zip(got, want, strict=True):
            np.testing.assert_allclose(g, v, rtol=1e-12)


def test_other_dtypes_take_the_reference_and_strided_inputs_a_copy():
    """float16 (no kernels here): the op's Array API function, the same numbers;
    ``accepts`` takes float32 and float64 layers only. Strided inputs are copied to
    C order first: the numbers of C-ordered ones."""
    assert lstm_seq.accepts(SequenceLink((5, 3, 4, np.float32)))
    assert lstm_seq.accepts(SequenceLink((5, 3, 4, np.float64)))
    assert not lstm_seq.accepts(SequenceLink((5, 3, 4, np.float16)))
    x, h0, w, row, c0 = _layer_arrays(np.float16)
    seq = lstm_seq.lower_lstm_seq(np, 1.0, 5, SequenceLink())
    want = rnn_seq._lstm_seq_impl(np, x, h0, w, row, c0, 1.0, 5)
    for g, v in zip(seq(x, h0, w, row, c0), want, strict=True):
        np.testing.assert_array_equal(g, v)
    x, h0, w, row, c0 = _layer_arrays(np.float32)
    dy = np.random.default_rng(3).standard_normal((15, 4)).astype(np.float32)
    link = SequenceLink((5, 3, 4, np.float32))
    seq = lstm_seq.lower_lstm_seq(np, 1.0, 5, link)
    grad = lstm_seq.lower_lstm_seq_grad(np, 1.0, 5, link)
    y, c = (v.copy() for v in seq(x, h0, w, row, c0))
    want = [v.copy() for v in grad(dy, x, h0, w, row, c0, seq(x, h0, w, row, c0)[0])]

    def strided(v):  # v's values, not C-ordered
        return np.repeat(v, 2, axis=-1)[..., ::2]

    y2, c2 = seq(*(strided(v) for v in (x, h0, w, row, c0)))
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(c2, c)
    for g, v in zip(grad(strided(dy), x, h0, w, row, strided(c0), y2), want, strict=True):
        np.testing.assert_array_equal(g, v)


def test_a_strided_output_buffer_is_filled_and_the_backward_still_reads_the_stacks():
    """A plan buffer the loop cannot write rows into (not C-ordered) gets the result
    copied; the backward given that array still runs from the forward's stacks: float32
    bits equal to the run without buffers (the reference's ``tanh`` would differ)."""
    x, h0, w, row, c0 = _layer_arrays(np.float32)
    dy = np.random.default_rng(4).standard_normal((15, 4)).astype(np.float32)
    link = SequenceLink((5, 3, 4, np.float32))
    seq = lstm_seq.lower_lstm_seq(np, 1.0, 5, link)
    grad = lstm_seq.lower_lstm_seq_grad(np, 1.0, 5, link)
    y = seq(x, h0, w, row, c0)[0]
    want_y, want = y.copy(), [v.copy() for v in grad(dy, x, h0, w, row, c0, y)]
    strided = np.empty((15, 8), np.float32)[:, ::2]
    y2, _ = seq(x, h0, w, row, c0, out=(strided, None))
    assert y2 is strided
    np.testing.assert_array_equal(y2, want_y)
    for g, v in zip(grad(dy, x, h0, w, row, c0, y2), want, strict=True):
        np.testing.assert_array_equal(g, v)
    reference = rnn_seq._lstm_seq_grad_impl(np, dy, x, h0, w, row, c0, y2, 1.0, 5)
    assert not np.array_equal(reference[0], want[0])  # so the check above can fail


def test_the_stacked_outputs_and_gate_gradients_are_read_in_one_piece():
    """``concat(outputs, 0)`` of a static RNN and the stack of the steps' gate gradients
    (for the input projection's products) are the sequence nodes' outputs themselves:
    no concat of the per-step rows is left, and the dense layer reads ``y`` directly."""
    from gradflow.passes import optimize

    graph = gf.Graph()
    with graph.as_default():
        ids, loss = MODELS["LSTMCell"][0](gf.float32)
        train = gf.train.AdamOptimizer(1e-2).minimize(loss)
    plan = optimize([loss, train], [ids], [(BATCH, STEPS)])
    lstm_seq.fuse_lstm_layers(plan)
    nodes = plan.nodes()
    assert [n.type for n in nodes].count("lstm_seq") == 1
    assert all(len(n.inputs) <= 2 for n in nodes if n.type == "concat"), \
        [(n.name, len(n.inputs)) for n in nodes if n.type == "concat"]
    y = next(n for n in nodes if n.type == "fused_output" and n.inputs[0].type == "lstm_seq"
             and n.attrs["index"] == 0)
    assert any(r.type == "matmul" for r in plan.consumers()[y])


@pytest.mark.parametrize("shape", [(1, 4), (5, 20), (8, 32), (13, 52)])
def test_the_strip_transpose_is_the_transpose(shape):
    """``lstm_seq_jit.transpose_into`` (strips of 8 rows and the rest), also of a
    strided matrix."""
    jit = lstm_seq._seq_jit()
    if jit is None:
        pytest.skip("numba is not installed (or GRADFLOW_NUMBA=0)")
    w = np.random.default_rng(5).standard_normal((shape[0], 2 * shape[1])).astype(np.float32)
    for source in (np.ascontiguousarray(w[:, ::2]), w[:, ::2]):
        out = np.empty(shape[::-1], np.float32)
        jit.transpose_into(source, out)
        np.testing.assert_array_equal(out, source.T)


def test_a_time_major_output_gradient_is_one_reshape():
    """``dynamic_rnn``'s outputs' gradient reaches the layer as ``transpose(g)[t]`` per
    step: the sequence node reads it as one ``reshape`` of that ``[T, batch, units]``
    node, not a concat of the ``T`` slices."""
    from gradflow.passes import optimize

    graph = gf.Graph()
    with graph.as_default():
        ids, loss = MODELS["dynamic_rnn"][0](gf.float32)
        train = gf.train.AdamOptimizer(1e-2).minimize(loss)
    plan = optimize([loss, train], [ids], [(BATCH, STEPS)])
    lstm_seq.fuse_lstm_layers(plan)
    (grad,) = [n for n in plan.nodes() if n.type == "lstm_seq_grad"]
    dy = grad.inputs[0]
    assert dy.type == "reshape" and tuple(dy.inputs[0].shape) == (STEPS, BATCH, UNITS)
