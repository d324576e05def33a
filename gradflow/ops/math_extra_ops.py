"""TF1's composite math functions of ``tf.math`` over gradflow's primitives: statistics
(``reduce_variance``, ``reduce_std``, ``reduce_euclidean_norm``), ``log_sigmoid``,
``xlog1py``, ``lbeta``, ``polyval``, ``confusion_matrix``, order tests, the functions of
real tensors TF1 defines for complex ones too (``real``, ``imag``, ``conj``, ``angle``)
and aliases (``accumulate_n``, ``scalar_mul``, ``realdiv``). Their gradients are those of
the ops they are made of.
"""

from __future__ import annotations

import math

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.activation_ops import softplus
from gradflow.ops.array_ops import (
    matmul,
    reduce_all,
    reduce_max,
    reduce_mean,
    reduce_sum,
    reshape,
)
from gradflow.ops.control_flow_ops import control_dependencies
from gradflow.ops.debug_ops import assert_less, assert_non_negative
from gradflow.ops.index_ops import stack
from gradflow.ops.math_ops import (
    _binary_args,
    add,
    cast,
    divide,
    greater,
    greater_equal,
    less,
    log1p,
    maximum,
    multiply,
    negative,
    relu,
    sqrt,
    square,
    subtract,
    where,
    zeros_like,
)
from gradflow.ops.nn_ops import bias_add
from gradflow.ops.scatter_ops import scatter_nd
from gradflow.ops.special_ops import _zero_where_x_is_zero, lgamma
from gradflow.ops.state_ops import identity
from gradflow.prim.registry import apply, convert_to_tensor


def _floating(x, what):
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: the input '{x.name}' is {x.dtype.name}; it takes "
                        "floating-point tensors")
    return x


def _named(t, name):
    return t if name is None else identity(t, name=name)


def log_sigmoid(x, name=None):
    """``log(1 / (1 + exp(-x)))``, elementwise, computed as ``-softplus(-x)`` so that
    neither tail overflows (TF1 ``tf.math.log_sigmoid``).

    >>> gf.math.log_sigmoid(gf.constant([0.0, -100.0]))   # [-0.6931472, -100.]
    """
    x = _floating(x, "log_sigmoid")
    return negative(softplus(negative(x)), name=name or "LogSigmoid")


def xlog1py(x, y, name=None):
    """``x * log1p(y)``, and 0 where ``x`` is 0 (whatever ``y``), with broadcasting (TF1
    ``tf.math.xlog1py``); its gradients are TF's, 0 where ``x`` is 0."""
    return _zero_where_x_is_zero(x, y, lambda a, b: multiply(a, log1p(b)), "xlog1py", name)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance over ``axis`` (all axes for ``None``): the mean of the squared
    deviations from the mean, dividing by the count (TF1 ``tf.math.reduce_variance``);
    floating-point tensors only, as TF's.

    >>> gf.math.reduce_variance(gf.constant([[1.0, 2.0], [3.0, 4.0]]), axis=0)   # [1., 1.]
    """
    x = _floating(input_tensor, "reduce_variance")
    mean = reduce_mean(x, axis, keepdims=True)
    return reduce_mean(square(subtract(x, mean)), axis, keepdims=bool(keepdims),
                       name=name or "reduce_variance")


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation over ``axis``: ``sqrt(reduce_variance(...))`` (TF1
    ``tf.math.reduce_std``)."""
    x = _floating(input_tensor, "reduce_std")
    return sqrt(reduce_variance(x, axis, keepdims), name=name or "reduce_std")


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """``sqrt(sum(x ** 2))`` over ``axis`` (TF1 ``tf.math.reduce_euclidean_norm``); of
    an integer tensor, the norm rounded towards zero in its dtype, as TF's
    (``[1, 2, 3]`` gives 3).

    >>> gf.math.reduce_euclidean_norm(gf.constant([[3.0, 4.0]]), axis=1)   # [5.]
    """
    x = convert_to_tensor(input_tensor)
    if x.dtype.is_bool:
        raise TypeError(f"reduce_euclidean_norm: the input '{x.name}' is bool")
    wide = x if x.dtype.is_floating else cast(x, dtypes.float64)
    norm = sqrt(reduce_sum(square(wide), axis, keepdims=bool(keepdims)))
    if not x.dtype.is_floating:
        norm = cast(norm, x.dtype)
    return _named(norm, name)


