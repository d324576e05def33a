"""A fuzzer over the op table: small random graphs, hostile inputs, every CPU backend.

Each example takes a spec of ``op_specs.py``, feeds it through placeholders of
static, unknown-dimension or unknown-rank shape, perturbs its inputs (NaN and
infinities, empty arrays, huge and negative integers, integers too wide for
their placeholder), may chain a second op after it, and runs the forward pass
and the gradient on one backend. Every outcome must be one of:

- the right numbers: the spec's NumPy reference on the same inputs (NaN where it
  has NaN), or
- a gradflow error: ``InvalidArgumentError`` (or another ``GradflowError``), or a
  ``ValueError``/``TypeError``/``IndexError`` whose message names this file's
  line, that is, gradflow's message naming the op and the user's line.

Never a raw Python, NumPy or torch exception from inside gradflow, and never a
silent wrong number. ``GRADFLOW_FUZZ_EXAMPLES`` sets the number of examples
(the normal run: 150; ``nox -s fuzz`` runs 5000).
"""

from __future__ import annotations

import collections
import os
import traceback
import warnings

import numpy as np
import pytest
from conftest import CPU_BACKENDS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_specs import SPECS

import gradflow as gf
from gradflow import backends
from gradflow.errors import GradflowError

EXAMPLES = int(os.environ.get("GRADFLOW_FUZZ_EXAMPLES", "150"))
HERE = os.path.basename(__file__)
USER_FILES = (HERE, "op_specs.py")  # the user's lines: the specs' builders are here
GRADFLOW_DIR = os.path.dirname(os.path.abspath(gf.__file__))
AVAILABLE = [b for b in CPU_BACKENDS if backends.available()[b] is None]
OUTCOMES: collections.Counter = collections.Counter()

# The spec ops that read no hostile value: kinds the executor runs itself, or specs
# built on other modules' machinery (collectives, py_func) that has its own tests.
SKIPPED_SPECS = ("dist_",)
FUZZ_SPECS = [s for s in SPECS if not s.id.startswith(SKIPPED_SPECS)]

# Second ops chained after a float result: (builder, NumPy reference).
THEN = {
    "none": (lambda t: t, lambda a: a),
    "abs": (gf.abs, np.abs),
    "square": (gf.square, np.square),
    "sum": (gf.reduce_sum, lambda a: np.sum(a, dtype=a.dtype)),
    "transpose": (gf.transpose, np.transpose),
}
ORDERING = {"top_k", "argmax", "argmin", "in_top_k", "sort", "argsort", "max_pool_select",
            "max_pool_grad"}
# specs whose reference is a shortcut that holds for finite inputs only (``x / 2`` for an
# l2_normalize whose epsilon dominates; a cond reference that computes both branches; the
# weighted cross-entropy reference, which gives inf - inf = NaN for an infinite logit
# where gradflow's (TF1's) stable form gives the loss's limit, inf; cond_true, whose
# predicate sum(x * x) >= 0 is false for a NaN, so the other branch rightly runs; case,
# whose predicates on sum(y) are both false for a NaN, so its default rightly runs)
FINITE_REFERENCES = {"l2_normalize_epsilon", "cond_two_outputs", "cond_true", "case",
                     "weighted_cross_entropy_with_logits",
                     "weighted_cross_entropy_targets_scalar_weight"}


def _finite_reference(spec):
    """Whether the spec's reference matches gradflow for finite inputs only: the list
    above, and convolutions, whose references skip SAME padding where gradflow (as
    TF1's zero padding) multiplies it, so an infinite weight at the border gives NaN
    (0 * inf) in gradflow and a number in the reference; and batch norm, whose
    references fold the statistics differently (an infinite input: gradflow's mean and
    variance are inf and NaN, so is its output, as in TF1; the reference's is inf); and
    the references that are tables of values for the spec's fixed inputs
    (``ref.fixed_inputs``: mpmath's values, tests/op_specs_special_series.py)."""
    if getattr(spec.ref, "fixed_inputs", False):
        return True
    return spec.id in FINITE_REFERENCES or any("conv" in op for op in spec.ops) \
        or spec.id.startswith("bn_")  # batch statistics over an infinity: NaN, as TF1


