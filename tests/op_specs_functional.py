"""Op specs of the function wrappers (gradflow/ops/functional_ops.py), loaded by
op_specs.py: ``custom_gradient``'s primitive, whose gradient is the user's."""

from __future__ import annotations

import numpy as np
from op_specs import spec, uniform

import gradflow as gf


@gf.custom_gradient
def _softplus(x):
    """Softplus with its gradient given by hand (the sigmoid), as TF1's docs show it."""
    e = gf.exp(x)

    def grad(dy):
        return dy * (1.0 - 1.0 / (1.0 + e))

    return gf.log(1.0 + e), grad


@gf.custom_gradient
def _scaled_pair(x, y):
    """Two results; the gradient given by hand is the true one."""
    def grad(da, db):
        return da * y + db, da * x

    return (x * y, x + 0.0), grad


spec("custom_gradient", "custom_gradient", _softplus, [uniform(3, 4)],
     lambda x: np.log1p(np.exp(x)))
spec("custom_gradient_two_results", "custom_gradient", lambda x, y: list(_scaled_pair(x, y)),
     [uniform(2, 3), uniform(2, 3)], lambda x, y: [x * y, x])
