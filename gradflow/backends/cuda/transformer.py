"""CUDA C text of a transformer's fused kernels besides attention: layer norm (forward
and backward), GELU in its tanh form (forward and backward), and the softmax over rows
too wide for ``rows.py``'s one-thread-per-row kernel (more than ``rows.MAX_COLUMNS``).

Row kernels here run one block per row (a grid-stride loop over the rows), the block's
threads striding over the columns and meeting in a shared-memory tree reduction; the
block size must be a power of two of at most ``BLOCK`` threads. Half inputs (float16)
are read and written as ``__half`` and computed in float; float32 in float, float64 in
double. Formulas, as google-research/bert writes them in TF1 ops:

- layer norm over the last axis: ``mean = sum(x) / n``, ``var = sum((x - mean)^2) / n``
  (``tf.nn.moments``), ``y = (x - mean) * rsqrt(var + eps) * gamma + beta``; the forward
  also writes each row's ``mean`` and ``rstd`` for the backward, whose row kernel writes
  ``dx = rstd * (dy gamma - mean(dy gamma) - xhat mean(dy gamma xhat))`` and whose column
  kernel (one thread per column, rows in order) ``dgamma = sum(dy xhat)``,
  ``dbeta = sum(dy)``;
- GELU: ``y = 0.5 x (1 + tanh(c (x + 0.044715 x^3)))``, ``c = sqrt(2 / pi)``, and
  ``dx = dy (0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2))``;
- softmax: ``exp(x - max) / sum(exp(x - max))`` per row (a NaN makes its row NaN).

The texts are compiled on the GPU by ``cupy.RawKernel`` and, in the tests
(``tests/test_cuda_transformer.py``), by g++ through ``tests/cuda_host.py``'s header.
"""

from __future__ import annotations

import math

BLOCK = 256
_TYPES = {"float16": ("__half", "float", "f"), "float32": ("float", "float", "f"),
          "float64": ("double", "double", "")}

_HELPERS = r"""
#include <cuda_fp16.h>
static __device__ inline {a} {p}_load(const {t} *x, long long i) {{ return ({a})({load}); }}
static __device__ inline {t} {p}_store({a} v) {{ return {store}; }}
static __device__ inline {a} {p}_block_sum({a} v, {a} *red) {{
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }}
    {a} total = red[0];
    __syncthreads();
    return total;
}}
static __device__ inline {a} {p}_block_max({a} v, {a} *red) {{
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) {{
            {a} o = red[threadIdx.x + s];
            if (o > red[threadIdx.x] || o != o) red[threadIdx.x] = o;
        }}
        __syncthreads();
    }}
    {a} top = red[0];
    __syncthreads();
    return top;
}}
"""

_LAYER_NORM = r"""
extern "C" __global__ void {p}_layer_norm(const {t} *x, const {t} *gamma, const {t} *beta,
        {t} *y, {a} *mean, {a} *rstd, long long rows, long long cols, double eps) {{
    __shared__ {a} red[{block}];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{
        const {t} *xr = x + r * cols;
        {a} s = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += {p}_load(xr, j);
        {a} mu = {p}_block_sum(s, red) / ({a})cols;
        {a} q = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {{
            {a} d = {p}_load(xr, j) - mu;
            q += d * d;
        }}
        {a} inv = ({a})1 / sqrt{f}({p}_block_sum(q, red) / ({a})cols + ({a})eps);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            y[r * cols + j] = {p}_store(({p}_load(xr, j) - mu) * inv * {p}_load(gamma, j)
                                        + {p}_load(beta, j));
        if (threadIdx.x == 0) {{ mean[r] = mu; rstd[r] = inv; }}
    }}
}}

extern "C" __global__ void {p}_layer_norm_grad(const {t} *dy, const {t} *x, const {t} *gamma,
        const {a} *mean, const {a} *rstd, {t} *dx, long long rows, long long cols) {{
    __shared__ {a} red[{block}];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{
        const {t} *xr = x + r * cols, *dr = dy + r * cols;
        {a} mu = mean[r], inv = rstd[r], s1 = 0, s2 = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {{
            {a} g = {p}_load(dr, j) * {p}_load(gamma, j);
            s1 += g;
            s2 += g * ({p}_load(xr, j) - mu) * inv;
        }}
        {a} m1 = {p}_block_sum(s1, red) / ({a})cols;
        {a} m2 = {p}_block_sum(s2, red) / ({a})cols;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {{
            {a} g = {p}_load(dr, j) * {p}_load(gamma, j);
            {a} xhat = ({p}_load(xr, j) - mu) * inv;
            dx[r * cols + j] = {p}_store(inv * (g - m1 - xhat * m2));
        }}
    }}
}}

extern "C" __global__ void {p}_layer_norm_params_grad(const {t} *dy, const {t} *x,
        const {a} *mean, const {a} *rstd, {t} *dgamma, {t} *dbeta, long long rows,
        long long cols) {{
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < cols;
         j += stride) {{
        {a} sg = 0, sb = 0;
        for (long long r = 0; r < rows; ++r) {{
            {a} d = {p}_load(dy, r * cols + j);
            sg += d * ({p}_load(x, r * cols + j) - mean[r]) * rstd[r];
            sb += d;
        }}
        dgamma[j] = {p}_store(sg);
        dbeta[j] = {p}_store(sb);
    }}
}}
"""

