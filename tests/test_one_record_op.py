"""A new fusible elementwise op is one record and one op spec (issue 46).

The test registers ``softsign_like`` (``x / (1 + |x|)``) here, as any op is added: its
Array API impl, its shape/dtype rule, its gradient (over primitives) and its scalar
expression, in one ``register`` call, and nothing anywhere else. Then, from that
record alone, the op

(a) fuses into a numba kernel on the NumPy backend, with its numbers and a gradient
    that finite differences confirm (float64);
(b) prints as CUDA C (the kernel text the CuPy backend compiles), which g++ compiles
    through the host stand-ins of ``tests/cuda_host.py`` and which gives the same
    numbers, float16 rounded as NumPy rounds it;
(c) lowers and runs on the torch backend, without a torch entry of its own;
(d) exports to ONNX from its scalar expression, and runs in ONNX Runtime with the
    same numbers;
(e) passes ``tests/test_ops.py``'s checks of its spec on every backend.

The registration is taken out of the registry when each test ends.
"""

from __future__ import annotations

import numpy as np
import pytest
import test_ops
from cuda_host import GXX
from op_specs import OpSpec, uniform
from test_cuda_kernels import _reference, _run_both_forms, assert_same

import gradflow as gf
from gradflow import backends
from gradflow.backends.cpu import numba_support
from gradflow.backends.cuda import kernels as cuda_kernels
from gradflow.backends.kernel_text import program_inputs
from gradflow.backends.numpy import fused as numpy_fused
from gradflow.backends.torch import out as torch_out
from gradflow.passes import optimize
from gradflow.passes.fusion import FUSED
from gradflow.prim import call
from gradflow.prim import scalar as sx
from gradflow.prim.registry import REGISTRY, apply, register

NAME = "test_only_softsign_like"
SHAPE = (64, 48)  # large enough for a numba kernel (numpy_fused.MIN_KERNEL_SIZE)


def _impl(xp, x):
    return x / (1 + xp.abs(x))


def _grad(node, g):  # d/dx x / (1 + |x|) = 1 / (1 + |x|)^2
    return [call.divide(g, call.square(call.add(call.abs(node.inputs[0]), 1.0)))]


def _scalar(args, node):
    if not sx.floating(node):
        return None
    return f"({args[0]} / ({sx.scalar_type(node)}(1) + np.abs({args[0]})))"


def softsign_like(x):
    return apply(NAME, [x])


def np_softsign_like(x):
    return x / (1 + np.abs(x))


# the op's one spec, as tests/op_specs.py writes them: builder, inputs, NumPy reference;
# tests/test_ops.py's checks run on it below (its inputs stay away from the kink at 0)
SPEC = OpSpec(NAME, (NAME,), softsign_like,
              lambda rng: [uniform(3, 4, lo=0.2, hi=3.0)(rng) * rng.choice([-1.0, 1.0], (3, 4))],
              np_softsign_like)


@pytest.fixture(autouse=True)
def op():
    """The op's one record, registered for the test and taken out afterwards."""
    register(NAME, _impl, lambda shapes, dtypes: (shapes[0], dtypes[0]), grad=_grad,
             scalar=_scalar)
    try:
        yield REGISTRY[NAME]
    finally:
        del REGISTRY[NAME]


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADFLOW_CACHE", str(tmp_path))


def _model(dtype=gf.float64):
    """``softsign_like(x) * s + b``: the fused kernel reads a whole input, a scalar and
    a row; fed ``s = 2``."""
    x = gf.placeholder(dtype, SHAPE, "x")
    s = gf.placeholder(dtype, (), "s")
    b = gf.placeholder(dtype, SHAPE[1:], "b")
    return x, s, b, softsign_like(x) * s + b


def _want(x, b):
    return np_softsign_like(x) * 2 + b


def _values(dtype="float64"):
    """``x`` of ``SHAPE`` and ``b`` of a row of it."""
    rng = np.random.default_rng(0)
    return [rng.uniform(-3.0, 3.0, SHAPE).astype(dtype),
            rng.uniform(-1.0, 1.0, SHAPE[1:]).astype(dtype)]


def _central_differences(sess, loss, x, feed, points, eps=1e-5):
    """d loss / d x at the elements ``points`` of the fed ``x``, by central differences."""
    out = []
    for idx in points:
        ends = []
        for step in (eps, -eps):
            moved = feed[x].copy()
            moved[idx] += step
            ends.append(float(sess.run(loss, {**feed, x: moved})))
        out.append((ends[0] - ends[1]) / (2 * eps))
    return np.array(out)


@pytest.mark.skipif(numba_support.get_numba() is None,
                    reason="numba is not installed (pip install numba)")
