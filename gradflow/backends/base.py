"""What every backend supplies: the namespace and what the Array API lacks."""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.backends.capture import RecordingCapturer


class Backend:
    """An array library bound to one device.

    ``xp`` is the Array API namespace (through array-api-compat). A subclass
    adds host transfers and synchronisation; its module gives hot ops kernels of
    its own with ``gradflow.prim.registry.add_lowering(op, name, lower)`` (kept
    on the op's record, ``OpDef.lowerings``). ``overrides`` (op name ->
    ``lower(xp, **attrs)``) replaces those for this one backend object.
    """

    name = "base"

    def __init__(self, xp, device=None, overrides=None):
        self.xp = xp
        self.device = device
        self.overrides = dict(overrides or {})

    def asarray(self, host: np.ndarray):
        """A device array holding a copy-safe version of the NumPy array ``host``."""
        return self.xp.asarray(host, device=self.device)

    def device_value(self, host: np.ndarray):
        """``host`` as the value a plan computes with: a backend array (``asarray``), but
        ``string`` values (``dtypes.bytes_array``) stay on the host on every backend. Bare
        ``bytes`` or text (an element taken out of such an array) become one too: NumPy
        would make them an ``S`` array, which drops trailing zero bytes."""
        if isinstance(host, (bytes, str)):
            return dtypes.bytes_array(host)
        return host if dtypes.is_bytes_array(host) else self.asarray(host)

    def host_value(self, value) -> np.ndarray:
        """``value`` on the host: a NumPy copy (``to_numpy``), or a ``string`` value,
        which is there already."""
        return value if dtypes.is_bytes_array(value) else self.to_numpy(value)

    def check_plan(self, order) -> None:
        """Raise if this backend cannot run the plan's nodes ``order`` (the user's nodes
        or the graph compiler's copies), naming the first it cannot: array_api_strict's
        half-precision tensors."""

    def bound(self, node, fn):
        """The function the plan calls for ``node``, given the op's own ``fn`` (a backend
        may wrap it: NumPy computes ops over half-precision inputs in float32)."""
        return fn

    def is_native(self, value) -> bool:
        """Whether ``value`` is already an array of this backend (fed without a copy)."""
        return False

    def to_numpy(self, array) -> np.ndarray:
        """A NumPy copy of a backend array."""
        return np.asarray(array)

    def copy(self, array):
        """A copy of a backend array, for values the session must own."""
        return self.xp.asarray(array, copy=True)

    def is_ufunc(self, fn) -> bool:
        """Whether ``fn`` is one of the library's own single-output ufuncs, which write
        into ``out=``, also over one of their inputs (NumPy's, CuPy's)."""
        return False

    def accepts_out(self, fn) -> bool:
        """Whether the bound op function ``fn`` can write its result into ``out=``: a
        ufunc, or a lowering marked ``accepts_out``."""
        return self.is_ufunc(fn) or getattr(fn, "accepts_out", False)

    def overwrites_inputs_safely(self, fn) -> bool:
        """Whether ``fn`` (which accepts ``out=``) gives the right result when ``out`` is
        one of its inputs of the same shape: elementwise code that reads each element
        before writing it (a ufunc, or a lowering marked ``elementwise_out``). Lets a
        variable's update be written over the variable."""
        return self.is_ufunc(fn) or getattr(fn, "elementwise_out", False)

    # ``copy_to(dest, value)`` copies a value into an array, for backends that plan
    # buffers (``empty``); None where the backend plans none.
    copy_to = None

    def empty(self, shape, dtype):
        """An uninitialized array (for backends whose ``accepts_out`` can be true)."""
        raise NotImplementedError(f"the {self.name} backend does not plan buffers")

    def fused(self, program, bind):
        """The callable of a fused elementwise node (``gradflow.passes.fusion``):
        ``bind(member)`` gives each member op's own function; this default calls them
        in turn (``in_turn``). Backends with a kernel compiler override it."""
        return self.in_turn(program, [bind(m) for m in program.members])

    def in_turn(self, program, fns):
        """A fused program as its members' functions called in turn, writing into the
        plan's buffers where this backend plans them (``copy_to``)."""
        if self.copy_to is None:
            return call_in_turn(program, fns)
        return call_in_turn(program, fns, self.overwrites_inputs_safely, self.copy_to,
                            keeps=self.accepts_out)

    # Passes over a plan graph after the graph compiler's, for what this backend's fused
    # kernels can also do (CuPy: draws and row sums, gradflow.passes.fusion).
    kernel_passes = ()
    # Whether Session captures its plans by default (gradflow.capture), and whether
    # float32 matmuls may use TF32 (GPU backends; Session(allow_tf32=True)).
    captures = False
    allow_tf32 = False
    # A context manager each run happens in (a GPU backend's stream), or None.
    running = None

    def capturer(self):
        """What captures a plan's run for replays (``gradflow.backends.capture``): by
        default the CPU's recording of its op calls."""
        return RecordingCapturer()

    def copy_into(self, array, value) -> None:
        """Copy ``value`` (a host or backend array of ``array``'s shape) into ``array``."""
        array[...] = self.asarray(value) if isinstance(value, np.ndarray) else value

    def synchronize(self) -> None:
        """Wait for queued device work (a no-op on synchronous CPU backends)."""

    def __repr__(self) -> str:
        return f"<gradflow backend {self.name} device={self.device}>"


