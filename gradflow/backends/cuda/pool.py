"""CUDA C text of max pooling and its gradient, one kernel each.

Through the Array API a max pool is a maximum over its window's cells, one kernel per
cell, and its gradient marks each window's first maximum cell by cell (an equality,
two logical ops and a cast each) before adding ``g`` back onto the pixels: dozens of
kernels per pooling layer. Here:

- ``pool``: output ``(n, oy, ox, c)`` is the maximum of its window's cells, row-major
  from the first, a cell in the padding counting as ``-inf`` and a NaN winning (as
  ``functools.reduce(maximum, cells)``);
- ``grad``: input pixel ``(n, y, x, c)`` adds ``g`` of each window whose first
  maximum cell (row-major) it is, windows in the cells' order (the reference's
  ``_uncells``), times ``x > 0`` for ``max_pool_relu_grad``;
- ``grad_tiled``: the same where the windows tile the images exactly (stride = window,
  no padding, sizes divisible: ``tiles``), one thread per window: it finds the
  window's first maximum once and writes all its cells, where ``grad`` finds it once
  per cell. Each pixel then has one window, so its sum is ``0 + g`` or 0, as there.

Images are C-ordered NHWC; the sizes are ``cuda_im2col.GEOMETRY``'s, then ``ninf``
(``-inf`` in the dtype, passed in: NVRTC has no ``INFINITY`` without headers). The
text is compiled for the GPU by ``cupy.RawKernel`` (``gradflow.backends.cupy.emit``)
and, in the tests, for the host by g++ (``tests/cuda_host.py``).
"""

from __future__ import annotations

from gradflow.backends.cuda.im2col import (
    GEOMETRY,
    GRID_LOOP,
    INDEX_WIDTHS,
    PIXEL_INDEX,
    PIXEL_WINDOWS,
    geometry_locals,
)

_TYPES = {"float32": "float", "float64": "double"}

# the maximum of window (oy, ox) of image b, channel ch, into `top`
_WINDOW_MAX = r"""
        {t} top = ninf;
        for ({ix} a = 0; a < kh; ++a) {{
            for ({ix} q = 0; q < kw; ++q) {{
                {ix} yy = oy * sh + a - pt, xq = ox * sw + q - pl;
                {t} v = (yy >= 0 && yy < h && xq >= 0 && xq < w)
                    ? x[((b * h + yy) * w + xq) * c + ch] : ninf;
                if ((a == 0 && q == 0) || v > top || v != v) top = (top != top) ? top : v;
            }}
        }}
"""

_POOL = r"""
extern "C" __global__ void {name}(const {t} *x, {t} *out, {geometry}, {t} ninf) {{
{locals}    {ix} total = n * oh * ow * c;
""" + GRID_LOOP + r"""        {ix} r = i;
        {ix} ch = r % c; r /= c;
        {ix} ox = r % ow; r /= ow;
        {ix} oy = r % oh;
        {ix} b = r / oh;
{window_max}
        out[i] = top;
    }}
}}
"""

# the window's first cell equal to its maximum `top`, into `first` (-1: none, as for NaN)
_FIRST_MAX = r"""
        {ix} first = -1;
        for ({ix} a = 0; a < kh && first < 0; ++a) {{
            for ({ix} q = 0; q < kw; ++q) {{
                {ix} yy = oy * sh + a - pt, xq = ox * sw + q - pl;
                {t} v = (yy >= 0 && yy < h && xq >= 0 && xq < w)
                    ? x[((b * h + yy) * w + xq) * c + ch] : ninf;
                if (v == top) {{ first = a * kw + q; break; }}
            }}
        }}
"""

_GRAD = r"""
extern "C" __global__ void {name}(const {t} *g, const {t} *x, {t} *dx, {geometry},
                                  {t} ninf, long long relu) {{
{locals}    {ix} total = n * h * w * c;
""" + GRID_LOOP + PIXEL_INDEX + r"""        {t} sum = 0;
""" + PIXEL_WINDOWS + r"""{window_max}{first_max}
                if (first == ky * kw + kx) sum += g[((b * oh + oy) * ow + ox) * c + ch];
            }}
        }}
        dx[i] = (relu && !(x[i] > ({t})0)) ? ({t})0 : sum;
    }}
}}
"""

_GRAD_TILED = r"""
extern "C" __global__ void {name}(const {t} *g, const {t} *x, {t} *dx, {geometry},
                                  {t} ninf, long long relu) {{
{locals}    {ix} total = n * oh * ow * c;
""" + GRID_LOOP + r"""        {ix} r = i;
        {ix} ch = r % c; r /= c;
        {ix} ox = r % ow; r /= ow;
        {ix} oy = r % oh;
        {ix} b = r / oh;
{window_max}{first_max}
        for ({ix} a = 0; a < kh; ++a) {{
            for ({ix} q = 0; q < kw; ++q) {{
                {ix} at = ((b * h + oy * kh + a) * w + ox * kw + q) * c + ch;
                {t} sum = 0;
                if (first == a * kw + q) sum += g[i];
                dx[at] = (relu && !(x[at] > ({t})0)) ? ({t})0 : sum;
            }}
        }}
    }}
}}
"""


def tiles(geo):
    """Whether the windows of ``geo`` (``im2col_conv.geometry``) tile its images
    exactly: ``grad_tiled`` serves them."""
    return not geo.padded and (geo.sh, geo.sw) == (geo.kh, geo.kw) \
        and (geo.oh * geo.kh, geo.ow * geo.kw) == (geo.h, geo.w)


def pool_sources(dtype_name, fixed):
    """``{kind: (source, name)}`` for ``float32`` or ``float64``, or None for other
    dtypes: kinds ``pool``, ``grad`` and ``grad_tiled``, each also with a suffix of
    ``INDEX_WIDTHS`` (``cuda_im2col``). ``pool(x, out, *sizes, ninf)``; ``grad(g, x,
    dx, *sizes, ninf, relu)`` (over ``dx``) and ``grad_tiled`` (the same arguments,
    over ``g``), ``relu`` 1 for ``max_pool_relu_grad``. Specialized to the sizes
    ``fixed`` (``cuda_im2col.geometry_locals``)."""
    t = _TYPES.get(dtype_name)
    if t is None:
        return None
    made = {}
    for kind, text, indent in (("pool", _POOL, ""), ("grad", _GRAD, "        "),
                               ("grad_tiled", _GRAD_TILED, "")):
        for suffix, ix in INDEX_WIDTHS.items():
            name = f"gf_max_{kind}_{dtype_name}{suffix}"
            pieces = {key: "\n".join(indent + line if line else line
                                     for line in piece.format(t=t, ix=ix).split("\n"))
                      for key, piece in (("window_max", _WINDOW_MAX),
                                         ("first_max", _FIRST_MAX))}
            made[kind + suffix] = (text.format(name=name, t=t, geometry=GEOMETRY, ix=ix,
                                               locals=geometry_locals(ix, fixed),
                                               **pieces), name)
    return made
