"""Compiling a run into a plan: prune, order, bind, free, and generate code.

A plan is compiled once per (fetches, fed tensors) and cached on the Session.
Its steps become the body of one generated Python function in which every
value is a local variable and every op a direct call of the backend's array
function, so a run pays nothing between array calls but the call itself:
no dict lookups, no per-step loop, no dispatch. A value is deleted right
after its last use, and the assignments of the run are written to the
variable store at the very end.

Where the backend's functions can write into a given array (NumPy ufuncs,
``out=``), the plan also plans memory, as a static graph allows: elementwise
results that never leave the run get buffers of the plan, shared by values
whose lives do not overlap and reused by every run; and a value computed only
to be assigned to a variable is written into the array that variable held
before the previous run, once nothing else holds it. An optimizer's update
then allocates nothing in steady state.

A plan's buffers belong to that plan object, so one plan object must not run
in two threads at once: the Session guards each with a lock and gives a
concurrent caller another instance of the same plan (see ``Session.run``).
The variables a run reads are taken from the store in one block at the start
of the run, and its assignments written in one block at the end, both under
the session's store lock, so a run sees all or none of another run's
assignments.
"""

from __future__ import annotations

import functools
import itertools
import linecache
import math
import sys
import threading
import time

import numpy as np

from gradflow.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    ResourceExhaustedError,
)
from gradflow.graph import Operation, topological_order
from gradflow.ops.state_ops import draw_host
from gradflow.passes.fusion import FUSED, FUSED_OUTPUT
from gradflow.passes.ir import user_node

_plan_ids = itertools.count()


class Plan:
    """A compiled run: ``fn(feeds, store) -> tuple of fetched values``."""

    def __init__(self, fn, fed, fetches, variables, line_nodes, filename):
        self.fn = fn
        self.fed = fed  # tensors fed, in the order ``fn`` takes them
        self.fetches = fetches
        self.variables = variables  # variables the run reads
        self.line_nodes = line_nodes  # generated line number -> node, for errors
        self.filename = filename
        self.initialized = False  # set once the session has checked `variables`
        self.specialize = False  # whether the session compiles a plan per fed shapes
        self.specialized = False  # whether this plan is one of those
        self.lock = threading.Lock()  # held while a run uses this plan's buffers
        self.instances = []  # more instances of this plan, for concurrent runs

    def node_at_failure(self, tb):
        """The node whose step raised, from a traceback through this plan's code."""
        return node_at_failure(self, tb)


class VariableStore(dict):
    """A session's variable values (variable -> array). ``closed`` is set when the
    session closes: a run then reads and writes nothing more (``raise_closed``)."""

    closed = False


def raise_closed():
    raise FailedPreconditionError(
        "this Session is closed (close() ran, or its `with` block ended), and its "
        "variables are gone; open a new Session (and restore a checkpoint with "
        "train.Saver if you need the trained values)")


def _missing_feed(node, fetches):
    shape = tuple(node.shape) if node.shape is not None else "any"
    return InvalidArgumentError(
        f"you must feed a value for placeholder '{node.name}' (shape {shape}, dtype "
        f"{node.dtype.name}), needed by fetch(es) {', '.join(repr(f.name) for f in fetches)}; "
        f"the placeholder was created at {node.source}")


def _bind(backend, node):
    if node.opdef is FUSED:
        return backend.fused(node.attrs["program"], lambda member: _bind(backend, member))
    lower = backend.overrides.get(node.opdef.name) or node.opdef.lowerings.get(backend.name)
    if lower:
        return lower(backend.xp, **node.attrs)
    return node.opdef.bind(backend.xp, node.attrs)


