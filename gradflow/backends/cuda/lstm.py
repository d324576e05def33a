"""CUDA C text of the graph compiler's LSTM step ops: ``lstm_step``/``lstm_step_grad``
(one kernel each, one thread per (batch row, unit)) and ``lstm_step_rec``/
``lstm_step_rec_grad``, the same with the recurrent product inside (below).

Run through the Array API, a step is about a dozen kernels forward and two dozen
backward (the gate activations, the cell, the output, each gradient and the sums
between them): on an H100 the captured char-LSTM step (50 steps) ran 2,807 kernels,
about 8 ms, where PyTorch's ``nn.LSTM`` replay took 0.4. Here a step is one kernel
each way, with the reference's arithmetic (``gradflow.prim.rnn``): the gates'
terms summed left to right, ``sigmoid(z) = tanh(z / 2) / 2 + 1/2`` (the forget gate
adding ``forget_bias / 2`` inside the ``tanh``), ``c = f c_prev + i j``, ``h = o
tanh(c)``; backward ``dc = dh o (1 - tanh(c)^2) + dc_next``, ``dz = g (1 - a)(a + m)``
for each gate's gradient ``g`` (``m`` one on the ``tanh`` gate ``j``) and ``dc_prev =
dc f``. Gates are ``[batch, 4 * units]`` in TF1's order ``i, j, f, o``; states
``[batch, units]``; the bias a row of ``4 * units``; all C-ordered, one dtype.

The text is compiled for the GPU by ``cupy.RawKernel`` (``gradflow.backends.cupy.rnn``)
and, in the tests, for the host by g++ (``tests/cuda_host.py``).
"""

from __future__ import annotations

from gradflow.backends.cuda.im2col import GRID_LOOP

_TYPES = {"float32": ("float", "f"), "float64": ("double", "")}

# The step's arithmetic from the summed gates ``z[4]`` of element ``i`` (gates at ``at``),
# and its gradient from the output's gradient ``{g}``: the same text in every kernel.
_FORWARD_CELL = r"""
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
"""

_BACKWARD_CELL = r"""
        {t} gi = a[at], gj = a[at + units], gf = a[at + 2 * units], go = a[at + 3 * units];
        {t} tc = tanh{f}(c[i]);
        {t} g = {g};
        {t} dc = g * go * (({t})1 - tc * tc) + dc_next[i];
        dz[at] = dc * gj * (({t})1 - gi) * gi;
        dz[at + units] = dc * gi * (({t})1 - gj) * (gj + ({t})1);
        dz[at + 2 * units] = dc * c_prev[i] * (({t})1 - gf) * gf;
        dz[at + 3 * units] = g * tc * (({t})1 - go) * go;
        dc_prev[i] = dc * gf;
"""

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
""" + _FORWARD_CELL + r"""    }}
}}
"""

_STEP_GRAD = r"""
extern "C" __global__ void {name}(const {t} *dh, const {t} *dc_next, const {t} *a,
                                  const {t} *c, const {t} *c_prev, {t} *dz, {t} *dc_prev,
                                  long long batch, long long units) {{
    long long total = batch * units;
""" + GRID_LOOP + r"""        long long b = i / units, k = i % units;
        long long at = b * 4 * units + k;
""" + _BACKWARD_CELL.replace("{g}", "dh[i]") + r"""    }}
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
# Both kernels split the product's inner dimension between the threads of a block, so
# that each thread sums few terms, and finish through shared memory; a step is then
# about one trip to L2 for ``w``, a reduction and the step's arithmetic.
#
# Forward (``z = (x + h_prev w) + row``, ``w`` [inner, 4 * units]): a block is
# ``LANES`` units (one per lane: the warp reads consecutive columns of ``w``) x ``KS``
# warps that take every ``KS``-th row of ``w``, for ``TB`` batch rows: a thread loads
# its four gates' weights of row ``j`` once and applies them to all ``TB`` rows of
# ``h_prev`` (staged in shared memory, ``TJ`` columns at a time). The ``KS`` partial
# sums of each (row, unit, gate) are added in order of the warp.
#
# Backward (``dh = dy + dz_next w^T``): the inner dimension is ``4 * units``; lanes and
# warps take every ``LANES * KS``-th column (the warp reads consecutive columns of rows
# of ``w`` and ``dz_next``), for ``TU`` units x ``TB`` batch rows, each weight applied
# to all ``TB`` rows; the partial sums are added across the warp by shuffles, then
# across warps in order.
#
# Blocks are ``LANES * KS`` threads in a 1-D grid of unit tiles x batch tiles. Every
# loop strides by the block's size and a one-lane shuffle is no shuffle, so the host
# build (one thread per block) runs the very text with every size 1.

