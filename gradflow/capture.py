"""Running a compiled plan as one captured graph, replayed run after run.

A plan whose schedule is capturable (``gradflow.schedule``: no host-side random
draws, no host code, fixed shapes, every variable updated in place) is captured
once, after ``WARM_RUNS`` ordinary runs have taken its buffers and compiled its
kernels (they read the feeds from the fixed input arrays the capture reads, so that
what is planned per buffer is planned for those): the run is captured by the
backend's ``capturer()``, and every later run copies the new feeds into those
arrays and replays the capture, all under the session's store lock (a run still
sees all or none of another run's updates). The fetched values live in the same
memory on every replay, so the session copies them out.

A capturer is an object with ``capture(plan, run) -> (values, replay, executed)``
(``run()`` runs the plan once; ``replay()`` repeats it and returns its fetched
values; ``executed`` says whether capturing ran it too), ``check(schedule)``,
raising ``NotCapturable`` with the reason where it cannot capture that schedule,
and ``checks_feeds_first``: whether run-time checks (labels in range, a gather's
ids) are made on the feeds before each replay instead of inside it (a device graph
cannot raise). A backend with a ``gate`` (``CaptureGate``) captures only while no
other thread works on its device.
The CuPy backend's captures a CUDA graph on its stream;
``RecordingCapturer`` is the CPU's: it records every op call of the run and
replays the calls, which repeats the run only if every value lives in the same
memory on every run (``Schedule.replayable``), the property a CUDA graph needs.

Anything that fails while capturing leaves the plan running uncaptured; the
reason is logged once at debug level (logger ``gradflow.capture``) and kept on
the plan (``plan.capture_failure``).

What the backends need (``NotCapturable``, ``RecordingCapturer``, ``CaptureGate``)
lives below them, in ``gradflow.backends.capture``; this module drives a captured
run with a Session's run state (``gradflow.run_state.RunState``).
"""

from __future__ import annotations

import contextlib
import logging
import sys

from gradflow.backends.capture import STEP, CaptureGate, NotCapturable, RecordingCapturer
from gradflow.errors import GradflowError
from gradflow.executor import bind, node_at_failure, node_error, raise_closed
from gradflow.passes.ir import user_node
from gradflow.prim.index_checks import IndexOutOfRange, check_ids
from gradflow.schedule import is_multi

log = logging.getLogger("gradflow.capture")

# Ordinary runs before a plan is captured: the first takes its buffers and compiles
# its kernels, the second runs as every later run will.
WARM_RUNS = 2


class CapturedRun:
    """``plan`` captured by ``capturer`` from the run of ``feeds`` (see the module doc).
    Raises ``NotCapturable`` where it cannot be."""

    def __init__(self, plan, backend, capturer, inputs, store):
        schedule = plan.schedule
        capturer.check(schedule)
        _check_fetches(schedule)
        self.backend = backend
        self.inputs = inputs  # holding this run's feeds already
        feeds = inputs
        env = plan.fn.__globals__
        takers = {k: f for k, f in env.items() if k[0] == "I" and STEP.fullmatch(k)}
        for take in takers.values():
            var = take.keywords["var"]
            array = store.get(var)
            # references: the store, ``array`` and getrefcount's argument
            if array is None or sys.getrefcount(array) > 3:
                raise NotCapturable(f"the array of variable '{var.name}' is held outside "
                                    "the session (a native fetch?): its updates must be "
                                    "written in place")
        checks = _feed_checks(schedule, plan) if capturer.checks_feeds_first else {}
        self.checks = [(env[key], program) for key, program in checks.items()]
        id_checks = _id_checks(schedule, plan) if capturer.checks_feeds_first else {}
        self.id_checks = list(id_checks.values())
        self._check(feeds)  # this run's feeds too
        unchecked = {key: bind(backend, node, {**node.attrs, "validate": False})
                     for key, (node, *_) in id_checks.items()}
        for key, fn in unchecked.items():  # the plan passes out= to the one it bound
            if backend.accepts_out(fn) != backend.accepts_out(env[key]):
                raise NotCapturable(f"{id_checks[key][0].opdef.name} binds differently "
                                    "without its check of ids")
        replaced = {key: env[key] for key in list(checks) + list(unchecked)}
        env.update({k: _store_reader(take.keywords["var"]) for k, take in takers.items()})
        env.update({key: _passed for key in checks})
        env.update(unchecked)
        try:
            values, self._replay, executed = capturer.capture(
                plan, lambda: plan.fn(self.inputs, store))
        finally:
            env.update(takers)
            env.update(replaced)
        # the arrays the capture reads and writes: a replay is valid while the store
        # holds these very arrays (a run of another plan may give a variable a new one)
        self.pinned = [(var, store.get(var)) for var in dict.fromkeys(plan.variables)]
        self.first_values = values if executed else self._replay()

    def _copy_in(self, feeds):
        for array, value in zip(self.inputs, feeds):
            self.backend.copy_into(array, value)

    def run(self, feeds, store, store_lock):
        """The fetched values of one replay on ``feeds`` (arrays the next replay
        overwrites: copy what you keep), or None if a variable's array has changed
        since the capture (the caller recaptures)."""
        with store_lock:
            if store.closed:
                raise_closed()
            for var, array in self.pinned:
                if store.get(var) is not array:
                    return None
            self._check(feeds)  # a device graph cannot raise: check first
            self._copy_in(feeds)
            return self._replay()

    def _check(self, feeds):
        for check, program in self.checks:
            check(program(feeds))
        xp = self.backend.xp
        for node, program, size in self.id_checks:
            try:
                check_ids(xp, program(feeds), size)
            except IndexOutOfRange as err:  # as the op itself would have reported it
                raise node_error(node, err) from None


