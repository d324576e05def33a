"""TF1's session configuration messages and ``tf.device``.

``ConfigProto``, ``GPUOptions``, ``GraphOptions``, ``OptimizerOptions``,
``RunOptions`` and ``RunMetadata`` take TF1's field names, in the constructor
or as attributes (``config.gpu_options.allow_growth = True``), and reject
unknown ones as a protocol buffer does. gradflow accepts them so TF1 programs
run, but no field changes what a Session does but one: the backend and device come
from ``Session(backend=, device=)``, memory is the array library's, and
thread counts are the BLAS library's; ``graph_options.rewrite_options``'s
``auto_mixed_precision`` (``RewriterConfig``) turns on the mixed-precision rewrite,
as does TF1's process-wide flag that
``tf.train.experimental.enable_mixed_precision_graph_rewrite`` sets here
(``set_mixed_precision_graph_rewrite``).

``device("/gpu:0")`` checks the device string the way TF1 parses it and
records it for the graph while the block runs (``current_device()``); the
ops themselves run on the Session's backend and device.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

from gradflow import protowire
from gradflow.errors import DataLossError, InvalidArgumentError, UnimplementedError
from gradflow.graph import get_default_graph

__all__ = ["ConfigProto", "DeviceSpec", "DeviceStepStats", "GPUOptions", "GraphOptions",
           "NodeExecStats", "OptimizerOptions", "RewriterConfig", "RunMetadata", "RunOptions",
           "StepStats",
           "current_device", "device"]


class _Message:
    """A protocol-buffer-like record: the fields of ``_FIELDS`` (name -> default: a
    scalar, a list (repeated), a dict (map), a ``_Message`` class, or ``None`` for
    any value), set by keyword or attribute; other names are refused."""

    _FIELDS: dict = {}

    def __init__(self, **kwargs):
        for name, default in self._FIELDS.items():
            object.__setattr__(self, name, _fresh(default))
        for name, value in kwargs.items():
            if name not in self._FIELDS:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" '
                                 "field.")
            setattr(self, name, value)

    def __setattr__(self, name, value):
        if name not in self._FIELDS:
            raise AttributeError(f'Assignment not allowed (no field "{name}" in protocol '
                                 f"message object {type(self).__name__}).")
        object.__setattr__(self, name, _checked(type(self).__name__, name,
                                                self._FIELDS[name], value))

    def __eq__(self, other):
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    __hash__ = None

    def CopyFrom(self, other):  # noqa: N802 - protobuf name
        """Replace every field by ``other``'s (a message of the same type), as protobuf does.

        >>> options.CopyFrom(gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE))
        """
        if type(other) is not type(self):
            raise TypeError(f"CopyFrom: expected a {type(self).__name__}, got "
                            f"{type(other).__name__}")
        for name in self._FIELDS:
            object.__setattr__(self, name, _copy(getattr(other, name)))

    # field name -> (protobuf field number, kind): the fields ``SerializeToString``
    # writes, for the messages TensorBoard reads (``RunMetadata`` and its step stats)
    _WIRE: dict = {}

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf name
        """The protobuf wire form of the fields this message writes (TF1's; TensorBoard
        reads a ``RunMetadata`` this way from ``FileWriter.add_run_metadata``)."""
        if not self._WIRE:
            raise UnimplementedError(f"{type(self).__name__} has no wire form in gradflow")
        out = bytearray()
        for name, (number, kind) in self._WIRE.items():
            value = getattr(self, name)
            for item in (value if isinstance(value, list) else [value]):
                if kind == "message":
                    protowire.write_bytes_field(out, number, item.SerializeToString())
                elif kind == "string":
                    if item:
                        protowire.write_bytes_field(out, number, str(item).encode("utf-8"))
                elif item:  # an integer: a varint
                    out += protowire.write_varint(number << 3)
                    out += protowire.write_varint(int(item) & 0xFFFFFFFFFFFFFFFF)
        return bytes(out)

    def ParseFromString(self, data) -> int:  # noqa: N802 - protobuf name
        """Replace this message by the one ``data`` holds (what ``SerializeToString``
        wrote); returns its length. Damaged or hostile bytes raise ``DataLossError``
        naming the message and what is wrong, and leave this message as it was."""
        parsed = type(self).FromString(data)
        for name in self._FIELDS:
            object.__setattr__(self, name, getattr(parsed, name))
        return len(data)

    def MergeFromString(self, data) -> int:  # noqa: N802 - protobuf name
        """Merge the message ``data`` holds into this one, as protobuf does: singular
        fields it sets replace these, repeated ones are appended; returns its length."""
        _merge(self, type(self).FromString(data))
        return len(data)

    @classmethod
    def FromString(cls, data):  # noqa: N802 - protobuf name
        """A new message read from ``data`` (see ``ParseFromString``)."""
        if not cls._WIRE:
            raise UnimplementedError(f"{cls.__name__} has no wire form in gradflow")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidArgumentError(f"{cls.__name__}.ParseFromString: expected bytes, got "
                                       f"{type(data).__name__}")
        if len(data) > _MAX_BYTES:
            raise DataLossError(f"{cls.__name__}.ParseFromString: {len(data):,} bytes, more "
                                f"than the {_MAX_BYTES:,} a message may have")
        buf = memoryview(bytes(data) if isinstance(data, memoryview) else data)
        return _parse(cls, buf, [0], cls.__name__)

    def __repr__(self) -> str:
        parts = []
        for name, default in self._FIELDS.items():
            value = getattr(self, name)
            if value != _fresh(default):
                parts.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


# a message's bytes at most (protobuf's own limit), and the messages one parse may make:
# an empty nested message takes two bytes, and each made costs a kilobyte or so
_MAX_BYTES = (1 << 31) - 1
_MAX_MESSAGES = 1 << 20
_WIRE_TYPES = {"message": 2, "string": 2, "int": 0}


def _parse(cls, buf, made, where):
    """A ``cls`` read from ``buf``: its known fields (``_WIRE``) checked against their
    wire types, the others skipped; ``made`` counts the messages made so far."""
    made[0] += 1
    if made[0] > _MAX_MESSAGES:
        raise DataLossError(f"ParseFromString: {where}: more than {_MAX_MESSAGES:,} "
                            "messages; refused")
    numbers = {number: (name, kind) for name, (number, kind) in cls._WIRE.items()}
    message = cls()

    def error(what):
        return DataLossError(f"ParseFromString: {where}: {what}")

    for number, wire, value in protowire.fields(buf, error):
        if number == 0:
            raise error("a field has the number 0, which no field may have")
        if number not in numbers:
            continue
        name, kind = numbers[number]
        if wire != _WIRE_TYPES[kind]:
            raise error(f"field {name} (number {number}) has wire type {wire}, not "
                        f"{_WIRE_TYPES[kind]}")
        _set_read(message, name, kind, value, made, f"{where}.{name}")
    return message


def _set_read(message, name, kind, value, made, where):
    """Set (or append to) the field ``name`` of ``message`` from its wire value."""
    default = message._FIELDS[name]
    if kind == "int":
        item = protowire.signed(value & 0xFFFFFFFFFFFFFFFF)
    elif kind == "string":
        try:
            item = bytes(value).decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataLossError(f"ParseFromString: {where}: the text is not UTF-8 "
                                f"({err})") from None
    else:
        kind_of = _ITEM_TYPES[(type(message).__name__, name)]
        item = _parse(kind_of, value, made, where)
    if isinstance(default, list):
        getattr(message, name).append(item)
    elif kind == "message":  # a singular message met twice: protobuf merges them
        _merge(getattr(message, name), item)
    else:
        object.__setattr__(message, name, item)


def _merge(into, other):
    """Protobuf's merge of ``other`` into ``into`` (same type): the fields of its wire
    form that ``other`` sets replace (singular) or extend (repeated) those of ``into``."""
    for name, (_, kind) in into._WIRE.items():
        value, default = getattr(other, name), into._FIELDS[name]
        if isinstance(default, list):
            getattr(into, name).extend(value)
        elif kind == "message":
            _merge(getattr(into, name), value)
        elif value != _fresh(default):
            object.__setattr__(into, name, value)


def _fresh(default):
    if isinstance(default, type) and issubclass(default, _Message):
        return default()
    return _copy(default)


def _copy(value):
    if isinstance(value, _Message):
        out = type(value)()
        out.CopyFrom(value)
        return out
    if isinstance(value, (list, dict)):
        return type(value)(value)
    return value


def _checked(message, name, default, value):
    where = f"{message}.{name}"
    if default is None:
        return value
    if isinstance(default, type) and issubclass(default, _Message):
        if isinstance(value, dict):
            return default(**value)
        if not isinstance(value, default):
            raise TypeError(f"{where} must be a {default.__name__}, got "
                            f"{type(value).__name__}")
        return value
    if isinstance(default, dict):
        return dict(value)
    if isinstance(default, list):
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{where} is a repeated field: give a list, got {value!r}")
        return list(value)
    if isinstance(default, bool):
        if not isinstance(value, (bool, int)):
            raise TypeError(f"{where} must be a bool, got {value!r}")
        return bool(value)
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where} must be an int, got {value!r}")
        return int(value)
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where} must be a number, got {value!r}")
        return float(value)
    if isinstance(default, str):
        if not isinstance(value, str):
            raise TypeError(f"{where} must be a string, got {value!r}")
        return value
    return value


class GPUOptions(_Message):
    """TF1's GPU options (accepted; memory is managed by the array library)."""

    _FIELDS = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False,
               "allocator_type": "", "deferred_deletion_bytes": 0, "visible_device_list": "",
               "polling_active_delay_usecs": 0, "polling_inactive_delay_msecs": 0,
               "force_gpu_compatible": False, "experimental": None}


