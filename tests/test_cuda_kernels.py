"""The CUDA C printer of fused elementwise programs (gradflow.backends.cuda.kernels).

There is no GPU here: the printed text, both the ``RawKernel`` source and the
``ElementwiseKernel`` operation in a loop that declares its parameters as CuPy
does, is compiled with g++ through a header of host stand-ins for the CUDA names
(tests/cuda_host.py) and its numbers compared with NumPy (the ops' own Array API
functions) and with the numba kernel of the NumPy backend's fused path.
"""

from __future__ import annotations

import itertools

import array_api_compat.numpy as xp
import numpy as np
import pytest
from cuda_host import build, elementwise_harness, launch, needs_gxx

import gradflow as gf
from gradflow.backends.cpu import numba_support
from gradflow.backends.cuda import kernels as cuda_kernels
from gradflow.backends.cuda.scalar import cuda_expression
from gradflow.backends.kernel_text import program_inputs
from gradflow.backends.numpy import fused as numpy_fused
from gradflow.passes import PlanGraph, optimize
from gradflow.passes.fusion import FUSED, FusedProgram, absorb_row_sums
from gradflow.prim.registry import REGISTRY

pytestmark = needs_gxx
# Ops whose CUDA form calls a math library function: CUDA's and the host C library's
# may differ from NumPy's vectorized ones by an ulp or two.
LIBM = {name for name, op in REGISTRY.items() if op.transcendental}  # libm calls
# NumPy's maximum/minimum on -0.0 and 0.0 return the first operand for float16 and the
# second for float32/float64 (its SIMD loops, NumPy 2.4 on AVX-512): the sign of such a
# zero is not part of the contract (the Array API leaves it to the library).
TIES = {"maximum", "minimum", "relu"}
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 100.0,
            6.0e4, 1e-7]


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADFLOW_CACHE", str(tmp_path))


def _every_op(dtype):
    """A PlanGraph holding one node of every op with a scalar expression (``_scalar_ops``)
    over the placeholders a, b
    (``dtype``), c, d (bool) and w (the other float dtype, for casts)."""
    other = gf.float64 if dtype != gf.float64 else gf.float32
    n = len(_inputs()[0])
    a, b = gf.placeholder(dtype, (n,), "a"), gf.placeholder(dtype, (n,), "b")
    c, d = gf.placeholder(gf.bool, (n,), "c"), gf.placeholder(gf.bool, (n,), "d")
    w = gf.placeholder(other, (n,), "w")
    unary = [gf.negative, gf.abs, gf.exp, gf.expm1, gf.log, gf.log1p, gf.sqrt, gf.square,
             gf.tanh, gf.sin, gf.cos, gf.nn.sigmoid, gf.nn.relu, gf.zeros_like, gf.ones_like,
             gf.floor, gf.ceil, gf.tan, gf.asin, gf.acos, gf.atan, gf.sinh, gf.cosh, gf.asinh,
             gf.acosh, gf.atanh]
    binary = [gf.add, gf.subtract, gf.multiply, gf.divide, gf.maximum, gf.minimum, gf.greater,
              gf.greater_equal, gf.less, gf.less_equal, gf.equal, gf.not_equal, gf.atan2,
              gf.div_no_nan, gf.math.multiply_no_nan]
    outs = [f(a) for f in unary] + [f(a, b) for f in binary]
    outs += [gf.logical_and(c, d), gf.logical_or(c, d), gf.logical_not(c), gf.where(c, a, b),
             gf.cast(c, dtype), gf.cast(w, dtype)]
    outs += gf.gradients(gf.nn.relu(a), [a], grad_ys=[b])
    fed = [a, b, c, d, w]
    return PlanGraph(outs, fed), fed


# GELU's composite expressions (prim/gelu.py) cancel (1 + tanh, 1 - tanh^2), so the
# special values here turn libm's last bits of tanh into large differences;
# tests/test_gelu_pass.py checks their printed kernels (g++) on ordinary values
COMPOSITE = {"gelu_tanh", "gelu_tanh_grad"}


