"""CUDA C text of column sums: a C-ordered ``rows x cols`` array summed down its rows.

A bias gradient is one: the gradient of a convolution's output, ``(n, h, w, c)``,
summed to ``(c,)``. CuPy's ``sum`` over the leading axes of such an array took
1.5 ms at batch 128 and 11.5 ms at batch 512 in the MNIST CNN step on an H100, most
of the step. Here the rows are cut into parts of ``PART_ROWS``: one thread sums one
column of one part, in row order, so that neighbouring threads read neighbouring
columns; the parts' sums are summed the same way, again and again, down to one row.
The parts depend on the shape alone, so the bits do not depend on the GPU.

The text is compiled for the GPU by ``cupy.RawKernel`` (``gradflow.backends.cupy.emit``)
and, in the tests, for the host by g++ (``tests/cuda_host.py``).
"""

from __future__ import annotations

from gradflow.backends.cuda.im2col import GRID_LOOP

PART_ROWS = 64

_TYPES = {"float32": "float", "float64": "double"}

_SUM = r"""
extern "C" __global__ void {name}(const {t} *x, {t} *out, long long rows, long long cols,
                                  long long part_rows) {{
    long long parts = (rows + part_rows - 1) / part_rows;
    long long total = parts * cols;
""" + GRID_LOOP + r"""        long long part = i / cols, col = i - part * cols;
        long long first = part * part_rows;
        long long last = first + part_rows < rows ? first + part_rows : rows;
        {t} sum = 0;
        for (long long r = first; r < last; ++r) sum += x[r * cols + col];
        out[i] = sum;
    }}
}}
"""


def column_sum_source(dtype_name):
    """``{"sum": (source, kernel name)}`` for ``float32`` or ``float64``, or None for
    other dtypes. ``sum(x, out, rows, cols, part_rows)`` writes the ``ceil(rows /
    part_rows) x cols`` sums of ``part_rows`` consecutive rows of ``x`` into ``out``."""
    t = _TYPES.get(dtype_name)
    if t is None:
        return None
    name = f"gf_column_sum_{dtype_name}"
    return {"sum": (_SUM.format(name=name, t=t, ix="long long"), name)}


def passes(rows):
    """The row counts of the passes that sum ``rows`` rows to one: each pass sums parts
    of ``PART_ROWS`` rows of the last one's result."""
    counts = [rows]
    while counts[-1] > 1:
        counts.append(-(-counts[-1] // PART_ROWS))
    return counts
