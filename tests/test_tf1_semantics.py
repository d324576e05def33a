"""TF1 semantics that differential runs against TensorFlow 2.21's ``compat.v1`` (graph
mode) found gradflow getting wrong; each expected value is what TF gave."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf


def _run(fetches, feed=None, backend="numpy"):
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_a_tensor_met_twice_sums_its_gradients(backend):
    x = gf.placeholder(gf.float64, [2])
    b = gf.placeholder(gf.float64, [2])
    grads = [gf.gradients(x + x, x)[0], gf.gradients(gf.add_n([x, b, x]), x)[0],
             gf.gradients(gf.identity(x) + gf.identity(x), x)[0],
             gf.gradients(x[0] + x[0], x)[0],
             *gf.gradients(gf.reduce_sum((x + b) + (x + 2.0 * b)), [x, b])]
    got = _run(grads, {x: [1.0, 2.0], b: [3.0, 4.0]}, backend)
    for g, want in zip(got, [[2, 2], [2, 2], [2, 2], [2, 0], [2, 2], [3, 3]]):
        np.testing.assert_array_equal(g, want)


def test_the_gradient_of_a_product_with_zeros_is_the_product_of_the_others(backend):
    x = gf.placeholder(gf.float64, (None, 3))
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    (g,) = gf.gradients(gf.reduce_sum(gf.reduce_prod(x, 1) * weights), [x])
    (g_all,) = gf.gradients(gf.reduce_prod(x), [x])
    values = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 3.0], [1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])
    got, got_all = _run([g, g_all], {x: values}, backend)
    np.testing.assert_array_equal(got, [[0, 6, 0], [0, 0, 0], [18, 9, 6], [0, 0, -2]])
    np.testing.assert_array_equal(got_all, np.zeros((4, 3)))


def test_squeezing_a_negative_axis_of_unknown_rank_keeps_later_shapes_right(backend):
    p = gf.placeholder(gf.float64)
    y = gf.squeeze(p, -1)
    shapes = [y, gf.ones_like(y) * 2.0, gf.zeros_like(y) + 1.0, gf.fill(gf.shape(y), 1.0)]
    assert [a.shape for a in _run(shapes, {p: np.ones((2, 3, 1))}, backend)] == [(2, 3)] * 4
    q = gf.placeholder(gf.float64)
    weights = np.arange(1.0, 7.0).reshape(3, 2)
    (g,) = gf.gradients(gf.reduce_sum(gf.squeeze(q, [-2]) * weights), [q])
    x = gf.placeholder(gf.float64)
    (g_lse,) = gf.gradients(gf.reduce_logsumexp(x, axis=-1) * [1.0, -2.0], [x])
    mean, var = gf.nn.moments(x, [-1])
    (g_moments,) = gf.gradients(mean * [1.0, -2.0] + var, [x])
    got = _run([g, g_lse, g_moments], {q: np.ones((1, 3, 1, 2)),
                                       x: np.arange(6.0).reshape(2, 3)}, backend)
    np.testing.assert_allclose(got[0].ravel(), np.arange(1.0, 7.0))
    np.testing.assert_allclose(got[1], np.exp(np.arange(6.0).reshape(2, 3) - [[2.0], [5.0]])
                               / np.exp(np.arange(3.0) - 2.0).sum() * [[1.0], [-2.0]])
    np.testing.assert_allclose(got[2], [[-1 / 3, 1 / 3, 1.0], [-4 / 3, -2 / 3, 0.0]])


def test_read_value_reads_after_its_control_dependencies():
    v = gf.Variable(1.0, dtype=gf.float64)
    bump = gf.assign_add(v, 1.0)
    with gf.control_dependencies([bump]):
        r = v.read_value()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        assert sess.run(r) == 2.0
        assert sess.run(v) == 2.0


def test_grad_loss_and_unconnected_gradients():
    w = gf.Variable([1.0, 2.0], dtype=gf.float64)
    other = gf.Variable(3.0, dtype=gf.float64)
    opt = gf.train.GradientDescentOptimizer(1.0)
    ((g, _),) = opt.compute_gradients(w * w, var_list=[w],
                                      grad_loss=gf.constant([1.0, 0.0], gf.float64),
                                      gate_gradients=opt.GATE_NONE)
    zero = gf.gradients(w * w, [other], unconnected_gradients="zero")[0]
    assert gf.gradients(w * w, [other], colocate_gradients_with_ops=True) == [None]
    got = _run([g, zero])
    np.testing.assert_array_equal(got[0], [2.0, 0.0])
    assert got[1] == 0.0
    with pytest.raises(ValueError, match="unconnected_gradients"):
        gf.gradients(w * w, [other], unconnected_gradients="zeros")


def test_an_infinite_global_norm_makes_every_clipped_entry_nan():
    clipped, norm = gf.clip_by_global_norm(
        [gf.constant([np.inf, 1.0], gf.float64), gf.constant([3.0, 4.0], gf.float64)], 1.0)
    finite, _ = gf.clip_by_global_norm([gf.constant([3.0, 4.0], gf.float64)], 1.0)
    got = _run([clipped, norm, finite])
    assert np.isnan(np.concatenate(got[0])).all() and got[1] == np.inf
    np.testing.assert_allclose(got[2][0], [0.6, 0.8])


def test_div_of_integers_floors_and_small_integers_divide_as_float32():
    ints = gf.constant([7, -7])
    small = gf.constant([1, 2], gf.uint8)
    outs = [gf.div(ints, 2), gf.div(gf.constant([7.0, -7.0]), 2.0), small / small,
            gf.truediv(gf.constant([1, 2], gf.int16), 2), ints / 2]
    assert [o.dtype for o in outs] == [gf.int32, gf.float32, gf.float32, gf.float32,
                                       gf.float64]
    got = _run(outs)
    np.testing.assert_array_equal(got[0], [3, -4])
    np.testing.assert_array_equal(got[1], [3.5, -3.5])


def test_one_hot_takes_the_dtype_of_its_values():
    i = gf.constant([0, 2, -1])
    outs = [gf.one_hot(i, 3, on_value=5, off_value=-1), gf.one_hot(i, 2, True, False),
            gf.one_hot(i, 3, off_value=-1), gf.one_hot(i, 3, 5.0, dtype=gf.float64),
            gf.one_hot(i, 3, on_value=gf.constant(2.0, gf.float64))]
    assert [o.dtype for o in outs] == [gf.int32, gf.bool, gf.int32, gf.float64, gf.float64]
    got = _run(outs)
    np.testing.assert_array_equal(got[0], [[5, -1, -1], [-1, -1, 5], [-1, -1, -1]])
    np.testing.assert_array_equal(got[1], [[True, False], [False, False], [False, False]])
    np.testing.assert_array_equal(got[4], [[2, 0, 0], [0, 0, 2], [0, 0, 0]])
    with pytest.raises(TypeError, match="on_value 2.7 is float32, but dtype is int32"):
        gf.one_hot(i, 3, on_value=2.7, dtype=gf.int32)


def test_a_vector_condition_picks_rows(backend):
    x = np.array([[1, 2], [3, 4]])
    out = gf.where(gf.constant([True, False]), x, np.zeros_like(x))
    np.testing.assert_array_equal(_run(out, backend=backend), [[1, 2], [0, 0]])


def test_running_no_fetches_gives_the_empty_structure():
    gf.constant(1.0)
    with gf.Session() as sess:
        assert sess.run([]) == [] and sess.run({}) == {} and sess.run([[], {}]) == [[], {}]


# TF 2.21 compat.v1 (float32): an embedding [[1, 2], [3, 4], [5, 6]] looked up with ids
# [0, 0], then [1], then [0, 2], loss sum(rows * [1, -2]): rows not looked up keep their
# values and slots, as TF1's sparse kernels leave them
_LAZY = {
    "momentum": (lambda: gf.train.MomentumOptimizer(0.5, 0.5),
                 [[-1.0, 6.0], [2.5, 5.0], [4.5, 7.0]]),
    "nesterov": (lambda: gf.train.MomentumOptimizer(0.5, 0.5, use_nesterov=True),
                 [[-1.5, 7.0], [2.25, 5.5], [4.25, 7.5]]),
    "rmsprop": (lambda: gf.train.RMSPropOptimizer(0.1, momentum=0.5, centered=True),
                [[0.64113051, 2.52307701], [2.89949632, 4.17817402],
                 [4.89949608, 6.17817402]]),
    "ftrl": (lambda: gf.train.FtrlOptimizer(0.5, l1_regularization_strength=0.01,
                                            l2_shrinkage_regularization_strength=0.1),
             [[0.06350154, 2.4617095], [1.32792842, 3.66915441], [2.53421307, 5.25803375]]),
    "proximal_gd": (lambda: gf.train.ProximalGradientDescentOptimizer(0.5, 0.1, 0.2),
                    [[-0.40909088, 4.12809896], [2.22727275, 4.49999952],
                     [4.0454545, 6.31818151]]),
    "proximal_adagrad": (lambda: gf.train.ProximalAdagradOptimizer(
        0.5, l1_regularization_strength=0.1, l2_regularization_strength=0.2),
        [[0.20611328, 2.57988667], [2.26010323, 4.25884247], [4.08600998, 6.16471815]]),
}


@pytest.mark.parametrize("name", sorted(_LAZY))
def test_optimizers_update_only_the_rows_an_embedding_looked_up(backend, name):
    make, want = _LAZY[name]
    table = gf.Variable(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32))
    ids = gf.placeholder(gf.int32, [None])
    loss = gf.reduce_sum(gf.nn.embedding_lookup(table, ids) * np.float32([1.0, -2.0]))
    train = make().minimize(loss)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for batch in ([0, 0], [1], [0, 2]):
            sess.run(train, {ids: batch})
        np.testing.assert_allclose(sess.run(table), want, rtol=2e-6, atol=1e-6)


def test_the_shape_of_unknown_rank_answers_as_tf1s():
    p = gf.placeholder(gf.float32)
    shape = p.get_shape()
    assert shape == gf.TensorShape(None) and shape.ndims is None and shape.dims is None
    assert not shape.is_fully_defined() and shape.num_elements() is None
    with pytest.raises(ValueError, match="not defined on an unknown TensorShape"):
        shape.as_list()
    with pytest.raises(ValueError, match="unknown rank"):
        len(shape)  # never taken for a scalar's shape
    assert gf.placeholder(gf.float32, shape=shape).shape is None
    known = gf.placeholder(gf.float32, (None, 3)).get_shape()
    assert known.ndims == 2 and known.as_list() == [None, 3]


def test_integer_division_by_zero_is_an_error_on_every_backend(backend):
    a, b = gf.constant([7, -7]), gf.constant([0, 2])
    for out in (a // b, a % b, gf.floordiv(a, b), gf.mod(a, b)):
        with gf.Session(backend=backend) as sess, \
                pytest.raises(gf.errors.InvalidArgumentError, match="integer division by zero"):
            sess.run(out)
    np.testing.assert_array_equal(_run(a // 2, backend=backend), [3, -4])
    assert np.isinf(_run(gf.constant(1.0) // 0.0, backend=backend))  # floats: IEEE's answer


def test_fetching_a_tensors_op_runs_it_and_gives_none():
    v = gf.Variable(1.0)
    bump = gf.assign_add(v, 2.0)
    with gf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(bump.op) is None and sess.run(v) == 3.0
        assert sess.run([bump.op, bump])[0] is None
    assert bump.op.name == bump.name and bump.op.outputs == [bump] and bump.op == bump.op


def test_names_that_differ_in_case_are_made_unique_as_tf1_does():
    names = [gf.constant(1.0, name=n).name for n in ("Mean", "mean", "MEAN", "mean_1", "Mean")]
    assert names == ["Mean", "mean_1", "MEAN_2", "mean_1_1", "Mean_3"]


def test_errors_take_tf1s_arguments_and_answer_its_attributes():
    err = gf.errors.InvalidArgumentError(None, None, "bad value")
    assert str(err) == err.message == "bad value" and err.error_code == 3
    assert isinstance(err, gf.errors.OpError) and isinstance(err, ValueError)
    assert gf.errors.OutOfRangeError("end").message == "end"
    with pytest.raises(gf.errors.OpError) as caught:
        with gf.Session() as sess:
            sess.run(gf.constant([1]) // gf.placeholder_with_default([0], [1]))
    assert "division by zero" in caught.value.message


def test_batching_a_list_of_one_tensor_gives_the_tensor():
    item = gf.train.slice_input_producer([gf.range(6)], shuffle=False)[0]
    batch = gf.train.batch([item], batch_size=3)
    assert isinstance(batch, gf.Tensor)
    doubled = batch * 2
    with gf.Session() as sess:
        coord = gf.train.Coordinator()
        threads = gf.train.start_queue_runners(sess, coord=coord)
        np.testing.assert_array_equal(sess.run(doubled), [0, 2, 4])
        coord.request_stop()
        coord.join(threads)


def test_queue_shapes_as_tf1_writes_them():
    scalars = gf.FIFOQueue(10, gf.int32, shapes=[])  # one dtype, one (scalar) shape
    fill = scalars.enqueue_many([[1, 2, 3]])
    padded = gf.PaddingFIFOQueue(5, [gf.int32], shapes=[[None]])
    puts = [padded.enqueue([gf.constant([1])]), padded.enqueue([gf.constant([2, 3, 4])])]
    with gf.Session() as sess:
        sess.run(fill)
        np.testing.assert_array_equal(sess.run(scalars.dequeue_many(2)), [1, 2])
        sess.run(puts)
        np.testing.assert_array_equal(sess.run(padded.dequeue_many(2)),
                                      [[1, 0, 0], [2, 3, 4]])


def test_padded_batch_takes_padding_values_as_tensors():
    data = gf.data.Dataset.range(3).map(lambda x: gf.fill([x], x)).padded_batch(
        3, padded_shapes=[None], padding_values=gf.constant(-1, gf.int64))
    with gf.Session() as sess:
        got = sess.run(data.make_one_shot_iterator().get_next())
    np.testing.assert_array_equal(got, [[-1, -1], [1, -1], [2, 2]])


def test_py_func_results_that_a_cast_would_change_are_refused():
    """TF1 refuses any other dtype; gradflow converts where only float rounding can
    happen, and refuses what would wrap, truncate or flip (never a silent cast)."""
    x = gf.constant([1.5, 2.0])
    refused = [gf.py_func(lambda: np.array([2**40, 5], np.int64), [], gf.int32),
               gf.py_func(lambda: np.array([1.7, -2.9]), [], gf.int32),
               gf.py_func(lambda: np.array([-1, 2]), [], gf.uint8),
               gf.py_func(lambda: 1.5, [], gf.int32)]
    converted = [gf.py_func(lambda: 3, [], gf.int32), gf.py_func(lambda: 1.5, [], gf.float32),
                 gf.py_func(lambda v: v.astype(np.float64) * 2, [x], gf.float32)]
    with gf.Session() as sess:
        for out in refused:
            with pytest.raises(gf.errors.InvalidArgumentError, match="py_func"):
                sess.run(out)
        got = sess.run(converted)
    assert got[0] == 3 and got[1] == 1.5
    np.testing.assert_array_equal(got[2], [3.0, 4.0])


def test_second_derivatives_through_chained_lstm_cells(backend):
    """lstm_h reads the cell state that lstm_c made from the same gates: the second-order
    rule takes partial derivatives, the outer chain rule adds that path (once)."""
    x = gf.placeholder(gf.float64, [2, 3])
    cell = gf.nn.rnn_cell.LSTMCell(3, dtype=gf.float64)
    h, state = cell(x, cell.zero_state(2, gf.float64))
    h2, _ = cell(x * 0.5, state)
    (gx,) = gf.gradients(gf.reduce_sum(gf.sin(h2)), [x])
    q = gf.reduce_sum(gx * gx)
    (hx,) = gf.gradients(q, [x])
    value = np.random.default_rng(0).standard_normal((2, 3))
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = sess.run(hx, {x: value})
        numeric = np.zeros_like(value)
        for i in np.ndindex(value.shape):
            step = np.zeros_like(value)
            step[i] = 1e-6
            numeric[i] = (sess.run(q, {x: value + step}) - sess.run(q, {x: value - step})) / 2e-6
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_constants_fill_a_shape_as_tf1_does():
    """TF1's rule: the values in row-major order, the last one repeating."""
    made = [gf.get_variable("b", [2, 3], initializer=gf.constant_initializer([1.0, 2.0, 3.0])),
            gf.get_variable("c", [2, 3], initializer=gf.constant_initializer([[1.0], [2.0]])),
            gf.get_variable("d", [3, 2], initializer=gf.constant_initializer(range(1, 7))),
            gf.constant([1.0, 2.0, 3.0], shape=(2, 3)), gf.constant(7, shape=[2]),
            gf.get_variable("i", [3], dtype=gf.int32), gf.get_variable("flag", [2], gf.bool)]
    got = _run(made)
    np.testing.assert_array_equal(got[0], [[1, 2, 3], [3, 3, 3]])
    np.testing.assert_array_equal(got[1], [[1, 2, 2], [2, 2, 2]])
    np.testing.assert_array_equal(got[2], [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(got[3], [[1, 2, 3], [3, 3, 3]])
    np.testing.assert_array_equal(got[4], [7, 7])
    np.testing.assert_array_equal(got[5], [0, 0, 0])  # no initializer: zeros, as TF1
    np.testing.assert_array_equal(got[6], [False, False])
    with pytest.raises(ValueError, match="3 values for shape"):
        gf.constant([1, 2, 3], shape=[2])


def test_each_new_cell_takes_its_own_scope_even_where_variables_are_reused():
    x = gf.placeholder(gf.float32, [2, 3])
    with gf.variable_scope("s", reuse=gf.AUTO_REUSE):
        for _ in range(2):
            cell = gf.nn.rnn_cell.LSTMCell(4)
            cell(x, cell.zero_state(2, gf.float32))
    assert [v.name for v in gf.global_variables()] == [
        "s/lstm_cell/kernel", "s/lstm_cell/bias", "s/lstm_cell_1/kernel", "s/lstm_cell_1/bias"]
    with gf.variable_scope("s", reuse=True):  # a model built again finds its variables
        for _ in range(2):
            cell = gf.nn.rnn_cell.LSTMCell(4)
            cell(x, cell.zero_state(2, gf.float32))
    assert len(gf.global_variables()) == 4


class _GetVariableCell(gf.nn.rnn_cell.RNNCell):
    """A TF1-style custom cell: its ``call`` asks for its weights on every step."""

    def __init__(self, units, name=None):
        super().__init__(name=name)
        self._units = units

    @property
    def state_size(self):
        return self._units

    @property
    def output_size(self):
        return self._units

    def call(self, inputs, state):
        w = gf.get_variable("w", [int(inputs.shape[1]) + self._units, self._units],
                            dtype=inputs.dtype)
        h = gf.tanh(gf.matmul(gf.concat([inputs, state], 1), w))
        return h, h


class _OldStyleCell(_GetVariableCell):
    """A cell of TF1's first releases: ``__call__`` itself, with its own scope."""

    def __call__(self, inputs, state, scope=None):
        with gf.variable_scope(scope or "old"):
            return self.call(inputs, state)


@pytest.mark.parametrize("make", [_GetVariableCell, _OldStyleCell])
def test_custom_cells_that_ask_for_variables_on_every_step(make):
    steps = [gf.placeholder(gf.float32, [2, 3]) for _ in range(3)]
    _, final = gf.nn.static_rnn(make(4), steps, dtype=gf.float32)
    sequence = gf.placeholder(gf.float32, [None, None, 3])
    outputs, _ = gf.nn.dynamic_rnn(make(4), sequence, dtype=gf.float32, scope="dyn")
    inner = "private_get_variable_cell" if make is _GetVariableCell else "old"  # as TF1
    assert [v.name for v in gf.global_variables()] == [f"rnn/{inner}/w", f"dyn/{inner}/w"]
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        assert sess.run(final, {p: np.ones((2, 3)) for p in steps}).shape == (2, 4)
        assert sess.run(outputs, {sequence: np.ones((2, 5, 3))}).shape == (2, 5, 4)


class _BuiltCell(_GetVariableCell):
    """A TF1 Layer-style cell: ``build(inputs_shape)`` with ``add_variable``."""

    def build(self, inputs_shape):
        depth = inputs_shape[1].value
        self._kernel = self.add_variable("kernel", [depth + self._units, self._units])
        self._bias = self.add_variable("bias", [self._units],
                                       initializer=gf.zeros_initializer(dtype=self.dtype))
        self.built = True

    def call(self, inputs, state):
        h = gf.tanh(gf.matmul(gf.concat([inputs, state], 1), self._kernel) + self._bias)
        return h, h


def test_a_cell_built_from_its_inputs_shape_with_add_variable():
    sequence = gf.placeholder(gf.float64, [2, 5, 3])
    cell = _BuiltCell(4, name="mine")
    outputs, _ = gf.nn.dynamic_rnn(cell, sequence, dtype=gf.float64)
    assert [v.name for v in cell.trainable_variables] == ["rnn/mine/kernel", "rnn/mine/bias"]
    assert cell.built and cell.dtype is gf.float64
    assert cell.trainable_variables[0].dtype is gf.float64
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        assert sess.run(outputs, {sequence: np.ones((2, 5, 3))}).shape == (2, 5, 4)


def test_record_datasets_read_file_names_fed_when_the_iterator_starts(tmp_path, backend):
    paths = []
    for k, lines in enumerate([["a", "b"], ["c"]]):
        paths.append(str(tmp_path / f"part{k}.tfrecord"))
        with gf.python_io.TFRecordWriter(paths[-1]) as writer:
            for line in lines:
                writer.write(line.encode())
    names = gf.placeholder(gf.string, [None])
    iterator = gf.data.TFRecordDataset(names).make_initializable_iterator()
    record = iterator.get_next()
    with gf.Session(backend=backend) as sess:
        for chosen, want in ((paths, [b"a", b"b", b"c"]), (paths[1:], [b"c"])):
            sess.run(iterator.initializer, {names: chosen})
            got = []
            with pytest.raises(gf.errors.OutOfRangeError):
                while True:
                    got.append(sess.run(record))
            assert got == want


def test_make_callable_runs_its_fetches_with_the_values_fed_in_order():
    x = gf.placeholder(gf.float32, [None])
    y = gf.placeholder(gf.float32, [None])
    v = gf.Variable(0.0)
    bump = gf.assign_add(v, gf.reduce_sum(x * y))
    with gf.Session() as sess:
        sess.run(v.initializer)
        step = sess.make_callable(bump, [x, y])
        assert step([1.0, 2.0], [3.0, 4.0]) == 11.0
        assert sess.make_callable([v, bump.op], [x, y])([1.0], [1.0]) == [11.0, None]
        assert sess.make_callable(v)() == 12.0
        with pytest.raises(TypeError, match="takes 2 values"):
            step([1.0])
        with pytest.raises(TypeError, match="accept_options"):
            step([1.0], [1.0], options=gf.RunOptions())
        traced = sess.make_callable(v, accept_options=True)
        assert traced(options=gf.RunOptions(), run_metadata=gf.RunMetadata()) == 12.0


def test_a_finalized_graph_refuses_new_ops_and_still_trains_saves_and_logs(tmp_path):
    # TF1 programs call sess.graph.finalize() before their loop to catch ops built per
    # step: everything a loop does through the session must add nothing to the graph
    x = gf.placeholder(gf.float32, [None, 2])
    w = gf.Variable(gf.ones([2, 1]))
    loss = gf.reduce_mean(gf.square(gf.matmul(x, w)))
    step = gf.train.get_or_create_global_step()
    train = gf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
    gf.summary.scalar("loss", loss)
    summary = gf.summary.merge_all()
    iterator = gf.data.Dataset.from_tensor_slices(
        np.ones((4, 2), np.float32)).batch(2).make_initializable_iterator()
    batch = iterator.get_next()
    saver = gf.train.Saver()
    init = gf.global_variables_initializer()
    graph = gf.get_default_graph()
    with gf.Session() as sess, gf.summary.FileWriter(str(tmp_path / "logs")) as writer:
        sess.run(init)
        sess.graph.finalize()
        assert graph.finalized
        before = len(graph.get_operations())
        sess.run(iterator.initializer)
        for _ in range(2):
            _, logged, at = sess.run([train, summary, step], {x: sess.run(batch)})
            writer.add_summary(logged, at)
        sess.make_callable(train, [x])(np.ones((1, 2), np.float32))
        path = saver.save(sess, str(tmp_path / "model"), global_step=step)
        saver.restore(sess, path)
        assert gf.train.latest_checkpoint(str(tmp_path)) == path
        assert sess.run(step) == 3 and w.eval(session=sess).shape == (2, 1)
        with pytest.raises(TypeError, match="feed_dict must be a dict.*Session"):
            w.eval(sess)
        assert len(graph.get_operations()) == before
        with pytest.raises(RuntimeError, match="Graph is finalized.*Const"):
            gf.constant(1.0)
        with pytest.raises(RuntimeError, match="Graph is finalized"):
            gf.Variable(1.0)
    graph._unsafe_unfinalize()
    gf.constant(1.0)


def test_unbatch_splits_every_component_into_rows():
    ds = gf.data.Dataset.from_tensors((np.arange(6).reshape(3, 2), np.array([7, 8, 9])))
    for flat in (ds.unbatch(), ds.apply(gf.data.experimental.unbatch())):
        assert [s.as_list() for s in flat.output_shapes] == [[2], []]
        x, y = flat.make_one_shot_iterator().get_next()
        got = []
        with gf.Session() as sess:
            with pytest.raises(gf.errors.OutOfRangeError):
                while True:
                    got.append(sess.run([x, y]))
        assert [(a.tolist(), int(b)) for a, b in got] == [([0, 1], 7), ([2, 3], 8), ([4, 5], 9)]
    rebatched = gf.data.Dataset.range(5).batch(2).unbatch().batch(3)
    assert rebatched.output_shapes.as_list() == [None]
    with pytest.raises(ValueError, match="scalar"):
        gf.data.Dataset.range(3).unbatch()
    uneven = gf.data.Dataset.from_tensors((np.zeros(2), np.zeros(3))).unbatch()
    with gf.Session() as sess, pytest.raises(gf.errors.InvalidArgumentError, match="rows"):
        sess.run(uneven.make_one_shot_iterator().get_next())


def test_reducing_an_empty_axis_gives_tf1s_bounds(backend):
    empty = np.zeros((0, 3), np.float32)
    got = _run([gf.reduce_max(empty, axis=0), gf.reduce_min(empty), gf.reduce_logsumexp(
        empty, axis=0), gf.reduce_max(np.zeros((0, 2), np.int32), axis=0),
        gf.reduce_min(np.zeros((2, 0), np.int64), axis=1, keepdims=True),
        gf.reduce_max(empty, axis=1)], backend=backend)
    assert got[0].tolist() == [-np.inf] * 3 and got[1] == np.inf
    assert got[2].tolist() == [-np.inf] * 3
    assert got[3].tolist() == [-2 ** 31] * 2 and got[3].dtype == np.int32
    assert got[4].tolist() == [[2 ** 63 - 1]] * 2 and got[5].shape == (0,)


def test_argmax_and_argmin_skip_nan_as_tf1s_kernels_do(backend):
    a = np.array([[1, np.nan, 3, np.nan], [np.nan, 5, 2, 1], [1, 2, 3, 4]], np.float32)
    b = np.array([[np.nan] * 3, [-np.inf] * 3, [np.nan, -np.inf, 3], [-np.inf, np.nan, -np.inf],
                  [np.inf, np.nan, np.inf]])
    got = _run([gf.argmax(a, 1), gf.argmin(a, 1), gf.argmax(a, 0), gf.argmax(b, 1),
                gf.argmin(b, 1), gf.reduce_max(a, 1)], backend=backend)
    assert [g.tolist() for g in got[:5]] == [[2, 1, 3], [0, 3, 0], [0, 1, 0, 2], [0, 0, 2, 0, 0],
                                             [0, 0, 1, 0, 0]]
    assert np.isnan(got[5][:2]).all() and got[5][2] == 4  # the maximum itself keeps NaN


def test_whole_floats_feed_an_integer_placeholder_and_fractions_are_refused():
    # aymericdamien's DCGAN/GAN examples feed labels made with np.ones to int32 placeholders
    labels = gf.placeholder(gf.int32, [None])
    pixels = gf.placeholder(gf.uint8, [None])
    with gf.Session() as sess:
        got = sess.run(labels * 2, {labels: np.concatenate([np.ones(2), np.zeros(2)])})
        assert got.tolist() == [2, 2, 0, 0] and got.dtype == np.int32
        assert sess.run(pixels, {pixels: np.array([255.0, 0.0])}).tolist() == [255, 0]
        for bad in ([1.5], [np.nan], [np.inf], [3e9]):
            with pytest.raises(gf.errors.InvalidArgumentError, match="would lose information"):
                sess.run(labels, {labels: bad})
        with pytest.raises(gf.errors.InvalidArgumentError, match="would lose information"):
            sess.run(pixels, {pixels: [-1.0]})
