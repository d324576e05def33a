"""Batch normalization: ``nn.moments``, ``nn.batch_normalization``, ``nn.fused_batch_norm``
and the layers built on them (``layers.batch_normalization``, ``contrib.layers.batch_norm``).

Everything here is a composite of existing primitives, so gradients of every
order come from the primitives' rules. The statistics are ``mean`` and the
biased ``mean((x - mean)**2)``; the shift is not hidden behind a stop-gradient
(TF1 stops it), which gives the same first-order gradient and keeps the
second-order one exact.

Moving averages follow TF1: ``moving -= (moving - batch_stat) * (1 - momentum)``,
assignments put in ``GraphKeys.UPDATE_OPS`` (or another collection) and run only
when the user runs them. With a bool tensor for ``training`` the statistics come
from a ``cond``; when it is false, the "batch statistic" fed to the update is the
moving one itself, so the update leaves it unchanged, as TF1's momentum of 1 does.
"""

from __future__ import annotations

import numbers

from gradflow import dtypes
from gradflow.ops.array_ops import reduce_mean, reshape, squeeze
from gradflow.ops.control_flow_ops import cond, control_dependencies
from gradflow.ops.math_ops import cast, maximum, multiply, rsqrt, squared_difference, subtract
from gradflow.ops.state_ops import assign_sub, identity
from gradflow.prim import rules
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.variables import (
    GraphKeys,
    add_to_collections,
    get_variable,
    ones_initializer,
    variable_scope,
    zeros_initializer,
)

# TF1's fused kernel (cuDNN) refuses a smaller epsilon; nn.fused_batch_norm raises it to this.
_FUSED_MIN_EPSILON = 1.001e-5


def _keep_dims_arg(keep_dims, keepdims):
    if keep_dims is not None and keepdims is not None and bool(keep_dims) != bool(keepdims):
        raise ValueError("moments: keep_dims and keepdims disagree; give one of them")
    return bool(keep_dims if keep_dims is not None else keepdims)


def _stats_dtype(x):
    """TF1 computes the statistics of float16 inputs in float32."""
    return dtypes.float32 if x.dtype is dtypes.float16 else x.dtype


