"""TF1's TensorArray, custom_gradient, make_template, py_function and IndexedSlices,
written as TF1 programs write them, against TensorFlow 2.21.

The expected values are TensorFlow 2.21's (``tensorflow.compat.v1`` with
``disable_v2_behavior()``, graph mode), written in as literals: each program below was
run once, unchanged, with ``import tensorflow.compat.v1 as tf`` in place of gradflow, and
its fetched values printed to 7 significant digits. The checks then run on every CPU
backend without TensorFlow.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError

RNG = np.random.default_rng(47)
EMB = RNG.normal(size=(5, 3)).round(3).astype(np.float32)
WX = RNG.normal(size=(3, 4)).round(3).astype(np.float32) * 0.5
WH = RNG.normal(size=(4, 4)).round(3).astype(np.float32) * 0.5
WOUT = RNG.normal(size=(4, 5)).round(3).astype(np.float32)
INPUTS = RNG.normal(size=(4, 2, 3)).round(3).astype(np.float32)  # time, batch, depth
LOSS_W = RNG.normal(size=(6, 1, 5)).round(3).astype(np.float32)

def greedy_decoder(tf):
    """A hand-written greedy decoder: feed back the argmax, collect logits and ids."""
    emb = tf.get_variable("emb", initializer=EMB)
    wx = tf.get_variable("wx", initializer=WX)
    wh = tf.get_variable("wh", initializer=WH)
    wout = tf.get_variable("wout", initializer=WOUT)
    max_len = 6
    logits_ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    ids_ta = tf.TensorArray(tf.int32, size=max_len)

    def cond(t, tok, h, logits_ta, ids_ta):
        return t < max_len

    def body(t, tok, h, logits_ta, ids_ta):
        x = tf.nn.embedding_lookup(emb, tok)
        h = tf.tanh(tf.matmul(x, wx) + tf.matmul(h, wh))
        logits = tf.matmul(h, wout)
        tok = tf.cast(tf.argmax(logits, axis=1), tf.int32)
        return t + 1, tok, h, logits_ta.write(t, logits), ids_ta.write(t, tok)

    _, _, h, logits_ta, ids_ta = tf.while_loop(
        cond, body, [tf.constant(0), tf.constant([1]), tf.zeros([1, 4]), logits_ta, ids_ta])
    logits = logits_ta.stack()
    ids = ids_ta.stack()
    loss = tf.reduce_sum(logits * LOSS_W) + tf.reduce_sum(h)
    grads = tf.gradients(loss, [emb, wx, wh, wout])
    grads = [tf.convert_to_tensor(g) for g in grads]
    return [logits, ids, loss] + grads


def raw_rnn_style(tf):
    """A raw_rnn-style loop: inputs read from a TensorArray until each sequence ends,
    outputs emitted into another, state carried as a tuple."""
    inputs = tf.constant(INPUTS)
    seq_len = tf.constant([4, 2])
    wx = tf.get_variable("rwx", initializer=WX)
    wh = tf.get_variable("rwh", initializer=WH)
    inputs_ta = tf.TensorArray(tf.float32, size=4).unstack(inputs)
    emit_ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[2, 4])

    def cond(time, finished, state, emit_ta):
        return tf.logical_not(tf.reduce_all(finished))

    def body(time, finished, state, emit_ta):
        h, c = state
        x = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([2, 3]),
                    lambda: inputs_ta.read(time))
        new_c = c + tf.tanh(tf.matmul(x, wx) + tf.matmul(h, wh))
        new_h = tf.tanh(new_c) * 0.9
        keep = tf.expand_dims(tf.cast(tf.logical_not(finished), tf.float32), 1)
        new_h = keep * new_h + (1.0 - keep) * h
        new_c = keep * new_c + (1.0 - keep) * c
        emit_ta = emit_ta.write(time, new_h * keep)
        finished = time + 1 >= seq_len
        return time + 1, finished, (new_h, new_c), emit_ta

    state0 = (tf.zeros([2, 4]), tf.zeros([2, 4]))
    _, _, (h, c), emit_ta = tf.while_loop(
        cond, body, [tf.constant(0), tf.constant([False, False]), state0, emit_ta])
    outputs = emit_ta.stack()
    loss = tf.reduce_sum(outputs * outputs) + tf.reduce_sum(c * 0.5)
    grads = tf.gradients(loss, [inputs, wx, wh])
    return [outputs, h, c, loss] + grads


def array_ops(tf):
    """The other operations of a TensorArray, outside loops, with gradients."""
    x = tf.constant(INPUTS[:, 0, :])  # 4 x 3
    ta = tf.TensorArray(tf.float32, size=4, clear_after_read=False).unstack(x * 2.0)
    gathered = ta.gather([3, 1])
    read = ta.read(2)
    sc = tf.TensorArray(tf.float32, size=5).scatter([4, 0, 2, 1], tf.sin(x))
    stacked = sc.stack()  # row 3 never written: zeros
    sp = tf.TensorArray(tf.float32, size=3, infer_shape=False, clear_after_read=False)
    sp = sp.split(x * x, [1, 0, 3])
    concat = sp.concat()
    piece = sp.read(2)
    size = sp.size()
    loss = (tf.reduce_sum(gathered * [[1.0], [2.0]]) + tf.reduce_sum(read * 3.0)
            + tf.reduce_sum(stacked * tf.range(5.0)[:, None]) + tf.reduce_sum(concat)
            + tf.reduce_sum(piece * piece))
    return [gathered, read, stacked, concat, piece, size, tf.gradients(loss, x)[0]]


def custom_grads(tf):
    """tf.custom_gradient: a stable log1pexp, a gradient clipper, and one reading a
    variable."""
    x = tf.constant([-3.0, 0.0, 2.0, 50.0])

    @tf.custom_gradient
    def log1pexp(v):
        e = tf.exp(v)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))
        return tf.log(1 + e), grad

    @tf.custom_gradient
    def clip_gradient(v):
        def grad(dy):
            return tf.clip_by_norm(dy, 1.0)
        return tf.identity(v), grad

    w = tf.get_variable("cw", initializer=np.float32([1.5, -2.0, 0.5, 1.0]))

    @tf.custom_gradient
    def scaled(v):
        def grad(dy, variables=None):
            return dy * w * 2.0, [dy * v * 3.0]
        return v * w, grad

    y1 = log1pexp(x[:3])
    y2 = clip_gradient(x * 4.0)
    y3 = scaled(x)
    loss = tf.reduce_sum(y1) + tf.reduce_sum(y2 * 2.0) + tf.reduce_sum(y3)
    gx, gw = tf.gradients(loss, [x, w])
    return [y1, y2, y3, gx, gw]


def template_names(tf):
    """tf.make_template: variables made on the first call, shared after."""
    def layer(x, units):
        w = tf.get_variable("w", [3, units], initializer=tf.ones_initializer())
        return tf.matmul(x, w)

    first = tf.make_template("layer", layer, units=2)
    second = tf.make_template("layer", layer, units=2)
    now = tf.make_template("eager_scope", layer, create_scope_now_=True, units=1)
    x = tf.ones([1, 3])
    with tf.variable_scope("outer"):
        a = first(x)
    b, c, d = first(x * 2.0), second(x), now(x)
    return [a, b, c, d], [v.name for v in tf.trainable_variables()], [
        first.variable_scope_name, second.variable_scope_name, now.variable_scope_name]


# -- TensorFlow 2.21's values ---------------------------------------------------------

GREEDY_DECODER = [
    [[[-0.7480127, -0.5008159, 0.2449112, 1.65745, -2.070016]], [[0.170698, 0.7148939,
     -0.1586893, -0.9533017, 0.7667114]], [[0.2592355, 0.6563735, -0.8897087, -0.2093972,
     -0.4788842]], [[-0.732811, -0.3959807, 0.0675396, 1.710082, -3.634975]], [[0.5117474,
     0.8748668, -0.5638188, -1.294286, 0.8495007]], [[-0.643673, -0.4009218, -0.2468025,
     1.914329, -3.62747]]],
    [[3], [4], [1], [3], [1], [3]],
    1.966588,
    [[0, 0, 0], [-1.981196, 1.617235, 1.318441], [0, 0, 0], [-1.750275, -1.569916, -2.256025],
     [1.738207, 1.885334, 1.379503]],
    [[0.2565319, 3.291416, -5.952342, -4.433694], [0.3561092, 2.265412, -4.821059, -1.951432],
     [1.215617, 2.971668, -3.218136, -0.8691907]],
    [[1.856442, 4.21143, 0.6692456, -3.522525], [1.167864, 3.167912, 0.615781, -2.576333],
     [1.006254, 0.1038461, 0.5736117, 1.493006], [0.5784572, 0.8658916, 0.05714173, 0.7281511]],
    [[-0.5957625, -0.5965732, 0.7374165, -1.213304, 0.1358334], [0.33232, -0.8196269, 1.127493,
     -1.242664, 0.8772228], [1.05504, 1.810263, 0.9792564, 0.2919286, -0.2195507], [0.2232895,
     0.3256027, 0.306868, -0.01832888, -0.0762596]],
]
RAW_RNN_STYLE = [
    [[[-0.5233388, 0.5452598, -0.4232951, 0.5100378], [0.1385392, 0.615455, -0.03930017,
     0.3812183]], [[0.03034123, 0.8308953, -0.5064821, 0.1760159], [-0.2651489, 0.3971699,
     0.06142569, -0.003240121]], [[-0.5496156, 0.8463652, -0.7995412, -0.1620935], [-0, 0, 0,
     -0]], [[0.2507108, 0.8897907, -0.6949512, -0.6742522], [-0, 0, 0, -0]]],
    [[0.2507108, 0.8897907, -0.6949512, -0.6742522], [-0.2651489, 0.3971699, 0.06142569,
     -0.003240121]],
    [[0.2861285, 2.583272, -1.025675, -0.9710585], [-0.3036069, 0.4738439, 0.06835704,
     -0.00360015]],
    6.795942,
    [[[1.739955, -0.2300346, -1.262239], [-0.04081813, 0.9097396, -0.2618299]], [[0.8084015,
     -0.3527564, -0.6681245], [0.40107, 1.009992, 0.1524753]], [[0.6027541, 0.4008011,
     0.119704], [0, 0, 0]], [[0.1256169, 0.1043831, 0.01492546], [0, 0, 0]]],
    [[-0.5871417, 0.9406061, -0.7633022, 0.9302244], [-1.073955, 0.990483, -1.428637, 1.906859],
     [1.165306, -1.216401, 1.506086, -0.7772257]],
    [[0.1748802, -0.01956952, 0.659385, -0.06386529], [-0.06701629, 1.373031, -0.3385737,
     0.1799862], [0.0852423, -0.5820911, 0.5102319, 0.004691057], [-0.1313903, 0.5353835,
     -0.3544134, 0.2298694]],
]
ARRAY_OPS = [
    [[-0.84, 3.058, 4.62], [0.36, 1.662, 1.372]],
    [1.064, -0.506, -1.53],
    [[0.1790296, 0.7386059, 0.6334471], [-0.4077604, 0.9991267, 0.7390053], [0.5072579,
     -0.2503096, -0.692537], [0, 0, 0], [0.5260931, 0.6691021, -0.9977027]],
    [[0.306916, 0.537289, 2.259009], [0.0324, 0.6905609, 0.470596], [0.283024, 0.064009,
     0.585225], [0.1764, 2.337841, 5.3361]],
    [[0.0324, 0.6905609, 0.470596], [0.283024, 0.064009, 0.585225], [0.1764, 2.337841, 5.3361]],
    3,
    [[4.509707, 4.438682, -2.735023], [4.383328, 7.957424, 6.663315], [9.389864, 7.365555,
     4.121976], [1.776737, 19.39802, 55.25186]],
]
CUSTOM_GRADS = [
    [0.04858733, 0.6931472, 2.126928],
    [-12, 0, 8, 200],
    [-4.5, -0, 1, 50],
    [5.047426, -1.5, 3.880797, 4],
    [-9, 0, 6, 150],
]
TEMPLATE_VALUES = [[[3.0, 3.0]], [[6.0, 6.0]], [[3.0, 3.0]], [[3.0]]]
TEMPLATE_VARIABLES = ["outer/layer/w", "layer/w", "eager_scope/w"]  # TF adds ":0"
TEMPLATE_SCOPES = ["outer/layer/", "layer/", "eager_scope/"]


def _run(program, backend):
    graph = gf.Graph()
    with graph.as_default():
        fetches = program(gf)
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            return sess.run(fetches)


def _check(got, want):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert np.asarray(g).shape == w.shape, f"value {k}"
        if w.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w, err_msg=f"value {k}")
        else:
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=f"value {k}")


@pytest.mark.parametrize("program,want", [
    (greedy_decoder, GREEDY_DECODER), (raw_rnn_style, RAW_RNN_STYLE),
    (array_ops, ARRAY_OPS), (custom_grads, CUSTOM_GRADS)],
    ids=["greedy_decoder", "raw_rnn_style", "array_ops", "custom_grads"])
def test_programs_against_tensorflow(program, want, backend):
    _check(_run(program, backend), want)


def test_make_template_against_tensorflow(backend):
    graph = gf.Graph()
    with graph.as_default():
        fetches, names, scopes = template_names(gf)
        assert names == TEMPLATE_VARIABLES
        assert scopes == TEMPLATE_SCOPES
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            _check(sess.run(fetches), TEMPLATE_VALUES)


# -- behaviour TF1 programs rely on -------------------------------------------------------


def test_two_gradient_calls_in_one_run_keep_their_own_gradient_arrays():
    x = gf.placeholder(gf.float32, [4, 3])
    inputs = gf.TensorArray(gf.float32, size=4).unstack(x)
    _, out = gf.while_loop(lambda t, ta: t < 4,
                           lambda t, ta: (t + 1, ta.write(t, inputs.read(t) * 2.0)),
                           (0, gf.TensorArray(gf.float32, size=4)))
    ys = out.stack()
    g1 = gf.gradients(gf.reduce_sum(ys), x)[0]
    g2 = gf.gradients(gf.reduce_sum(ys * 3.0), x)[0]
    with gf.Session() as sess:
        a, b = sess.run([g1, g2], {x: np.ones((4, 3), np.float32)})
    np.testing.assert_array_equal(a, np.full((4, 3), 2.0))
    np.testing.assert_array_equal(b, np.full((4, 3), 6.0))


def test_nested_loop_variables_and_cond_carry_tensor_arrays():
    """A dict and an LSTMStateTuple of TensorArrays as loop variables; a cond that
    writes in one branch only."""
    state = gf.nn.rnn_cell.LSTMStateTuple(gf.TensorArray(gf.float32, size=3),
                                          gf.TensorArray(gf.int32, size=3))
    loop_vars = {"t": gf.constant(0), "arrays": state}

    def body(v):
        t, (fa, ia) = v["t"], v["arrays"]
        fa = gf.cond(t > 0, lambda: fa.write(t, gf.cast(t, gf.float32) * 1.5),
                     lambda: fa.write(t, gf.constant(-1.0)))
        return {"t": t + 1, "arrays": gf.nn.rnn_cell.LSTMStateTuple(fa, ia.write(t, t * t))}

    out = gf.while_loop(lambda v: v["t"] < 3, body, [loop_vars])
    fa, ia = out["arrays"]
    assert isinstance(fa, gf.TensorArray) and fa.element_shape.as_list() == []
    with gf.Session() as sess:
        f, i, n = sess.run([fa.stack(), ia.stack(), ia.size()])
    np.testing.assert_array_equal(f, [-1.0, 1.5, 3.0])
    np.testing.assert_array_equal(i, [0, 1, 4])
    assert n == 3


def test_a_decoder_loop_trains():
    """Gradient descent through a loop that writes its outputs into a TensorArray."""
    target = np.linspace(-0.5, 0.5, 5 * 2).reshape(5, 1, 2).astype(np.float32)
    w = gf.get_variable("w", initializer=np.float32([[0.1, -0.2], [0.3, 0.05]]))
    b = gf.get_variable("b", initializer=np.zeros((1, 2), np.float32))

    def body(t, h, ta):
        h = gf.tanh(gf.matmul(h, w) + b)
        return t + 1, h, ta.write(t, h)

    _, _, ta = gf.while_loop(lambda t, h, ta: t < 5, body,
                             (0, gf.ones([1, 2]), gf.TensorArray(gf.float32, size=5)))
    loss = gf.reduce_mean(gf.square(ta.stack() - target))
    train = gf.train.AdamOptimizer(0.05).minimize(loss)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(60):
            sess.run(train)
        last = sess.run(loss)
    assert last < first * 0.5


def test_tensor_array_errors_name_the_array():
    ta = gf.TensorArray(gf.float32, size=2, tensor_array_name="acts")
    with pytest.raises(TypeError, match="holds float32.*int32"):
        ta.write(0, gf.constant(1))
    with pytest.raises(ValueError, match="elements have shape"):
        ta.write(0, [1.0, 2.0]).write(1, [1.0, 2.0, 3.0])
    twice = ta.write(0, [1.0, 2.0])
    read_twice = twice.read(0) + twice.read(0)
    written_twice = twice.write(0, [3.0, 4.0]).stack()
    past_end = twice.write(2, [3.0, 4.0]).stack()
    with gf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="'acts'.*read index 0 twice"):
            sess.run(read_twice)
        with pytest.raises(InvalidArgumentError, match="already been written"):
            sess.run(written_twice)
        with pytest.raises(InvalidArgumentError, match="not resizeable and its size is 2"):
            sess.run(past_end)
        # an element never written reads as zeros once the element shape is known
        np.testing.assert_array_equal(sess.run(twice.stack()), [[1.0, 2.0], [0.0, 0.0]])


def test_while_loop_refuses_a_tensor_for_a_tensor_array():
    with pytest.raises(TypeError, match="loop variable 1 is a TensorArray"):
        gf.while_loop(lambda t, ta: t < 2, lambda t, ta: (t + 1, gf.zeros([])),
                      (0, gf.TensorArray(gf.float32, size=2)))


# -- custom_gradient, py_function, IndexedSlices -------------------------------------------


def test_custom_gradient_with_several_outputs_and_variables():
    x = gf.constant([1.0, 2.0])
    v = gf.Variable([3.0, 4.0])

    @gf.custom_gradient
    def pair(a):
        def grad(dy1, dy2, variables=None):
            assert variables == [v]
            return dy1 * 10.0 + dy2 * 100.0, [dy1 + dy2]
        return (a * v, a + v), grad

    y1, y2 = pair(x)
    gx, gv = gf.gradients(gf.reduce_sum(y1) + 2.0 * gf.reduce_sum(y2), [x, v])
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        got = sess.run([y1, y2, gx, gv])
    np.testing.assert_allclose(got[0], [3.0, 8.0])
    np.testing.assert_allclose(got[1], [4.0, 6.0])
    np.testing.assert_allclose(got[2], [210.0, 210.0])
    np.testing.assert_allclose(got[3], [3.0, 3.0])


def test_custom_gradient_needs_variables_argument_when_reading_variables():
    v = gf.Variable(2.0)

    @gf.custom_gradient
    def f(a):
        return a * v, lambda dy: dy

    with pytest.raises(TypeError, match="keyword argument 'variables'"):
        f(gf.constant(1.0))


def test_py_function_gives_eager_like_values():
    x = gf.placeholder(gf.float32, [None])
    seen = []

    def host(a, n):
        seen.append((type(a.numpy()), a.shape, int(n.numpy())))
        return a.numpy() * n.numpy(), np.int32(a.shape[0])

    y, count = gf.py_function(host, [x, gf.constant(3.0)], [gf.float32, gf.int32])
    single = gf.py_function(lambda a: a + 1.0, [x], gf.float32)
    with gf.Session() as sess:
        got = sess.run([y, count, single], {x: [1.0, 2.0]})
    np.testing.assert_array_equal(got[0], [3.0, 6.0])
    assert got[1] == 2
    np.testing.assert_array_equal(got[2], [2.0, 3.0])
    assert seen[0] == (np.ndarray, (2,), 3)


def test_indexed_slices_densify_and_train():
    w = gf.Variable(np.ones((4, 2), np.float32))
    grad = gf.IndexedSlices(gf.constant([[1.0, 2.0], [3.0, 4.0]]), gf.constant([2, 0]),
                            gf.constant([4, 2]))
    assert grad.shape.as_list() == [4, 2] and grad.dtype == gf.float32
    step = gf.train.GradientDescentOptimizer(0.5).apply_gradients([(grad, w)])
    dense = gf.convert_to_tensor(gf.IndexedSlices([[1.0], [2.0]], [1, 1], [3, 1]))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(step)
        np.testing.assert_array_equal(sess.run(w), [[-0.5, -1.0], [1, 1], [0.5, 0.0], [1, 1]])
        np.testing.assert_array_equal(sess.run(dense), [[0.0], [3.0], [0.0]])
    with pytest.raises(ValueError, match="needs its dense_shape"):
        gf.convert_to_tensor(gf.IndexedSlices([[1.0]], [0]))


def test_identity_close_and_flow():
    ta = gf.TensorArray(gf.float32, size=2, element_shape=[2]).write(0, [1.0, 2.0])
    same = ta.identity()
    assert same.flow is not ta.flow and same.handle is ta.handle
    assert ta.flow.dtype == gf.float32 and ta.element_shape.as_list() == [2]
    done = same.write(1, [3.0, 4.0])
    closed = done.close()
    with gf.Session() as sess:
        stacked, _ = sess.run([done.stack(), closed])
    np.testing.assert_array_equal(stacked, [[1.0, 2.0], [3.0, 4.0]])
