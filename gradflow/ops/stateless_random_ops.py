"""TF1's stateless random ops (``tf.random.stateless_normal``, ``stateless_uniform``,
``stateless_truncated_normal``, ``stateless_categorical``/``stateless_multinomial``,
``stateless_gamma``, ``stateless_poisson``, ``stateless_binomial``,
``stateless_parameterized_truncated_normal``) and the seed utilities ``random.split``
and ``random.fold_in``.

The numbers are a function of ``seed`` (an int32/int64 tensor of shape ``[2]``) only:
the same seed gives the same numbers in every run and on every backend. They are not
TensorFlow's bits (TF draws with Philox): the distributions, shapes, dtypes and
gradients are TF1's. The standard draws are host ops (``gradflow.prim.stateless_random``);
means, deviations and bounds shift and scale them with graph ops, so gradients reach
them as in TF1; a gamma draw is differentiable in ``alpha`` (implicit reparameterization)
and ``beta``; a parameterized truncated normal is the inverse CDF of a uniform draw, with
TF1's gradients.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, get_default_graph
from gradflow.ops.array_ops import argmax, expand_dims
from gradflow.ops.index_ops import concat, stack
from gradflow.ops.index_ops import shape as shape_of
from gradflow.ops.math_ops import (
    add,
    cast,
    divide,
    greater,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    subtract,
    where,
)
from gradflow.ops.special_ops import erfc, ndtri
from gradflow.ops.state_ops import _random_shape, stop_gradient
from gradflow.prim import random_draws, rules  # noqa: F401 - registers gamma_reparam
from gradflow.prim import stateless_random as _draws  # noqa: F401 - registers the draw
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["fold_in", "split", "stateless_binomial", "stateless_categorical",
           "stateless_gamma", "stateless_multinomial", "stateless_normal",
           "stateless_parameterized_truncated_normal", "stateless_poisson",
           "stateless_truncated_normal", "stateless_uniform"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
_NUMBERS = _FLOATS + (dtypes.int32, dtypes.int64)


def _seed(seed, what):
    seed = convert_to_tensor(seed)
    if seed.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{what}: seed '{seed.name}' must be int32 or int64, got "
                        f"{seed.dtype.name}")
    if seed.shape is not None and tuple(seed.shape) not in ((2,), (None,)):
        raise ValueError(f"{what}: seed '{seed.name}' must have shape [2], got "
                         f"{tuple(seed.shape)}")
    return seed


def _draw(what, dist, shape, seed, dtype, params=(), name=None, checked=False, **attrs):
    """A ``stateless_draw`` of ``shape`` (ints, or a 1-D int tensor known at run time)."""
    seed = seed if checked else _seed(seed, what)
    static = _random_shape(shape, what)
    inputs = [seed]
    if static is None:  # known at run time only: the shape is an input
        if isinstance(shape, (list, tuple)):  # ints and scalar tensors: [gf.shape(x)[0], 3]
            shape = stack([cast(convert_to_tensor(d), dtypes.int64) for d in shape])
        dims = cast(convert_to_tensor(shape), dtypes.int64)
        if dims.shape is not None and len(dims.shape) != 1:
            raise ValueError(f"{what}: shape '{dims.name}' must be 1-D, got "
                             f"{tuple(dims.shape)}")
        inputs.append(dims)
        static = None if dims.shape is None or dims.shape[0] is None \
            else (None,) * dims.shape[0]
    for p in params:
        if static is not None and p.shape is not None and None not in static:
            try:
                rules.broadcast_shapes(p.shape, static)
            except ValueError:
                raise ValueError(f"{what}: '{p.name}' of shape {tuple(p.shape)} does not "
                                 f"broadcast to the shape {static}") from None
    graph = next((t.graph for t in inputs + list(params) if t.opdef.kind != "constant"),
                 get_default_graph())
    return apply("stateless_draw", inputs + [stop_gradient(p) for p in params],
                 name=name or what, graph=graph, shape=static, dtype=dtype, dist=dist,
                 runtime_shape=len(inputs) == 2, **attrs)


def _float_dtype(dtype, what):
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _FLOATS:
        raise TypeError(f"{what}: dtype must be float16, float32 or float64, got "
                        f"{dtype.name}")
    return dtype


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32, name=None,
                     alg="auto_select"):
    """Normal numbers determined by ``seed`` (int32/int64 ``[2]``): the same seed, the same
    numbers, every run and on every backend (TF1 ``tf.random.stateless_normal``;
    ``alg`` is accepted and has no effect). ``mean``/``stddev`` may be tensors."""
    dtype = _float_dtype(dtype, "stateless_normal")
    z = _draw("stateless_normal", "normal", shape, seed, dtype)
    return add(multiply(z, convert_to_tensor(stddev, dtype=dtype)),
               convert_to_tensor(mean, dtype=dtype), name=name or "stateless_random_normal")


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=dtypes.float32,
                               name=None, alg="auto_select"):
    """Normal numbers within two standard deviations of ``mean``, determined by ``seed``
    (TF1 ``tf.random.stateless_truncated_normal``)."""
    dtype = _float_dtype(dtype, "stateless_truncated_normal")
    z = _draw("stateless_truncated_normal", "truncated_normal", shape, seed, dtype)
    return add(multiply(z, convert_to_tensor(stddev, dtype=dtype)),
               convert_to_tensor(mean, dtype=dtype),
               name=name or "stateless_truncated_normal")


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=dtypes.float32, name=None,
                      alg="auto_select"):
    """Uniform numbers in ``[minval, maxval)`` determined by ``seed`` (TF1
    ``tf.random.stateless_uniform``). Floats: ``maxval`` defaults to 1, bounds may be
    tensors. Integers: ``maxval`` is required and both bounds are Python integers; with
    ``minval=None`` and ``maxval=None``, integers over the dtype's whole range."""
    what = "stateless_uniform"
    dtype = dtypes.as_dtype(dtype)
    name = name or "stateless_random_uniform"
    if dtype in _FLOATS:
        u = _draw(what, "uniform", shape, seed, dtype)
        low = convert_to_tensor(0 if minval is None else minval, dtype=dtype)
        high = convert_to_tensor(1 if maxval is None else maxval, dtype=dtype)
        return add(multiply(u, subtract(high, low)), low, name=name)
    if dtype not in (dtypes.int32, dtypes.int64, dtypes.uint32, dtypes.uint64):
        raise TypeError(f"{what}: dtype must be a float or int32/int64/uint32/uint64, got "
                        f"{dtype.name}")
    if minval is None and maxval is None:
        return _draw(what, "full_int", shape, seed, dtype, name=name)
    if minval is None or maxval is None:
        raise ValueError(f"{what}: an integer dtype ({dtype.name}) needs maxval (or both "
                         f"bounds None for the full range)")
    if not all(isinstance(v, (int, np.integer)) for v in (minval, maxval)):
        raise TypeError(f"{what}: with dtype {dtype.name}, minval and maxval must be Python "
                        f"integers, got {minval!r} and {maxval!r}")
    if not dtype.min <= int(minval) < int(maxval) <= dtype.max + 1:
        raise ValueError(f"{what}: need minval < maxval within {dtype.name}, got "
                         f"[{minval}, {maxval})")
    return _draw(what, "uniform_int", shape, seed, dtype, name=name, minval=int(minval),
                 maxval=int(maxval))