def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """``(mean, variance)`` of ``x`` over ``axes`` (TF1 ``tf.nn.moments``).

    The variance is the biased one, ``mean((x - mean) ** 2)``. ``shift`` is
    accepted and unused, as in TF1. ``keep_dims`` (or ``keepdims``) keeps the
    reduced axes as size 1.

    >>> mean, variance = gf.nn.moments(x, axes=[0, 1, 2])   # per channel of NHWC
    """
    x = convert_to_tensor(x)
    if x.dtype is None or not x.dtype.is_floating:
        raise TypeError(f"moments: '{x.name}' must be floating point, got "
                        f"{x.dtype.name if x.dtype else None}")
    keep = _keep_dims_arg(keep_dims, keepdims)
    axes = [axes] if isinstance(axes, numbers.Integral) else list(axes)
    with x.graph.name_scope(name or "moments"):
        y = cast(x, dtypes.float32) if x.dtype is dtypes.float16 else x
        mean = reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduce_mean(squared_difference(y, mean), axes, keepdims=True,
                               name="variance")
        if not keep:  # squeezed at run time where the rank is unknown
            mean = squeeze(mean, axes)
            variance = squeeze(variance, axes)
        if x.dtype is dtypes.float16:
            mean, variance = cast(mean, x.dtype), cast(variance, x.dtype)
    return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset`` (TF1
    ``tf.nn.batch_normalization``); ``offset`` and ``scale`` may be ``None``.

    Computed as ``x * inv + (offset - mean * inv)`` with ``inv = scale *
    rsqrt(variance + epsilon)``: two passes over ``x``, the rest is per channel.
    """
    x = convert_to_tensor(x)
    mean = convert_to_tensor(mean, like=x)
    variance = convert_to_tensor(variance, like=x)
    with x.graph.name_scope(name or "batchnorm"):
        inv = rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv = multiply(inv, convert_to_tensor(scale, like=x))
        shift = -(mean * inv) if offset is None else \
            subtract(convert_to_tensor(offset, like=x), mean * inv)
        if inv.dtype is not x.dtype:
            inv, shift = cast(inv, x.dtype), cast(shift, x.dtype)
        return x * inv + shift


def _sample_count(x, axes, dtype):
    """The number of elements reduced over ``axes``, a float of ``dtype``."""
    sizes = [x.shape[a] for a in axes] if x.shape is not None else [None]
    if None not in sizes:
        count = 1
        for s in sizes:
            count *= int(s)
        return float(count)
    return cast(apply("reduced_count", [x], axes=tuple(axes)), dtype)


def _bessel(variance, x, axes):
    """``variance * n / (n - 1)``: the unbiased variance TF1's fused kernel reports."""
    n = _sample_count(x, axes, variance.dtype)
    if isinstance(n, float):
        return variance * (n / max(n - 1.0, 1.0))
    return variance * (n / maximum(n - 1.0, 1.0))


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None):
    """Batch normalization of a 4-D ``x`` over all axes but the channels (TF1
    ``tf.nn.fused_batch_norm``); returns ``(y, batch_mean, batch_variance)``.

    Training (``is_training=True``) normalizes with the batch statistics and
    returns the mean and the *unbiased* variance (``n / (n - 1)`` times the biased
    one, as TF1's kernel does, for the moving averages). Otherwise ``mean`` and
    ``variance`` are required, used and returned. ``epsilon`` is raised to at
    least 1.001e-5, as TF1 does.
    """
    x = convert_to_tensor(x)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"fused_batch_norm: data_format must be 'NHWC' or 'NCHW', got "
                         f"{data_format!r}")
    if x.shape is None or len(x.shape) != 4:
        raise ValueError(f"fused_batch_norm: '{x.name}' must be 4-D, got shape {x.shape}")
    if not isinstance(is_training, bool):
        raise TypeError("fused_batch_norm: is_training must be a Python bool")
    epsilon = max(float(epsilon), _FUSED_MIN_EPSILON)
    axes = (0, 1, 2) if data_format == "NHWC" else (0, 2, 3)
    with x.graph.name_scope(name or "FusedBatchNorm"):
        if is_training:
            mean, variance = moments(x, axes)
            reported = _bessel(variance, x, axes)
        else:
            if mean is None or variance is None:
                raise ValueError("fused_batch_norm: mean and variance are required when "
                                 "is_training is False")
            mean = convert_to_tensor(mean, like=x)
            variance = convert_to_tensor(variance, like=x)
            reported = variance
        args = [mean, variance, offset, scale]
        if data_format == "NCHW":
            args = [None if a is None else reshape(convert_to_tensor(a, like=x), (1, -1, 1, 1))
                    for a in args]
        y = batch_normalization(x, args[0], args[1], args[2], args[3], epsilon)
    return y, mean, reported


# -- the layers --------------------------------------------------------------------


def _static_bool(value):
    """A Python bool for ``training`` known while the graph is built, else ``None``."""
    if isinstance(value, (bool, numbers.Integral)):
        return bool(value)
    t = convert_to_tensor(value)
    if t.opdef.kind == "constant":
        return bool(t.attrs["value"].array)
    if not t.dtype.is_bool:
        raise TypeError(f"training '{t.name}' must be a Python bool or a bool tensor, got "
                        f"{t.dtype.name}")
    if t.shape is not None and len(t.shape) != 0:
        raise ValueError(f"training '{t.name}' must be a scalar, got shape {tuple(t.shape)}")
    return None


def _norm_axes(axis, rank, what):
    axes = [axis] if isinstance(axis, numbers.Integral) else list(axis)
    try:
        return rules.normalize_axis(axes, rank, allow_none=False)
    except ValueError as err:
        raise ValueError(f"{what}: axis {axis!r}: {err}") from None


