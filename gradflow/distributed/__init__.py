"""Data-parallel training over several processes, GPUs and hosts, with Horovod's TF1 names.

Every process (rank) holds the whole model and trains on its own shard of
each batch; ``DistributedOptimizer`` averages the gradients across ranks
before the update, and ``broadcast_global_variables`` starts every rank from
the same weights::

    import gradflow as gf
    import gradflow.distributed as hvd

    hvd.init()                                   # one process alone without MPI
    opt = hvd.DistributedOptimizer(gf.train.AdamOptimizer(1e-3 * hvd.size()))
    train_op = opt.minimize(loss)
    sess.run(hvd.broadcast_global_variables(0))
    for xb, yb in gf.data.batches(x, y, batch_size=128, seed=epoch,
                                  shard=(hvd.rank(), hvd.size())): ...

Launch with ``mpiexec -n 4 python -m mpi4py train.py``. The collectives are
nodes of the graph, run in the plan's fixed order; the transport is an
engine (``engine.py``): MPI through mpi4py on every backend, NCCL through
CuPy for CuPy sessions. Nothing of MPI is imported before ``init()``.
"""

from __future__ import annotations

from gradflow.distributed import _context
from gradflow.distributed.compression import Compression, Compressor
from gradflow.distributed.engine import Engine, LocalEngine
from gradflow.distributed.fusion import DEFAULT_THRESHOLD_MB
from gradflow.distributed.ops import AVERAGE, SUM, DistributedMismatchError, as_op, grouped, single
from gradflow.distributed.ops import allgather as _allgather
from gradflow.distributed.optimizer import DistributedOptimizer
from gradflow.distributed.watchdog import stall_limits

#: Reduction operations (Horovod's ``hvd.Average``, ``hvd.Sum``).
Average = AVERAGE
Sum = SUM

__all__ = [
    "Average", "Compression", "Compressor", "DEFAULT_THRESHOLD_MB", "DistributedMismatchError",
    "DistributedOptimizer", "Engine", "LocalEngine", "Sum", "allgather", "allgather_object",
    "allreduce", "broadcast", "broadcast_global_variables", "broadcast_object",
    "broadcast_variables", "engine", "grouped_allreduce", "init", "is_initialized",
    "local_rank", "local_size", "rank", "shutdown", "size",
]


def init(comm=None, engine=None, stall_check_time_seconds=None,
         stall_shutdown_time_seconds=None) -> None:
    """Join the job this process belongs to (Horovod's ``hvd.init``).

    Under an MPI launcher (``mpiexec -n N python -m mpi4py script.py``) this
    imports mpi4py and uses ``MPI.COMM_WORLD`` (or ``comm``, an mpi4py
    communicator). Started without a launcher, and without mpi4py, the job is
    this one process: ``size() == 1`` and every collective is the identity.

    ``engine`` (default: ``GRADFLOW_DISTRIBUTED_ENGINE``, else ``"auto"``):
    ``"auto"`` uses NCCL for CuPy sessions when CuPy has it and MPI for the
    rest; ``"mpi"`` uses MPI for everything (CuPy arrays through CUDA-aware MPI
    when ``GRADFLOW_MPI_CUDA_AWARE=1``, else a host copy) and starts MPI even
    without a launcher; ``"nccl"`` insists on NCCL for CuPy sessions (an error
    now if CuPy or its NCCL is missing); ``"local"`` runs this process alone.

    With more than one rank, an uncaught exception on any rank aborts the whole
    job (``MPI_Abort``), so the others do not wait for it forever; so does a rank
    that exits (``sys.exit``, any status, or the end of its script) while another
    waits for it in a collective. A rank that has waited
    ``stall_check_time_seconds`` in a collective (default:
    ``HOROVOD_STALL_CHECK_TIME_SECONDS``, else 60; 0 or
    ``HOROVOD_STALL_CHECK_DISABLE=1``: never) prints which ranks have not reached
    it, and again at every multiple of that time; after
    ``stall_shutdown_time_seconds`` (default: ``HOROVOD_STALL_SHUTDOWN_TIME_SECONDS``,
    else 0: never) it aborts the job with that message. Waiting ranks sleep
    between checks instead of spinning a core. Calling ``init`` again does nothing.

    >>> hvd.init(stall_check_time_seconds=30, stall_shutdown_time_seconds=300)
    """
    if _context._current is not None:
        return
    stall = stall_limits(stall_check_time_seconds, stall_shutdown_time_seconds)
    ctx = _context.create(comm, engine, stall)
    if ctx.host.size > 1:
        ctx.install_abort_hook()
    _context._current = ctx


