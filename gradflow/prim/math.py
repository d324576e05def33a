"""The elementwise primitives: arithmetic, comparisons, logic, ``where``, ``cast``,
``zeros_like``/``ones_like`` and the cumulative sum and product.

Each record is its Array API impl, its shape/dtype rule, its gradient rule (built
from primitives through ``gradflow.prim.call``), its scalar expression and its traits.
TF1's functions over them live in ``gradflow.ops.math_ops``.
"""

from __future__ import annotations

import math

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim import call, rules
from gradflow.prim import scalar as sx
from gradflow.prim.registry import apply, register

# -- helpers to declare families of elementwise ops ------------------------------


def unary_infer(float_only):
    """The shape/dtype rule of a unary elementwise op (``float_only``: floats only)."""
    def infer(shapes, in_dtypes):
        if float_only:
            rules.require_floating(in_dtypes[0])
        elif in_dtypes[0].is_bool:
            raise TypeError("the input must be numeric, got bool")
        return shapes[0], in_dtypes[0]

    return infer


def _register_unary(name, xp_name, grad, float_only=True, **traits):
    register(name, lambda xp, x: getattr(xp, xp_name)(x), unary_infer(float_only),
             grad=grad, lower=lambda xp: getattr(xp, xp_name), **traits)


def _binary_infer(result=None, numeric=True, float_only=False):
    def infer(shapes, in_dtypes):
        dtype = rules.same_dtype(in_dtypes)
        if float_only:
            rules.require_floating(dtype)
        if numeric and dtype.is_bool:
            raise TypeError("the inputs must be numeric, got bool")
        return rules.broadcast_shapes(shapes[0], shapes[1]), result or dtype

    return infer


def _register_binary(name, xp_name, grad, result=None, numeric=True, float_only=False,
                     **traits):
    register(name, lambda xp, a, b: getattr(xp, xp_name)(a, b),
             _binary_infer(result, numeric, float_only), grad=grad,
             lower=lambda xp: getattr(xp, xp_name), **traits)


def cast(x, dtype, name=None):
    """The tensor ``x`` as ``dtype``: ``x`` itself when it has that dtype already."""
    dtype = dtypes.as_dtype(dtype)
    if x.dtype is dtype:
        return x
    return apply("cast", [x], name=name, dtype=dtype)


def divide(x, y, name=None):
    """``x / y`` of two tensors; integers are divided as float64 (int32, int64) or
    float32 (8 and 16 bits), as in TF1."""
    if x.dtype.is_integer and x.dtype == y.dtype:
        to = dtypes.float32 if x.dtype.size <= 2 else dtypes.float64
        x, y = cast(x, to), cast(y, to)
    return apply("divide", [x, y], name=name)


def _masked(condition, g):
    """``g`` where ``condition`` holds, else 0."""
    return call.where(condition, g, call.zeros_like(g))


# -- unary ---------------------------------------------------------------------
# Gradient rules: one line each; ``n`` is the node, ``g`` the incoming gradient.

_register_unary("negative", "negative", lambda n, g: [call.negative(g)], float_only=False,
                scalar=sx.negative, takes_complex=True)
_register_unary("exp", "exp", lambda n, g: [call.multiply(g, n)],  # d exp(x) = exp(x)
                scalar=sx.call("np.exp"), transcendental=True)
_register_unary("log", "log", lambda n, g: [call.divide(g, n.inputs[0])],  # d log x = 1/x
                scalar=sx.call("np.log"), transcendental=True)
_register_unary("log1p", "log1p", lambda n, g: [call.divide(g, call.add(n.inputs[0], 1.0))],
                scalar=sx.call("np.log1p"), transcendental=True)
_register_unary("sqrt", "sqrt",  # d sqrt x = 1/(2 sqrt x)
                lambda n, g: [call.divide(call.multiply(g, 0.5), n)],
                scalar=sx.call("np.sqrt"))