def stateless_multinomial(logits, num_samples, seed, output_dtype=dtypes.int64, name=None):
    """``num_samples`` class indices per row of ``logits`` ``[batch, classes]`` drawn from
    ``softmax(logits)``, determined by ``seed`` (TF1 ``tf.random.stateless_multinomial``):
    ``[batch, num_samples]`` of ``output_dtype``, by the Gumbel-max rule."""
    what = "stateless_multinomial"
    x = stop_gradient(convert_to_tensor(logits))
    if x.shape is not None and len(x.shape) != 2:
        raise ValueError(f"{what}: logits '{x.name}' must be [batch, classes], got shape "
                         f"{tuple(x.shape)}")
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: logits '{x.name}' must be floating, got {x.dtype.name}")
    output_dtype = dtypes.as_dtype(output_dtype)
    if output_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"{what}: output_dtype must be int32 or int64, got "
                        f"{output_dtype.name}")
    dims = shape_of(x)
    known = x.shape is not None and None not in x.shape
    shape = [x.shape[0], int(num_samples), x.shape[1]] if known \
        else [dims[0], int(num_samples), dims[1]]
    u = _draw(what, "uniform", shape, seed, x.dtype)
    tiny = float(np.finfo(x.dtype.as_numpy_dtype).tiny)
    gumbel = negative(log(negative(log(maximum(u, tiny)))))
    draws = argmax(add(expand_dims(x, 1), gumbel), axis=-1)
    return cast(draws, output_dtype, name=name or "stateless_random_multinomial")


