"""What a run does, decided once per compiled plan and free of any array library.

``build_schedule`` takes the ordered nodes of a run (after the graph compiler's
passes) and decides: the order, with the part that must run under the store lock
last (``commit_start``); when each value dies; which values live in the plan's
arena (buffer slots with dtypes and sizes, planned once per specialized plan);
which concats have their parts written straight into their rows; which values
assigned to a variable reuse its arrays, and which update it in place; the
variables read and written; and whether the plan can be replayed without host
work (captured as one CUDA graph), with the reason when it cannot.

The only thing it asks of a backend is what its bound function of each op can do
(``Capabilities``): write into a given buffer, read more of an input than the
element it writes, or write over one of its inputs. Emitters (the Python plan of
``gradflow.executor``; a capturing GPU emitter) then decide only how each step
runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

from gradflow.graph import topological_order
from gradflow.passes.ir import user_node
from gradflow.prim.plan import FUSED, FUSED_OUTPUT


class Capabilities(Protocol):
    """What the backend's bound function of a node can do (``gradflow.executor``)."""

    def writes_out(self, node) -> bool:
        """It writes its result into a given array (``out=``)."""

    def reads_whole(self, node) -> bool:
        """It reads more of an input than the element it writes (a matmul, a sum)."""

    def overwrites_input(self, node) -> bool:
        """Its ``out`` may be one of its inputs of the same shape (elementwise code)."""

    def draws_on_device(self, node) -> bool:
        """A random op whose numbers the backend draws on its device, from a counter in
        device memory (a captured run draws new ones on every replay)."""


@dataclass
class Schedule:
    """A run, decided: see the module docstring. ``arena`` maps a value to its slot,
    ``slots`` gives each slot's ``(dtype, elements)``; ``part_of`` maps a concat's part
    to ``(concat, start row, stop row)``; ``recycled`` maps a value assigned to a
    variable to that variable; ``in_place`` (a subset) to 1 where the writing op reads
    the variable's current value itself, else 0."""

    order: list
    fed: frozenset
    targets: list
    commit_start: int
    last_use: dict
    readers: dict
    keep: set
    arena: dict = field(default_factory=dict)
    slots: list = field(default_factory=list)
    stacks: dict = field(default_factory=dict)
    part_of: dict = field(default_factory=dict)
    recycled: dict = field(default_factory=dict)
    in_place: dict = field(default_factory=dict)
    replay_blocker: str | None = None
    allocating: list = field(default_factory=list)
    checks: list = field(default_factory=list)

    @property
    def capturable(self) -> bool:
        """Whether every run does the same device work, so that it can be captured once
        as a graph and replayed (``replay_blocker`` says why not); values written into
        new arrays (``allocating``) then take memory the capture keeps."""
        return self.replay_blocker is None

    @property
    def replayable(self) -> bool:
        """Whether every run also writes every value into the same memory, so that
        repeating the run's calls alone repeats the run."""
        return self.replay_blocker is None and not self.allocating

    def why_not_replayable(self) -> str | None:
        if self.replay_blocker is not None or not self.allocating:
            return self.replay_blocker
        node = self.allocating[0]
        origin = user_node(node)
        return (f"{node.opdef.name} '{origin.name}' (created at {origin.source}) writes a "
                "new array on each run, not a buffer of the plan")

    @property
    def arena_bytes(self) -> int:
        return sum(size * dtype.as_numpy_dtype().itemsize for dtype, size in self.slots)

    @property
    def position(self) -> dict:
        return {node: step for step, node in enumerate(self.order)}

    def describe(self) -> str:
        """The schedule as text: one line per step, then the arena's buffers and the
        replay verdicts."""
        out = [f"plan: {len(self.order)} steps, arena {len(self.slots)} buffers, "
               f"{self.arena_bytes:,} bytes"]
        for step, node in enumerate(self.order):
            if step == self.commit_start:
                out.append("  -- commit, under the store lock --")
            out.append(f"  {step:3d} {self._step_text(node)}")
        for k, (dtype, size) in enumerate(self.slots):
            out.append(f"  buffer {k}: {size:,} x {dtype.name}")
        out.append("  capturable as one device graph: yes" if self.capturable
                   else f"  capturable as one device graph: no, {self.replay_blocker}")
        out.append("  replayable call by call: yes" if self.replayable
                   else f"  replayable call by call: no, {self.why_not_replayable()}")
        return "\n".join(out)

    def _step_text(self, node):
        shape = "?" if node.shape is None else "x".join(str(d) for d in node.shape) or "scalar"
        if node in self.fed:
            what = f"feed '{node.name}'"
        elif node.opdef is FUSED:
            members = node.attrs["program"].members
            what = f"fused[{', '.join(m.type for m in members)}] '{user_node(members[-1]).name}'"
        else:
            what = f"{node.opdef.name} '{user_node(node).name}'"
        where = ""
        if node in self.arena:
            where = f" -> buffer {self.arena[node]}"
        elif node in self.part_of:
            stack, start, stop = self.part_of[node]
            where = f" -> rows {start}:{stop} of buffer {self.arena[stack]}"
        elif node in self.in_place:
            where = f" -> '{self.recycled[node].name}' in place"
        elif node in self.recycled:
            where = f" -> the spare array of '{self.recycled[node].name}'"
        dtype = f" {node.dtype.name}" if node.dtype is not None else ""
        return f"{what} {shape}{dtype}{where}"


