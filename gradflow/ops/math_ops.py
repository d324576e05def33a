"""Elementwise arithmetic, comparisons, ``where`` and ``cast``: TF1's functions over the
primitives of ``gradflow.prim.math`` (argument aliases, Python-value conversion, the
``SparseTensor`` form of ``cast``, composites)."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor, user_source_line
from gradflow.prim import complex as _complex  # noqa: F401 - registers its primitives
from gradflow.prim import math as _prim
from gradflow.prim import rules
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor


def _binary_args(x, y):
    """Tensors for two operands; a Python scalar takes the other's dtype."""
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


negative = _unary_fn("negative")
exp = _unary_fn("exp")
log = _unary_fn("log")
log1p = _unary_fn("log1p")
sqrt = _unary_fn("sqrt")
square = _unary_fn("square")


def abs(x, name=None):  # noqa: A001 - TF1 name
    """Elementwise ``|x|`` (TF1 ``tf.abs``); of a complex tensor, its modulus, a real
    tensor (``float32`` for ``complex64``)."""
    x = convert_to_tensor(x)
    return apply("complex_abs" if x.dtype.is_complex else "abs", [x], name=name)


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
tan = _unary_fn("tan")
asin = _unary_fn("asin")
acos = _unary_fn("acos")
atan = _unary_fn("atan")
sinh = _unary_fn("sinh")
cosh = _unary_fn("cosh")
asinh = _unary_fn("asinh")
acosh = _unary_fn("acosh")
atanh = _unary_fn("atanh")


def atan2(y, x, name=None):
    """The angle of the point ``(x, y)``, in ``[-pi, pi]``, elementwise with broadcasting
    (TF1 ``tf.atan2``, ``tf.math.atan2``; note the order: ``y`` first).

    >>> gf.atan2(gf.constant([1.0, -1.0]), gf.constant([-1.0, -1.0]))   # [2.356194, -2.356194]
    """
    return apply("atan2", list(_binary_args(y, x)), name=name or "Atan2")


def rint(x, name=None):
    """The nearest integer, halves to the even one, of a floating-point ``x`` (TF1
    ``tf.rint``, ``tf.math.rint``): ``rint(2.5)`` is 2, ``rint(-1.5)`` is -2."""
    x = convert_to_tensor(x)
    rules.require_floating(x.dtype, f"input '{x.name}' of rint")
    return apply("round", [x], name=name or "Rint")


def nextafter(x1, x2, name=None):
    """The next representable value after ``x1`` towards ``x2``, elementwise with
    broadcasting (TF1 ``tf.math.nextafter``); floating-point tensors only, no gradient."""
    return apply("nextafter", list(_binary_args(x1, x2)), name=name or "NextAfter")


def div_no_nan(x, y, name=None):
    """``x / y``, and 0 wherever ``y`` is 0, whatever ``x`` is (TF1 ``tf.div_no_nan``,
    ``tf.math.divide_no_nan``), with broadcasting, for floating-point tensors; TF1's
    gradients (each 0 where ``y`` is 0).

    >>> gf.div_no_nan(gf.constant([3.0, 1.0]), gf.constant([0.0, 2.0]))   # [0., 0.5]
    """
    return apply("div_no_nan", list(_binary_args(x, y)), name=name or "div_no_nan")


divide_no_nan = div_no_nan


def multiply_no_nan(x, y, name=None):
    """``x * y``, and 0 wherever ``y`` is 0, even where ``x`` is inf or NaN (TF1
    ``tf.math.multiply_no_nan``), with broadcasting, for floating-point tensors; TF1's
    gradients: ``dx = mul_no_nan(g, y)``, ``dy = mul_no_nan(x, g)``."""
    return apply("mul_no_nan", list(_binary_args(x, y)), name=name or "MulNoNan")


def reciprocal_no_nan(x, name=None):
    """``1 / x``, and 0 where ``x`` is 0 (TF1 ``tf.math.reciprocal_no_nan``)."""
    x = convert_to_tensor(x)
    return div_no_nan(convert_to_tensor(1, like=x), x, name=name or "reciprocal_no_nan")


def rsqrt(x, name=None):
    """``1 / sqrt(x)``."""
    return divide(1.0, sqrt(x), name=name)


def reciprocal(x, name=None):
    """``1 / x``."""
    return divide(1.0, x, name=name)


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
    return _prim.divide(x, y, name=name)

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


def _nonzero_constant(t):
    """Whether ``t`` is a constant without a 0."""
    return t.opdef.kind == "constant" and bool((t.attrs["value"].array != 0).all())


