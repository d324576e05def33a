"""Checks, prints and Python callbacks: ``check_numerics``, ``Print``, ``print``,
``Assert`` and the ``assert_*`` family, ``py_func``/``numpy_function`` (TF1 names).

Their primitives are in ``gradflow.prim.debug`` and ``gradflow.prim.py_func``: checks
and prints are ops of kind ``"call"`` (they need the session to move values to the host
for messages); an assertion is an operation that raises ``InvalidArgumentError`` with
TF1's message when its condition fails at run time, to be run directly or through
``control_dependencies``. The condition itself is computed with the Array API on the
session's backend.
"""

from __future__ import annotations

import builtins

from gradflow import dtypes
from gradflow.graph import Operation, Tensor, get_default_graph
from gradflow.ops.state_ops import group, no_op
from gradflow.prim import debug
from gradflow.prim import py_func as _py_func_primitive  # noqa: F401 - registers "py_func"
from gradflow.prim.construct import Construct, is_control_flow_internal, pick
from gradflow.prim.debug import (  # noqa: F401 - names others import from this module
    PRINT_STREAMS,
    summarize_tf1,
)
from gradflow.prim.registry import apply, convert_to_tensor

# -- check_numerics --------------------------------------------------------------------


def check_numerics(tensor, message, name=None):
    """``tensor``, but a run fails with ``InvalidArgumentError`` naming it and
    ``message`` if it holds a NaN or an infinity (TF1 ``tf.check_numerics``).

    The error also names the line that made the tensor (for a gradient, the line that
    asked for it and the forward op's line) and the line of this check.

    >>> y = gf.check_numerics(gf.log(x), "log of x")
    """
    return debug.check_numerics(convert_to_tensor(tensor), message, name=name)


def verify_tensor_all_finite(t, msg, name=None):
    """TF1 ``tf.verify_tensor_all_finite``: ``check_numerics(t, msg)``."""
    return check_numerics(t, msg, name=name or "VerifyFinite")


def add_check_numerics_ops():
    """An operation that checks every floating tensor of the default graph for NaN
    and infinity (TF1 ``tf.add_check_numerics_ops``): run it with the other fetches.

    Placeholders (which a run may not feed), assignments, and the nodes inside
    ``cond`` branches and ``while_loop`` bodies (which run only there) are left
    out; what they compute is checked through the tensors that use it.
    """
    graph = get_default_graph()
    checks = []
    with graph.name_scope("check_numerics"):
        for node in list(graph.nodes):
            if isinstance(node, Operation) or node.dtype is None or \
                    not node.dtype.is_floating or \
                    node.opdef.kind in ("placeholder", "assign", "group") or \
                    node.opdef.name == "check_numerics" or is_control_flow_internal(node):
                continue
            checks.append(check_numerics(node, f"{node.name}:0"))
    if not checks:
        return no_op(name="check_numerics")
    return group(*checks, name="check_numerics")


# -- Print (TF1) and print -----------------------------------------------------------


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """``input_``, printing ``message`` and the values of ``data`` to stderr each time it
    is computed (TF1 ``tf.Print``). ``first_n`` limits how many times it prints,
    ``summarize`` how many elements of each tensor it shows (default 3)."""
    x = convert_to_tensor(input_)
    if isinstance(x, Operation):
        raise TypeError(f"Print: '{x.name}' is an operation, not a tensor")
    data = [convert_to_tensor(d) for d in (data if isinstance(data, (list, tuple)) else [data])]
    for d in data:
        if isinstance(d, Operation):
            raise TypeError(f"Print: '{d.name}' in data is an operation, not a tensor")
    return debug.print_node(x, data, message or "", None if first_n is None else int(first_n),
                            3 if summarize is None else int(summarize), name or "Print")


