"""Op specs of the inverses of erf (gradflow/prim/special.py: ``erfinv``, ``erfcinv``,
``ndtri``): references by bisection on Python's ``math.erf`` / ``math.erfc``; inputs keep
away from the ends of the domains, where the derivative grows without bound. TensorFlow
2.21's values are in tests/test_special_inverse_tf1.py.
"""

from __future__ import annotations

import math

import numpy as np
from op_specs import spec, uniform

import gradflow as gf


def _bisect(fn, target, increasing, lo=-40.0, hi=40.0):
    """The ``x`` in ``[lo, hi]`` with ``fn(x) = target`` for a monotonic ``fn``."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (fn(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _np_inverse(fn, increasing, domain):
    """The inverse of ``fn`` over the open interval ``domain``; at its ends the infinite
    ``x`` (the sign as ``fn`` goes), outside it (and at NaN) NaN, as the ops give."""
    lo, hi = domain

    def one(v):
        if not lo <= v <= hi:  # NaN too
            return math.nan
        if v in (lo, hi):
            return math.inf if (v == hi) == increasing else -math.inf
        return _bisect(fn, v, increasing)

    def ref(x):
        out = [one(float(v)) for v in np.asarray(x, np.float64).ravel()]
        return np.array(out, np.float64).reshape(np.shape(x)).astype(x.dtype)

    return ref


spec("erfinv", "erfinv", gf.math.erfinv, [uniform(3, 4, lo=-0.95, hi=0.95)],
     _np_inverse(math.erf, True, (-1.0, 1.0)))
spec("erfcinv", "erfcinv", gf.math.erfcinv, [uniform(3, 4, lo=0.05, hi=1.95)],
     _np_inverse(math.erfc, False, (0.0, 2.0)))
spec("ndtri", "ndtri", gf.math.ndtri, [uniform(3, 4, lo=0.03, hi=0.97)],
     _np_inverse(lambda x: 0.5 * math.erfc(-x / math.sqrt(2.0)), True, (0.0, 1.0)))
