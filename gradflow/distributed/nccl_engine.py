"""The NCCL engine: collectives between GPUs through ``cupy.cuda.nccl``, for CuPy sessions.

NCCL works on device pointers and CUDA streams: a collective is queued on the
current stream of the buffer's device, after the kernels that computed it and
before those that read the result, so nothing waits on the host and nothing
is copied to it. The communicator is made from a unique id that rank 0 draws
and sends to the others with an MPI broadcast; Python objects (digests,
seeds) also travel over MPI, through the MPI engine this one is built on.

The watchdog of the MPI engine (``watchdog.py``) covers what travels over MPI
here (the unique id, shapes, digests); a rank that stalls or leaves while the
others wait inside an NCCL kernel is not detected.

This engine needs CuPy with NCCL and a CUDA GPU per process; it is not run
in CI, which has neither.
"""

from __future__ import annotations

from gradflow.backends.cupy.nccl import import_nccl
from gradflow.distributed.engine import Engine, _check_root


class NCCLEngine(Engine):
    """Collectives between the GPUs of a job, one GPU per process.

    ``host`` is the MPI engine of the same processes (it carries the unique id
    and Python objects); ``device`` the CUDA device index of this process.
    """

    name = "nccl"

    def __init__(self, host: Engine, device: int):
        cupy, nccl = import_nccl()
        super().__init__(host.rank, host.size, host.local_rank, host.local_size)
        self.cupy = cupy
        self.nccl = nccl
        self.host = host
        self.device = int(device)
        self._types = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
                       "float64": nccl.NCCL_FLOAT64, "int8": nccl.NCCL_INT8,
                       "uint8": nccl.NCCL_UINT8, "bool": nccl.NCCL_UINT8,
                       "int32": nccl.NCCL_INT32, "uint32": nccl.NCCL_UINT32,
                       "int64": nccl.NCCL_INT64, "uint64": nccl.NCCL_UINT64}
        unique_id = nccl.get_unique_id() if host.rank == 0 else None
        unique_id = host.broadcast_object(unique_id, 0)
        with cupy.cuda.Device(self.device):
            self.comm = nccl.NcclCommunicator(host.size, unique_id, host.rank)

    def supports(self, backend) -> bool:
        return backend.name == "cupy"

    def _type(self, array):
        try:
            return self._types[array.dtype.name]
        except KeyError:
            raise TypeError(f"NCCL cannot move arrays of dtype {array.dtype}") from None

    def _check(self, array):
        if not isinstance(array, self.cupy.ndarray):
            raise TypeError(f"the NCCL engine moves CuPy arrays, not {type(array).__name__}")
        if array.device.id != self.device:
            raise ValueError(f"the NCCL communicator of this rank is on cuda:{self.device}, "
                             f"the array on cuda:{array.device.id}")
        if not array.flags.c_contiguous:
            raise ValueError("NCCL needs a contiguous array")

    def allreduce_(self, buffer, name: str = "") -> None:
        self._check(buffer)
        with buffer.device:
            stream = self.cupy.cuda.get_current_stream()
            self.comm.allReduce(buffer.data.ptr, buffer.data.ptr, buffer.size,
                                self._type(buffer), self.nccl.NCCL_SUM, stream.ptr)

    def broadcast_(self, buffer, root: int, name: str = "") -> None:
        _check_root(root, self.size)
        self._check(buffer)
        with buffer.device:
            stream = self.cupy.cuda.get_current_stream()
            self.comm.bcast(buffer.data.ptr, buffer.size, self._type(buffer), int(root),
                            stream.ptr)

    def allgather(self, array, backend, name: str = ""):
        cupy = self.cupy
        shapes = self.host.allgather_object(tuple(array.shape), f"{name or 'allgather'} (shapes)")
        from gradflow.distributed.mpi_engine import _check_gather_shapes

        _check_gather_shapes(shapes)
        rows = [s[0] if s else 1 for s in shapes]
        tail = tuple(shapes[0][1:])
        most = max(rows)
        with cupy.cuda.Device(self.device):
            # NCCL gathers equal counts: pad every rank's rows to the longest, then drop
            send = cupy.zeros((most,) + tail, dtype=array.dtype)
            send[:rows[self.rank]] = cupy.reshape(array, (rows[self.rank],) + tail)
            recv = cupy.empty((self.size, most) + tail, dtype=array.dtype)
            stream = cupy.cuda.get_current_stream()
            self.comm.allGather(send.data.ptr, recv.data.ptr, send.size, self._type(send),
                                stream.ptr)
            return cupy.concatenate([recv[r, :rows[r]] for r in range(self.size)], axis=0)

    def barrier(self, name: str = "") -> None:
        self.cupy.cuda.Device(self.device).synchronize()
        self.host.barrier(name)

    def broadcast_object(self, obj, root: int = 0, name: str = ""):
        return self.host.broadcast_object(obj, root, name)

    def allgather_object(self, obj, name: str = "") -> list:
        return self.host.allgather_object(obj, name)

    def abort(self, code: int = 1) -> None:
        try:
            self.comm.abort()
        finally:
            self.host.abort(code)