_register_unary("square", "square",
                lambda n, g: [call.multiply(call.multiply(g, 2.0), n.inputs[0])],
                float_only=False, scalar=sx.square)
_register_unary("abs", "abs", lambda n, g: [call.multiply(g, call.sign(n.inputs[0]))],
                float_only=False, scalar=sx.call("np.abs"))
_register_unary("tanh", "tanh",  # 1 - tanh^2
                lambda n, g: [call.multiply(g, call.subtract(1.0, call.square(n)))],
                scalar=sx.call("np.tanh"), transcendental=True)
_register_unary("sign", "sign", None, float_only=False)
_register_unary("floor", "floor", None, scalar=sx.call("np.floor"))  # dropout's mask
_register_unary("ceil", "ceil", None, scalar=sx.call("np.ceil"))
_register_unary("round", "round", None)
_register_unary("sin", "sin", lambda n, g: [call.multiply(g, call.cos(n.inputs[0]))],
                scalar=sx.call("np.sin"), transcendental=True)
_register_unary("cos", "cos",
                lambda n, g: [call.multiply(call.negative(g), call.sin(n.inputs[0]))],
                scalar=sx.call("np.cos"), transcendental=True)
_register_unary("expm1", "expm1",  # d (e^x - 1) = e^x
                lambda n, g: [call.multiply(g, call.add(n, 1.0))],
                scalar=sx.call("np.expm1"), transcendental=True)


# trigonometric and hyperbolic functions, with TF1's gradients
def _over(g, denominator):
    return call.divide(g, denominator)


def _one_minus_square(x):
    return call.subtract(1.0, call.square(x))


_register_unary("tan", "tan",  # d tan x = 1 + tan^2 x (= sec^2 x)
                lambda n, g: [call.multiply(g, call.add(call.square(n), 1.0))],
                scalar=sx.call("np.tan"), transcendental=True)
_register_unary("asin", "asin",
                lambda n, g: [_over(g, call.sqrt(_one_minus_square(n.inputs[0])))],
                scalar=sx.call("np.asin"), transcendental=True)
_register_unary("acos", "acos",
                lambda n, g: [call.negative(_over(g, call.sqrt(_one_minus_square(n.inputs[0]))))],
                scalar=sx.call("np.acos"), transcendental=True)
_register_unary("atan", "atan",
                lambda n, g: [_over(g, call.add(call.square(n.inputs[0]), 1.0))],
                scalar=sx.call("np.atan"), transcendental=True)
_register_unary("sinh", "sinh", lambda n, g: [call.multiply(g, call.cosh(n.inputs[0]))],
                scalar=sx.call("np.sinh"), transcendental=True)
_register_unary("cosh", "cosh", lambda n, g: [call.multiply(g, call.sinh(n.inputs[0]))],
                scalar=sx.call("np.cosh"), transcendental=True)
_register_unary("asinh", "asinh", lambda n, g: [_over(g, call.cosh(n))],  # as TF: 1 / cosh y
                scalar=sx.call("np.asinh"), transcendental=True)
_register_unary("acosh", "acosh", lambda n, g: [_over(g, call.sinh(n))],  # 1 / sinh y
                scalar=sx.call("np.acosh"), transcendental=True)
_register_unary("atanh", "atanh", lambda n, g: [_over(g, _one_minus_square(n.inputs[0]))],
                scalar=sx.call("np.atanh"), transcendental=True)


def _sigmoid_impl(xp, x):
    # tanh form: one transcendental and no overflow for large |x|.
    return 0.5 * xp.tanh(0.5 * x) + 0.5


register("sigmoid", _sigmoid_impl, unary_infer(True),  # s' = s (1 - s)
         grad=lambda n, g: [call.multiply(call.multiply(g, n), call.subtract(1.0, n))],
         scalar=sx.sigmoid, worth_alone=True, transcendental=True)


def _relu_impl(xp, x):
    return xp.maximum(x, 0)


def _relu_grad_impl(xp, g, x):
    return xp.where(x > 0, g, 0)


