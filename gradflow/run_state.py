"""``RunState``: what the runs of one Session need, as one object handed over.

A Session makes one ``RunState`` and hands it to everything its runs call: the
plan compiler (``gradflow.executor.compile_plan``), the backend's emitters and
device random streams, the capture (``gradflow.capture``), and every op of kind
``"call"`` (``opdef.impl(run_state, node)``: a ``cond``'s sub-plans, a queue's state, an
iterator's pipeline). None of them sees the Session or reaches into it; what they
may use is listed here, public. Beside it: the low dtype a Session's mixed precision
runs in (``session_mixed_precision``) and a traced run's step statistics
(``record_trace``), which the Session asks for here.
"""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np

from gradflow import config, dtypes
from gradflow.config import DeviceStepStats, NodeExecStats, StepStats
from gradflow.executor import VariableStore, compile_plan
from gradflow.passes.ir import user_node
from gradflow.passes.mixed_precision import low_dtype
from gradflow.prim.plan import FUSED

# The graph seed of a random op that has an op seed but no graph seed (as TF1's).
DEFAULT_GRAPH_SEED = 87654321


class RunState:
    """The state a Session's runs share, and the flags they are compiled with.

    ``graph`` and ``backend`` are the Session's; ``seed`` seeds random ops that have
    no graph or op seed. ``optimize`` and ``check_numerics`` are read by each new
    plan (``gradflow.executor.compile_plan``), as is ``mixed_precision``: the low float
    dtype its plans run their products in (``gradflow.passes.mixed_precision``), or
    None; ``capture`` says whether plans are
    captured and replayed (``gradflow.capture``), ``gate`` is the backend's
    ``CaptureGate`` (or None) and ``running`` the context a run happens in (a GPU
    backend's stream), or None.

    ``store`` holds the variables' values (variable -> array); runs read their
    variables and write their assignments each in one block under ``store_lock``
    (re-entered by the sub-plans of control flow). ``spare_buffers`` maps a variable
    to the array it held before the last run that assigned it (the executor writes
    its next value there). ``resources`` holds the state that graph objects keep per
    Session (``gf.data`` iterators, queues, readers), closed with it.
    """

    def __init__(self, graph, backend, seed=None, optimize=True, check_numerics=False,
                 capture=False, mixed_precision=None):
        self.graph = graph
        self.backend = backend
        self.mixed_precision = mixed_precision
        self.seed = seed
        self.optimize = optimize
        self.check_numerics = check_numerics
        self.capture = capture
        self.gate = getattr(backend, "gate", None)
        self.running = backend.running
        self.store = VariableStore()
        self.store_lock = threading.RLock()
        self.spare_buffers: dict = {}
        self.resources: dict = {}
        self._constants: dict = {}
        self._rngs: dict = {}

    @property
    def closed(self) -> bool:
        """Whether the Session has closed (its variables are gone)."""
        return self.store.closed

    def compile_subplan(self, fetches, fed):
        """The plan of a sub-graph (a ``cond`` branch, a loop body), for the op that
        holds it: ops get the plan compiler from the run state, never by importing it."""
        return compile_plan(self, list(fetches), fed)

    def new_store(self):
        """An empty variable store (a ``cond`` branch writes its assignments into one)."""
        return VariableStore()

    def constant_value(self, node):
        """The backend array of a constant node, converted once per Session."""
        node = user_node(node)
        value = self._constants.get(node)
        if value is None:
            value = self._constants[node] = self.backend.device_value(
                node.attrs["value"].array)
        return value

    def host_rng(self, node):
        """The host random generator of one random node (same numbers on every backend)."""
        node = user_node(node)
        rng = self._rngs.get(node)
        if rng is None:
            graph_seed, op_seed = node.attrs["graph_seed"], node.attrs["op_seed"]
            if graph_seed is None and op_seed is None:
                entropy = None if self.seed is None else [int(self.seed), node.index]
            else:
                entropy = [DEFAULT_GRAPH_SEED if graph_seed is None else graph_seed, op_seed]
            rng = self._rngs[node] = np.random.default_rng(entropy)
        return rng

    def close(self) -> None:
        """Free the variables and close the resources. A run still in flight in another
        thread then fails at its next read or write of a variable, writing nothing."""
        with self.store_lock:
            self.store.closed = True
            self.store.clear()
        for resource in list(self.resources.values()):
            getattr(resource, "close", lambda: None)()
        self.resources.clear()
        self.spare_buffers.clear()
        self._constants.clear()


def session_mixed_precision(requested, session_config, backend):
    """The low dtype a Session's plans run in (None: float32 as built): ``requested``
    (``Session(mixed_precision=)``: ``"bf16"``, ``"fp16"``, ``"bfloat16"``,
    ``"float16"``, a dtype; None or False: none asked), else what ``session_config``'s
    rewrite options or TF1's process-wide flag ask for (``gradflow.config``).

    A backend without the dtype (array_api_strict has no half types) refuses an
    explicit request (the keyword, the config) with a ``ValueError``; the process-wide
    flag is skipped there with a warning, as TF1 skips its rewrite without a GPU, so
    that a program which enabled it still runs on such a backend, in float32.
    """
    explicit = requested is not None and requested is not False
    if explicit:
        dtype = low_dtype(requested)
    else:
        name, explicit = config.requested_mixed_precision(session_config)
        if name is None:
            return None
        dtype = dtypes.as_dtype(name)
    try:
        dtype.resolve(backend.xp)
    except (AttributeError, TypeError):
        if explicit:
            raise ValueError(f"mixed precision in {dtype.name}: the {backend.name} backend "
                             f"has no {dtype.name} arrays; run it on numpy or torch (or "
                             "cupy)") from None
        warnings.warn(f"the mixed-precision graph rewrite is enabled, but the "
                      f"{backend.name} backend has no {dtype.name} arrays: this Session "
                      "runs in float32", stacklevel=3)
        return None
    return dtype


def record_trace(plan, run_metadata, backend):
    """Fill ``run_metadata.step_stats`` with the times ``plan`` recorded in its run."""
    epoch = time.time() - time.perf_counter()
    stats = []
    for node, start, end in plan.trace:
        if node.opdef is FUSED:
            program = node.attrs["program"]
            name = "+".join(user_node(m).name for m in program.members)
            label = f"fused = fused({program.describe()})"
        else:
            origin = user_node(node)
            name = origin.name
            inputs = ", ".join(user_node(i).name for i in node.inputs)
            label = f"{name} = {node.opdef.name}({inputs}) at {origin.source}"
        begin = int((epoch + start) * 1e6)
        took = max(int((end - start) * 1e6), 0)
        stats.append(NodeExecStats(node_name=name, all_start_micros=begin,
                                   op_start_rel_micros=0, op_end_rel_micros=took,
                                   all_end_rel_micros=took, timeline_label=label,
                                   thread_id=threading.get_ident() & 0x7FFFFFFF))
    device = f"/job:localhost/replica:0/task:0/device:{backend.name}:0"
    run_metadata.step_stats = StepStats(dev_stats=[DeviceStepStats(device=device,
                                                                   node_stats=stats)])
