"""Session: binds a graph to a backend, holds variable values, runs plans."""

from __future__ import annotations

import threading

import numpy as np

from gradflow import backends
from gradflow.capture import run_captured
from gradflow.errors import GradflowError, InvalidArgumentError, ResourceExhaustedError
from gradflow.executor import (
    check_feed,
    compile_plan,
    is_feedable,
    node_at_failure,
    node_error,
    raise_closed,
)
from gradflow.graph import Tensor, _OpView, _state, get_default_graph, register_session_finder
from gradflow.run_state import RunState, record_trace, session_mixed_precision
from gradflow.sparse_tensor import SparseTensor, SparseTensorValue, expand_feeds

# What adds feeds to a run from outside the feed_dict: ``source(run_state, fetches,
# feed_items) -> [(tensor, value)]``. gf.data registers its iterators' batches here
# (``gradflow.data.feeding``): it sits above the session, which cannot import it.
_feed_sources: list = []


def register_feed_source(source) -> None:
    """Have every ``Session.run`` call ``source(run_state, fetches, feed_items)`` for
    more ``(tensor, value)`` feeds (gf.data's iterators give their next batches so)."""
    if source not in _feed_sources:
        _feed_sources.append(source)


class Session:
    """Runs parts of a graph on one array backend and holds its variables.

    ``backend`` is a name (``"numpy"``, ``"torch"``, ``"cupy"``,
    ``"array_api_strict"``) or a backend object; ``None`` means
    ``$GRADFLOW_BACKEND``, else numpy. ``seed`` seeds random ops that have no
    graph or op seed. ``optimize=False`` runs the graph as built, without the
    compiler's passes (common subexpressions, constant folding, rewrites, fused
    elementwise kernels; see ``gradflow.passes``), to compare or to debug.
    ``check_numerics=True`` checks every floating value a run
    computes, feeds or reads, and raises at the first NaN or infinity, naming
    the op that produced it and the line of your code that built it (slower:
    for hunting a NaN, not for training). ``capture`` (default: on for the CuPy
    backend, off elsewhere) captures each plan whose run the device can repeat
    without host work as one graph after its first runs, and replays it
    (``gradflow.capture``; ``capture=True`` on NumPy replays the recorded op calls,
    the CPU's check of the same property). ``allow_tf32=True`` lets float32
    matmuls on a GPU use TF32 tensor cores (as ``allow_tf32`` in PyTorch).
    ``mixed_precision="bf16"`` (``"fp16"``, ``"bfloat16"``, ``"float16"``) runs the
    products and the cheap ops between them in that dtype, the rest in float32, as TF1's
    ``auto_mixed_precision`` rewrite (``gradflow.passes.mixed_precision``), which
    ``config``'s rewrite options and TF1's ``enable_mixed_precision_graph_rewrite`` turn
    on too.
    ``Session.run`` may be called from
    several threads at once. Values of variables live here, not in the graph, so one
    graph can run in several sessions at once.

    >>> with gf.Session(backend="numpy") as sess:
    ...     sess.run(gf.global_variables_initializer())
    ...     print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
    """

    def __init__(self, graph=None, backend=None, device=None, seed=None, target=None,
                 config=None, check_numerics=False, optimize=True, capture=None,
                 allow_tf32=False, mixed_precision=None):
        if isinstance(graph, str):  # TF1's Session(target): no remote targets here
            graph = None
        backend = backends.get(backend, device)
        if allow_tf32:
            backend.allow_tf32 = True
        capture = getattr(backend, "captures", False) if capture is None else bool(capture)
        # everything a run needs, handed to the plan compiler, capture and call ops
        self.run_state = RunState(graph if graph is not None else get_default_graph(),
                                  backend, seed, bool(optimize), bool(check_numerics), capture,
                                  session_mixed_precision(mixed_precision, config, backend))
        self._plans: dict = {}
        self._closed = False
        self._init_lock = threading.RLock()  # initializes each variable once
        self._shape_plans: dict = {}  # fetch-set key -> shape-specialized plans made

    # -- what the run state holds, read through the Session -----------------------------
    graph = property(lambda self: self.run_state.graph, doc="The graph this Session runs.")
    backend = property(lambda self: self.run_state.backend,
                       doc="The array backend the Session runs on.")
    seed = property(lambda self: self.run_state.seed,
                    doc="The seed of random ops that have no graph or op seed.")
    resources = property(lambda self: self.run_state.resources,
                         doc="State that graph objects keep per Session (gf.data iterators).")
    spare_buffers = property(lambda self: self.run_state.spare_buffers,
                             doc="Variable -> the array it held before the last run that "
                                 "assigned it (see gradflow.executor).")
    store_lock = property(lambda self: self.run_state.store_lock,
                          doc="The lock under which runs read and write the variables.")
    mixed_precision = property(lambda self: self.run_state.mixed_precision,
                               doc="The low float dtype the plans run in, or None.")

    @property
    def optimize(self) -> bool:
        """Whether new plans run the graph compiler's passes (``Session(optimize=)``)."""
        return self.run_state.optimize

    @optimize.setter
    def optimize(self, value):
        self.run_state.optimize = bool(value)

    @property
    def check_numerics(self) -> bool:
        """Whether new plans check every floating value (``Session(check_numerics=)``)."""
        return self.run_state.check_numerics

    @check_numerics.setter
    def check_numerics(self, value):
        self.run_state.check_numerics = bool(value)

    @property
    def capture(self) -> bool:
        """Whether plans are captured and replayed (``Session(capture=)``)."""
        return self.run_state.capture

    @capture.setter
    def capture(self, value):
        self.run_state.capture = bool(value)

    def host_rng(self, node):
        """The host random generator of one random node (same numbers on every backend)."""
        return self.run_state.host_rng(node)

    # -- context management ----------------------------------------------------
    def __enter__(self) -> "Session":
        _state.session_stack.append(self)
        return self

    def __exit__(self, *exc):
        if _state.session_stack and _state.session_stack[-1] is self:
            _state.session_stack.pop()
        self.close()
        return False

    def as_default(self):
        """Context manager that makes this the default session without closing it."""
        return _DefaultSession(self)

    def close(self) -> None:
        """Free the session's variables, plans and resources (``gf.data`` iterators). A
        run still in flight in another thread then fails at its next read or write of a
        variable, writing nothing."""
        state = self.run_state
        with state.store_lock:
            self._closed = True
        state.close()
        self._plans.clear()
        self._shape_plans.clear()

    # -- running ---------------------------------------------------------------
    def make_callable(self, fetches, feed_list=None, accept_options=False):
        """TF1: a function that runs ``fetches`` with its arguments fed, in order, to the
        tensors of ``feed_list``; with ``accept_options``, it also takes ``options=`` and
        ``run_metadata=``.

        >>> step = sess.make_callable(train_op, [x, y])
        >>> step(batch_x, batch_y)
        """
        feed_list = list(feed_list or [])
        for key in feed_list:
            self._resolve(key, "feed")  # a wrong key fails here, not at the first call

        def call(*values, options=None, run_metadata=None):
            if len(values) != len(feed_list):
                raise TypeError(f"the callable takes {len(feed_list)} values to feed "
                                f"(feed_list), got {len(values)}")
            if not accept_options and (options is not None or run_metadata is not None):
                raise TypeError("options and run_metadata need make_callable(..., "
                                "accept_options=True)")
            return self.run(fetches, dict(zip(feed_list, values)) if feed_list else None,
                            options=options, run_metadata=run_metadata)

        return call

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None, output="numpy"):
        """Compute ``fetches`` (a tensor, an op, or a nested list/tuple/dict of them).

        Returns NumPy arrays (``None`` for operations) in the structure of
        ``fetches``; ``output="native"`` returns the backend's own arrays.
        """
        if self._closed:
            raise_closed()
        gate = self.run_state.gate
        if gate is None:
            return self._run(fetches, feed_dict, options, run_metadata, output)
        with gate.run():  # no other thread's device work while a plan is captured
            return self._run(fetches, feed_dict, options, run_metadata, output)

    def _run(self, fetches, feed_dict, options, run_metadata, output):
        flat, rebuild = self._fetch_list(fetches)
        if not flat:  # run([]), run({}): nothing to compute (TF1 gives the empty structure)
            return rebuild([])
        feed_items, feed_keys = self._feed_items(flat, feed_dict)
        key = (tuple(flat), feed_keys)
        plan = self._plans.get(key)  # the steady state inline: a run's every call counts
        if plan is None or plan.specialize:
            plan, feeds = self._plan(key, plan, feed_items)
        else:
            feeds = self._convert_feeds(feed_keys, feed_items)
        tracing = options is not None and getattr(options, "trace_level", 0) > 0
        if tracing:
            plan = self._traced_plan(key, feeds)
        elif not plan.lock.acquire(blocking=False):  # another thread runs this plan now
            plan = self._free_instance(plan, flat, feed_keys, feeds)
        state = self.run_state
        try:
            if plan.initialized and state.running is None and not state.capture:
                try:
                    values = plan.fn(feeds, state.store)
                except Exception as err:
                    raise self._run_error(plan, err) from err
            else:
                values = self._execute(plan, feeds, tracing)
            if tracing and run_metadata is not None:
                record_trace(plan, run_metadata, state.backend)
        finally:
            plan.lock.release()
        if output == "numpy":
            to_host = state.backend.host_value
            # a summary's value is bytes (a serialized protobuf), returned as it is; a
            # scalar is a NumPy scalar of its dtype, as TF1 returns it (np.float32(0.5))
            try:
                values = [v if v is None or isinstance(v, bytes) else to_host(v)[()]
                          for v in values]
            except MemoryError as err:
                raise ResourceExhaustedError(
                    f"out of memory copying the fetched values to NumPy ({err}); fetch "
                    "less, or pass output='native' to get the backend's arrays as they "
                    "are") from None
        elif output != "native":
            raise ValueError(f"output must be 'numpy' or 'native', got {output!r}")
        return values[0] if rebuild is None else rebuild(values)

    def _feed_items(self, flat, feed_dict):
        """The ``(key, value)`` feeds of a run (``feed_dict``'s, then the registered feed
        sources': gf.data iterators' batches) and their tensors, resolved."""
        try:
            feed_items = list(feed_dict.items()) if feed_dict else []
        except AttributeError:
            raise TypeError("Session.run: feed_dict must be a dict of {tensor: value}, got "
                            f"{type(feed_dict).__name__}") from None
        for source in _feed_sources:
            feed_items += source(self.run_state, flat, feed_items)
        try:
            feed_keys = tuple(self._resolve(k, "feed") for k, _ in feed_items)
        except _SparseKey:  # fed as its three parts; found where keys are resolved anyway
            feed_items = expand_feeds(feed_items)
            feed_keys = tuple(self._resolve(k, "feed") for k, _ in feed_items)
        return feed_items, feed_keys

    def _plan(self, key, plan, feed_items):
        """``(plan, converted feeds)`` of a run whose cached ``plan`` (looked up by
        ``key``) is missing or specializes to the fed shapes."""
        if plan is None:
            return self._plan_for(key, feed_items)
        feeds = self._convert_feeds(key[1], feed_items)
        key = (key, tuple(tuple(f.shape) for f in feeds))  # a plan per set of fed shapes
        return self._plans.get(key) or self._compile(key, feeds), feeds

    def _execute(self, plan, feeds, tracing):
        """The fetched values of one run of ``plan`` (locked by the caller) on ``feeds``."""
        state = self.run_state
        if not plan.initialized:
            self.initialize_missing(plan.variables)
            plan.initialized = True
        try:
            if state.running is None and not state.capture:
                return plan.fn(feeds, state.store)
            if state.running is None:
                return self._run_plan(plan, feeds, tracing)
            with state.running():
                return self._run_plan(plan, feeds, tracing)
        except Exception as err:
            raise self._run_error(plan, err) from err

    def _run_plan(self, plan, feeds, tracing):
        state = self.run_state
        if state.capture and not tracing:
            values = run_captured(state, plan, feeds)
            if values is not None:  # the next replay overwrites them: copies for the caller
                copy = state.backend.copy
                return [v if v is None or isinstance(v, bytes) else copy(v) for v in values]
        return plan.fn(feeds, state.store)

    # Shape-specialized plans kept per fetch set: a loop over ragged batch sizes must not
    # compile a plan per size, so past this many it uses the general plan.
    MAX_SHAPE_PLANS = 8

    def _plan_for(self, key, feed_items):
        """``(plan, converted feeds)`` for a fetch set seen for the first time."""
        flat, feed_keys = key
        for t in feed_keys:
            if not is_feedable(t):
                raise InvalidArgumentError(
                    f"'{t.name}' ({t.type}) cannot be fed: it is an operation or an "
                    "assignment, not a value; feed a placeholder or another tensor")
        feeds = self._convert_feeds(feed_keys, feed_items)
        if self._specializes(feed_keys):
            marker = _Specializing()  # stands for the family until a general plan is needed
            self._plans.setdefault(key, marker)
            plan = self._compile((key, tuple(tuple(f.shape) for f in feeds)), feeds)
        else:
            plan = self._plans.setdefault(key, compile_plan(self.run_state, list(flat), feed_keys))
        return plan, feeds

    def _compile(self, key, feeds):
        """The plan specialized to the shapes of ``feeds`` (``key`` = (fetch-set key,
        shapes)), or the general plan once a fetch set has seen too many shapes."""
        base = key[0]
        flat, feed_keys = base
        with self._init_lock:
            count = self._shape_plans.get(base, 0)
            self._shape_plans[base] = count + 1
        if count >= self.MAX_SHAPE_PLANS:
            general = self._plans.get((base, "general"))
            if general is None:
                general = compile_plan(self.run_state, list(flat), feed_keys)
                general = self._plans.setdefault((base, "general"), general)
            return general
        plan = compile_plan(self.run_state, list(flat), feed_keys, [f.shape for f in feeds])
        return self._plans.setdefault(key, plan)

    # Instances of one plan kept for concurrent runs; more threads than this wait.
    MAX_PLAN_INSTANCES = 8

    def _free_instance(self, plan, flat, feed_keys, feeds):
        """An instance of ``plan`` that no other thread is running, locked.

        A plan's memory buffers serve one run at a time; a concurrent caller gets
        another instance of the same plan, compiled the first time it is needed and
        kept (at most ``MAX_PLAN_INSTANCES`` per plan; past that, it waits for one).
        """
        for other in list(plan.instances):
            if other.lock.acquire(blocking=False):
                return other
        if len(plan.instances) >= self.MAX_PLAN_INSTANCES:
            plan.lock.acquire()
            return plan
        other = compile_plan(self.run_state, list(flat), feed_keys,
                             [f.shape for f in feeds] if plan.specialized else None)
        other.lock.acquire()
        with self._init_lock:
            if len(plan.instances) < self.MAX_PLAN_INSTANCES:
                plan.instances.append(other)
        return other

    def _traced_plan(self, base, feeds):
        """A locked plan for ``base`` that times each step (``RunOptions.trace_level``),
        specialized to the fed shapes as an untraced run's plan would be; one is kept per
        fetch set and shapes, and a concurrent traced run compiles one of its own."""
        flat, feed_keys = base
        shapes = [f.shape for f in feeds] if self._specializes(feed_keys) else None
        key = ("trace", base, None if shapes is None else tuple(tuple(s) for s in shapes))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans.setdefault(
                key, compile_plan(self.run_state, list(flat), feed_keys, shapes, trace=True))
        if not plan.lock.acquire(blocking=False):
            plan = compile_plan(self.run_state, list(flat), feed_keys, shapes, trace=True)
            plan.lock.acquire()
        plan.trace.clear()
        return plan

    def describe_plan(self, fetches, feed_dict=None) -> str:
        """The compiled plan that ``run(fetches, feed_dict)`` would use, as text: each
        step (fused groups with their members), the arena buffer each value is written
        into, the part that runs under the store lock, and the arena's size.

        >>> print(sess.describe_plan(train_op, {x: xb, y: yb}))
        """
        flat = self._fetch_list(fetches)[0]
        feed_items = list(feed_dict.items()) if feed_dict else []
        feed_keys = tuple(self._resolve(k, "feed") for k, _ in feed_items)
        feeds = self._convert_feeds(feed_keys, feed_items)
        shapes = [f.shape for f in feeds] if self._specializes(feed_keys) else None
        return compile_plan(self.run_state, flat, feed_keys, shapes).schedule.describe()

    def _fetch_list(self, fetches):
        """The tensors of ``fetches``, resolved, and the function that rebuilds their
        structure from the values (None for a single tensor)."""
        if isinstance(fetches, Tensor):
            flat, rebuild = [fetches], None
        else:
            flat, rebuild = _flatten(fetches, self.run_state.graph)
        return [self._resolve(f) for f in flat], rebuild

    def _specializes(self, feed_keys) -> bool:
        """Whether plans for these fed tensors are compiled per set of fed shapes."""
        return self.run_state.optimize and any(t.shape is None or not t.shape.is_fully_defined()
                                     for t in feed_keys)

    def _convert_feeds(self, feed_keys, feed_items):
        backend = self.run_state.backend
        feeds = []
        for tensor, (_, value) in zip(feed_keys, feed_items):
            if backend.is_native(value) and not isinstance(value, np.ndarray):
                feeds.append(self._check_native_feed(tensor, value))
                continue
            array = check_feed(tensor, value, tensor.dtype.as_numpy_dtype, tensor.shape)
            try:
                feeds.append(backend.device_value(array))
            except GradflowError:  # a backend refusing the value: one naming the tensor?
                backend.check_plan([tensor])  # (array_api_strict's half placeholders)
                raise
        return feeds

    def _check_native_feed(self, tensor, value):
        backend = self.run_state.backend
        xp = backend.xp
        want = tensor.dtype.resolve(xp)
        if value.dtype != want:
            # the host checks of a NumPy feed, on the extremes only: no lossy kind change,
            # no integer that the cast would wrap
            flat = xp.reshape(value, (-1,))
            extremes = flat[:0] if flat.shape[0] == 0 or value.dtype == xp.bool else \
                xp.stack([xp.min(flat), xp.max(flat)])
            check_feed(tensor, backend.to_numpy(extremes), tensor.dtype.as_numpy_dtype, None)
            value = xp.astype(value, want)
        if tensor.shape is not None:
            check_feed(tensor, np.empty(tuple(value.shape), dtype=tensor.dtype.as_numpy_dtype),
                       tensor.dtype.as_numpy_dtype, tensor.shape)
        return value

    def _named(self, name, role):
        """The tensor called ``name``; TF1's errors where there is none (a feed's is a
        TypeError, a fetch's a ValueError), with the closest names."""
        try:
            return self.run_state.graph.get_tensor_by_name(name)
        except KeyError:
            kinds = ("placeholder", "placeholder_with_default") if role == "feed" else None
            why = self.run_state.graph.missing_name(name, kinds)
            if role == "feed":
                raise TypeError(f"cannot interpret feed_dict key {name!r} as a tensor: "
                                f"{why}") from None
            raise ValueError(f"fetch {name!r} cannot be interpreted as a tensor: {why}") \
                from None

    def _resolve(self, fetch, role="fetch"):
        if isinstance(fetch, str):
            fetch = self._named(fetch, role)
        elif hasattr(fetch, "_as_graph_tensor"):
            fetch = fetch._as_graph_tensor()
        if not isinstance(fetch, Tensor):
            if role == "feed" and isinstance(fetch, SparseTensor):
                raise _SparseKey
            if role == "feed":
                raise TypeError(f"cannot feed {fetch!r}: the keys of feed_dict must be "
                                "placeholders, tensors or tensor names")
            raise TypeError(f"cannot fetch {fetch!r}: fetches must be tensors, operations, "
                            "tensor names, or lists/tuples/dicts of them")
        if fetch.graph is not self.run_state.graph:
            raise ValueError(f"cannot {role} '{fetch.name}': it belongs to another graph than "
                             "this session's (create it inside `with graph.as_default()` of "
                             "the session's graph, or pass graph= to the Session)")
        return fetch

    def _run_error(self, plan, err):
        if isinstance(err, GradflowError):  # gradflow's own errors name the culprit, and
            return err  # OutOfRangeError must reach the user as it is (end of a data set)
        node = node_at_failure(plan, err.__traceback__)
        return err if node is None else node_error(node, err)

    # -- variables -------------------------------------------------------------
    def initialize_missing(self, variables):
        """Give each of ``variables`` that has no value in this Session its initial value
        (once per variable, even when threads ask together)."""
        store = self.run_state.store
        if all(v in store for v in variables):
            return
        with self._init_lock:
            missing = [v for v in variables if v not in store]
            if not missing:
                return
            values = self.run([v.initial_value for v in missing], output="native")
            with self.run_state.store_lock:  # a run of another thread may have assigned one
                if self._closed:
                    raise_closed()
                for var, value in zip(missing, values):
                    store.setdefault(var, value)

    def load_variable(self, var, value):
        """Set ``var`` to ``value`` (array-like) outside any run."""
        array = check_feed(var, value, var.dtype.as_numpy_dtype, var.shape)
        value = self.run_state.backend.asarray(np.array(array, copy=True))
        with self.run_state.store_lock:
            if self._closed:
                raise_closed()
            self.run_state.store[var] = value


