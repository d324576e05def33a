"""What a file's node attributes may hold, checked before an op's builder sees them.

gradflow's ops name their attributes consistently (``dtype`` is always a dtype,
``transpose_a`` a bool, ``shape`` a tuple of sizes...), so the kind of value an
attribute takes is known from its name for every op; a file that gives another kind
(``"dtype": 3``, ``"value": null`` on a constant, ``"axis": "1"``) is refused here with
the node and the attribute named. Attributes not listed are left to the op's shape
rule, whose errors the importer reports the same way.

``print`` may write only to the standard streams or the log (``PRINT_STREAMS``): a
graph file never chooses a file for a session to write to.
"""

from __future__ import annotations

from gradflow.dtypes import DType
from gradflow.ops.debug_ops import PRINT_STREAMS
from gradflow.prim.registry import HostValue


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_dims(v):
    """A tuple of sizes or axes: ints, ``None`` (unknown), or such tuples (paddings)."""
    return isinstance(v, (tuple, list)) and all(
        d is None or _is_int(d) or (isinstance(d, (tuple, list)) and all(map(_is_int, d)))
        for d in v)


_KINDS = {
    "a dtype": (lambda v: v is None or isinstance(v, DType),
                ("dtype", "out_type", "out_idx")),
    "a bool": (lambda v: isinstance(v, bool),
               ("transpose_a", "transpose_b", "keepdims", "copy", "descending", "exclusive",
                "reverse", "squeeze", "validate", "weighted", "single", "ignore_longer",
                "weak")),
    "an int or null": (lambda v: v is None or _is_int(v),
                       ("count", "depth", "index", "k", "num", "num_partitions", "start",
                        "n_check", "root", "threshold", "first_n", "summarize", "rows",
                        "static_k", "op_seed", "graph_seed")),
    "an axis or a tuple of axes": (lambda v: v is None or _is_int(v) or _is_dims(v),
                                   ("axis",)),
    "a tuple of sizes or null": (lambda v: v is None or _is_dims(v),
                                 ("shape", "output_shape", "reps", "sizes", "strides", "ksize",
                                  "perm", "tail", "axes", "axes_a", "axes_b", "paddings")),
    "a string or null": (lambda v: v is None or isinstance(v, str),
                         ("padding", "mode", "reduce", "message", "tensor_name", "label",
                          "check", "kind", "target", "tensor", "what", "where", "dist",
                          "sep", "end")),
    "a number or null": (lambda v: v is None or _is_number(v),
                         ("alpha", "beta", "scale", "forget_bias", "mean", "stddev", "minval",
                          "maxval")),
}
_RULES = {name: (what, test) for what, (test, names) in _KINDS.items() for name in names}

# (op, attribute): a rule of its own, where the op needs more than the name's kind
_OP_RULES = {
    ("constant", "value"): ("an array", lambda v: isinstance(v, HostValue)),
    ("reshape", "shape"): ("a tuple of sizes", _is_dims),
    ("fill", "shape"): ("a tuple of sizes", _is_dims),
    ("print", "output_stream"): (f"one of {sorted(s for s in PRINT_STREAMS if s)} or null "
                                 "(a graph read from a file never writes to a file)",
                                 lambda v: v is None or (isinstance(v, str)
                                                         and v in PRINT_STREAMS)),
}


def attr_problem(op, key, value):
    """What is wrong with attribute ``key`` = ``value`` (decoded; a node reference as its
    name) of a node of ``op``, or ``None``."""
    what, test = _OP_RULES.get((op, key)) or _RULES.get(key) or (None, None)
    if test is None or test(value):
        return None
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return f"has the attribute {key!r} = {shown}, which must be {what}"