def run_order(targets, fed):
    """``(order, commit_start)``: the nodes that compute ``targets`` from ``fed``, inputs
    first, the outputs of each multi-output kernel right after it, and the part that
    reads variables at commit last (``commit_last``)."""
    return commit_last(outputs_after_fused(topological_order(targets, set(fed))), set(fed))


def build_schedule(order, commit_start, fed, targets, can: Capabilities) -> Schedule:
    """Decide the run of ``order`` (from ``run_order``) that computes ``targets``."""
    fed = frozenset(fed)
    last_use = {}
    for step, node in enumerate(order):
        if node not in fed:
            for inp in node.inputs + node.control_inputs:
                last_use[inp] = step
    for step, node in enumerate(order):  # a multi-output kernel's inputs live until it
        if node.opdef is FUSED_OUTPUT:   # has written its last output (see arena_slots)
            for inp in node.inputs[0].inputs:
                last_use[inp] = max(last_use[inp], step)
    readers = {}
    for node in order:
        for inp in node.inputs:
            readers.setdefault(inp, []).append(node)
    keep = set(targets) | {n for n in order if n.opdef.kind == "assign"}
    s = Schedule(list(order), fed, list(targets), commit_start, last_use, readers, keep)
    computed = [n for n in order if n not in fed and n.opdef.kind == "compute"]
    takes_out, donors, no_views = buffer_reuse(order, computed, can, readers, keep, last_use)
    whole = {n for n in computed if can.reads_whole(n)}
    s.stacks = row_stacks(order, takes_out, no_views, s.keep, readers)
    s.part_of = {part: (stack, start, stop) for stack, parts in s.stacks.items()
                 for part, start, stop in parts}
    position = s.position
    early = {}
    for stack, parts in s.stacks.items():  # its buffer holds its parts from the first one
        early.setdefault(min(position[p] for p, _, _ in parts), []).append(stack)
        last_use[stack] = max(last_use.get(n, position[n])
                              for n in stack_readers(stack, parts, readers))
    s.arena, s.slots = arena_slots(order, (donors - s.keep - set(s.part_of)) | set(s.stacks),
                                   last_use, whole, early)
    s.recycled = recyclable_assign_sources(order, takes_out, s.keep)
    s.in_place = {v: held for v, held in
                  updated_in_place(order, s.recycled, can, last_use).items()
                  if position[v] >= commit_start}
    s.replay_blocker, s.allocating, s.checks = replay_verdict(s, can)
    return s


def replay_verdict(s: Schedule, can: Capabilities):
    """``(blocker, allocating, checks)`` of schedule ``s``: why its run cannot be
    captured and replayed without host work (None if it can); the values written into
    a new array on each run (a graph capture can give them memory of its own, a
    replay that only repeats the calls cannot); and the ops that check a value at run
    time (a device graph cannot raise: a capture checks fed values on the host before
    each replay, and cannot capture checks of computed ones)."""
    allocating, checks = [], []
    for node in s.order:
        if node in s.fed:
            continue
        kind = node.opdef.kind
        origin = user_node(node)
        where = f"{node.opdef.name} '{origin.name}' (created at {origin.source})"
        draws = [node] if kind == "random" else [  # a fused node's drawn members too
            m for m in node.attrs["program"].members if m.opdef.kind == "random"] \
            if node.opdef is FUSED else ()
        for draw in draws:
            if not can.draws_on_device(draw):
                origin = user_node(draw)
                return (f"{draw.opdef.name} '{origin.name}' (created at {origin.source}) "
                        "draws its random numbers on the host"), allocating, checks
        if kind == "call":
            return f"{where} runs host code", allocating, checks
        if kind in ("compute", "variable", "read_current") and (
                node.shape is None or None in tuple(node.shape)):
            return f"{where} has a shape known only at run time", allocating, checks
        if kind == "assign" and node.inputs[0] not in s.in_place:
            return (f"{where} gives its variable a new array instead of updating it in "
                    "place"), allocating, checks
        if node.opdef.check:
            checks.append(node)
        elif node.opdef.shape_noop and node not in s.arena and node.inputs \
                and node.inputs[0].opdef.view:
            allocating.append(node)  # reshaping a strided view copies
        elif kind == "compute" and node not in s.arena and node not in s.part_of \
                and node not in s.in_place and node not in s.keep \
                and not is_multi(node) and not _aliases_input(node):  # (its outputs have)
            allocating.append(node)
    return None, allocating, checks


def _aliases_input(node):
    opdef = node.opdef
    return opdef.view or opdef.shape_noop or opdef.pass_through or opdef.check


def output_count(node):
    if node.opdef is FUSED:
        return len(node.attrs["program"].outputs)
    return getattr(node.opdef, "outputs", 1)


