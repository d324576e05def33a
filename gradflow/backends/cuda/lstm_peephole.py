"""CUDA C text of the peephole LSTM cell's ops (``gradflow.prim.lstm_peephole``), with
the reference's arithmetic (``sigmoid(x) = tanh(x / 2) / 2 + 1/2``):

- ``c_forward(z, c_prev, w_i, w_f, c, batch, units, forget_bias, clip, has_clip)``:
  ``c = clip(sigmoid((f + forget_bias) + w_f c_prev) c_prev + sigmoid(i + w_i c_prev)
  tanh(j))``, one thread per (batch row, unit);
- ``h_forward(z, c, w_o, h, batch, units)``: ``h = sigmoid(o + w_o c) tanh(c)``;
- ``c_grads(g, z, c_prev, w_i, w_f, dz, dc_prev, dw_i, dw_f, batch, units, forget_bias,
  clip, has_clip)`` and ``h_grads(g, z, c, w_o, dz, dc, dw_o, batch, units)``: every
  gradient of each op, one thread per unit walking the batch rows in order, so that it
  sums the weight gradients without atomics;
- ``step(x, y, row, terms, c_prev, w_i, w_f, w_o, z, c, h, batch, units, forget_bias,
  clip, has_clip)``: ``lstm_peep_step``, ``z = (x + y) + row`` (``x + row`` when
  ``terms`` is 2) and the cell of it;
- ``step_grad(t0, t1, t2, t3, terms, dc_next, carry, z, c_prev, c, w_i, w_f, w_o, dz,
  dc_prev, dw_i, dw_f, dw_o, batch, units, forget_bias, clip, has_clip)``:
  ``lstm_peep_step_grad``, one thread per unit as the gradients.

Gates are ``[batch, 4 * units]`` in TF1's order ``i, j, f, o``, states ``[batch,
units]``, weights ``[units]``; all C-ordered, one dtype. Compiled for the GPU by
``cupy.RawKernel`` (``gradflow.backends.cupy.peephole``) and, in the tests, for the host
by g++.
"""

from __future__ import annotations

from gradflow.backends.cuda.im2col import GRID_LOOP

_TYPES = {"float32": ("float", "f"), "float64": ("double", "")}

_SIGMOID = r"""
__device__ inline {t} {sig}({t} x) {{
    return tanh{f}(x * ({t})0.5) * ({t})0.5 + ({t})0.5;
}}
"""

_C_FORWARD = r"""
extern "C" __global__ void {name}(const {t} *z, const {t} *c_prev, const {t} *w_i,
                                  const {t} *w_f, {t} *c, long long batch, long long units,
                                  {t} forget_bias, {t} clip, int has_clip) {{
    long long total = batch * units;
""" + GRID_LOOP + r"""        long long b = i / units, k = i % units, at = b * 4 * units + k;
        {t} cp = c_prev[i];
        {t} si = {sig}(z[at] + w_i[k] * cp);
        {t} sf = {sig}((z[at + 2 * units] + forget_bias) + w_f[k] * cp);
        {t} cn = sf * cp + si * tanh{f}(z[at + units]);
        if (has_clip) {{
            if (cn < -clip) cn = -clip;
            if (cn > clip) cn = clip;
        }}
        c[i] = cn;
    }}
}}
"""

_H_FORWARD = r"""
extern "C" __global__ void {name}(const {t} *z, const {t} *c, const {t} *w_o, {t} *h,
                                  long long batch, long long units) {{
    long long total = batch * units;
""" + GRID_LOOP + r"""        long long b = i / units, k = i % units, at = b * 4 * units + k;
        {t} ck = c[i];
        h[i] = {sig}(z[at + 3 * units] + w_o[k] * ck) * tanh{f}(ck);
    }}
}}
"""

_C_GRADS = r"""
extern "C" __global__ void {name}(const {t} *g, const {t} *z, const {t} *c_prev,
                                  const {t} *w_i, const {t} *w_f, {t} *dz, {t} *dc_prev,
                                  {t} *dw_i, {t} *dw_f, long long batch, long long units,
                                  {t} forget_bias, {t} clip, int has_clip) {{
    long long total = units;
""" + GRID_LOOP + r"""        long long k = i;
        {t} sum_i = ({t})0, sum_f = ({t})0;
        for (long long b = 0; b < batch; ++b) {{
            long long at = b * 4 * units + k, s = b * units + k;
            {t} cp = c_prev[s];
            {t} si = {sig}(z[at] + w_i[k] * cp);
            {t} sf = {sig}((z[at + 2 * units] + forget_bias) + w_f[k] * cp);
            {t} tj = tanh{f}(z[at + units]);
            {t} gk = g[s];
            if (has_clip) {{
                {t} raw = sf * cp + si * tj;
                if (raw < -clip || raw > clip) gk = ({t})0;
            }}
            {t} dai = gk * tj * (({t})1 - si) * si;
            {t} daf = gk * cp * (({t})1 - sf) * sf;
            dz[at] = dai;
            dz[at + units] = gk * si * (({t})1 - tj * tj);
            dz[at + 2 * units] = daf;
            dz[at + 3 * units] = ({t})0;
            dc_prev[s] = (gk * sf + dai * w_i[k]) + daf * w_f[k];
            sum_i += dai * cp;
            sum_f += daf * cp;
        }}
        dw_i[k] = sum_i;
        dw_f[k] = sum_f;
    }}
}}
"""

