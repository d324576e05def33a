"""The primitives of checks and prints: ``check_numerics``, ``Print`` (TF1's, which passes
its input through), ``print`` (``tf.print``, an operation) and ``assert`` (every
``Assert`` and ``assert_*``), and the formatting of values for their messages.

``check_numerics`` is a computed op; the others are ops of kind ``"call"`` (they need
the session to move values to the host for messages). An assertion raises
``InvalidArgumentError`` with TF1's message when its condition fails at run time; the
condition itself is computed with the Array API on the session's backend.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from gradflow import tf_logging
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Operation, Tensor, get_default_graph
from gradflow.prim.construct import VARIANT
from gradflow.prim.registry import apply, register

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


def check_numerics(x, message, name=None):
    """A ``check_numerics`` node of the tensor ``x``: its error names ``x``, the line that
    made it and the line of this check."""
    where = f", which was created at {x.source}; checked at {get_default_graph().source_line()}"
    return apply("check_numerics", [x], name=name or "CheckNumerics", message=str(message),
                 tensor_name=x.name, where=where)


def _check_numerics_grad(node, g):
    return [check_numerics(g, "Not a number (NaN) or infinity (Inf) values detected in "
                              "gradient. " + node.attrs["message"])]


register("check_numerics", _check_numerics_impl, _check_numerics_infer,
         grad=_check_numerics_grad, check=True)


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


def tensors_and_template(items):
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
    return tensors, tuple(template)


def _check_template(template, count, op):
    """A print's or an assertion's template (see ``tensors_and_template``) is pairs of
    ``("text", str)`` and ``("tensor", position < count)``: a graph file may hold another."""
    if not isinstance(template, (tuple, list)):
        raise TypeError(f"{op}: template {template!r} is not a tuple")
    for item in template:
        kind, value = item if isinstance(item, (tuple, list)) and len(item) == 2 else (0, 0)
        if not (kind == "text" and isinstance(value, str)) and not (
                kind == "tensor" and type(value) is int and 0 <= value < count):
            raise ValueError(f"{op}: template item {item!r} is neither ('text', a string) "
                             f"nor ('tensor', a position below {count})")


# -- Print (TF1): its input, printing data on the way ----------------------------------


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


def _print_impl(run_state, node):
    attrs = node.attrs
    to_numpy = run_state.backend.to_numpy
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


def print_node(x, data, message, first_n, summarize, name):
    """A ``Print`` node: ``x``, printing ``message`` and ``data`` (tensors) when computed,
    the first ``first_n`` times (None: always), ``summarize`` elements of each."""
    return apply("Print", [x, *data], name=name, message=message, first_n=first_n,
                 summarize=summarize, counter=_Counter())


# -- print (tf.print): an operation that writes to a stream ----------------------------

# The streams a print names by a string (TensorFlow's names): the only ones a graph read
# from a file may use (``gradflow.graph_io`` refuses ``file://`` paths there).
PRINT_STREAMS = (None, "stderr", "stdout", "log(info)", "log(warning)", "log(error)")


def stream_name(stream):
    """``stream`` by its name in ``PRINT_STREAMS`` where it is one of those, else as is."""
    named = [(sys.stderr, "stderr"), (sys.stdout, "stdout")] + [
        (getattr(tf_logging, k), f"log({k})") for k in ("info", "warning", "error")]
    return next((n for s, n in named if stream is s), stream)


def _write(stream, text):
    if stream is None or (isinstance(stream, str) and stream in ("stderr", "stdout")):
        out = sys.stdout if stream == "stdout" else sys.stderr
        out.write(text)
        out.flush()
    elif isinstance(stream, str) and stream in PRINT_STREAMS:  # log(info) and the like
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


def _print_op_infer(shapes, in_dtypes, template=(), **attrs):
    _check_template(template, len(shapes), "print")
    return None, VARIANT


def _print_op_impl(run_state, node):
    attrs = node.attrs
    to_numpy = run_state.backend.to_numpy
    template, sep, end = attrs["template"], attrs["sep"], attrs["end"]
    summarize, stream = attrs["summarize"], attrs["output_stream"]

    def run(*values):
        parts = [text if kind == "text" else _summarize_numpy(to_numpy(values[text]), summarize)
                 for kind, text in template]
        _write(stream, sep.join(parts) + end)

    return run


register("print", _print_op_impl, _print_op_infer, grad=None, kind="call")


# -- assertions ------------------------------------------------------------------------

COMPARISONS = {
    "equal": ("equal", "=="), "not_equal": ("not_equal", "!="), "less": ("less", "<"),
    "less_equal": ("less_equal", "<="), "greater": ("greater", ">"),
    "greater_equal": ("greater_equal", ">="),
}


def _holds(xp, check, values, params):
    if check == "all":
        return bool(xp.all(values[0]))
    if check == "rank":
        return values[0].ndim == params
    return bool(xp.all(getattr(xp, COMPARISONS[check][0])(values[0], values[1])))


def _assert_impl(run_state, node):
    attrs = node.attrs
    xp, to_numpy = run_state.backend.xp, run_state.backend.to_numpy
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
    counts = {"all": 1, "rank": 1, **{k: 2 for k in COMPARISONS}}
    if counts.get(check) != n_check or len(shapes) < n_check:
        raise ValueError(f"assert: the check {check!r} of {n_check!r} of its {len(shapes)} "
                         "inputs is not one gradflow makes")
    _check_template(template, len(shapes) - n_check, "assert")
    return None, VARIANT


register("assert", _assert_impl, _assert_infer, grad=None, kind="call")
