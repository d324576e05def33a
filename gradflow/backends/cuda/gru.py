"""CUDA C text of the graph compiler's GRU step ops (``passes/gru_steps.py``): one
kernel each, one thread per (batch row, unit), with the reference's arithmetic
(``gradflow.prim.gru``):

- ``gates_step{2,3}(x, [y,] row, h, gates, rh)``: ``gates = sigmoid((x + y) + row)``
  (``sigmoid(z) = tanh(z / 2) / 2 + 1/2``) for ``r`` and ``u`` of the unit, ``rh = r h``;
- ``h_step{2,3}(x, [y,] row, gates, h, zc, h_new)``: ``zc = (x + y) + row``, ``h_new =
  u h + (1 - u) tanh(zc)``;
- ``h_grads{1,2,3,4}(t0, ..., gates, zc, h, dgates, dzc, dh)``: ``g = ((t0 + t1) + t2) +
  t3``, ``dgates = [0, g (h - c)]``, ``dzc = g (1 - u)(1 - c^2)``, ``dh = g u`` with
  ``c = tanh(zc)``;
- ``gates_grad(drh, dgh, gates, h, dz, dh)``: ``dz = ((dgh + [drh h, 0]) s)(1 - s)``,
  ``dh = drh r``.

Gates are ``[batch, 2 * units]`` (``r, u``), states ``[batch, units]``, biases a row;
all C-ordered, one dtype. Compiled for the GPU by ``cupy.RawKernel``
(``gradflow.backends.cupy.rnn``) and, in the tests, for the host by g++.
"""

from __future__ import annotations

from gradflow.backends.cuda.im2col import GRID_LOOP

_TYPES = {"float32": ("float", "f"), "float64": ("double", "")}

_HEAD = r"""
extern "C" __global__ void {name}({params}long long batch, long long units) {{
    long long total = batch * units;
""" + GRID_LOOP + r"""        long long b = i / units, k = i % units;
        long long ar = b * 2 * units + k, au = ar + units;
"""
_TAIL = r"""    }}
}}
"""

_GATES_STEP = r"""        {t} r = tanh{f}(({sum_r}) * ({t})0.5) * ({t})0.5 + ({t})0.5;
        {t} u = tanh{f}(({sum_u}) * ({t})0.5) * ({t})0.5 + ({t})0.5;
        gates[ar] = r;
        gates[au] = u;
        rh[i] = r * h[i];
"""

_H_STEP = r"""        {t} z = {sum_c};
        {t} u = gates[au];
        zc[i] = z;
        h_new[i] = u * h[i] + (({t})1 - u) * tanh{f}(z);
"""

_H_GRADS = r"""        {t} g = {sum_g};
        {t} u = gates[au], c = tanh{f}(zc[i]), hi = h[i];
        dgates[ar] = ({t})0;
        dgates[au] = g * (hi - c);
        dzc[i] = g * (({t})1 - u) * (({t})1 - c * c);
        dh[i] = g * u;
"""

_GATES_GRAD = r"""        {t} r = gates[ar], u = gates[au], d = drh[i];
        dz[ar] = ((dgh[ar] + d * h[i]) * r) * (({t})1 - r);
        dz[au] = ((dgh[au] + ({t})0) * u) * (({t})1 - u);
        dh[i] = d * r;
"""


def _params(t, inputs, outputs):
    return "".join(f"const {t} *{n}, " for n in inputs) + "".join(f"{t} *{n}, "
                                                                   for n in outputs)


def _sum(names, at, row_at=None):
    """``((a[at] + b[at]) + ...)``: the terms summed left to right as the reference; the
    bias ``row`` read at ``row_at``."""
    text = f"{names[0]}[{at}]"
    for name in names[1:]:
        text = f"({text} + {name}[{row_at if name == 'row' else at}])"
    return text


def _kernel(name, t, f, inputs, outputs, body, **sums):
    head = _HEAD.format(name=name, params=_params(t, inputs, outputs), ix="long long")
    return head + body.format(t=t, f=f, **sums) + _TAIL.format(), name


def step_sources(dtype_name):
    """``{"gates_step2": ..., "gates_step3", "h_step2", "h_step3", "h_grads1"...
    "h_grads4", "gates_grad"}``, each ``(source, kernel name)``, for ``float32`` or
    ``float64``, or None for other dtypes; each kernel ends with ``batch, units``."""
    if dtype_name not in _TYPES:
        return None
    t, f = _TYPES[dtype_name]
    made = {}
    for terms, names in ((2, ["x", "row"]), (3, ["x", "y", "row"])):
        key = f"gates_step{terms}"
        made[key] = _kernel(f"gf_gru_{key}_{dtype_name}", t, f, names + ["h"],
                            ["gates", "rh"], _GATES_STEP,
                            sum_r=_sum(names, "ar", "k"), sum_u=_sum(names, "au", "units + k"))
        key = f"h_step{terms}"
        made[key] = _kernel(f"gf_gru_{key}_{dtype_name}", t, f, names + ["gates", "h"],
                            ["zc", "h_new"], _H_STEP,
                            sum_c=_sum(names, "i", "k"))
    for terms in range(1, 5):
        names = [f"t{q}" for q in range(terms)]
        key = f"h_grads{terms}"
        made[key] = _kernel(f"gf_gru_{key}_{dtype_name}", t, f, names + ["gates", "zc", "h"],
                            ["dgates", "dzc", "dh"], _H_GRADS, sum_g=_sum(names, "i"))
    made["gates_grad"] = _kernel(f"gf_gru_gates_grad_{dtype_name}", t, f,
                                 ["drh", "dgh", "gates", "h"], ["dz", "dh"], _GATES_GRAD)
    return made
