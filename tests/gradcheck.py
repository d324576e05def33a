"""Central differences for the tests' float64 gradient checks."""

from __future__ import annotations

import numpy as np


def numeric_grad(sess, loss, x, value, feed=None, eps=1e-6):
    """Central differences of the scalar ``loss`` with respect to the fed ``x``."""
    value = np.asarray(value, np.float64)
    grad = np.zeros(value.shape)
    for idx in np.ndindex(value.shape):
        results = []
        for step in (eps, -eps):
            moved = value.copy()
            moved[idx] += step
            results.append(float(sess.run(loss, {**(feed or {}), x: moved})))
        grad[idx] = (results[0] - results[1]) / (2 * eps)
    return grad