class OptimizerOptions(_Message):
    """TF1's graph optimizer options (accepted)."""

    L1, L0 = 0, -1
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2
    _FIELDS = {"do_common_subexpression_elimination": False, "do_constant_folding": False,
               "max_folded_constant_in_bytes": 0, "do_function_inlining": False,
               "opt_level": 0, "global_jit_level": 0}


class RewriterConfig(_Message):
    """TF1's graph rewriter options (``rewriter_config_pb2.RewriterConfig``), accepted;
    one changes what a Session does: ``auto_mixed_precision=RewriterConfig.ON`` runs its
    plans in float16 (``gradflow.passes.mixed_precision``), and
    ``auto_mixed_precision_mkl`` or ``auto_mixed_precision_onednn_bfloat16`` ON in
    bfloat16 (TF's CPU rewrite); ``auto_mixed_precision_cpu`` is float16 too."""

    DEFAULT, ON, OFF, AGGRESSIVE = 0, 1, 2, 3
    NO_MEM_OPT, MANUAL, SWAPPING_HEURISTICS, RECOMPUTATION_HEURISTICS = 1, 2, 4, 5
    SCHEDULING_HEURISTICS, HEURISTICS = 6, 3
    _FIELDS = {"layout_optimizer": 0, "constant_folding": 0, "shape_optimization": 0,
               "remapping": 0, "common_subgraph_elimination": 0,
               "arithmetic_optimization": 0, "dependency_optimization": 0,
               "loop_optimization": 0, "function_optimization": 0, "debug_stripper": 0,
               "disable_model_pruning": False, "scoped_allocator_optimization": 0,
               "pin_to_host_optimization": 0, "implementation_selector": 0,
               "auto_mixed_precision": 0, "auto_mixed_precision_mkl": 0,
               "auto_mixed_precision_onednn_bfloat16": 0, "auto_mixed_precision_cpu": 0,
               "disable_meta_optimizer": False, "meta_optimizer_iterations": 0,
               "min_graph_nodes": 0, "memory_optimization": 0,
               "memory_optimizer_target_node_name_scope": "", "meta_optimizer_timeout_ms": 0,
               "auto_parallel": None, "fail_on_optimizer_errors": False,
               "scoped_allocator_opts": None, "optimizers": [], "custom_optimizers": [],
               "inter_optimizer_verifier_config": None,
               "post_optimization_verifier_config": None}