def _buffer_reuse(order, fns, backend, readers):
    """``(takes_out, donors)``: the ops that can write into a given buffer (``out=``),
    and the values whose buffers the plan may own and overwrite once they are dead.

    An op takes ``out=`` when the backend says its function can (NumPy ufuncs)
    and its result has a fully known shape of rank >= 1. Such a result is a donor
    when every op reading it takes ``out=`` too: then no view of it (a reshape, a
    slice) can outlive it.
    """
    writers = {n for n, fn in fns.items() if backend.accepts_out(fn)}
    multi = {n for n in writers if _is_multi(n)}  # their outputs take the buffers
    candidates = [n for n in writers if n not in multi] + [
        n for n in order if n.opdef is FUSED_OUTPUT and n.inputs[0] in multi]
    takes_out = {n for n in candidates
                 if n.shape is not None and len(n.shape) > 0 and None not in n.shape}
    no_views = takes_out | multi  # readers that never return a view of their input
    donors = {n for n in takes_out if all(r in no_views for r in readers.get(n, ()))}
    return takes_out, donors


def _row_stacks(order, takes_out, keep, readers):
    """``{concat: [(part, start, stop)]}``: concats along axis 0 whose parts the plan
    writes straight into their rows of the concat's buffer, so that the concat copies
    nothing (the gradient code stacks an RNN's per-step values this way).

    A part qualifies when its op writes into ``out=`` (``takes_out``), nothing reads it
    that could return a view of it, it is not fetched and belongs to no other stack;
    the concat when it is not fetched and each op reading it that could return a view
    of it (``unbroadcast`` returns its input when the shapes agree) is not fetched and
    read only by ops that cannot. Such a concat and its parts then live in one buffer
    of the arena from the first part written to the last reader of any of them, or of
    such a view (``_stack_readers``).
    """
    # readers that never return a view of an input: ops writing into out=, multi-output
    # kernels and concats (which copy)
    no_views = takes_out | {n for n in order if _is_multi(n) or (
        n.opdef.name == "concat" and n.opdef.kind == "compute")}
    used, stacks = set(), {}

    def fits(part, concat):
        return part in takes_out and part not in keep and part not in used \
            and part.dtype == concat.dtype and part.shape is not None \
            and len(part.shape) == len(concat.shape) and None not in part.shape \
            and tuple(part.shape[1:]) == tuple(concat.shape[1:]) \
            and all(r in no_views or r is concat for r in readers.get(part, ()))

    def contained(reader):  # what it returns is read, never kept, by ops that copy
        return reader in no_views or (reader not in keep and all(
            r in no_views for r in readers.get(reader, ())))

    for node in order:
        if node.opdef.name != "concat" or node.opdef.kind != "compute" or node in keep \
                or node.attrs.get("axis") != 0 or node.shape is None \
                or len(node.shape) < 1 or None in node.shape \
                or len(set(node.inputs)) != len(node.inputs) \
                or not all(contained(r) for r in readers.get(node, ())) \
                or not all(fits(p, node) for p in node.inputs):
            continue
        start, parts = 0, []
        for part in node.inputs:
            parts.append((part, start, start + part.shape[0]))
            start += part.shape[0]
        stacks[node] = parts
        used.update(node.inputs)
    return stacks


def _stack_readers(stack, parts, readers):
    """The nodes whose last use a row stack's buffer must outlive: its parts, itself and
    the readers of it that might return a view of it."""
    return [p for p, _, _ in parts] + [stack] + list(readers.get(stack, ()))


def _output_count(node):
    if node.opdef is FUSED:
        return len(node.attrs["program"].outputs)
    return getattr(node.opdef, "outputs", 1)


def _is_multi(node):
    """Whether ``node`` has several outputs (its value is a tuple): a fused node, or a
    plan-only op such as ``lstm_step``."""
    return _output_count(node) > 1


def _outputs_after_fused(order):
    """``order`` with the outputs of each multi-output fused node right after it, so
    that the memory plan places all of them at the step where the kernel writes them."""
    outputs = {}
    for node in order:
        if node.opdef is FUSED_OUTPUT:
            outputs.setdefault(node.inputs[0], []).append(node)
    if not outputs:
        return order
    placed = []
    for node in order:
        if node.opdef is FUSED_OUTPUT:
            continue
        placed.append(node)
        placed.extend(sorted(outputs.get(node, ()), key=lambda o: o.attrs["index"]))
    return placed


