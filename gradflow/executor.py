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
import weakref

import numpy as np

from gradflow import dtypes
from gradflow.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    ResourceExhaustedError,
)
from gradflow.graph import Operation
from gradflow.ops.state_ops import draw_host
from gradflow.passes import optimize
from gradflow.passes.ir import user_node
from gradflow.prim.casting import check_room, converted, loses_kind, out_of_range, whole_numbers_fit
from gradflow.prim.plan import FUSED, FUSED_OUTPUT
from gradflow.schedule import build_schedule, is_multi, output_count, run_order

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
        self.runs = 0  # runs before its capture (gradflow.capture)
        self.captured = None  # its CapturedRun, once captured
        self.capture_failure = None  # why it runs uncaptured, once that is known

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


def bind(backend, node, attrs=None, draw=None):
    """The backend's callable for ``node`` (its attrs, or ``attrs`` in their place); a
    fused node's random members (``absorb_draws``) bind through ``draw(member)``."""
    if node.opdef is FUSED:
        return backend.fused(node.attrs["program"], lambda member: draw(member)
                             if member.opdef.kind == "random" else bind(backend, member))
    attrs = node.attrs if attrs is None else attrs
    lower = backend.overrides.get(node.opdef.name) or node.opdef.lowerings.get(backend.name)
    fn = lower(backend.xp, **attrs) if lower else node.opdef.bind(backend.xp, attrs)
    return backend.bound(node, fn)


class _Bound:
    """The schedule's questions (``gradflow.schedule.Capabilities``), answered from the
    backend's bound function of each node."""

    def __init__(self, fns, backend):
        self.fns = fns
        self.backend = backend

    def writes_out(self, node):
        fn = self.fns.get(node)
        if getattr(fn, "copies_strided_views", False):  # only where it would copy anyway
            return bool(node.inputs) and node.inputs[0].opdef.view
        return fn is not None and self.backend.accepts_out(fn)

    def reads_whole(self, node):
        return getattr(self.fns.get(node), "reads_whole_inputs", False)

    def overwrites_input(self, node):
        return self.backend.overwrites_inputs_safely(self.fns.get(node))

    def draws_on_device(self, node):
        draws = getattr(self.backend, "draws_on_device", None)
        return draws is not None and draws(node)


def _taker(spare, is_array, empty):
    def take(var, shape, dtype):
        """The spare array of ``var`` if no one else holds it, else a new one: either
        way the variable's next value is written into an array that its next update
        can be written into (an op on 0-d values returns a NumPy scalar otherwise)."""
        buf = spare.pop(var, None)
        # Two references: ``buf`` and getrefcount's argument. More means the array is
        # still held elsewhere (a native fetch, another variable): never write into it.
        if buf is not None and sys.getrefcount(buf) == 2 and is_array(buf) \
                and buf.shape == shape and buf.dtype == dtype:
            return buf
        return empty(shape, dtype)

    return take


def _in_place_taker(take, is_array):
    def take_in_place(store, var, shape, dtype, held):
        """The array ``var`` holds now, to be updated in place, if nothing but the store
        (and, with ``held``, the plan's own read of it, an input of the writing op)
        refers to it: no other run's read, no native fetch. Else ``take``'s spare."""
        buf = store.get(var)
        # references: the store, ``buf``, getrefcount's argument, and the plan's read
        if buf is not None and sys.getrefcount(buf) <= 3 + held and is_array(buf) \
                and buf.shape == shape and buf.dtype == dtype:
            return buf
        return take(var, shape, dtype)

    return take_in_place


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