_GELU = r"""
extern "C" __global__ void {p}_gelu(const {t} *x, {t} *y, long long n) {{
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
        {a} v = {p}_load(x, i);
        {a} t = tanh{f}(({a}){c} * (v + ({a})0.044715 * v * v * v));
        y[i] = {p}_store(({a})0.5 * v * (({a})1 + t));
    }}
}}

extern "C" __global__ void {p}_gelu_grad(const {t} *dy, const {t} *x, {t} *dx, long long n) {{
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {{
        {a} v = {p}_load(x, i);
        {a} t = tanh{f}(({a}){c} * (v + ({a})0.044715 * v * v * v));
        {a} slope = ({a})0.5 * (({a})1 + t) + ({a})0.5 * v * (({a})1 - t * t) * ({a}){c}
                    * (({a})1 + ({a})3 * ({a})0.044715 * v * v);
        dx[i] = {p}_store({p}_load(dy, i) * slope);
    }}
}}
"""

_SOFTMAX = r"""
extern "C" __global__ void {p}_softmax_wide(const {t} *x, {t} *y, long long rows,
        long long cols) {{
    __shared__ {a} red[{block}];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {{
        const {t} *xr = x + r * cols;
        {a} top = {p}_load(xr, 0);  // a member of the row: the maximum is the same
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {{
            {a} v = {p}_load(xr, j);
            top = (v > top || v != v) ? v : top;
        }}
        top = {p}_block_max(top, red);
        {a} s = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            s += exp{f}({p}_load(xr, j) - top);
        {a} total = {p}_block_sum(s, red);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            y[r * cols + j] = {p}_store(exp{f}({p}_load(xr, j) - top) / total);  // y may be x
    }}
}}
"""


def _format(text, dtype_name):
    t, a, f = _TYPES[dtype_name]
    half = t == "__half"
    return text.format(t=t, a=a, f=f, p=f"gf_{dtype_name}", block=BLOCK,
                       c=repr(math.sqrt(2.0 / math.pi)),
                       load="__half2float(x[i])" if half else "x[i]",
                       store="__float2half_rn(v)" if half else "v")


def sources(dtype_name):
    """``{kind: (text, kernel name)}`` of the kernels for ``dtype_name`` (float16,
    float32, float64), or None for another dtype. The kinds and their arguments:

    - ``layer_norm(x, gamma, beta, y, mean, rstd, rows, cols, eps)``;
    - ``layer_norm_grad(dy, x, gamma, mean, rstd, dx, rows, cols)``;
    - ``layer_norm_params_grad(dy, x, mean, rstd, dgamma, dbeta, rows, cols)`` (one thread
      per column);
    - ``gelu(x, y, n)``, ``gelu_grad(dy, x, dx, n)`` (one thread per element);
    - ``softmax_wide(x, y, rows, cols)``.

    Row kernels take one block per row; ``mean``/``rstd`` are float for half rows. The
    texts share helpers, so compile them as one module (their concatenation)."""
    if dtype_name not in _TYPES:
        return None
    p = f"gf_{dtype_name}"
    texts = {"helpers": _format(_HELPERS, dtype_name), "layer_norm": _format(_LAYER_NORM,
                                                                             dtype_name),
             "gelu": _format(_GELU, dtype_name), "softmax_wide": _format(_SOFTMAX, dtype_name)}
    module = "".join(texts.values())
    names = ("layer_norm", "layer_norm_grad", "layer_norm_params_grad", "gelu", "gelu_grad",
             "softmax_wide")
    return {kind: (module, f"{p}_{kind}") for kind in names}
