"""Checks, prints and Python callbacks: ``check_numerics``, ``Print``, ``print``,
``Assert`` and the ``assert_*`` family, ``py_func``/``numpy_function`` (TF1 names).

Checks and prints are ops of kind ``"call"`` (they need the session to move
values to the host for messages): an assertion is an operation that raises
``InvalidArgumentError`` with TF1's message when its condition fails at run
time, to be run directly or through ``control_dependencies``. The condition
itself is computed with the Array API on the session's backend.
"""

from __future__ import annotations

import builtins
import sys
import threading

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Operation, Tensor, get_default_graph
from gradflow.ops.casting import loses_kind, out_of_range
from gradflow.prim.registry import apply, convert_to_tensor, register


def _variant():
    """The dtype of nodes whose value is no array (``None`` here)."""
    from gradflow.ops.control_flow_ops import VARIANT

    return VARIANT


# -- check_numerics --------------------------------------------------------------------


def _check_numerics_impl(xp, x, message, tensor_name, where=""):
    if not bool(xp.all(xp.isfinite(x))):
        what = "NaN" if bool(xp.any(xp.isnan(x))) else "Inf"
        raise InvalidArgumentError(f"{message} : Tensor had {what} values (check_numerics "
                                   f"of '{tensor_name}'{where})")
    return x


def _check_numerics_infer(shapes, in_dtypes, message, tensor_name, where=""):
    if not in_dtypes[0].is_floating:
        raise TypeError(f"check_numerics takes a floating tensor, got {in_dtypes[0].name}")
    return shapes[0], in_dtypes[0]


def _check_numerics_grad(node, g):
    return [check_numerics(g, "Not a number (NaN) or infinity (Inf) values detected in "
                              "gradient. " + node.attrs["message"])]


register("check_numerics", _check_numerics_impl, _check_numerics_infer,
         grad=_check_numerics_grad, check=True)


def check_numerics(tensor, message, name=None):
    """``tensor``, but a run fails with ``InvalidArgumentError`` naming it and
    ``message`` if it holds a NaN or an infinity (TF1 ``tf.check_numerics``).

    The error also names the line that made the tensor (for a gradient, the line that
    asked for it and the forward op's line) and the line of this check.

    >>> y = gf.check_numerics(gf.log(x), "log of x")
    """
    x = convert_to_tensor(tensor)
    where = f", which was created at {x.source}; checked at {get_default_graph().source_line()}"
    return apply("check_numerics", [x], name=name or "CheckNumerics", message=str(message),
                 tensor_name=x.name, where=where)


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
    from gradflow.ops.control_flow_ops import is_control_flow_internal
    from gradflow.ops.state_ops import group, no_op

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


# -- formatting values for messages ----------------------------------------------------


