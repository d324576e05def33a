"""CUDA C text of the two window copies of an im2col convolution, one kernel each.

``im2col_conv`` builds the column matrix with one strided copy per filter tap (25
copies for a 5x5 filter, after zeroing a padded copy of the images) and adds the
column gradient back the same way: on an H100 the CuPy CNN step ran 187 kernels, most
of them these. Here each is one kernel over its output, in a grid-stride loop:

- ``columns``: element ``(n, oy, ox, ky, kx, c)`` of the column matrix is the image
  pixel the tap reads, or 0 where it falls in the padding;
- ``pixels``: element ``(n, y, x, c)`` of the images' gradient is the sum of the
  column gradient's entries that read it, taps in ``(ky, kx)`` order from 0: the
  order, and so the bits, of the tap loop, without atomics.

Images are C-ordered NHWC, the column matrices ``(n, oh, ow, kh, kw, c)``. The text is
compiled for the GPU by ``cupy.RawKernel`` (``gradflow.backends.cupy_emit``) and, in
the tests, for the host by g++ (``tests/cuda_host.py``).
"""

from __future__ import annotations

_TYPES = {"float32": "float", "float64": "double"}

GEOMETRY = ("long long n, long long h, long long w, long long c, long long kh, "
             "long long kw, long long sh, long long sw, long long pt, long long pl, "
             "long long oh, long long ow")

# The head of a grid-stride loop of element ``i`` over ``total`` (a template: braces doubled).
GRID_LOOP = r"""    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += stride) {{
"""

# Pixel ``(b, py, px, ch)`` of C-ordered NHWC images from element ``i``.
PIXEL_INDEX = r"""        long long r = i;
        long long ch = r % c; r /= c;
        long long px = r % w; r /= w;
        long long py = r % h;
        long long b = r / h;
"""

# The windows ``(oy, ox)`` that read pixel ``(py, px)`` through tap ``(ky, kx)``, taps in
# row-major order: two open loops, closed by the kernel.
PIXEL_WINDOWS = r"""        for (long long ky = 0; ky < kh; ++ky) {{
            long long ty = py + pt - ky;
            if (ty < 0 || ty % sh) continue;
            long long oy = ty / sh;
            if (oy >= oh) continue;
            for (long long kx = 0; kx < kw; ++kx) {{
                long long tx = px + pl - kx;
                if (tx < 0 || tx % sw) continue;
                long long ox = tx / sw;
                if (ox >= ow) continue;
"""

_COLUMNS = r"""
extern "C" __global__ void {name}(const {t} *x, {t} *cols, {geometry}) {{
    long long total = n * oh * ow * kh * kw * c;
""" + GRID_LOOP + r"""        long long r = i;
        long long ch = r % c; r /= c;
        long long kx = r % kw; r /= kw;
        long long ky = r % kh; r /= kh;
        long long ox = r % ow; r /= ow;
        long long oy = r % oh;
        long long b = r / oh;
        long long y = oy * sh + ky - pt, xx = ox * sw + kx - pl;
        cols[i] = (y >= 0 && y < h && xx >= 0 && xx < w)
            ? x[((b * h + y) * w + xx) * c + ch] : ({t})0;
    }}
}}
"""

_PIXELS = r"""
extern "C" __global__ void {name}(const {t} *cells, {t} *dx, {geometry}) {{
    long long total = n * h * w * c;
""" + GRID_LOOP + PIXEL_INDEX + r"""        {t} sum = 0;
""" + PIXEL_WINDOWS + r"""
                long long at = (((b * oh + oy) * ow + ox) * kh + ky) * kw + kx;
                sum += cells[at * c + ch];
            }}
        }}
        dx[i] = sum;
    }}
}}
"""


def window_sources(dtype_name):
    """``{"columns": (source, name), "pixels": (source, name)}`` for ``float32`` or
    ``float64``, or None for other dtypes. Both kernels take ``(source array, result
    array, n, h, w, c, kh, kw, sh, sw, pt, pl, oh, ow)``, all sizes ``long long``."""
    t = _TYPES.get(dtype_name)
    if t is None:
        return None
    made = {}
    for kind, text in (("columns", _COLUMNS), ("pixels", _PIXELS)):
        name = f"gf_im2col_{kind}_{dtype_name}"
        made[kind] = (text.format(name=name, t=t, geometry=GEOMETRY), name)
    return made