def _check_fetches(schedule):
    """A fetched variable value that the run then updates in place would change under
    the caller's hands on every replay."""
    updated = {schedule.recycled[v] for v in schedule.in_place}
    for node in schedule.targets:
        var = node if node.opdef.kind == "variable" else node.attrs.get("var") \
            if node.opdef.kind == "read_current" else None
        if var is not None and var in updated:
            raise NotCapturable(f"the run fetches variable '{var.name}', which it updates "
                                "in place")


def _feed_checks(schedule, plan):
    """``{plan step key: program}`` of the run-time checks, which a device graph cannot
    make: the replay makes each on ``program(feeds)``, its checked value computed from
    the feeds (``_feed_program``: labels reshaped or transposed, say) before launching
    it. A check of a value computed any other way makes the plan uncapturable."""
    checks = {}
    for node in schedule.checks:
        program = _feed_program(node.inputs[0], schedule, plan) \
            if len(node.inputs) == 1 else None
        if program is None:
            origin = user_node(node)
            raise NotCapturable(f"{node.opdef.name} '{origin.name}' (created at "
                                f"{origin.source}) checks a computed value at run time, "
                                "which a device graph cannot do")
        checks[f"F{schedule.position[node]}"] = program
    return checks


def _id_checks(schedule, plan):
    """``{plan step key: (node, program, size)}`` of the ops that check their ids
    themselves (``OpDef.id_check``): before each replay, ``program(feeds)`` computes the
    ids from the feeds (the plan's own steps: slices, concatenations, reshapes; integer
    values only) and they are checked. Ids computed from anything but feeds and
    constants make the plan uncapturable."""
    found = {}
    for node in schedule.order:
        spec = node.opdef.id_check(node) if node.opdef.id_check else None
        if spec is None:
            continue
        at, size = spec
        program = _feed_program(node.inputs[at], schedule, plan)
        if program is None or size is None:
            origin = user_node(node)
            raise NotCapturable(f"{node.opdef.name} '{origin.name}' (created at "
                                f"{origin.source}) checks ids computed in the run, which "
                                "a device graph cannot do")
        found[f"F{schedule.position[node]}"] = (node, program, size)
    return found


