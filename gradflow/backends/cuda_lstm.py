"""CUDA C text of the graph compiler's LSTM step ops (``lstm_step``, ``lstm_step_grad``):
one kernel each, one thread per (batch row, unit).

Run through the Array API, a step is about a dozen kernels forward and two dozen
backward (the gate activations, the cell, the output, each gradient and the sums
between them): on an H100 the captured char-LSTM step (50 steps) ran 2,807 kernels,
about 8 ms, where PyTorch's ``nn.LSTM`` replay took 0.4. Here a step is one kernel
each way, with the reference's arithmetic (``gradflow.ops.rnn_ops``): the gates'
terms summed left to right, ``sigmoid(z) = tanh(z / 2) / 2 + 1/2`` (the forget gate
adding ``forget_bias / 2`` inside the ``tanh``), ``c = f c_prev + i j``, ``h = o
tanh(c)``; backward ``dc = dh o (1 - tanh(c)^2) + dc_next``, ``dz = g (1 - a)(a + m)``
for each gate's gradient ``g`` (``m`` one on the ``tanh`` gate ``j``) and ``dc_prev =
dc f``. Gates are ``[batch, 4 * units]`` in TF1's order ``i, j, f, o``; states
``[batch, units]``; the bias a row of ``4 * units``; all C-ordered, one dtype.

The text is compiled for the GPU by ``cupy.RawKernel`` (``gradflow.backends.cupy_emit``)
and, in the tests, for the host by g++ (``tests/cuda_host.py``).
"""

from __future__ import annotations

from gradflow.backends.cuda_im2col import GRID_LOOP

_TYPES = {"float32": ("float", "f"), "float64": ("double", "")}

_STEP = r"""
extern "C" __global__ void {name}(const {t} *x, {y_param}const {t} *row, const {t} *c_prev,
                                  {t} *a, {t} *c, {t} *h, long long batch, long long units,
                                  {t} half_bias) {{
    long long total = batch * units;
""" + GRID_LOOP + r"""        long long b = i / units, k = i % units;
        long long at = b * 4 * units + k;
        {t} z[4];
        for (int q = 0; q < 4; ++q) {{
            long long p = at + q * units;
            z[q] = {sum};
        }}
        {t} gi = tanh{f}(z[0] * ({t})0.5) * ({t})0.5 + ({t})0.5;
        {t} gj = tanh{f}(z[1]);
        {t} gf = tanh{f}(z[2] * ({t})0.5 + half_bias) * ({t})0.5 + ({t})0.5;
        {t} go = tanh{f}(z[3] * ({t})0.5) * ({t})0.5 + ({t})0.5;
        a[at] = gi;
        a[at + units] = gj;
        a[at + 2 * units] = gf;
        a[at + 3 * units] = go;
        {t} cn = gf * c_prev[i] + gi * gj;
        c[i] = cn;
        h[i] = go * tanh{f}(cn);
    }}
}}
"""

_STEP_GRAD = r"""
extern "C" __global__ void {name}(const {t} *dh, const {t} *dc_next, const {t} *a,
                                  const {t} *c, const {t} *c_prev, {t} *dz, {t} *dc_prev,
                                  long long batch, long long units) {{
    long long total = batch * units;
""" + GRID_LOOP + r"""        long long b = i / units, k = i % units;
        long long at = b * 4 * units + k;
        {t} gi = a[at], gj = a[at + units], gf = a[at + 2 * units], go = a[at + 3 * units];
        {t} tc = tanh{f}(c[i]);
        {t} g = dh[i];
        {t} dc = g * go * (({t})1 - tc * tc) + dc_next[i];
        dz[at] = dc * gj * (({t})1 - gi) * gi;
        dz[at + units] = dc * gi * (({t})1 - gj) * (gj + ({t})1);
        dz[at + 2 * units] = dc * c_prev[i] * (({t})1 - gf) * gf;
        dz[at + 3 * units] = g * tc * (({t})1 - go) * go;
        dc_prev[i] = dc * gf;
    }}
}}
"""


def step_sources(dtype_name):
    """``{"step2": ..., "step3": ..., "grad": ...}``, each ``(source, kernel name)``, for
    ``float32`` or ``float64``, or None for other dtypes.

    ``step3(x, y, row, c_prev, a, c, h, batch, units, half_bias)`` and ``step2`` (the
    same without ``y``) compute ``lstm_step`` of the terms ``x (+ y) + row``;
    ``grad(dh, dc_next, a, c, c_prev, dz, dc_prev, batch, units)`` computes
    ``lstm_step_grad``."""
    if dtype_name not in _TYPES:
        return None
    t, f = _TYPES[dtype_name]
    made = {}
    for key, y_param, total in (("step2", "", "x[p] + row[k + q * units]"),
                                ("step3", f"const {t} *y, ", "x[p] + y[p] + row[k + q * units]")):
        name = f"gf_lstm_{key}_{dtype_name}"
        made[key] = (_STEP.format(name=name, t=t, f=f, y_param=y_param, sum=total,
                                  ix="long long"), name)
    name = f"gf_lstm_step_grad_{dtype_name}"
    made["grad"] = (_STEP_GRAD.format(name=name, t=t, f=f, ix="long long"), name)
    return made


