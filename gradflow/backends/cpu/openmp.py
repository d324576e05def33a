"""One OpenMP pool for every thread the NumPy backend starts: OpenBLAS's, numba's and
oneDNN's.

Each of these libraries comes with a pool of its own, and two pools on the same
cores spin against each other: OpenBLAS's idle threads spin about 0.1 s after each
matrix product on the cores that the next pool's threads wait for. Measured on the
2-core VM, a two-thread numba kernel right after a product took 3.9 ms where it
takes 0.19 ms alone, and the product after it as long. So the libraries are made
to share one pool, GNU OpenMP's (``libgomp.so.1``, the runtime that numba's
``omp`` threading layer and the ``onednn-cpu-gomp`` wheel already use):

* OpenBLAS (0.3.27 and later) lets a program run its parallel work itself
  (``openblas_set_threads_callback_function``). :func:`shared` hands it a small
  function, compiled here with llvmlite (numba's code generator, so no C compiler
  is needed), that runs OpenBLAS's jobs as one ``GOMP_parallel`` team: the same
  jobs, split as before, so the same bits, on OpenMP's threads.
* numba's kernels (``numpy_fused``) then take its ``omp`` threading layer.
* oneDNN already runs on it.

It is used where all of it is there: numba and llvmlite, ``libgomp.so.1``, an
OpenBLAS built with pthreads that has the callback (NumPy's wheels since 2.0),
numba free to take the ``omp`` layer, and ``GRADFLOW_OPENMP`` not ``0``. Elsewhere
:func:`shared` is False and the pools stay apart, with ``threads`` keeping them off
each other's cores as before.

GNU OpenMP does not survive ``fork()``: a child's first parallel region waits for
threads that only the parent has. A forked child therefore gives OpenBLAS back its
own threads, runs numba's kernels on one thread, and leaves oneDNN alone
(:func:`usable` is False there).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading

from gradflow.backends.cpu.cores import allowed_cores, blas_libraries
from gradflow.backends.cpu.numba_support import get_numba

_log = logging.getLogger("gradflow.openmp")
_ENV = "GRADFLOW_OPENMP"

# The callback OpenBLAS calls with its jobs, as LLVM IR: one GOMP_parallel team of
# `count` threads; thread t runs jobs t, t + team, ... (one each when the team is whole,
# which the jobs of a threaded product need: they wait for each other).
_IR = r"""
%jobs = type { ptr, ptr, i64, i32, i32 }
declare void @GOMP_parallel(ptr, ptr, i32, i32)
declare i32 @omp_get_thread_num()
declare i32 @omp_get_num_threads()

define void @gradflow_blas_worker(ptr %p) {
entry:
  %fp = getelementptr %jobs, ptr %p, i32 0, i32 0
  %f = load ptr, ptr %fp
  %bp = getelementptr %jobs, ptr %p, i32 0, i32 1
  %base = load ptr, ptr %bp
  %sp = getelementptr %jobs, ptr %p, i32 0, i32 2
  %size = load i64, ptr %sp
  %np = getelementptr %jobs, ptr %p, i32 0, i32 3
  %n = load i32, ptr %np
  %dp = getelementptr %jobs, ptr %p, i32 0, i32 4
  %data = load i32, ptr %dp
  %first = call i32 @omp_get_thread_num()
  %team = call i32 @omp_get_num_threads()
  br label %loop
loop:
  %i = phi i32 [ %first, %entry ], [ %next, %body ]
  %more = icmp slt i32 %i, %n
  br i1 %more, label %body, label %done
body:
  %wide = sext i32 %i to i64
  %offset = mul i64 %wide, %size
  %job = getelementptr i8, ptr %base, i64 %offset
  call void %f(i32 %i, ptr %job, i32 %data)
  %next = add i32 %i, %team
  br label %loop
done:
  ret void
}

