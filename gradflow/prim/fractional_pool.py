"""Fractional max and average pooling (TF1 ``tf.nn.fractional_max_pool``,
``fractional_avg_pool``): pooling NHWC ``x`` over regions whose boundaries are the
sequences ``rows`` and ``cols`` (``out + 1`` increasing int64, from 0 to the input's
size). Output ``(i, j)`` pools rows ``rows[i]`` .. ``rows[i + 1] - 1`` (to ``rows[i + 1]``
when ``overlapping``, within the input) and likewise columns.

The boundaries are drawn on the host by TF's procedure (``pooling_sequence``: region
sizes ``floor`` or ``ceil`` of the ratio, shuffled, or TF's pseudo-random sequence
``ceil(alpha (i + u))``), as the value of a node of kind ``"random"``; the pooling ops
read them as host integers. The max gradient goes to each region's first maximum
(row-major, as TF's kernel); the adjoint pairs (``_grad`` / ``_select``) are each
other's gradients, so second order works.
"""

from __future__ import annotations

import math

import numpy as np
from array_api_compat import device as _device

from gradflow.prim import rules
from gradflow.prim.registry import apply, register

# -- the boundaries -----------------------------------------------------------------


def _pseudo_random(rng, n_in, n_out):
    alpha = n_in / n_out
    k = n_in // n_out
    u_max = min((k + 2) / alpha - 1, (n_in + 1 - k) / alpha - (n_out - 1))
    u = rng.random() * u_max
    cum = [1] + [int(math.ceil(alpha * (i + u))) for i in range(1, n_out)] + [n_in + 1]
    return np.diff(cum)


def pooling_sequence(rng, n_in, n_out, pseudo_random):
    """TF's GeneratePoolingSequence: ``n_out + 1`` boundaries from 0 to ``n_in``."""
    if n_in % n_out == 0:
        sizes = np.full(n_out, n_in // n_out)
    elif pseudo_random:
        sizes = _pseudo_random(rng, n_in, n_out)
    else:
        sizes = np.full(n_out, n_in // n_out)
        sizes[:n_in % n_out] += 1
        sizes = rng.permutation(sizes)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def draw_sequences(rng, attrs):
    """The value of a ``fractional_pool_sequences`` node: the row boundaries, then the
    column ones. ``deterministic`` ones are the same every run (drawn from a generator
    made from the node's fixed entropy)."""
    if attrs["deterministic"]:
        rng = np.random.default_rng(list(attrs["entropy"]))
    (h, w), (oh, ow) = attrs["in_size"], attrs["out_size"]
    pseudo = attrs["pseudo_random"]
    return np.concatenate([pooling_sequence(rng, h, oh, pseudo),
                           pooling_sequence(rng, w, ow, pseudo)])


def _sequences_infer(shapes, in_dtypes, shape, dtype, **attrs):
    return shape, dtype


# kind "random": the executor draws its value on the host (state_ops.draw_host, by dist)
register("fractional_pool_sequences", None, _sequences_infer, grad=None, kind="random")


# -- pooling over given boundaries --------------------------------------------------


def _regions(xp, x, rows, cols, overlapping):
    """Per output ``(i, j)``: the row and column slices of its region."""
    r = [int(v) for v in xp.reshape(rows, (-1,))]
    c = [int(v) for v in xp.reshape(cols, (-1,))]
    h, w = x.shape[1], x.shape[2]
    extra = 1 if overlapping else 0

    def spans(seq, size):
        return [slice(seq[i], min(seq[i + 1] + extra, size)) for i in range(len(seq) - 1)]

    return spans(r, h), spans(c, w)


def _pool_impl(xp, x, rows, cols, kind, overlapping):
    rs, cs = _regions(xp, x, rows, cols, overlapping)
    reduce = xp.max if kind == "max" else xp.mean
    out = [xp.stack([reduce(x[:, r, c, :], axis=(1, 2)) for c in cs], axis=1) for r in rs]
    return xp.stack(out, axis=1)


def _first_max(xp, block):
    """0/1 over ``block`` ``(n, h, w, ch)``: the first maximum of each (n, ch), row-major."""
    n, h, w, ch = block.shape
    flat = xp.reshape(block, (n, h * w, ch))
    where = xp.argmax(flat, axis=1)  # the first of equal maxima
    places = xp.reshape(xp.arange(h * w, device=_device(block)), (1, h * w, 1))
    hit = places == xp.reshape(where, (n, 1, ch))
    return xp.reshape(xp.astype(hit, block.dtype), (n, h, w, ch))


def _grad_impl(xp, x, rows, cols, g, kind, overlapping):
    """``g`` spread over each region: to its first maximum, or evenly."""
    rs, cs = _regions(xp, x, rows, cols, overlapping)
    out = xp.zeros(x.shape, dtype=g.dtype, device=_device(g))
    for i, r in enumerate(rs):
        for j, c in enumerate(cs):
            share = g[:, i:i + 1, j:j + 1, :]
            block = x[:, r, c, :]
            if kind == "max":
                part = _first_max(xp, block) * share
            else:
                part = xp.zeros(block.shape, dtype=g.dtype, device=_device(g)) + \
                    share / (block.shape[1] * block.shape[2])
            out[:, r, c, :] = out[:, r, c, :] + part
    return out


def _select_impl(xp, x, rows, cols, h, kind, overlapping):
    """The adjoint of ``_grad_impl`` in ``g``: ``h`` at each region's maximum (or its mean)."""
    if kind != "max":
        return _pool_impl(xp, h, rows, cols, kind, overlapping)
    rs, cs = _regions(xp, x, rows, cols, overlapping)
    out = [xp.stack([xp.sum(_first_max(xp, x[:, r, c, :]) * h[:, r, c, :], axis=(1, 2))
                     for c in cs], axis=1) for r in rs]
    return xp.stack(out, axis=1)


def _pool_infer(shapes, in_dtypes, kind, overlapping):
    x, rows, cols = shapes[:3]
    rules.require_floating(in_dtypes[0], "value")
    if x is None:
        return None, in_dtypes[0]
    if len(x) != 4:
        raise ValueError(f"fractional pooling needs a rank-4 NHWC value, got {tuple(x)}")
    out = [None if s is None or s[0] is None else s[0] - 1 for s in (rows, cols)]
    return (x[0], out[0], out[1], x[3]), in_dtypes[0]


def _grad_infer(shapes, in_dtypes, kind, overlapping):
    return shapes[0], in_dtypes[3]


def _select_infer(shapes, in_dtypes, kind, overlapping):
    return _pool_infer(shapes[:3], in_dtypes[3:], kind, overlapping)


def _pool_grad(n, g):
    x, rows, cols = n.inputs
    return [apply("fractional_pool_grad", [x, rows, cols, g], **n.attrs), None, None]


def _adjoint(name):
    def grad(n, h):
        x, rows, cols, _ = n.inputs
        return [None, None, None, apply(name, [x, rows, cols, h], **n.attrs)]

    return grad


# (x, rows, cols) -> pooled; attrs kind ("max" or "avg"), overlapping
register("fractional_pool", _pool_impl, _pool_infer, grad=_pool_grad)
# (x, rows, cols, g) -> the gradient in x; (x, rows, cols, h) -> its adjoint in g
register("fractional_pool_grad", _grad_impl, _grad_infer,
         grad=_adjoint("fractional_pool_select"))
register("fractional_pool_select", _select_impl, _select_infer,
         grad=_adjoint("fractional_pool_grad"))