def is_multi(node):
    """Whether ``node`` has several outputs (its value is a tuple): a fused node, or a
    plan-only op such as ``lstm_step``."""
    return output_count(node) > 1


def outputs_after_fused(order):
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


def commit_last(order, fed):
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


def buffer_reuse(order, computed, can, readers, keep, last_use):
    """``(takes_out, donors, no_views)``: the ops that can write into a given buffer
    (``out=``), the values whose buffers the plan may own and overwrite once they are
    dead, and the ops that never return a view of an input.

    An op takes ``out=`` when the backend says its function can and its result has a
    fully known shape. Such a result is a donor when no view of it can
    outlive it: every op reading it returns no view of it, or is a view op (a slice, a
    reshape, an identity: ``view``, ``shape_noop``, ``pass_through``) whose value is
    not kept and is read the same way in turn; the donor's life then extends to the
    last use of its views (``last_use`` is updated).
    """
    writers = {n for n in computed if can.writes_out(n)}
    multi = {n for n in writers if is_multi(n)}  # their outputs take the buffers
    candidates = [n for n in writers if n not in multi] + [
        n for n in order if n.opdef is FUSED_OUTPUT and n.inputs[0] in multi]
    takes_out = {n for n in candidates if n.shape is not None and None not in n.shape}
    # a view op that writes into out= still returns its input when it is given none
    no_views = {n for n in takes_out | multi if not _aliases_input(n)}

    def reach(node, seen):
        """The last step at which ``node`` or a view of it is read, or None if a view
        of it may outlive the run's use of it."""
        last = last_use.get(node, -1)
        for r in readers.get(node, ()):
            if r in no_views:
                continue
            if r in keep or r in seen or not _aliases_input(r) or r.opdef.kind != "compute":
                return None
            seen.add(r)
            end = reach(r, seen)
            if end is None:
                return None
            last = max(last, end)
        return last

    donors = set()
    for n in takes_out:
        end = reach(n, set())
        if end is not None:
            donors.add(n)
            if end > last_use.get(n, -1):
                last_use[n] = end
    return takes_out, donors, no_views


def row_stacks(order, takes_out, no_views, keep, readers):
    """``{concat: [(part, start, stop)]}``: concats along axis 0 whose parts the plan
    writes straight into their rows of the concat's buffer, so that the concat copies
    nothing (the gradient code stacks an RNN's per-step values this way).

    A part qualifies when its op writes into ``out=`` (``takes_out``), nothing reads it
    that could return a view of it, it is not fetched and belongs to no other stack;
    the concat when it is not fetched and each op reading it that could return a view
    of it is not fetched and read only by ops that cannot. Such a concat and its parts
    then live in one buffer of the arena from the first part written to the last
    reader of any of them, or of such a view (``stack_readers``).
    """
    # concats copy: they return no view either
    no_views = no_views | {n for n in order if n.opdef.name == "concat"
                           and n.opdef.kind == "compute"}
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


def stack_readers(stack, parts, readers):
    """The nodes whose last use a row stack's buffer must outlive: its parts, itself and
    the readers of it that might return a view of it."""
    return [p for p, _, _ in parts] + [stack] + list(readers.get(stack, ()))


def arena_slots(order, nodes, last_use, whole=(), early=None):
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
    root = {}  # a view's value -> the value whose memory it reads
    for node in order:
        if _aliases_input(node) and node.inputs:
            root[node] = root.get(node.inputs[0], node.inputs[0])

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
            # never over an input that another input views (``y + transpose(y)``): the
            # op would read elements it has already overwritten
            same = [] if node in whole else [
                i for i in dying if i.dtype == node.dtype and i.shape == node.shape
                and not any(j is not i and root.get(j) is i for j in node.inputs)]
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


def recyclable_assign_sources(order, takes_out, keep):
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


def updated_in_place(order, recycled, can, last_use):
    """``{value: held}`` for the values assigned to a variable that can be written over
    the variable's own array at commit: neither the variable's value at the run's start
    nor its ``read_current`` (where the plan reads them) is read after the op that
    writes the value, and where that op reads one (``held``), the backend's function
    tolerates its output over that input."""
    position = {node: step for step, node in enumerate(order)}
    current = {n.attrs["var"]: n for n in order if n.opdef.kind == "read_current"}
    done = {}  # writer -> the step of its last output (a multi-output kernel's outputs)
    for step, node in enumerate(order):
        done[node.inputs[0] if node.opdef is FUSED_OUTPUT else node] = step
    out = {}
    for value, var in recycled.items():
        writer = value.inputs[0] if value.opdef is FUSED_OUTPUT else value
        reads = (current.get(var), var if var in position else None)
        late = [r for r in reads if r is not None and last_use.get(r, -1) >= position[writer]]
        if not late:
            out[value] = 0
        elif len(late) == 1 and last_use[late[0]] <= done[writer] \
                and late[0] in writer.inputs and can.overwrites_input(writer):
            out[value] = 1
    return out
