"""The state of ``gradflow.distributed`` in this process: the engines, set by ``init``."""

from __future__ import annotations

import os
import sys
import weakref

from gradflow.distributed.engine import Engine, LocalEngine

ENV_ENGINE = "GRADFLOW_DISTRIBUTED_ENGINE"
ENGINES = ("auto", "mpi", "nccl", "local")

# Set by the process launchers of the common MPI libraries (MPICH/Hydra, Slurm's PMI,
# PMIx, Open MPI, MVAPICH): a process that has none of them was not started by mpiexec.
_LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "PMI_FD", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                       "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS")


class Context:
    """The host engine (MPI, or the one-process engine) and the GPU engines made from it."""

    def __init__(self, host: Engine, choice: str):
        self.host = host
        self.choice = choice
        self._gpu: dict = {}  # CUDA device index -> NCCL engine
        # node -> digests of its layouts that every rank was found to share
        self.agreed = weakref.WeakKeyDictionary()
        self._previous_hook = None

    def engine_for(self, backend) -> Engine:
        """The engine that moves the arrays of a session on ``backend``: NCCL for CuPy
        (unless ``engine="mpi"`` was chosen, or one process runs alone), else the host's."""
        if backend.name != "cupy" or self.choice == "mpi":
            return self.host
        if self.choice == "auto" and self.host.size == 1:
            return self.host
        if self.choice == "auto":
            try:
                from gradflow.backends.cupy.nccl import import_nccl

                import_nccl()
            except ImportError:
                return self.host  # CuPy without NCCL: MPI with a host copy (or CUDA-aware)
        index = getattr(backend.device, "id", 0)
        engine = self._gpu.get(index)
        if engine is None:
            from gradflow.distributed.nccl_engine import NCCLEngine

            engine = self._gpu[index] = NCCLEngine(self.host, index)
        return engine

    def install_abort_hook(self) -> None:
        """Make an uncaught exception end every rank, not only this one: the others would
        otherwise wait for it forever in their next collective."""
        previous = sys.excepthook
        host = self.host

        def abort_job(kind, value, tb):
            previous(kind, value, tb)
            sys.stderr.write(f"gradflow.distributed: rank {host.rank} of {host.size} failed "
                             f"({kind.__name__}); aborting the job\n")
            host.abort(1)

        self._previous_hook = previous
        sys.excepthook = abort_job

    def remove_abort_hook(self) -> None:
        if self._previous_hook is not None:
            sys.excepthook = self._previous_hook
            self._previous_hook = None


_current: Context | None = None


def launched_by_mpi() -> bool:
    """Whether an MPI launcher (mpiexec, srun, ...) started this process."""
    return any(name in os.environ for name in _LAUNCHER_VARIABLES)


def create(comm=None, engine=None, stall=None) -> Context:
    """A new context: see ``gradflow.distributed.init``; ``stall`` is a
    ``watchdog.StallLimits`` for the MPI engine."""
    choice = engine if engine is not None else (os.environ.get(ENV_ENGINE) or "auto")
    choice = str(choice).strip().lower()
    if choice not in ENGINES:
        source = "engine" if engine is not None else ENV_ENGINE
        raise ValueError(f"{source} must be one of {', '.join(ENGINES)}; got {choice!r}")
    if choice == "nccl":
        from gradflow.backends.cupy.nccl import import_nccl

        import_nccl()
    if choice == "local":
        if comm is not None:
            raise ValueError("engine='local' runs one process alone and takes no comm")
        host = LocalEngine()
    elif comm is not None or choice == "mpi" or launched_by_mpi() \
            or "mpi4py.MPI" in sys.modules:
        from gradflow.distributed.mpi_engine import MPIEngine

        host = MPIEngine(comm, stall=stall)
    else:
        host = LocalEngine()
    return Context(host, choice)


def current(what: str) -> Context:
    """The context set by ``init()``, or a clear error for ``what`` needing it."""
    if _current is None:
        raise ValueError(f"{what} needs gradflow.distributed.init() to be called first "
                         "(it finds the other processes of the job; without MPI it runs one)")
    return _current
