"""float16 and bfloat16 (issue 49): the dtypes, their ops' numbers on NumPy and torch
against float32 references rounded once, exact feeds and fetches, the refusal of
array_api_strict, fused against unfused graphs, checkpoints and GraphDef tables.

Tolerances: an op's result is compared with the same op computed in float32 on the
same (half) inputs and rounded to the half type once. One op that NumPy widens to
float32 (``gradflow.backends.half``) is within one half ulp of that (``rtol`` of
2 eps, eps = 2**-10 for float16, 2**-7 for bfloat16); torch computes natively, and ops
written as several rounded steps (layer norm, the cross entropies, the gradients) may
lose a few ulps more: ``rtol`` and ``atol`` (relative to the largest value) of 8 eps.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import gradflow as gf
from gradflow.backends import available
from gradflow.prim import serialize

HALVES = [gf.float16, gf.bfloat16]
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}
# the CPU backends with half types (array_api_strict refuses them: test below)
HALF_BACKENDS = [pytest.param("numpy"),
                 pytest.param("torch", marks=pytest.mark.skipif(
                     "torch" not in available(), reason="PyTorch is not installed"))]


def test_bfloat16_is_tf1s():
    b = gf.bfloat16
    assert gf.as_dtype("bfloat16") is b and gf.as_dtype(ml_dtypes.bfloat16) is b
    assert gf.as_dtype(np.dtype(ml_dtypes.bfloat16)) is b
    assert b.is_floating and not b.is_integer and b.size == 2 and b.is_half
    assert b.as_numpy_dtype is ml_dtypes.bfloat16
    assert b.max == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max) == -b.min
    assert b.max > 3.38e38 and gf.float16.max == 65504.0
    assert b != gf.float16 and b == "bfloat16" and repr(b) == "gf.bfloat16"


def _inputs(dtype):
    r = np.random.RandomState(0)
    nd = dtype.as_numpy_dtype
    return {"a": r.randn(4, 8).astype(nd), "b": r.randn(8, 3).astype(nd),
            "img": r.randn(2, 5, 5, 2).astype(nd), "k": r.randn(3, 3, 2, 4).astype(nd),
            "lab": np.eye(8)[[1, 2, 3, 0]].astype(nd), "big": r.rand(64, 64).astype(nd)}


def _ops(values, dtype):
    """Each op of the table over constants of ``values`` in ``dtype``."""
    c = {k: gf.constant(v.astype(np.float32), dtype=dtype) if dtype is gf.float32 else
         gf.constant(v) for k, v in values.items()}
    a, b, img, k, lab = c["a"], c["b"], c["img"], c["k"], c["lab"]
    single = {
        "add": a + a * a, "exp": gf.exp(a), "tanh": gf.tanh(a), "sigmoid": gf.sigmoid(a),
        "relu": gf.nn.relu(a), "sqrt": gf.sqrt(gf.abs(a)),
        "matmul": gf.matmul(a, b), "matmul_t": gf.matmul(b, a, transpose_a=True,
                                                         transpose_b=True),
        "batch_matmul": gf.matmul(gf.stack([a, a]), gf.stack([b, b])),
        "conv2d": gf.nn.conv2d(img, k, [1, 1, 1, 1], "SAME"),
        "sum": gf.reduce_sum(c["big"]), "mean": gf.reduce_mean(a, 1),
        "max": gf.reduce_max(a, 0), "softmax": gf.nn.softmax(a),
        "log_softmax": gf.nn.log_softmax(a), "l2_loss": gf.nn.l2_loss(a),
        "avg_pool": gf.nn.avg_pool(img, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
        "max_pool": gf.nn.max_pool(img, [1, 2, 2, 1], [1, 1, 1, 1], "SAME"),
    }
    composite = {
        "softmax_xent": gf.nn.softmax_cross_entropy_with_logits(labels=lab, logits=a),
        "sparse_xent": gf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=gf.constant([1, 2, 3, 0]), logits=a),
        "sigmoid_xent": gf.nn.sigmoid_cross_entropy_with_logits(labels=lab, logits=a),
        "layer_norm": gf.contrib.layers.layer_norm(a, center=False, scale=False),
        "moments_var": gf.nn.moments(a, [0])[1],
    }
    loss = gf.reduce_sum(single["conv2d"]) + gf.reduce_sum(single["matmul"] * 0.5) + \
        gf.reduce_sum(composite["softmax_xent"])
    composite["grad_a"], composite["grad_k"] = gf.gradients(loss, [a, k])
    return single, composite


@pytest.mark.parametrize("backend", HALF_BACKENDS)
@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_half_ops_match_float32_rounded_once(backend, dtype):
    values = _inputs(dtype)
    with gf.Graph().as_default():
        single, composite = _ops(values, dtype)
        with gf.Session(backend=backend) as sess:
            got = sess.run({**single, **composite})
    with gf.Graph().as_default():
        ref_single, ref_composite = _ops(values, gf.float32)
        with gf.Session(backend="numpy") as sess:
            ref = sess.run({**ref_single, **ref_composite})
    eps = EPS[dtype.name]
    for name, value in got.items():
        assert np.asarray(value).dtype == dtype.as_numpy_dtype, name
        want = np.asarray(ref[name]).astype(dtype.as_numpy_dtype).astype(np.float32)
        tol = 2 * eps if name in single and backend == "numpy" else 8 * eps
        np.testing.assert_allclose(np.asarray(value).astype(np.float32), want, rtol=tol,
                                   atol=tol * max(1.0, float(np.abs(want).max())),
                                   err_msg=f"{name} ({dtype.name} on {backend})")


@pytest.mark.parametrize("backend", HALF_BACKENDS)
@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_sums_and_products_accumulate_in_float32(backend, dtype):
    """ml_dtypes' own bfloat16 sum of 10,000 ones is 256 (it accumulates in bfloat16); TF
    2.21's reduce_sum gives 10000 (float16) and 9984 (bfloat16: 10000 rounded); a dot
    product of 3000 ones rounds once: 3000 (float16), 3008 (bfloat16, 3000 rounded to
    8 bits; TF 2.21's CPU kernel gives 2992). The mean of 100,000 float16 ones is NaN, as
    in TF 2.21: the count, 100000, is infinite in float16."""
    with gf.Graph().as_default():
        total = gf.reduce_sum(gf.ones([10000], dtype))
        dot = gf.matmul(gf.ones([1, 3000], dtype), gf.ones([3000, 1], dtype))
        mean = gf.reduce_mean(gf.ones([100000], dtype))
        with gf.Session(backend=backend) as sess, np.errstate(invalid="ignore", over="ignore"):
            got_total, got_dot, got_mean = sess.run([total, dot, mean])
    assert float(got_total) == (10000.0 if dtype is gf.float16 else 9984.0)
    assert float(got_dot[0, 0]) == (3000.0 if dtype is gf.float16 else 3008.0)
    assert np.isnan(float(got_mean)) if dtype is gf.float16 else float(got_mean) == 1.0


def _all_bits(dtype):
    return np.arange(1 << 16, dtype=np.uint16).view(dtype.as_numpy_dtype)


@pytest.mark.parametrize("backend", HALF_BACKENDS)
@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_feeds_and_fetches_keep_every_bit(backend, dtype):
    """All 65,536 patterns (NaNs with their payloads included) go in and out unchanged,
    through a placeholder, a variable and an op that only moves data."""
    bits = _all_bits(dtype)
    with gf.Graph().as_default():
        x = gf.placeholder(dtype, [None])
        v = gf.Variable(bits, name="v")
        moved = gf.reverse(gf.reverse(x, [0]), [0])
        with gf.Session(backend=backend) as sess:
            sess.run(v.initializer)
            fed, held, out = sess.run([x, v, moved], {x: bits})
    for got in (fed, held, out):
        assert got.dtype == dtype.as_numpy_dtype
        np.testing.assert_array_equal(got.view(np.uint16), bits.view(np.uint16))


@pytest.mark.parametrize("backend", HALF_BACKENDS)
@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_float32_fed_to_a_half_placeholder_is_rounded_as_tf1_does(backend, dtype):
    """TF 2.21's compat.v1 Session converts float32, float64 and list feeds of a half
    placeholder (``[1.1, 2.2, 3.3]`` gives bfloat16 1.10156, 2.20312, 3.29688)."""
    value = np.array([1.1, 2.2, 3.3, 1e-8, 70000.0], np.float32)
    with gf.Graph().as_default():
        x = gf.placeholder(dtype, [5])
        with gf.Session(backend=backend) as sess:
            for fed in (value, value.astype(np.float64), value.tolist()):
                got = sess.run(x, {x: fed})
                np.testing.assert_array_equal(
                    got.view(np.uint16), value.astype(dtype.as_numpy_dtype).view(np.uint16))
    if dtype is gf.bfloat16:
        assert got[:3].astype(np.float32).tolist() == [1.1015625, 2.203125, 3.296875]


@pytest.mark.parametrize("backend", HALF_BACKENDS)
def test_casts_between_float_types_both_ways(backend):
    r = np.random.RandomState(1)
    values = np.concatenate([r.randn(50) * 10.0 ** r.randint(-6, 6, 50),
                             [0.0, -0.0, 65504.0, 70000.0, 1e-8, np.inf, -np.inf]])
    floats = [gf.float16, gf.bfloat16, gf.float32, gf.float64]
    with gf.Graph().as_default():
        sources = {d: gf.constant(values.astype(d.as_numpy_dtype)) for d in floats}
        casts = {(a.name, b.name): gf.cast(sources[a], b) for a in floats for b in floats}
        with gf.Session(backend=backend) as sess:
            got = sess.run({f"{a}->{b}": t for (a, b), t in casts.items()})
    for a in floats:
        for b in floats:
            want = values.astype(a.as_numpy_dtype).astype(b.as_numpy_dtype)
            value = got[f"{a.name}->{b.name}"]
            assert value.dtype == b.as_numpy_dtype
            np.testing.assert_array_equal(value.astype(np.float64), want.astype(np.float64),
                                          err_msg=f"{a.name} -> {b.name} on {backend}")


@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_array_api_strict_refuses_half_tensors_by_name(dtype):
    if "array_api_strict" not in available():
        pytest.skip("array_api_strict is not installed")
    message = (r"'{}' \(created at .*\) is {}, and the array_api_strict backend has no "
               r"half-precision types")
    with gf.Graph().as_default():
        x = gf.placeholder(dtype, [2], name="halves")
        y = gf.cast(x, gf.float32) * 2.0
        w = gf.Variable(np.ones(3, dtype.as_numpy_dtype), name="weights")
        with gf.Session(backend="array_api_strict") as sess:
            with pytest.raises(gf.errors.UnimplementedError,
                               match=message.format("halves", dtype.name)):
                sess.run(y, {x: np.ones(2)})
            with pytest.raises(gf.errors.UnimplementedError,
                               match=message.format("weights", dtype.name)):
                sess.run(w.initializer)


@pytest.mark.parametrize("dtype", HALVES, ids=lambda d: d.name)
def test_fused_half_programs_give_the_unfused_bits(dtype):
    """An elementwise chain over 64 x 64 half values (large enough for a numba kernel)
    gives the unfused graph's bits: not computed in float32 by numba, rounded once."""
    r = np.random.RandomState(2)
    values = [r.randn(64, 64).astype(dtype.as_numpy_dtype) for _ in range(2)]
    results = []
    for optimize in (True, False):
        with gf.Graph().as_default():
            x, y = (gf.constant(v) for v in values)
            # no transcendental op: numba would take the whole chain
            z = (x * y + 0.3) * y - x / (1.0 + y * y)
            w = gf.maximum(z, x) * 3.0 + gf.square(y)
            with gf.Session(backend="numpy", optimize=optimize) as sess:
                results.append(sess.run([z, w]))
    for fused, unfused in zip(*results):
        np.testing.assert_array_equal(fused.view(np.uint16), unfused.view(np.uint16))


@pytest.mark.parametrize("backend", HALF_BACKENDS)
def test_saver_round_trip_of_half_variables(backend, tmp_path):
    r = np.random.RandomState(3)
    values = {"h": r.randn(3, 4).astype(np.float16),
              "b": r.randn(5).astype(ml_dtypes.bfloat16)}
    with gf.Graph().as_default():
        variables = {k: gf.Variable(v, name=k) for k, v in values.items()}
        saver = gf.train.Saver()
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            path = saver.save(sess, os.path.join(str(tmp_path), "model"))
        with gf.Session(backend=backend) as sess:
            saver.restore(sess, path)
            for k, var in variables.items():
                got = sess.run(var)
                assert got.dtype == values[k].dtype
                np.testing.assert_array_equal(got.view(np.uint16), values[k].view(np.uint16))
    reader = gf.train.load_checkpoint(path)
    assert reader.get_tensor("b").dtype == ml_dtypes.bfloat16
    assert dict(gf.train.list_variables(path)) == {"h": [3, 4], "b": [5]}


def test_tensor_protos_and_graph_def_name_the_half_types():
    """TensorFlow's DataType numbers: DT_BFLOAT16 14, DT_HALF 19; ``half_val`` holds both."""
    assert serialize.DATATYPES[gf.bfloat16] == 14 and serialize.DATATYPES[gf.float16] == 19
    values = np.array([1.5, -2.25, 3.0e38], ml_dtypes.bfloat16)
    for proto in (serialize.tensor_proto(values, gf.bfloat16),
                  serialize.typed_proto(values, gf.bfloat16, (3,))):
        dtype, back = serialize.parse_proto(proto)
        assert dtype is gf.bfloat16
        np.testing.assert_array_equal(back.view(np.uint16), values.view(np.uint16))
    pytest.importorskip("tensorboardX", reason="tensorboardX is not installed")
    from gradflow.summary.graph_def import graph_def

    with gf.Graph().as_default() as g:
        gf.placeholder(gf.bfloat16, [2], name="p")
        proto = graph_def(g)
    assert [n.attr["dtype"].type for n in proto.node if n.name == "p"] == [14]


def test_which_half_ops_numpy_and_cupy_run_in_float32():
    """The rule of ``gradflow.backends.half``: non-elementwise ops of half inputs, and
    elementwise ones of bfloat16, run in float32; data movement never; CuPy keeps matmul
    (cuBLAS accumulates in float32 itself)."""
    from gradflow.backends.half import widens

    with gf.Graph().as_default():
        h = gf.placeholder(gf.float16, [2, 2])
        b = gf.placeholder(gf.bfloat16, [2, 2])
        f = gf.placeholder(gf.float32, [2, 2])
        cases = {gf.matmul(h, h): (True, False), gf.reduce_sum(b): (True, True),
                 gf.nn.softmax(h): (True, True), h * h: (False, False),
                 b * b: (True, True), gf.reshape(b, [4]): (False, False),
                 gf.transpose(h): (False, False), gf.reduce_sum(f): (False, False),
                 gf.cast(h, gf.float32): (False, False), gf.argmax(b, 1): (True, True)}
        for node, (on_numpy, on_cupy) in cases.items():
            assert widens(node) is on_numpy, node
            assert widens(node, native=("matmul",)) is on_cupy, node