def _scalar_ops():
    """The registered ops that declare a scalar expression (``OpDef.scalar``), but
    ``COMPOSITE``'s."""
    return {name for name, op in REGISTRY.items() if op.scalar is not None} - COMPOSITE


def _inputs():
    """Every pair of special values, then random ones, as a, b; random c, d."""
    pairs = np.array(list(itertools.product(SPECIALS, SPECIALS))).T
    rng = np.random.default_rng(0)
    a, b = (np.concatenate([p, rng.standard_normal(200) * 3]) for p in pairs)
    c, d = rng.random(a.size) < 0.5, rng.random(a.size) < 0.5
    return a, b, c, d


def _program_of_every_op(dtype):
    graph, fed = _every_op(dtype)
    index = {t: k for k, t in enumerate(fed)}
    members = [n for n in graph.nodes() if n.opdef.scalar is not None]
    assert {m.opdef.name for m in members} == _scalar_ops(), \
        "an op with a scalar expression is not tested"
    index.update((m, len(fed) + k) for k, m in enumerate(members))  # relu_grad reads relu
    steps = tuple((m, tuple(index[i] for i in m.inputs)) for m in members)
    return FusedProgram(len(fed), steps, tuple(range(len(steps))))


def _reference(program, arrays):
    """Each step by the member's own Array API function over NumPy."""
    values = list(arrays)
    for member, args in program.steps:
        values.append(np.asarray(member.opdef.bind(xp, member.attrs)(*(values[a] for a in args))))
    return [values[program.num_inputs + k] for k in program.outputs]


def _run_both_forms(program, kernel, arrays, tmp_path, blocks=3):
    """The RawKernel (a grid of ``blocks``) and the ElementwiseKernel text, run by g++."""
    outputs = [program.members[k] for k in program.outputs]
    source = "\n#undef GF_ROUND_HALF\n".join([kernel.raw_source, elementwise_harness(kernel)])
    lib = build(source, str(tmp_path))
    results = []
    for run in ("raw", "elementwise"):
        outs = [np.empty(arrays_shape(program, arrays), o.dtype.as_numpy_dtype) for o in outputs]
        args = [kernel.size, kernel.columns, *(np.ascontiguousarray(a) for a in arrays), *outs]
        if run == "raw":
            launch(lib, kernel.name, args, blocks)
        else:
            launch(lib, "gf_elementwise", args)
        results.append(outs)
    return results


def arrays_shape(program, arrays):
    return tuple(program.members[program.outputs[-1]].shape)