class GraphOptions(_Message):
    """TF1's graph options (accepted; ``rewrite_options.auto_mixed_precision`` is read,
    see ``RewriterConfig``)."""

    _FIELDS = {"enable_recv_scheduling": False, "optimizer_options": OptimizerOptions,
               "build_cost_model": 0, "build_cost_model_after": 0, "infer_shapes": False,
               "place_pruned_graph": False, "enable_bfloat16_sendrecv": False,
               "timeline_step": 0, "rewrite_options": RewriterConfig}


class ConfigProto(_Message):
    """TF1's session configuration (accepted by ``Session(config=)``; see the module
    docstring: no field changes what the session does but
    ``graph_options.rewrite_options.auto_mixed_precision``).

    >>> config = gf.ConfigProto(allow_soft_placement=True)
    >>> config.gpu_options.allow_growth = True
    >>> sess = gf.Session(config=config)
    """

    _FIELDS = {"device_count": {}, "intra_op_parallelism_threads": 0,
               "inter_op_parallelism_threads": 0, "use_per_session_threads": False,
               "session_inter_op_thread_pool": [], "placement_period": 0,
               "device_filters": [], "gpu_options": GPUOptions,
               "allow_soft_placement": False, "log_device_placement": False,
               "graph_options": GraphOptions, "operation_timeout_in_ms": 0,
               "rpc_options": None, "cluster_def": None, "isolate_session_state": False,
               "share_cluster_devices_in_session": False, "experimental": None}


