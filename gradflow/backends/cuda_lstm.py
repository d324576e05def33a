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
