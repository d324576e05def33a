"""Op specs of GELU's tanh form (gradflow/prim/gelu.py): ``gelu_tanh`` and
``gelu_tanh_grad`` against NumPy written out from the formula (the ops
google-research/bert's and GPT-2's ``gelu`` build)."""

from __future__ import annotations

import math

import numpy as np
from op_specs import spec, uniform

from gradflow.prim.registry import apply

C, K = math.sqrt(2 / math.pi), 0.044715


def np_gelu(x):
    return (0.5 * x * (1 + np.tanh(C * (x + K * x ** 3)))).astype(x.dtype)


def np_gelu_grad(dy, x):
    t = np.tanh(C * (x + K * x ** 3))
    slope = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + 3 * K * x * x)
    return (dy * slope).astype(x.dtype)


_TOL = {"float32": (1e-5, 1e-6), "float16": (2e-2, 2e-2)}
for _form in ("gpt2", "bert"):
    spec(f"gelu_tanh_{_form}", "gelu_tanh",
         lambda x, f=_form: apply("gelu_tanh", [x], c=C, k=K, form=f),
         [uniform(3, 4, lo=-4.0, hi=4.0)], np_gelu, tol=_TOL, second_order=False)
    spec(f"gelu_tanh_grad_{_form}", "gelu_tanh_grad",
         lambda dy, x, f=_form: apply("gelu_tanh_grad", [dy, x], c=C, k=K, form=f),
         [uniform(3, 4), uniform(3, 4, lo=-4.0, hi=4.0)], np_gelu_grad, grad=(), tol=_TOL,
         second_order=False)