def _arena_slots(order, nodes, last_use, whole=(), early=None):
    """Place each of ``nodes`` (values no one outside the run sees, and no view of which
    can outlive them) in a buffer of the plan: ``({node: slot}, [(dtype, size) per slot])``.

    A value is computed in place over an input of its shape that dies with it (unless
    its op is in ``whole``: ops such as matmul that read more of an input than the
    element they write), or else takes the buffer most recently freed by a value of
    its dtype (growing it if needed), so that consecutive ops reuse memory that is
    still in the cache. ``early`` ({step: [node]}) places nodes at an earlier step than
    their own (a row stack, when its first part is written).
    """
    free, slot_of, slots = {}, {}, []
    early = early or {}

    def place(node):
        size = math.prod(node.shape)
        pool = free.setdefault(node.dtype, [])
        if pool:
            k = pool.pop()
            slots[k] = (node.dtype, max(slots[k][1], size))
        else:
            k = len(slots)
            slots.append((node.dtype, size))
        slot_of[node] = k

    for step, node in enumerate(order):
        for stack in early.get(step, ()):
            place(stack)
        dying = [i for i in set(node.inputs) if i in slot_of and last_use.get(i) == step]
        if node in nodes and node not in slot_of:
            same = [] if node in whole else [
                i for i in dying if i.dtype == node.dtype and i.shape == node.shape]
            if same:  # in place over an input that dies here: its lines are in the cache
                slot_of[node] = slot_of[same[0]]
                dying.remove(same[0])
                for inp in dying:
                    free[inp.dtype].append(slot_of[inp])
                continue
            place(node)
        for inp in dying:
            free[inp.dtype].append(slot_of[inp])
    return slot_of, slots


def _recyclable_assign_sources(order, takes_out, keep):
    """``{value: variable}`` for values computed only to be assigned to one variable
    of the same shape and dtype: they can be written into the array that variable
    held before the previous run, instead of a new one."""
    sources = {}
    for node in order:
        if node.opdef.kind == "assign":
            sources.setdefault(node.attrs["var"], []).append(node.inputs[0])
    out = {}
    for var, values in sources.items():
        (value, *more) = values
        if not more and value in takes_out and value not in keep and value.dtype == var.dtype \
                and var.shape is not None and tuple(value.shape) == tuple(var.shape):
            out[value] = var
    return out


def _taker(spare):
    def take(var, shape, dtype):
        buf = spare.pop(var, None)
        # Two references: ``buf`` and getrefcount's argument. More means the array is
        # still held elsewhere (a native fetch, another variable): never write into it.
        if buf is not None and sys.getrefcount(buf) == 2 and buf.shape == shape \
                and buf.dtype == dtype:
            return buf
        return None

    return take


def _in_place_taker(take):
    def take_in_place(store, var, shape, dtype, held):
        """The array ``var`` holds now, to be updated in place, if nothing but the store
        (and, with ``held``, the plan's own read of it, an input of the writing op)
        refers to it: no other run's read, no native fetch. Else ``take``'s spare."""
        buf = store.get(var)
        # references: the store, ``buf``, getrefcount's argument, and the plan's read
        if buf is not None and sys.getrefcount(buf) <= 3 + held and buf.shape == shape \
                and buf.dtype == dtype:
            return buf
        return take(var, shape, dtype)

    return take_in_place


def _updated_in_place(order, recycled, fns, last_use, backend):
    """``{value: held}`` for the values assigned to a variable that can be written over
    the variable's own array at commit: the variable's ``read_current`` (if the plan
    reads it) is not read after the op that writes the value, and where that op reads
    it (``held``), the backend's function tolerates its output over that input."""
    position = {node: step for step, node in enumerate(order)}
    current = {n.attrs["var"]: n for n in order if n.opdef.kind == "read_current"}
    done = {}  # writer -> the step of its last output (a multi-output kernel's outputs)
    for step, node in enumerate(order):
        done[node.inputs[0] if node.opdef is FUSED_OUTPUT else node] = step
    out = {}
    for value, var in recycled.items():
        writer = value.inputs[0] if value.opdef is FUSED_OUTPUT else value
        read = current.get(var)
        last = -1 if read is None else last_use.get(read, -1)
        if last < position[writer]:
            out[value] = 0
        elif last <= done[writer] and read in writer.inputs \
                and backend.overwrites_inputs_safely(fns.get(writer)):
            out[value] = 1
    return out


