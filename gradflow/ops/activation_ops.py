"""Elementwise activations of ``tf.nn`` beyond relu/sigmoid/tanh.

The common ones are primitives: one forward function (one pass over memory,
both branches of a ``where`` kept finite) and a gradient primitive of the
input, whose own gradient rule is built from graph ops so second order works.
``crelu`` is a composite: it only concatenates two relus.
"""

from __future__ import annotations

from gradflow.ops.math_ops import (
    abs,
    negative,
    reciprocal,
    relu,
    sigmoid,
    square,
    where,
    zeros_like,
)
from gradflow.prim import rules
from gradflow.prim.registry import apply, convert_to_tensor, register

# TF's SELU constants (Klambauer et al., 2017), as tf.nn.selu uses them.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _float_infer(shapes, in_dtypes, **attrs):
    rules.require_floating(in_dtypes[0], "features")
    return shapes[0], in_dtypes[0]


def _numeric_infer(shapes, in_dtypes, **attrs):
    if in_dtypes[0].is_bool:
        raise TypeError("the features must be numeric, got bool")
    return shapes[0], in_dtypes[0]


def _grad_infer(shapes, in_dtypes, **attrs):
    """``(g, x) -> g``'s shape: the gradient primitives take the incoming gradient first."""
    return rules.broadcast_shapes(shapes[0], shapes[1]), rules.same_dtype(in_dtypes)


def _sigmoid(xp, x):
    """sigmoid(x) from e = exp(-|x|) <= 1: never overflows, and keeps its relative
    precision for x << 0 (where swish is tiny), which 0.5 tanh(x / 2) + 0.5 loses."""
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1, e) / (1 + e)


# -- relu6 -----------------------------------------------------------------------------


def _relu6_impl(xp, x):
    return xp.clip(x, 0, 6)


def _relu6_grad_impl(xp, g, x):
    return xp.where((x > 0) & (x < 6), g, 0)


register("relu6", _relu6_impl, _numeric_infer,
         grad=lambda n, g: [apply("relu6_grad", [g, n.inputs[0]])])
register("relu6_grad", _relu6_grad_impl, _grad_infer,  # linear in g, flat in x
         grad=lambda n, h: [apply("relu6_grad", [h, n.inputs[1]]), None])

# -- elu and selu: scale * (x if x > 0 else alpha * (exp(x) - 1)) ----------------------


def _elu_impl(xp, x, alpha, scale):
    # expm1 of min(x, 0): the branch not taken stays finite for large positive x,
    # and the taken one keeps its precision near 0
    neg = alpha * xp.expm1(xp.minimum(x, 0))
    out = xp.where(x > 0, x, neg)
    return out if scale == 1.0 else scale * out


def _elu_grad_impl(xp, g, x, alpha, scale):
    # from the input rather than TF's (output + alpha): no cancellation for x << 0;
    # at 0 the linear side's slope, as TF's (selu: scale, not scale * alpha)
    slope = xp.where(x >= 0, scale, (scale * alpha) * xp.exp(xp.minimum(x, 0)))
    return g * slope


def _elu_grad_grad(n, h):
    g, x = n.inputs
    # d/dx [g * scale * alpha * exp(x)] is the same expression again for x <= 0
    return [apply("elu_grad", [h, x], **n.attrs), where(x >= 0.0, zeros_like(n), h * n)]


register("elu", _elu_impl, _float_infer,
         grad=lambda n, g: [apply("elu_grad", [g, n.inputs[0]], **n.attrs)])
register("elu_grad", _elu_grad_impl, _grad_infer, grad=_elu_grad_grad)

# -- swish / silu: x * sigmoid(beta x) -----------------------------------------------


def _swish_impl(xp, x, beta):
    return x * _sigmoid(xp, x if beta == 1.0 else beta * x)


def _swish_grad_impl(xp, g, x, beta):
    s = _sigmoid(xp, beta * x)
    return g * (s + beta * x * s * (1 - s))


def _swish_grad_grad(n, h):
    g, x = n.inputs
    beta = n.attrs["beta"]
    s = sigmoid(x * beta)
    # f'' = beta s (1 - s) (2 + beta x (1 - 2 s))
    second = s * (1.0 - s) * (2.0 + (x * beta) * (1.0 - 2.0 * s)) * beta
    return [apply("swish_grad", [h, x], beta=beta), h * g * second]


register("swish", _swish_impl, _float_infer,
         grad=lambda n, g: [apply("swish_grad", [g, n.inputs[0]], **n.attrs)])
register("swish_grad", _swish_grad_impl, _grad_infer, grad=_swish_grad_grad)

# -- leaky_relu: x if x > 0 else alpha x (TF's kernel, also right for alpha > 1) ---------


def _leaky_relu_impl(xp, x, alpha):
    return xp.where(x > 0, x, alpha * x)


def _leaky_relu_grad_impl(xp, g, x, alpha):
    return xp.where(x > 0, g, alpha * g)