define void @gradflow_blas_callback(i32 %sync, ptr %dojob, i32 %count, i64 %size,
                                    ptr %base, i32 %data) {
  %s = alloca %jobs
  %fp = getelementptr %jobs, ptr %s, i32 0, i32 0
  store ptr %dojob, ptr %fp
  %bp = getelementptr %jobs, ptr %s, i32 0, i32 1
  store ptr %base, ptr %bp
  %sp = getelementptr %jobs, ptr %s, i32 0, i32 2
  store i64 %size, ptr %sp
  %np = getelementptr %jobs, ptr %s, i32 0, i32 3
  store i32 %count, ptr %np
  %dp = getelementptr %jobs, ptr %s, i32 0, i32 4
  store i32 %data, ptr %dp
  call void @GOMP_parallel(ptr @gradflow_blas_worker, ptr %s, i32 %count, i32 0)
  ret void
}
"""

# OpenBLAS's setter, as NumPy's and SciPy's wheels (symbol prefix and suffix) and a
# plain build name it.
_SETTERS = ("scipy_openblas_set_threads_callback_function64_",
            "scipy_openblas_set_threads_callback_function",
            "openblas_set_threads_callback_function64_",
            "openblas_set_threads_callback_function")

_lock = threading.Lock()
_state = {"decided": False, "shared": False, "started": False, "forked": False,
          "setters": [], "why": None}


def _off():
    return os.environ.get(_ENV, "").strip().lower() in ("0", "off", "false")


def usable():
    """Whether OpenMP may run in this process: not a child forked from a parent that
    had started OpenMP's threads (their pool is not there in the child)."""
    return not _state["forked"]


def started():
    """Note that OpenMP's threads run in this process (oneDNN calls it): a child forked
    from now on keeps off OpenMP."""
    _state["started"] = True


def shared():
    """Whether OpenBLAS, numba's kernels and oneDNN share OpenMP's one pool in this
    process (decided, and set up, at the first call)."""
    if not _state["decided"]:
        with _lock:
            if not _state["decided"]:
                _state["shared"] = _set_up()
                _state["decided"] = True
    return _state["shared"] and not _state["forked"]


@functools.lru_cache(maxsize=None)
def numba_threads():
    """numba's most threads (``NUMBA_NUM_THREADS``, fixed when numba loads): a kernel's
    team is no larger."""
    numba = get_numba()
    return numba.config.NUMBA_NUM_THREADS if numba is not None else 1


def why_not():
    """Why the pools are not shared (None when they are, or before :func:`shared`)."""
    return _state["why"]


def _refuse(why):
    _state["why"] = why
    _log.debug("OpenBLAS, numba and oneDNN keep pools of their own: %s", why)
    return False


def _set_up():
    if _off():
        return _refuse(f"{_ENV}=0")
    numba = get_numba()
    if numba is None:
        return _refuse("numba is missing or off")
    try:
        gomp = ctypes.CDLL("libgomp.so.1")
    except OSError as err:
        return _refuse(f"libgomp.so.1 does not load ({err})")
    if gomp.omp_get_dynamic():
        return _refuse("OMP_DYNAMIC is on: a team could be smaller than its jobs")
    if gomp.omp_get_thread_limit() < allowed_cores():
        return _refuse("OMP_THREAD_LIMIT is below the cores: a team could be smaller than "
                       "its jobs")
    setters = _openblas_setters()
    if not setters:
        return _refuse("no OpenBLAS with pthreads and a threads callback is loaded")
    if not _omp_layer(numba):
        return _refuse("numba's threading layer is not omp "
                       f"({os.environ.get('NUMBA_THREADING_LAYER') or 'chosen already'})")
    try:
        callback = _compile(gomp)
    except Exception as err:  # llvmlite missing, or it rejects the IR
        return _refuse(f"the callback did not compile ({type(err).__name__}: {err})")
    # a product called inside an OpenMP region (nested) still gets a whole team: its jobs
    # wait for each other, so one thread running them in turn would never finish
    if gomp.omp_get_max_active_levels() < 2:
        gomp.omp_set_max_active_levels(2)
    for setter in setters:
        setter(ctypes.c_void_p(callback))
    _state["setters"] = setters
    _state["started"] = True
    _log.debug("OpenBLAS, numba and oneDNN share OpenMP's pool")
    return True


def _openblas_setters():
    setters = []
    for lib in blas_libraries():
        if getattr(lib, "internal_api", None) != "openblas" or \
                getattr(lib, "threading_layer", None) != "pthreads":
            continue
        for name in _SETTERS:
            setter = getattr(lib.dynlib, name, None)
            if setter is not None:
                setter.argtypes = [ctypes.c_void_p]
                setter.restype = None
                setters.append(setter)
                break
    return setters


def _omp_layer(numba):
    """Take numba's ``omp`` threading layer (unless the user chose one, or numba
    started another already) and say whether it is the one in use."""
    from numba.np.ufunc import parallel  # numba is optional: imported once it is there

    chosen = os.environ.get("NUMBA_THREADING_LAYER", "").strip()
    if not parallel._is_initialized and chosen in ("", "default", "omp"):
        numba.config.THREADING_LAYER = "omp"
    try:
        parallel._launch_threads()
        return numba.threading_layer() == "omp"
    except Exception:  # no omp layer in this numba build
        return False