def print(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):  # noqa: A001
    """An operation that prints ``inputs`` (tensors and Python values) when run
    (``tf.print``); run it, or make other ops depend on it with
    ``control_dependencies``. ``output_stream``: stderr by default, or a file
    object, a logging function, or ``"file://path"`` (a graph file may name only
    sys.stdout, sys.stderr and ``gf.logging``'s); ``summarize``: items shown at
    each end of an axis (``-1``: all)."""
    tensors, template = debug.tensors_and_template(inputs)
    graph = tensors[0].graph if tensors else get_default_graph()
    node = apply("print", tensors, name=(name or "PrintV2") + "/print", graph=graph,
                 template=template, sep=sep, end=end,
                 output_stream=debug.stream_name(output_stream),
                 summarize=None if summarize is None else int(summarize))
    return group(node, name=name or "PrintV2")


# -- assertions ------------------------------------------------------------------------


def _assert_op(check, checked, data, summarize, name, params=None):
    """An operation that raises when ``check`` over ``checked`` fails, showing ``data``."""
    tensors, template = debug.tensors_and_template(data)
    graph = checked[0].graph
    node = apply("assert", [*checked, *tensors], name=name + "/Assert", graph=graph,
                 check=check, n_check=len(checked), params=params, template=template,
                 summarize=3 if summarize is None else int(summarize))
    return group(node, name=name)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802
    """An operation that raises ``InvalidArgumentError`` showing ``data`` (tensors and
    strings) when the bool tensor ``condition`` is not all true at run time (TF1)."""
    c = convert_to_tensor(condition)
    if isinstance(c, Operation) or not c.dtype.is_bool:
        raise TypeError(f"Assert: the condition must be a bool tensor, got '{c.name}'")
    data = data if isinstance(data, (list, tuple)) else [data]
    return _assert_op("all", [c], data, summarize, name or "Assert")


def _pair(x, y, what):
    if not isinstance(x, Tensor) and not hasattr(x, "_as_graph_tensor") and \
            (isinstance(y, Tensor) or hasattr(y, "_as_graph_tensor")):
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, like=y)
    else:
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, like=x)
    if x.dtype is not y.dtype:
        raise TypeError(f"{what}: '{x.name}' is {x.dtype.name} but '{y.name}' is "
                        f"{y.dtype.name}; cast one of them")
    return x, y


def _make_compare(check, default_name):
    symbol = debug.COMPARISONS[check][1]
    condition = ("Condition x != y did not hold for every single element:"
                 if check == "not_equal" else
                 f"Condition x {symbol} y did not hold element-wise:")

    def assert_compare(x, y, data=None, summarize=None, message=None, name=None):
        x, y = _pair(x, y, default_name)
        if data is None:
            data = [condition, f"x ({x.name}:0) = ", x, f"y ({y.name}:0) = ", y]
        data = list(data)
        if message is not None:
            data = [message] + data
        return _assert_op(check, [x, y], data, summarize, name or default_name)

    assert_compare.__name__ = default_name
    assert_compare.__doc__ = (f"An operation that raises ``InvalidArgumentError`` at run "
                              f"time unless ``x {symbol} y`` holds for every element "
                              f"(TF1 ``tf.{default_name}``).")
    return assert_compare


assert_equal = _make_compare("equal", "assert_equal")
assert_none_equal = _make_compare("not_equal", "assert_none_equal")
assert_less = _make_compare("less", "assert_less")
assert_less_equal = _make_compare("less_equal", "assert_less_equal")
assert_greater = _make_compare("greater", "assert_greater")
assert_greater_equal = _make_compare("greater_equal", "assert_greater_equal")


