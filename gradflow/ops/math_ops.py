"""Elementwise arithmetic, comparisons, ``where`` and ``cast``."""

from __future__ import annotations

from array_api_compat import device as _device

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.prim import rules
from gradflow.prim import scalar as sx
from gradflow.prim.registry import apply, convert_to_tensor, register

# -- helpers to declare families of elementwise ops ------------------------------


def _unary_infer(float_only):
    def infer(shapes, in_dtypes):
        if float_only:
            rules.require_floating(in_dtypes[0])
        elif in_dtypes[0].is_bool:
            raise TypeError("the input must be numeric, got bool")
        return shapes[0], in_dtypes[0]

    return infer


def _register_unary(name, xp_name, grad, float_only=True, **traits):
    register(name, lambda xp, x: getattr(xp, xp_name)(x), _unary_infer(float_only),
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


def _binary_args(x, y):
    """Tensors for two operands; a Python scalar takes the other's dtype."""
    from gradflow.graph import Tensor

    if not isinstance(x, Tensor) and isinstance(y, Tensor):
        return convert_to_tensor(x, like=y), y
    x = convert_to_tensor(x)
    return x, convert_to_tensor(y, like=x)


def _unary_fn(op_name):
    def fn(x, name=None):
        return apply(op_name, [convert_to_tensor(x)], name=name)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"Elementwise ``{op_name}`` (TF1 ``tf.{op_name}``)."
    return fn


def _binary_fn(op_name):
    def fn(x, y, name=None):
        return apply(op_name, list(_binary_args(x, y)), name=name)

    fn.__name__ = fn.__qualname__ = op_name
    fn.__doc__ = f"Elementwise ``{op_name}`` with broadcasting (TF1 ``tf.{op_name}``)."
    return fn


# -- unary ---------------------------------------------------------------------
# Gradient rules: one line each; ``n`` is the node, ``g`` the incoming gradient.

_register_unary("negative", "negative", lambda n, g: [negative(g)], float_only=False,
                scalar=sx.negative)
_register_unary("exp", "exp", lambda n, g: [g * n],  # d exp(x) = exp(x)
                scalar=sx.call("np.exp"), transcendental=True)
_register_unary("log", "log", lambda n, g: [g / n.inputs[0]],  # d log x = 1/x
                scalar=sx.call("np.log"), transcendental=True)
_register_unary("log1p", "log1p", lambda n, g: [g / (n.inputs[0] + 1.0)],
                scalar=sx.call("np.log1p"), transcendental=True)
_register_unary("sqrt", "sqrt", lambda n, g: [g * 0.5 / n],  # d sqrt x = 1/(2 sqrt x)
                scalar=sx.call("np.sqrt"))
_register_unary("square", "square", lambda n, g: [g * 2.0 * n.inputs[0]], float_only=False,
                scalar=sx.square)
_register_unary("abs", "abs", lambda n, g: [g * sign(n.inputs[0])], float_only=False,
                scalar=sx.call("np.abs"))
_register_unary("tanh", "tanh", lambda n, g: [g * (1.0 - square(n))],  # 1 - tanh^2
                scalar=sx.call("np.tanh"), transcendental=True)
_register_unary("sign", "sign", None, float_only=False)
_register_unary("floor", "floor", None, scalar=sx.call("np.floor"))  # dropout's mask
_register_unary("ceil", "ceil", None, scalar=sx.call("np.ceil"))
_register_unary("round", "round", None)
_register_unary("sin", "sin", lambda n, g: [g * cos(n.inputs[0])],
                scalar=sx.call("np.sin"), transcendental=True)
_register_unary("cos", "cos", lambda n, g: [negative(g) * sin(n.inputs[0])],
                scalar=sx.call("np.cos"), transcendental=True)
_register_unary("expm1", "expm1", lambda n, g: [g * (n + 1.0)],  # d (e^x - 1) = e^x
                scalar=sx.call("np.expm1"), transcendental=True)


def _sigmoid_impl(xp, x):
    # tanh form: one transcendental and no overflow for large |x|.
    return 0.5 * xp.tanh(0.5 * x) + 0.5


register("sigmoid", _sigmoid_impl, _unary_infer(True),
         grad=lambda n, g: [g * n * (1.0 - n)],  # s' = s (1 - s)
         scalar=sx.sigmoid, worth_alone=True, transcendental=True)


def _relu_impl(xp, x):
    return xp.maximum(x, 0)


def _relu_grad_impl(xp, g, x):
    return xp.where(x > 0, g, 0)


# g * [x > 0], read from relu(x) > 0, which says the same: the forward pass then keeps
# only the activation, not the value before it
register("relu", _relu_impl, _unary_infer(False),
         grad=lambda n, g: [apply("relu_grad", [g, n])], scalar=sx.relu, worth_alone=True)
register("relu_grad", _relu_grad_impl, lambda s, d: (s[0], d[0]),
         grad=lambda n, g: [apply("relu_grad", [g, n.inputs[1]]), None],
         scalar=sx.relu_grad, worth_alone=True)

negative = _unary_fn("negative")
exp = _unary_fn("exp")
log = _unary_fn("log")
log1p = _unary_fn("log1p")
sqrt = _unary_fn("sqrt")
square = _unary_fn("square")
abs = _unary_fn("abs")  # noqa: A001 - TF1 name
tanh = _unary_fn("tanh")
sign = _unary_fn("sign")
floor = _unary_fn("floor")
ceil = _unary_fn("ceil")
sin = _unary_fn("sin")
cos = _unary_fn("cos")
expm1 = _unary_fn("expm1")
round = _unary_fn("round")  # noqa: A001 - TF1 name
sigmoid = _unary_fn("sigmoid")
relu = _unary_fn("relu")


def rsqrt(x, name=None):
    """``1 / sqrt(x)``."""
    return divide(1.0, sqrt(x), name=name)


def reciprocal(x, name=None):
    """``1 / x``."""
    return divide(1.0, x, name=name)


# -- binary --------------------------------------------------------------------


def _pow_grad(n, g):
    a, b = n.inputs
    ga = g * b * pow(a, b - 1.0)  # d a^b / da = b a^(b-1)
    safe_log = where(greater(a, 0.0), log(maximum(a, 1e-30)), zeros_like(a))
    return [ga, g * n * safe_log]  # d a^b / db = a^b log a


_register_binary("add", "add", lambda n, g: [g, g], scalar=sx.binary("+"), broadcasting=True)
_register_binary("subtract", "subtract", lambda n, g: [g, negative(g)],
                 scalar=sx.binary("-"), broadcasting=True)
_register_binary("multiply", "multiply",
                 lambda n, g: [g * n.inputs[1], g * n.inputs[0]],
                 scalar=sx.binary("*"), broadcasting=True)
_register_binary("divide", "divide",  # d(a/b) = da/b - a db/b^2; ints are cast first
                 lambda n, g: [g / n.inputs[1], negative(g) * n / n.inputs[1]],
                 scalar=sx.binary("/"), broadcasting=True)
_register_binary("pow", "pow", _pow_grad)
_register_binary("maximum", "maximum", lambda n, g: [
    where(greater_equal(n.inputs[0], n.inputs[1]), g, zeros_like(g)),
    where(less(n.inputs[0], n.inputs[1]), g, zeros_like(g))], scalar=sx.call("np.maximum"))
_register_binary("minimum", "minimum", lambda n, g: [
    where(less_equal(n.inputs[0], n.inputs[1]), g, zeros_like(g)),
    where(greater(n.inputs[0], n.inputs[1]), g, zeros_like(g))], scalar=sx.call("np.minimum"))
_register_binary("floor_divide", "floor_divide", None)
# x mod y = x - floor(x / y) y: d/dx = 1, d/dy = -floor(x / y) (TF1's FloorMod gradient)
_register_binary("floor_mod", "remainder",
                 lambda n, g: [g, negative(g) * floordiv(n.inputs[0], n.inputs[1])])
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
is_finite = _unary_fn("is_finite")
is_nan = _unary_fn("is_nan")
is_inf = _unary_fn("is_inf")

add = _binary_fn("add")
subtract = _binary_fn("subtract")
multiply = _binary_fn("multiply")


def divide(x, y, name=None):
    """Elementwise ``x / y`` with broadcasting (TF1 ``tf.divide``/``truediv``).

    Integer operands are divided as float64 (int32, int64) or float32 (8 and 16 bits),
    as in TF1.
    """
    x, y = _binary_args(x, y)
    if x.dtype.is_integer and x.dtype == y.dtype:
        to = dtypes.float32 if x.dtype.size <= 2 else dtypes.float64
        x, y = cast(x, to), cast(y, to)
    return apply("divide", [x, y], name=name)


def div(x, y, name=None):
    """TF1 ``tf.div``: Python 2's ``/``: floor division of integers, ``x / y`` otherwise.

    >>> gf.div(gf.constant([7, -7]), 2)   # [3, -4], int32
    """
    x, y = _binary_args(x, y)
    if x.dtype.is_integer and y.dtype.is_integer:
        return floordiv(x, y, name=name)
    return divide(x, y, name=name)


pow = _binary_fn("pow")  # noqa: A001 - TF1 name
maximum = _binary_fn("maximum")
minimum = _binary_fn("minimum")
def _check_divisor_impl(xp, y, message):
    """``y``, after one check that no element is 0."""
    if y.size and bool(xp.any(y == 0)):
        raise InvalidArgumentError(message)
    return y


# TF1 raises on an integer division by zero; NumPy would give 0 and PyTorch raise its own
register("check_divisor", _check_divisor_impl, lambda s, d, message: (s[0], d[0]),
         grad=None, check=True)


def _nonzero_constant(t):
    """Whether ``t`` is a constant without a 0."""
    return t.opdef.kind == "constant" and bool((t.attrs["value"].array != 0).all())


def _integer_division(op_name, what, doc):
    def fn(x, y, name=None):
        x, y = _binary_args(x, y)
        if y.dtype.is_integer and not _nonzero_constant(y):  # (a check would cost
            from gradflow.graph import user_source_line  # a captured step its capture)

            y = apply("check_divisor", [y], message=(
                f"{what}: integer division by zero: '{y.name}' has an element 0 (at "
                f"{user_source_line()})"))
        return apply(op_name, [x, y], name=name)

    fn.__name__ = fn.__qualname__ = what
    fn.__doc__ = doc
    return fn


floordiv = _integer_division(
    "floor_divide", "floordiv", "Elementwise ``x // y`` with broadcasting (TF1 ``tf.floordiv``); "
    "an integer ``y`` with a 0 is an ``InvalidArgumentError``, as in TF1.")
floor_div = floordiv
floormod = _integer_division(
    "floor_mod", "floormod", "Elementwise remainder of a floor division (TF1 ``tf.floormod``, "
    "``tf.mod``): the result has the sign of ``y``, as Python's ``%``; an integer ``y`` "
    "with a 0 is an ``InvalidArgumentError``, as in TF1.")
mod = floormod
equal = _binary_fn("equal")
not_equal = _binary_fn("not_equal")
less = _binary_fn("less")
less_equal = _binary_fn("less_equal")
greater = _binary_fn("greater")
greater_equal = _binary_fn("greater_equal")
logical_and = _binary_fn("logical_and")
logical_or = _binary_fn("logical_or")
logical_xor = _binary_fn("logical_xor")
logical_not = _unary_fn("logical_not")
truediv = divide
sub = subtract
mul = multiply


def squared_difference(x, y, name=None):
    """``(x - y) ** 2``."""
    return square(subtract(x, y), name=name)


# -- where, cast, zeros_like -----------------------------------------------------


def _where_infer(shapes, in_dtypes):
    if not in_dtypes[0].is_bool:
        raise TypeError(f"the condition must be bool, got {in_dtypes[0].name}")
    shape = rules.broadcast_shapes(rules.broadcast_shapes(shapes[0], shapes[1]), shapes[2])
    return shape, rules.same_dtype(in_dtypes[1:], offset=1)


register("where", lambda xp, c, a, b: xp.where(c, a, b), _where_infer,
         grad=lambda n, g: [None, where(n.inputs[0], g, zeros_like(g)),
                            where(n.inputs[0], zeros_like(g), g)],
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


def where(condition, x=None, y=None, name=None):
    """Pick from ``x`` where ``condition`` holds, else from ``y`` (broadcasting; a vector
    ``condition`` with matrices or higher picks rows, as TF1's ``tf.where``). With
    ``condition`` alone, the coordinates of its true elements in row-major order, int64
    ``[count, rank]`` (TF1's one-argument form).

    >>> gf.where(gf.not_equal(labels, 0))   # the positions of the non-zero labels
    """
    if x is None and y is None:
        return apply("where_coordinates", [convert_to_tensor(condition)], name=name or "Where")
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither (the coordinates of the true "
                         "elements)")
    condition = convert_to_tensor(condition)
    x, y = _binary_args(x, y)
    ranks = [len(t.shape) for t in (x, y) if t.shape is not None]
    if condition.shape is not None and len(condition.shape) == 1 and ranks and max(ranks) > 1:
        # TF1: a vector condition picks whole rows (along the first axis), which
        # broadcasting from the right would not do
        from gradflow.ops.array_ops import reshape

        condition = reshape(condition, [-1] + [1] * (max(ranks) - 1))
    return apply("where", [condition, x, y], name=name)


def _cast_grad(n, g):
    src = n.inputs[0].dtype
    return [cast(g, src) if src.is_floating and n.dtype.is_floating else None]


register("cast", lambda xp, x, dtype: xp.astype(x, dtype.resolve(xp)),
         lambda s, d, dtype: (s[0], dtype), grad=_cast_grad, scalar=sx.cast)


def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (TF1 ``tf.cast``); of a ``SparseTensor``, its values."""
    from gradflow.sparse_tensor import SparseTensor

    if isinstance(x, SparseTensor):
        return SparseTensor(x.indices, cast(x.values, dtype, name), x.dense_shape)
    x = convert_to_tensor(x)
    dtype = dtypes.as_dtype(dtype)
    if x.dtype is dtype:
        return x
    return apply("cast", [x], name=name, dtype=dtype)


def _zeros_like_impl(xp, x):
    return xp.zeros_like(x)


register("zeros_like", _zeros_like_impl, lambda s, d: (s[0], d[0]), grad=None,
         scalar=sx.filled(0), shape_only_inputs=(0,))
register("ones_like", lambda xp, x: xp.ones_like(x), lambda s, d: (s[0], d[0]), grad=None,
         scalar=sx.filled(1), shape_only_inputs=(0,))


def zeros_like(x, dtype=None, name=None):
    """Zeros with the (run-time) shape of ``x``."""
    out = apply("zeros_like", [convert_to_tensor(x)], name=name)
    return cast(out, dtype) if dtype is not None else out


def ones_like(x, dtype=None, name=None):
    """Ones with the (run-time) shape of ``x``."""
    out = apply("ones_like", [convert_to_tensor(x)], name=name)
    return cast(out, dtype) if dtype is not None else out


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """Clamp ``t`` to ``[clip_value_min, clip_value_max]`` (TF1 semantics)."""
    return minimum(maximum(t, clip_value_min), clip_value_max, name=name)


def to_float(x, name="ToFloat"):
    """``cast(x, float32)`` (TF1's deprecated ``tf.to_float``)."""
    return cast(x, dtypes.float32, name=name)


def to_double(x, name="ToDouble"):
    """``cast(x, float64)`` (TF1's deprecated ``tf.to_double``)."""
    return cast(x, dtypes.float64, name=name)


def to_int32(x, name="ToInt32"):
    """``cast(x, int32)`` (TF1's deprecated ``tf.to_int32``)."""
    return cast(x, dtypes.int32, name=name)


def to_int64(x, name="ToInt64"):
    """``cast(x, int64)`` (TF1's deprecated ``tf.to_int64``)."""
    return cast(x, dtypes.int64, name=name)


# -- cumsum ------------------------------------------------------------------------


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


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along ``axis`` (TF1 ``tf.cumsum``).

    ``exclusive=True`` sums the elements before each one (the first is 0);
    ``reverse=True`` sums from the end of the axis.

    >>> gf.cumsum([1, 2, 3], exclusive=True, reverse=True)   # [5, 3, 0]
    """
    return _cumulative("cumsum", x, axis, exclusive, reverse, name)


def _cumulative(op_name, x, axis, exclusive, reverse, name):
    """``cumsum`` or ``cumprod`` of ``x`` along ``axis`` (normalized where the rank is
    known), after TF1's checks."""
    x = convert_to_tensor(x)
    axis = int(axis)
    if x.shape is not None:
        if len(x.shape) == 0:
            raise ValueError(f"{op_name}: the input '{x.name}' is a scalar; it needs rank 1 "
                             "or more")
        axis = rules.normalize_axis(axis, len(x.shape))[0]
    elif axis < 0:
        raise ValueError(f"{op_name}: a negative axis needs the rank of '{x.name}' to be "
                         "known")
    return apply(op_name, [x], name=name, axis=axis, exclusive=bool(exclusive),
                 reverse=bool(reverse))


# -- cumprod -----------------------------------------------------------------------


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

    zero = equal(x, 0)
    seen = scan("cumsum", cast(zero, dtypes.int32), exclusive=False)  # zeros so far
    first = logical_and(zero, equal(seen, 1))
    before = scan("cumsum", g * y, backward=True) / where(zero, ones_like(x), x)
    opened = where(first, ones_like(x), x)
    opened_y = scan("cumprod", opened)
    at_first = scan("cumsum", g * opened_y, backward=True)
    if nested:  # x_z at and after the first zero: a scan of it alone
        x_first = scan("cumsum", where(first, x, zeros_like(x)), exclusive=False)
        after = x_first * _cumprod_vjp(opened, opened_y, g, attrs, nested=False)
    else:
        after = zeros_like(x)
    return where(equal(seen, 0), before, where(first, at_first, after))


register("cumprod", _cumulative_impl("prod"), _cumsum_infer,
         grad=lambda n, g: [_cumprod_vjp(n.inputs[0], n, g, n.attrs)])


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along ``axis`` (TF1 ``tf.cumprod``, ``tf.math.cumprod``).

    ``exclusive=True`` multiplies the elements before each one (the first is 1);
    ``reverse=True`` multiplies from the end of the axis. The gradient is exact where
    ``x`` has zeros, and so is its own gradient (TF's divides by ``x``, with
    ``div_no_nan``, and gives 0 at a zero instead).

    >>> gf.cumprod([2, 3, 4], exclusive=True)   # [1, 2, 6]
    """
    return _cumulative("cumprod", x, axis, exclusive, reverse, name)
