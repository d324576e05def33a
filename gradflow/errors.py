"""Exceptions gradflow raises, named after TensorFlow 1.x's where it has one."""


class GradflowError(Exception):
    """Base class of gradflow's own errors."""


class InvalidArgumentError(GradflowError, ValueError):
    """A value given to a run (a feed, an array shape met at run time) is wrong."""


class FailedPreconditionError(GradflowError, RuntimeError):
    """The session is not in a state to do what was asked (closed, for instance)."""


class BackendUnavailableError(GradflowError, RuntimeError):
    """The array backend asked for cannot run on this machine."""


class OutOfRangeError(GradflowError, IndexError):
    """An iteration ran past its end (TF1's signal that an input is exhausted)."""


class CancelledError(GradflowError):
    """An operation was cancelled (a queue's waiting enqueue, when the queue or its
    Session closes)."""


class NotFoundError(GradflowError, LookupError):
    """Something asked for (a file, a checkpoint, a name) does not exist."""


class ResourceExhaustedError(GradflowError, MemoryError):
    """A run needs more memory than there is (TF1's out-of-memory error)."""


class UnimplementedError(GradflowError, NotImplementedError):
    """The operation is not supported."""


class AlreadyExistsError(GradflowError, FileExistsError):
    """Something to be created (a file, a folder) exists already."""


class PermissionDeniedError(GradflowError, PermissionError):
    """The operating system refused access (a file, a folder)."""


class DataLossError(GradflowError, IOError):
    """A file's contents are damaged (a record fails its checksum, or is cut short)."""