# -- the steps with their recurrent product (passes/lstm_recurrence.py) ----------------
#
# A block computes a tile of ``tb`` batch rows x ``tu`` units (one thread each, all four
# gates) and walks the product's inner dimension ``TJ`` columns at a time: the tile's
# rows of ``h_prev`` (forward) or ``dz_next`` (backward) are staged in shared memory,
# where every thread of a row reads them. Forward, the threads of a warp read
# consecutive columns of ``w`` [inner, 4 * units] (coalesced); backward each thread
# needs a row of ``w`` (``dh = dy + dz_next w^T``), so the tile's rows of ``w`` are
# staged too, padded a column against bank conflicts. The inner products sum in order
# of the inner index, then the step's arithmetic is the kernels' above: ``z = (x +
# h_prev w) + row`` and ``dh = dy + dz_next w^T``. Blocks are ``tu * tb`` threads in a
# 1-D grid of unit tiles x batch tiles; every loop strides by ``blockDim.x``, so the
# host build (one thread per block) runs the very text with ``tu = tb = 1``.

TJ = 32
# units x batch rows per block on the GPU, and whether the forward kernel stages its
# block's columns of ``w`` in shared memory too (benchmarks/gpu.py times each choice)
TILE = (32, 4, 1)
_SHARED_BYTES = 48 * 1024  # a block's static shared memory

_REC_HEAD = r"""
#define GF_TU {tu}
#define GF_TB {tb}
#define GF_TJ {tj}
#define GF_STAGE {stage}
"""

_TILE_INDEX = r"""    const int tid = threadIdx.x;
    const long long unit_tiles = (units + GF_TU - 1) / GF_TU;
    const long long k0 = (long long)(blockIdx.x % unit_tiles) * GF_TU;
    const long long b0 = (long long)(blockIdx.x / unit_tiles) * GF_TB;
    const long long k = k0 + tid % GF_TU, b = b0 + tid / GF_TU;
    const bool mine = k < units && b < batch;
"""

_REC_STEP = r"""
extern "C" __global__ void {name}(const {t} *x, const {t} *h_prev, const {t} *w,
                                  const {t} *row, const {t} *c_prev, {t} *a, {t} *c,
                                  {t} *h, long long batch, long long units,
                                  long long inner, {t} half_bias) {{
    __shared__ {t} hs[GF_TB * GF_TJ];
#if GF_STAGE
    __shared__ {t} ws[GF_TJ * 4 * GF_TU];
#endif
""" + _TILE_INDEX + r"""    const long long four = 4 * units;
    {t} acc[4] = {{0, 0, 0, 0}};
    for (long long j0 = 0; j0 < inner; j0 += GF_TJ) {{
        __syncthreads();
        for (int e = tid; e < GF_TB * GF_TJ; e += blockDim.x) {{
            long long bb = b0 + e / GF_TJ, jj = j0 + e % GF_TJ;
            hs[e] = (bb < batch && jj < inner) ? h_prev[bb * inner + jj] : ({t})0;
        }}
#if GF_STAGE
        for (int e = tid; e < GF_TJ * 4 * GF_TU; e += blockDim.x) {{
            long long jj = j0 + e / (4 * GF_TU), col = e % (4 * GF_TU);
            long long kk = k0 + col % GF_TU;
            ws[e] = (jj < inner && kk < units) ? w[jj * four + (col / GF_TU) * units + kk]
                                               : ({t})0;
        }}
#endif
        __syncthreads();
        if (mine) {{
            const long long jn = inner - j0 < GF_TJ ? inner - j0 : GF_TJ;
            const {t} *hr = hs + (tid / GF_TU) * GF_TJ;
#if GF_STAGE
            const {t} *wr = ws + tid % GF_TU;
            const long long step = 4 * GF_TU, gate = GF_TU;
#else
            const {t} *wr = w + j0 * four + k;
            const long long step = four, gate = units;
#endif
#pragma unroll 8
            for (long long jj = 0; jj < jn; ++jj) {{
                {t} hv = hr[jj];
                acc[0] += hv * wr[0];
                acc[1] += hv * wr[gate];
                acc[2] += hv * wr[2 * gate];
                acc[3] += hv * wr[3 * gate];
                wr += step;
            }}
        }}
    }}
    if (!mine) return;
    const long long i = b * units + k, at = b * four + k;
    {t} z[4];
    for (int q = 0; q < 4; ++q) z[q] = (x[at + q * units] + acc[q]) + row[k + q * units];
""" + r"""    {t} gi = tanh{f}(z[0] * ({t})0.5) * ({t})0.5 + ({t})0.5;
    {t} gj = tanh{f}(z[1]);
    {t} gf = tanh{f}(z[2] * ({t})0.5 + half_bias) * ({t})0.5 + ({t})0.5;
    {t} go = tanh{f}(z[3] * ({t})0.5) * ({t})0.5 + ({t})0.5;
    a[at] = gi;
    a[at + units] = gj;
    a[at + 2 * units] = gf;
    a[at + 3 * units] = go;
    {t} cn = gf * c_prev[i] + gi * gj;
    c[i] = cn;
    h[i] = go * tanh{f}(cn);
}}
"""

