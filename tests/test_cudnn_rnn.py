"""cuDNN's LSTM for whole layers, on the CPU: TF1's weights in cuDNN's weight space
(``backends/cupy/cudnn_layout.py``) checked with a NumPy LSTM written with cuDNN's
equations and gate order, the sequence pass (``passes/cudnn_rnn.py``) on NumPy plans, and
the ctypes binding's refusals (``backends/cupy/cudnn_rnn.py``). The GPU half is
``tests/test_cudnn_rnn_gpu.py``."""

from __future__ import annotations

import functools
import sys

import numpy as np
import pytest

from gradflow.backends.cupy import cudnn_layout as layout
from gradflow.backends.cupy import cudnn_rnn
from gradflow.prim import rnn_seq


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _cudnn_forward(parts, xs, h, c):
    """cuDNN's LSTM equations (its reference, gates i, f, g, o; W @ x + R @ h + bW + bR)."""
    saved = []
    for x in xs:
        z = [x @ parts["W", k].T + h @ parts["R", k].T + parts["bW", k] + parts["bR", k]
             for k in range(4)]
        i, f, g, o = _sigmoid(z[0]), _sigmoid(z[1]), np.tanh(z[2]), _sigmoid(z[3])
        c_prev, h_prev = c, h
        c = f * c_prev + i * g
        h = o * np.tanh(c)
        saved.append((x, h_prev, c_prev, i, f, g, o, c, h))
    return saved


def _cudnn_backward(parts, saved, dys):
    """Back through ``_cudnn_forward``: the weight-space gradient (as ``parts``), each
    step's input gradient and each step's gate gradients (cuDNN's order)."""
    grads = {key: np.zeros_like(v) for key, v in parts.items()}
    dh_next = dc_next = 0.0
    dxs, dzs = [], []
    for (x, h_prev, c_prev, i, f, g, o, c, _), dy in zip(saved[::-1], dys[::-1]):
        dh = dy + dh_next
        tc = np.tanh(c)
        dc = dh * o * (1 - tc * tc) + dc_next
        dz = [dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g),
              dh * tc * o * (1 - o)]
        for k in range(4):
            grads["W", k] += dz[k].T @ x
            grads["R", k] += dz[k].T @ h_prev
            grads["bW", k] += dz[k].sum(0)
            grads["bR", k] += dz[k].sum(0)
        dxs.append(sum(dz[k] @ parts["W", k] for k in range(4)))
        dzs.append(dz)
        dh_next = sum(dz[k] @ parts["R", k] for k in range(4))
        dc_next = dc * f
    return grads, dxs[::-1], dzs[::-1], (dh_next, dc_next)


def test_the_expected_offsets_are_the_documented_packing():
    offsets, total = layout.expected_offsets(3, 2)
    assert total == 4 * 2 * (3 + 2) + 8 * 2
    assert [offsets["W", k] for k in range(4)] == [(6 * k, (2, 3)) for k in range(4)]
    assert [offsets["R", k] for k in range(4)] == [(24 + 4 * k, (2, 2)) for k in range(4)]
    assert [offsets["bW", k][0] for k in range(4)] == [40, 42, 44, 46]
    assert [offsets["bR", k][0] for k in range(4)] == [48, 50, 52, 54]
    # every element belongs to exactly one part
    cover = np.zeros(total, int)
    for off, shape in offsets.values():
        cover[off:off + int(np.prod(shape))] += 1
    assert (cover == 1).all()