def _feed_program(target, schedule, plan):
    """``program(feeds)``: the value of ``target`` computed again from the feeds by the
    plan's own steps, where ``target`` is a feed or every step on the way is an integer
    computation (ids, labels: cheap) of feeds and constants; else None."""
    env, position = plan.fn.__globals__, schedule.position
    fed = {t: i for i, t in enumerate(plan.fed)}
    needed, stack = set(), [target]
    while stack:
        node = stack.pop()
        if node in needed or node in fed:
            continue
        kind = node.opdef.kind
        if kind == "constant" and f"C{position.get(node)}" in env:
            needed.add(node)
            continue
        if kind != "compute" or node.dtype is None or not node.dtype.is_integer \
                or is_multi(node) or f"F{position.get(node)}" not in env:
            return None
        needed.add(node)
        stack.extend(node.inputs)
    steps = [n for n in schedule.order if n in needed]

    def program(feeds):
        values = {t: feeds[i] for t, i in fed.items()}
        for node in steps:
            if node.opdef.kind == "constant":
                values[node] = env[f"C{position[node]}"]
            else:
                values[node] = env[f"F{position[node]}"](*[values[i] for i in node.inputs])
        return values[target]

    return program


def _passed(value):
    """A check inside the captured graph: its value, checked before the replay."""
    return value


def _store_reader(var):
    """The in-place taker of a captured run: the variable's own array, always (it was
    checked to be held by no one else before the capture)."""
    def take(store):
        return store[var]

    return take


def run_captured(run, plan, feeds):
    """The fetched values of ``plan``'s run on ``feeds`` through its capture, made after
    ``WARM_RUNS`` runs; None where the plan runs uncaptured (the caller runs it).
    ``run`` is the Session's run state (its store, store lock, backend and gate)."""
    captured = plan.captured
    if captured is not None:
        values = captured.run(feeds, run.store, run.store_lock)
        if values is not None:
            return values
        log.debug("plan %s is captured again: a variable has a new array", plan.filename)
        plan.captured, plan.runs = None, 0
    if plan.capture_failure is not None:
        return None
    backend = run.backend
    capturer = backend.capturer()
    try:
        if plan.runs == 0:
            capturer.check(plan.schedule)
        # the warm runs read the feeds from the arrays the capture will read, so that
        # whatever is planned per buffer (a matmul) is planned before capturing
        inputs = _fixed_inputs(plan, backend, feeds)
    except NotCapturable as err:
        return _uncaptured(plan, err)
    plan.runs += 1
    if plan.runs <= WARM_RUNS:
        return plan.fn(inputs, run.store)
    gate = run.gate  # the backend's, looked up once per session
    with run.store_lock, gate.exclusive() if gate else contextlib.nullcontext(True) \
            as alone:
        if alone:
            try:
                plan.captured = CapturedRun(plan, backend, capturer, inputs, run.store)
            except GradflowError:  # this run's feeds failed a check: the user's error
                raise
            except Exception as err:  # the plan stays as it was: uncaptured
                return _uncaptured(plan, err)
    if plan.captured is None:  # another thread is using the device: capture at a later run
        return plan.fn(inputs, run.store)
    log.debug("plan %s is captured", plan.filename)
    return plan.captured.first_values


def _uncaptured(plan, err):
    """Note why ``plan`` runs uncaptured from now on; None (the caller runs it)."""
    reason = str(err) if isinstance(err, NotCapturable) else \
        f"capturing failed: {type(err).__name__}: {err}"
    at = node_at_failure(plan, err.__traceback__)
    if at is not None:  # the step whose work the capture refused
        reason += f" (in {at.describe()})"
    plan.capture_failure = reason
    log.debug("plan %s runs uncaptured: %s", plan.filename, reason)
    return None


def _fixed_inputs(plan, backend, feeds):
    """The plan's own input arrays (made on its first run), holding ``feeds``."""
    inputs = getattr(plan, "capture_inputs", None)
    if inputs is None or any(tuple(a.shape) != tuple(f.shape) or a.dtype != f.dtype
                             for a, f in zip(inputs, feeds)):
        if inputs is not None:
            raise NotCapturable("its feeds change shape from run to run")
        inputs = plan.capture_inputs = [backend.empty(tuple(f.shape), f.dtype) for f in feeds]
    for array, value in zip(inputs, feeds):
        backend.copy_into(array, value)
    return inputs


__all__ = ["WARM_RUNS", "CaptureGate", "CapturedRun", "NotCapturable", "RecordingCapturer",
           "run_captured"]