def _allocate(backend, slots, arena):
    """The arena's buffers, or a ``ResourceExhaustedError`` naming the values of the one
    that does not fit in memory."""
    buffers = []
    for k, (dtype, size) in enumerate(slots):
        try:
            buffers.append(backend.empty((size,), dtype.as_numpy_dtype))
        except MemoryError as err:
            users = [n for n, slot in arena.items() if slot == k][:3]
            named = "; ".join(f"{n.type} '{n.name}' (shape {tuple(n.shape)}, created at "
                              f"{n.source})" for n in users)
            raise ResourceExhaustedError(
                f"out of memory: a buffer of {size:,} x {dtype.name} for {named} does not "
                f"fit ({err})") from None
    return buffers


def _commit_last(order, fed):
    """``(order, start)``: ``order`` with the nodes that read a variable's value at
    commit (``read_current``), and every node after them, moved to the end from
    ``start`` on (still inputs first). That part of the run happens under the store
    lock, after the rest: an update of a variable from its own value applies to the
    value the variable holds then, so concurrent runs lose no update."""
    late = set()
    for node in order:
        if node not in fed and (node.opdef.kind == "read_current" or any(
                i in late for i in node.inputs + node.control_inputs)):
            late.add(node)
    if not late:
        return order, len(order)
    early = [n for n in order if n not in late]
    return early + [n for n in order if n in late], len(early)


