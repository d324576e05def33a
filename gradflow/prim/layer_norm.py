"""Layer normalization over the last axis as one primitive, its gradient, and the plan's
fused pair.

``layer_norm(x, gamma, beta, eps, form)`` is, step for step, what TF1 programs build from
separate ops (``mean = reduce_sum(x) / n``, ``var = reduce_sum(square(x - mean)) / n``,
``rstd = 1 / sqrt(var + eps)``), finished in one of two orders:

- ``form="affine"``: ``tf.contrib.layers.layer_norm`` (google-research/bert), through
  ``batch_normalization``'s arithmetic: ``k = rstd * gamma``,
  ``y = x * k + (beta - mean * k)``;
- ``form="centered"``: GPT-2's ``norm``: ``y = (x - mean) * rstd * gamma + beta``.

Two layers of records, as for attention (``prim/attention.py``):

- ``layer_norm`` and ``layer_norm_grad`` (``wrt`` naming ``x``, ``gamma`` or ``beta``) are
  ordinary primitives with finite-difference checks (``tests/op_specs_layer_norm.py``);
- ``layer_norm_fwd`` (outputs ``y``, ``mean``, ``rstd``; the statistics ``[..., 1]``, in
  float32 for half inputs) and ``layer_norm_bwd`` (``dy, x, gamma, mean, rstd`` to ``dx,
  dgamma, dbeta``) are plan-only: ``passes/layer_norm.py`` makes them from the unfused ops
  and their gradient, and backends lower them (``backends/cupy/transformer.py`` to the CUDA
  C kernels of ``backends/cuda/transformer.py``).

The backward is the closed form those kernels compute, with ``xhat = (x - mean) * rstd``
and ``g = dy * gamma``: ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``,
``dgamma = sum(dy * xhat)``, ``dbeta = sum(dy)`` over every axis but the last.
"""

from __future__ import annotations

from gradflow.prim import call, rules
from gradflow.prim.registry import register

FORMS = ("affine", "centered")


def _stats_dtype(xp, dtype):
    """float32 for half inputs (as the CUDA kernels keep them), else the input's dtype."""
    return dtype if dtype in (xp.float32, xp.float64) else xp.float32


def statistics(xp, x, eps):
    """``(mean, rstd)`` of the rows of ``x`` over its last axis (keepdims), in the unfused
    ops' order: sums divided by the row length, ``1 / sqrt(var + eps)``."""
    n = x.shape[-1]
    mean = xp.sum(x, axis=-1, keepdims=True) / n
    d = x - mean
    var = xp.sum(d * d, axis=-1, keepdims=True) / n
    return mean, 1 / xp.sqrt(var + xp.asarray(eps, dtype=x.dtype, device=x.device))


def normalize(xp, x, gamma, beta, mean, rstd, form):
    """``y`` from the row statistics, in the order of ``form`` (see the module docstring)."""
    if form == "affine":
        k = rstd * gamma
        return x * k + (beta - mean * k)
    return (x - mean) * rstd * gamma + beta


def backward(xp, dy, x, gamma, mean, rstd):
    """``(dx, dgamma, dbeta)`` from the row statistics (the closed form)."""
    n = x.shape[-1]
    xhat = (x - mean) * rstd
    g = dy * gamma
    m1 = xp.sum(g, axis=-1, keepdims=True) / n
    m2 = xp.sum(g * xhat, axis=-1, keepdims=True) / n
    dx = rstd * (g - m1 - xhat * m2)
    rows = tuple(range(x.ndim - 1))
    return dx, xp.sum(dy * xhat, axis=rows), xp.sum(dy, axis=rows)


def _layer_norm_impl(xp, x, gamma, beta, *, eps, form):
    mean, rstd = statistics(xp, x, eps)
    return normalize(xp, x, gamma, beta, mean, rstd, form)


def _check(shapes, dtypes, form):
    if form not in FORMS:
        raise ValueError(f"layer_norm: form must be one of {FORMS}, got {form!r}")
    rules.require_floating(dtypes[0], "x")
    dtype = rules.same_dtype(dtypes)
    x = shapes[0]
    if x is not None and len(x) == 0:
        raise ValueError("layer_norm: x must have at least one axis (the normalized one)")
    n = None if x is None else x[-1]
    for shape, what in zip(shapes[1:], ("gamma", "beta")):
        if shape is None:
            continue
        if len(shape) != 1 or (n is not None and shape[0] is not None and shape[0] != n):
            raise ValueError(f"layer_norm: {what} must be [{n}] (x's last axis), got "
                             f"{tuple(shape)}")
    return dtype


def _layer_norm_infer(shapes, dtypes, eps, form):
    return shapes[0], _check(shapes, dtypes, form)


_WRT = ("x", "gamma", "beta")


def _layer_norm_grad_impl(xp, dy, x, gamma, *, eps, wrt):
    mean, rstd = statistics(xp, x, eps)
    return backward(xp, dy, x, gamma, mean, rstd)[_WRT.index(wrt)]


def _layer_norm_grad_infer(shapes, dtypes, eps, wrt):
    dtype = rules.same_dtype(dtypes)
    if wrt == "x":
        return shapes[1], dtype
    x = shapes[1]
    return (None if x is None else (x[-1],)), dtype


def _layer_norm_grad(node, g):
    x, gamma, _ = node.inputs
    eps = node.attrs["eps"]
    return [call.layer_norm_grad(g, x, gamma, eps=eps, wrt=w) for w in _WRT]


register("layer_norm", _layer_norm_impl, _layer_norm_infer, grad=_layer_norm_grad)
# Its gradient recomputes the statistics per node (one per input); plans never run it: the
# pass makes the fused pair below, whose backward reads what the forward saved.
register("layer_norm_grad", _layer_norm_grad_impl, _layer_norm_grad_infer, grad=None)


# -- the plan's fused pair (passes/layer_norm.py) --


def _fwd_impl(xp, x, gamma, beta, *, eps, form):
    mean, rstd = statistics(xp, x, eps)
    y = normalize(xp, x, gamma, beta, mean, rstd, form)
    dtype = _stats_dtype(xp, x.dtype)
    return y, xp.astype(mean, dtype), xp.astype(rstd, dtype)


def _fwd_infer(shapes, dtypes, eps, form):
    return shapes[0], _check(shapes, dtypes, form)  # y's; fused_output nodes carry the rest


def _bwd_impl(xp, dy, x, gamma, mean, rstd):
    mean, rstd = xp.astype(mean, x.dtype), xp.astype(rstd, x.dtype)
    return backward(xp, dy, x, gamma, mean, rstd)


def _bwd_infer(shapes, dtypes):
    return shapes[1], dtypes[1]  # dx's; fused_output nodes carry dgamma's and dbeta's


LAYER_NORM_FWD = register("layer_norm_fwd", _fwd_impl, _fwd_infer, grad=None, outputs=3,
                          plan_only=True)
LAYER_NORM_BWD = register("layer_norm_bwd", _bwd_impl, _bwd_infer, grad=None, outputs=3,
                          plan_only=True)