def assert_same(got, want, ulps, what, floor=0.0):
    """Equal NaN positions; finite and infinite values equal (the sign of zero too) or,
    with ``ulps``, within that many units in the last place of the wider one (or of
    ``floor``: sigmoid's 0.5 * tanh + 0.5 turns tanh's last bit into an absolute error)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, what
    if got.dtype == bool:
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, err_msg=f"{what}: NaN positions")
    g, w = got[~nan], want[~nan]
    if ulps == 0:
        np.testing.assert_array_equal(g, w, err_msg=what)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w), err_msg=f"{what}: -0.0")
        return
    np.testing.assert_array_equal(np.isinf(g), np.isinf(w), err_msg=what)
    finite = ~np.isinf(w)
    g, w = g[finite].astype(np.float64), w[finite].astype(np.float64)
    scale = np.spacing(np.maximum(np.maximum(np.abs(g), np.abs(w)), floor).astype(
        got.dtype)).astype(np.float64)
    bad = np.abs(g - w) > ulps * scale
    assert not bad.any(), f"{what}: {g[bad][:5]} vs {w[bad][:5]}"


def every_op_case(dtype):
    """``(program, input arrays, NumPy's results, printed kernel)`` of the program with
    every op that has a scalar expression, in ``dtype``."""
    program = _program_of_every_op(dtype)
    a, b, c, d = _inputs()
    np_type = dtype.as_numpy_dtype
    other = np.float64 if np_type != np.float64 else np.float32
    with np.errstate(all="ignore"):
        arrays = [a.astype(np_type), b.astype(np_type), c, d, a.astype(other)]
        want = _reference(program, arrays)
    return program, arrays, want, cuda_kernels.print_kernel(program, (a.size,))


@pytest.mark.parametrize("dtype", [gf.float16, gf.float32, gf.float64])
def test_every_scalar_op_matches_numpy_and_numba(dtype, tmp_path):
    """NaN, infinities, signed zeros and division by zero in every pair of operands;
    float16 computes in float and rounds after each op, as NumPy does."""
    program, arrays, want, kernel = every_op_case(dtype)
    assert kernel is not None and kernel.kinds == ("full",) * 5
    numba = None
    if numba_support.get_numba() is not None and dtype != gf.float16:  # numba has no float16
        numba = numpy_fused._numba_kernel(program, (arrays[0].size,))(*arrays)
    for form, got in zip(("RawKernel", "ElementwiseKernel"),
                         _run_both_forms(program, kernel, arrays, tmp_path)):
        for k, member in enumerate(program.members):
            name = member.opdef.name
            ulps = (1 if dtype == gf.float16 else 4) if name in LIBM else 0
            if name in TIES:
                zero = (got[k] == 0) & (want[k] == 0)
                got[k][zero] = want[k][zero]
            assert_same(got[k], want[k], ulps, f"{form} {name} {dtype.name} vs NumPy",
                        1.0 if name == "sigmoid" else 0.0)
            if numba is not None:
                # numba's maximum/minimum return the first operand on ties (-0.0 vs 0.0)
                # where NumPy returns the second: compare values, not zero signs
                np.testing.assert_allclose(got[k], numba[k], rtol=4e-7 if name in LIBM else 0,
                                           atol=0, equal_nan=True,
                                           err_msg=f"{form} {name} {dtype.name} vs numba")


@pytest.mark.parametrize("dtype", [gf.int32, gf.int64])
def test_integer_members_are_declined_as_numba_declines_them(dtype):
    """The scalar expressions have no integer forms: integer add/maximum and the casts
    from integers in front of a true division keep their own kernels on both paths (the
    CUDA form is read from the numba text, so it declines where that does); the float
    division after those casts is printed like any other."""
    x, y = gf.placeholder(dtype, (4,)), gf.placeholder(dtype, (4,))
    graph = PlanGraph([gf.divide(x, y), x + y, gf.maximum(x, y)], [x, y])
    declined, printed = set(), set()
    for node in graph.nodes():
        if node.opdef.scalar is not None:
            args = ["a0", "a1"][:len(node.inputs)]
            cuda = cuda_expression(node, args)
            assert (cuda is None) == (node.opdef.scalar(args, node) is None), node
            if any(i.dtype.is_integer for i in node.inputs):
                assert cuda is None, node
                declined.add(node.opdef.name)
            elif cuda is not None:
                printed.add(node.opdef.name)
    assert {"add", "maximum"} <= declined and "divide" in printed


def _fused_programs(fetches, fed, shapes):
    graph = optimize(fetches, fed, shapes)
    return [n for n in graph.nodes() if n.opdef is FUSED]


def _random_inputs(program, rng, dtype):
    arrays = []
    for inp in program_inputs(program):
        shape = tuple(inp.shape)
        if inp.dtype.is_bool:
            arrays.append(rng.random(shape) < 0.5)
        else:  # positive too, so that Adam's sqrt(v) and the like see real values
            arrays.append(np.abs(rng.standard_normal(shape)).astype(inp.dtype.as_numpy_dtype)
                          if "Adam" in inp.name else
                          rng.standard_normal(shape).astype(inp.dtype.as_numpy_dtype))
    return arrays


def _check_programs(nodes, tmp_path, dtype, expect_kinds):
    rng = np.random.default_rng(1)
    seen = set()
    for node in nodes:
        program = node.attrs["program"]
        kernel = cuda_kernels.print_kernel(program, tuple(node.shape))
        assert kernel is not None, program.describe()
        seen.update(kernel.kinds)
        arrays = _random_inputs(program, rng, dtype)
        with np.errstate(all="ignore"):
            want = _reference(program, arrays)
        numba = None
        if numba_support.get_numba() is not None and dtype != np.float16:
            numba = numpy_fused._numba_kernel(program, tuple(node.shape))(*arrays)
            numba = numba if isinstance(numba, tuple) else (numba,)
        libm = any(m.opdef.name in LIBM for m in program.members)
        tol = 1e-6 if libm else 0
        for got in _run_both_forms(program, kernel, arrays, tmp_path):
            for g, w in zip(got, want):
                if dtype == np.float16 or libm:
                    # float16 through a transcendental may round either way (a half-ulp)
                    # (an ulp of exp before a subtraction is an absolute error: atol)
                    np.testing.assert_allclose(g, w, rtol=1e-3 if dtype == np.float16 else tol,
                                               atol=tol, equal_nan=True,
                                               err_msg=program.describe())
                else:
                    assert_same(g, w, 0, program.describe())
            for g, n in zip(got, numba or ()):
                np.testing.assert_allclose(g, n, rtol=tol, atol=tol, equal_nan=True,
                                           err_msg=program.describe())
    assert expect_kinds <= seen, seen


def _mlp(dtype, batch=16):
    x = gf.placeholder(dtype, (None, 12), "x")
    y = gf.placeholder(gf.int64, (None,), "y")
    h = gf.layers.dense(x, 10, activation=gf.nn.relu)
    h = gf.layers.dense(h, 8, activation=gf.nn.sigmoid)
    logits = gf.layers.dense(h, 3)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = gf.train.AdamOptimizer(1e-3).minimize(loss)
    return _fused_programs([train, loss], [x, y], [(batch, 12), (batch,)])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fused_programs_of_an_mlp_training_step(dtype, tmp_path):
    """Every fused node of a dense-relu-sigmoid MLP step with Adam: bias rows, the
    relu and sigmoid gradients, Adam's multi-output updates."""
    with gf.Graph().as_default():
        nodes = _mlp(gf.as_dtype(np.dtype(dtype).name))
        assert len(nodes) >= 4
        _check_programs(nodes, tmp_path, dtype, {"full", "row"})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_column_and_scalar_inputs(dtype, tmp_path):
    """The broadcast kinds of a 3-D output: whole, rows (trailing dims), columns (leading
    dims) and one scalar, with comparisons, where and casts between them."""
    gdt = gf.as_dtype(np.dtype(dtype).name)
    with gf.Graph().as_default():
        x = gf.placeholder(gdt, (6, 20, 30))
        row, col = gf.placeholder(gdt, (20, 30)), gf.placeholder(gdt, (6, 1, 1))
        s = gf.placeholder(gdt, ())
        mask = gf.cast(gf.greater(x, row), gdt)
        y = gf.where(gf.less(x, col), gf.maximum(x * s, row) - mask,
                     gf.sqrt(gf.abs(gf.minimum(x, col))) + gf.nn.relu(x - s))
        nodes = _fused_programs([y], [x, row, col, s], None)
        assert len(nodes) == 1
        _check_programs(nodes, tmp_path, dtype, {"full", "row", "col", "scalar"})


@needs_gxx
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cols", [1, 10, 65])
def test_the_log_softmax_row_kernel_matches_numpy(dtype, cols, tmp_path):
    """The CuPy row kernel's text (``cuda_rows``), run by g++ as a grid of 3 blocks,
    in place too, against the op's NumPy function: NaN, infinities and large values
    in some rows."""
    from gradflow.backends.cuda import rows as cuda_rows
    from gradflow.prim.nn import _log_softmax_impl

    source, name = cuda_rows.log_softmax_source(dtype)
    lib = build(source, str(tmp_path))
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((7, cols)) * 20).astype(dtype)
    x[1, 0] = np.nan
    x[2, :] = -np.inf
    x[3, -1] = np.inf
    x[4, :] = 1e30 if dtype == "float32" else 1e300
    with np.errstate(invalid="ignore"):
        want = _log_softmax_impl(np, x, -1)
    for in_place in (False, True):
        y = x.copy() if in_place else np.full_like(x, 7.0)
        launch(lib, name, [x.copy() if not in_place else y, y, 7, cols], blocks=3)
        np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
        finite = np.isfinite(want)
        np.testing.assert_array_equal(y[~finite & ~np.isnan(want)],
                                      want[~finite & ~np.isnan(want)])
        tiny = np.finfo(dtype).eps
        np.testing.assert_allclose(y[finite], want[finite], rtol=8 * tiny, atol=8 * tiny)
    assert cuda_rows.log_softmax_source("float16") is None