class KeptArrays(dict):
    """Arrays a lowering keeps between calls, one per (role, shape, dtype), made with
    ``empty`` the first time: the same memory on every steady run, so that the run
    allocates nothing and a captured graph's addresses hold."""

    def __init__(self, empty):
        super().__init__()
        self.empty = empty

    def get_array(self, role, shape, dtype):
        key = (role, tuple(shape), dtype)  # dtypes hash; str(dtype) took 2.7 us a call
        array = self.get(key)
        if array is None:
            array = self[key] = self.empty(tuple(shape), dtype)
        return array


def call_in_turn(program, fns, writes_out=None, copyto=None, keeps=None):
    """``run(*inputs, out=None)`` computing a fused program by calling each member's
    function in turn, generated as one Python function (locals and direct calls, as
    the executor's plans are).

    With ``copyto`` (a backend's copy into an array) the function takes ``out=``: an
    output goes into its buffer through the member's own ``out=`` where
    ``writes_out(fn)`` says it has one, else through ``copyto``. Without, ``out`` is
    ignored and ``run.accepts_out`` is False.

    With ``copyto``, an intermediate value of a member that can write into ``out=``
    (``keeps(fn)``, default ``writes_out``; unlike an output's, its buffer is never one
    of its inputs), of fixed static shape and read only by such members (which return
    no view of it), is written into the array that member returned on the first call:
    a steady run of the program then allocates nothing.
    """
    n = program.num_inputs
    names = [f"a{i}" for i in range(n)] + [f"t{k}" for k in range(len(fns))]
    single = len(program.outputs) == 1
    dests = {k: ("out" if single else f"o{j}") for j, k in enumerate(program.outputs)}
    env = {"copyto": copyto}
    lines = [] if single or copyto is None else [
        f"{', '.join(dests.values())}, = out if out is not None else {(None,) * len(dests)}"]
    kept = () if copyto is None else _kept_intermediates(program, fns, keeps or writes_out)
    for k, (fn, (_, args)) in enumerate(zip(fns, program.steps)):
        env[f"f{k}"] = fn
        call = f"f{k}({', '.join(names[a] for a in args)}"
        dest = dests.get(k) if copyto is not None else None
        if k in kept:  # into the array of the first call, kept in a one-entry list
            env[f"s{k}"] = [None]
            lines += [f"t{k} = {call}, out=s{k}[0])", f"s{k}[0] = t{k}"]
        elif dest is None:
            lines.append(f"t{k} = {call})")
        elif writes_out is not None and writes_out(fn):
            lines.append(f"t{k} = {call}, out={dest})")
        else:
            lines += [f"t{k} = {call})", f"if {dest} is not None:",
                      f"    copyto({dest}, t{k})", f"    t{k} = {dest}"]
    run = generated_function(names[:n], lines, [f"t{k}" for k in program.outputs], env,
                             "<gradflow-fused>")
    run.accepts_out = copyto is not None
    return run


def _kept_intermediates(program, fns, writes_out):
    """The steps of ``program`` whose values can live in one array kept between calls."""
    n = program.num_inputs
    readers = {}
    for j, (_, args) in enumerate(program.steps):
        for a in args:
            readers.setdefault(a - n, []).append(j)
    kept = set()
    for k, (member, _) in enumerate(program.steps):
        shape = member.shape
        if k in program.outputs or not writes_out(fns[k]) or shape is None \
                or None in tuple(shape) or len(shape) == 0:
            continue
        if all(writes_out(fns[j]) for j in readers.get(k, ())):
            kept.add(k)
    return kept


def generated_function(params, lines, results, env, filename):
    """``run(*params, out=None)``: the body ``lines`` returning ``results`` (one value,
    or a tuple of several), compiled with the globals ``env``."""
    ret = results[0] if len(results) == 1 else f"({', '.join(results)},)"
    source = (f"def run({', '.join(list(params) + ['out=None'])}):\n"
              + "".join(f"    {line}\n" for line in lines + [f"return {ret}"]))
    exec(compile(source, filename, "exec"), env)
    return env["run"]
