"""CUDA C text of row kernels: ops that read a whole row to write each of its elements.

``log_softmax`` over the last axis is one kernel here, where CuPy's own functions take
six (a maximum, a subtraction, an exponential, a sum, a logarithm, a subtraction):
one thread per row, in a grid-stride loop, for rows of up to ``MAX_COLUMNS`` values
(a classifier's logits, a character model's vocabulary). As NumPy: a NaN in a row
makes the row NaN, a row of ``-inf`` is NaN, ``+inf`` gives NaN; the row sum adds in
order, where NumPy adds pairwise, so the last bits may differ.

The text is compiled for the GPU by ``cupy.RawKernel`` (``gradflow.backends.cupy.emit``)
and, in the tests, for the host by g++ through the same compatibility header as the
fused kernels (``tests/cuda_host.py``).
"""

from __future__ import annotations

# Rows longer than this take CuPy's functions: one thread would loop over too many.
MAX_COLUMNS = 4096

_TYPES = {"float32": ("float", "f"), "float64": ("double", "")}

_LOG_SOFTMAX = r"""
extern "C" __global__ void {name}(const {t} *x, {t} *y, long long rows, long long cols) {{
    long long stride = (long long)blockDim.x * gridDim.x;
    for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows;
         r += stride) {{
        const {t} *xr = x + r * cols;
        {t} *yr = y + r * cols;
        {t} top = xr[0];
        for (long long j = 1; j < cols; ++j) {{
            {t} v = xr[j];
            top = (v > top || v != v) ? v : top;  // a NaN wins, as np.max
        }}
        {t} total = 0;
        for (long long j = 0; j < cols; ++j) total += exp{f}(xr[j] - top);
        {t} lse = log{f}(total);
        for (long long j = 0; j < cols; ++j) yr[j] = (xr[j] - top) - lse;  // y may be x
    }}
}}
"""


def log_softmax_source(dtype_name):
    """``(source, kernel name)`` of the log-softmax row kernel for ``float32`` or
    ``float64`` rows, or None for other dtypes. The kernel takes ``(x, y, rows,
    cols)``, C-ordered ``rows x cols`` arrays."""
    if dtype_name not in _TYPES:
        return None
    t, f = _TYPES[dtype_name]
    name = f"gf_log_softmax_{dtype_name}"
    return _LOG_SOFTMAX.format(name=name, t=t, f=f), name