# g * [x > 0], read from relu(x) > 0, which says the same: the forward pass then keeps
# only the activation, not the value before it
register("relu", _relu_impl, unary_infer(False),
         grad=lambda n, g: [apply("relu_grad", [g, n])], scalar=sx.relu, worth_alone=True)
register("relu_grad", _relu_grad_impl, lambda s, d: (s[0], d[0]),
         grad=lambda n, g: [apply("relu_grad", [g, n.inputs[1]]), None],
         scalar=sx.relu_grad, worth_alone=True)


# -- binary --------------------------------------------------------------------


def _pow_grad(n, g):
    a, b = n.inputs
    ga = call.multiply(call.multiply(g, b), call.pow(a, call.subtract(b, 1.0)))  # b a^(b-1)
    safe_log = call.where(call.greater(a, 0.0), call.log(call.maximum(a, 1e-30)),
                          call.zeros_like(a))
    return [ga, call.multiply(call.multiply(g, n), safe_log)]  # d a^b / db = a^b log a


def _divide_grad(n, g):  # d(a/b) = da/b - a db/b^2; ints are cast first
    b = n.inputs[1]
    return [call.divide(g, b), call.divide(call.multiply(call.negative(g), n), b)]


def _multiply_grad(n, g):  # complex: g * conj(other), TF's convention
    a, b = n.inputs
    if n.dtype.is_complex:
        a, b = call.conj(a), call.conj(b)
    return [call.multiply(g, b), call.multiply(g, a)]


_register_binary("add", "add", lambda n, g: [g, g], scalar=sx.binary("+"), broadcasting=True,
                 takes_complex=True)
_register_binary("subtract", "subtract", lambda n, g: [g, call.negative(g)],
                 scalar=sx.binary("-"), broadcasting=True, takes_complex=True)
_register_binary("multiply", "multiply", _multiply_grad,
                 scalar=sx.binary("*"), broadcasting=True, takes_complex=True)
_register_binary("divide", "divide", _divide_grad, scalar=sx.binary("/"), broadcasting=True)
_register_binary("pow", "pow", _pow_grad)
_register_binary("maximum", "maximum", lambda n, g: [
    _masked(call.greater_equal(n.inputs[0], n.inputs[1]), g),
    _masked(call.less(n.inputs[0], n.inputs[1]), g)], scalar=sx.call("np.maximum"))
_register_binary("minimum", "minimum", lambda n, g: [
    _masked(call.less_equal(n.inputs[0], n.inputs[1]), g),
    _masked(call.greater(n.inputs[0], n.inputs[1]), g)], scalar=sx.call("np.minimum"))
def _atan2_grad(n, g):  # d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
    y, x = n.inputs
    scaled = call.divide(g, call.add(call.square(x), call.square(y)))
    return [call.multiply(scaled, x), call.negative(call.multiply(scaled, y))]


_register_binary("atan2", "atan2", _atan2_grad, float_only=True,
                 scalar=sx.call("np.atan2"), transcendental=True)
_register_binary("nextafter", "nextafter", None, float_only=True)


# x / y and x * y, but 0 wherever y is 0 (whatever x is); the gradients are TF1's
def _no_nan_impl(kind):
    def impl(xp, x, y):
        zero = y == 0
        safe = xp.where(zero, xp.ones_like(y), y)  # no 0 / 0 or inf * 0 to warn about
        out = x / safe if kind == "divide" else x * safe
        return xp.where(zero, xp.zeros_like(out), out)

    return impl


def _no_nan_scalar(symbol):
    def expr(args, node):
        if not sx.floating(node):
            return None
        zero = f"{sx.scalar_type(node)}(0)"
        return f"({zero} if {args[1]} == {zero} else ({args[0]} {symbol} {args[1]}))"

    return expr