class _Specializing:
    """The plan-cache entry of a fetch set whose plans are specialized per fed shapes."""

    specialize = True


class InteractiveSession(Session):
    """A Session that makes itself the default when created (for shells and notebooks)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _state.session_stack.append(self)

    def close(self):
        if self in _state.session_stack:
            _state.session_stack.remove(self)
        super().close()


class _DefaultSession:
    def __init__(self, session):
        self.session = session

    def __enter__(self):
        _state.session_stack.append(self.session)
        return self.session

    def __exit__(self, *exc):
        _state.session_stack.remove(self.session)
        return False


def get_default_session():
    """The innermost session entered with ``with``, or ``None``."""
    return _state.session_stack[-1] if _state.session_stack else None


def _session_for(session, tensor):
    session = session if session is not None else get_default_session()
    if session is None:
        raise ValueError(f"cannot evaluate '{tensor.name}': no default session; use "
                         "`with gf.Session():` or pass session=")
    return session


register_session_finder(_session_for)


class _SparseKey(Exception):
    """A ``feed_dict`` key is a ``SparseTensor`` (``Session._run`` expands it)."""


def _flatten(fetches, graph):
    """The tensors of a nested fetch structure, and a function that rebuilds it (a
    ``SparseTensor`` is its three tensors, rebuilt as a ``SparseTensorValue``)."""
    if isinstance(fetches, SparseTensor):
        parts = [fetches.indices, fetches.values, fetches.dense_shape]
        return parts, lambda values: SparseTensorValue(*values)
    if isinstance(fetches, _OpView):  # ``tensor.op``: runs, and gives None (TF1)
        return [fetches._as_graph_tensor()], lambda values: None
    if isinstance(fetches, (list, tuple)):
        parts = [_flatten(f, graph) for f in fetches]
        flat = [t for p in parts for t in p[0]]
        sizes = [len(p[0]) for p in parts]
        kind = type(fetches)

        def rebuild(values):
            out, start = [], 0
            for (_, sub), size in zip(parts, sizes):
                out.append(sub(values[start:start + size]))
                start += size
            if kind is list:
                return out
            return kind(*out) if hasattr(kind, "_fields") else kind(out)

        return flat, rebuild
    if isinstance(fetches, dict):
        keys = list(fetches)
        flat_list, rebuild_list = _flatten([fetches[k] for k in keys], graph)
        kind = type(fetches)
        return flat_list, lambda values: kind(zip(keys, rebuild_list(values)))
    return [fetches], lambda values: values[0]