def _bn_core(x, axes, momentum, epsilon, variables, training, fused, updates_collections,
             force_updates, what):
    """Normalize ``x`` over every axis not in ``axes`` with ``variables`` (gamma, beta,
    moving_mean, moving_variance; gamma/beta may be None); returns ``(out, updates)``."""
    gamma, beta, moving_mean, moving_variance = variables
    rank = len(x.shape)
    reduction = tuple(i for i in range(rank) if i not in axes)
    if fused:
        epsilon = max(float(epsilon), _FUSED_MIN_EPSILON)
    flag = _static_bool(training)
    xs = cast(x, dtypes.float32) if x.dtype is dtypes.float16 else x

    def batch_stats():
        mean, variance = moments(xs, reduction)
        # TF1's fused kernel hands the unbiased variance to the moving average
        return mean, variance, _bessel(variance, xs, reduction) if fused else variance

    if flag is False:
        mean, variance, target = moving_mean, moving_variance, None
    elif flag is True:
        mean, variance, target = batch_stats()
    else:
        mean, variance, target = cond(
            convert_to_tensor(training), batch_stats,
            lambda: (identity(moving_mean), identity(moving_variance),
                     identity(moving_variance)))
    params = [mean, variance, beta, gamma]
    if axes != tuple(range(rank - len(axes), rank)):  # channels not last: (1, C, 1, 1)
        shape = tuple(-1 if i in axes else 1 for i in range(rank)) if len(axes) == 1 else \
            tuple(int(x.shape[i]) if i in axes else 1 for i in range(rank))
        params = [None if p is None else reshape(p, shape) for p in params]
    out = batch_normalization(xs, params[0], params[1], params[2], params[3], epsilon)
    if out.dtype is not x.dtype:
        out = cast(out, x.dtype)
    updates = []
    if flag is not False:
        decay = 1.0 - float(momentum)
        updates = [assign_sub(moving_mean, (moving_mean - mean) * decay,
                              name="AssignMovingAvg"),
                   assign_sub(moving_variance, (moving_variance - target) * decay,
                              name="AssignMovingAvg_1")]
        if force_updates:
            with control_dependencies(updates):
                out = identity(out)
        elif updates_collections:
            keys = [updates_collections] if isinstance(updates_collections, str) \
                else list(updates_collections)
            graph = x.graph
            for update in updates:
                for key in dict.fromkeys(keys):
                    graph.add_to_collection(key, update)
    return out, updates


def _checked_input(inputs, what):
    x = convert_to_tensor(inputs)
    if x.dtype is None or not x.dtype.is_floating:
        raise TypeError(f"{what}: '{x.name}' must be floating point, got "
                        f"{x.dtype.name if x.dtype else None}")
    rules.known_rank(x, what)
    return x


def _param_shape(x, axes, what):
    shape = tuple(x.shape[a] for a in axes)
    if None in shape:
        raise ValueError(f"{what}: axis {list(axes)} of '{x.name}' must have a known size, "
                         f"got shape {tuple(x.shape)}")
    return tuple(int(d) for d in shape)


def _unsupported(what, **given):
    for key, value in given.items():
        if value:
            raise NotImplementedError(f"{what}: {key} is not supported")


def batch_normalization_layer(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True,
                              scale=True, beta_initializer=None, gamma_initializer=None,
                              moving_mean_initializer=None, moving_variance_initializer=None,
                              beta_regularizer=None, gamma_regularizer=None,
                              beta_constraint=None, gamma_constraint=None, training=False,
                              trainable=True, name=None, reuse=None, renorm=False,
                              renorm_clipping=None, renorm_momentum=0.99, fused=None,
                              virtual_batch_size=None, adjustment=None):
    """Batch normalization layer (TF1 ``tf.layers.batch_normalization``).

    Variables ``<name>/gamma`` and ``/beta`` (trainable, unless ``trainable=False``),
    ``/moving_mean`` and ``/moving_variance`` (not trainable, global variables only:
    like TF1, not in ``GraphKeys.MOVING_AVERAGE_VARIABLES``, which is for the
    variables an ``ExponentialMovingAverage`` shadows, so ``variables_to_restore``
    keeps working); default name ``batch_normalization``,
    then ``batch_normalization_1``... ``training`` is a Python bool or a scalar bool
    tensor: batch statistics when true, the moving ones when false. Unless
    ``training`` is ``False``, the moving-average assignments are added to
    ``GraphKeys.UPDATE_OPS`` and run only when the user runs them:

    >>> h = gf.layers.batch_normalization(h, training=is_training)
    >>> with gf.control_dependencies(gf.get_collection(gf.GraphKeys.UPDATE_OPS)):
    ...     train_op = optimizer.minimize(loss)

    As TF1, a 4-D input normalized over its last (or second) axis takes the fused
    path unless ``fused=False`` (or, with ``fused=None``, it is float64, which TF's
    fused kernel lacks): its moving variance averages the unbiased batch variance
    ``n / (n - 1) * var``; other inputs average the biased one.
    """
    what = "batch_normalization"
    _unsupported(what, renorm=renorm, virtual_batch_size=virtual_batch_size,
                 adjustment=adjustment, beta_constraint=beta_constraint,
                 gamma_constraint=gamma_constraint)
    x = _checked_input(inputs, what)
    axes = _norm_axes(axis, len(x.shape), what)
    shape = _param_shape(x, axes, what)
    pdtype = _stats_dtype(x)
    # TF's fused kernel has no float64: unless asked for, float64 takes the other path
    use_fused = (fused or (fused is None and x.dtype is not dtypes.float64)) \
        and len(x.shape) == 4 and axes in ((3,), (1,))
    moving = [GraphKeys.GLOBAL_VARIABLES]
    with variable_scope(name, default_name="batch_normalization", reuse=reuse):
        gamma = get_variable("gamma", shape, pdtype,
                             initializer=gamma_initializer or ones_initializer(),
                             regularizer=gamma_regularizer, trainable=trainable) \
            if scale else None
        beta = get_variable("beta", shape, pdtype,
                            initializer=beta_initializer or zeros_initializer(),
                            regularizer=beta_regularizer, trainable=trainable) \
            if center else None
        moving_mean = get_variable("moving_mean", shape, pdtype,
                                   initializer=moving_mean_initializer or zeros_initializer(),
                                   trainable=False, collections=moving)
        moving_variance = get_variable(
            "moving_variance", shape, pdtype,
            initializer=moving_variance_initializer or ones_initializer(), trainable=False,
            collections=moving)
        out, _ = _bn_core(x, axes, momentum, epsilon,
                          (gamma, beta, moving_mean, moving_variance), training, use_fused,
                          GraphKeys.UPDATE_OPS, False, what)
    return out