def _div_no_nan_grad(n, g):  # d(x/y) = dx / y - x dy / y^2, each 0 where y is 0
    x, y = n.inputs
    return [apply("div_no_nan", [g, y]),
            call.multiply(g, apply("div_no_nan", [apply("div_no_nan", [call.negative(x), y]), y]))]


register("div_no_nan", _no_nan_impl("divide"), _binary_infer(float_only=True),
         grad=_div_no_nan_grad, scalar=_no_nan_scalar("/"), broadcasting=True)
register("mul_no_nan", _no_nan_impl("multiply"), _binary_infer(float_only=True),
         grad=lambda n, g: [apply("mul_no_nan", [g, n.inputs[1]]),
                            apply("mul_no_nan", [n.inputs[0], g])],
         scalar=_no_nan_scalar("*"), broadcasting=True)
_register_binary("floor_divide", "floor_divide", None)
# x mod y = x - floor(x / y) y: d/dx = 1, d/dy = -floor(x / y) (TF1's FloorMod gradient)
_register_binary("floor_mod", "remainder", lambda n, g: [
    g, call.multiply(call.negative(g), call.floor_divide(n.inputs[0], n.inputs[1]))])
for _name, _symbol in (("equal", "=="), ("not_equal", "!="), ("less", "<"), ("less_equal", "<="),
                      ("greater", ">"), ("greater_equal", ">=")):
    _register_binary(_name, _name, None, result=dtypes.bool_, numeric=False,
                     scalar=sx.compare(_symbol))


def _logical_infer(shapes, in_dtypes):  # the Array API's logical functions take bools only
    if not all(dt.is_bool for dt in in_dtypes):
        raise TypeError(f"the inputs must be bool, got {', '.join(d.name for d in in_dtypes)}")
    shape = shapes[0] if len(shapes) == 1 else rules.broadcast_shapes(shapes[0], shapes[1])
    return shape, dtypes.bool_


for _name, _symbol in (("logical_and", "and"), ("logical_or", "or"), ("logical_xor", None)):
    register(_name, lambda xp, a, b, f=_name: getattr(xp, f)(a, b), _logical_infer, grad=None,
             lower=lambda xp, f=_name: getattr(xp, f),
             scalar=None if _symbol is None else sx.logical(_symbol))
register("logical_not", lambda xp, x: xp.logical_not(x), _logical_infer, grad=None,
         lower=lambda xp: xp.logical_not, scalar=sx.logical("not"))


def _float_test_infer(shapes, in_dtypes):
    rules.require_floating(in_dtypes[0])
    return shapes[0], dtypes.bool_


for _name, _xp_name in (("is_finite", "isfinite"), ("is_nan", "isnan"), ("is_inf", "isinf")):
    register(_name, lambda xp, x, f=_xp_name: getattr(xp, f)(x), _float_test_infer, grad=None,
             lower=lambda xp, f=_xp_name: getattr(xp, f))


def _check_divisor_impl(xp, y, message):
    """``y``, after one check that no element is 0."""
    if y.size and bool(xp.any(y == 0)):
        raise InvalidArgumentError(message)
    return y


# TF1 raises on an integer division by zero; NumPy would give 0 and PyTorch raise its own
register("check_divisor", _check_divisor_impl, lambda s, d, message: (s[0], d[0]),
         grad=None, check=True)


# -- where, cast, zeros_like -----------------------------------------------------


def _where_infer(shapes, in_dtypes):
    if not in_dtypes[0].is_bool:
        raise TypeError(f"the condition must be bool, got {in_dtypes[0].name}")
    shape = rules.broadcast_shapes(rules.broadcast_shapes(shapes[0], shapes[1]), shapes[2])
    return shape, rules.same_dtype(in_dtypes[1:], offset=1)


register("where", lambda xp, c, a, b: xp.where(c, a, b), _where_infer,
         grad=lambda n, g: [None, _masked(n.inputs[0], g),
                            call.where(n.inputs[0], call.zeros_like(g), g)],
         lower=lambda xp: xp.where, scalar=sx.where)