def compile_plan(session, fetches, fed, feed_shapes=None, trace=False) -> Plan:
    """Build the plan that computes ``fetches`` with the tensors ``fed`` given.

    With ``session.optimize``, the graph compiler's passes rewrite a private copy
    of the graph first (``gradflow.passes``), its static shapes specialized to
    ``feed_shapes`` (the shapes of the values fed, one per tensor of ``fed``) when
    they are given. ``trace=True`` times every step into ``plan.trace`` (for
    ``RunOptions(trace_level=FULL_TRACE)``).
    """
    fed_set = set(fed)
    targets = list(fetches)
    checking = getattr(session, "check_numerics", False)
    # check_numerics names the op that made a NaN: it runs the graph as built
    if getattr(session, "optimize", False) and not checking:
        from gradflow.passes import optimize

        targets = optimize(fetches, fed, feed_shapes).outputs
    order, commit_start = _commit_last(
        _outputs_after_fused(topological_order(targets, fed_set)), fed_set)
    backend = session.backend
    env = {}
    lines = []
    line_nodes = {}
    names = {}
    variables = []
    writes = []
    reads = []
    feed_index = {t: i for i, t in enumerate(fed)}

    last_use = {}
    for step, node in enumerate(order):
        if node not in fed_set:
            for inp in node.inputs + node.control_inputs:
                last_use[inp] = step
    for step, node in enumerate(order):  # a multi-output kernel's inputs live until it
        if node.opdef is FUSED_OUTPUT:   # has written its last output (see _arena_slots)
            for inp in node.inputs[0].inputs:
                last_use[inp] = max(last_use[inp], step)
    dies_at = {}
    for value, step in last_use.items():
        dies_at.setdefault(step, []).append(value)
    keep = set(targets)
    fns = {node: _bind(backend, node) for node in order
           if node not in fed_set and node.opdef.kind == "compute"}
    # a call op binds from the user's node: its inputs sit at the same positions
    fns.update({node: node.opdef.impl(session, user_node(node)) for node in order
                if node not in fed_set and node.opdef.kind == "call"})
    readers = {}
    for node in order:
        for inp in node.inputs:
            readers.setdefault(inp, []).append(node)
    takes_out, donors = _buffer_reuse(order, fns, backend, readers)
    whole = {n for n, fn in fns.items() if getattr(fn, "reads_whole_inputs", False)}
    stacks = _row_stacks(order, takes_out, keep, readers)
    part_of = {part: (stack, start, stop) for stack, parts in stacks.items()
               for part, start, stop in parts}
    position = {node: step for step, node in enumerate(order)}
    early = {}
    for stack, parts in stacks.items():  # its buffer holds its parts from the first one
        early.setdefault(min(position[p] for p, _, _ in parts), []).append(stack)
        last_use[stack] = max(last_use.get(n, position[n])
                              for n in _stack_readers(stack, parts, readers))
    arena, slots = _arena_slots(order, (donors - keep - set(part_of)) | set(stacks), last_use,
                                whole, early)
    buffers = _allocate(backend, slots, arena)
    views = {}
    recycled = _recyclable_assign_sources(order, takes_out, keep)
    take = _taker(session.spare_buffers)
    take_in_place = _in_place_taker(take)
    in_place = {v: held for v, held in
                _updated_in_place(order, recycled, fns, last_use, backend).items()
                if position[v] >= commit_start}
    if checking:
        env["check"] = _numerics_check(backend.xp)

    def buffer(node, step):
        """The expression of the buffer ``node`` is written into, or None."""
        if node in part_of:  # its rows of a row stack's buffer
            stack, start, stop = part_of[node]
            name = f"P{step}"
            if name not in env:
                base = buffers[arena[stack]][:math.prod(stack.shape)].reshape(stack.shape)
                env[name] = base[start:stop]
            return name
        if node in arena:  # a buffer of the plan, reused by every run
            key = (arena[node], tuple(node.shape))
            if key not in views:  # one view per buffer and shape: an op in place
                size = math.prod(node.shape)  # sees its input and output as one array
                views[key] = (f"A{step}", buffers[key[0]][:size].reshape(key[1]))
                env[views[key][0]] = views[key][1]
            return views[key][0]
        if node in in_place:  # the variable's own array, when no one else holds it
            env[f"I{step}"] = functools.partial(
                take_in_place, var=recycled[node], shape=tuple(node.shape),
                dtype=node.dtype.as_numpy_dtype, held=in_place[node])
            # taken in a statement of its own: while a call's arguments are evaluated, the
            # stack holds more references to its inputs than the plan's locals do
            before.append(f"O{step} = I{step}(store)")
            return f"O{step}"
        if node in recycled:  # the buffer the variable held before the last run
            env[f"T{step}"] = functools.partial(take, recycled[node], tuple(node.shape),
                                                node.dtype.as_numpy_dtype)
            return f"T{step}()"
        return None

    indent = ""
    before = []  # statements that must run before the current step's line
    for step, node in enumerate(order):
        before.clear()
        if step == commit_start:
            lines += ["with store_lock:", "    if store.closed: closed()"]
            indent = "    "
        var = f"v{step}"
        names[node] = var
        kind = node.opdef.kind
        more = []
        if node in fed_set:
            line = f"{var} = feeds[{feed_index[node]}]"
        elif kind == "placeholder":
            raise _missing_feed(node, fetches)
        elif kind == "variable":
            env[f"K{step}"] = node
            variables.append(node)
            reads.append(f"{var} = store[K{step}]")  # all at the start of the run
            line = f"check({var}, K{step}, 'variable')" \
                if checking and node.dtype.is_floating else None
        elif kind == "read_current":  # under the store lock: in the commit block
            env[f"K{step}"] = node.attrs["var"]
            variables.append(node.attrs["var"])
            line = f"{var} = store[K{step}]"
        elif kind == "constant":
            env[f"C{step}"] = session.constant_value(node)
            line = f"{var} = C{step}"
        elif kind == "random":
            env[f"R{step}"] = _random_source(session, node)
            line = f"{var} = R{step}({', '.join(names[i] for i in node.inputs)})"
        elif kind == "group":
            line = None
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
        elif node.opdef is FUSED_OUTPUT:
            line = f"{var} = {names[node.inputs[0]]}[{node.attrs['index']}]"
        elif node in stacks:  # its parts are in its buffer already
            env["copyto"] = np.copyto
            line = f"{var} = {buffer(node, step)}"
            for part, _, _ in stacks[node]:  # unless an op returned a new array after all
                rows = buffer(part, position[part])
                more.append(f"if {names[part]} is not {rows}: copyto({rows}, {names[part]})")
        else:  # "compute" and "call"
            if trace:
                env[f"S{step}"] = node
                line_nodes[len(lines) + 2] = node
                lines.append(f"{indent}t = clock()")
                more.append(f"sync(); rec((S{step}, t, clock()))")
            env[f"F{step}"] = fns[node]
            args = ", ".join(names[i] for i in node.inputs)
            if _is_multi(node):  # one entry per output, None for one the plan never reads
                outs = [None] * _output_count(node)
                for o in order[step + 1:]:
                    if o.opdef is FUSED_OUTPUT and o.inputs[0] is node:
                        outs[o.attrs["index"]] = buffer(o, position[o])
                if any(b is not None for b in outs):
                    args += f", out=({', '.join(b or 'None' for b in outs)},)"
            else:
                dest = buffer(node, step)
                if dest is not None:
                    args += f", out={dest}"
            line = f"{var} = F{step}({args})"
        for text in before + ([line] if line is not None else []) + more:
            line_nodes[len(lines) + 2] = node
            lines.append(indent + text)
        if checking and kind not in ("variable", "read_current") and node.dtype is not None \
                and node.dtype.is_floating and names[node] != "None" and not _is_multi(node):
            env[f"N{step}"] = node
            role = "feed" if node in fed_set else "op"
            line_nodes[len(lines) + 2] = node
            lines.append(f"{indent}check({var}, N{step}, '{role}')")
        dead = [names[i] for i in dies_at.get(step, ())
                if i not in keep and names.get(i, "None") != "None"]
        if dead:
            lines.append(f"{indent}del {', '.join(dead)}")
    retire = set(recycled.values())
    if writes and not indent:
        lines += ["with store_lock:", "    if store.closed: closed()"]
    for k, (var_node, value) in enumerate(writes):
        env[f"W{k}"] = var_node
        if var_node in retire:  # keep the old array: the next run may write into it
            env["spare"] = session.spare_buffers
            lines += [f"    old = store.get(W{k})",
                      f"    if old is not {value}: spare[W{k}] = old"]  # not in place
        lines.append(f"    store[W{k}] = {value}")
    outputs = ", ".join(names[f] for f in targets)
    lines.append(f"return ({outputs},)")
    head = []
    if reads:  # one block, so that no other run's assignments land in between
        head = ["with store_lock:", "    if store.closed: closed()"] + [f"    {r}" for r in reads]
        line_nodes = {n + len(head): node for n, node in line_nodes.items()}
    if reads or writes or commit_start < len(order):
        env["store_lock"] = session.store_lock
        env["closed"] = raise_closed
    records = []
    if trace:
        env.update(clock=time.perf_counter, rec=records.append, sync=backend.synchronize)
    filename = f"<gradflow-plan-{next(_plan_ids)}>"
    source = "def run(feeds, store):\n" + "".join(f"    {line}\n" for line in head + lines)
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(code, env)
    plan = Plan(env["run"], tuple(fed), tuple(fetches), variables, line_nodes, filename)
    plan.specialized = feed_shapes is not None
    plan.trace = records if trace else None
    plan.layout = PlanLayout(order, fed_set, arena, slots, part_of, recycled, in_place,
                             commit_start)
    return plan


