"""Every op of the registry, checked from the table in ``op_specs.py`` on every backend.

Each spec expands into: forward against its NumPy reference (static and unknown
shapes), the shape/dtype rule against the real result, a float64
finite-difference gradient check, a second-order check of the gradient graph,
and the same numbers as the NumPy backend. One Session serves each check; only
the feeds change between runs, so the compiled plan is reused.
"""

from __future__ import annotations

import numpy as np
import pytest
from array_api_compat import device as array_device
from op_specs import EXEMPT, NEEDS_RANK, SPECS, all_unknown

import gradflow as gf
from gradflow.prim.registry import REGISTRY

BY_DTYPE = [pytest.param(s, d, id=f"{s.id}-{d}") for s in SPECS for d in s.dtypes]
ALL = [pytest.param(s, id=s.id) for s in SPECS]
DIFFERENTIABLE = [pytest.param(s, id=s.id) for s in SPECS if s.differentiable or s.no_grad]
SECOND_ORDER = [pytest.param(s, id=s.id) for s in SPECS if s.differentiable and s.second_order]


# -- helpers -------------------------------------------------------------------------


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _reference(spec, arrays):
    return [np.asarray(r) for r in _as_list(spec.ref(*arrays))]


def _build(spec, arrays, shapes, *, grad=False, second=False):
    """A graph of the spec over placeholders, with its loss and gradients if asked."""
    graph = gf.Graph()
    built = {"graph": graph}
    with graph.as_default():
        xs = [gf.placeholder(a.dtype, shape=s, name=f"x{i}")
              for i, (a, s) in enumerate(zip(arrays, shapes))]
        outs = _as_list(spec.fn(*xs))
        built.update(xs=xs, outs=outs)
        if grad:
            rng = np.random.default_rng(spec.seed + 1)
            wrt = [xs[i] for i in spec.grad_inputs()]
            loss = _weighted_sum(outs, [r.shape for r in _reference(spec, arrays)], rng)
            grads = gf.gradients(loss, wrt)
            built.update(loss=loss, wrt=wrt, grads=grads)
            if second:
                present = [(g, x) for g, x in zip(grads, wrt) if g is not None]
                v_shapes = [arrays[xs.index(x)].shape for _, x in present]
                q = _weighted_sum([g for g, _ in present], v_shapes, rng) if present else None
                built.update(q=q, hess=gf.gradients(q, wrt) if q is not None else None)
    return built


def _weighted_sum(tensors, shapes, rng):
    """``sum_k reduce_sum(t_k * W_k)`` for fixed random ``W_k``: a scalar to differentiate."""
    total = None
    for t, shape in zip(tensors, shapes):
        w = gf.constant(rng.normal(size=shape).astype(t.dtype.as_numpy_dtype))
        term = gf.reduce_sum(t * w)
        total = term if total is None else total + term
    return total


def _feed(built, arrays):
    return dict(zip(built["xs"], arrays))


def _static(arrays):
    return [a.shape for a in arrays]


def _assert_close(actual, expected, rtol, atol, what):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=what)


def _assert_forward(spec, results, expected, what):
    assert len(results) == len(expected), f"{what}: {len(results)} outputs, want {len(expected)}"
    for k, (r, e) in enumerate(zip(results, expected)):
        assert r.dtype == e.dtype, f"{what} output {k}: dtype {r.dtype}, reference {e.dtype}"
        rtol, atol = spec.forward_tol(r.dtype.name)
        _assert_close(r, e, rtol, atol, f"{what} output {k}")


def _run_grads(sess, built, arrays):
    grads = [g for g in built["grads"] if g is not None]
    values = iter(sess.run(grads, _feed(built, arrays)) if grads else [])
    return [np.zeros(x.shape) if g is None else next(values)
            for g, x in zip(built["grads"], _wrt_arrays(built, arrays))]


def _wrt_arrays(built, arrays):
    return [arrays[built["xs"].index(x)] for x in built["wrt"]]


def _numeric_grad(sess, fetch, built, arrays, eps):
    """Central differences of the scalar ``fetch`` for every element of every ``wrt`` input."""
    out = []
    for x in built["wrt"]:
        i = built["xs"].index(x)
        value = arrays[i]
        grad = np.zeros(value.shape)
        for idx in np.ndindex(value.shape):
            results, points = [], []
            for step in (eps, -eps):
                moved = value.copy()
                moved[idx] += step
                feed = _feed(built, arrays)
                feed[x] = moved
                results.append(float(sess.run(fetch, feed)))
                points.append(float(moved[idx]))
            grad[idx] = (results[0] - results[1]) / (points[0] - points[1])
        out.append(grad)
    return out


