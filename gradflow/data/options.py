"""``tf.data.Options`` and its parts (TF1 ``tf.data.Options``, ``ThreadingOptions``,
``OptimizationOptions``, ``AutotuneOptions``, ``DistributeOptions`` and the enums
``AutoShardPolicy``, ``ExternalStatePolicy``, ``AutotuneAlgorithm``).

They are settings objects as TF's are: each attribute is checked when set, unset
ones read ``None`` (TF's default then applies), and ``Dataset.with_options``
attaches them to a data set, where ``Dataset.options()`` reads them back (merged
with those set upstream). gradflow's host pipelines run one element at a time on
one thread, so no option changes what they produce: thread pools, graph rewrites
and autotuning are TF's runtime's, and sharding is its distribution strategies'.
"""

from __future__ import annotations

import enum


class AutoShardPolicy(enum.IntEnum):
    """How TF's distribution strategies shard a data set (TF's values)."""

    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.Enum):
    """What TF does with stateful ops when it serializes a data set."""

    WARN = 0
    IGNORE = 1
    FAIL = 2


class AutotuneAlgorithm(enum.Enum):
    """TF's autotuning algorithms (its values)."""

    DEFAULT = 0
    HILL_CLIMB = 1
    GRADIENT_DESCENT = 2
    MAX_PARALLELISM = 3
    STAGE_BASED = 4


_KINDS = {bool: (bool,), int: (int,), float: (int, float)}


class _OptionsBase:
    """A settings object: ``_FIELDS`` maps each attribute to its type (a Python type,
    an enum, or an options class)."""

    _FIELDS: dict = {}
    _ALIASES: dict = {}  # a second name of a field (TF's older name)

    def __init__(self):
        for name, kind in self._FIELDS.items():
            value = kind() if isinstance(kind, type) and issubclass(kind, _OptionsBase) \
                else None
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        real = type(self)._ALIASES.get(name)
        if real is None:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}")
        return getattr(self, real)

    def __setattr__(self, name, value):
        name = self._ALIASES.get(name, name)
        kind = self._FIELDS.get(name)
        if kind is None:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}; its options "
                                 f"are {sorted(self._FIELDS)}")
        if value is not None and not _accepts(kind, value):
            raise TypeError(f"{type(self).__name__}.{name} must be "
                            f"{getattr(kind, '__name__', kind)}, got {value!r}")
        if isinstance(kind, type) and issubclass(kind, enum.Enum) and value is not None:
            value = kind(value)
        object.__setattr__(self, name, value)

    def __eq__(self, other):
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    def __hash__(self):
        return hash(type(self))

    def __repr__(self):
        set_ = [f"{n}={getattr(self, n)!r}" for n in self._FIELDS
                if getattr(self, n) is not None]
        return f"{type(self).__name__}({', '.join(set_)})"

    def merge(self, options):
        """A new object with this one's settings, and ``options``'s where it sets them
        (TF: the later options win)."""
        merged = type(self)()
        for name in self._FIELDS:
            mine, theirs = getattr(self, name), getattr(options, name)
            if isinstance(mine, _OptionsBase):
                object.__setattr__(merged, name, mine.merge(theirs))
            else:
                object.__setattr__(merged, name, mine if theirs is None else theirs)
        return merged


def _accepts(kind, value):
    if kind in _KINDS:
        return isinstance(value, _KINDS[kind]) and (kind is bool or
                                                   not isinstance(value, bool))
    if issubclass(kind, enum.Enum):
        try:
            kind(value)
        except ValueError:
            return False
        return True
    return isinstance(value, kind)


class ThreadingOptions(_OptionsBase):
    """``max_intra_op_parallelism`` and ``private_threadpool_size`` of TF's runtime."""

    _FIELDS = {"max_intra_op_parallelism": int, "private_threadpool_size": int}


class AutotuneOptions(_OptionsBase):
    """``enabled``, ``cpu_budget``, ``ram_budget`` and ``autotune_algorithm``."""

    _FIELDS = {"enabled": bool, "cpu_budget": int, "ram_budget": int,
               "autotune_algorithm": AutotuneAlgorithm}


class DistributeOptions(_OptionsBase):
    """``auto_shard_policy`` and ``num_devices`` of TF's distribution strategies."""

    _FIELDS = {"auto_shard_policy": AutoShardPolicy, "num_devices": int}


class OptimizationOptions(_OptionsBase):
    """Which of TF's static rewrites of a pipeline may run (``map_fusion``, ...)."""

    _FIELDS = {name: bool for name in (
        "apply_default_optimizations", "filter_fusion", "filter_parallelization",
        "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
        "map_parallelization", "noop_elimination", "parallel_batch", "seq_interleave_prefetch",
        "shuffle_and_repeat_fusion")}


class Options(_OptionsBase):
    """The options of a data set (TF1 ``tf.data.Options``).

    >>> options = gf.data.Options()
    >>> options.experimental_deterministic = False
    >>> ds = ds.with_options(options)
    """

    _FIELDS = {"autotune": AutotuneOptions, "deterministic": bool,
               "experimental_distribute": DistributeOptions,
               "experimental_external_state_policy": ExternalStatePolicy,
               "experimental_optimization": OptimizationOptions,
               "experimental_slack": bool, "experimental_symbolic_checkpoint": bool,
               "experimental_warm_start": bool, "threading": ThreadingOptions}
    _ALIASES = {"experimental_deterministic": "deterministic",
                "experimental_threading": "threading"}