class RunOptions(_Message):
    """TF1's per-run options for ``Session.run(options=)``.

    ``trace_level`` above ``NO_TRACE`` times every op of the run into the
    ``step_stats`` of ``Session.run``'s ``run_metadata`` (see :class:`RunMetadata`
    and ``gf.timeline``); the other fields are accepted and ignored.
    """

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
               "output_partition_graphs": False, "debug_options": None,
               "report_tensor_allocations_upon_oom": False, "experimental": None}


class NodeExecStats(_Message):
    """One op's time in a traced run: ``node_name`` (the user's op; a fused group's
    members joined by ``+``), the start in microseconds since the epoch, the end
    relative to it, and ``timeline_label`` (the op, its inputs and the line of user
    code that built it)."""

    _FIELDS = {"node_name": "", "all_start_micros": 0, "op_start_rel_micros": 0,
               "op_end_rel_micros": 0, "all_end_rel_micros": 0, "timeline_label": "",
               "scheduled_micros": 0, "thread_id": 0, "memory": [], "output": [],
               "referenced_tensor": [], "memory_stats": None, "all_start_nanos": 0,
               "op_start_rel_nanos": 0, "op_end_rel_nanos": 0, "all_end_rel_nanos": 0,
               "scheduled_nanos": 0}
    _WIRE = {"node_name": (1, "string"), "all_start_micros": (2, "int"),
             "op_start_rel_micros": (3, "int"), "op_end_rel_micros": (4, "int"),
             "all_end_rel_micros": (5, "int"), "timeline_label": (8, "string"),
             "scheduled_micros": (9, "int"), "thread_id": (10, "int"),
             "all_start_nanos": (13, "int"), "op_start_rel_nanos": (14, "int"),
             "op_end_rel_nanos": (15, "int"), "all_end_rel_nanos": (16, "int"),
             "scheduled_nanos": (17, "int")}