def _assert_grads(analytic, numeric, tol, what):
    rtol, atol = tol
    for k, (a, n) in enumerate(zip(analytic, numeric)):
        scale = max(1.0, float(np.max(np.abs(n), initial=0.0)))
        _assert_close(np.asarray(a, np.float64), n, rtol, atol * scale, f"{what}, input {k}")


# -- the checks ------------------------------------------------------------------------


@pytest.mark.parametrize("spec,dtype", BY_DTYPE)
def test_forward(spec, dtype, backend):
    """Static shapes: the values (and their dtype) match the NumPy reference."""
    arrays = spec.inputs(dtype)
    built = _build(spec, arrays, _static(arrays))
    with gf.Session(graph=built["graph"], backend=backend) as sess:
        results = sess.run(built["outs"], _feed(built, arrays))
    _assert_forward(spec, results, _reference(spec, arrays), f"{spec.id} [{dtype}]")


@pytest.mark.parametrize("spec", ALL)
def test_forward_unknown_shapes(spec, backend):
    """Placeholders with ``None`` dims: same values, and the same gradients."""
    if spec.dynamic is None:
        pytest.skip("the spec needs static shapes")
    _check_unknown_shapes(spec, backend, spec.dynamic, "unknown dims")


@pytest.mark.parametrize("spec", ALL)
def test_forward_unknown_rank(spec, backend):
    """Placeholders with no shape at all (TF1's ``placeholder(tf.float32)``): same values
    and gradients as with static shapes."""
    if spec.dynamic is not all_unknown:
        pytest.skip("the spec keeps some dims static (its dynamic=), so ranks too")
    if spec.needs_rank:
        pytest.skip(spec.needs_rank)
    _check_unknown_shapes(spec, backend, lambda shapes: [None] * len(shapes), "unknown rank")


def _check_unknown_shapes(spec, backend, shapes_fn, what):
    """The spec over placeholders of the shapes ``shapes_fn`` gives: the reference values,
    and the gradients of the same graph built with static shapes."""
    arrays = spec.inputs(spec.dtypes[-1])
    grad = spec.differentiable
    built = _build(spec, arrays, shapes_fn(_static(arrays)), grad=grad)
    with gf.Session(graph=built["graph"], backend=backend) as sess:
        results = sess.run(built["outs"], _feed(built, arrays))
        grads = _run_grads(sess, built, arrays) if grad else []
    _assert_forward(spec, results, _reference(spec, arrays), f"{spec.id} ({what})")
    if grad:
        static = _build(spec, arrays, _static(arrays), grad=True)
        with gf.Session(graph=static["graph"], backend=backend) as sess:
            want = _run_grads(sess, static, arrays)
        for k, (g, w) in enumerate(zip(grads, want)):
            _assert_close(g, w, 1e-9, 1e-12, f"{spec.id}: gradient {k} with {what}")


@pytest.mark.parametrize("spec,dtype", BY_DTYPE)
def test_shape_rule(spec, dtype, backend):
    """Every node's static shape and dtype agree with the array the backend computes:
    the op's outputs and every node of its first- and second-order gradient graphs."""
    arrays = spec.inputs(dtype)
    modes = [("static", _static(arrays))]
    if spec.dynamic is not None:
        modes.append(("unknown dims", spec.dynamic(_static(arrays))))
    grad = spec.differentiable
    for mode, shapes in modes:
        built = _build(spec, arrays, shapes, grad=grad, second=grad and spec.second_order)
        if mode == "static":
            types = {node.type for node in built["graph"].nodes}
            assert set(spec.ops) <= types, f"{spec.id} builds no {set(spec.ops) - types} node"
        for g, x in zip(built.get("grads", []), built.get("wrt", [])):
            assert g is None or g.dtype is x.dtype, \
                f"{spec.id}: {g.dtype.name} gradient for a {x.dtype.name} input"
        nodes = [n for n in built["graph"].nodes if n.opdef.kind == "compute"]
        with gf.Session(graph=built["graph"], backend=backend) as sess:
            native = sess.run(nodes, _feed(built, arrays), output="native")
            for node, value in zip(nodes, native):
                _check_rule(node, value, sess.backend,
                            mode == "static" and not spec.value_shaped,
                            f"{spec.id} [{mode}] {node.describe()}")


def _check_rule(t, value, backend, static, what):
    actual = tuple(int(d) for d in value.shape)
    assert t.shape is not None, f"{what}: unknown rank for a result of shape {actual}"
    if static:
        assert tuple(t.shape) == actual, f"{what}: static shape {t.shape}, result {actual}"
    else:
        assert len(t.shape) == len(actual) and all(
            s is None or s == a for s, a in zip(t.shape, actual)), \
            f"{what}: static shape {t.shape} does not fit the result {actual}"
    assert value.dtype == t.dtype.resolve(backend.xp), \
        f"{what}: node dtype {t.dtype.name}, backend result {value.dtype}"
    assert backend.to_numpy(value).dtype.name == t.dtype.name, what
    assert array_device(value) == backend.device, \
        f"{what}: result on {array_device(value)}, session device {backend.device}"


