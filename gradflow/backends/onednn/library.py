"""oneDNN on the NumPy backend, where it is installed: the library, and primitives
that run on NumPy arrays where they lie.

oneDNN (the library under PyTorch's and TensorFlow's CPU convolutions) generates
its kernels for the machine at run time. gradflow calls its C API through
``ctypes`` (no compiler, no Python binding needed): the ``onednn-cpu-gomp`` wheel
(``pip install onednn-cpu-gomp``, or from the gradflow checkout ``pip install -e
'.[fast]'``) puts ``libdnnl.so.3`` in ``<prefix>/lib``;
``GRADFLOW_ONEDNN`` may name another copy, and ``GRADFLOW_ONEDNN=0`` turns oneDNN
off. Where it is off, absent or will not load, ``api()`` is None and the caller
(``onednn_conv``) leaves the work to im2col, NumPy and OpenBLAS.

Its threads are an OpenMP pool; ``threads`` sizes it to the free cores. OpenBLAS
and numba's kernels run on the same pool where ``openmp.shared()``; elsewhere
``threads`` keeps OpenBLAS to one thread while oneDNN's pool is in use, so that two
pools never spin against each other. :class:`Parts` runs several one-thread
primitives as one OpenMP team (``openmp.run_blocks`` calling a part's steps, a
function compiled with llvmlite): a sum split into fixed parts then gives the same
bits on a team of any size.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import sys
import threading
import types

import numpy as np

from gradflow.backends.cpu import openmp, threads

_log = logging.getLogger("gradflow.onednn")
_ENV = "GRADFLOW_ONEDNN"

# from oneDNN 3.x's dnnl_types.h / dnnl_common_types.h
OK = 0
_CPU = 1
_IN_ORDER = 1
F32 = 3
TAG_ANY = 1  # the primitive chooses
SCRATCHPAD_USER = 1
QUERY_SCRATCHPAD_MD = 136
QUERY_IMPL_INFO = 8
QUERY_EXEC_ARG_MD = 255
ARG_SRC, ARG_DST, ARG_WEIGHTS, ARG_SCRATCHPAD = 1, 17, 33, 80
ARG_DIFF_SRC, ARG_DIFF_DST, ARG_DIFF_WEIGHTS = 129, 145, 161

Dims = ctypes.c_int64 * 12
P = ctypes.c_void_p


class _Arg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", P)]


class OneDNNError(RuntimeError):
    """A oneDNN call failed (its status code and the call are in the message)."""


def _library_path():
    """``GRADFLOW_ONEDNN`` if it names a file, else ``libdnnl.so.3`` beside Python's
    prefix (where pip puts the wheel's library), else the loader's search path."""
    named = os.environ.get(_ENV, "").strip()
    if named and named not in ("0", "1", "off", "on"):
        return named
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        path = os.path.join(prefix, "lib", "libdnnl.so.3")
        if os.path.exists(path):
            return path
    return "libdnnl.so.3"


class Api:
    """The loaded library, its CPU engine, and OpenMP's thread count setter."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(path)
        lib.dnnl_primitive_desc_query_md.restype = P
        lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
        lib.dnnl_memory_desc_get_size.argtypes = [P]
        lib.dnnl_memory_desc_equal.argtypes = [P, P]
        # gradflow keeps its own primitives; the library's cache of them is destroyed at
        # exit, after OpenMP's threads, and crashed there (1 run in 5 under pytest)
        self.check("dnnl_set_primitive_cache_capacity", 0)
        self.engine = P()
        self.check("dnnl_engine_create", ctypes.byref(self.engine), _CPU, 0)
        self.local = threading.local()  # each thread's stream
        # the OpenMP runtime oneDNN runs on (the one already loaded under that name)
        omp = ctypes.CDLL("libgomp.so.1")
        self.set_threads, self.get_threads = omp.omp_set_num_threads, omp.omp_get_max_threads

    def check(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != OK:
            raise OneDNNError(f"oneDNN: {name} returned status {status}")

    def stream(self):
        """This thread's stream; tells ``threads`` that the pool is in use (it then keeps
        the BLAS to one thread)."""
        local = self.local
        stream = getattr(local, "stream", None)
        if stream is None:
            stream = local.stream = self.new_stream()
        self.pool_in_use()
        return stream

    def new_stream(self):
        """A new in-order CPU stream."""
        stream = P()
        self.check("dnnl_stream_create", ctypes.byref(stream), self.engine, _IN_ORDER)
        return stream

    @staticmethod
    def pool_in_use():
        """Tell ``openmp`` (a forked child keeps off OpenMP) and ``threads`` (the BLAS
        keeps to one thread where the pools are apart) that OpenMP's threads run now."""
        openmp.started()
        threads.openmp_ran()

    def thread_count(self):
        """The threads a primitive made now should use: gradflow's count for its pools
        (``threads``), else OpenMP's own."""
        return threads.current() or self.get_threads()

    @contextlib.contextmanager
    def threads(self, count):
        """OpenMP's thread count (per calling thread) is ``count`` in this block and what
        it was after it. The count is the OpenMP runtime's, shared with every library
        in the process that uses it (PyTorch's CPU ops load the same ``libgomp``), so
        gradflow's choice must not outlive its own calls."""
        before = self.get_threads()
        if before != count:
            self.set_threads(count)
        try:
            yield
        finally:
            if before != count:
                self.set_threads(before)

    def making(self, count):
        """Make primitives in this block for ``count`` threads: a primitive takes OpenMP's
        count when it is made, runs on that many threads whatever the count later, and
        sizes its scratch memory for them."""
        return self.threads(count)

    def primitive(self, pd):
        primitive = P()
        self.check("dnnl_primitive_create", ctypes.byref(primitive), pd)
        return primitive

    def reorder(self, from_desc, to_desc):
        """A primitive that copies an array of layout ``from_desc`` into ``to_desc``."""
        pd = P()
        self.check("dnnl_reorder_primitive_desc_create", ctypes.byref(pd), from_desc,
                   self.engine, to_desc, self.engine, None)
        try:
            return self.primitive(pd)
        finally:
            self.lib.dnnl_primitive_desc_destroy(pd)

    def clone(self, desc):
        """A copy of a descriptor a primitive descriptor owns (None for none)."""
        if not desc:
            return None
        copy = P()
        self.check("dnnl_memory_desc_clone", ctypes.byref(copy), P(desc))
        return copy

    def memory(self, desc):
        """A memory object of layout ``desc`` with no data yet."""
        memory = P()
        self.check("dnnl_memory_create", ctypes.byref(memory), desc, self.engine, None)
        return memory

    def memory_desc(self, dims, tag=None, strides=None):
        """A float32 layout of logical ``dims``: by format ``tag``, or by ``strides`` (in
        elements)."""
        desc = P()
        if strides is None:
            self.check("dnnl_memory_desc_create_with_tag", ctypes.byref(desc), len(dims),
                       Dims(*dims), F32, tag)
        else:
            self.check("dnnl_memory_desc_create_with_strides", ctypes.byref(desc), len(dims),
                       Dims(*dims), F32, Dims(*strides))
        return desc

    def user_scratchpad(self):
        """Primitive attributes asking for the scratch memory to come from the caller."""
        attr = P()
        self.check("dnnl_primitive_attr_create", ctypes.byref(attr))
        self.check("dnnl_primitive_attr_set_scratchpad_mode", attr, SCRATCHPAD_USER)
        return attr

    def implementation(self, pd):
        """The name of the implementation primitive descriptor ``pd`` stands at."""
        info = ctypes.c_char_p()
        self.check("dnnl_primitive_desc_query", pd, QUERY_IMPL_INFO, 0, ctypes.byref(info))
        return info.value.decode()

    def described(self, pd):
        """``(implementation name, scratch layout or None if it needs none)`` of primitive
        descriptor ``pd``."""
        scratch = self.lib.dnnl_primitive_desc_query_md(pd, QUERY_SCRATCHPAD_MD, 0)
        if scratch and not self.lib.dnnl_memory_desc_get_size(scratch):
            scratch = None
        return self.implementation(pd), self.clone(scratch)


def api():
    """The library, or None where it is off, absent or fails to start (said once), or
    in a child forked after OpenMP started (``openmp.usable``)."""
    return _api() if openmp.usable() else None


@functools.lru_cache(maxsize=None)
def _api():
    if os.environ.get(_ENV, "").strip().lower() in ("0", "off"):
        return None
    path = _library_path()
    try:
        return Api(path)
    except (OSError, AttributeError, OneDNNError) as e:
        _log.debug("oneDNN not used (%s): %s", path, e)
        return None


def available() -> bool:
    """Whether float32 convolutions may go through oneDNN in this process."""
    return api() is not None


# Each buffer of a thread is twice the size oneDNN asks for, then CANARY bytes checked
# after each call: oneDNN 3.2's 1x1 stride-2 filter gradient on two threads wrote 10,864
# bytes of scratch after asking for 10,272 (it corrupted the heap, and crashed 1 run in 3).
CANARY = 64
_CANARY_BYTE = 0x5A
_CANARY = bytes([_CANARY_BYTE]) * CANARY


class Steps:
    """Primitives run in turn on the arrays of one call.

    ``steps`` is ``[(primitive, [(arg id, layout, role)])]``: each argument is a
    memory object of that layout whose data is the call's array of that role (``a``,
    ``b``, ``out``) or a buffer of the calling thread (the roles in ``buffers``,
    ``{role: bytes}``: oneDNN's scratch, a reordered filter). Each thread has its own
    memory objects and buffers (a :meth:`state`), so threads may run the same steps at
    once. ``count``: the OpenMP thread count they were made for (``Api.making``).
    """

    def __init__(self, api_, steps, buffers, count):
        self.api, self.steps, self.count = api_, steps, count
        self.buffers = {role: size for role, size in buffers.items() if size}
        self.local = threading.local()

    def state(self):
        """New memory objects and buffers for these steps: ``.args``, one
        ``(primitive, arguments)`` per step; ``.memories``, ``[(memory, role)]``;
        ``.buffers``, ``{role: array}``."""
        made = {}

        def memory(desc, role):  # one memory object per (layout, array)
            key = (desc.value, role)
            if key not in made:
                made[key] = self.api.memory(desc)
            return made[key]

        state = types.SimpleNamespace()
        state.args = [(primitive, (_Arg * len(args))(
            *(_Arg(arg, memory(desc, role)) for arg, desc, role in args)))
            for primitive, args in self.steps]
        state.memories = [(memory_, role) for (_, role), memory_ in made.items()]
        state.addresses = [None] * len(state.memories)  # where each one points now
        state.buffers = {}
        for role, size in self.buffers.items():
            buf = np.empty(2 * size + CANARY, np.uint8)
            buf[-CANARY:] = _CANARY_BYTE
            state.buffers[role] = buf
        return state

    def _thread_state(self):
        local = self.local
        if getattr(local, "state", None) is None:
            local.state = self.state()
        return local.state

    def bind(self, state, a, b, out):
        """Point ``state``'s memory objects at the arrays of one call. One that points
        at the array's address already is left alone: a plan's buffers and the thread's
        own stay where they are from call to call (and reading an address costs a
        third of what ``ctypes.data`` does)."""
        arrays = {"a": a, "b": b, "out": out}
        addresses = state.addresses
        for k, (memory, role) in enumerate(state.memories):
            array = arrays[role] if role in arrays else state.buffers[role]
            address = array.__array_interface__["data"][0]
            if addresses[k] != address:
                status = self.api.lib.dnnl_memory_set_data_handle(memory, P(address))
                if status != OK:
                    raise OneDNNError(f"oneDNN: dnnl_memory_set_data_handle returned {status}")
                addresses[k] = address

    @staticmethod
    def check_buffers(state):
        for role, buf in state.buffers.items():
            if buf[-CANARY:].tobytes() != _CANARY:
                raise OneDNNError(f"oneDNN wrote past twice the {role} memory it asked for")

    def __call__(self, a, b, out):
        """Run the steps on C-ordered (or strided, as their layouts say) float32 arrays
        ``a`` and ``b`` into ``out``; returns ``out``."""
        api_, state = self.api, self._thread_state()
        self.bind(state, a, b, out)
        stream = api_.stream()
        before = api_.get_threads()  # inline api_.threads(count): this runs every call
        if before != self.count:
            api_.set_threads(self.count)
        try:
            for primitive, args in state.args:
                api_.check("dnnl_primitive_execute", primitive, stream, len(args), args)
            api_.check("dnnl_stream_wait", stream)
        finally:
            if before != self.count:
                api_.set_threads(before)
        self.check_buffers(state)
        return out

    def __del__(self):
        for primitive, _ in getattr(self, "steps", ()):
            self.api.lib.dnnl_primitive_destroy(primitive)
        # layouts and per-thread memory objects are small and live as long as the
        # process's caches of steps


# Parts run as one OpenMP team (``openmp.run_blocks``: each thread takes the next part not
# yet taken, so a thread that the scheduler holds back takes fewer); part i's steps run
# in turn on its own stream, each call's status kept.
_PART_IR = r"""
%step = type { ptr, i64, ptr }
%part = type { ptr, i64, ptr, ptr }
%team = type { ptr, ptr, ptr }

define void @gradflow_part(i64 %i, i64 %thread, ptr %t) {
entry:
  %pp = getelementptr %team, ptr %t, i32 0, i32 0
  %parts = load ptr, ptr %pp
  %ep = getelementptr %team, ptr %t, i32 0, i32 1
  %execute = load ptr, ptr %ep
  %wp = getelementptr %team, ptr %t, i32 0, i32 2
  %wait = load ptr, ptr %wp
  %part = getelementptr %part, ptr %parts, i64 %i
  %sp = getelementptr %part, ptr %part, i32 0, i32 0
  %stream = load ptr, ptr %sp
  %cp = getelementptr %part, ptr %part, i32 0, i32 1
  %count = load i64, ptr %cp
  %stp = getelementptr %part, ptr %part, i32 0, i32 2
  %steps = load ptr, ptr %stp
  %rp = getelementptr %part, ptr %part, i32 0, i32 3
  %status = load ptr, ptr %rp
  br label %next_step
next_step:
  %s = phi i64 [ 0, %entry ], [ %s_next, %step ]
  %more_steps = icmp slt i64 %s, %count
  br i1 %more_steps, label %step, label %part_done
step:
  %st = getelementptr %step, ptr %steps, i64 %s
  %prp = getelementptr %step, ptr %st, i32 0, i32 0
  %primitive = load ptr, ptr %prp
  %nap = getelementptr %step, ptr %st, i32 0, i32 1
  %nargs64 = load i64, ptr %nap
  %nargs = trunc i64 %nargs64 to i32
  %ap = getelementptr %step, ptr %st, i32 0, i32 2
  %args = load ptr, ptr %ap
  %r = call i32 %execute(ptr %primitive, ptr %stream, i32 %nargs, ptr %args)
  %slot = getelementptr i32, ptr %status, i64 %s
  store i32 %r, ptr %slot
  %s_next = add i64 %s, 1
  br label %next_step
part_done:
  %w = call i32 %wait(ptr %stream)
  %wslot = getelementptr i32, ptr %status, i64 %count
  store i32 %w, ptr %wslot
  ret void
}
"""


class _Step(ctypes.Structure):
    _fields_ = [("primitive", P), ("nargs", ctypes.c_int64), ("args", P)]


class _Part(ctypes.Structure):
    _fields_ = [("stream", P), ("count", ctypes.c_int64), ("steps", P), ("status", P)]


class _Team(ctypes.Structure):
    _fields_ = [("table", P), ("execute", P), ("wait", P)]


@functools.lru_cache(maxsize=None)
def _part_function():
    """The address of the compiled ``gradflow_part`` (one part's steps, for
    ``openmp.run_blocks``), or None without llvmlite."""
    try:
        return openmp.compile_ir(_PART_IR, "gradflow_part")
    except Exception as err:  # llvmlite missing, or it rejects the IR
        _log.debug("oneDNN parts run on one thread each in turn: %s", err)
        return None


def parts_available():
    """Whether :class:`Parts` can run (llvmlite compiles its team)."""
    return _part_function() is not None


class Parts:
    """Several :class:`Steps`, each made for one thread, run as one OpenMP team of any
    size: each thread takes the next part not yet taken. Each part runs on one
    thread whatever the team, so its bits never depend on the team's size. Each
    calling thread has its own memory objects, buffers and streams (kept, as
    :class:`Steps` keeps its memory objects, as long as the process's caches).
    Needs llvmlite (:func:`parts_available`)."""

    def __init__(self, api_, parts):
        self.api, self.parts = api_, parts
        self.local = threading.local()
        self.part = _part_function()

    def _thread_state(self):
        local = self.local
        if getattr(local, "states", None) is None:
            api_ = self.api
            states = [steps.state() for steps in self.parts]
            streams = [api_.new_stream() for _ in self.parts]
            tables = [(_Step * len(state.args))(*(
                _Step(primitive, len(args), ctypes.cast(args, P))
                for primitive, args in state.args)) for state in states]
            statuses = [(ctypes.c_int * (len(state.args) + 1))() for state in states]
            parts = (_Part * len(states))(*(
                _Part(stream, len(table), ctypes.cast(table, P), ctypes.cast(status, P))
                for stream, table, status in zip(streams, tables, statuses)))
            team = _Team(ctypes.cast(parts, P),
                         ctypes.cast(api_.lib.dnnl_primitive_execute, P),
                         ctypes.cast(api_.lib.dnnl_stream_wait, P))
            # the ctypes objects the team's pointers lead to live as long as it does
            local.keep = (streams, tables, parts)
            local.states, local.statuses, local.team = states, statuses, team
        return local

    def __call__(self, arrays, threads_):
        """Run part ``k`` on ``arrays[k]`` (its ``(a, b, out)``) on a team of
        ``threads_`` threads."""
        local = self._thread_state()
        for steps, state, (a, b, out) in zip(self.parts, local.states, arrays):
            steps.bind(state, a, b, out)
        self.api.pool_in_use()
        openmp.run_blocks(self.part, ctypes.addressof(local.team), len(self.parts), threads_)
        for status in local.statuses:
            if any(status):
                raise OneDNNError(f"oneDNN: a part's steps returned statuses {list(status)}")
        for state in local.states:
            Steps.check_buffers(state)
