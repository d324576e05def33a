"""Op specs of fractional pooling over given region boundaries
(gradflow/prim/fractional_pool.py) against NumPy loops; the boundaries' draw is a host
node of kind "random" (EXEMPT; tests/test_fractional_pool_tf1.py checks it, and the
pooling on TensorFlow 2.21's own regions).
"""

from __future__ import annotations

import numpy as np
from op_specs import EXEMPT, distinct, spec, uniform

import gradflow as gf
from gradflow.prim.registry import apply

EXEMPT.update({
    "fractional_pool_sequences": "kind 'random': region boundaries drawn on the host "
                                 "(test_fractional_pool_tf1.py)",
})

_ROWS, _COLS = [0, 2, 3, 5], [0, 1, 3, 4]  # 5 x 4 input, 3 x 3 output


def _regions(overlap, h=5, w=4):
    extra = 1 if overlap else 0
    rs = [slice(_ROWS[i], min(_ROWS[i + 1] + extra, h)) for i in range(3)]
    cs = [slice(_COLS[j], min(_COLS[j + 1] + extra, w)) for j in range(3)]
    return rs, cs


def np_pool(x, kind, overlap):
    rs, cs = _regions(overlap)
    f = np.max if kind == "max" else np.mean
    return np.stack([np.stack([f(x[:, r, c, :], axis=(1, 2)) for c in cs], 1) for r in rs], 1)


def _first_max(block):
    n, h, w, ch = block.shape
    flat = block.reshape(n, h * w, ch)
    hit = np.arange(h * w)[None, :, None] == flat.argmax(1)[:, None, :]
    return hit.reshape(block.shape).astype(block.dtype)


def np_pool_grad(x, g, kind, overlap):
    rs, cs = _regions(overlap)
    out = np.zeros(x.shape, g.dtype)
    for i, r in enumerate(rs):
        for j, c in enumerate(cs):
            block = x[:, r, c, :]
            share = g[:, i:i + 1, j:j + 1, :]
            out[:, r, c, :] += _first_max(block) * share if kind == "max" else \
                share / (block.shape[1] * block.shape[2])
    return out


def np_pool_select(x, h, kind, overlap):
    if kind != "max":
        return np_pool(h, kind, overlap)
    rs, cs = _regions(overlap)
    return np.stack([np.stack([(_first_max(x[:, r, c, :]) * h[:, r, c, :]).sum((1, 2))
                               for c in cs], 1) for r in rs], 1)


def _bounds():
    return gf.constant(_ROWS, gf.int64), gf.constant(_COLS, gf.int64)


for _kind in ("max", "avg"):
    for _overlap in (False, True):
        _id = f"{_kind}{'_overlapping' if _overlap else ''}"
        spec(f"fractional_pool_{_id}", ("fractional_pool", "fractional_pool_grad",
                                        "fractional_pool_select"),
             lambda x, k=_kind, o=_overlap: apply("fractional_pool", [x, *_bounds()], kind=k,
                                                  overlapping=o),
             [distinct(2, 5, 4, 2)], lambda x, k=_kind, o=_overlap: np_pool(x, k, o))
        spec(f"fractional_pool_grad_{_id}", ("fractional_pool_grad", "fractional_pool_select"),
             lambda x, g, k=_kind, o=_overlap: apply("fractional_pool_grad",
                                                     [x, *_bounds(), g], kind=k, overlapping=o),
             [distinct(2, 5, 4, 2), uniform(2, 3, 3, 2)],
             lambda x, g, k=_kind, o=_overlap: np_pool_grad(x, g, k, o), grad=(1,))
        spec(f"fractional_pool_select_{_id}", ("fractional_pool_select",
                                               "fractional_pool_grad"),
             lambda x, h, k=_kind, o=_overlap: apply("fractional_pool_select",
                                                     [x, *_bounds(), h], kind=k, overlapping=o),
             [distinct(2, 5, 4, 2), uniform(2, 5, 4, 2)],
             lambda x, h, k=_kind, o=_overlap: np_pool_select(x, h, k, o), grad=(1,))

EXEMPT.update({
    "learned_unigram_sampler": "kind 'call': classes drawn on the host from counts the "
                               "Session learns (test_unigram_sampler_tf1.py)",
})