class DeviceStepStats(_Message):
    """The ops one device ran in a traced run (``device``, ``node_stats``)."""

    _FIELDS = {"device": "", "node_stats": [], "thread_names": {}}
    _WIRE = {"device": (1, "string"), "node_stats": (2, "message")}


class StepStats(_Message):
    """A traced run's timings: one :class:`DeviceStepStats` per device."""

    _FIELDS = {"dev_stats": []}
    _WIRE = {"dev_stats": (1, "message")}


class RunMetadata(_Message):
    """TF1's ``Session.run(run_metadata=)`` output: ``step_stats`` holds each op's
    time when the run's ``RunOptions`` asked for a trace.

    >>> md = gf.RunMetadata()
    >>> sess.run(train, feed, options=gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE),
    ...          run_metadata=md)
    >>> open("trace.json", "w").write(
    ...     gf.timeline.Timeline(md.step_stats).generate_chrome_trace_format())
    """

    _FIELDS = {"step_stats": StepStats, "cost_graph": None, "partition_graphs": [],
               "function_graphs": []}
    _WIRE = {"step_stats": (1, "message")}


# (message, field) -> the message class of each field of kind "message" in a wire form
_ITEM_TYPES = {("DeviceStepStats", "node_stats"): NodeExecStats,
               ("StepStats", "dev_stats"): DeviceStepStats,
               ("RunMetadata", "step_stats"): StepStats}


# -- TF1's process-wide mixed-precision flag ----------------------------------------------

# the low dtype's name that Sessions made from now on run their plans in (None: off), and
# whether a Session without mixed precision was made (TF1 warns about those on enabling)
_MIXED_PRECISION = {"rewrite": None, "plain_session_made": False}
_CONFIG_MIXED = (("auto_mixed_precision", "float16"), ("auto_mixed_precision_cpu", "float16"),
                 ("auto_mixed_precision_mkl", "bfloat16"),
                 ("auto_mixed_precision_onednn_bfloat16", "bfloat16"))


def set_mixed_precision_graph_rewrite(dtype_name) -> bool:
    """Set the process-wide flag (``"float16"``, ``"bfloat16"`` or None for off) that
    ``enable_mixed_precision_graph_rewrite`` sets; returns whether a Session without
    mixed precision was made before (TF1 warns that it is not affected)."""
    _MIXED_PRECISION["rewrite"] = dtype_name
    return _MIXED_PRECISION["plain_session_made"]


def mixed_precision_graph_rewrite():
    """The low dtype's name the process-wide flag asks for, or None."""
    return _MIXED_PRECISION["rewrite"]


def requested_mixed_precision(config):
    """The low dtype's name a Session made with ``config`` (a ``ConfigProto`` or None)
    runs in, and whether the request is explicit (the config's): a rewrite option
    turned ON wins, ``auto_mixed_precision=OFF`` turns the process flag off, else the
    flag. ``(None, False)`` when off (and the Session is then counted as plain, as TF1's
    session counts it)."""
    options = getattr(getattr(config, "graph_options", None), "rewrite_options", None)
    if options is not None:
        for field, name in _CONFIG_MIXED:
            if getattr(options, field) == RewriterConfig.ON:
                return name, True
    flag = _MIXED_PRECISION["rewrite"]
    if flag is not None and (options is None
                             or options.auto_mixed_precision != RewriterConfig.OFF):
        return flag, False
    _MIXED_PRECISION["plain_session_made"] = True
    return None, False


# -- devices ----------------------------------------------------------------------------