def contrib_batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001,
                       activation_fn=None, param_initializers=None, param_regularizers=None,
                       updates_collections="update_ops", is_training=True, reuse=None,
                       variables_collections=None, outputs_collections=None, trainable=True,
                       batch_weights=None, fused=None, data_format="NHWC",
                       zero_debias_moving_mean=False, scope=None, renorm=False,
                       renorm_clipping=None, renorm_decay=0.99, adjustment=None):
    """Batch normalization (TF1 ``tf.contrib.layers.batch_norm``).

    Variables ``<scope>/beta`` (``center``), ``/gamma`` (``scale``, off by
    default), ``/moving_mean`` and ``/moving_variance``, default scope
    ``BatchNorm``, all in ``GraphKeys.MODEL_VARIABLES``. The moving averages use
    ``decay``; their assignments go to ``updates_collections`` (default
    ``GraphKeys.UPDATE_OPS``), or, with ``updates_collections=None``, run with the
    output. As TF1's default fused path for 2-D and 4-D inputs, the moving variance
    averages the unbiased batch variance.
    """
    what = "batch_norm"
    _unsupported(what, renorm=renorm, batch_weights=batch_weights is not None,
                 adjustment=adjustment, zero_debias_moving_mean=zero_debias_moving_mean)
    if data_format not in ("NHWC", "NCHW"):
        raise ValueError(f"{what}: data_format has to be either NCHW or NHWC, got "
                         f"{data_format!r}")
    x = _checked_input(inputs, what)
    rank = len(x.shape)
    axis = 1 if data_format == "NCHW" and rank > 2 else rank - 1
    axes = (axis,)
    shape = _param_shape(x, axes, what)
    pdtype = _stats_dtype(x)
    use_fused = fused is not False and rank in (2, 4)
    inits = dict(param_initializers or {})
    regs = dict(param_regularizers or {})

    def collections(key):
        extra = variables_collections.get(key) if isinstance(variables_collections, dict) \
            else variables_collections
        extra = [extra] if isinstance(extra, str) else list(extra or ())
        return [GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES] + extra

    def param(key, default, trainable_param):
        return get_variable(key, shape, pdtype, initializer=inits.get(key, default),
                            regularizer=regs.get(key), collections=collections(key),
                            trainable=trainable_param)

    with variable_scope(scope, default_name="BatchNorm", reuse=reuse):
        beta = param("beta", zeros_initializer(), trainable) if center else None
        gamma = param("gamma", ones_initializer(), trainable) if scale else None
        moving_mean = param("moving_mean", zeros_initializer(), False)
        moving_variance = param("moving_variance", ones_initializer(), False)
        out, _ = _bn_core(x, axes, decay, epsilon, (gamma, beta, moving_mean, moving_variance),
                          is_training, use_fused, updates_collections,
                          updates_collections is None, what)
        if activation_fn is not None:
            out = activation_fn(out)
    if outputs_collections:
        add_to_collections(outputs_collections, out)
    return out
