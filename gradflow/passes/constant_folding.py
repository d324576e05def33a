"""Constant folding: values the plan can know before it runs become constants.

A computed node is evaluated once, when the plan is compiled, with NumPy
(``array_api_compat.numpy``, through the op's own forward), when it can give
only one value: every input is a constant (a constant leaf, or a node folded
before), or an input whose value the op never reads, only its static shape
(``OpDef.shape_only_inputs``: ``shape``, ``size``, ``rank``, ``zeros_like``,
``broadcast_like``...) and that shape is fully known, as it is after the
shapes fed have been specialized in. Its static shape must be fully known and
small (at most ``MAX_ELEMENTS`` elements, so that a plan holds no large
constants of its own) and its dtype known. The node is then replaced by a new
``constant`` plan node of exactly the node's dtype and shape, named after it.

A fed tensor is a leaf whose value comes from the feed, whatever its op, so it
is never folded nor read as a constant. A node whose evaluation raises stays
as it is: the run reports the error as it did. A fetched node stays too (its
value is known to the nodes after it, which may fold): a fetch gets a fresh
array of its own.

Folding must not drop what the run did before: the new constant runs after
the control inputs of the node and of the constants it was computed from. A
node read only for its shape need not run any more, but what it needed for
its effects still does: the new constant also runs after the effect sources
upstream of that node (``_is_effect_source``: a placeholder that must be fed,
a random draw, a call, an assignment, a node with control inputs, a check
such as ``check_numerics``: ``OpDef.check``). Plain computations upstream that are needed for
nothing else are no longer run, as TF1's shape folding does: an op that might
fail on a bad value but checks nothing (a gather out of range) then does not.
A static shape that an ``ensure_shape`` asserts (and the run checks) is not
trusted, nor any shape computed from one.
"""

from __future__ import annotations

import math

import array_api_compat.numpy as np_xp
import numpy as np

from gradflow.graph import TensorShape
from gradflow.passes.ir import PlanNode, specialized_shape
from gradflow.prim.registry import REGISTRY, HostValue

MAX_ELEMENTS = 4096

# ops whose static shape is a claim the run checks
_CLAIMS = frozenset({"ensure_shape"})
_NONE = frozenset()


def fold_constants(graph) -> None:
    """Replace the computed nodes of ``graph`` (a PlanGraph) that have one possible value
    by constants (see the module docstring)."""
    fetched = set(graph.outputs)
    values = {}  # node -> its value (a NumPy array), for constants and folded nodes
    after = {}  # node -> what a constant standing for it must run after
    claimed = set()  # nodes whose static shape rests on an ensure_shape claim
    sources = {}  # node -> the effect sources it needs (see _is_effect_source)
    mapping, made = {}, []
    refine = bool(getattr(graph, "feed_shapes", None))  # a plan specialized to fed shapes
    for node in graph.nodes():
        sources[node] = _sources(node, graph, sources)
        if node in graph.fed:  # its value, checked against its static shape, is fed
            continue
        if node.opdef.name in _CLAIMS or any(i in claimed for i in node.inputs):
            claimed.add(node)
        if node.opdef.kind == "constant":
            value = getattr(node.attrs.get("value"), "array", None)
            if isinstance(value, np.ndarray):
                values[node] = value
                after[node] = tuple(node.control_inputs)
            continue
        if refine and isinstance(node, PlanNode) and node.opdef.kind in ("compute", "random") \
                and node.shape is not None and not node.shape.is_fully_defined():
            node.shape = _refined_shape(node, graph, values)
        folded = _fold(node, graph, values, after, claimed, sources)
        if folded is None:
            continue
        value, control = folded
        value = HostValue(value)  # a read-only copy
        values[node] = value.array
        after[node] = control
        if node in fetched:
            continue
        constant = PlanNode(REGISTRY["constant"], (), {"value": value, "dtype": node.dtype},
                            value.array.shape, node.dtype, node.name,
                            node.source, control, origin=None, graph=node.graph,
                            index=node.index)
        mapping[node] = constant
        made.append(constant)
    graph.replace(mapping, extra=made)


