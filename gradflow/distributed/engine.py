"""The interface every collective engine implements, and the one-process engine.

An engine moves arrays between the processes of a job. The graph nodes of
``gradflow.distributed`` talk to it only through this interface, so a new
transport (torch.distributed, Gloo, ...) is one new subclass and nothing else:

* ``allreduce_(buffer)``: sum a flat array over all ranks, in place;
* ``broadcast_(buffer, root)``: overwrite a flat array with root's, in place;
* ``allgather(array, backend)``: the arrays of all ranks concatenated along
  their first axis (which may differ in length between ranks);
* ``barrier()``;
* ``broadcast_object(obj, root)`` and ``allgather_object(obj)``: picklable
  Python objects (digests, seeds, unique ids);
* ``abort(code)``: end every process of the job now.

Arrays are those of the session's backend; an engine says which backends it
serves (``supports(backend)``). Every collective takes a ``name`` (what the
user would recognise: the graph node and its line), which an engine uses in
its messages about a rank that never arrives.
"""

from __future__ import annotations


class Engine:
    """A communicator over the ``size`` processes of a job; this process is ``rank``."""

    name = "engine"

    def __init__(self, rank: int, size: int, local_rank: int, local_size: int):
        self.rank = rank
        self.size = size
        self.local_rank = local_rank
        self.local_size = local_size

    def supports(self, backend) -> bool:
        """Whether this engine can move the arrays of ``backend`` (a gradflow Backend)."""
        return True

    def allreduce_(self, buffer, name: str = "") -> None:
        """Replace the 1-D array ``buffer`` by its elementwise sum over all ranks."""
        raise NotImplementedError

    def broadcast_(self, buffer, root: int, name: str = "") -> None:
        """Replace the 1-D array ``buffer`` by the one of rank ``root``."""
        raise NotImplementedError

    def allgather(self, array, backend, name: str = ""):
        """The ``array`` of every rank, in rank order, concatenated along axis 0."""
        raise NotImplementedError

    def barrier(self, name: str = "") -> None:
        """Return once every rank has called ``barrier``."""
        raise NotImplementedError

    def broadcast_object(self, obj, root: int = 0, name: str = ""):
        """Rank ``root``'s ``obj`` (any picklable object), on every rank."""
        raise NotImplementedError

    def allgather_object(self, obj, name: str = "") -> list:
        """``[obj of rank 0, obj of rank 1, ...]`` on every rank."""
        raise NotImplementedError

    def abort(self, code: int = 1) -> None:
        """End every process of the job at once with exit status ``code``."""
        raise SystemExit(code)

    def __repr__(self) -> str:
        return f"<gradflow {self.name} engine: rank {self.rank} of {self.size}>"


class LocalEngine(Engine):
    """The engine of a job of one process: every collective is the identity."""

    name = "local"

    def __init__(self):
        super().__init__(0, 1, 0, 1)

    def allreduce_(self, buffer, name: str = "") -> None:
        pass

    def broadcast_(self, buffer, root: int, name: str = "") -> None:
        _check_root(root, 1)

    def allgather(self, array, backend, name: str = ""):
        return backend.copy(array)

    def barrier(self, name: str = "") -> None:
        pass

    def broadcast_object(self, obj, root: int = 0, name: str = ""):
        _check_root(root, 1)
        return obj

    def allgather_object(self, obj, name: str = "") -> list:
        return [obj]


def _check_root(root, size):
    if not 0 <= int(root) < size:
        raise ValueError(f"root_rank {root} is not a rank of this job (ranks 0 to {size - 1})")
