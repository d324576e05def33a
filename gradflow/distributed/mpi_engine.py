"""The MPI engine: collectives through mpi4py, on every backend.

Arrays in host memory (NumPy, torch on the CPU, array_api_strict) reach MPI
through the buffer protocol as NumPy views of their memory (``np.from_dlpack``
gives a writable view without a copy), so the reduction writes straight into
the fusion buffer. Arrays in GPU memory (CuPy, torch on CUDA) go either
straight to a CUDA-aware MPI (``GRADFLOW_MPI_CUDA_AWARE=1``; MPI reads the
device pointer) or through a host copy there and back.

Every collective is started non-blocking and waited for by a ``Watchdog``
(``watchdog.py``): a waiting rank sleeps instead of spinning a core, and the
job ends, naming the rank, when a rank it waits for has left or stalls.

mpi4py is imported when the engine is made (by ``gradflow.distributed.init``),
never before.
"""

from __future__ import annotations

import os
import pickle
import sys
import time

import numpy as np

from gradflow.backends.cupy.device_arrays import from_host, synchronize, to_host
from gradflow.distributed.engine import Engine, _check_root
from gradflow.distributed.watchdog import StallLimits, Watchdog

ENV_CUDA_AWARE = "GRADFLOW_MPI_CUDA_AWARE"
ABORT_GRACE_SECONDS = 0.5


def import_mpi():
    """``mpi4py.MPI``, or an ImportError that says what to install."""
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise ImportError(
            "gradflow.distributed needs mpi4py and an MPI library to run on several "
            "processes: pip install mpi4py mpich (the mpich wheel puts mpiexec beside "
            f"python) [{type(err).__name__}: {err}]") from None
    return MPI


