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
compiled for the GPU by ``cupy.RawKernel`` (``gradflow.backends.cupy.emit``) and, in
the tests, for the host by g++ (``tests/cuda_host.py``).

Each text is specialized to one geometry (``fixed``: every size but the batch's), so
that the compiler divides by constants with multiplications and shifts: the CuPy
backend compiles the kernels once per geometry it meets.

Each kernel comes in two index widths (``INDEX_WIDTHS``): 64-bit, and 32-bit for
arrays of fewer than 2**31 elements (``index_kind``). Each element's index is split
into its coordinates by divisions, and a GPU divides 64-bit integers in software,
several times slower than 32-bit ones: on an H100 these kernels took 0.63 and 0.16 ms
of the MNIST CNN step at batch 512 with 64-bit indices.
"""

from __future__ import annotations

_TYPES = {"float32": "float", "float64": "double"}

_SIZES = ("n", "h", "w", "c", "kh", "kw", "sh", "sw", "pt", "pl", "oh", "ow")
# The sizes as kernel parameters (64-bit), then as locals (``geometry_locals``).
GEOMETRY = ", ".join(f"long long {v}_" for v in _SIZES)
# The C types of the two index widths, by the suffix of the kernels' kinds.
INDEX_WIDTHS = {"": "long long", "_i32": "int"}


def geometry_locals(ix, fixed):
    """The kernel's first line: the sizes as constants of index type ``ix``, the batch
    ``n`` read from its parameter, the eleven others the literals ``fixed`` (in
    ``_SIZES``' order)."""
    if len(fixed) != len(_SIZES) - 1:
        raise ValueError(f"fixed sizes are {_SIZES[1:]}, got {fixed!r}")
    values = [f"({ix})n_"] + [str(int(v)) for v in fixed]
    return f"    const {ix} " + ", ".join(f"{v} = {value}" for v, value in zip(_SIZES, values)) \
        + ";\n"


# The head of a grid-stride loop of element ``i`` over ``total`` (a template: braces
# doubled; ``{ix}`` the index type).
GRID_LOOP = r"""    {ix} stride = ({ix})blockDim.x * gridDim.x;
    for ({ix} i = ({ix})blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += stride) {{
"""

# Pixel ``(b, py, px, ch)`` of C-ordered NHWC images from element ``i``.
PIXEL_INDEX = r"""        {ix} r = i;
        {ix} ch = r % c; r /= c;
        {ix} px = r % w; r /= w;
        {ix} py = r % h;
        {ix} b = r / h;
"""

# The windows ``(oy, ox)`` that read pixel ``(py, px)`` through tap ``(ky, kx)``, taps in
# row-major order: two open loops, closed by the kernel.
PIXEL_WINDOWS = r"""        for ({ix} ky = 0; ky < kh; ++ky) {{
            {ix} ty = py + pt - ky;
            if (ty < 0 || ty % sh) continue;
            {ix} oy = ty / sh;
            if (oy >= oh) continue;
            for ({ix} kx = 0; kx < kw; ++kx) {{
                {ix} tx = px + pl - kx;
                if (tx < 0 || tx % sw) continue;
                {ix} ox = tx / sw;
                if (ox >= ow) continue;
"""

_COLUMNS = r"""
extern "C" __global__ void {name}(const {t} *x, {t} *cols, {geometry}) {{
{locals}    {ix} total = n * oh * ow * kh * kw * c;
""" + GRID_LOOP + r"""        {ix} r = i;
        {ix} ch = r % c; r /= c;
        {ix} kx = r % kw; r /= kw;
        {ix} ky = r % kh; r /= kh;
        {ix} ox = r % ow; r /= ow;
        {ix} oy = r % oh;
        {ix} b = r / oh;
        {ix} y = oy * sh + ky - pt, xx = ox * sw + kx - pl;
        cols[i] = (y >= 0 && y < h && xx >= 0 && xx < w)
            ? x[((b * h + y) * w + xx) * c + ch] : ({t})0;
    }}
}}
"""

_PIXELS = r"""
extern "C" __global__ void {name}(const {t} *cells, {t} *dx, {geometry}) {{
{locals}    {ix} total = n * h * w * c;
""" + GRID_LOOP + PIXEL_INDEX + r"""        {t} sum = 0;
""" + PIXEL_WINDOWS + r"""
                {ix} at = (((b * oh + oy) * ow + ox) * kh + ky) * kw + kx;
                sum += cells[at * c + ch];
            }}
        }}
        dx[i] = sum;
    }}
}}
"""


# 32-bit indices serve arrays this much smaller than 2**31 elements, so that a grid-stride
# step past the last element (at most 65,535 blocks of 1,024 threads) cannot overflow.
_I32_ROOM = 2**31 - 2**26


def index_kind(*arrays):
    """The suffix of the kernels whose indices cover ``arrays`` (anything with ``size``):
    ``"_i32"`` where each is small enough for 32-bit indices, else ``""`` (64-bit)."""
    return "_i32" if max(a.size for a in arrays) < _I32_ROOM else ""


def window_sources(dtype_name, fixed):
    """``{kind: (source, name)}`` for ``float32`` or ``float64``, or None for other
    dtypes: kinds ``columns`` and ``pixels``, each also with a suffix of
    ``INDEX_WIDTHS``, specialized to the sizes ``fixed`` (``geometry_locals``). Both
    kernels take ``(source array, result array, n, h, w, c, kh, kw, sh, sw,
    pt, pl, oh, ow)``, all sizes ``long long``."""
    t = _TYPES.get(dtype_name)
    if t is None:
        return None
    made = {}
    for kind, text in (("columns", _COLUMNS), ("pixels", _PIXELS)):
        for suffix, ix in INDEX_WIDTHS.items():
            name = f"gf_im2col_{kind}_{dtype_name}{suffix}"
            made[kind + suffix] = (text.format(name=name, t=t, geometry=GEOMETRY, ix=ix,
                                               locals=geometry_locals(ix, fixed)),
                                   name)
    return made