register("leaky_relu", _leaky_relu_impl, _float_infer,
         grad=lambda n, g: [apply("leaky_relu_grad", [g, n.inputs[0]], **n.attrs)])
register("leaky_relu_grad", _leaky_relu_grad_impl, _grad_infer,
         grad=lambda n, h: [apply("leaky_relu_grad", [h, n.inputs[1]], **n.attrs), None])

# -- softplus and softsign -------------------------------------------------------------


def _softplus_impl(xp, x):
    # log(1 + e^x) = max(x, 0) + log1p(e^-|x|): no overflow, full precision in both tails
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


def _softsign_impl(xp, x):
    return x / (1 + xp.abs(x))


register("softplus", _softplus_impl, _float_infer,  # d softplus = sigmoid, also at x = 0
         grad=lambda n, g: [g * sigmoid(n.inputs[0])])
def _softsign_grad(n, g):  # d softsign = 1 / (1 + |x|)^2, squared after the division so
    r = reciprocal(abs(n.inputs[0]) + 1.0)  # that a huge |x| underflows to 0, not 1 / inf
    return [g * square(r)]


register("softsign", _softsign_impl, _float_infer, grad=_softsign_grad)

# -- public functions ---------------------------------------------------------------------


def _features(features, op_name):
    x = convert_to_tensor(features)
    if x.dtype is not None and x.dtype.is_bool:
        raise TypeError(f"{op_name}: features '{x.name}' must be numeric, got bool")
    return x


def _as_float(x):
    """Integer features as float32, as TF1's leaky_relu does."""
    from gradflow.ops.math_ops import cast

    return cast(x, "float32") if x.dtype is not None and x.dtype.is_integer else x


def relu6(features, name=None):
    """``min(max(features, 0), 6)`` (TF1 ``tf.nn.relu6``); integer features stay integers.

    The gradient is the incoming one where ``0 < x < 6``, zero elsewhere (as TF's).
    """
    x = _features(features, "relu6")
    return apply("relu6", [x], name=name or "Relu6")


def elu(features, name=None):
    """Exponential linear unit (TF1 ``tf.nn.elu``): ``x`` if ``x > 0`` else
    ``exp(x) - 1``, finite for every input."""
    return apply("elu", [convert_to_tensor(features)], name=name or "Elu", alpha=1.0, scale=1.0)


def selu(features, name=None):
    """Scaled ELU (TF1 ``tf.nn.selu``): ``scale * x`` if ``x > 0`` else
    ``scale * alpha * (exp(x) - 1)``, with TF's ``alpha = 1.6732632...`` and
    ``scale = 1.0507009...`` (``SELU_ALPHA``, ``SELU_SCALE``)."""
    return apply("elu", [convert_to_tensor(features)], name=name or "Selu",
                 alpha=SELU_ALPHA, scale=SELU_SCALE)


def softsign(features, name=None):
    """``features / (1 + |features|)`` (TF1 ``tf.nn.softsign``)."""
    return apply("softsign", [convert_to_tensor(features)], name=name or "Softsign")


def softplus(features, name=None):
    """``log(1 + exp(features))`` (TF1 ``tf.nn.softplus``), computed without overflow.

    Its gradient is ``sigmoid(features)`` everywhere, 0.5 at 0 included.
    """
    return apply("softplus", [convert_to_tensor(features)], name=name or "Softplus")


def swish(features, beta=1.0, name=None):
    """``features * sigmoid(beta * features)`` (TF1 ``tf.nn.swish``; ``beta`` as TF2's
    ``tf.nn.silu``). The sigmoid is computed from ``exp(-|x|)``: finite and accurate for every
    input."""
    from gradflow.ops.array_ops import static_value

    x = convert_to_tensor(features)
    value = static_value(beta)
    if value is None or value.ndim != 0:
        # a tensor beta: the composite form, differentiable in beta too
        b = convert_to_tensor(beta, like=x)
        return x * sigmoid(x * b)
    return apply("swish", [x], name=name or "swish", beta=float(value))


silu = swish


def leaky_relu(features, alpha=0.2, name=None):
    """``features`` where positive, else ``alpha * features`` (TF1 ``tf.nn.leaky_relu``).

    As TF's kernel (not ``max(x, alpha x)``), so ``alpha > 1`` works too; integer
    features are converted to float32 first, as TF1 does.
    """
    from gradflow.ops.array_ops import static_value

    x = _as_float(_features(features, "leaky_relu"))
    value = static_value(alpha)
    if value is None or value.ndim != 0:
        a = convert_to_tensor(alpha, like=x)
        return where(x > 0.0, x, x * a, name=name)
    return apply("leaky_relu", [x], name=name or "LeakyRelu", alpha=float(value))


def crelu(features, name=None, axis=-1):
    """Concatenated ReLU (TF1 ``tf.nn.crelu``): ``concat([relu(x), relu(-x)], axis)``,
    so ``axis`` doubles in size."""
    from gradflow.ops.index_ops import concat

    x = convert_to_tensor(features)
    return concat([relu(x), relu(negative(x))], axis, name=name or "CRelu")