def _compile(gomp):
    return compile_ir(_IR, "gradflow_blas_callback", gomp)


_engines = []  # compiled code lives as long as its engine: for good
_compiling = threading.Lock()


def compile_ir(ir, name, gomp=None):
    """The address of function ``name`` of LLVM IR module ``ir`` (text), compiled for
    this machine with llvmlite; the IR may call ``GOMP_parallel``,
    ``omp_get_thread_num``, ``omp_get_num_threads`` and ``omp_set_num_threads``.
    Raises ImportError without llvmlite, RuntimeError where it rejects the IR."""
    import llvmlite.binding as llvm  # optional (with numba), and slow to import

    gomp = gomp or ctypes.CDLL("libgomp.so.1")
    with _compiling:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        for symbol in ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads",
                       "omp_set_num_threads"):
            llvm.add_symbol(symbol, ctypes.cast(getattr(gomp, symbol), ctypes.c_void_p).value)
        module = llvm.parse_assembly(ir)
        module.verify()
        machine = llvm.Target.from_default_triple().create_target_machine(opt=2)
        engine = llvm.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        _engines.append(engine)
        return engine.get_function_address(name)


# A team over blocks, as LLVM IR: each of `threads` OpenMP threads takes the next block
# not yet taken (an atomic counter), so a thread the scheduler holds back takes fewer,
# and calls f(block, thread number, args) for it. Nested regions inside f get one
# thread (the blocks' own calls are made for one).
_BLOCKS_IR = r"""
%blocks = type { ptr, ptr, i64, i64 }
declare void @GOMP_parallel(ptr, ptr, i32, i32)
declare i32 @omp_get_thread_num()
declare void @omp_set_num_threads(i32)

define void @gradflow_blocks_worker(ptr %p) {
entry:
  %fp = getelementptr %blocks, ptr %p, i32 0, i32 0
  %f = load ptr, ptr %fp
  %ap = getelementptr %blocks, ptr %p, i32 0, i32 1
  %args = load ptr, ptr %ap
  %np = getelementptr %blocks, ptr %p, i32 0, i32 2
  %n = load i64, ptr %np
  %taken = getelementptr %blocks, ptr %p, i32 0, i32 3
  %t32 = call i32 @omp_get_thread_num()
  %t = sext i32 %t32 to i64
  call void @omp_set_num_threads(i32 1)
  br label %next
next:
  %i = atomicrmw add ptr %taken, i64 1 monotonic
  %more = icmp slt i64 %i, %n
  br i1 %more, label %run, label %done
run:
  call void %f(i64 %i, i64 %t, ptr %args)
  br label %next
done:
  ret void
}

define void @gradflow_run_blocks(ptr %f, ptr %args, i64 %n, i32 %threads) {
entry:
  %b = alloca %blocks
  %fp = getelementptr %blocks, ptr %b, i32 0, i32 0
  store ptr %f, ptr %fp
  %ap = getelementptr %blocks, ptr %b, i32 0, i32 1
  store ptr %args, ptr %ap
  %np = getelementptr %blocks, ptr %b, i32 0, i32 2
  store i64 %n, ptr %np
  %taken = getelementptr %blocks, ptr %b, i32 0, i32 3
  store i64 0, ptr %taken
  call void @GOMP_parallel(ptr @gradflow_blocks_worker, ptr %b, i32 %threads, i32 0)
  ret void
}
"""


@functools.lru_cache(maxsize=None)
def _blocks_runner():
    address = compile_ir(_BLOCKS_IR, "gradflow_run_blocks")
    return ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                            ctypes.c_int)(address)


def run_blocks(function, arguments, count, threads):
    """Call the C function at address ``function``, ``void f(int64 block, int64 thread,
    void *arguments)``, for blocks ``0 .. count - 1`` on a team of ``threads`` OpenMP
    threads (``thread`` is the caller's number in the team, below ``threads``); each
    thread takes the next block not yet taken. Needs llvmlite and ``libgomp.so.1``."""
    _blocks_runner()(function, arguments, count, threads)


def _in_child():
    if not _state["started"]:
        return
    _state["forked"] = True
    for setter in _state["setters"]:
        setter(ctypes.c_void_p(0))  # OpenBLAS starts threads of its own again


os.register_at_fork(after_in_child=_in_child)
