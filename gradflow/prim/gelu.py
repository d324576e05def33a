"""GELU in its tanh form as one elementwise primitive and its gradient as another.

``gelu_tanh(x, c, k, form)`` is GELU's tanh form with ``c = sqrt(2 / pi)`` and
``k = 0.044715``, ``t = tanh(c * (x + k * x * square(x)))`` (the algebraic rewrites'
form of ``pow(x, 3)``), finished as the TF1 program wrote it:

- ``form="gpt2"``: GPT-2's ``gelu`` (and ``benchmarks/transformer.py``'s),
  ``y = (0.5 * x) * (1 + t)``;
- ``form="bert"``: google-research/bert's ``gelu``, ``y = x * (0.5 * (1 + t))``.

``gelu_tanh_grad(dy, x, c, k, form)`` is the sum the unfused gradient ops build, in
their order; with ``ds`` the gradient through the tanh::

    gpt2:  ds = dy * (0.5 * x) * (1 - t^2) * c
           dx = (ds + ds * k * 3 * x^2) + dy * (1 + t) * 0.5
    bert:  ds = dy * x * 0.5 * (1 - t^2) * c
           dx = (dy * (0.5 * (1 + t)) + ds) + ds * k * 3 * x^2

Both carry a scalar expression, so the elementwise fusion puts each in one kernel with
its neighbours (numba on the CPU, printed CUDA C on CuPy): the forward kernel then saves
only ``x`` for the backward where the unfused ops save four of their intermediates, and
the backward reads ``dy`` and ``x``. ``passes/gelu.py`` makes them from the unfused ops
and their gradient.
"""

from __future__ import annotations

from gradflow.prim import call, rules
from gradflow.prim import scalar as sx
from gradflow.prim.registry import register


def _inner(xp, x, c, k, dtype):
    lit = (lambda v: xp.asarray(v, dtype=dtype, device=x.device))
    return xp.tanh(lit(c) * (x + lit(k) * (x * (x * x)))), lit


FORMS = ("gpt2", "bert")


def _gelu_impl(xp, x, *, c, k, form):
    t, lit = _inner(xp, x, c, k, x.dtype)
    if form == "bert":
        return x * (lit(0.5) * (lit(1.0) + t))
    return (lit(0.5) * x) * (lit(1.0) + t)


def _gelu_grad_impl(xp, dy, x, *, c, k, form):
    t, lit = _inner(xp, x, c, k, x.dtype)
    if form == "bert":
        ds = (((dy * x) * lit(0.5)) * (lit(1.0) - t * t)) * lit(c)
        return (dy * (lit(0.5) * (lit(1.0) + t)) + ds) + ((ds * lit(k)) * lit(3.0)) * (x * x)
    ds = ((dy * (lit(0.5) * x)) * (lit(1.0) - t * t)) * lit(c)
    return (ds + ((ds * lit(k)) * lit(3.0)) * (x * x)) + (dy * (lit(1.0) + t)) * lit(0.5)


def _scalar_t(a, c, k, ty):
    return f"np.tanh({ty}({c!r}) * ({a} + {ty}({k!r}) * ({a} * ({a} * {a}))))"


def _gelu_scalar(args, node):
    if not sx.floating(node):
        return None
    ty, (a,) = sx.scalar_type(node), args
    t = _scalar_t(a, node.attrs["c"], node.attrs["k"], ty)
    if node.attrs["form"] == "bert":
        return f"({a} * ({ty}(0.5) * ({ty}(1.0) + {t})))"
    return f"(({ty}(0.5) * {a}) * ({ty}(1.0) + {t}))"


def _gelu_grad_scalar(args, node):
    if not sx.floating(node):
        return None
    ty, (g, a) = sx.scalar_type(node), args
    c, k = node.attrs["c"], node.attrs["k"]
    t = _scalar_t(a, c, k, ty)
    one_minus = f"({ty}(1.0) - {t} * {t})"
    cube = f"(({{ds}} * {ty}({k!r})) * {ty}(3.0)) * ({a} * {a})"
    if node.attrs["form"] == "bert":
        ds = f"(((({g} * {a}) * {ty}(0.5)) * {one_minus}) * {ty}({c!r}))"
        cdf = f"({ty}(0.5) * ({ty}(1.0) + {t}))"
        return f"((({g} * {cdf}) + {ds}) + {cube.format(ds=ds)})"
    ds = f"((({g} * ({ty}(0.5) * {a})) * {one_minus}) * {ty}({c!r}))"
    return f"(({ds} + {cube.format(ds=ds)}) + ({g} * ({ty}(1.0) + {t})) * {ty}(0.5))"


def _gelu_infer(shapes, dtypes, c, k, form):
    if form not in FORMS:
        raise ValueError(f"gelu_tanh: form must be one of {FORMS}, got {form!r}")
    rules.require_floating(dtypes[0], "x")
    return shapes[0], dtypes[0]


def _gelu_grad_infer(shapes, dtypes, c, k, form):
    dtype = rules.same_dtype(dtypes)
    return rules.broadcast_shapes(shapes[0], shapes[1]), dtype


def _gelu_grad(node, g):
    return [call.gelu_tanh_grad(g, node.inputs[0], **node.attrs)]


# worth_alone: a kernel even alone (the gradient reads a product's output, which no
# elementwise op precedes); on the CPU, float32 kernels take numba_fused's own tanh
# (backends/numpy/fused.py), the others the Array API functions in turn
register("gelu_tanh", _gelu_impl, _gelu_infer, grad=_gelu_grad, scalar=_gelu_scalar,
         transcendental=True, worth_alone=True)
register("gelu_tanh_grad", _gelu_grad_impl, _gelu_grad_infer, grad=None,
         scalar=_gelu_grad_scalar, transcendental=True, worth_alone=True)