def _tf_lstm(kernel, bias, xs, forget_bias, dys):
    """TF1's ``LSTMCell`` through gradflow (zero initial state): every h, and the
    gradients of ``sum(h_t * dy_t)`` for the kernel, the bias and the inputs."""
    import gradflow as gf

    graph = gf.Graph()
    with graph.as_default():
        inputs = [gf.constant(x) for x in xs]
        cell = gf.nn.rnn_cell.LSTMCell(kernel.shape[1] // 4, forget_bias=forget_bias)
        outs, _ = gf.nn.static_rnn(cell, inputs, dtype=gf.float64)
        k_var, b_var = gf.trainable_variables()
        loss = gf.add_n([gf.reduce_sum(h * dy) for h, dy in zip(outs, dys)])
        grads = gf.gradients(loss, [k_var, b_var] + inputs)
        sets = [gf.assign(k_var, kernel), gf.assign(b_var, bias)]
    with gf.Session(graph=graph) as sess:
        sess.run(sets)
        return sess.run(outs), sess.run(grads)


def test_a_cudnn_lstm_of_the_packed_tf_weights_gives_tf1s_numbers():
    """Forward and backward with cuDNN's equations over ``pack_tf``'s weight space equal
    TF1's ``LSTMCell`` (gradflow's), and ``unpack_tf_grads`` gives TF's gradients."""
    rng = np.random.default_rng(0)
    steps, batch, inputs, units, forget_bias = 4, 3, 5, 2, 1.0
    kernel = rng.standard_normal((inputs + units, 4 * units)) * 0.5
    bias = rng.standard_normal(4 * units) * 0.5
    xs = [rng.standard_normal((batch, inputs)) for _ in range(steps)]
    dys = [rng.standard_normal((batch, units)) for _ in range(steps)]
    want_h, want_grads = _tf_lstm(kernel, bias, xs, forget_bias, dys)

    offsets, total = layout.expected_offsets(inputs, units)
    flat = layout.pack_tf(kernel, bias, forget_bias, inputs, units, offsets, total)
    parts = layout.views(flat, offsets)
    zeros = np.zeros((batch, units))
    saved = _cudnn_forward(parts, xs, zeros, zeros)
    np.testing.assert_allclose([s[-1] for s in saved], want_h, rtol=1e-12, atol=1e-12)
    grads, dxs, _, _ = _cudnn_backward(parts, saved, dys)
    dflat = np.zeros(total)
    for key, g in grads.items():
        layout.views(dflat, offsets)[key][...] = g
    dkernel, dbias = layout.unpack_tf_grads(dflat, inputs, units, offsets)
    np.testing.assert_allclose(dkernel, want_grads[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dbias, want_grads[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dxs, want_grads[2:], rtol=1e-10, atol=1e-12)


def test_the_runtime_conversion_makes_cudnn_compute_lstm_seq():
    """The CuPy lowering's weight space (``fill_input_selection`` once, ``fill_recurrent``
    per run), run with cuDNN's equations on the stacked input projection, gives
    ``lstm_seq``'s outputs, and cuDNN's input gradient is ``lstm_seq_grad``'s ``dz``."""
    rng = np.random.default_rng(1)
    steps, batch, units, forget_bias = 5, 2, 3, 0.7
    x = rng.standard_normal((steps * batch, 4 * units))
    h0, c0 = rng.standard_normal((2, batch, units))
    w = rng.standard_normal((units, 4 * units)) * 0.5
    row = rng.standard_normal(4 * units)
    dy = rng.standard_normal((steps * batch, units))
    offsets, total = layout.expected_offsets(4 * units, units)
    flat = np.full(total, np.nan)
    parts = layout.views(flat, offsets)
    layout.fill_input_selection(parts, units, np)
    layout.fill_recurrent(parts, w, row, forget_bias, np)
    assert not np.isnan(flat).any()
    # the four-copy filler the lowering runs writes the same numbers
    again = np.full(total, np.nan)
    again_parts = layout.views(again, offsets)
    layout.fill_input_selection(again_parts, units, np)
    filler = layout.RecurrentFiller(again, offsets, again_parts, units, forget_bias, np)
    assert filler.r is not None and filler.b is not None
    filler(w, row)
    np.testing.assert_array_equal(again, flat)
    # parts out of gate order: the filler writes them one by one
    shuffled = dict(offsets)
    shuffled["R", 0], shuffled["R", 1] = offsets["R", 1], offsets["R", 0]
    third = np.zeros(total)
    layout.fill_input_selection(layout.views(third, shuffled), units, np)
    filler = layout.RecurrentFiller(third, shuffled, layout.views(third, shuffled), units,
                                    forget_bias, np)
    assert filler.r is None
    filler(w, row)
    for key, part in layout.views(third, shuffled).items():
        np.testing.assert_array_equal(part, parts[key])
    xs = [x[t * batch:(t + 1) * batch] for t in range(steps)]
    saved = _cudnn_forward(parts, xs, h0, c0)
    y, c_last = rnn_seq._lstm_seq_impl(np, x, h0, w, row, c0, forget_bias, steps)
    np.testing.assert_allclose(np.concatenate([s[-1] for s in saved]), y, rtol=1e-12)
    np.testing.assert_allclose(saved[-1][-2], c_last, rtol=1e-12)
    _, dxs, _, _ = _cudnn_backward(parts, saved, [dy[t * batch:(t + 1) * batch]
                                               for t in range(steps)])
    dz, _ = rnn_seq._lstm_seq_grad_impl(np, dy, x, h0, w, row, c0, y, forget_bias, steps)
    np.testing.assert_allclose(np.concatenate(dxs), dz, rtol=1e-10, atol=1e-12)


# -- the sequence pass on NumPy plans -------------------------------------------------


def _char_lstm(steps, units, seed=0, fetch_mid_state=False, cell=None):
    """A small char-LSTM training graph (as ``test_cupy_emit_on_numpy``'s)."""
    import gradflow as gf

    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        ids = gf.placeholder(gf.int32, [None, steps])
        emb = gf.get_variable("emb", [11, 6], dtype=gf.float64)
        inputs = [gf.nn.embedding_lookup(emb, ids[:, t]) for t in range(steps)]
        cell = (cell or gf.nn.rnn_cell.LSTMCell)(units)
        outputs, state = gf.nn.static_rnn(cell, inputs, dtype=gf.float64)
        logits = gf.layers.dense(gf.concat(outputs, 0), 11)
        labels = gf.reshape(gf.transpose(ids), [-1])
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits))
        if fetch_mid_state:  # the cell state of step 2 reaches the loss: not a whole layer
            _, mid = gf.nn.static_rnn(cell, inputs[:2], dtype=gf.float64)
            loss = loss + 1e-3 * gf.reduce_sum(mid.c)
        step = gf.train.AdamOptimizer(1e-2).minimize(loss)
        init = gf.global_variables_initializer()
    return graph, ids, loss, step, init, state


def _plan(steps, batch, **kw):
    from gradflow.passes import optimize
    from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence

    graph, ids, loss, step, _, _ = _char_lstm(steps, 5, **kw)
    plan = optimize([loss, step], [ids], [(batch, steps)])
    fuse_lstm_recurrence(plan)
    return plan


def test_the_pass_finds_the_whole_layer_of_a_char_lstm():
    from gradflow.passes.cudnn_rnn import find_lstm_layers, fuse_lstm_sequences

    plan = _plan(4, 3)
    (layer,) = find_lstm_layers(plan)
    assert len(layer["steps"]) == 4 and [s.type for s in layer["steps"]] == \
        ["lstm_step_rec"] * 4
    # the input projection of all steps: a lookup of the table's product, the table having
    # fewer rows than the 12 ids (passes/embedding_product.py)
    x = layer["x"]
    assert x.type == "gather" and x.inputs[0].type == "matmul" and tuple(x.shape) == (12, 20)
    grads = layer["grads"]
    assert len(grads["dy"]) == len(grads["dz"]) == 4
    assert [d.type for d in grads["dz"]] == ["fused_output"] * 3 + ["lstm_cell_grad"]
    assert grads["dc0"] is None  # c0 is a constant: nothing reads its gradient
    fuse_lstm_sequences(plan)
    ops = [n.type for n in plan.nodes()]
    assert ops.count("lstm_seq") == 1 and ops.count("lstm_seq_grad") == 1
    assert not {"lstm_step_rec", "lstm_step_rec_grad", "lstm_cell_grad",
                "lstm_h_grad", "lstm_c_grad"} & set(ops), ops
    seq = next(n for n in plan.nodes() if n.type == "lstm_seq")
    assert seq.attrs["link"].sizes == (4, 3, 5, np.float64)
    grad = next(n for n in plan.nodes() if n.type == "lstm_seq_grad")
    assert grad.attrs["link"] is seq.attrs["link"]


def test_a_layer_the_library_refuses_keeps_its_steps():
    from gradflow.passes.cudnn_rnn import fuse_lstm_sequences

    plan = _plan(4, 3)
    asked = []
    fuse_lstm_sequences(plan, accepts=lambda link: asked.append(link.sizes) and False)
    assert asked == [(4, 3, 5, np.float64)]
    ops = [n.type for n in plan.nodes()]
    assert "lstm_seq" not in ops and ops.count("lstm_step_rec") == 4


def test_the_pass_leaves_a_layer_whose_inner_state_is_read_elsewhere():
    from gradflow.passes.cudnn_rnn import find_lstm_layers

    plan = _plan(4, 3, fetch_mid_state=True)
    assert all(len(layer["steps"]) != 4 for layer in find_lstm_layers(plan))


@pytest.mark.parametrize("cell, layers", [("LSTMCell", 1), ("BasicLSTMCell", 1),
                                          ("peepholes", 0), ("stack", 2)])
def test_a_numpy_session_given_the_sequence_pass_trains_the_same(monkeypatch, cell, layers):
    """The CuPy backend's kernel passes (the step pass, then the sequence pass) in a
    NumPy session: the reference ``lstm_seq`` ops train to the plain session's numbers
    (an LSTMCell with peepholes has no ``lstm_step_rec``: its steps stay as they are; a
    2-layer ``MultiRNNCell`` is two layers)."""
    import gradflow as gf
    from gradflow.passes.cudnn_rnn import fuse_lstm_sequences
    from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence

    feed = np.random.default_rng(1).integers(0, 11, (4, 6)).astype(np.int32)
    calls = []

    def counted(xp, **attrs):  # the reference, counted
        def run(*inputs):
            calls.append(1)
            return rnn_seq.LSTM_SEQ_GRAD.impl(xp, *inputs, **attrs)

        return run

    cells = {"peepholes": functools.partial(gf.nn.rnn_cell.LSTMCell, use_peepholes=True),
             "stack": lambda units: gf.nn.rnn_cell.MultiRNNCell(
                 [gf.nn.rnn_cell.LSTMCell(units) for _ in range(2)])}
    make = cells.get(cell) or getattr(gf.nn.rnn_cell, cell)

    def train(sequences):
        graph, ids, loss, step, init, _ = _char_lstm(6, 7, cell=make)
        with gf.Session(graph=graph) as sess:
            if sequences:
                monkeypatch.setattr(sess.backend, "kernel_passes",
                                    (fuse_lstm_recurrence, fuse_lstm_sequences))
                monkeypatch.setitem(sess.backend.overrides, "lstm_seq_grad", counted)
            sess.run(init)
            return [sess.run([loss, step], {ids: feed})[0] for _ in range(5)]

    want = train(False)
    got = train(True)
    assert len(calls) == 5 * layers
    np.testing.assert_allclose(got, want, rtol=1e-12)


# -- the binding's refusals and the lowerings' fallback --------------------------------


def test_the_binding_refuses_a_missing_library_clearly(monkeypatch, tmp_path):
    monkeypatch.setattr(cudnn_rnn, "_LOADED", {})
    monkeypatch.setenv("GRADFLOW_CUDNN", str(tmp_path / "nowhere.so"))
    with pytest.raises(cudnn_rnn.CudnnUnavailable, match="GRADFLOW_CUDNN=.*nowhere.so"):
        cudnn_rnn.load()
    assert not cudnn_rnn.available()  # the same answer, kept

    monkeypatch.setattr(cudnn_rnn, "_LOADED", {})
    monkeypatch.delenv("GRADFLOW_CUDNN")
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    monkeypatch.setattr(cudnn_rnn.site, "getsitepackages", lambda: [])
    monkeypatch.setattr(cudnn_rnn.site, "getusersitepackages", lambda: str(tmp_path))
    with pytest.raises(cudnn_rnn.CudnnUnavailable, match="libcudnn.so.9 not found"):
        cudnn_rnn.load()

    monkeypatch.setattr(cudnn_rnn, "_LOADED", {})
    fake = tmp_path / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9"
    fake.parent.mkdir(parents=True)
    fake.write_text("not a library")
    with pytest.raises(cudnn_rnn.CudnnUnavailable, match="cannot load .*libcudnn.so.9"):
        cudnn_rnn.load()


def test_a_failed_call_names_itself_and_cudnns_message():
    class Lib:
        @staticmethod
        def cudnnRNNForward(*args):
            return 3

        @staticmethod
        def cudnnGetErrorString(status):
            return b"CUDNN_STATUS_BAD_PARAM"

    with pytest.raises(cudnn_rnn.CudnnError,
                       match=r"cudnnRNNForward failed: status 3 \(CUDNN_STATUS_BAD_PARAM\)"):
        cudnn_rnn.call(Lib, "cudnnRNNForward", 1, 2)


def test_the_lowerings_run_the_reference_where_cudnn_refused():
    """A layer cuDNN refused (its link's state False) runs the ops' own functions."""
    from gradflow.passes.cudnn_rnn import SequenceLink

    rng = np.random.default_rng(2)
    steps, batch, units = 3, 2, 4
    x = rng.standard_normal((steps * batch, 4 * units))
    h0, c0 = rng.standard_normal((2, batch, units))
    w, row = rng.standard_normal((units, 4 * units)), rng.standard_normal(4 * units)
    dy = rng.standard_normal((steps * batch, units))
    link = SequenceLink()
    link.state = False
    fwd = cudnn_rnn.lower_lstm_seq(np, 1.0, steps, link)
    bwd = cudnn_rnn.lower_lstm_seq_grad(np, 1.0, steps, link)
    y, c_last = fwd(x, h0, w, row, c0)
    want = rnn_seq._lstm_seq_impl(np, x, h0, w, row, c0, 1.0, steps)
    np.testing.assert_array_equal(y, want[0])
    np.testing.assert_array_equal(c_last, want[1])
    got = bwd(dy, x, h0, w, row, c0, y)
    for g, v in zip(got, rnn_seq._lstm_seq_grad_impl(np, dy, x, h0, w, row, c0, y, 1.0,
                                                       steps)):
        np.testing.assert_array_equal(g, v)


def test_a_run_time_length_dynamic_rnn_with_the_sequence_pass_trains_the_same(monkeypatch):
    """``dynamic_rnn`` over a length known at run time (unrolled in the plan of each fed
    length): the sequence pass replaces the layer of each plan, and training gives the
    plain session's numbers."""
    import gradflow as gf
    from gradflow.passes.cudnn_rnn import find_lstm_layers, fuse_lstm_sequences
    from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence

    rng = np.random.default_rng(4)
    feeds = [rng.integers(0, 11, (4, t)).astype(np.int32) for t in (5, 3)]
    found = []

    def sequences(graph):
        found.append(len(find_lstm_layers(graph)))
        fuse_lstm_sequences(graph)

    def train(passes):
        graph = gf.Graph()
        with graph.as_default():
            gf.set_random_seed(2)
            ids = gf.placeholder(gf.int32, (None, None))
            emb = gf.get_variable("emb", (11, 5), dtype=gf.float64)
            outputs, _ = gf.nn.dynamic_rnn(gf.nn.rnn_cell.LSTMCell(9),
                                           gf.nn.embedding_lookup(emb, ids), dtype=gf.float64)
            logits = gf.layers.dense(gf.reshape(outputs, (-1, 9)), 11)
            loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=gf.reshape(ids, (-1,)), logits=logits))
            step = gf.train.AdamOptimizer(1e-2).minimize(loss)
            init = gf.global_variables_initializer()
        with gf.Session(graph=graph) as sess:
            if passes:
                monkeypatch.setattr(sess.backend, "kernel_passes", passes)
            sess.run(init)
            return [sess.run([loss, step], {ids: f})[0] for f in feeds for _ in range(2)]

    want = train(())
    got = train((fuse_lstm_recurrence, sequences))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert found.count(1) == 2, found  # the plan of each length has its layer replaced