def compile_plan(run, fetches, fed, feed_shapes=None, trace=False) -> Plan:
    """Build the plan that computes ``fetches`` with the tensors ``fed`` given, for the
    runs of ``run`` (a Session's ``gradflow.run_state.RunState``).

    With ``run.mixed_precision`` (a low float dtype, or None), the mixed-precision
    rewrite runs over that copy too, even with ``optimize`` off or ``check_numerics`` on
    (``gradflow.passes.mixed_precision``).
    With ``run.optimize``, the graph compiler's passes rewrite a private copy
    of the graph first (``gradflow.passes``), its static shapes specialized to
    ``feed_shapes`` (the shapes of the values fed, one per tensor of ``fed``) when
    they are given. ``trace=True`` times every step into ``plan.trace`` (for
    ``RunOptions(trace_level=FULL_TRACE)``).
    """
    fed_set = set(fed)
    # check_numerics names the op that made a NaN: it runs the graph as built
    checking = run.check_numerics
    targets = list(fetches)
    mixed = run.mixed_precision
    if run.optimize and not checking:
        targets = _optimized_targets(run.backend, fetches, fed, feed_shapes, mixed)
    elif mixed is not None:  # the rewrite alone: it changes the numbers, not the layout
        targets = optimize(fetches, fed, feed_shapes, passes=[], mixed_precision=mixed).outputs
    order, commit_start = run_order(targets, fed_set)
    fns = _bind_steps(run, order, fed_set)
    schedule = build_schedule(order, commit_start, fed_set, targets, _Bound(fns, run.backend))
    writer = _PlanWriter(run, schedule, fed, fns, checking, trace)
    for step, node in enumerate(order):
        writer.write_step(step, node, fetches)
    plan = writer.finish(targets, fetches, commit_start < len(order))
    plan.specialized = feed_shapes is not None
    return plan


def _optimized_targets(backend, fetches, fed, feed_shapes, mixed_precision=None):
    """The outputs of the graph compiler's private copy of the graph (``gradflow.passes``),
    with the backend's kernel passes run over it too."""
    graph = optimize(fetches, fed, feed_shapes, mixed_precision=mixed_precision)
    for widen in backend.kernel_passes:
        widen(graph)
    return graph.outputs


def _bind_steps(run, order, fed_set):
    """The backend's callable of each computing step of ``order`` (``bind``), and each
    call op's (``opdef.impl(run_state, node)``, bound from the user's node: its inputs sit at
    the same positions)."""
    backend = run.backend
    backend.check_plan(order)

    def draw(node):  # a random member of a fused node (absorb_draws): its device stream
        return _random_source(run, node, False)

    fns = {node: bind(backend, node, draw=draw) for node in order
           if node not in fed_set and node.opdef.kind == "compute"}
    fns.update({node: node.opdef.impl(run, user_node(node)) for node in order
                if node not in fed_set and node.opdef.kind == "call"})
    return fns


_COMMIT = ["with store_lock:", "    if store.closed: closed()"]


