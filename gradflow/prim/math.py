"""The elementwise primitives: arithmetic, comparisons, logic, ``where``, ``cast``,
``zeros_like``/``ones_like`` and the cumulative sum and product.

Each record is its Array API impl, its shape/dtype rule, its gradient rule (built
from primitives through ``gradflow.prim.call``), its scalar expression and its traits.
TF1's functions over them live in ``gradflow.ops.math_ops``.
"""

from __future__ import annotations

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


def _binary_infer(result=None, numeric=True):
    def infer(shapes, in_dtypes):
        dtype = rules.same_dtype(in_dtypes)
        if numeric and dtype.is_bool:
            raise TypeError("the inputs must be numeric, got bool")
        return rules.broadcast_shapes(shapes[0], shapes[1]), result or dtype

    return infer


def _register_binary(name, xp_name, grad, result=None, numeric=True, **traits):
    register(name, lambda xp, a, b: getattr(xp, xp_name)(a, b),
             _binary_infer(result, numeric), grad=grad,
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
                scalar=sx.negative)
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


_register_binary("add", "add", lambda n, g: [g, g], scalar=sx.binary("+"), broadcasting=True)
_register_binary("subtract", "subtract", lambda n, g: [g, call.negative(g)],
                 scalar=sx.binary("-"), broadcasting=True)
_register_binary("multiply", "multiply",
                 lambda n, g: [call.multiply(g, n.inputs[1]), call.multiply(g, n.inputs[0])],
                 scalar=sx.binary("*"), broadcasting=True)
_register_binary("divide", "divide", _divide_grad, scalar=sx.binary("/"), broadcasting=True)
_register_binary("pow", "pow", _pow_grad)
_register_binary("maximum", "maximum", lambda n, g: [
    _masked(call.greater_equal(n.inputs[0], n.inputs[1]), g),
    _masked(call.less(n.inputs[0], n.inputs[1]), g)], scalar=sx.call("np.maximum"))
_register_binary("minimum", "minimum", lambda n, g: [
    _masked(call.less_equal(n.inputs[0], n.inputs[1]), g),
    _masked(call.greater(n.inputs[0], n.inputs[1]), g)], scalar=sx.call("np.minimum"))
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
    return [cast(g, src) if src.is_floating and n.dtype.is_floating else None]


register("cast", lambda xp, x, dtype: xp.astype(x, dtype.resolve(xp)),
         lambda s, d, dtype: (s[0], dtype), grad=_cast_grad, scalar=sx.cast)


def _zeros_like_impl(xp, x):
    return xp.zeros_like(x)


register("zeros_like", _zeros_like_impl, lambda s, d: (s[0], d[0]), grad=None,
         scalar=sx.filled(0), shape_only_inputs=(0,))
register("ones_like", lambda xp, x: xp.ones_like(x), lambda s, d: (s[0], d[0]), grad=None,
         scalar=sx.filled(1), shape_only_inputs=(0,))


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