def _row_programs(fetches, fed, shapes):
    graph = optimize(fetches, fed, shapes)
    absorb_row_sums(graph)
    return [n for n in graph.nodes() if n.opdef is FUSED
            and any(m.opdef.name == "reduce_sum" for m in n.attrs["program"].members)]


def _check_row_programs(nodes, tmp_path, dtype, blocks=3):
    rng = np.random.default_rng(2)
    for node in nodes:
        program = node.attrs["program"]
        kernel = cuda_kernels.print_row_kernel(program, tuple(node.shape))
        assert kernel is not None, program.describe()
        lib = build(kernel.source, str(tmp_path))
        arrays = _random_inputs(program, rng, dtype)
        want = _reference(program, arrays)
        outs = [np.full(tuple(node.shape), np.nan, program.members[k].dtype.as_numpy_dtype)
                for k in program.outputs]
        launch(lib, kernel.name, [kernel.size, kernel.columns,
                                  *(np.ascontiguousarray(a) for a in arrays), *outs], blocks)
        tol = 1e-5 if dtype == np.float32 else 1e-12  # the row sum adds in order
        for got, w in zip(outs, want):
            np.testing.assert_allclose(got, np.broadcast_to(w, got.shape), rtol=tol, atol=tol,
                                       err_msg=program.describe())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_softmax_cross_entropy_gradient_is_one_row_kernel(dtype, tmp_path):
    """``absorb_row_sums`` on an MLP step: the cross-entropy gradient's ``where``, row
    sum and ``g - exp(y) * sum`` become one fused node, and its row kernel, run by
    g++ as a grid of 3 blocks, gives NumPy's numbers (to the sum's rounding)."""
    with gf.Graph().as_default():
        gdt = gf.as_dtype(np.dtype(dtype).name)
        x = gf.placeholder(gdt, (None, 12), "x")
        y = gf.placeholder(gf.int64, (None,), "y")
        logits = gf.layers.dense(gf.layers.dense(x, 10, activation=gf.nn.relu), 7)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        train = gf.train.AdamOptimizer(1e-3).minimize(loss)
        nodes = _row_programs([train, loss], [x, y], [(9, 12), (9,)])
    (node,) = nodes
    assert [m.opdef.name for m in node.attrs["program"].members] == [
        "where", "reduce_sum", "exp", "multiply", "subtract"]
    _check_row_programs(nodes, tmp_path, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_kernels_read_rows_columns_and_scalars(dtype, tmp_path):
    """A row sum of an op that nothing else reads joins the kernel too; the inputs are
    read whole, as a row, as a column and as a scalar; one row and many rows."""
    gdt = gf.as_dtype(np.dtype(dtype).name)
    for rows in (1, 6):
        with gf.Graph().as_default():
            x, w = gf.placeholder(gdt, (rows, 7)), gf.placeholder(gdt, (7,))
            b, s = gf.placeholder(gdt, (rows, 1)), gf.placeholder(gdt, ())
            out = x * b - gf.reduce_sum(x * w, -1, keepdims=True) + s
            nodes = _row_programs([out], [x, w, b, s], None)
        (node,) = nodes
        program = node.attrs["program"]
        assert [m.opdef.name for m in program.members][:2] == ["multiply", "reduce_sum"]
        kernel = cuda_kernels.print_row_kernel(program, tuple(node.shape))
        if rows > 1:  # with one row, a row is whole and a column one scalar
            assert sorted(kernel.kinds) == ["col", "full", "row", "scalar"]
        _check_row_programs(nodes, tmp_path, dtype, blocks=2)


def test_row_kernels_decline_what_one_pass_cannot_do():
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, (4, 5000))
        wide = _row_programs([2.0 * x - gf.reduce_sum(gf.exp(x), -1, keepdims=True)], [x],
                             None)
        h = gf.placeholder(gf.float16, (4, 6))
        half = _row_programs([2.0 * h - gf.reduce_sum(h * h, -1, keepdims=True)], [h],
                             None)
    for nodes, shape in ((wide, (4, 5000)), (half, (4, 6))):
        (node,) = nodes
        assert cuda_kernels.print_row_kernel(node.attrs["program"], shape) is None