class _PlanWriter:
    """The source of a plan's function, written one step at a time (``compile_plan``):
    the lines, the globals they name (``env``: op functions, buffers, variables), and
    the node of each line (for errors)."""

    def __init__(self, run, schedule, fed, fns, checking, trace):
        self.run, self.schedule, self.fns = run, schedule, fns
        self.backend = backend = run.backend
        self.fed, self.fed_set = fed, set(fed)
        self.feed_index = {t: i for i, t in enumerate(fed)}
        self.checking, self.trace = checking, trace
        self.env, self.lines, self.line_nodes, self.names = {}, [], {}, {}
        self.variables, self.writes, self.reads = [], [], []
        self.dies_at = {}
        for value, step in schedule.last_use.items():
            self.dies_at.setdefault(step, []).append(value)
        self.position = schedule.position
        self.buffers = _allocate(backend, schedule.slots, schedule.arena)
        self.views = {}
        self.take = _taker(run.spare_buffers, backend.is_native, backend.empty)
        self.take_in_place = _in_place_taker(self.take, backend.is_native)
        self.indent = ""
        self.before = []  # statements that must run before the current step's line
        if checking:
            self.env["check"] = _numerics_check(backend.xp)

    def buffer(self, node, step):
        """The expression of the buffer ``node`` is written into, or None."""
        schedule, env = self.schedule, self.env
        if node in schedule.part_of:  # its rows of a row stack's buffer
            stack, start, stop = schedule.part_of[node]
            name = f"P{step}"
            if name not in env:
                base = self.buffers[schedule.arena[stack]][:math.prod(stack.shape)]
                env[name] = base.reshape(stack.shape)[start:stop]
            return name
        if node in schedule.arena:  # a buffer of the plan, reused by every run
            key = (schedule.arena[node], tuple(node.shape))
            if key not in self.views:  # one view per buffer and shape: an op in place
                size = math.prod(node.shape)  # sees its input and output as one array
                self.views[key] = (f"A{step}", self.buffers[key[0]][:size].reshape(key[1]))
                env[self.views[key][0]] = self.views[key][1]
            return self.views[key][0]
        if node in schedule.in_place:  # the variable's own array, when no one else holds it
            env[f"I{step}"] = functools.partial(
                self.take_in_place, var=schedule.recycled[node], shape=tuple(node.shape),
                dtype=node.dtype.as_numpy_dtype, held=schedule.in_place[node])
            # taken in a statement of its own: while a call's arguments are evaluated, the
            # stack holds more references to its inputs than the plan's locals do
            self.before.append(f"O{step} = I{step}(store)")
            return f"O{step}"
        if node in schedule.recycled:  # the buffer the variable held before the last run
            env[f"T{step}"] = functools.partial(self.take, schedule.recycled[node],
                                                tuple(node.shape), node.dtype.as_numpy_dtype)
            return f"T{step}()"
        return None

    def write_step(self, step, node, fetches):
        """The lines of step ``step``, which computes ``node``."""
        self.before.clear()
        lines = self.lines
        if step == self.schedule.commit_start:
            lines += _COMMIT
            self.indent = "    "
        var = self.names[node] = f"v{step}"
        more = []  # statements that run after the step's line
        line = self._line(step, node, var, more, fetches)
        for text in self.before + ([line] if line is not None else []) + more:
            self.line_nodes[len(lines) + 2] = node
            lines.append(self.indent + text)
        kind = node.opdef.kind
        if self.checking and kind not in ("variable", "read_current") \
                and node.dtype is not None and node.dtype.is_floating \
                and self.names[node] != "None" and not is_multi(node):
            self.env[f"N{step}"] = node
            role = "feed" if node in self.fed_set else "op"
            self.line_nodes[len(lines) + 2] = node
            lines.append(f"{self.indent}check({var}, N{step}, '{role}')")
        keep, names = self.schedule.keep, self.names  # keep: fetched values, assignments
        dead = [names[i] for i in self.dies_at.get(step, ())
                if i not in keep and names.get(i, "None") != "None"]
        if dead:
            lines.append(f"{self.indent}del {', '.join(dead)}")

    def _line(self, step, node, var, more, fetches):
        """The statement computing ``node`` into ``var`` (None for none); statements to
        run after it go to ``more``."""
        kind, env, names = node.opdef.kind, self.env, self.names
        if node in self.fed_set:
            return f"{var} = feeds[{self.feed_index[node]}]"
        if kind == "placeholder":
            raise _missing_feed(node, fetches)
        if kind == "variable":
            env[f"K{step}"] = node
            self.variables.append(node)
            self.reads.append(f"{var} = store[K{step}]")  # all at the start of the run
            return f"check({var}, K{step}, 'variable')" \
                if self.checking and node.dtype.is_floating else None
        if kind == "read_current":  # under the store lock: in the commit block
            env[f"K{step}"] = node.attrs["var"]
            self.variables.append(node.attrs["var"])
            return f"{var} = store[K{step}]"
        if kind == "constant":
            env[f"C{step}"] = self.run.constant_value(node)
            return f"{var} = C{step}"
        if kind == "random":
            env[f"R{step}"] = _random_source(self.run, node, node in self.schedule.keep)
            return f"{var} = R{step}({', '.join(names[i] for i in node.inputs)})"
        if kind == "group":
            names[node] = "None"
            return None
        if kind == "assign":
            return self._assign_line(node, var)
        if node.opdef is FUSED_OUTPUT:
            return f"{var} = {names[node.inputs[0]]}[{node.attrs['index']}]"
        if node in self.schedule.stacks:  # its parts are in its buffer already
            env["copyto"] = self.backend.copy_to
            line = f"{var} = {self.buffer(node, step)}"
            for part, _, _ in self.schedule.stacks[node]:  # unless an op returned a new
                rows = self.buffer(part, self.position[part])  # array after all
                more.append(f"if {names[part]} is not {rows}: copyto({rows}, {names[part]})")
            return line
        return self._call_line(step, node, var, more)  # "compute" and "call"

    def _assign_line(self, node, var):
        source = node.inputs[0]
        value = self.names[source]
        if source in self.fed_set:  # the store must own its arrays, not the user's
            self.env["copy"] = self.backend.copy
            value = f"copy({value})"
        self.writes.append((node.attrs["var"], var))
        return f"{var} = {value}"

    def _call_line(self, step, node, var, more):
        """The call of a step's bound function, writing into its buffer where it has one."""
        if self.trace:
            self.env[f"S{step}"] = node
            self.line_nodes[len(self.lines) + 2] = node
            self.lines.append(f"{self.indent}t = clock()")
            more.append(f"sync(); rec((S{step}, t, clock()))")
        self.env[f"F{step}"] = self.fns[node]
        args = ", ".join(self.names[i] for i in node.inputs)
        if is_multi(node):  # one entry per output, None for one the plan never reads
            outs = [None] * output_count(node)
            for o in self.schedule.order[step + 1:]:
                if o.opdef is FUSED_OUTPUT and o.inputs[0] is node:
                    outs[o.attrs["index"]] = self.buffer(o, self.position[o])
            if any(b is not None for b in outs):
                args += f", out=({', '.join(b or 'None' for b in outs)},)"
        else:
            dest = self.buffer(node, step)
            if dest is not None:
                args += f", out={dest}"
        return f"{var} = F{step}({args})"

    def _commit_lines(self):
        """The block writing the run's assignments into the store."""
        lines, env = self.lines, self.env
        retire = set(self.schedule.recycled.values())
        if self.writes and not self.indent:
            lines += _COMMIT
        for k, (var_node, value) in enumerate(self.writes):
            env[f"W{k}"] = var_node
            if var_node in retire:  # keep the old array: the next run may write into it
                env["spare"] = self.run.spare_buffers
                lines += [f"    old = store.get(W{k})",
                          f"    if old is not {value}: spare[W{k}] = old"]  # not in place
            lines.append(f"    store[W{k}] = {value}")

    def finish(self, targets, fetches, commits):
        """The plan: the function compiled from the lines written (``commits``: whether
        some steps run in the commit block)."""
        self._commit_lines()
        env, lines, line_nodes = self.env, self.lines, self.line_nodes
        lines.append(f"return ({', '.join(self.names[f] for f in targets)},)")
        head = []
        if self.reads:  # one block, so that no other run's assignments land in between
            head = _COMMIT + [f"    {r}" for r in self.reads]
            line_nodes = {n + len(head): node for n, node in line_nodes.items()}
        if self.reads or self.writes or commits:
            env["store_lock"] = self.run.store_lock
            env["closed"] = raise_closed
        records = []
        if self.trace:
            env.update(clock=time.perf_counter, rec=records.append,
                       sync=self.backend.synchronize)
        filename = f"<gradflow-plan-{next(_plan_ids)}>"
        source = "def run(feeds, store):\n" + "".join(f"    {line}\n" for line in head + lines)
        code = compile(source, filename, "exec")
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(code, env)
        # the source shows in tracebacks while the plan's function lives, and goes with it
        weakref.finalize(env["run"], linecache.cache.pop, filename, None)
        plan = Plan(env["run"], tuple(self.fed), tuple(fetches), self.variables, line_nodes,
                    filename)
        plan.trace = records if self.trace else None
        plan.schedule = self.schedule
        return plan


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