TJ = 128
_SHARED_BYTES = 48 * 1024  # a block's static shared memory
# (LANES, KS, TB) of the forward kernel and (LANES, KS, TU, TB) of the backward on the GPU,
# fastest at the char-LSTM's sizes (batch 32, 128 units) on an H200: 3.8 and 3.1 us
# a kernel in a CUDA graph of one time step after another (benchmarks/gpu.py)
STEP_TILE = (32, 16, 4)
GRAD_TILE = (32, 4, 4, 2)

_REC_STEP = r"""
#define GF_LANES {lanes}
#define GF_KS {ks}
#define GF_TB {tb}
#define GF_TJ {tj}
extern "C" __global__ void {name}(const {t} *x, const {t} *h_prev, const {t} *w,
                                  const {t} *row, const {t} *c_prev, {t} *a, {t} *c,
                                  {t} *h, long long batch, long long units,
                                  long long inner, {t} half_bias, long long x_ld) {{
    __shared__ {t} hs[GF_TB * GF_TJ];
    __shared__ {t} red[GF_KS * GF_TB * 4 * GF_LANES];
    const int tid = threadIdx.x, lane = tid % GF_LANES, part = tid / GF_LANES;
    const long long unit_tiles = (units + GF_LANES - 1) / GF_LANES;
    const long long k = (long long)(blockIdx.x % unit_tiles) * GF_LANES + lane;
    const long long b0 = (long long)(blockIdx.x / unit_tiles) * GF_TB;
    const long long four = 4 * units;
    const int rows = batch - b0 < GF_TB ? (int)(batch - b0) : GF_TB;
    {t} acc[GF_TB][4];
    for (int r = 0; r < GF_TB; ++r)
        for (int q = 0; q < 4; ++q) acc[r][q] = 0;
    for (long long j0 = 0; j0 < inner; j0 += GF_TJ) {{
        const int jn = inner - j0 < GF_TJ ? (int)(inner - j0) : GF_TJ;
        __syncthreads();
        for (int e = tid; e < GF_TB * GF_TJ; e += GF_LANES * GF_KS) {{
            const int r = e / GF_TJ, jj = e % GF_TJ;
            hs[e] = (r < rows && jj < jn) ? h_prev[(b0 + r) * inner + j0 + jj] : ({t})0;
        }}
        __syncthreads();
        if (k < units) {{
#pragma unroll 4
            for (int jj = part; jj < jn; jj += GF_KS) {{
                const {t} *wr = w + (j0 + jj) * four + k;
                const {t} w0 = wr[0], w1 = wr[units], w2 = wr[2 * units], w3 = wr[3 * units];
#pragma unroll
                for (int r = 0; r < GF_TB; ++r) {{
                    const {t} hv = hs[r * GF_TJ + jj];
                    acc[r][0] += hv * w0;
                    acc[r][1] += hv * w1;
                    acc[r][2] += hv * w2;
                    acc[r][3] += hv * w3;
                }}
            }}
        }}
    }}
    for (int r = 0; r < GF_TB; ++r)
        for (int q = 0; q < 4; ++q)
            red[((part * GF_TB + r) * 4 + q) * GF_LANES + lane] = acc[r][q];
    __syncthreads();
    for (int o = part; o < rows; o += GF_KS) {{
        if (k >= units) break;
        const long long b = b0 + o, i = b * units + k, at = b * four + k;
        {t} z[4];
        for (int q = 0; q < 4; ++q) {{
            {t} sum = 0;
            for (int p = 0; p < GF_KS; ++p) sum += red[((p * GF_TB + o) * 4 + q) * GF_LANES + lane];
            z[q] = (x[b * x_ld + q * units + k] + sum) + row[k + q * units];
        }}
""" + _FORWARD_CELL + r"""    }}
}}
"""