HUGE_INTS = (-1, -(2 ** 31), 2 ** 31 - 1, 2 ** 40, -(2 ** 40), 2 ** 63 - 1)


def _user_frames_only(err) -> bool:
    """Whether ``err`` came from this file or op_specs alone, through no gradflow code (a
    spec that reads a static shape in Python)."""
    frames = traceback.extract_tb(err.__traceback__)
    return not any(f.filename.startswith(GRADFLOW_DIR) for f in frames)


def _names_user_line(err) -> bool:
    return any(f"{name}:" in str(err) for name in USER_FILES)


def _raised_by_gradflow(err) -> bool:
    """Whether gradflow's own code raised ``err`` (not NumPy or torch inside gradflow)."""
    frames = traceback.extract_tb(err.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(GRADFLOW_DIR)


def _is_gradflow_error(err) -> bool:
    if isinstance(err, GradflowError):
        return True
    return isinstance(err, (ValueError, TypeError, IndexError, NotImplementedError)) \
        and (_names_user_line(err) or _raised_by_gradflow(err))


@st.composite
def cases(draw):
    """One fuzz case: a spec, a backend, input arrays, placeholder shapes and dtypes."""
    spec = draw(st.sampled_from(FUZZ_SPECS))
    dtype = draw(st.sampled_from(spec.dtypes))
    arrays = [np.array(a) for a in spec.inputs(dtype)]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    mutation = draw(st.sampled_from(["none", "special", "empty", "ints", "wide_feed"]))
    if arrays:
        k = draw(st.integers(0, len(arrays) - 1))
        arrays[k] = _mutate(arrays[k], mutation, rng, draw)
    shape_kind = draw(st.sampled_from(["static", "static", "dims", "rank"]))
    if spec.dynamic is None:
        shape_kind = "static"
    shapes = [_shape(a, shape_kind) for a in arrays]
    feeds = list(arrays)
    if mutation == "wide_feed" and arrays and arrays[k].dtype == np.int32 and arrays[k].size:
        feeds[k] = arrays[k].astype(np.int64)  # an int64 value that may not fit int32
        feeds[k].reshape(-1)[0] = draw(st.sampled_from(HUGE_INTS))
        arrays[k] = feeds[k].astype(np.int32)  # what the reference sees where it fits
    then = draw(st.sampled_from(sorted(THEN)))
    backend = draw(st.sampled_from(AVAILABLE))
    grad = draw(st.booleans())
    return spec, arrays, feeds, shapes, then, backend, grad, mutation


def _mutate(a, mutation, rng, draw):
    if mutation == "special" and a.dtype.kind == "f" and a.size:
        a = a.copy()
        flat = a.reshape(-1)
        for _ in range(draw(st.integers(1, 3))):
            flat[rng.integers(flat.size)] = draw(st.sampled_from([np.nan, np.inf, -np.inf]))
    elif mutation == "empty" and a.ndim:
        a = a[:0]
    elif mutation == "ints" and a.dtype.kind in "iu" and a.size:
        a = a.copy()
        info = np.iinfo(a.dtype)
        extremes = [v for v in (-1, info.min, info.max, 0) if info.min <= v <= info.max]
        a.reshape(-1)[rng.integers(a.size)] = draw(st.sampled_from(extremes))
    return a


def _fits_int32(a):
    return a.size == 0 or (a.min() >= -(2 ** 31) and a.max() < 2 ** 31)


def _shape(a, kind):
    if kind == "rank":
        return None
    if kind == "dims":
        return (None,) * a.ndim
    return a.shape


def _reference(spec, arrays, then):
    """The expected outputs, or None where the NumPy reference itself refuses the inputs."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = spec.ref(*arrays)
            out = list(out) if isinstance(out, (list, tuple)) else [out]
            return [np.asarray(THEN[then][1](np.asarray(r)) if np.asarray(r).dtype.kind == "f"
                               else r) for r in out]
    except Exception:  # noqa: BLE001 - any refusal: gradflow must then refuse or agree
        return None


def _build(spec, shapes, arrays, then, grad):
    graph = gf.Graph()
    with graph.as_default():
        xs = [gf.placeholder(a.dtype, shape=s, name=f"fuzz_in{i}")
              for i, (a, s) in enumerate(zip(arrays, shapes))]
        outs = spec.fn(*xs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        outs = [THEN[then][0](o) if o.dtype.is_floating else o for o in outs]
        grads = []
        floats = [x for x in xs if x.dtype.is_floating]
        if grad and floats and all(o.dtype.is_floating for o in outs):
            loss = gf.add_n([gf.reduce_sum(o) for o in outs]) if len(outs) > 1 \
                else gf.reduce_sum(outs[0])
            grads = [g for g in gf.gradients(loss, floats) if g is not None]
    return graph, xs, outs, grads


def _check_values(spec, results, expected, what):
    assert len(results) == len(expected), what
    for r, e in zip(results, expected):
        r, e = np.asarray(r), np.asarray(e)
        assert r.shape == e.shape, f"{what}: shape {r.shape}, reference {e.shape}"
        if e.dtype.kind in "biu" or r.dtype.kind in "biu":
            np.testing.assert_array_equal(r, e, err_msg=what)
            continue
        rtol, atol = spec.forward_tol(r.dtype.name)
        # a NaN or infinity in a reduction may land anywhere a reference's order puts it
        np.testing.assert_allclose(r.astype(np.float64), e.astype(np.float64),
                                   rtol=max(rtol, 1e-5), atol=max(atol, 1e-6),
                                   equal_nan=True, err_msg=what)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_fuzz_outcome_is_right_or_a_gradflow_error(case):
    spec, arrays, feeds, shapes, then, backend, grad, mutation = case
    what = (f"{spec.id} on {backend}, mutation {mutation}, shapes {shapes}, then {then}, "
            f"inputs {[a.dtype.name + str(a.shape) for a in arrays]}")
    device = "device1" if backend == "array_api_strict" else None
    built = False
    try:
        graph, xs, outs, grads = _build(spec, shapes, arrays, then, grad)
        built = True
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with gf.Session(graph=graph, backend=backends.get(backend, device=device)) as s:
                results = s.run(outs + grads, dict(zip(xs, feeds)))
    except Exception as err:  # noqa: BLE001 - classified below
        wide = [f for f in feeds if f.dtype == np.int64 and not _fits_int32(f)]
        if wide and mutation == "wide_feed" and built:  # the feed must be what is refused
            assert isinstance(err, gf.errors.InvalidArgumentError), what
            assert "does not fit" in str(err) and "'fuzz_in" in str(err), what
            OUTCOMES["overflowing feed refused"] += 1
            return
        if _user_frames_only(err):
            OUTCOMES["spec needs static shapes"] += 1
            return
        if not _is_gradflow_error(err):
            raise AssertionError(f"raw {type(err).__name__} from gradflow: {what}") from err
        OUTCOMES["gradflow error"] += 1
        if not isinstance(err, GradflowError) and not _names_user_line(err):
            # a check of the graph builder: it names the op but not the user's line
            OUTCOMES["gradflow build error without the user's line"] += 1
        return
    assert not any(f.dtype == np.int64 and not _fits_int32(f) and mutation == "wide_feed"
                   for f in feeds), f"an overflowing feed was accepted: {what}"
    expected = _reference(spec, arrays, then)
    if expected is None:
        OUTCOMES["values, the reference refuses"] += 1
        return
    if mutation == "special" and (ORDERING & set(spec.ops) or _finite_reference(spec)):
        # where a NaN sorts is unspecified (gradflow: above every number, as np.sort; the
        # references' argsort(-x): below); the shapes must still agree
        assert [np.shape(r) for r in results[:len(outs)]] == [e.shape for e in expected], what
        OUTCOMES["values with NaN order, shapes checked"] += 1
        return
    _check_values(spec, results[:len(outs)], expected, what)
    OUTCOMES["right values"] += 1


@pytest.fixture(scope="module", autouse=True)
def _report_outcomes():
    yield
    print(f"\nfuzz outcomes over {sum(OUTCOMES.values())} examples: {dict(OUTCOMES)}")
