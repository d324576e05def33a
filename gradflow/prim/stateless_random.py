"""The draw of TF1's stateless random ops (``tf.random.stateless_normal``, ``_uniform``,
``_gamma``, ``_poisson``, ``_binomial``...): ``stateless_draw``, a host op of kind
``"call"`` whose value is a function of its seed tensor's value only.

Each run makes a fresh NumPy generator from the seed pair (read on the host, each
element taken modulo 2**64) and the name of the distribution, and draws from it; so the
same seed gives the same numbers in every run, every Session and on every backend, and
another seed other numbers. TensorFlow draws its stateless numbers with Philox and its
own transforms: the distributions are TF1's, the bits are not. TF1's functions over the
draw are in ``gradflow.ops.stateless_random_ops``.
"""

from __future__ import annotations

import zlib

import numpy as np

from gradflow.prim.construct import declared
from gradflow.prim.registry import register

_MASK = (1 << 64) - 1


def seeded_generator(seed, dist):
    """The generator of one stateless draw: a function of the seed values and ``dist``."""
    words = [int(s) & _MASK for s in np.asarray(seed).reshape(-1).tolist()]
    return np.random.default_rng(words + [zlib.crc32(dist.encode())])


def _truncated(rng, shape):
    out = rng.standard_normal(size=shape)
    bad = np.abs(out) > 2.0
    while bad.any():  # TF1's truncated normal: redrawn until within two deviations
        out[bad] = rng.standard_normal(size=int(bad.sum()))
        bad = np.abs(out) > 2.0
    return out


def _full_int(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)


def _draw(rng, attrs, shape, params):
    """The draw of one run as a NumPy array of ``shape``."""
    dist = attrs["dist"]
    dtype = attrs["dtype"].as_numpy_dtype
    if dist == "uniform":
        return rng.random(size=shape)
    if dist == "normal":
        return rng.standard_normal(size=shape)
    if dist == "truncated_normal":
        return _truncated(rng, shape)
    if dist == "uniform_int":
        return rng.integers(attrs["minval"], attrs["maxval"], size=shape, dtype=np.int64)
    if dist == "full_int":
        return _full_int(rng, shape, dtype)
    wide = [np.broadcast_to(p, shape) for p in params]
    if dist == "gamma":  # standard gamma, at least the dtype's smallest normal number
        return np.maximum(rng.standard_gamma(wide[0]), float(np.finfo(dtype).tiny))
    if dist == "poisson":
        return rng.poisson(wide[0])
    # binomial: counts, probs (probs clipped into [0, 1], counts floored at 0)
    return rng.binomial(np.maximum(wide[0], 0).astype(np.int64), np.clip(wide[1], 0.0, 1.0))


def _impl(run, node):
    backend, attrs = run.backend, node.attrs
    dtype = attrs["dtype"].as_numpy_dtype

    def call(seed, *params):
        rng = seeded_generator(backend.to_numpy(seed), attrs["dist"])
        host = [np.asarray(backend.to_numpy(p), np.float64) for p in params]
        if attrs["runtime_shape"]:
            shape, host = tuple(int(d) for d in host[0]), host[1:]
            if any(d < 0 for d in shape):
                raise ValueError(f"{node.name}: the shape {shape} has a negative size")
        else:
            shape = tuple(attrs["shape"])
        return backend.device_value(np.asarray(_draw(rng, attrs, shape, host), dtype))

    return call


# kind "call": inputs the int32/int64 seed [2], the shape (an int64 vector, when
# ``runtime_shape``: the shape known at run time only), the distribution's parameters (gamma's
# alpha; poisson's lam; binomial's counts and probs), broadcast to ``shape``; attrs
# ``dist``, ``shape``, ``dtype`` (and ``minval``/``maxval`` of integer draws). No gradient:
# TF1's functions shift and scale standard draws with graph ops, through which it flows.
register("stateless_draw", _impl, declared, grad=None, kind="call")