_H_GRADS = r"""
extern "C" __global__ void {name}(const {t} *g, const {t} *z, const {t} *c, const {t} *w_o,
                                  {t} *dz, {t} *dc, {t} *dw_o, long long batch,
                                  long long units) {{
    long long total = units;
""" + GRID_LOOP + r"""        long long k = i;
        {t} sum_o = ({t})0;
        for (long long b = 0; b < batch; ++b) {{
            long long at = b * 4 * units + k, s = b * units + k;
            {t} ck = c[s], gk = g[s];
            {t} so = {sig}(z[at + 3 * units] + w_o[k] * ck);
            {t} tc = tanh{f}(ck);
            {t} dao = gk * tc * (({t})1 - so) * so;
            dz[at] = ({t})0;
            dz[at + units] = ({t})0;
            dz[at + 2 * units] = ({t})0;
            dz[at + 3 * units] = dao;
            dc[s] = gk * so * (({t})1 - tc * tc) + dao * w_o[k];
            sum_o += dao * ck;
        }}
        dw_o[k] = sum_o;
    }}
}}
"""


_STEP = r"""
extern "C" __global__ void {name}(const {t} *x, const {t} *y, const {t} *row, int terms,
                                  const {t} *c_prev, const {t} *w_i, const {t} *w_f,
                                  const {t} *w_o, {t} *z, {t} *c, {t} *h, long long batch,
                                  long long units, {t} forget_bias, {t} clip, int has_clip) {{
    long long total = batch * units;
""" + GRID_LOOP + r"""        long long b = i / units, k = i % units, at = b * 4 * units + k;
        {t} zq[4];
        for (int q = 0; q < 4; ++q) {{
            long long p = at + q * units;
            zq[q] = terms == 3 ? (x[p] + y[p]) + row[k + q * units] : x[p] + row[k + q * units];
            z[p] = zq[q];
        }}
        {t} cp = c_prev[i];
        {t} si = {sig}(zq[0] + w_i[k] * cp);
        {t} sf = {sig}((zq[2] + forget_bias) + w_f[k] * cp);
        {t} cn = sf * cp + si * tanh{f}(zq[1]);
        if (has_clip) {{
            if (cn < -clip) cn = -clip;
            if (cn > clip) cn = clip;
        }}
        c[i] = cn;
        h[i] = {sig}(zq[3] + w_o[k] * cn) * tanh{f}(cn);
    }}
}}
"""

_STEP_GRAD = r"""
extern "C" __global__ void {name}(const {t} *t0, const {t} *t1, const {t} *t2, const {t} *t3,
                                  int terms, const {t} *dc_next, int carry, const {t} *z,
                                  const {t} *c_prev, const {t} *c, const {t} *w_i,
                                  const {t} *w_f, const {t} *w_o, {t} *dz, {t} *dc_prev,
                                  {t} *dw_i, {t} *dw_f, {t} *dw_o, long long batch,
                                  long long units, {t} forget_bias, {t} clip, int has_clip) {{
    long long total = units;
""" + GRID_LOOP + r"""        long long k = i;
        {t} sum_i = ({t})0, sum_f = ({t})0, sum_o = ({t})0;
        for (long long b = 0; b < batch; ++b) {{
            long long at = b * 4 * units + k, s = b * units + k;
            {t} gk = t0[s];
            if (terms > 1) gk = gk + t1[s];
            if (terms > 2) gk = gk + t2[s];
            if (terms > 3) gk = gk + t3[s];
            {t} ck = c[s];
            {t} so = {sig}(z[at + 3 * units] + w_o[k] * ck);
            {t} tc = tanh{f}(ck);
            {t} dao = gk * tc * (({t})1 - so) * so;
            dz[at + 3 * units] = dao;
            {t} gc = gk * so * (({t})1 - tc * tc) + dao * w_o[k];
            sum_o += dao * ck;
            if (carry) gc = gc + dc_next[s];
            {t} cp = c_prev[s];
            {t} si = {sig}(z[at] + w_i[k] * cp);
            {t} sf = {sig}((z[at + 2 * units] + forget_bias) + w_f[k] * cp);
            {t} tj = tanh{f}(z[at + units]);
            if (has_clip) {{
                {t} raw = sf * cp + si * tj;
                if (raw < -clip || raw > clip) gc = ({t})0;
            }}
            {t} dai = gc * tj * (({t})1 - si) * si;
            {t} daf = gc * cp * (({t})1 - sf) * sf;
            dz[at] = dai;
            dz[at + units] = gc * si * (({t})1 - tj * tj);
            dz[at + 2 * units] = daf;
            dc_prev[s] = (gc * sf + dai * w_i[k]) + daf * w_f[k];
            sum_i += dai * cp;
            sum_f += daf * cp;
        }}
        dw_i[k] = sum_i;
        dw_f[k] = sum_f;
        dw_o[k] = sum_o;
    }}
}}
"""

def sources(dtype_name):
    """``{"c_forward", "h_forward", "c_grads", "h_grads", "step", "step_grad"}``, each
    ``(source, kernel
    name)``, for ``float32`` or ``float64``, or None for other dtypes. Each source holds
    the sigmoid it uses (named after the kernel), so that each compiles alone."""
    if dtype_name not in _TYPES:
        return None
    t, f = _TYPES[dtype_name]
    made = {}
    for key, text in (("c_forward", _C_FORWARD), ("h_forward", _H_FORWARD),
                      ("c_grads", _C_GRADS), ("h_grads", _H_GRADS), ("step", _STEP),
                      ("step_grad", _STEP_GRAD)):
        name = f"gf_lstm_peep_{key}_{dtype_name}"
        sig = f"{name}_sigmoid"  # one per kernel: the texts also compile together
        made[key] = (_SIGMOID.format(t=t, f=f, sig=sig)
                     + text.format(name=name, t=t, f=f, ix="long long", sig=sig), name)
    return made
