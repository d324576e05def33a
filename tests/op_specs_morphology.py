"""Op specs of grayscale dilation (gradflow/prim/morphology.py: ``nn.dilation2d``, and
``nn.erosion2d`` over it) and its adjoints, against NumPy loops. The inputs are values
far apart and a filter of small ones, so no two sums of a window tie (no kink for the
finite differences). TensorFlow 2.21's values are in tests/test_morphology_tf1.py.
"""

from __future__ import annotations

import numpy as np
from op_specs import distinct, spec, uniform

import gradflow as gf
from gradflow.prim.registry import apply


def _window(size, k, s, padding):
    if padding == "VALID":
        return (size - k) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + k - size, 0) // 2


def np_dilation_places(x, f, strides, rates, padding):
    """The dilation and, per output, the (row, col, filter row, filter col) of its maximum."""
    b, h, w, c = x.shape
    fh, fw, _ = f.shape
    oh, top = _window(h, (fh - 1) * rates[0] + 1, strides[0], padding)
    ow, left = _window(w, (fw - 1) * rates[1] + 1, strides[1], padding)
    out = np.full((b, oh, ow, c), -np.inf)
    where = np.zeros((b, oh, ow, c, 4), int)
    for n, y, z, ch in np.ndindex(b, oh, ow, c):
        for i, j in np.ndindex(fh, fw):
            r = y * strides[0] + i * rates[0] - top
            q = z * strides[1] + j * rates[1] - left
            if 0 <= r < h and 0 <= q < w and x[n, r, q, ch] + f[i, j, ch] > out[n, y, z, ch]:
                out[n, y, z, ch] = x[n, r, q, ch] + f[i, j, ch]
                where[n, y, z, ch] = (r, q, i, j)
    return out, where


def np_dilation(x, f, strides, rates, padding):
    return np_dilation_places(x, f, strides, rates, padding)[0].astype(x.dtype)


def np_backprop(x, f, g, strides, rates, padding, to_filter):
    _, where = np_dilation_places(x, f, strides, rates, padding)
    out = np.zeros(f.shape if to_filter else x.shape)
    for n, y, z, ch in np.ndindex(g.shape):
        r, q, i, j = where[n, y, z, ch]
        if to_filter:
            out[i, j, ch] += g[n, y, z, ch]
        else:
            out[n, r, q, ch] += g[n, y, z, ch]
    return out.astype(g.dtype)


def np_select(x, f, h, strides, rates, padding, from_filter):
    _, where = np_dilation_places(x, f, strides, rates, padding)
    out = np.zeros(where.shape[:4])
    for n, y, z, ch in np.ndindex(out.shape):
        r, q, i, j = where[n, y, z, ch]
        out[n, y, z, ch] = h[i, j, ch] if from_filter else h[n, r, q, ch]
    return out.astype(h.dtype)


_CASES = [("same", (2, 4, 4, 2), (2, 2, 2), (1, 1), (1, 1), "SAME"),
          ("valid_strided_rates", (1, 5, 5, 2), (2, 2, 2), (2, 1), (1, 2), "VALID"),
          ("same_rates", (1, 4, 5, 1), (3, 2, 1), (1, 2), (2, 1), "SAME")]

for _id, _xs, _fs, _s, _r, _p in _CASES:
    _four_s, _four_r = [1, *_s, 1], [1, *_r, 1]
    _small = uniform(*_fs, lo=-0.01, hi=0.01)
    spec(f"dilation2d_{_id}", ("dilation2d", "dilation2d_backprop_input",
                               "dilation2d_backprop_filter"),
         lambda x, f, s=_four_s, r=_four_r, p=_p: gf.nn.dilation2d(x, f, s, r, p),
         [distinct(*_xs), _small],
         lambda x, f, s=_s, r=_r, p=_p: np_dilation(x, f, s, r, p))
    spec(f"erosion2d_{_id}", ("dilation2d",),
         lambda x, f, s=_four_s, r=_four_r, p=_p: gf.nn.erosion2d(x, f, s, r, p),
         [distinct(*_xs), _small],
         lambda x, f, s=_s, r=_r, p=_p: -np_dilation(-x, f[::-1, ::-1], s, r, p))

_xs, _fs, _s, _r, _p = (1, 5, 5, 2), (2, 2, 2), (2, 1), (1, 2), "SAME"
_attrs = dict(strides=_s, rates=_r, padding=_p)
_out = (1, 3, 5, 2)
spec("dilation2d_backprop_input", ("dilation2d_backprop_input", "dilation2d_select_input"),
     lambda x, f, g: apply("dilation2d_backprop_input", [x, f, g], **_attrs),
     [distinct(*_xs), uniform(*_fs, lo=-0.01, hi=0.01), uniform(*_out)],
     lambda x, f, g: np_backprop(x, f, g, _s, _r, _p, False), grad=(2,))
spec("dilation2d_backprop_filter", ("dilation2d_backprop_filter", "dilation2d_select_filter"),
     lambda x, f, g: apply("dilation2d_backprop_filter", [x, f, g], **_attrs),
     [distinct(*_xs), uniform(*_fs, lo=-0.01, hi=0.01), uniform(*_out)],
     lambda x, f, g: np_backprop(x, f, g, _s, _r, _p, True), grad=(2,))
spec("dilation2d_select_input", ("dilation2d_select_input", "dilation2d_backprop_input"),
     lambda x, f, h: apply("dilation2d_select_input", [x, f, h], **_attrs),
     [distinct(*_xs), uniform(*_fs, lo=-0.01, hi=0.01), uniform(*_xs)],
     lambda x, f, h: np_select(x, f, h, _s, _r, _p, False), grad=(2,))
spec("dilation2d_select_filter", ("dilation2d_select_filter", "dilation2d_backprop_filter"),
     lambda x, f, h: apply("dilation2d_select_filter", [x, f, h], **_attrs),
     [distinct(*_xs), uniform(*_fs, lo=-0.01, hi=0.01), uniform(*_fs)],
     lambda x, f, h: np_select(x, f, h, _s, _r, _p, True), grad=(2,))