def test_an_inference_plan_runs_the_forward_sequence_alone(monkeypatch):
    """Without a backward (no gradient reads the gates) the layer's forward alone
    becomes ``lstm_seq``; the outputs and the last state are the plain session's."""
    import gradflow as gf
    from gradflow.passes.cudnn_rnn import find_lstm_layers, fuse_lstm_sequences
    from gradflow.passes.lstm_recurrence import fuse_lstm_recurrence

    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(5)
        x = gf.placeholder(gf.float64, [3, 4, 6])
        outs, state = gf.nn.static_rnn(gf.nn.rnn_cell.LSTMCell(5), gf.unstack(x, axis=1),
                                       dtype=gf.float64)
        fetches = [gf.stack(outs), state.c, state.h]
        init = gf.global_variables_initializer()
    feed = {x: np.random.default_rng(6).standard_normal((3, 4, 6))}
    found = []

    def sequences(plan):
        found.extend(find_lstm_layers(plan))
        fuse_lstm_sequences(plan)

    with gf.Session(graph=graph) as sess:
        sess.run(init)
        want = sess.run(fetches, feed)
    with gf.Session(graph=graph) as sess:
        monkeypatch.setattr(sess.backend, "kernel_passes", (fuse_lstm_recurrence, sequences))
        sess.run(init)
        got = sess.run(fetches, feed)
    assert [(len(layer["steps"]), layer["grads"]) for layer in found] == [(4, None)]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