def _checked_divisor(y, what):
    """``y``, checked at run time for an element 0 when it is an integer tensor."""
    # a constant without a 0 needs no check (a check would cost a captured step its
    # capture)
    if y.dtype.is_integer and not _nonzero_constant(y):
        y = apply("check_divisor", [y], message=(
            f"{what}: integer division by zero: '{y.name}' has an element 0 (at "
            f"{user_source_line()})"))
    return y


def _integer_division(op_name, what, doc):
    def fn(x, y, name=None):
        x, y = _binary_args(x, y)
        return apply(op_name, [x, _checked_divisor(y, what)], name=name)

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


def truncatediv(x, y, name=None):
    """``x / y`` rounded towards zero, elementwise with broadcasting (TF1
    ``tf.truncatediv``, C's integer division): ``truncatediv(-7, 2)`` is -3 where
    ``floordiv`` gives -4. An integer ``y`` with a 0 is an ``InvalidArgumentError``.
    No gradient, as in TF1.

    >>> gf.truncatediv(gf.constant([7, -7]), 2)   # [3, -3]
    """
    x, y = _binary_args(x, y)
    name = name or "TruncateDiv"
    if x.dtype.is_floating:
        quotient = divide(x, y)  # floor and ceil have no gradient, nor has this
        return where(less(quotient, 0.0), ceil(quotient), floor(quotient), name=name)
    q = floordiv(x, y)
    zero = convert_to_tensor(0, like=x)
    # the floor lies one below the truncation where the exact quotient is negative and
    # not whole
    inexact = not_equal(subtract(x, multiply(q, y)), zero)
    negative_ = not_equal(less(x, zero), less(y, zero))
    return add(q, cast(logical_and(inexact, negative_), q.dtype), name=name)


def truncatemod(x, y, name=None):
    """The remainder of ``truncatediv``, ``x - truncatediv(x, y) * y``, with the sign of
    ``x`` (TF1 ``tf.truncatemod``: C's ``%`` and ``fmod``), computed as
    ``sign(x) (|x| mod |y|)``, exact in floating point; an integer ``y`` with a 0 is an
    ``InvalidArgumentError``. Differentiable as ``floormod`` is (1 and
    ``-truncatediv(x, y)``), where TF1 has no gradient.

    >>> gf.truncatemod(gf.constant([7, -7]), 2)   # [1, -1]
    """
    x, y = _binary_args(x, y)
    y = _checked_divisor(y, "truncatemod")
    magnitude = apply("floor_mod", [abs(x), abs(y)])
    zero = convert_to_tensor(0, like=x)
    return where(less(x, zero), negative(magnitude), magnitude, name=name or "TruncateMod")
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
        condition = apply("reshape", [condition], shape=(-1,) + (1,) * (max(ranks) - 1))
    return apply("where", [condition, x, y], name=name)


def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (TF1 ``tf.cast``); of a ``SparseTensor``, its values."""
    if isinstance(x, SparseTensor):
        return SparseTensor(x.indices, cast(x.values, dtype, name), x.dense_shape)
    return _prim.cast(convert_to_tensor(x), dtype, name=name)


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


def to_bfloat16(x, name="ToBFloat16"):
    """``cast(x, bfloat16)`` (TF1's deprecated ``tf.to_bfloat16``)."""
    return cast(x, dtypes.bfloat16, name=name)



# -- cumsum and cumprod --------------------------------------------------------------

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


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along ``axis`` (TF1 ``tf.cumprod``, ``tf.math.cumprod``).

    ``exclusive=True`` multiplies the elements before each one (the first is 1);
    ``reverse=True`` multiplies from the end of the axis. The gradient is exact where
    ``x`` has zeros, and so is its own gradient (TF's divides by ``x``, with
    ``div_no_nan``, and gives 0 at a zero instead).

    >>> gf.cumprod([2, 3, 4], exclusive=True)   # [1, 2, 6]
    """
    return _cumulative("cumprod", x, axis, exclusive, reverse, name)


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """``log(cumsum(exp(x)))`` along ``axis``, without overflow or underflow (TF1
    ``tf.math.cumulative_logsumexp``), for floating-point ``x``; ``exclusive`` and
    ``reverse`` as ``cumsum``'s (an exclusive result starts at ``-inf``). A primitive,
    with TF1's gradient.

    >>> gf.math.cumulative_logsumexp([-1000.0, 0.0, 1.0], exclusive=True)   # [-inf, -1000, 0]
    """
    return _cumulative("cumulative_logsumexp", x, axis, exclusive, reverse,
                       name or "CumulativeLogsumexp")
