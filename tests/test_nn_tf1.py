"""TF1 semantics of the tf.nn activations, l2_normalize, weighted cross-entropy, top_k,
in_top_k, conv1d, conv2d_transpose and their tf.layers, beyond the op-spec table:
defaults, ties, extreme inputs, errors that name the tensor at fault, variable names
and shapes, and agreement with PyTorch where it has the same function."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError


def _run(backend, fetches, feed=None):
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        return sess.run(fetches, feed)


def _grad(backend, fn, x_value):
    x = gf.placeholder(gf.as_dtype(x_value.dtype.name), x_value.shape)
    y = fn(x)
    (g,) = gf.gradients(gf.reduce_sum(y), [x])
    return _run(backend, [y, g], {x: x_value})


_WIDE = np.array([-1e4, -800.0, -90.0, -30.0, -2.0, -0.5, -1e-8, 0.0, 1e-8, 0.5, 2.0, 30.0,
                  90.0, 800.0, 1e4])


# -- activations ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["elu", "selu", "softsign", "softplus", "swish", "silu",
                                  "relu6", "leaky_relu"])
def test_activations_are_finite_everywhere_with_finite_gradients(backend, name, dtype):
    x = _WIDE.astype(dtype)
    y, g = _grad(backend, getattr(gf.nn, name), x)
    assert y.dtype == np.dtype(dtype) and g.dtype == np.dtype(dtype)
    assert np.all(np.isfinite(y)), (name, y)
    assert np.all(np.isfinite(g)), (name, g)


def test_activations_match_torch(backend):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    x = _WIDE.astype(np.float64)
    t = torch.tensor(x)
    pairs = {
        "elu": functional.elu(t), "selu": functional.selu(t), "relu6": functional.relu6(t),
        "softsign": functional.softsign(t), "silu": functional.silu(t),
        "swish": functional.silu(t), "leaky_relu": functional.leaky_relu(t, 0.2),
        "softplus": torch.where(t > 20, t, torch.log1p(torch.exp(torch.clamp(t, max=20)))),
    }
    ph = gf.placeholder(gf.float64, x.shape)
    names = sorted(pairs)
    got = _run(backend, [getattr(gf.nn, n)(ph) for n in names], {ph: x})
    for n, value in zip(names, got):
        np.testing.assert_allclose(value, pairs[n].numpy(), rtol=1e-12, atol=1e-300,
                                   err_msg=n)


def test_activation_gradients_match_torch(backend):
    torch = pytest.importorskip("torch")
    functional = torch.nn.functional
    x = np.array([-50.0, -3.0, -0.7, -1e-3, 0.2, 1.1, 4.0, 5.5, 7.0, 50.0])
    for name, fn in [("elu", functional.elu), ("selu", functional.selu),
                     ("relu6", functional.relu6), ("softsign", functional.softsign),
                     ("silu", functional.silu), ("softplus", functional.softplus)]:
        t = torch.tensor(x, requires_grad=True)
        fn(t).sum().backward()
        gf.reset_default_graph()
        _, g = _grad(backend, getattr(gf.nn, name), x)
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14, err_msg=name)


def test_selu_uses_tf_constants(backend):
    y = _run(backend, gf.nn.selu(gf.constant([1.0, -1.0], gf.float64)))
    scale, alpha = 1.0507009873554804934193349852946, 1.6732632423543772848170429916717
    np.testing.assert_allclose(y, [scale, scale * alpha * (np.exp(-1.0) - 1.0)], rtol=1e-15)
    assert gf.nn.selu(gf.constant([1.0])).dtype is gf.float32


def test_elu_and_selu_slopes_at_zero_are_tfs(backend):
    """TF's gradient takes the linear side at 0 (and -0): selu's scale, not scale * alpha."""
    x = np.array([0.0, -0.0])
    _, g_selu = _grad(backend, gf.nn.selu, x)
    _, g_elu = _grad(backend, gf.nn.elu, x)
    np.testing.assert_allclose(g_selu, [1.0507009873554805] * 2, rtol=1e-15)
    np.testing.assert_allclose(g_elu, [1.0, 1.0], rtol=1e-15)


def test_the_first_softmax_cross_entropy_sends_no_gradient_to_its_labels():
    labels = gf.constant([[0.2, 0.8]], gf.float64)
    logits = gf.constant([[1.0, 2.0]], gf.float64)
    v1 = gf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    v2 = gf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert gf.gradients(v1, [labels]) == [None]
    (g_labels,) = gf.gradients(v2, [labels])
    (g1,), (g2,) = gf.gradients(v1, [logits]), gf.gradients(v2, [logits])
    with gf.Session() as sess:
        got = sess.run([v1, v2, g_labels, g1, g2])
    np.testing.assert_allclose(got[0], got[1])
    np.testing.assert_allclose(got[2], [[1.3132616875182228, 0.31326168751822286]])
    np.testing.assert_allclose(got[3], got[4])


def test_elu_large_negative_is_minus_one_and_its_gradient_is_tiny_not_cancelled(backend):
    y, g = _grad(backend, gf.nn.elu, np.array([-40.0, -745.0]))
    np.testing.assert_array_equal(y, [np.expm1(-40.0), -1.0])
    # exp(-745) is the smallest float64 (subnormal); CUDA's exp gives 0, one unit off
    atol = 5e-324 if backend == "cupy" else 0
    np.testing.assert_allclose(g, [np.exp(-40.0), np.exp(-745.0)], rtol=1e-12, atol=atol)


def test_leaky_relu_tf1_defaults_and_kernel_semantics(backend):
    x = np.array([-2.0, -0.5, 0.0, 3.0], np.float32)
    default, steep = _run(backend, [gf.nn.leaky_relu(x), gf.nn.leaky_relu(x, alpha=1.5)])
    np.testing.assert_allclose(default, [-0.4, -0.1, 0.0, 3.0], rtol=1e-6)
    # TF's kernel is ``x if x > 0 else alpha x``: alpha > 1 is not max(x, alpha x)
    np.testing.assert_allclose(steep, [-3.0, -0.75, 0.0, 3.0], rtol=1e-6)
    ints = gf.nn.leaky_relu(gf.constant([-5, 4]))
    assert ints.dtype is gf.float32  # TF1 converts integer features to float32
    np.testing.assert_allclose(_run(backend, ints), [-1.0, 4.0])
    alpha = gf.placeholder(gf.float32, ())
    np.testing.assert_allclose(_run(backend, gf.nn.leaky_relu(x, alpha), {alpha: 0.1}),
                               [-0.2, -0.05, 0.0, 3.0], rtol=1e-6)


def test_softplus_gradient_at_zero_is_one_half(backend):
    y, g = _grad(backend, gf.nn.softplus, np.zeros(3))
    np.testing.assert_allclose(y, np.log(2.0))
    np.testing.assert_allclose(g, 0.5)


def test_relu6_gradient_is_zero_at_the_kinks_and_relu6_keeps_integers(backend):
    _, g = _grad(backend, gf.nn.relu6, np.array([-1.0, 0.0, 3.0, 6.0, 7.0]))
    np.testing.assert_array_equal(g, [0.0, 0.0, 1.0, 0.0, 0.0])
    y = gf.nn.relu6(gf.constant([-3, 2, 9], gf.int64))
    assert y.dtype is gf.int64
    np.testing.assert_array_equal(_run(backend, y), [0, 2, 6])


def test_swish_beta_and_silu_alias(backend):
    x = np.linspace(-5, 5, 11)
    plain, beta, silu = _run(backend, [gf.nn.swish(x), gf.nn.swish(x, beta=2.0),
                                       gf.nn.silu(x)])
    np.testing.assert_allclose(plain, x / (1 + np.exp(-x)), rtol=1e-12)
    np.testing.assert_allclose(beta, x / (1 + np.exp(-2 * x)), rtol=1e-12)
    np.testing.assert_array_equal(plain, silu)


def test_softsign_of_huge_inputs(backend):
    y, g = _grad(backend, gf.nn.softsign, np.array([-1e30, 1e30], np.float32))
    np.testing.assert_array_equal(y, [-1.0, 1.0])
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_crelu_concatenates_on_the_last_axis(backend):
    x = gf.placeholder(gf.float32, (None, 3))
    y = gf.nn.crelu(x)
    assert y.shape.as_list() == [None, 6]
    out = _run(backend, y, {x: np.array([[1.0, -2.0, 0.5]], np.float32)})
    np.testing.assert_array_equal(out, [[1.0, 0.0, 0.5, 0.0, 2.0, 0.0]])


def test_activations_reject_integers_where_tf_does():
    for fn in (gf.nn.elu, gf.nn.selu, gf.nn.softsign, gf.nn.softplus, gf.nn.swish):
        with pytest.raises(TypeError, match="floating"):
            fn(gf.constant([1, 2]))
    with pytest.raises(TypeError, match="bool"):
        gf.nn.relu6(gf.constant([True]))


# -- l2_normalize and weighted cross-entropy --------------------------------------------------


def test_l2_normalize_defaults_and_aliases(backend):
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    whole, rows, dim = _run(backend, [gf.nn.l2_normalize(x), gf.nn.l2_normalize(x, axis=1),
                                      gf.nn.l2_normalize(x, dim=1)])
    np.testing.assert_allclose(whole, x / 5.0)  # axis=None: the whole tensor, as TF1
    np.testing.assert_allclose(rows, [[0.6, 0.8], [0.0, 0.0]])  # a zero row stays zero
    np.testing.assert_array_equal(rows, dim)
    with pytest.raises(ValueError, match="axis= or dim="):
        gf.nn.l2_normalize(x, axis=0, dim=0)
    with pytest.raises(TypeError, match="floating"):
        gf.nn.l2_normalize(gf.constant([1, 2]))


def test_l2_normalize_gradient_of_a_zero_vector_is_finite(backend):
    _, g = _grad(backend, lambda x: gf.nn.l2_normalize(x, axis=0), np.zeros(3))
    np.testing.assert_allclose(g, 1e6)  # 1 / sqrt(epsilon), as TF1


def test_weighted_cross_entropy_tf1_semantics(backend):
    z = np.array([0.0, 1.0, 1.0, 0.5, 0.0])
    x = np.array([-1000.0, -1000.0, 0.0, 2.0, 1000.0])
    out, plain, sigmoid_ce = _run(backend, [
        gf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=3.0),
        gf.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=1.0),
        gf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)])
    want = 3.0 * z * np.logaddexp(0, -x) + (1 - z) * np.logaddexp(0, x)
    np.testing.assert_allclose(out, want, rtol=1e-12)
    np.testing.assert_allclose(plain, sigmoid_ce, rtol=1e-12)
    _, g = _grad(backend, lambda t: gf.nn.weighted_cross_entropy_with_logits(
        labels=z, logits=t, pos_weight=3.0), x)
    # d/dx = (1 - z) - l sigmoid(-x), l = 1 + 2 z
    np.testing.assert_allclose(g, (1 - z) - (1 + 2 * z) * np.exp(-np.logaddexp(0, x)),
                               rtol=1e-12)


def test_weighted_cross_entropy_errors_name_the_tensors():
    logits = gf.placeholder(gf.float32, (2, 3), name="logits")
    labels = gf.placeholder(gf.float32, (2, 4), name="labels")
    with pytest.raises(ValueError, match="'labels'.*'logits'"):
        gf.nn.weighted_cross_entropy_with_logits(labels=labels, logits=logits, pos_weight=2.0)
    with pytest.raises(ValueError, match="pos_weight"):
        gf.nn.weighted_cross_entropy_with_logits(labels=labels, logits=logits)
    with pytest.raises(ValueError, match="not both"):
        gf.nn.weighted_cross_entropy_with_logits(labels=labels, targets=labels, logits=logits,
                                                 pos_weight=2.0)


# -- top_k and in_top_k -------------------------------------------------------------------


def test_top_k_returns_a_namedtuple_sorted_with_lower_index_first_on_ties(backend):
    x = gf.placeholder(gf.float32, (None, 6))
    result = gf.nn.top_k(x, k=4)
    assert type(result).__name__ == "TopKV2" and result._fields == ("values", "indices")
    assert result.indices.dtype is gf.int32 and result.values.dtype is gf.float32
    assert result.values.shape.as_list() == [None, 4]
    feed = np.array([[1, 3, 3, 2, 3, 1], [0, 0, 0, 0, 0, 0], [5, 4, 3, 2, 1, 0]], np.float32)
    values, indices = _run(backend, list(result), {x: feed})
    np.testing.assert_array_equal(indices, [[1, 2, 4, 3], [0, 1, 2, 3], [0, 1, 2, 3]])
    np.testing.assert_array_equal(values, [[3, 3, 3, 2], [0, 0, 0, 0], [5, 4, 3, 2]])
    unsorted = gf.nn.top_k(x, 4, sorted=False)
    np.testing.assert_array_equal(_run(backend, unsorted.indices, {x: feed}), indices)


def test_top_k_default_k_is_one_and_ties_pick_the_first(backend):
    values, indices = _run(backend, list(gf.nn.top_k(gf.constant([[2.0, 7.0, 7.0]]))))
    np.testing.assert_array_equal(values, [[7.0]])
    np.testing.assert_array_equal(indices, [[1]])


def test_top_k_gradient_goes_back_to_the_chosen_entries(backend):
    x = gf.placeholder(gf.float64, (2, 5))
    values, _ = gf.nn.top_k(x, 2)
    (g,) = gf.gradients(values, [x], grad_ys=gf.constant([[10.0, 1.0], [20.0, 2.0]]))
    feed = np.array([[0.0, 4.0, 4.0, 1.0, 4.0], [9.0, 3.0, 5.0, 5.0, -1.0]])
    got = _run(backend, g, {x: feed})
    np.testing.assert_array_equal(got, [[0, 10, 1, 0, 0], [20, 0, 2, 0, 0]])


def test_top_k_k_errors_name_the_tensor(backend):
    x = gf.placeholder(gf.float32, (2, 3), name="scores")
    with pytest.raises(ValueError, match="'scores'.*fewer than k = 4"):
        gf.nn.top_k(x, 4)
    with pytest.raises(ValueError, match="negative"):
        gf.nn.top_k(x, -1)
    with pytest.raises(TypeError, match="k must be an int"):
        gf.nn.top_k(x, gf.placeholder(gf.int32, ()))
    unknown = gf.placeholder(gf.float32, (2, None), name="wide")
    values, _ = gf.nn.top_k(unknown, 4)
    with pytest.raises(InvalidArgumentError, match="'wide'.*fewer than k = 4"):
        _run(backend, values, {unknown: np.zeros((2, 3), np.float32)})
    empty = gf.nn.top_k(x, 0)
    assert _run(backend, empty.values, {x: np.zeros((2, 3), np.float32)}).shape == (2, 0)


def test_in_top_k_counts_ties_as_in(backend):
    p = gf.placeholder(gf.float32, (None, 4))
    t = gf.placeholder(gf.int64, (None,))
    out = gf.nn.in_top_k(p, t, 2)
    assert out.dtype is gf.bool and out.shape.as_list() == [None]
    feed_p = np.array([[1, 5, 5, 5], [1, 5, 5, 5], [9, 2, 2, 1], [9, 2, 2, 1],
                       [0, 1, 2, 3], [np.nan, 1, 2, 3], [0, np.inf, 2, 3]], np.float32)
    feed_t = np.array([1, 0, 2, 3, 4, 3, 3])  # 4 is out of range
    got = _run(backend, out, {p: feed_p, t: feed_t})
    # row 0: three classes tie at the top, all "in"; row 2: 2 ties with 2 for second place;
    # out-of-range targets and rows with a non-finite prediction are False, as in TF1
    np.testing.assert_array_equal(got, [True, False, True, False, False, False, False])


def test_in_top_k_with_a_k_tensor_and_shape_errors(backend):
    p = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2]], np.float32)
    k = gf.placeholder(gf.int32, ())
    out = gf.nn.in_top_k(p, np.array([2, 2], np.int32), k)
    np.testing.assert_array_equal(_run(backend, out, {k: 1}), [False, False])
    np.testing.assert_array_equal(_run(backend, out, {k: 2}), [True, False])
    with pytest.raises(ValueError, match="targets 'tt'"):
        gf.nn.in_top_k(p, gf.placeholder(gf.int32, (2, 1), name="tt"), 1)
    with pytest.raises(ValueError, match="3 rows"):
        gf.nn.in_top_k(gf.placeholder(gf.float32, (3, 3)), gf.placeholder(gf.int32, (2,)), 1)


# -- conv1d and conv2d_transpose -------------------------------------------------------------


def _tf_crop(full, out_hw, value_hw, k, s, padding):
    """The TF1 output of a transposed convolution from the full (uncropped) one: SAME
    crops TF's padding (the smaller half on top and left); VALID keeps the top-left
    corner, rows and columns no window reaches staying zero."""
    out = np.zeros(full.shape[:1] + tuple(out_hw) + full.shape[3:])
    if padding == "SAME":
        top, left = (max((v - 1) * s + k - o, 0) // 2 for v, o in zip(value_hw, out_hw))
        return full[:, top:top + out_hw[0], left:left + out_hw[1]]
    rows, cols = min(out_hw[0], full.shape[1]), min(out_hw[1], full.shape[2])
    out[:, :rows, :cols] = full[:, :rows, :cols]
    return out


@pytest.mark.parametrize("stride,padding,out_hw", [(2, "SAME", (8, 6)), (2, "SAME", (7, 5)),
                                                   (2, "VALID", (9, 7)), (1, "SAME", (4, 3)),
                                                   (2, "VALID", (10, 8)),
                                                   (3, "VALID", (12, 9))])
def test_conv2d_transpose_matches_torch(backend, stride, padding, out_hw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    value = rng.normal(size=(2, 4, 3, 5))
    filt = rng.normal(size=(3, 3, 2, 5))  # [kh, kw, out_channels, in_channels]
    y = gf.nn.conv2d_transpose(value, filt, (2,) + out_hw + (2,), [1, stride, stride, 1],
                               padding)
    got = _run(backend, y)
    full = torch.nn.functional.conv_transpose2d(
        torch.tensor(value).permute(0, 3, 1, 2), torch.tensor(filt).permute(3, 2, 0, 1),
        stride=stride).permute(0, 2, 3, 1).numpy()
    want = _tf_crop(full, out_hw, (4, 3), 3, stride, padding)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_conv2d_transpose_is_the_gradient_of_conv2d(backend):
    rng = np.random.default_rng(1)
    x = gf.placeholder(gf.float64, (2, 7, 6, 3))
    w = gf.constant(rng.normal(size=(3, 2, 3, 4)))
    y = gf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME")
    g = rng.normal(size=(2, 4, 3, 4))
    (dx,) = gf.gradients(y, [x], grad_ys=gf.constant(g))
    transposed = gf.nn.conv2d_transpose(g, w, [2, 7, 6, 3], [1, 2, 2, 1], "SAME")
    want, got = _run(backend, [dx, transposed], {x: np.zeros((2, 7, 6, 3))})
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_conv2d_transpose_output_shape_errors_name_the_tensors(backend):
    value = gf.placeholder(gf.float32, (None, 4, 4, 8), name="value")
    filt = gf.placeholder(gf.float32, (3, 3, 16, 8), name="kernel")
    assert gf.nn.conv2d_transpose(value, filt, [5, 8, 8, 16], [1, 2, 2, 1]).shape.as_list() \
        == [5, 8, 8, 16]
    with pytest.raises(ValueError, match="gives 5 along axis 1.*'value'.*'kernel'"):
        gf.nn.conv2d_transpose(value, filt, [5, 10, 8, 16], [1, 2, 2, 1], "SAME")
    with pytest.raises(ValueError, match="output_shape has 4 channels.*'kernel'"):
        gf.nn.conv2d_transpose(value, filt, [5, 8, 8, 4], [1, 2, 2, 1])
    with pytest.raises(ValueError, match="value has 3 channels.*'kernel'"):
        gf.nn.conv2d_transpose(gf.placeholder(gf.float32, (1, 4, 4, 3), name="value"),
                               filt, [1, 8, 8, 16], [1, 2, 2, 1])
    with pytest.raises(ValueError, match="4 entries"):
        gf.nn.conv2d_transpose(value, filt, [8, 8, 16], [1, 2, 2, 1])
    with pytest.raises(ValueError, match=r"entries must be 1 \(NCHW\)"):  # NHWC strides
        gf.nn.conv2d_transpose(value, filt, [1, 16, 8, 8], [1, 2, 2, 1], data_format="NCHW")
    with pytest.raises(ValueError, match="batch and channel entries"):
        gf.nn.conv2d_transpose(value, filt, [1, 8, 8, 16], [2, 2, 2, 2])
    # an output_shape known only when the graph runs is checked then
    dims = gf.placeholder(gf.int32, (4,), name="dims")
    y = gf.nn.conv2d_transpose(value, filt, dims, [1, 2, 2, 1])
    feed = {value: np.ones((2, 4, 4, 8), np.float32), filt: np.ones((3, 3, 16, 8), np.float32)}
    assert _run(backend, y, {**feed, dims: [2, 7, 8, 16]}).shape == (2, 7, 8, 16)
    with pytest.raises(InvalidArgumentError, match="along axis 1.*'value'.*'kernel'"):
        _run(backend, y, {**feed, dims: [2, 9, 8, 16]})
    with pytest.raises(InvalidArgumentError, match="batch 3"):
        _run(backend, y, {**feed, dims: [3, 8, 8, 16]})


def test_conv2d_transpose_input_filters_aliases_and_shape_entries(backend):
    value = gf.placeholder(gf.float32, (None, 2, 2, 1))
    filt = gf.ones((2, 2, 1, 1))
    y = gf.nn.conv2d_transpose(input=value, filters=filt,
                               output_shape=[gf.shape(value)[0], 4, 4, 1], strides=2)
    assert y.shape.as_list() == [None, 4, 4, 1]
    out = _run(backend, y, {value: np.arange(8, dtype=np.float32).reshape(2, 2, 2, 1)})
    np.testing.assert_array_equal(out[1, :, :, 0], np.kron([[4, 5], [6, 7]], np.ones((2, 2))))


@pytest.mark.parametrize("stride,padding", [(1, "SAME"), (2, "VALID"), (3, "SAME")])
def test_conv1d_matches_torch(backend, stride, padding):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=(2, 11, 3)), rng.normal(size=(4, 3, 5))
    got = _run(backend, gf.nn.conv1d(x, w, stride, padding))
    xt = torch.tensor(x).permute(0, 2, 1)
    if padding == "SAME":
        out = -(-11 // stride)
        total = max((out - 1) * stride + 4 - 11, 0)
        xt = torch.nn.functional.pad(xt, (total // 2, total - total // 2))
    want = torch.nn.functional.conv1d(xt, torch.tensor(w).permute(2, 1, 0), stride=stride)
    np.testing.assert_allclose(got, want.permute(0, 2, 1).numpy(), rtol=1e-10, atol=1e-10)


def test_conv1d_arguments_and_errors():
    x = gf.placeholder(gf.float32, (None, 10, 3), name="seq")
    w = gf.zeros((3, 3, 8))
    assert gf.nn.conv1d(x, w, 1, "SAME").shape.as_list() == [None, 10, 8]
    assert gf.nn.conv1d(value=x, filters=w, stride=[1, 2, 1], padding="VALID").shape.as_list() \
        == [None, 4, 8]
    assert gf.nn.conv1d(input=x, filters=w, stride=2, padding="SAME",
                        data_format="NWC").shape.as_list() == [None, 5, 8]
    with pytest.raises(ValueError, match="'seq'.*3 channels.*expect 2"):
        gf.nn.conv1d(x, gf.zeros((3, 2, 8)), 1, "SAME")
    with pytest.raises(ValueError, match="'flat' must have rank 3"):
        gf.nn.conv1d(gf.placeholder(gf.float32, (2, 3), name="flat"), w, 1, "SAME")
    with pytest.raises(NotImplementedError, match="NWC"):
        gf.nn.conv1d(x, w, 1, "SAME", data_format="NCW")
    with pytest.raises(ValueError, match="stride"):
        gf.nn.conv1d(x, w, [2, 1, 1], "SAME")


# -- layers -------------------------------------------------------------------------------


def _variables():
    return [(v.name.split(":")[0], tuple(v.shape.as_list())) for v in gf.global_variables()]


def test_layer_conv1d_variables_and_shapes(backend):
    x = gf.placeholder(gf.float32, (None, 12, 3))
    h = gf.layers.conv1d(x, 8, 3, padding="same", activation=gf.nn.relu)
    h = gf.layers.conv1d(h, 4, 5, strides=2)
    h2 = gf.layers.conv1d(x, 2, 1, use_bias=False, name="pointwise")
    assert _variables() == [("conv1d/kernel", (3, 3, 8)), ("conv1d/bias", (8,)),
                            ("conv1d_1/kernel", (5, 8, 4)), ("conv1d_1/bias", (4,)),
                            ("pointwise/kernel", (1, 3, 2))]
    assert h.shape.as_list() == [None, 4, 4] and h2.shape.as_list() == [None, 12, 2]
    out = _run(backend, h, {x: np.ones((2, 12, 3), np.float32)})
    assert out.shape == (2, 4, 4)
    with pytest.raises(NotImplementedError, match="channels_last"):
        gf.layers.conv1d(x, 2, 1, data_format="channels_first")


def test_layer_conv2d_transpose_variables_and_shapes(backend):
    x = gf.placeholder(gf.float32, (None, 5, 4, 3))
    same = gf.layers.conv2d_transpose(x, 8, 3, strides=2, padding="same")
    valid = gf.layers.conv2d_transpose(x, 2, (3, 2), strides=(2, 3))
    one = gf.layers.conv2d_transpose(x, 4, 1, name="up")
    assert _variables() == [("conv2d_transpose/kernel", (3, 3, 8, 3)),
                            ("conv2d_transpose/bias", (8,)),
                            ("conv2d_transpose_1/kernel", (3, 2, 2, 3)),
                            ("conv2d_transpose_1/bias", (2,)),
                            ("up/kernel", (1, 1, 4, 3)), ("up/bias", (4,))]
    assert same.shape.as_list() == [None, 10, 8, 8]
    assert valid.shape.as_list() == [None, 11, 12, 2]  # n s + max(k - s, 0)
    assert one.shape.as_list() == [None, 5, 4, 4]
    results = _run(backend, [same, valid, one], {x: np.ones((2, 5, 4, 3), np.float32)})
    assert [r.shape for r in results] == [(2, 10, 8, 8), (2, 11, 12, 2), (2, 5, 4, 4)]


def test_layer_conv2d_transpose_with_unknown_spatial_sizes(backend):
    x = gf.placeholder(gf.float32, (None, None, None, 2))
    y = gf.layers.conv2d_transpose(x, 3, 3, strides=2, padding="valid",
                                   kernel_initializer=gf.ones_initializer(), use_bias=False)
    assert y.shape.as_list() == [None, None, None, 3]
    kernel = gf.global_variables()[0]
    ref = gf.nn.conv2d_transpose(x, kernel, [1, 7, 9, 3], [1, 2, 2, 1], "VALID")
    feed = {x: np.random.default_rng(3).normal(size=(1, 3, 4, 2)).astype(np.float32)}
    got, want = _run(backend, [y, ref], feed)
    assert got.shape == (1, 7, 9, 3)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_layer_conv2d_transpose_reuse_shares_the_kernel():
    x = gf.placeholder(gf.float32, (None, 4, 4, 2))
    gf.layers.conv2d_transpose(x, 3, 2, name="deconv")
    gf.layers.conv2d_transpose(x, 3, 2, name="deconv", reuse=True)
    assert [name for name, _ in _variables()] == ["deconv/kernel", "deconv/bias"]


def test_average_pooling2d_matches_tf1(backend):
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    valid, same = _run(backend, [gf.layers.average_pooling2d(x, 2, 2),
                                 gf.layers.average_pooling2d(x, 3, 2, padding="same")])
    np.testing.assert_allclose(valid[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])
    # SAME: the padded cells are not counted (TF1's AvgPool)
    np.testing.assert_allclose(same[0, :, :, 0], [[5.0, 6.5], [11.0, 12.5]])
    first = _run(backend, gf.layers.average_pooling2d(x.transpose(0, 3, 1, 2), 2, 2,
                                                      data_format="channels_first"))
    np.testing.assert_allclose(first[0, 0], [[2.5, 4.5], [10.5, 12.5]])
    with pytest.raises(ValueError, match="'channels_last' or 'channels_first'"):
        gf.layers.average_pooling2d(x, 2, 2, data_format="NCHW")


def test_sigmoid_cross_entropy_gradient_at_zero_logits(backend):
    # a zero-initialized last layer starts here: the gradient is sigmoid(0) - z
    z = np.array([[0.0, 1.0, 0.25]])
    labels = gf.constant(z)
    logits = gf.placeholder(gf.float64, (1, 3))
    loss = gf.reduce_sum(gf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    (grad,) = gf.gradients(loss, [logits])
    with gf.Session(backend=backend) as sess:
        value, g = sess.run([loss, grad], {logits: np.zeros((1, 3))})
    np.testing.assert_allclose(value, 3 * np.log(2.0), rtol=1e-12)
    np.testing.assert_allclose(g, 0.5 - z, rtol=1e-12)


def test_softmax_cross_entropy_casts_labels_to_the_logits_dtype(backend):
    """TF1 casts the labels: ``input_data``'s one-hot labels are float64, and the
    public tutorials feed them (through ``tf.data`` too) against float32 logits."""
    logits = gf.constant([[2.0, 0.5, -1.0], [0.0, 1.0, 3.0]])
    hot = np.eye(3)[[0, 2]]  # float64
    loss = gf.nn.softmax_cross_entropy_with_logits(labels=hot, logits=logits)
    same = gf.nn.softmax_cross_entropy_with_logits(labels=hot.astype(np.float32),
                                                   logits=logits)
    assert loss.dtype is gf.float32
    with gf.Session(backend=backend) as sess:
        got, want = sess.run([loss, same])
    np.testing.assert_array_equal(got, want)