class PlanLayout:
    """What a compiled plan does, for people: its steps in order and which buffer of the
    arena each value is written into (``Session.describe_plan``)."""

    def __init__(self, order, fed, arena, slots, part_of, recycled, in_place, commit_start):
        self.order = order
        self.fed = fed
        self.arena = arena
        self.slots = slots
        self.part_of = part_of
        self.recycled = recycled
        self.in_place = in_place
        self.commit_start = commit_start

    @property
    def arena_bytes(self) -> int:
        return sum(size * dtype.as_numpy_dtype().itemsize for dtype, size in self.slots)

    def describe(self) -> str:
        """The plan as text: one line per step, then the arena's buffers."""
        out = [f"plan: {len(self.order)} steps, arena {len(self.slots)} buffers, "
               f"{self.arena_bytes:,} bytes"]
        for step, node in enumerate(self.order):
            if step == self.commit_start:
                out.append("  -- commit, under the store lock --")
            out.append(f"  {step:3d} {_step_text(node, self)}")
        for k, (dtype, size) in enumerate(self.slots):
            out.append(f"  buffer {k}: {size:,} x {dtype.name}")
        return "\n".join(out)


def _step_text(node, layout):
    shape = "?" if node.shape is None else "x".join(str(d) for d in node.shape) or "scalar"
    if node in layout.fed:
        what = f"feed '{node.name}'"
    elif node.opdef is FUSED:
        members = node.attrs["program"].members
        what = f"fused[{', '.join(m.type for m in members)}] '{user_node(members[-1]).name}'"
    else:
        what = f"{node.opdef.name} '{user_node(node).name}'"
    where = ""
    if node in layout.arena:
        where = f" -> buffer {layout.arena[node]}"
    elif node in layout.part_of:
        stack, start, stop = layout.part_of[node]
        where = f" -> rows {start}:{stop} of buffer {layout.arena[stack]}"
    elif node in layout.in_place:
        where = f" -> '{layout.recycled[node].name}' in place"
    elif node in layout.recycled:
        where = f" -> the spare array of '{layout.recycled[node].name}'"
    dtype = f" {node.dtype.name}" if node.dtype is not None else ""
    return f"{what} {shape}{dtype}{where}"