def shutdown() -> None:
    """Leave the job: ``rank()`` and the others need ``init()`` again. MPI itself is
    finalized when the process exits (by mpi4py)."""
    ctx = _context._current
    if ctx is not None:
        ctx.remove_abort_hook()
    _context._current = None


def is_initialized() -> bool:
    """Whether ``init()`` has been called (and not ``shutdown()`` since)."""
    return _context._current is not None


def engine() -> Engine:
    """The host engine of the job (MPI, or the one-process engine)."""
    return _context.current("engine()").host


def rank() -> int:
    """This process's number in the job, from 0 to ``size() - 1``."""
    return _context.current("rank()").host.rank


def size() -> int:
    """The number of processes in the job."""
    return _context.current("size()").host.size


def local_rank() -> int:
    """This process's number among the processes of its host (pick its GPU with it:
    ``gf.Session(backend="cupy", device=hvd.local_rank())``)."""
    return _context.current("local_rank()").host.local_rank


def local_size() -> int:
    """The number of processes of the job on this host."""
    return _context.current("local_size()").host.local_size


def allreduce(tensor, average=None, compression=Compression.none, op=None, name=None):
    """A tensor: ``tensor`` averaged (``op=Average``, the default) or summed (``op=Sum``)
    over all ranks. Its gradient is the same reduction of the incoming gradient."""
    return single("allreduce", tensor, op=as_op(op, average), compression=compression,
                  name=name)


def grouped_allreduce(tensors, average=None, compression=Compression.none, op=None,
                      name=None, fusion_threshold_mb=None):
    """``[allreduce(t) for t in tensors]`` as one node: the tensors are packed into
    fusion buffers (see ``DistributedOptimizer``) and reduced together."""
    return grouped("allreduce", list(tensors), op=as_op(op, average), compression=compression,
                   fusion_threshold_mb=fusion_threshold_mb, name=name)


def allgather(tensor, name=None):
    """A tensor: ``tensor`` of every rank, in rank order, concatenated along axis 0
    (the first dimension may differ between ranks, the others may not)."""
    return _allgather(tensor, name=name)


def broadcast(tensor, root_rank, name=None):
    """A tensor: the value ``tensor`` has on rank ``root_rank``, on every rank."""
    return single("broadcast", tensor, root=_root(root_rank), name=name)


def broadcast_variables(variables, root_rank):
    """An operation that sets each of ``variables`` to its value on rank ``root_rank``."""
    from gradflow.ops.state_ops import assign, group, no_op

    variables = list(variables)
    if not variables:
        return no_op(name="broadcast_variables")
    values = grouped("broadcast", variables, names=[v.name for v in variables],
                     root=_root(root_rank), name="BroadcastVariables")
    return group(*[assign(v, value) for v, value in zip(variables, values)],
                 name="broadcast_variables")


def broadcast_global_variables(root_rank):
    """An operation that sets every global variable of the default graph to its value
    on rank ``root_rank``; run it once after the initializer (or a restore on rank 0)
    so that every rank starts from the same weights."""
    from gradflow.variables import global_variables

    return broadcast_variables(global_variables(), root_rank)


def broadcast_object(obj, root_rank=0, name=None):
    """Rank ``root_rank``'s ``obj`` (any picklable object), returned on every rank; it runs
    now, not in a graph."""
    host = _context.current("broadcast_object()").host
    return host.broadcast_object(obj, _root(root_rank), name or "broadcast_object")


def allgather_object(obj, name=None):
    """``[obj of rank 0, obj of rank 1, ...]`` on every rank (picklable objects); runs now."""
    host = _context.current("allgather_object()").host
    return host.allgather_object(obj, name or "allgather_object")


def _root(root_rank) -> int:
    root = int(root_rank)
    if _context._current is not None and not 0 <= root < size():
        raise ValueError(f"root_rank {root_rank} is not a rank of this job (ranks 0 to "
                         f"{size() - 1})")
    return root