def _coordinates_impl(xp, condition):
    if condition.ndim == 0:  # nonzero takes no 0-d array: one empty coordinate, or none
        rows = 1 if bool(condition) else 0
        return xp.zeros((rows, 0), dtype=xp.int64, device=_device(condition))
    return xp.stack([xp.astype(i, xp.int64) for i in xp.nonzero(condition)], axis=1)


def _coordinates_infer(shapes, in_dtypes):
    if not in_dtypes[0].is_bool:
        raise TypeError(f"the condition must be bool, got {in_dtypes[0].name}")
    return (None, None if shapes[0] is None else len(shapes[0])), dtypes.int64


register("where_coordinates", _coordinates_impl, _coordinates_infer, grad=None)


def _cast_grad(n, g):
    src = n.inputs[0].dtype
    if not (src.is_floating or src.is_complex) or not (n.dtype.is_floating or n.dtype.is_complex):
        return [None]
    return [cast(g, src)]


def _cast_impl(xp, x, dtype):
    if x.dtype in (xp.complex64, xp.complex128) and dtype.kind != "c":
        x = xp.real(x)  # TF1: a cast from complex to a real type drops the imaginary part
    return xp.astype(x, dtype.resolve(xp))


register("cast", _cast_impl, lambda s, d, dtype: (s[0], dtype), grad=_cast_grad,
         scalar=sx.cast, takes_complex=True)


def _zeros_like_impl(xp, x):
    return xp.zeros_like(x)


register("zeros_like", _zeros_like_impl, lambda s, d: (s[0], d[0]), grad=None,
         scalar=sx.filled(0), shape_only_inputs=(0,), takes_complex=True)
register("ones_like", lambda xp, x: xp.ones_like(x), lambda s, d: (s[0], d[0]), grad=None,
         scalar=sx.filled(1), shape_only_inputs=(0,), takes_complex=True)


# -- cumsum and cumprod --------------------------------------------------------------


def _cumulative_impl(kind):
    """The impl of ``cumsum`` (``kind`` "sum") or ``cumprod`` ("prod")."""
    def impl(xp, x, axis, exclusive, reverse):
        if reverse:
            x = xp.flip(x, axis=axis)
        out = getattr(xp, "cumulative_" + kind)(x, axis=axis, dtype=x.dtype,
                                                 include_initial=exclusive)
        if exclusive:  # the results before each element: drop the last, the total
            out = out[(slice(None),) * axis + (slice(0, -1), ...)]
        return xp.flip(out, axis=axis) if reverse else out

    return impl


def _cumsum_infer(shapes, in_dtypes, axis, exclusive, reverse):
    if in_dtypes[0].is_bool:
        raise TypeError("the input must be numeric, got bool")
    return shapes[0], in_dtypes[0]


register("cumsum", _cumulative_impl("sum"), _cumsum_infer,  # the adjoint sums backwards
         grad=lambda n, g: [apply("cumsum", [g], axis=n.attrs["axis"],
                                  exclusive=n.attrs["exclusive"],
                                  reverse=not n.attrs["reverse"])])