def stateless_categorical(logits, num_samples, seed, dtype=dtypes.int64, name=None):
    """As ``stateless_multinomial`` (TF1 ``tf.random.stateless_categorical``)."""
    return stateless_multinomial(logits, num_samples, seed, output_dtype=dtype,
                                 name=name or "stateless_random_categorical")


def stateless_gamma(shape, seed, alpha, beta=None, dtype=dtypes.float32, name=None):
    """Gamma numbers of concentration ``alpha`` and rate ``beta`` (default 1), of shape
    ``shape`` (to which ``alpha`` and ``beta`` broadcast), determined by ``seed`` (TF1
    ``tf.random.stateless_gamma``); differentiable in ``alpha`` and ``beta``."""
    what = "stateless_gamma"
    dtype = _float_dtype(dtype, what)
    alpha = convert_to_tensor(alpha, dtype=dtype)
    if beta is not None:
        beta = convert_to_tensor(beta, dtype=dtype)
        alpha = add(alpha, multiply(beta, 0.0))  # alpha broadcast to beta's shape too
    draw = _draw(what, "gamma", shape, seed, dtype, [alpha], name="StatelessRandomGamma")
    x = apply("gamma_reparam", [draw, alpha], name="StatelessGammaReparam")
    if beta is None:
        return apply("identity", [x], name=name or "stateless_random_gamma")
    tiny = float(np.finfo(dtype.as_numpy_dtype).tiny)
    return maximum(divide(x, beta), tiny, name=name or "stateless_random_gamma")


def stateless_poisson(shape, seed, lam, dtype=dtypes.int32, name=None):
    """Poisson numbers of rate ``lam`` (broadcast to ``shape``) determined by ``seed``
    (TF1 ``tf.random.stateless_poisson``); no gradient."""
    what = "stateless_poisson"
    dtype = dtypes.as_dtype(dtype)
    if dtype not in _NUMBERS:
        raise TypeError(f"{what}: dtype must be float16, float32, float64, int32 or int64, "
                        f"got {dtype.name}")
    lam = convert_to_tensor(lam) if isinstance(lam, Tensor) \
        else convert_to_tensor(lam, dtype=dtypes.float32)
    return _draw(what, "poisson", shape, seed, dtype, [lam], name=name)


def stateless_binomial(shape, seed, counts, probs, output_dtype=dtypes.int32, name=None):
    """Binomial numbers: successes in ``counts`` trials of probability ``probs`` (both
    broadcast to ``shape``), determined by ``seed`` (TF1 ``tf.random.stateless_binomial``)."""
    what = "stateless_binomial"
    output_dtype = dtypes.as_dtype(output_dtype)
    if output_dtype not in _NUMBERS:
        raise TypeError(f"{what}: output_dtype must be float16, float32, float64, int32 or "
                        f"int64, got {output_dtype.name}")
    counts = convert_to_tensor(counts) if isinstance(counts, Tensor) \
        else convert_to_tensor(counts, dtype=dtypes.float32)
    probs = convert_to_tensor(probs) if isinstance(probs, Tensor) \
        else convert_to_tensor(probs, dtype=dtypes.float32)
    return _draw(what, "binomial", shape, seed, output_dtype, [counts, probs], name=name)