def lbeta(x, name=None):
    """``log(|Beta(x)|)`` of the last axis: ``sum(lgamma(x)) - lgamma(sum(x))`` (TF1
    ``tf.math.lbeta``, the multivariate Beta function); ``-inf`` for an empty last axis,
    as TF's.

    >>> gf.math.lbeta(gf.constant([[1.0, 2.0], [3.0, 4.0]]))   # [-0.6931472, -4.0943446]
    """
    x = _floating(x, "lbeta")
    return subtract(reduce_sum(lgamma(x), -1), lgamma(reduce_sum(x, -1)), name=name or "lbeta")


def polyval(coeffs, x, name=None):
    """The polynomial ``coeffs[0] x^(n-1) + ... + coeffs[n-1]`` at ``x``, by Horner's
    rule (TF1 ``tf.math.polyval``); ``coeffs`` is a list of tensors (or numbers) that
    broadcast with ``x``; an empty list gives zeros like ``x``.

    >>> gf.math.polyval([1.0, 0.0, -2.0], gf.constant([3.0]))   # [7.]
    """
    if isinstance(coeffs, Tensor):
        raise ValueError("polyval: coeffs must be a list of tensors or numbers, not a tensor")
    x = convert_to_tensor(x)
    if not coeffs:
        return zeros_like(x, name=name)
    out = _binary_args(coeffs[0], x)[0]
    for c in coeffs[1:]:
        out = add(multiply(out, x), c)
    return _named(out, name)


def _ordered(x, compare, what, name):
    x = convert_to_tensor(x)
    if x.dtype.is_bool:
        raise TypeError(f"{what}: the input '{x.name}' must be numeric, got bool")
    flat = reshape(x, [-1])
    pairs = compare(flat[1:], flat[:-1])
    return reduce_all(pairs, name=name or what)


def is_non_decreasing(x, name=None):
    """Whether each element of ``x``, read in row-major order, is at least the one
    before it: a bool scalar, True for fewer than two elements (TF1
    ``tf.math.is_non_decreasing``)."""
    return _ordered(x, greater_equal, "is_non_decreasing", name)


def is_strictly_increasing(x, name=None):
    """Whether each element of ``x``, read in row-major order, is greater than the one
    before it (TF1 ``tf.math.is_strictly_increasing``)."""
    return _ordered(x, greater, "is_strictly_increasing", name)


def _int_labels(t, what, role):
    t = convert_to_tensor(t)
    if not t.dtype.is_integer:
        raise TypeError(f"confusion_matrix: {role} '{t.name}' must be integers, got "
                        f"{t.dtype.name}")
    if t.shape is not None and len(t.shape) != 1:
        raise ValueError(f"confusion_matrix: {role} '{t.name}' must be 1-D, got shape "
                         f"{t.shape}")
    return cast(t, dtypes.int64)


def confusion_matrix(labels, predictions, num_classes=None, dtype=dtypes.int32, name=None,
                     weights=None):
    """The ``[num_classes, num_classes]`` matrix whose entry ``[i, j]`` counts (or sums
    ``weights`` over) the examples of label ``i`` predicted ``j`` (TF1
    ``tf.confusion_matrix``, ``tf.math.confusion_matrix``). Without ``num_classes``,
    one more than the largest label or prediction. A negative label or prediction, or
    one not below ``num_classes``, is an ``InvalidArgumentError`` when run, as in TF1.

    >>> gf.confusion_matrix([1, 2, 4], [2, 2, 4])   # 5 x 5: ones at [1, 2], [2, 2], [4, 4]
    """
    labels = _int_labels(labels, "confusion_matrix", "labels")
    predictions = _int_labels(predictions, "confusion_matrix", "predictions")
    dtype = dtypes.as_dtype(dtype)
    checks = [assert_non_negative(labels, message="confusion_matrix: a label is negative"),
              assert_non_negative(predictions,
                                  message="confusion_matrix: a prediction is negative")]
    if num_classes is None:
        count = add(maximum(reduce_max(labels), reduce_max(predictions)), 1)
    else:
        count = cast(convert_to_tensor(num_classes), dtypes.int64)
        checks += [assert_less(labels, count, message="confusion_matrix: a label is not "
                               "below num_classes"),
                   assert_less(predictions, count, message="confusion_matrix: a prediction "
                               "is not below num_classes")]
    values = (apply("ones_like", [cast(labels, dtype)]) if weights is None
              else cast(convert_to_tensor(weights), dtype))
    with control_dependencies(checks):
        index = identity(stack([labels, predictions], axis=1))
    return scatter_nd(index, values, stack([count, count]), name=name or "confusion_matrix")