class MPIEngine(Engine):
    """Collectives over an MPI communicator (``MPI.COMM_WORLD`` by default); ``stall``
    (``watchdog.StallLimits``) says when a waiting rank reports and aborts a stall."""

    name = "mpi"

    def __init__(self, comm=None, cuda_aware=None, stall: StallLimits | None = None):
        MPI = import_mpi()  # noqa: N806 - the module's own name
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        local = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.comm.Get_rank())
        super().__init__(self.comm.Get_rank(), self.comm.Get_size(),
                         local.Get_rank(), local.Get_size())
        local.Free()
        if cuda_aware is None:
            cuda_aware = os.environ.get(ENV_CUDA_AWARE, "0").strip().lower() in ("1", "true",
                                                                                "yes")
        self.cuda_aware = bool(cuda_aware)
        # MPICH reduces its MPIX_C_FLOAT16 natively; other libraries get a summing op of ours.
        self.native_half = MPI.Get_library_version().startswith("MPICH")
        self._half_op = None
        self.watchdog = Watchdog(self.comm, stall or StallLimits(), self.abort)

    # -- arrays ---------------------------------------------------------------------
    def allreduce_(self, buffer, name: str = "") -> None:
        with _Staged(self, buffer) as view:
            if view.dtype == np.float16 and not self.native_half and not _on_device(view):
                request = self.comm.Iallreduce(self.MPI.IN_PLACE, [view.view(np.uint16),
                                               self.MPI.UINT16_T], self._half_sum())
            else:
                request = self.comm.Iallreduce(self.MPI.IN_PLACE, view, self.MPI.SUM)
            self.watchdog.wait(request, name or "allreduce")

    def broadcast_(self, buffer, root: int, name: str = "") -> None:
        _check_root(root, self.size)
        with _Staged(self, buffer) as view:
            self.watchdog.wait(self.comm.Ibcast(view, root=int(root)), name or "broadcast")

    def allgather(self, array, backend, name: str = ""):
        name = name or "allgather"
        shapes = self.allgather_object(tuple(array.shape), f"{name} (shapes)")
        _check_gather_shapes(shapes)
        rows = [s[0] if s else 1 for s in shapes]
        row_size = int(np.prod(shapes[0][1:])) if shapes[0] else 1
        host = np.ascontiguousarray(_readable(array))
        out = np.empty((sum(rows),) + tuple(shapes[0][1:]), dtype=host.dtype)
        send = host.reshape(-1)
        recv = out.reshape(-1)
        if host.dtype == np.bool_:  # MPI has no bool type; the bytes are the same
            send, recv = send.view(np.uint8), recv.view(np.uint8)
        self._allgatherv(send, recv, [r * row_size for r in rows], name)
        return backend.asarray(out)

    def barrier(self, name: str = "") -> None:
        self.watchdog.wait(self.comm.Ibarrier(), name or "barrier")

    # -- objects --------------------------------------------------------------------
    def broadcast_object(self, obj, root: int = 0, name: str = ""):
        _check_root(root, self.size)
        name = name or "broadcast_object"
        data = pickle.dumps(obj) if self.rank == root else b""
        length = np.array([len(data)], np.int64)
        self.watchdog.wait(self.comm.Ibcast(length, root=int(root)), name)
        buffer = bytearray(data) if self.rank == root else bytearray(int(length[0]))
        self.watchdog.wait(self.comm.Ibcast(buffer, root=int(root)), name)
        return obj if self.rank == root else pickle.loads(buffer)

    def allgather_object(self, obj, name: str = "") -> list:
        name = name or "allgather_object"
        data = np.frombuffer(pickle.dumps(obj), np.uint8)
        lengths = np.empty(self.size, np.int64)
        self.watchdog.wait(self.comm.Iallgather(np.array([data.size], np.int64), lengths),
                           name)
        out = np.empty(int(lengths.sum()), np.uint8)
        self._allgatherv(data, out, [int(n) for n in lengths], name)
        ends = np.cumsum(lengths)
        return [pickle.loads(out[end - n:end].tobytes()) for n, end in zip(lengths, ends)]

    def _allgatherv(self, send, recv, counts, name):
        self.watchdog.wait(self.comm.Iallgatherv(send, [recv, counts]), name)

    def abort(self, code: int = 1) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - the job ends either way
                pass
        # MPICH's launcher can kill the job before it forwards what this rank just wrote,
        # and the user would see no traceback: give it a moment to pass the output on
        time.sleep(ABORT_GRACE_SECONDS)
        self.comm.Abort(code)

    def _half_sum(self):
        if self._half_op is None:
            def add_halves(inbuf, inoutbuf, datatype):
                into = np.frombuffer(inoutbuf, dtype=np.float16)
                np.add(into, np.frombuffer(inbuf, dtype=np.float16), out=into)

            self._half_op = self.MPI.Op.Create(add_halves, commute=True)
        return self._half_op


def _check_gather_shapes(shapes):
    first = shapes[0]
    for rank, shape in enumerate(shapes):
        if len(shape) != len(first) or tuple(shape[1:]) != tuple(first[1:]):
            raise ValueError(f"allgather: every rank's tensor must have the same shape but for "
                             f"the first axis; rank 0 has {first}, rank {rank} has {shape}")


def _on_device(array) -> bool:
    return hasattr(array, "__cuda_array_interface__")


def _readable(array) -> np.ndarray:
    """A NumPy array with the values of ``array`` (a view where the memory is on the host)."""
    if isinstance(array, np.ndarray):
        return array
    if _on_device(array):
        return to_host(array)
    return np.from_dlpack(array)


class _Staged:
    """``with _Staged(engine, buffer) as view``: something MPI can read and write in
    place of the 1-D ``buffer``; on exit the result is in ``buffer``."""

    def __init__(self, engine, buffer):
        self.engine = engine
        self.buffer = buffer
        self.host = None

    def __enter__(self):
        buffer = self.buffer
        if isinstance(buffer, np.ndarray):
            return buffer
        if not _on_device(buffer):
            return np.from_dlpack(buffer)  # a writable view of the same memory
        if self.engine.cuda_aware:
            synchronize(buffer)
            return buffer
        self.host = to_host(buffer)
        return self.host

    def __exit__(self, kind, value, tb):
        if self.host is not None and kind is None:
            from_host(self.buffer, self.host)
        return False
