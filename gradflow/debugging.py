"""TF1's ``tf.debugging`` (``tf.compat.v1.debugging``): the checks and assertions under
the names TF1 programs reach them by (``tf.debugging.assert_equal``,
``tf.debugging.check_numerics``...), the same functions as at the top of ``tf``.

>>> check = gf.debugging.assert_rank_at_least(x, 2)
>>> y = gf.debugging.check_numerics(gf.log(x), "log of x")
"""

from gradflow.ops.assert_ops import (
    assert_all_finite,
    assert_integer,
    assert_near,
    assert_proper_iterable,
    assert_rank_at_least,
    assert_rank_in,
    assert_same_float_dtype,
    assert_scalar,
    is_numeric_tensor,
)
from gradflow.ops.debug_ops import (
    Assert,
    assert_equal,
    assert_greater,
    assert_greater_equal,
    assert_less,
    assert_less_equal,
    assert_negative,
    assert_non_negative,
    assert_non_positive,
    assert_none_equal,
    assert_positive,
    assert_rank,
    assert_type,
    check_numerics,
)
from gradflow.ops.math_extra_ops import is_non_decreasing, is_strictly_increasing
from gradflow.ops.math_ops import is_finite, is_inf, is_nan

__all__ = ["Assert", "assert_all_finite", "assert_equal", "assert_greater",
           "assert_greater_equal", "assert_integer", "assert_less", "assert_less_equal",
           "assert_near", "assert_negative", "assert_non_negative", "assert_non_positive",
           "assert_none_equal", "assert_positive", "assert_proper_iterable", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_same_float_dtype", "assert_scalar",
           "assert_type", "check_numerics", "is_finite", "is_inf", "is_nan",
           "is_non_decreasing", "is_numeric_tensor", "is_strictly_increasing"]
