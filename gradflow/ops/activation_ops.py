"""Elementwise activations of ``tf.nn`` beyond relu/sigmoid/tanh: TF1's functions.

The common ones are primitives (one forward function, and a gradient primitive of
the input whose own gradient rule is built from graph ops, so second order works).
``crelu`` is a composite: it only concatenates two relus. The primitives are in
``gradflow.prim.activation``.
"""

from __future__ import annotations

from gradflow.ops.array_ops import static_value
from gradflow.ops.index_ops import concat
from gradflow.ops.math_ops import cast, negative, relu, sigmoid, where
from gradflow.prim import activation as _activation  # noqa: F401 - registers the primitives applied here
from gradflow.prim.registry import apply, convert_to_tensor

# TF's SELU constants (Klambauer et al., 2017), as tf.nn.selu uses them.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946

# -- public functions ---------------------------------------------------------------------


def _features(features, op_name):
    x = convert_to_tensor(features)
    if x.dtype is not None and x.dtype.is_bool:
        raise TypeError(f"{op_name}: features '{x.name}' must be numeric, got bool")
    return x


def _as_float(x):
    """Integer features as float32, as TF1's leaky_relu does."""
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
    x = _as_float(_features(features, "leaky_relu"))
    value = static_value(alpha)
    if value is None or value.ndim != 0:
        a = convert_to_tensor(alpha, like=x)
        return where(x > 0.0, x, x * a, name=name)
    return apply("leaky_relu", [x], name=name or "LeakyRelu", alpha=float(value))


def crelu(features, name=None, axis=-1):
    """Concatenated ReLU (TF1 ``tf.nn.crelu``): ``concat([relu(x), relu(-x)], axis)``,
    so ``axis`` doubles in size."""
    x = convert_to_tensor(features)
    return concat([relu(x), relu(negative(x))], axis, name=name or "CRelu")