def _scalar_text(value) -> str:
    """One element as TF1 prints it: ``1`` and ``0`` for bools, ``%g`` for floats."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def summarize_tf1(array, summarize=3) -> str:
    """TF1's summary of a value: the first ``summarize`` elements in nested
    brackets, ``...`` after them if there are more (``-1``: every element)."""
    array = np.asarray(array)
    limit = None if summarize is None or summarize < 0 else int(summarize)
    if array.ndim == 0:
        return _scalar_text(array)
    count = [0]

    def rows(a):
        parts, cut = [], False
        for i in range(a.shape[0]):
            if limit is not None and count[0] >= limit:
                cut = True
                break
            if a.ndim == 1:
                parts.append(_scalar_text(a[i]))
                count[0] += 1
            else:
                parts.append(rows(a[i]))
        return "[" + " ".join(parts) + ("..." if cut else "") + "]"

    return rows(array)


def _summarize_numpy(array, summarize) -> str:
    """tf.print's format: NumPy's, with ``summarize`` items at each end of an axis."""
    array = np.asarray(array)
    if summarize is None or summarize < 0:
        with np.printoptions(threshold=sys.maxsize):
            return np.array2string(array, separator=" ")
    with np.printoptions(threshold=2 * int(summarize), edgeitems=int(summarize)):
        return np.array2string(array, separator=" ")


def _tensors_and_template(items):
    """Split message items into tensors and a template of ``("text", str)`` and
    ``("tensor", position among the tensors)``."""
    tensors, template = [], []
    for item in items:
        if hasattr(item, "_as_graph_tensor"):
            item = item._as_graph_tensor()
        if isinstance(item, Tensor):
            if isinstance(item, Operation) or item.dtype is None or item.dtype.kind == "v":
                raise TypeError(f"'{item.name}' is an operation and has no value to show")
            template.append(("tensor", len(tensors)))
            tensors.append(item)
        elif isinstance(item, (str, bytes)):
            template.append(("text", item.decode() if isinstance(item, bytes) else item))
        elif isinstance(item, (np.ndarray, np.generic, int, float, bool)):
            template.append(("text", summarize_tf1(np.asarray(item), -1)))
        else:
            template.append(("text", str(item)))
    return tensors, builtins.tuple(template)


# -- Print (TF1) and print -----------------------------------------------------------


class _Counter:
    """How many times a print op printed (for ``first_n``), shared by its plans."""

    def __init__(self):
        self.count = 0
        self.lock = threading.Lock()

    def take(self, first_n) -> bool:
        with self.lock:
            if first_n is not None and 0 <= first_n <= self.count:
                return False
            self.count += 1
            return True


def _print_infer(shapes, in_dtypes, **attrs):
    return shapes[0], in_dtypes[0]


def _print_impl(session, node):
    attrs = node.attrs
    to_numpy = session.backend.to_numpy
    message, first_n, summarize = attrs["message"], attrs["first_n"], attrs["summarize"]
    counter = attrs["counter"]

    def run(value, *data):
        if counter.take(first_n):
            text = "".join(summarize_tf1(to_numpy(d), summarize) if d.ndim else
                           f"[{summarize_tf1(to_numpy(d), summarize)}]" for d in data)
            sys.stderr.write(f"{message}{text}\n")
            sys.stderr.flush()
        return value

    return run


register("Print", _print_impl, _print_infer,
         grad=lambda node, g: [g] + [None] * (len(node.inputs) - 1), kind="call")


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
    return apply("Print", [x, *data], name=name or "Print", message=message or "",
                 first_n=None if first_n is None else int(first_n),
                 summarize=3 if summarize is None else int(summarize), counter=_Counter())


# The streams a print names by a string (TensorFlow's names): the only ones a graph read
# from a file may use (``gradflow.graph_io`` refuses ``file://`` paths there).
PRINT_STREAMS = (None, "stderr", "stdout", "log(info)", "log(warning)", "log(error)")


def _stream_name(stream):
    """``stream`` by its name in ``PRINT_STREAMS`` where it is one of those, else as is."""
    from gradflow import tf_logging

    named = [(sys.stderr, "stderr"), (sys.stdout, "stdout")] + [
        (getattr(tf_logging, k), f"log({k})") for k in ("info", "warning", "error")]
    return next((n for s, n in named if stream is s), stream)


def _write(stream, text):
    if stream is None or (isinstance(stream, str) and stream in ("stderr", "stdout")):
        out = sys.stdout if stream == "stdout" else sys.stderr
        out.write(text)
        out.flush()
    elif isinstance(stream, str) and stream in PRINT_STREAMS:  # log(info) and the like
        from gradflow import tf_logging

        getattr(tf_logging, stream[4:-1])(text.rstrip("\n"))
    elif isinstance(stream, str):
        if not stream.startswith("file://"):
            raise ValueError(f"print: output_stream {stream!r} is not a file:// path")
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
    elif hasattr(stream, "write"):
        stream.write(text)
        if hasattr(stream, "flush"):
            stream.flush()
    else:  # a logging function such as logging.info
        stream(text.rstrip("\n"))


def _check_template(template, count, op):
    """A print's or an assertion's template (see ``_tensors_and_template``) is pairs of
    ``("text", str)`` and ``("tensor", position < count)``: a graph file may hold another."""
    if not isinstance(template, (tuple, list)):
        raise TypeError(f"{op}: template {template!r} is not a tuple")
    for item in template:
        kind, value = item if isinstance(item, (tuple, list)) and len(item) == 2 else (0, 0)
        if not (kind == "text" and isinstance(value, str)) and not (
                kind == "tensor" and type(value) is int and 0 <= value < count):
            raise ValueError(f"{op}: template item {item!r} is neither ('text', a string) "
                             f"nor ('tensor', a position below {count})")


def _print_op_infer(shapes, in_dtypes, template=(), **attrs):
    _check_template(template, len(shapes), "print")
    return None, _variant()


def _print_op_impl(session, node):
    attrs = node.attrs
    to_numpy = session.backend.to_numpy
    template, sep, end = attrs["template"], attrs["sep"], attrs["end"]
    summarize, stream = attrs["summarize"], attrs["output_stream"]

    def run(*values):
        parts = [text if kind == "text" else _summarize_numpy(to_numpy(values[text]), summarize)
                 for kind, text in template]
        _write(stream, sep.join(parts) + end)

    return run


register("print", _print_op_impl, _print_op_infer, grad=None, kind="call")


def print(*inputs, output_stream=None, summarize=3, sep=" ", end="\n", name=None):  # noqa: A001
    """An operation that prints ``inputs`` (tensors and Python values) when run
    (``tf.print``); run it, or make other ops depend on it with
    ``control_dependencies``. ``output_stream``: stderr by default, or a file
    object, a logging function, or ``"file://path"`` (a graph file may name only
    sys.stdout, sys.stderr and ``gf.logging``'s); ``summarize``: items shown at
    each end of an axis (``-1``: all)."""
    from gradflow.ops.state_ops import group

    tensors, template = _tensors_and_template(inputs)
    graph = tensors[0].graph if tensors else get_default_graph()
    node = apply("print", tensors, name=(name or "PrintV2") + "/print", graph=graph,
                 template=template, sep=sep, end=end, output_stream=_stream_name(output_stream),
                 summarize=None if summarize is None else int(summarize))
    return group(node, name=name or "PrintV2")


# -- assertions ------------------------------------------------------------------------

_COMPARISONS = {
    "equal": ("equal", "=="), "not_equal": ("not_equal", "!="), "less": ("less", "<"),
    "less_equal": ("less_equal", "<="), "greater": ("greater", ">"),
    "greater_equal": ("greater_equal", ">="),
}


def _holds(xp, check, values, params):
    if check == "all":
        return bool(xp.all(values[0]))
    if check == "rank":
        return values[0].ndim == params
    return bool(xp.all(getattr(xp, _COMPARISONS[check][0])(values[0], values[1])))


def _assert_impl(session, node):
    attrs = node.attrs
    xp, to_numpy = session.backend.xp, session.backend.to_numpy
    check, n_check, params = attrs["check"], attrs["n_check"], attrs["params"]
    template, summarize = attrs["template"], attrs["summarize"]

    def run(*values):
        if _holds(xp, check, values[:n_check], params):
            return None
        data = values[n_check:]
        parts = [text if kind == "text" else summarize_tf1(to_numpy(data[text]), summarize)
                 for kind, text in template]
        raise InvalidArgumentError("assertion failed: " + " ".join(f"[{p}]" for p in parts))

    return run


def _assert_infer(shapes, in_dtypes, check=None, n_check=1, template=(), **attrs):
    """An assertion's attributes hang together (a graph file may hold any)."""
    counts = {"all": 1, "rank": 1, **{k: 2 for k in _COMPARISONS}}
    if counts.get(check) != n_check or len(shapes) < n_check:
        raise ValueError(f"assert: the check {check!r} of {n_check!r} of its {len(shapes)} "
                         "inputs is not one gradflow makes")
    _check_template(template, len(shapes) - n_check, "assert")
    return None, _variant()


register("assert", _assert_impl, _assert_infer, grad=None, kind="call")


def _assert_op(check, checked, data, summarize, name, params=None):
    """An operation that raises when ``check`` over ``checked`` fails, showing ``data``."""
    from gradflow.ops.state_ops import group

    tensors, template = _tensors_and_template(data)
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
    symbol = _COMPARISONS[check][1]
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
    from gradflow.ops.state_ops import no_op

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
    from gradflow.ops.state_ops import no_op

    x = convert_to_tensor(tensor)
    want = dtypes.as_dtype(tf_type)
    if x.dtype is not want:
        prefix = f"{message} " if message else ""
        raise TypeError(f"{prefix}{x.name} must be of type {want.name}; got {x.dtype.name}")
    return no_op(name=name or "assert_type")


# -- py_func ---------------------------------------------------------------------------


def _py_func_infer(shapes, in_dtypes, func, Tout, single, stateful, info):  # noqa: N803
    return None, (Tout[0] if single else _variant())


def _py_func_impl(session, node):
    attrs = node.attrs
    func, Tout, single = attrs["func"], attrs["Tout"], attrs["single"]
    to_host, to_device = session.backend.host_value, session.backend.device_value
    label = getattr(func, "__name__", repr(func))

    def run(*values):
        arrays = [np.array(to_host(v), copy=True) for v in values]
        # a scalar string reaches func as bytes, as in TF1
        arrays = [a.item() if a.dtype.kind == "O" and a.ndim == 0 else a for a in arrays]
        result = func(*arrays)
        if single:
            results = [result]
        elif not Tout:
            return ()
        elif isinstance(result, (list, tuple)):
            results = list(result)
        else:
            results = [result]
        if len(results) != len(Tout):
            raise InvalidArgumentError(f"py_func '{node.name}': {label} returned "
                                       f"{len(results)} values, Tout names {len(Tout)}")
        out = []
        for k, (value, dtype) in enumerate(zip(results, Tout)):
            out.append(to_device(_py_result(value, dtype, f"py_func '{node.name}': result "
                                                          f"{k} of {label}")))
        return out[0] if single else out

    return run


def _py_result(value, dtype, what):
    """``value`` (a py_func's result) as a host array of ``dtype``, by the rule feeds
    follow (``ops.casting``): floats may round; a conversion across kinds that can change
    values (a fraction cut off) or an integer that would wrap is an error, never a
    silent cast."""
    try:
        if dtype is dtypes.string:
            return dtypes.bytes_array(value)
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise InvalidArgumentError(f"{what} cannot be converted to {dtype.name}: {err}") \
            from None
    np_dtype = dtype.as_numpy_dtype
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{what} is {array.dtype}, not a numeric array")
    if array.dtype != np_dtype:
        found = out_of_range(array, np_dtype)
        if loses_kind(value, array, np_dtype) or found is not None:
            detail = f": {found[0]} is outside its range" if found is not None else ""
            raise InvalidArgumentError(f"{what} ({array.dtype}) cannot be converted to "
                                       f"{dtype.name} without changing its values{detail}")
    return array.astype(np_dtype, copy=False)


register("py_func", _py_func_impl, _py_func_infer, grad=None, kind="call", takes_strings=True)


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """Run the Python function ``func`` on NumPy copies of ``inp``'s values (TF1
    ``tf.py_func``); its result(s) become tensors of ``Tout`` (a dtype, or a list of
    dtypes for a list of results). The static shape is unknown. There is no
    gradient, unless one is registered with ``RegisterGradient`` and mapped with
    ``gradient_override_map({"PyFunc": name})`` (single-result functions).
    """
    from gradflow.ops.control_flow_ops import _Construct, _pick
    from gradflow.ops.state_ops import group

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
    info = _Construct(name or "PyFunc")
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
    return [_pick(node, k, None, t) for k, t in enumerate(types)]


def numpy_function(func, inp, Tout, stateful=True, name=None):  # noqa: N803
    """``py_func`` under TF's newer name."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)