def _random_source(run, node, fetched):
    """The callable drawing ``node``'s numbers: the backend's own on its device where it
    has one (a captured run then draws new numbers on every replay; a fetched draw is
    copied, the device source reusing its array), else drawn on the host and copied."""
    device = getattr(run.backend, "random_source", None)
    source = device(run, node) if device is not None else None
    if source is not None:
        if not fetched:
            return source
        copy = run.backend.copy
        return (lambda like: copy(source(like))) if node.inputs else (lambda: copy(source()))
    rng = run.host_rng(node)
    attrs = node.attrs
    asarray = run.backend.asarray
    if node.inputs:  # the shape comes from the input's value at run time
        return lambda like: asarray(draw_host(rng, attrs, like.shape))
    return lambda: asarray(draw_host(rng, attrs))


def node_error(node, err):
    """The error a run reports for ``err``, raised by the step of ``node``: naming the
    node, its inputs, its static shape and the user's line that built it."""
    inputs = ", ".join(f"'{i.name}'" for i in node.inputs) or "none"
    if _out_of_memory(err):
        return ResourceExhaustedError(
            f"{node.type} '{node.name}' ran out of memory: {err} (inputs: {inputs}; "
            f"static shape {node.shape}; created at {node.source})")
    return InvalidArgumentError(
        f"{node.type} '{node.name}' failed at run time: {err} (inputs: {inputs}; "
        f"static shape {node.shape}; created at {node.source})")


