"""Compiling a run into a plan: prune, order, bind, free, and generate code.

A plan is compiled once per (fetches, fed tensors) and cached on the Session.
Its steps become the body of one generated Python function in which every
value is a local variable and every op a direct call of the backend's array
function, so a run pays nothing between array calls but the call itself:
no dict lookups, no per-step loop, no dispatch. A value is deleted right
after its last use, and the assignments of the run are written to the
variable store at the very end. Where the backend allows it (NumPy ufuncs),
an elementwise op writes its result into an input buffer that dies with it,
so chains such as an optimizer's update allocate nothing new.
"""

from __future__ import annotations

import itertools
import linecache

import numpy as np

from gradflow.errors import InvalidArgumentError
from gradflow.graph import Operation
from gradflow.ops.state_ops import draw_host

_plan_ids = itertools.count()


class Plan:
    """A compiled run: ``fn(feeds, store) -> tuple of fetched values``."""

    def __init__(self, fn, fed, fetches, variables, feed_specs, line_nodes, filename):
        self.fn = fn
        self.fed = fed  # tensors fed, in the order ``fn`` takes them
        self.fetches = fetches
        self.variables = variables  # variables the run reads
        self.feed_specs = feed_specs  # (tensor, numpy dtype, static shape) per feed
        self.line_nodes = line_nodes  # generated line number -> node, for errors
        self.filename = filename
        self.initialized = False  # set once the session has checked `variables`


def topological_order(fetches, fed):
    """Nodes needed to compute ``fetches`` when ``fed`` are given, inputs first."""
    order, seen = [], set()
    for root in fetches:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            if node not in fed:
                stack.extend((i, False) for i in reversed(node.inputs) if i not in seen)
    return order


def _missing_feed(node, fetches):
    shape = tuple(node.shape) if node.shape is not None else "any"
    return InvalidArgumentError(
        f"you must feed a value for placeholder '{node.name}' (shape {shape}, dtype "
        f"{node.dtype.name}), needed by fetch(es) {', '.join(repr(f.name) for f in fetches)}; "
        f"the placeholder was created at {node.source}")


def _bind(backend, node):
    override = backend.overrides.get(node.opdef.name)
    if override:
        return override(backend.xp, **node.attrs)
    return node.opdef.bind(backend.xp, node.attrs)


def _buffer_reuse(order, fns, backend):
    """``(takes_out, donors)``: the ops that can write into a dead input (``out=``), and
    the values such an op may overwrite once it is their last reader.

    An op takes ``out=`` when the backend says its function can (NumPy ufuncs)
    and its result has a fully known shape of rank >= 1, so its result is
    always a fresh array. Such a result is a donor when every op reading it
    takes ``out=`` too: then no view of it (a reshape, a slice) can outlive it.
    """
    takes_out = {n for n, fn in fns.items() if backend.accepts_out(fn)
                 and n.shape is not None and len(n.shape) > 0 and None not in n.shape}
    readers = {}
    for node in order:
        for inp in node.inputs:
            readers.setdefault(inp, []).append(node)
    donors = {n for n in takes_out if all(r in takes_out for r in readers.get(n, ()))}
    return takes_out, donors


