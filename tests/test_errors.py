"""Every bad input gets a clear error that names what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow import backends
from gradflow.errors import BackendUnavailableError, InvalidArgumentError


def test_missing_feed_names_the_placeholder_and_its_shape():
    x = gf.placeholder(gf.float32, (None, 784), name="images")
    y = gf.reduce_sum(x, name="total")
    with gf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match=r"placeholder 'images' \(shape \(None, 784\)"
                           r", dtype float32\), needed by fetch\(es\) 'total'"):
            sess.run(y)


def test_feed_of_wrong_shape_names_placeholder_and_expected_shape():
    x = gf.placeholder(gf.float32, (None, 3), name="x")
    with gf.Session() as sess:
        with pytest.raises(InvalidArgumentError,
                           match=r"shape \(2, 4\) to 'x', which has shape \(None, 3\)"):
            sess.run(x * 2.0, {x: np.zeros((2, 4))})


def test_feed_of_uncastable_dtype():
    y = gf.placeholder(gf.int64, (None,), name="labels")
    with gf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="dtype float64 to 'labels'.*int64"):
            sess.run(y + 1, {y: np.array([0.5, 1.5])})
        with pytest.raises(InvalidArgumentError, match="not a numeric array"):
            sess.run(y + 1, {y: np.array(["a", "b"])})
        assert sess.run(y + 1, {y: np.array([1, 2], np.int32)}).tolist() == [2, 3]


def test_feeding_an_operation_or_assignment_is_refused():
    v = gf.Variable(1.0)
    op = gf.no_op(name="nothing")
    assign = v.assign(2.0)
    with gf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="'nothing' .* cannot be fed"):
            sess.run(v, {op: 1.0})
        with pytest.raises(InvalidArgumentError, match="cannot be fed"):
            sess.run(v, {assign: 1.0})


def test_fetching_from_another_graph():
    with gf.Graph().as_default():
        foreign = gf.constant(1.0, name="foreign")
    with gf.Session() as sess:
        with pytest.raises(ValueError, match="'foreign': it belongs to another graph"):
            sess.run(foreign)


def test_mismatched_static_shapes_name_op_shapes_and_source_line():
    a = gf.placeholder(gf.float32, (3, 4), name="a")
    b = gf.placeholder(gf.float32, (5, 6), name="b")
    with pytest.raises(ValueError) as info:
        gf.matmul(a, b)
    message = str(info.value)
    assert "matmul" in message and "(3, 4)" in message and "(5, 6)" in message
    assert "test_errors.py:" in message
    with pytest.raises(ValueError, match=r"add: shapes \(3, 4\) and \(5, 6\) do not broadcast"):
        a + b


def test_mixed_kinds_need_a_cast():
    f = gf.placeholder(gf.float32, (2,))
    i = gf.placeholder(gf.int32, (2,))
    with pytest.raises(TypeError, match="use gf.cast"):
        f + i
    with pytest.raises(TypeError, match="Python float"):
        i * 0.5


def test_gradient_of_unrelated_variable_is_none():
    x = gf.Variable(1.0)
    unused = gf.Variable(2.0)
    assert gf.gradients(x * 3.0, [unused]) == [None]
    with pytest.raises(ValueError, match="no gradients provided for any variable"):
        gf.train.GradientDescentOptimizer(0.1).minimize(x * 0.0 + 1.0, var_list=[unused])


def test_unknown_backend_lists_available_ones():
    with pytest.raises(BackendUnavailableError, match="unknown backend 'jax'.*available here: "
                       r"numpy"):
        gf.Session(backend="jax")


def test_gpu_backend_without_gpu_says_what_to_install():
    if backends.available()["cupy"] is None:
        pytest.skip("this machine has a working CuPy GPU")
    with pytest.raises(BackendUnavailableError, match="backend 'cupy' cannot run here.*cupy"):
        gf.Session(backend="cupy")


def test_torch_cuda_without_gpu():
    if backends.available()["torch"] is not None:
        pytest.skip("torch is not installed")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(BackendUnavailableError, match="no CUDA device"):
        gf.Session(backend="torch", device="cuda")


def test_gradflow_backend_env_picks_default(monkeypatch):
    monkeypatch.setenv("GRADFLOW_BACKEND", "array_api_strict")
    assert gf.Session().backend.name == "array_api_strict"
    monkeypatch.setenv("GRADFLOW_BACKEND", "nonsense")
    with pytest.raises(BackendUnavailableError, match="unknown backend 'nonsense'"):
        gf.Session()


def test_available_reports_reasons():
    reasons = backends.available()
    assert reasons["numpy"] is None
    assert set(reasons) == {"numpy", "array_api_strict", "torch", "cupy"}
    assert all(r is None or isinstance(r, str) for r in reasons.values())


def test_run_time_error_names_the_op_and_source_line():
    a = gf.placeholder(gf.float32, (None, None), name="a")
    b = gf.placeholder(gf.float32, (None, None), name="b")
    c = gf.matmul(a, b, name="product")
    with gf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match=r"matmul 'product' failed at run time.*"
                           r"test_errors.py:"):
            sess.run(c, {a: np.ones((2, 3)), b: np.ones((4, 5))})


def test_closed_session_refuses_to_run():
    sess = gf.Session()
    sess.close()
    with pytest.raises(gf.errors.FailedPreconditionError, match="closed"):
        sess.run(gf.constant(1.0))


def test_symbolic_tensor_has_no_truth_value():
    x = gf.placeholder(gf.float32, (), name="flag")
    with pytest.raises(TypeError, match="'flag'"):
        bool(x)


def test_assign_of_wrong_shape():
    v = gf.Variable(np.zeros((2, 2)), name="w")
    with pytest.raises(ValueError, match="variable 'w' has shape \\(2, 2\\)"):
        v.assign(np.zeros(3))


def test_mixed_float_widths_name_both_inputs_and_lines():
    x = gf.placeholder(gf.float32, (2,), name="x32")
    y = gf.placeholder(gf.float64, (2,), name="y64")
    with pytest.raises(TypeError, match=r"multiply: its inputs must have the same dtype, but "
                       r"'x32' is float32 \(created at .*test_errors.py:\d+\) and 'y64' is "
                       r"float64 \(created at .*test_errors.py:\d+\); tensors do not promote "
                       r"\(TF1 semantics\): use gf.cast to convert one of them; at "
                       r".*test_errors.py:\d+"):
        x * y


@pytest.mark.parametrize("bad, shown", [([0, 3], "3"), ([-1, 2], "-1")])
def test_sparse_labels_outside_the_classes(backend, bad, shown):
    logits = gf.placeholder(gf.float32, (None, 3), name="logits")
    labels = gf.placeholder(gf.int64, (None,), name="labels")
    loss = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    z = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], np.float32)
    with gf.Session(backend=backend) as sess:
        with pytest.raises(InvalidArgumentError, match=rf"labels 'labels' has the value {shown}, "
                           r"outside the valid range \[0, 3\) of the 3 classes of logits "
                           r"'logits'"):
            sess.run(loss, {logits: z, labels: bad})
        good = sess.run(loss, {logits: z, labels: [2, 0]})
        empty = sess.run(loss, {logits: z[:0], labels: np.zeros(0, np.int64)})
    log_p = z - np.log(np.exp(z).sum(1, keepdims=True))
    np.testing.assert_allclose(good, [-log_p[0, 2], -log_p[1, 0]], rtol=1e-6)
    assert empty.shape == (0,)