def _out_of_memory(err) -> bool:
    """Whether ``err`` says the array library could not allocate (NumPy's MemoryError,
    torch's RuntimeError from its allocator, CUDA's out-of-memory errors)."""
    text = str(err).lower()
    return isinstance(err, MemoryError) or "can't allocate memory" in text \
        or "out of memory" in text


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
    if np.dtype(np_dtype) == object:  # a string placeholder: bytes on the host
        try:
            array = dtypes.bytes_array(value)
        except TypeError as err:
            raise InvalidArgumentError(f"cannot feed {type(value).__name__} to "
                                       f"'{tensor.name}' (string): {err}") from None
    else:
        array = _as_array(tensor, value)
    if array.dtype != np_dtype:
        check_room(tensor, array.shape, np_dtype)  # before any pass over the value
        # TF1 converts feeds with NumPy's casts; gradflow only where no value changes:
        # whole floats into an integer placeholder (labels built with np.ones) pass
        if loses_kind(value, array, np_dtype) and not whole_numbers_fit(array, np_dtype):
            raise InvalidArgumentError(
                f"cannot feed a value of dtype {array.dtype} to '{tensor.name}', which is "
                f"{tensor.dtype.name}: the conversion would lose information (a fraction, "
                "a NaN or a value out of range); cast the value first")
        _refuse_wrapping_ints(tensor, array, np_dtype)
        array = converted(tensor, array, np_dtype)
    elif not array.flags.c_contiguous:  # a backend copies it (a broadcast view may be huge)
        check_room(tensor, array.shape, np_dtype, "copying the value fed")
    if shape is not None and not _fits(array.shape, shape):
        raise InvalidArgumentError(
            f"cannot feed a value of shape {array.shape} to '{tensor.name}', which has "
            f"shape {tuple(shape)} (None = any size)")
    return array


def _refuse_wrapping_ints(tensor, array, np_dtype):
    """Refuse integers that ``astype(np_dtype)`` would wrap (``2**32 + 3`` fed to an int32
    placeholder would become 3: a label that silently changes class). TF1 wraps them."""
    found = out_of_range(array, np_dtype)
    if found is None:
        return
    bad, info = found
    raise InvalidArgumentError(
        f"cannot feed the value {bad} to '{tensor.name}', which is {tensor.dtype.name} (range "
        f"[{info.min}, {info.max}]): it does not fit; feed a wider placeholder or fix the "
        f"value (placeholder created at {tensor.source})")


def _as_array(tensor, value):
    if isinstance(value, np.ndarray) and (value.dtype.kind in "biufc"
                                          or dtypes.numpy_kind(value.dtype) == "f"):
        return value  # (bfloat16's own kind is "V"; the common case asks nothing more)
    try:
        array = np.asarray(value)
    except Exception as err:
        raise InvalidArgumentError(f"cannot feed {type(value).__name__} to '{tensor.name}': "
                                   f"{err}") from None
    if dtypes.numpy_kind(array.dtype) not in "biufc":
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