def _ndtr(x):
    return multiply(erfc(multiply(x, -0.7071067811865476)), 0.5)


def _truncated_quantile(u, a, b):
    """The standard normal number of quantile ``u`` within ``[a, b]``, drawn from the side
    of the lower tail (an interval above 0 is mirrored) so the CDF keeps its digits."""
    upper = greater(a, 0.0)
    lo, hi = where(upper, negative(b), a), where(upper, negative(a), b)
    p_lo = _ndtr(lo)
    z = minimum(maximum(ndtri(add(p_lo, multiply(u, subtract(_ndtr(hi), p_lo)))), lo), hi)
    return where(upper, negative(z), z)


def stateless_parameterized_truncated_normal(shape, seed, means=0.0, stddevs=1.0,
                                             minvals=-2.0, maxvals=2.0, name=None):
    """Normal numbers of mean ``means`` and deviation ``stddevs`` truncated to
    ``[minvals, maxvals]`` (all broadcast to ``shape``), determined by ``seed`` (TF1
    ``tf.random.stateless_parameterized_truncated_normal``), drawn by the inverse CDF in
    float64. Gradients are TF1's: ``minvals``/``maxvals`` get the implicit ones (the
    draw's quantile held fixed), ``means`` gets 1 and ``stddevs`` ``(x - means) /
    stddevs`` (TF's convention: the standardized bounds held fixed for those two)."""
    what = "stateless_parameterized_truncated_normal"
    means = convert_to_tensor(means) if isinstance(means, Tensor) \
        else convert_to_tensor(means, dtype=dtypes.float32)
    dtype = means.dtype
    if dtype not in _FLOATS:
        raise TypeError(f"{what}: means '{means.name}' must be floating, got {dtype.name}")
    mean, std, low, high = (cast(convert_to_tensor(v, dtype=dtype), dtypes.float64)
                            for v in (means, stddevs, minvals, maxvals))
    u = _draw(what, "uniform", shape, seed, dtypes.float64)
    m0, s0 = stop_gradient(mean), stop_gradient(std)
    z = _truncated_quantile(u, divide(subtract(low, m0), s0), divide(subtract(high, m0), s0))
    z0 = stop_gradient(z)  # the value of z; its gradient reaches only the bounds
    x = add(add(mean, multiply(std, z0)), multiply(s0, subtract(z, z0)))
    return cast(x, dtype, name=name or "stateless_parameterized_truncated_normal")


def split(seed, num=2, alg="auto_select"):
    """``num`` new seeds from ``seed`` (TF1 ``tf.random.split``): ``[num, 2]`` of the
    seed's dtype, a function of ``seed`` only (not TensorFlow's bits)."""
    seed = _seed(seed, "split")
    return _draw("split", "full_int", [int(num), 2], seed, seed.dtype, name="split")


def fold_in(seed, data, alg="auto_select"):
    """A new seed from ``seed`` and the integer ``data`` (TF1 ``tf.random.fold_in``):
    ``[2]`` of the seed's dtype, a function of both only (not TensorFlow's bits)."""
    seed = _seed(seed, "fold_in")
    data = cast(convert_to_tensor(data), seed.dtype)
    if data.shape is not None and len(data.shape) != 0:
        raise ValueError(f"fold_in: data '{data.name}' must be a scalar, got "
                         f"{tuple(data.shape)}")
    mixed = concat([seed, expand_dims(data, 0)], 0)
    return _draw("fold_in", "full_int", [2], mixed, seed.dtype, name="fold_in", checked=True)
