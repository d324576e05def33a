"""gradflow: a static-graph deep-learning framework on any Array API backend.

TF1's graph-mode API (``import gradflow as tf`` works for supported features);
the graph runs forward and backward on NumPy, CuPy, PyTorch or any Array API
library, chosen per Session.
"""

from gradflow import backends, data, errors, layers, nn, train  # noqa: E402 - they use the names above
from gradflow.autodiff import RegisterGradient, gradients
from gradflow.clip_ops import clip_by_global_norm, clip_by_norm, global_norm
from gradflow.dtypes import DType, as_dtype, float16, float32, float64, int32, int64
from gradflow.dtypes import bool_ as bool  # noqa: A001 - TF1 name
from gradflow.graph import (
    Graph,
    Operation,
    Tensor,
    TensorShape,
    get_default_graph,
    name_scope,
    reset_default_graph,
    set_random_seed,
)
from gradflow.ops import overloads as _overloads  # noqa: F401 - installs the operators
from gradflow.ops.array_ops import (
    argmax,
    argmin,
    expand_dims,
    matmul,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
    reshape,
    squeeze,
    transpose,
)
from gradflow.ops.index_ops import concat, gather, one_hot, shape, split, stack, unstack
from gradflow.ops.math_ops import (
    abs,  # noqa: A004
    add,
    cast,
    clip_by_value,
    divide,
    equal,
    exp,
    floor,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    ones_like,
    pow,  # noqa: A004
    reciprocal,
    round,  # noqa: A004
    rsqrt,
    sigmoid,
    sign,
    sqrt,
    square,
    squared_difference,
    subtract,
    tanh,
    truediv,
    where,
    zeros_like,
)
from gradflow.ops.nn_ops import softmax
from gradflow.ops.registry import constant, convert_to_tensor
from gradflow.ops.state_ops import (
    assign,
    assign_add,
    assign_sub,
    group,
    identity,
    no_op,
    placeholder,
    placeholder_with_default,
    random_normal,
    random_uniform,
    stop_gradient,
    truncated_normal,
)
from gradflow.session import InteractiveSession, Session, get_default_session
from gradflow.variables import (
    AUTO_REUSE,
    Variable,
    constant_initializer,
    get_variable,
    get_variable_scope,
    global_variables,
    global_variables_initializer,
    glorot_normal_initializer,
    glorot_uniform_initializer,
    he_normal_initializer,
    ones_initializer,
    random_normal_initializer,
    random_uniform_initializer,
    trainable_variables,
    truncated_normal_initializer,
    variable_scope,
    variables_initializer,
    zeros_initializer,
)


def zeros(shape, dtype=float32, name=None):
    """A constant tensor of zeros."""
    import numpy as _np

    return constant(_np.zeros(tuple(shape)), dtype=dtype, name=name or "zeros")


def ones(shape, dtype=float32, name=None):
    """A constant tensor of ones."""
    import numpy as _np

    return constant(_np.ones(tuple(shape)), dtype=dtype, name=name or "ones")


def add_n(inputs, name=None):
    """The sum of a list of tensors."""
    total = inputs[0]
    for t in inputs[1:]:
        total = add(total, t)
    return identity(total, name=name) if name else total


sub = subtract
mul = multiply
div = divide

__version__ = "0.1.0"