@pytest.mark.parametrize("spec", DIFFERENTIABLE)
def test_gradient(spec, backend):
    """float64 central differences of ``sum(op(x) * W)`` against ``gf.gradients``."""
    arrays = spec.inputs("float64")
    built = _build(spec, arrays, _static(arrays), grad=True)
    if spec.no_grad:
        assert all(g is None for g in built["grads"]), f"{spec.id} let a gradient through"
        return
    with gf.Session(graph=built["graph"], backend=backend) as sess:
        analytic = _run_grads(sess, built, arrays)
        numeric = _numeric_grad(sess, built["loss"], built, arrays, spec.eps)
    for a, x in zip(analytic, _wrt_arrays(built, arrays)):
        assert a.shape == x.shape, f"{spec.id}: gradient shape {a.shape} for input {x.shape}"
    _assert_grads(analytic, numeric, spec.grad_tol, f"{spec.id} gradient")


@pytest.mark.parametrize("spec", SECOND_ORDER)
def test_second_order(spec, backend):
    """Differences of ``sum(grad * V)`` against ``gf.gradients`` of it: the gradient graph
    is itself differentiable and right."""
    arrays = spec.inputs("float64")
    built = _build(spec, arrays, _static(arrays), grad=True, second=True)
    assert built["q"] is not None, f"{spec.id}: no gradient reaches the inputs"
    with gf.Session(graph=built["graph"], backend=backend) as sess:
        hess = [g for g in built["hess"] if g is not None]
        values = iter(sess.run(hess, _feed(built, arrays)) if hess else [])
        analytic = [np.zeros(x.shape) if g is None else next(values)
                    for g, x in zip(built["hess"], _wrt_arrays(built, arrays))]
        numeric = _numeric_grad(sess, built["q"], built, arrays, spec.eps)
    _assert_grads(analytic, numeric, spec.grad_tol, f"{spec.id} second order")


@pytest.mark.parametrize("spec", ALL)
def test_same_numbers_as_numpy(spec, backend):
    """Same seed, same numbers: forward and gradients agree with the NumPy backend."""
    dtype = "float64" if "float64" in spec.dtypes else spec.dtypes[0]
    arrays = spec.inputs(dtype)
    grad = spec.differentiable
    runs = []
    for name in ("numpy", backend):
        built = _build(spec, arrays, _static(arrays), grad=grad)
        with gf.Session(graph=built["graph"], backend=name) as sess:
            values = sess.run(built["outs"], _feed(built, arrays))
            runs.append(values + (_run_grads(sess, built, arrays) if grad else []))
    for k, (got, want) in enumerate(zip(*reversed(runs))):
        _assert_close(got, want, 1e-6, 1e-12, f"{spec.id} value {k} vs numpy")


# -- the table itself ----------------------------------------------------------------------


def test_every_registered_op_has_a_spec():
    """An op added to the registry needs a spec here, or an EXEMPT entry saying why not."""
    covered = {op for s in SPECS for op in s.ops}
    missing = sorted(set(REGISTRY) - covered - set(EXEMPT))
    assert not missing, f"registered ops without a spec in tests/op_specs.py: {missing}"


def test_every_gradient_rule_is_checked():
    """Every op with a gradient rule appears in a spec that runs the gradient checks."""
    checked = {op for s in SPECS if s.differentiable or s.no_grad for op in s.ops}
    missing = sorted(name for name, op in REGISTRY.items()
                     if op.grad is not None and name not in checked)
    assert not missing, f"ops whose gradient rule no spec checks: {missing}"


def test_spec_table_is_consistent():
    ids = [s.id for s in SPECS]
    assert len(ids) == len(set(ids)), "duplicate spec ids"
    assert not set(NEEDS_RANK) - set(ids), f"NEEDS_RANK names no spec: {set(NEEDS_RANK) - set(ids)}"
    for s in SPECS:
        unknown = set(s.ops) - set(REGISTRY)
        assert not unknown, f"spec {s.id} names unregistered ops {unknown}"
    for name in EXEMPT:
        assert name in REGISTRY, f"EXEMPT names {name!r}, which is not registered"
        assert REGISTRY[name].kind != "compute" or REGISTRY[name].plan_only, \
            f"{name!r} is a compute op: it needs a spec, not an EXEMPT entry"