def compile_plan(session, fetches, fed) -> Plan:
    """Build the plan that computes ``fetches`` with the tensors ``fed`` given."""
    fed_set = set(fed)
    order = topological_order(fetches, fed_set)
    backend = session.backend
    env = {}
    lines = []
    line_nodes = {}
    names = {}
    variables = []
    writes = []
    feed_index = {t: i for i, t in enumerate(fed)}

    last_use = {}
    for step, node in enumerate(order):
        if node not in fed_set:
            for inp in node.inputs:
                last_use[inp] = step
    keep = set(fetches)
    fns = {node: _bind(backend, node) for node in order
           if node not in fed_set and node.opdef.kind == "compute"}
    takes_out, donors = _buffer_reuse(order, fns, backend)

    for step, node in enumerate(order):
        var = f"v{step}"
        names[node] = var
        kind = node.opdef.kind
        if node in fed_set:
            line = f"{var} = feeds[{feed_index[node]}]"
        elif kind == "placeholder":
            raise _missing_feed(node, fetches)
        elif kind == "variable":
            env[f"K{step}"] = node
            variables.append(node)
            line = f"{var} = store[K{step}]"
        elif kind == "constant":
            env[f"C{step}"] = session.constant_value(node)
            line = f"{var} = C{step}"
        elif kind == "random":
            env[f"R{step}"] = _random_source(session, node)
            line = f"{var} = R{step}({', '.join(names[i] for i in node.inputs)})"
        elif kind == "group":
            line = "pass"
            names[node] = "None"
        elif kind == "assign":
            source = node.inputs[0]
            value = names[source]
            if source in fed_set:  # the store must own its arrays, not the user's
                env["copy"] = backend.copy
                value = f"copy({value})"
            line = f"{var} = {value}"
            writes.append((node.attrs["var"], var))
            keep.add(node)
        else:
            env[f"F{step}"] = fns[node]
            args = ", ".join(names[i] for i in node.inputs)
            if node in takes_out:
                donor = next((i for i in node.inputs if i in donors and last_use[i] == step
                              and i not in keep and i not in fed_set and i.dtype == node.dtype
                              and tuple(i.shape) == tuple(node.shape)), None)
                if donor is not None:  # write the result into a buffer that dies here
                    args += f", out={names[donor]}"
            line = f"{var} = F{step}({args})"
        line_nodes[len(lines) + 2] = node
        lines.append(line)
        dead = [names[i] for i in set(node.inputs)
                if last_use.get(i) == step and i not in keep and names[i] != "None"]
        if dead:
            lines.append(f"del {', '.join(dead)}")
    for k, (var_node, value) in enumerate(writes):
        env[f"W{k}"] = var_node
        lines.append(f"store[W{k}] = {value}")
    outputs = ", ".join(names[f] for f in fetches)
    lines.append(f"return ({outputs},)")
    filename = f"<gradflow-plan-{next(_plan_ids)}>"
    source = "def run(feeds, store):\n" + "".join(f"    {line}\n" for line in lines)
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(code, env)
    feed_specs = [(t, t.dtype.as_numpy_dtype, t.shape) for t in fed]
    return Plan(env["run"], tuple(fed), tuple(fetches), variables, feed_specs,
                line_nodes, filename)


def _random_source(session, node):
    rng = session.host_rng(node)
    attrs = node.attrs
    asarray = session.backend.asarray
    if node.inputs:  # the shape comes from the input's value at run time
        return lambda like: asarray(draw_host(rng, attrs, like.shape))
    return lambda: asarray(draw_host(rng, attrs))


def node_at_failure(plan, tb):
    """The node whose step raised, from a traceback through the plan's code."""
    node = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == plan.filename:
            node = plan.line_nodes.get(tb.tb_lineno)
        tb = tb.tb_next
    return node


def check_feed(tensor, value, np_dtype, shape):
    """``value`` as a NumPy array of the placeholder's dtype and a fitting shape."""
    array = _as_array(tensor, value)
    if array.dtype != np_dtype:
        if not np.can_cast(array.dtype, np_dtype, casting="same_kind"):
            raise InvalidArgumentError(
                f"cannot feed a value of dtype {array.dtype} to '{tensor.name}', which is "
                f"{tensor.dtype.name}: the conversion would lose information; "
                "cast the value first")
        array = array.astype(np_dtype)
    if shape is not None and not _fits(array.shape, shape):
        raise InvalidArgumentError(
            f"cannot feed a value of shape {array.shape} to '{tensor.name}', which has "
            f"shape {tuple(shape)} (None = any size)")
    return array


def _as_array(tensor, value):
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return value
    try:
        array = np.asarray(value)
    except Exception as err:
        raise InvalidArgumentError(f"cannot feed {type(value).__name__} to '{tensor.name}': "
                                   f"{err}") from None
    if array.dtype.kind not in "biuf":
        raise InvalidArgumentError(
            f"cannot feed a value of dtype {array.dtype} to '{tensor.name}' "
            f"({tensor.dtype.name}): not a numeric array")
    return array


def _fits(actual, static):
    return len(actual) == len(static) and all(
        s is None or s == a for a, s in zip(actual, static))


def is_feedable(tensor) -> bool:
    """Placeholders and computed tensors can be fed; operations and assignments not."""
    return not isinstance(tensor, Operation) and tensor.opdef.kind not in ("assign", "group")