def _sign_check(check, zero_first, condition, default_name):
    def assert_sign(x, data=None, summarize=None, message=None, name=None):
        x = convert_to_tensor(x)
        zero = convert_to_tensor(0, like=x)
        if data is None:
            data = [condition, f"x ({x.name}:0) = ", x]
        data = list(data)
        if message is not None:
            data = [message] + data
        pair = [zero, x] if zero_first else [x, zero]
        return _assert_op(check, pair, data, summarize, name or default_name)

    assert_sign.__name__ = default_name
    assert_sign.__doc__ = (f"An operation that raises ``InvalidArgumentError`` at run time "
                           f"unless every element of ``x`` is {default_name[7:]} "
                           f"(TF1 ``tf.{default_name}``).")
    return assert_sign


assert_positive = _sign_check("less", True, "Condition x > 0 did not hold element-wise:",
                              "assert_positive")
assert_negative = _sign_check("less", False, "Condition x < 0 did not hold element-wise:",
                              "assert_negative")
assert_non_negative = _sign_check("less_equal", True,
                                  "Condition x >= 0 did not hold element-wise:",
                                  "assert_non_negative")
assert_non_positive = _sign_check("less_equal", False,
                                  "Condition x <= 0 did not hold element-wise:",
                                  "assert_non_positive")


def assert_rank(x, rank, message=None, name=None, data=None, summarize=None):
    """Check that ``x`` has rank ``rank`` (TF1 ``tf.assert_rank``): at once when the
    static rank is known (``ValueError``; the result is then a no-op), else at run
    time."""
    x = convert_to_tensor(x)
    rank = int(rank)
    prefix = f"{message} " if message else ""
    if x.shape is not None:
        if len(x.shape) != rank:
            raise ValueError(f"{prefix}Tensor {x.name} must have rank {rank}. Received rank "
                             f"{len(x.shape)}, shape {tuple(x.shape)}")
        return no_op(name=name or "assert_rank")
    if data is None:
        data = [f"{prefix}Tensor {x.name} must have rank {rank}."]
    return _assert_op("rank", [x], list(data), summarize, name or "assert_rank", params=rank)


def assert_type(tensor, tf_type, message=None, name=None):
    """Check statically that ``tensor`` has dtype ``tf_type`` (TF1 ``tf.assert_type``):
    ``TypeError`` if not; returns a no-op."""
    x = convert_to_tensor(tensor)
    want = dtypes.as_dtype(tf_type)
    if x.dtype is not want:
        prefix = f"{message} " if message else ""
        raise TypeError(f"{prefix}{x.name} must be of type {want.name}; got {x.dtype.name}")
    return no_op(name=name or "assert_type")


# -- py_func ---------------------------------------------------------------------------


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """Run the Python function ``func`` on NumPy copies of ``inp``'s values (TF1
    ``tf.py_func``); its result(s) become tensors of ``Tout`` (a dtype, or a list of
    dtypes for a list of results). The static shape is unknown. There is no
    gradient, unless one is registered with ``RegisterGradient`` and mapped with
    ``gradient_override_map({"PyFunc": name})`` (single-result functions).
    """
    single = not isinstance(Tout, (list, tuple))
    types = builtins.tuple(dtypes.as_dtype(t) for t in ([Tout] if single else Tout))
    items = inp if isinstance(inp, (list, tuple)) else [inp]
    tensors = []
    for item in items:
        t = convert_to_tensor(item)
        if isinstance(t, Operation):
            raise TypeError(f"py_func: '{t.name}' is an operation, not a tensor")
        tensors.append(t)
    graph = tensors[0].graph if tensors else get_default_graph()
    info = Construct(name or "PyFunc")
    node = apply("py_func", tensors, name=name or "PyFunc", graph=graph, func=func,
                 Tout=types, single=single, stateful=bool(stateful), info=info)
    info.node = node
    override = graph._gradient_overrides.get("PyFunc" if stateful else "PyFuncStateless")
    if node.gradient_override is None and override is not None:
        node.gradient_override = override
    if single:
        return node
    if not types:
        return group(node, name=(name or "PyFunc") + "/done")
    return [pick(node, k, None, t) for k, t in enumerate(types)]


def numpy_function(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """``py_func`` under TF's newer name."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)
