"""What every backend supplies: the namespace and what the Array API lacks."""

from __future__ import annotations

import numpy as np


class Backend:
    """An array library bound to one device.

    ``xp`` is the Array API namespace (through array-api-compat). A subclass
    adds host transfers, synchronisation, and may override the lowering of
    hot ops in ``overrides`` (op name -> ``lower(xp, **attrs)``).
    """

    name = "base"

    def __init__(self, xp, device=None, overrides=None):
        self.xp = xp
        self.device = device
        self.overrides = dict(overrides or {})

    def asarray(self, host: np.ndarray):
        """A device array holding a copy-safe version of the NumPy array ``host``."""
        return self.xp.asarray(host, device=self.device)

    def is_native(self, value) -> bool:
        """Whether ``value`` is already an array of this backend (fed without a copy)."""
        return False

    def to_numpy(self, array) -> np.ndarray:
        """A NumPy copy of a backend array."""
        return np.asarray(array)

    def copy(self, array):
        """A copy of a backend array, for values the session must own."""
        return self.xp.asarray(array, copy=True)

    def accepts_out(self, fn) -> bool:
        """Whether the bound op function ``fn`` can write its result into ``out=``."""
        return False

    def empty(self, shape, dtype):
        """An uninitialized array (for backends whose ``accepts_out`` can be true)."""
        raise NotImplementedError(f"the {self.name} backend does not plan buffers")

    def fused(self, program, bind):
        """The callable of a fused elementwise node (``gradflow.passes.fusion``):
        ``bind(member)`` gives each member op's own function; this default calls them
        in turn. Backends with a kernel compiler override it."""
        return run_in_turn(program, [bind(m) for m in program.members])

    def synchronize(self) -> None:
        """Wait for queued device work (a no-op on synchronous CPU backends)."""

    def __repr__(self) -> str:
        return f"<gradflow backend {self.name} device={self.device}>"


def run_in_turn(program, fns):
    """``f(*inputs)`` computing a fused program by calling each member's function."""
    steps = [(fn, args) for fn, (_, args) in zip(fns, program.steps)]
    outputs = [program.num_inputs + k for k in program.outputs]
    if len(outputs) == 1:
        (last,) = outputs

        def run(*inputs):
            values = list(inputs)
            for fn, args in steps:
                values.append(fn(*[values[a] for a in args]))
            return values[last]
    else:
        def run(*inputs):
            values = list(inputs)
            for fn, args in steps:
                values.append(fn(*[values[a] for a in args]))
            return tuple(values[k] for k in outputs)

    return run