def test_fused_into_a_numba_kernel_with_its_gradient(monkeypatch):
    calls = []
    original = numpy_fused._kernel_caller
    monkeypatch.setattr(numpy_fused, "_kernel_caller",
                        lambda program, *a: calls.append(program) or original(program, *a))
    x, s, b, y = _model()
    loss = gf.reduce_sum(y * y)
    (grad,) = gf.gradients(loss, [x])
    xv, bv = _values()
    feed = {x: xv, s: 2.0, b: bv}
    points = [(0, 0), (5, 7), (17, 30), (63, 47)]
    with gf.Session(backend="numpy") as sess:
        got, g = sess.run([y, grad], feed)
        numeric = _central_differences(sess, loss, x, feed, points)
    members = [[m.opdef.name for m in p.members] for p in calls]
    assert any(NAME in names for names in members), members
    assert all(len(names) > 1 for names in members)  # with its neighbours, not alone
    np.testing.assert_allclose(got, _want(xv, bv), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, 4 * _want(xv, bv) / (1 + np.abs(xv)) ** 2,
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose([g[p] for p in points], numeric, rtol=1e-6, atol=1e-7)


@pytest.mark.skipif(GXX is None, reason="g++ is not installed: the CUDA C text is compiled "
                                        "on the host with it")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_printed_as_cuda_c_that_gives_the_same_numbers(dtype, tmp_path):
    gdt = gf.as_dtype(dtype)
    x, s, b, y = _model(gdt)
    (node,) = [n for n in optimize([y], [x, s, b], None).nodes() if n.opdef is FUSED]
    program = node.attrs["program"]
    assert [m.opdef.name for m in program.members] == [NAME, "multiply", "add"]
    kernel = cuda_kernels.print_kernel(program, SHAPE)
    assert kernel is not None and "fabs" in kernel.operation
    assert sorted(kernel.kinds) == ["full", "row", "scalar"]
    values = dict(zip("xb", (a.astype(dtype) for a in _values())), s=np.array(2.0, dtype))
    arrays = [values[i.name] for i in program_inputs(program)]
    want = _reference(program, arrays)
    for got in _run_both_forms(program, kernel, arrays, tmp_path):
        for g, w in zip(got, want):
            assert_same(g, w, 0, f"{NAME} {dtype}")  # + - * / and abs: exact, float16 too


def test_runs_on_torch_without_an_entry_of_its_own(op):
    if backends.available()["torch"] is not None:
        pytest.skip(f"torch: {backends.available()['torch']}")
    assert "torch" not in op.lowerings and NAME not in torch_out.LOWERINGS
    x, s, b, y = _model()
    (grad,) = gf.gradients(gf.reduce_sum(y * y), [x])
    xv, bv = _values()
    with gf.Session(backend="torch") as sess:
        got, g = sess.run([y, grad], {x: xv, s: 2.0, b: bv})
    np.testing.assert_allclose(got, _want(xv, bv), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g, 4 * _want(xv, bv) / (1 + np.abs(xv)) ** 2,
                               rtol=1e-12, atol=1e-12)


def test_exported_to_onnx_from_its_scalar_expression(tmp_path):
    onnx = pytest.importorskip("onnx", reason="ONNX export needs the onnx package "
                                              "(pip install onnx)")
    x = gf.placeholder(gf.float32, (None, SHAPE[1]), "x")
    b = gf.placeholder_with_default(np.linspace(-1, 1, SHAPE[1], dtype=np.float32),
                                    SHAPE[1:], "b")
    y = softsign_like(x) * 2.0 + b
    xv = _values("float32")[0]
    path = tmp_path / "softsign_like.onnx"
    with gf.Session(backend="numpy") as sess:
        model = gf.onnx.export(sess, {"x": x}, {"y": y}, str(path))
        want = sess.run(y, {x: xv})
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    assert {"Abs", "Add", "Div"} <= {n.op_type for n in model.graph.node}
    ort = pytest.importorskip("onnxruntime", reason="the check runs the model in ONNX Runtime")
    runtime = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (got,) = runtime.run(["y"], {"x": xv})
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("check", ["forward", "forward_unknown_shapes", "shape_rule",
                                   "gradient", "second_order", "same_numbers_as_numpy"])
def test_its_spec_passes_the_checks_of_every_op(check, backend):
    """``tests/test_ops.py``'s checks of a spec, on every backend (float64 finite
    differences for the gradient and the gradient of the gradient)."""
    run = getattr(test_ops, f"test_{check}")
    if check in ("forward", "shape_rule"):
        for dtype in SPEC.dtypes:
            run(SPEC, dtype, backend)
    else:
        run(SPEC, backend)