_REC_GRAD = r"""
extern "C" __global__ void {name}(const {t} *dy, const {t} *dz_next, const {t} *w,
                                  const {t} *dc_next, const {t} *a, const {t} *c,
                                  const {t} *c_prev, {t} *dz, {t} *dc_prev,
                                  long long batch, long long units) {{
    __shared__ {t} zs[GF_TB * GF_TJ];
    __shared__ {t} ws[GF_TU * (GF_TJ + 1)];
""" + _TILE_INDEX + r"""    const long long four = 4 * units;
    {t} part[4] = {{0, 0, 0, 0}};
    for (long long n0 = 0; n0 < four; n0 += GF_TJ) {{
        __syncthreads();
        for (int e = tid; e < GF_TB * GF_TJ; e += blockDim.x) {{
            long long bb = b0 + e / GF_TJ, nn = n0 + e % GF_TJ;
            zs[e] = (bb < batch && nn < four) ? dz_next[bb * four + nn] : ({t})0;
        }}
        for (int e = tid; e < GF_TU * GF_TJ; e += blockDim.x) {{
            long long kk = k0 + e / GF_TJ, nn = n0 + e % GF_TJ;
            ws[(e / GF_TJ) * (GF_TJ + 1) + e % GF_TJ] =
                (kk < units && nn < four) ? w[kk * four + nn] : ({t})0;
        }}
        __syncthreads();
        if (mine) {{
            const long long nn = four - n0 < GF_TJ ? four - n0 : GF_TJ;
            const {t} *zr = zs + (tid / GF_TU) * GF_TJ;
            const {t} *wr = ws + (tid % GF_TU) * (GF_TJ + 1);
#pragma unroll 8
            for (long long q = 0; q < nn; ++q) part[q & 3] += zr[q] * wr[q];
        }}
    }}
    const {t} acc = (part[0] + part[1]) + (part[2] + part[3]);
    if (!mine) return;
    const long long i = b * units + k, at = b * four + k;
    {t} gi = a[at], gj = a[at + units], gf = a[at + 2 * units], go = a[at + 3 * units];
    {t} tc = tanh{f}(c[i]);
    {t} g = dy[i] + acc;
    {t} dc = g * go * (({t})1 - tc * tc) + dc_next[i];
    dz[at] = dc * gj * (({t})1 - gi) * gi;
    dz[at + units] = dc * gi * (({t})1 - gj) * (gj + ({t})1);
    dz[at + 2 * units] = dc * c_prev[i] * (({t})1 - gf) * gf;
    dz[at + 3 * units] = g * tc * (({t})1 - go) * go;
    dc_prev[i] = dc * gf;
}}
"""


def recurrent_sources(dtype_name, tile=None):
    """``{"step": ..., "grad": ...}``, each ``(source, kernel name)``, of the steps with
    their recurrent product for ``float32``/``float64`` and ``tile`` (units x batch rows
    per block and, optionally, whether to stage ``w``; default ``TILE``), or None for
    other dtypes. Staging is dropped where its shared memory would pass 48 KiB.

    ``step(x, h_prev, w, row, c_prev, a, c, h, batch, units, inner, half_bias)`` computes
    ``lstm_step_rec``; ``grad(dy, dz_next, w, dc_next, a, c, c_prev, dz, dc_prev, batch,
    units)`` computes ``lstm_step_rec_grad``. Launch ``blocks(batch, units, tile)`` blocks
    of ``threads(tile)`` threads."""
    if dtype_name not in _TYPES:
        return None
    tu, tb, stage = _tile(tile)
    t, f = _TYPES[dtype_name]
    size = 4 if dtype_name == "float32" else 8
    stage = int(bool(stage) and (TJ * (4 * tu + tb)) * size <= _SHARED_BYTES)
    head = _REC_HEAD.format(tu=int(tu), tb=int(tb), tj=TJ, stage=stage)
    made = {}
    for key, text in (("step", _REC_STEP), ("grad", _REC_GRAD)):
        name = f"gf_lstm_rec_{key}_{dtype_name}_{tu}x{tb}{'s' if stage else ''}"
        made[key] = (head + text.format(name=name, t=t, f=f), name)
    return made


def _tile(tile):
    tile = tuple(TILE if tile is None else tile)
    return tile + (0,) * (3 - len(tile))


def blocks(batch, units, tile=None):
    """The number of blocks of a recurrent step kernel's grid."""
    tu, tb, _ = _tile(tile)
    return -(-units // tu) * -(-batch // tb)


def threads(tile=None):
    """The threads of a recurrent step kernel's block."""
    tu, tb, _ = _tile(tile)
    return tu * tb