def _refined_shape(node, graph, values):
    """The static shape of ``node`` re-inferred now that the inputs before it may have
    been folded (a folded ``batch_zeros`` knows its batch size, and so does what reads
    it), or its own shape where nothing more is known."""
    known = specialized_shape(node, getattr(graph, "feed_shapes", {}))
    rule = node.opdef.value_shape
    if rule is None or known is None or known.is_fully_defined() \
            or not any(i in values for i in node.inputs):
        return known
    try:
        shape = rule([values.get(i) for i in node.inputs], node.attrs)
    except Exception:  # noqa: BLE001 - the run reports a bad value with its own error
        return known
    if shape is None or len(shape) != len(known) or any(
            k is not None and s is not None and k != s for k, s in zip(known, shape)):
        return known
    shape = [k if s is None else s for k, s in zip(known, shape)]
    source = _shape_of(node.inputs[0], graph) if node.inputs else None
    if node.opdef.shape_noop and shape.count(None) == 1 and source is not None \
            and source.is_fully_defined():  # a reshape's -1: what the other sizes leave
        rest = math.prod(d for d in shape if d is not None)
        if rest and math.prod(source) % rest == 0:
            shape[shape.index(None)] = math.prod(source) // rest
    return TensorShape(tuple(shape))


def _fold(node, graph, values, after, claimed, sources):
    """``(value, control inputs)`` of ``node`` computed now, or None where it cannot be."""
    if not isinstance(node, PlanNode) or node.opdef.kind != "compute" or node.dtype is None:
        return None
    shape = node.shape
    if shape is None or not shape.is_fully_defined() or math.prod(shape) > MAX_ELEMENTS:
        return None
    shape_only = node.opdef.shape_only_inputs
    args, control = [], list(node.control_inputs)
    for position, inp in enumerate(node.inputs):
        if inp in values:
            args.append(values[inp])
            control.extend(after[inp])
        elif position in shape_only and _trusted_shape(inp, graph, claimed, node.opdef.name):
            args.append(_stand_in(inp, graph))
            control.extend(sorted(sources[inp], key=lambda n: n.index))
        else:
            return None
    value = _evaluate(node, args)
    if value is None:
        return None
    return value, tuple(dict.fromkeys(control))


def _is_effect_source(node, graph):
    """Whether running ``node`` does something beyond computing a value: raise for a
    missing feed or a failed check, draw random numbers, call, assign, or run after
    control inputs. A fed tensor, a variable and a constant do not."""
    if node in graph.fed:
        return False
    kind = node.opdef.kind
    if not isinstance(node, PlanNode):
        return kind not in ("variable", "constant")
    if node.control_inputs or kind not in ("compute", "constant"):
        return True
    return node.opdef.check


def _sources(node, graph, sources):
    """The effect sources that running ``node`` runs: itself if it is one, else those of
    its inputs (already in ``sources``)."""
    if _is_effect_source(node, graph):
        return frozenset((node,))
    if node in graph.fed:
        return _NONE
    found = _NONE
    for inp in node.inputs:
        more = sources.get(inp, _NONE)
        if more and not more <= found:
            found = more if not found else found | more
    return found


def _shape_of(node, graph):
    """The static shape of ``node``; for a fed tensor the shape fed, where the plan graph
    records the shapes fed (``feed_shapes``: {tensor: shape}), else its own."""
    fed_shapes = getattr(graph, "feed_shapes", None)
    if fed_shapes and node in graph.fed and fed_shapes.get(node) is not None:
        return TensorShape(fed_shapes[node])
    return node.shape


def _trusted_shape(node, graph, claimed, op):
    """Whether the static shape of ``node`` is what its value will have (fully known,
    or of known rank for ``rank``), with no unchecked claim behind it."""
    shape = _shape_of(node, graph)
    if shape is None or node in claimed:
        return False
    return op == "rank" or shape.is_fully_defined()


def _stand_in(node, graph):
    """An array with the static shape and dtype of ``node``, for an op that reads only
    the shape (``rank`` reads only the number of axes)."""
    dtype = node.dtype.as_numpy_dtype if node.dtype is not None else np.float32
    shape = tuple(1 if d is None else int(d) for d in _shape_of(node, graph))
    return np.broadcast_to(np.zeros((), dtype), shape)


def _evaluate(node, args):
    """The value of ``node`` from the input arrays ``args``, of exactly its dtype and
    static shape, or None where it raises or gives something else."""
    try:
        with np.errstate(all="ignore"):
            result = node.opdef.bind(np_xp, node.attrs)(*args)
        if not isinstance(result, (np.ndarray, np.generic)):
            return None
        result = np.asarray(result)
        dtype = np.dtype(node.dtype.as_numpy_dtype)
    except Exception:  # noqa: BLE001 - the run reports it as it would have
        return None
    if result.dtype.kind not in "biuf" or result.shape != tuple(int(d) for d in node.shape):
        return None
    if result.dtype != dtype:
        result = result.astype(dtype)
    return result
