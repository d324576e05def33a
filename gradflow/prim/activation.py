"""The activation primitives of ``tf.nn`` beyond relu/sigmoid/tanh: ``relu6``, ``elu``
(and selu), ``swish``, ``leaky_relu``, ``softplus`` and ``softsign``.

Each is one forward function (one pass over memory, both branches of a ``where`` kept
finite) and, for most, a gradient primitive of the input, whose own gradient rule is
built from graph ops so second order works. TF1's functions over them are in
``gradflow.ops.activation_ops``.
"""

from __future__ import annotations

from gradflow.prim import call, rules
from gradflow.prim.registry import apply, register


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
    return [apply("elu_grad", [h, x], **n.attrs),
            call.where(call.greater_equal(x, 0.0), call.zeros_like(n), call.multiply(h, n))]


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
    s = call.sigmoid(call.multiply(x, beta))
    # f'' = beta s (1 - s) (2 + beta x (1 - 2 s))
    slope = call.multiply(s, call.subtract(1.0, s))
    inner = call.multiply(call.multiply(x, beta), call.subtract(1.0, call.multiply(2.0, s)))
    second = call.multiply(call.multiply(slope, call.add(2.0, inner)), beta)
    return [apply("swish_grad", [h, x], beta=beta), call.multiply(call.multiply(h, g), second)]


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
         grad=lambda n, g: [call.multiply(g, call.sigmoid(n.inputs[0]))])


def _softsign_grad(n, g):  # d softsign = 1 / (1 + |x|)^2, squared after the division so
    # that a huge |x| underflows to 0, not 1 / inf
    r = call.divide(1.0, call.add(call.abs(n.inputs[0]), 1.0))
    return [call.multiply(g, call.square(r))]


register("softsign", _softsign_impl, _float_infer, grad=_softsign_grad)

