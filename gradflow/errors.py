"""Exceptions gradflow raises, named after TensorFlow 1.x's where it has one."""


class GradflowError(Exception):
    """Base class of gradflow's own errors (TF1's ``tf.errors.OpError``).

    Made with a message, ``Error("...")``, or as TF1 makes them,
    ``Error(node_def, op, message)``; ``message``, ``op``, ``node_def`` and
    ``error_code`` answer as in TF1.
    """

    error_code = 2  # TF1's UNKNOWN

    def __init__(self, *args):
        super().__init__(*args)
        self.node_def, self.op = (args[0], args[1]) if len(args) >= 3 else (None, None)
        self.message = str(args[2] if len(args) >= 3 else args[0] if args else "")

    def __str__(self) -> str:
        return self.message


OpError = GradflowError


class UnknownError(GradflowError):
    """An error of no other kind (TF1's ``UnknownError``)."""


class InvalidArgumentError(GradflowError, ValueError):
    """A value given to a run (a feed, an array shape met at run time) is wrong."""

    error_code = 3


class FailedPreconditionError(GradflowError, RuntimeError):
    """The session is not in a state to do what was asked (closed, for instance)."""

    error_code = 9


class BackendUnavailableError(GradflowError, RuntimeError):
    """The array backend asked for cannot run on this machine."""


class OutOfRangeError(GradflowError, IndexError):
    """An iteration ran past its end (TF1's signal that an input is exhausted)."""

    error_code = 11


class CancelledError(GradflowError):
    """An operation was cancelled (a queue's waiting enqueue, when the queue or its
    Session closes)."""

    error_code = 1


class NotFoundError(GradflowError, LookupError):
    """Something asked for (a file, a checkpoint, a name) does not exist."""

    error_code = 5


class ResourceExhaustedError(GradflowError, MemoryError):
    """A run needs more memory than there is (TF1's out-of-memory error)."""

    error_code = 8


class UnimplementedError(GradflowError, NotImplementedError):
    """The operation is not supported."""

    error_code = 12


class AlreadyExistsError(GradflowError, FileExistsError):
    """Something to be created (a file, a folder) exists already."""

    error_code = 6


class PermissionDeniedError(GradflowError, PermissionError):
    """The operating system refused access (a file, a folder)."""

    error_code = 7


class DataLossError(GradflowError, IOError):
    """A file's contents are damaged (a record fails its checksum, or is cut short)."""

    error_code = 15
