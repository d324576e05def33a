"""Op specs of layer normalization (gradflow/prim/layer_norm.py): ``layer_norm`` in both of
its orders (contrib's ``batch_normalization`` arithmetic and GPT-2's ``norm``) over rows of
rank 2 and 3, and ``layer_norm_grad`` for each input, against NumPy written out. The
plan-only pair ``layer_norm_fwd``/``layer_norm_bwd`` that the graph compiler makes is
checked in tests/test_layer_norm_pass.py (against the unfused graph's numbers).
"""

from __future__ import annotations

import numpy as np
from op_specs import EXEMPT, spec, uniform

from gradflow.prim.registry import apply

EXEMPT.update({
    "layer_norm_fwd": "plan-only: made by passes/layer_norm.py from the unfused ops "
                      "(tests/test_layer_norm_pass.py checks its numbers against them)",
    "layer_norm_bwd": "plan-only: made by passes/layer_norm.py from the unfused gradient "
                      "ops (tests/test_layer_norm_pass.py)",
})
EPS = 1e-3  # large enough that the finite differences see it


def np_layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + EPS) * gamma + beta).astype(x.dtype)


def np_layer_norm_grads(dy, x, gamma):
    mean = x.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + EPS)
    xhat = (x - mean) * rstd
    g = dy * gamma
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    rows = tuple(range(x.ndim - 1))
    return dx, (dy * xhat).sum(rows), dy.sum(rows)


def _op(form):
    return lambda x, g, b: apply("layer_norm", [x, g, b], eps=EPS, form=form)


def _grad(wrt):
    return lambda dy, x, g: apply("layer_norm_grad", [dy, x, g], eps=EPS, wrt=wrt)


_TOL = {"float32": (1e-5, 1e-5), "float16": (3e-2, 3e-2)}
for _form in ("affine", "centered"):
    spec(f"layer_norm_{_form}", "layer_norm", _op(_form),
         [uniform(3, 5), uniform(5), uniform(5)], np_layer_norm, tol=_TOL,
         second_order=False)
spec("layer_norm_rank3", "layer_norm", _op("affine"),
     [uniform(2, 3, 4), uniform(4), uniform(4)], np_layer_norm, tol=_TOL, second_order=False)
for _index, _wrt in enumerate(("x", "gamma", "beta")):
    spec(f"layer_norm_grad_{_wrt}", "layer_norm_grad", _grad(_wrt),
         [uniform(2, 3, 4), uniform(2, 3, 4), uniform(4)],
         lambda dy, x, g, i=_index: np_layer_norm_grads(dy, x, g)[i].astype(x.dtype),
         grad=(), tol=_TOL, second_order=False)