def _cumprod_vjp(x, y, g, attrs, nested=True):
    """The gradient of ``y = cumprod(x)`` (``attrs``: its axis, exclusive, reverse) for
    the output gradient ``g``, exact where ``x`` has zeros, from differentiable ops.

    dx_k sums, over the outputs i whose product holds x_k, g_i times the product of the
    others. Before the first zero in the scan's order, that is ``cumsum(g y) / x_k``
    summed the other way (TF's rule); at the first zero z, ``cumsum(g cumprod(x'))``
    with x' = x with x_z made 1 (no division); after it, every such product holds x_z,
    so dx_k = x_z times the gradient at x', which is 0 but keeps the second derivative
    in x_z (``nested``: one level suffices, as a product with two zeros has zero
    derivative in each)."""
    axis, exclusive, reverse = attrs["axis"], attrs["exclusive"], attrs["reverse"]

    def scan(op, t, backward=False, exclusive=exclusive):
        return apply(op, [t], axis=axis, exclusive=exclusive, reverse=reverse != backward)

    zero = call.equal(x, 0)
    seen = scan("cumsum", cast(zero, dtypes.int32), exclusive=False)  # zeros so far
    first = call.logical_and(zero, call.equal(seen, 1))
    before = divide(scan("cumsum", call.multiply(g, y), backward=True),
                    call.where(zero, call.ones_like(x), x))
    opened = call.where(first, call.ones_like(x), x)
    opened_y = scan("cumprod", opened)
    at_first = scan("cumsum", call.multiply(g, opened_y), backward=True)
    if nested:  # x_z at and after the first zero: a scan of it alone
        x_first = scan("cumsum", _masked(first, x), exclusive=False)
        after = call.multiply(x_first, _cumprod_vjp(opened, opened_y, g, attrs, nested=False))
    else:
        after = call.zeros_like(x)
    return call.where(call.equal(seen, 0), before, call.where(first, at_first, after))


register("cumprod", _cumulative_impl("prod"), _cumsum_infer,
         grad=lambda n, g: [_cumprod_vjp(n.inputs[0], n, g, n.attrs)])


# -- cumulative_logsumexp ----------------------------------------------------------


def _shifted(xp, x, axis, by, fill):
    """``x`` moved ``by`` places along ``axis`` towards the end, ``fill`` in front."""
    lead = (slice(None),) * axis
    pad_shape = x.shape[:axis] + (by,) + x.shape[axis + 1:]
    front = xp.full(pad_shape, fill, dtype=x.dtype, device=_device(x))
    return xp.concat([front, x[lead + (slice(0, x.shape[axis] - by), ...)]], axis=axis)


def _cumulative_logsumexp_impl(xp, x, axis, exclusive, reverse):
    """``log(cumsum(exp(x)))`` along ``axis`` without overflow or underflow: a scan in
    log2(n) steps, each one ``logaddexp`` of the partial results and themselves moved by
    1, 2, 4... places (Hillis and Steele's), so that no element is ever exponentiated."""
    if reverse:
        x = xp.flip(x, axis=axis)
    n = x.shape[axis]
    if exclusive and n:
        x = _shifted(xp, x, axis, 1, -math.inf)
    step = 1
    while step < n:
        x = xp.logaddexp(x, _shifted(xp, x, axis, step, -math.inf))
        step *= 2
    return xp.flip(x, axis=axis) if reverse else x


def _cumulative_logsumexp_infer(shapes, in_dtypes, axis, exclusive, reverse):
    rules.require_floating(in_dtypes[0])
    return shapes[0], in_dtypes[0]


def _cumulative_logsumexp_grad(n, g):
    """TF1's rule, in log space: d out_i / d x_j = exp(x_j - out_i) for the j that out_i
    holds, so dx = exp(x + clse(log g - out)) summed the other way, split by the sign
    of ``g`` (its logarithm needs it positive)."""
    x, attrs = n.inputs[0], dict(n.attrs)
    attrs["reverse"] = not attrs["reverse"]
    minus_inf = call.subtract(call.zeros_like(g), math.inf)
    # an output of -inf (nothing summed yet) takes no part: it would give -inf - -inf
    empty = call.equal(n, minus_inf)
    out = call.where(empty, call.zeros_like(g), n)

    def part(positive):
        magnitude = g if positive else call.negative(g)
        keep = call.logical_and(call.greater(magnitude, 0.0), call.logical_not(empty))
        log_g = call.where(keep, call.subtract(
            call.log(call.where(keep, magnitude, call.ones_like(g))), out), minus_inf)
        return call.exp(call.add(apply("cumulative_logsumexp", [log_g], **attrs), x))

    return [call.subtract(part(True), part(False))]


register("cumulative_logsumexp", _cumulative_logsumexp_impl, _cumulative_logsumexp_infer,
         grad=_cumulative_logsumexp_grad)
