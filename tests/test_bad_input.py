"""Bad ids and overflowing feeds: one program each, the same error on every backend."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradflow as gf
from gradflow import backends
from gradflow.errors import InvalidArgumentError

BACKENDS = [b for b in ("numpy", "array_api_strict", "torch") if backends.available()[b] is None]


def _session(name):
    device = "device1" if name == "array_api_strict" else None
    return gf.Session(backend=backends.get(name, device=device))


def _errors(build, feeds):
    """The error message of each fetch of ``build()`` on each backend."""
    gf.reset_default_graph()
    fetches, placeholder = build()
    out = {}
    for name in BACKENDS:
        with _session(name) as sess:
            sess.run(gf.global_variables_initializer())
            for k, fetch in enumerate(fetches):
                with pytest.raises(InvalidArgumentError) as info:
                    sess.run(fetch, {placeholder: feeds})
                out[name, k] = str(info.value)
    return out


def _embedding_program():
    table = gf.Variable(np.arange(20.0).reshape(10, 2))
    ids = gf.placeholder(gf.int64, (None,), name="ids")
    rows = gf.nn.embedding_lookup(table, ids)
    step = gf.train.GradientDescentOptimizer(0.1).minimize(gf.reduce_sum(rows))
    return [rows, step], ids


@pytest.mark.parametrize("bad,position", [(10, 3), (-1, 3), (2 ** 40, 3)])
def test_out_of_range_id_same_error_everywhere(bad, position):
    ids = np.array([0, 1, 2, bad, 4])
    messages = _errors(_embedding_program, ids)
    for (name, _), text in messages.items():
        assert f"indices[{position}] = {bad} is not in [0, 10)" in text, (name, text)
        assert re.search(r"test_bad_input\.py:\d+", text), text
        assert "gather" in text, text
    forward = {m for (_, k), m in messages.items() if k == 0}
    gradient = {m for (_, k), m in messages.items() if k == 1}
    assert len(forward) == 1 and len(gradient) == 1, messages  # identical on every backend
    assert "in the gradient of gather 'embedding_lookup'" in gradient.pop()


def test_a_training_step_with_a_bad_id_changes_nothing():
    for name in BACKENDS:
        gf.reset_default_graph()
        (rows, step), ids = _embedding_program()
        with _session(name) as sess:
            sess.run(gf.global_variables_initializer())
            before = sess.run(gf.global_variables()[0])
            with pytest.raises(InvalidArgumentError):
                sess.run(step, {ids: [1, 10]})
            np.testing.assert_array_equal(sess.run(gf.global_variables()[0]), before)


def test_validate_indices_false_skips_the_check():
    table = gf.constant(np.arange(6.0).reshape(3, 2))
    ids = gf.placeholder(gf.int32, (None,))
    rows = gf.gather(table, ids, validate_indices=False)
    with gf.Session(backend="numpy") as sess:  # the caller vouched: NumPy reads -1 as last
        np.testing.assert_array_equal(sess.run(rows, {ids: [-1]}), [[4.0, 5.0]])
    checked = gf.gather(table, ids)
    for name in BACKENDS:
        with _session(name) as sess, pytest.raises(InvalidArgumentError, match="indices"):
            sess.run(checked, {ids: [-1]})


def test_gather_nd_names_the_bad_tuple():
    params = gf.placeholder(gf.float32, (2, 3))
    out = gf.gather_nd(params, [[0, 1], [2, 0]])
    for name in BACKENDS:
        with _session(name) as sess, pytest.raises(
                InvalidArgumentError, match=r"indices\[1\] = \[2, 0\] does not index into "
                                            r"param shape \[2,3\]"):
            sess.run(out, {params: np.zeros((2, 3), np.float32)})


def test_one_hot_out_of_range_is_an_all_off_row():  # TF1's documented semantics
    ids = gf.placeholder(gf.int64, (None,))
    hot = gf.one_hot(ids, 3, on_value=5.0, off_value=-1.0)
    for name in BACKENDS:
        with _session(name) as sess:
            got = sess.run(hot, {ids: [2, -1, 3]})
        np.testing.assert_array_equal(got, [[-1, -1, 5], [-1, -1, -1], [-1, -1, -1]])
    with pytest.raises(ValueError, match="depth must not be negative"):
        gf.one_hot(ids, -1)


@pytest.mark.parametrize("value", [2 ** 32 + 3, 2 ** 40, -(2 ** 31) - 1])
def test_overflowing_feed_same_error_everywhere(value):
    def build():
        labels = gf.placeholder(gf.int32, (None,), name="labels")
        return [labels * 1], labels

    messages = _errors(build, np.array([1, value], np.int64))
    assert len(set(messages.values())) == 1, messages
    text = messages[BACKENDS[0], 0]
    assert f"cannot feed the value {value} to 'labels', which is int32" in text
    assert "test_bad_input.py" in text  # where the placeholder was made


def test_float64_to_float32_rounding_stays_allowed():
    x = gf.placeholder(gf.float32, (None,))
    for name in BACKENDS:
        with _session(name) as sess:
            np.testing.assert_allclose(sess.run(x, {x: np.array([0.1, 1e10])}), [0.1, 1e10],
                                       rtol=1e-7)


def test_native_torch_feed_that_overflows_is_refused():
    torch = pytest.importorskip("torch")
    labels = gf.placeholder(gf.int32, (None,), name="labels")
    with gf.Session(backend="torch") as sess:
        with pytest.raises(InvalidArgumentError, match="4294967299 to 'labels'"):
            sess.run(labels, {labels: torch.tensor([1, 2 ** 32 + 3])})
        with pytest.raises(InvalidArgumentError, match="float32 to 'labels'"):
            sess.run(labels, {labels: torch.tensor([1.5])})


def test_unknown_rank_transpose_and_squeeze_work():
    x = gf.placeholder(gf.float32)
    t = gf.transpose(x)
    s = gf.squeeze(gf.placeholder_with_default(x, shape=None))
    (g,) = gf.gradients(gf.reduce_sum(t * np.float32(2.0)), [x])
    value = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    for name in BACKENDS:
        with _session(name) as sess:
            out, squeezed, grad = sess.run([t, s, g], {x: value})
        np.testing.assert_array_equal(out, value.T)
        np.testing.assert_array_equal(squeezed, value[0])
        np.testing.assert_array_equal(grad, np.full(value.shape, 2.0))


def test_unknown_rank_where_the_rank_is_needed_names_op_and_line():
    x = gf.placeholder(gf.float32, name="shapeless")
    with pytest.raises(ValueError, match=r"unstack: the rank of 'shapeless' .* is "
                                         r"unknown.*test_bad_input\.py:\d+"):
        gf.unstack(x)


def test_numerics_errors_name_the_lines():
    v = gf.Variable([1.0, -1.0])
    root = gf.sqrt(v)  # NaN for -1
    checked = gf.check_numerics(root, "root")
    edge = gf.sqrt(gf.abs(v) - 1.0)  # 0 forward; an infinite gradient
    step = gf.train.GradientDescentOptimizer(0.1).minimize(gf.reduce_sum(edge))
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        with pytest.raises(InvalidArgumentError, match=r"created at .*test_bad_input\.py:\d+; "
                                                       r"checked at .*test_bad_input\.py"):
            sess.run(checked)
    with gf.Session(check_numerics=True) as sess:
        sess.run(gf.global_variables_initializer())
        with pytest.raises(InvalidArgumentError, match=r"in the gradient of sqrt"):
            sess.run(step)


def test_a_nan_in_one_rows_gradient_stays_in_that_row(backend):
    """The gradient of a gather adds each row's gradient into its own row: a NaN there
    reaches no other row (the fuzzer found a one-hot product spreading it, 0 * nan)."""
    table = gf.Variable(np.zeros((5, 2), np.float32), name="table")
    ids = gf.placeholder(gf.int32, (None,), name="ids")
    weights = gf.placeholder(gf.float32, (None, 2), name="weights")
    loss = gf.reduce_sum(gf.nn.embedding_lookup(table, ids) * weights)
    [grad] = gf.gradients(loss, [table])
    with gf.Session(backend=backend) as sess:
        sess.run(table.initializer)
        got = sess.run(grad, {ids: [3, 0, 3], weights: [[np.nan, 1.0], [2.0, 3.0], [1.0, 1.0]]})
    np.testing.assert_array_equal(got, [[2.0, 3.0], [0, 0], [0, 0], [np.nan, 2.0], [0, 0]])


def test_unknown_rank_keeps_the_static_dtype_of_every_output():
    """top_k's indices are int32 even where the input's rank is unknown (the fuzzer
    found them typed float32 at build time, int32 at run time)."""
    x = gf.placeholder(gf.float32, name="x")
    values, indices = gf.nn.top_k(x, 2)
    assert (values.dtype, indices.dtype) == (gf.float32, gf.int32)


def test_running_out_of_memory_is_a_resource_exhausted_error_naming_the_op(backend):
    n = gf.placeholder(gf.int64, (), name="n")
    big = gf.reduce_sum(gf.cast(gf.range(n), gf.float32))
    with gf.Session(backend=backend) as sess:
        with pytest.raises(gf.errors.ResourceExhaustedError, match=r"range.*test_bad_input"):
            sess.run(big, {n: 2 ** 42})


def test_sparse_cross_entropy_stays_finite_beside_an_infinitely_unlikely_class(backend):
    """A logit of -inf for a class that is not the label: the loss and its gradient are
    finite, as in TF1 (multiplying the one-hot by log_softmax gave 0 * -inf = NaN)."""
    x = gf.placeholder(gf.float32, (None, 4), name="x")
    y = gf.placeholder(gf.int64, (None,), name="y")
    loss = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x)
    [grad] = gf.gradients(gf.reduce_sum(loss), [x])
    logits = np.array([[1.0, -np.inf, 2.0, 0.5]], np.float32)
    with gf.Session(backend=backend) as sess:
        got_loss, got_grad = sess.run([loss, grad], {x: logits, y: [2]})
    finite = np.array([1.0, 2.0, 0.5])
    expected = np.log(np.exp(finite).sum()) - 2.0
    np.testing.assert_allclose(got_loss, [expected], rtol=1e-6)
    assert np.all(np.isfinite(got_grad)) and got_grad[0, 1] == 0.0