def accumulate_n(inputs, shape=None, tensor_dtype=None, name=None):
    """The sum of a list of tensors of one shape and dtype (TF1 ``tf.math.accumulate_n``,
    whose ``shape`` and ``tensor_dtype``, when given, must agree with them)."""
    inputs = [convert_to_tensor(t) for t in inputs]
    if not inputs:
        raise ValueError("accumulate_n: inputs must be a non-empty list of tensors")
    if tensor_dtype is not None and any(t.dtype != dtypes.as_dtype(tensor_dtype)
                                        for t in inputs):
        raise TypeError(f"accumulate_n: the inputs are not all {dtypes.as_dtype(tensor_dtype)}")
    if shape is not None:
        want = [None if d is None else int(d) for d in shape]
        for t in inputs:
            if t.shape is not None and not t.shape.is_compatible_with(want):
                raise ValueError(f"accumulate_n: '{t.name}' has shape {t.shape}, not {want}")
    total = inputs[0]
    for t in inputs[1:]:
        total = add(total, t)
    return identity(total, name=name or "AccumulateN")


def scalar_mul(scalar, x, name=None):
    """``scalar * x`` for a 0-D ``scalar`` (TF1 ``tf.scalar_mul``, ``tf.math.scalar_mul``);
    a ``scalar`` of another rank is a ``ValueError``, as in TF1."""
    scalar = convert_to_tensor(scalar, like=x if isinstance(x, Tensor) else None)
    if scalar.shape is not None and len(scalar.shape) != 0:
        raise ValueError(f"scalar_mul: the scalar '{scalar.name}' must be 0-D, got shape "
                         f"{scalar.shape}")
    return multiply(scalar, x, name=name or "scalar_mul")


def realdiv(x, y, name=None):
    """``x / y`` of floating-point tensors (TF1 ``tf.realdiv``; TF has no integer
    kernel for it)."""
    x, y = _binary_args(x, y)
    _floating(x, "realdiv")
    return divide(x, y, name=name or "RealDiv")


def _complex_part(x, op_name, name):
    """``op_name`` of ``x`` when it is complex, else None (and ``x`` as a tensor)."""
    x = convert_to_tensor(x)
    return x, (apply(op_name, [x], name=name) if x.dtype.is_complex else None)


def real(input, name=None):  # noqa: A002 - TF1 name
    """The real part of ``input`` (TF1 ``tf.math.real``): ``float32`` of ``complex64``,
    ``float64`` of ``complex128``; a real tensor itself."""
    x, part = _complex_part(input, "real", name)
    return part if part is not None else _named(x, name)


def imag(input, name=None):  # noqa: A002 - TF1 name
    """The imaginary part of ``input`` (TF1 ``tf.math.imag``): zeros for a real tensor."""
    x, part = _complex_part(input, "imag", name)
    return part if part is not None else zeros_like(x, name=name)


def conj(x, name=None):
    """The complex conjugate (TF1 ``tf.math.conj``): a real tensor itself."""
    x, part = _complex_part(x, "conj", name)
    return part if part is not None else _named(x, name)


def angle(input, name=None):  # noqa: A002 - TF1 name
    """The argument of ``input`` (TF1 ``tf.math.angle``), ``atan2(imag, real)`` in
    ``[-pi, pi]``; for a real tensor, ``pi`` where it is negative, else 0."""
    x, part = _complex_part(input, "angle", name)
    if part is not None:
        return part
    x = _floating(x, "angle")
    return where(less(x, 0.0), zeros_like(x) + math.pi, zeros_like(x), name=name)


def xw_plus_b(x, weights, biases, name=None):
    """``matmul(x, weights) + biases`` (TF1 ``tf.nn.xw_plus_b``): ``x`` is
    ``[batch, in]``, ``weights`` ``[in, out]``, ``biases`` ``[out]``.

    >>> gf.nn.xw_plus_b(x, w, b)   # a dense layer without its activation
    """
    return bias_add(matmul(x, weights), biases, name=name or "xw_plus_b")


def relu_layer(x, weights, biases, name=None):
    """``relu(matmul(x, weights) + biases)`` (TF1 ``tf.nn.relu_layer``)."""
    return relu(xw_plus_b(x, weights, biases), name=name or "relu_layer")