class DeviceSpec:
    """A parsed device string: ``job``, ``replica``, ``task``, ``device_type``
    (``"CPU"``, ``"GPU"``...) and ``device_index``; ``None`` where not given."""

    def __init__(self, job=None, replica=None, task=None, device_type=None,
                 device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = device_type
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec: str) -> "DeviceSpec":
        """Parse ``"/job:w/replica:0/task:1/device:GPU:0"``, ``"/gpu:0"``, ``"/cpu:0"``,
        ``"/device:CPU:*"``, ``""``, as TF1 does; anything else is a ValueError."""
        out = cls()
        for part in (spec or "").split("/"):
            if not part:
                continue
            fields = part.split(":")
            n, head = len(fields), fields[0]
            try:
                if n == 2 and head in ("job", "replica", "task"):
                    setattr(out, head, fields[1] if head == "job" else int(fields[1]))
                elif n in (1, 2) and head.upper() in ("CPU", "GPU"):
                    out._set_type(spec, head.upper(), fields[1] if n == 2 else "*")
                elif n == 3 and head == "device":
                    out._set_type(spec, fields[1], fields[2])
                else:
                    raise ValueError(f"Unknown attribute: '{head}' in '{spec}'")
            except ValueError as err:
                if "Unknown attribute" in str(err) or "multiple" in str(err):
                    raise
                raise ValueError(f"device '{spec}': '{part}' has a bad index") from None
        return out

    def _set_type(self, spec, device_type, index):
        if self.device_type is not None:
            raise ValueError(f"Cannot specify multiple device types: {spec}")
        self.device_type = device_type
        self.device_index = None if index == "*" else int(index)

    def merge_from(self, other: "DeviceSpec") -> "DeviceSpec":
        """A copy of this spec with the fields ``other`` gives replacing these."""
        fields = ("job", "replica", "task", "device_type", "device_index")
        merged = DeviceSpec(**{f: getattr(self, f) for f in fields})
        for f in fields:
            if getattr(other, f) is not None:
                setattr(merged, f, getattr(other, f))
        return merged

    def to_string(self) -> str:
        """The spec as TF1 writes it, e.g. ``'/job:worker/device:GPU:0'``.

        >>> gf.DeviceSpec(device_type="GPU", device_index=0).to_string()
        """
        out = ""
        if self.job is not None:
            out += f"/job:{self.job}"
        if self.replica is not None:
            out += f"/replica:{self.replica}"
        if self.task is not None:
            out += f"/task:{self.task}"
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            out += f"/device:{self.device_type}:{index}"
        return out

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    __hash__ = None

    def __repr__(self) -> str:
        return f"DeviceSpec('{self.to_string()}')"


_DEVICE_STACKS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@contextmanager
def device(device_name_or_function):
    """Context manager recording the device for the ops built inside (TF1 ``tf.device``).

    Takes a device string (``"/gpu:0"``, ``"/cpu:0"``, ``"/device:GPU:1"``,
    ``"/job:worker/task:0"``...), a ``DeviceSpec``, ``None`` (clears the outer
    blocks' device) or a function of an op (accepted, not called). Nested
    strings merge as in TF1. Where the graph runs is still the Session's
    choice: ``current_device()`` reports the string for whoever wants it.
    """
    graph = get_default_graph()
    stack = _DEVICE_STACKS.setdefault(graph, [])
    outer = stack[-1] if stack else DeviceSpec()
    if device_name_or_function is None:
        spec = DeviceSpec()
    elif isinstance(device_name_or_function, DeviceSpec):
        spec = outer.merge_from(device_name_or_function)
    elif isinstance(device_name_or_function, str):
        spec = outer.merge_from(DeviceSpec.from_string(device_name_or_function))
    elif callable(device_name_or_function):
        spec = outer
    else:
        raise TypeError(f"device: expected a device string, a DeviceSpec, None or a "
                        f"function, got {type(device_name_or_function).__name__}")
    stack.append(spec)
    try:
        yield
    finally:
        stack.pop()


def current_device(graph=None) -> str:
    """The device string of the innermost ``device`` block open on ``graph`` (default:
    the default graph), in TF1's canonical form; ``""`` outside any."""
    stack = _DEVICE_STACKS.get(graph if graph is not None else get_default_graph())
    return stack[-1].to_string() if stack else ""