def test_a_whole_backward_without_a_product_between_is_one_row_kernel(tmp_path):
    """Cross-entropy over dropout(relu(x w)): the loss's gradient, dropout's and relu's
    join one row kernel, reading the mask and the keep probability (a scalar)."""
    with gf.Graph().as_default():
        x = gf.placeholder(gf.float32, (None, 6))
        y = gf.placeholder(gf.int64, (None,))
        keep = gf.placeholder(gf.float32, ())
        w = gf.Variable(np.ones((6, 5), np.float32))
        h = gf.nn.dropout(gf.nn.relu(gf.matmul(x, w)), keep_prob=keep)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=h))
        nodes = _row_programs(gf.gradients(loss, [w]), [x, y, keep], [(8, 6), (8,), ()])
    (node,) = nodes
    names = [m.opdef.name for m in node.attrs["program"].members]
    assert names[:5] == ["where", "reduce_sum", "exp", "multiply", "subtract"]
    assert "relu_grad" in names
    _check_row_programs(nodes, tmp_path, np.float32)


def _cnn(batch=2):
    x = gf.placeholder(gf.float32, (None, 6, 6, 1), "x")
    y = gf.placeholder(gf.int64, (None,), "y")
    keep = gf.placeholder(gf.float32, (), "keep")
    h = gf.layers.conv2d(x, 4, 3, padding="same", activation=gf.nn.relu)
    h = gf.layers.max_pooling2d(h, 2, 2)
    h = gf.nn.dropout(gf.layers.dense(gf.layers.flatten(h), 8, activation=gf.nn.relu),
                      keep_prob=keep)
    logits = gf.layers.dense(h, 3)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = gf.train.AdamOptimizer(1e-3).minimize(loss)
    return _fused_programs([train, loss], [x, y, keep], [(batch, 6, 6, 1), (batch,), ()])


def _lstm(batch=2, steps=3):
    xs = [gf.placeholder(gf.float32, (None, 4), f"x{t}") for t in range(steps)]
    y = gf.placeholder(gf.int64, (None,), "y")
    outputs, _ = gf.nn.static_rnn(gf.nn.rnn_cell.BasicLSTMCell(5), xs, dtype=gf.float32)
    logits = gf.layers.dense(outputs[-1], 3)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = gf.train.AdamOptimizer(1e-3).minimize(loss)
    return _fused_programs([train, loss], xs + [y], [(batch, 4)] * steps + [(batch,)])


@pytest.mark.parametrize("network", ["cnn", "lstm"])
def test_fused_programs_of_cnn_and_lstm_training_steps(network, tmp_path):
    """Every fused node of a small CNN step (conv bias + ReLU over images, dropout, the
    dense layers, Adam on 4-D filters) and of an LSTM step (what the LSTM step ops
    leave: the dense layer, the loss's gradient, Adam) prints, compiles and gives
    NumPy's numbers."""
    with gf.Graph().as_default():
        nodes = _cnn() if network == "cnn" else _lstm()
    assert len(nodes) >= 4
    _check_programs(nodes, tmp_path, np.float32, {"full"})