def _numerics_check(xp):
    """``check(value, node, role)``: raise at the first NaN or infinity (``check_numerics``)."""
    def check(value, node, role):
        if bool(xp.all(xp.isfinite(value))):
            return
        what = "NaN" if bool(xp.any(xp.isnan(value))) else "infinity"
        if role == "feed":
            where = f"the value fed to '{node.name}' holds {what}"
        elif role == "variable":
            where = (f"variable '{node.name}' holds {what} (an earlier run assigned it, or it "
                     "was loaded so)")
        else:
            inputs = ", ".join(f"'{i.name}'" for i in node.inputs) or "none"
            where = (f"{node.type} '{node.name}' produced {what} from finite inputs "
                     f"({inputs})")
        raise InvalidArgumentError(f"check_numerics: {where}; created at {node.source}")

    return check


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
        if not np.can_cast(array.dtype, np_dtype, casting="same_kind") \
                and not _python_ints_fit(value, array, np_dtype):
            raise InvalidArgumentError(
                f"cannot feed a value of dtype {array.dtype} to '{tensor.name}', which is "
                f"{tensor.dtype.name}: the conversion would lose information; "
                "cast the value first")
        _refuse_wrapping_ints(tensor, array, np_dtype)
        array = array.astype(np_dtype)
    if shape is not None and not _fits(array.shape, shape):
        raise InvalidArgumentError(
            f"cannot feed a value of shape {array.shape} to '{tensor.name}', which has "
            f"shape {tuple(shape)} (None = any size)")
    return array


def _refuse_wrapping_ints(tensor, array, np_dtype):
    """Refuse integers that ``astype(np_dtype)`` would wrap (``2**32 + 3`` fed to an int32
    placeholder would become 3: a label that silently changes class). TF1 wraps them."""
    if array.dtype.kind not in "iu" or np.dtype(np_dtype).kind not in "iu" or not array.size:
        return
    info = np.iinfo(np_dtype)
    low, high = int(array.min()), int(array.max())
    if low >= info.min and high <= info.max:
        return
    bad = low if low < info.min else high
    raise InvalidArgumentError(
        f"cannot feed the value {bad} to '{tensor.name}', which is {tensor.dtype.name} (range "
        f"[{info.min}, {info.max}]): it does not fit; feed a wider placeholder or fix the "
        f"value (placeholder created at {tensor.source})")


def _python_ints_fit(value, array, np_dtype):
    """Whether ``value`` is Python data (not a NumPy array) of integers that all fit in
    the integer dtype ``np_dtype``: ``[0, 255]`` feeds a uint8 placeholder."""
    if isinstance(value, (np.ndarray, np.generic)) or array.dtype.kind not in "iu" \
            or np.dtype(np_dtype).kind not in "iu":
        return False
    info = np.iinfo(np_dtype)
    return array.size == 0 or (int(array.min()) >= info.min and int(array.max()) <= info.max)


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