_REC_GRAD = r"""
#define GF_GLANES {lanes}
#define GF_GKS {ks}
#define GF_GTU {tu}
#define GF_GTB {tb}
extern "C" __global__ void {name}(const {t} *dy, const {t} *dz_next, const {t} *w,
                                  const {t} *dc_next, const {t} *a, const {t} *c,
                                  const {t} *c_prev, {t} *dz, {t} *dc_prev,
                                  long long batch, long long units, long long dy_ld) {{
    __shared__ {t} red[GF_GKS * GF_GTB * GF_GTU];
    const int tid = threadIdx.x, lane = tid % GF_GLANES, part = tid / GF_GLANES;
    const long long unit_tiles = (units + GF_GTU - 1) / GF_GTU;
    const long long k0 = (long long)(blockIdx.x % unit_tiles) * GF_GTU;
    const long long b0 = (long long)(blockIdx.x / unit_tiles) * GF_GTB;
    const long long four = 4 * units;
    const int rows = batch - b0 < GF_GTB ? (int)(batch - b0) : GF_GTB;
    const int cols = units - k0 < GF_GTU ? (int)(units - k0) : GF_GTU;
    {t} acc[GF_GTB][GF_GTU];
    for (int r = 0; r < GF_GTB; ++r)
        for (int u = 0; u < GF_GTU; ++u) acc[r][u] = 0;
#pragma unroll 2
    for (long long n = tid; n < four; n += GF_GLANES * GF_GKS) {{
        {t} wv[GF_GTU];
#pragma unroll
        for (int u = 0; u < GF_GTU; ++u) wv[u] = u < cols ? w[(k0 + u) * four + n] : ({t})0;
#pragma unroll
        for (int r = 0; r < GF_GTB; ++r) {{
            const {t} zv = r < rows ? dz_next[(b0 + r) * four + n] : ({t})0;
#pragma unroll
            for (int u = 0; u < GF_GTU; ++u) acc[r][u] += zv * wv[u];
        }}
    }}
    for (int r = 0; r < GF_GTB; ++r)
        for (int u = 0; u < GF_GTU; ++u) {{
            {t} v = acc[r][u];
            for (int off = GF_GLANES / 2; off > 0; off /= 2)
                v += __shfl_down_sync(0xffffffffu, v, off);
            if (lane == 0) red[(part * GF_GTB + r) * GF_GTU + u] = v;
        }}
    __syncthreads();
    for (int o = tid; o < GF_GTB * GF_GTU; o += GF_GLANES * GF_GKS) {{
        const int r = o / GF_GTU, u = o % GF_GTU;
        if (r >= rows || u >= cols) continue;
        {t} sum = 0;
        for (int p = 0; p < GF_GKS; ++p) sum += red[(p * GF_GTB + r) * GF_GTU + u];
        const long long k = k0 + u, i = (b0 + r) * units + k, at = (b0 + r) * four + k;
""" + _BACKWARD_CELL.replace("{g}", "dy[(b0 + r) * dy_ld + k] + sum") + r"""    }}
}}
"""


def recurrent_sources(dtype_name, step_tile=None, grad_tile=None):
    """``{"step": ..., "grad": ...}``, each ``(source, kernel name)``, of the steps with
    their recurrent product for ``float32``/``float64``, or None for other dtypes.
    ``step_tile`` is ``(LANES, KS, TB)`` and ``grad_tile`` ``(LANES, KS, TU, TB)`` (see
    above; defaults ``STEP_TILE``, ``GRAD_TILE``).

    ``step(x, h_prev, w, row, c_prev, a, c, h, batch, units, inner, half_bias, x_ld)``
    computes ``lstm_step_rec``; ``grad(dy, dz_next, w, dc_next, a, c, c_prev, dz,
    dc_prev, batch, units, dy_ld)`` computes ``lstm_step_rec_grad``. ``x`` and ``dy`` may
    be rows of a larger array: ``x_ld`` and ``dy_ld`` are their row strides in elements
    (a bidirectional RNN's output gradient is a slice along its time axis); every other
    array is C-ordered. Launch ``step_blocks``/``grad_blocks``
    blocks of ``threads(tile)`` threads."""
    if dtype_name not in _TYPES:
        return None
    lanes, ks, tb = step_tile_for(dtype_name, step_tile)
    g_lanes, g_ks, g_tu, g_tb = GRAD_TILE if grad_tile is None else grad_tile
    t, f = _TYPES[dtype_name]
    step = f"gf_lstm_rec_step_{dtype_name}_{lanes}x{ks}x{tb}"
    grad = f"gf_lstm_rec_grad_{dtype_name}_{g_lanes}x{g_ks}x{g_tu}x{g_tb}"
    return {"step": (_REC_STEP.format(name=step, t=t, f=f, lanes=lanes, ks=ks, tb=tb, tj=TJ),
                     step),
            "grad": (_REC_GRAD.format(name=grad, t=t, f=f, lanes=g_lanes, ks=g_ks, tu=g_tu,
                                      tb=g_tb), grad)}


def step_tile_for(dtype_name, tile=None):
    """The forward kernel's tile for ``dtype_name``: ``tile`` (default ``STEP_TILE``) with
    fewer batch rows where its shared memory would pass 48 KiB (doubles)."""
    lanes, ks, tb = STEP_TILE if tile is None else tile
    size = 8 if dtype_name == "float64" else 4
    while tb > 1 and (ks * tb * 4 * lanes + tb * TJ) * size > _SHARED_BYTES:
        tb //= 2
    return lanes, ks, tb


def threads(tile):
    """The threads of a block of either kernel: ``LANES * KS``."""
    return tile[0] * tile[1]


def step_blocks(batch, units, tile=None):
    """The blocks of the forward kernel's grid."""
    lanes, _, tb = STEP_TILE if tile is None else tile
    return -(-units // lanes) * -(-batch // tb)


def grad_blocks(batch, units, tile=None):
    """The blocks of the backward kernel's grid."""
    _, _, tu, tb = GRAD_TILE if tile is None else tile
    return -(-units // tu) * -(-batch // tb)
