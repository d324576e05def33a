"""Exceptions gradflow raises, named after TensorFlow 1.x's where it has one, with TF1's
error codes (``OK`` ... ``UNAUTHENTICATED``) and the functions between codes and classes.
"""

import warnings

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class GradflowError(Exception):
    """Base class of gradflow's own errors (TF1's ``tf.errors.OpError``).

    Made with a message, ``Error("...")``, or as TF1 makes them,
    ``Error(node_def, op, message)`` (``OpError(node_def, op, message, error_code)``
    for the base class); ``message``, ``op``, ``node_def`` and ``error_code`` answer
    as in TF1.
    """

    error_code = UNKNOWN

    def __init__(self, *args):
        super().__init__(*args)
        self.node_def, self.op = (args[0], args[1]) if len(args) >= 3 else (None, None)
        self.message = str(args[2] if len(args) >= 3 else args[0] if args else "")
        if type(self) is GradflowError and len(args) >= 4 and args[3] is not None:
            self.error_code = int(args[3])

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


class DeadlineExceededError(GradflowError, TimeoutError):
    """An operation ran past its deadline (TF1's ``DeadlineExceededError``)."""

    error_code = DEADLINE_EXCEEDED


class AbortedError(GradflowError):
    """An operation was aborted, typically by a concurrent action (TF1's
    ``AbortedError``)."""

    error_code = ABORTED


class InternalError(GradflowError, RuntimeError):
    """An invariant of the runtime was broken (TF1's ``InternalError``)."""

    error_code = INTERNAL


class UnavailableError(GradflowError, ConnectionError):
    """A service (a remote worker, say) cannot be reached now (TF1's
    ``UnavailableError``)."""

    error_code = UNAVAILABLE


class UnauthenticatedError(GradflowError, PermissionError):
    """The request has no valid credentials (TF1's ``UnauthenticatedError``)."""

    error_code = UNAUTHENTICATED


_CODE_TO_CLASS = {
    CANCELLED: CancelledError, UNKNOWN: UnknownError, INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError, NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError, PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError, FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError, OUT_OF_RANGE: OutOfRangeError, UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError, UNAVAILABLE: UnavailableError, DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}


def exception_type_from_error_code(error_code):
    """The exception class of a TF1 error code (``3`` is ``InvalidArgumentError``); a
    ``KeyError`` for ``OK`` or a code TF1 does not have, as in TF1."""
    return _CODE_TO_CLASS[error_code]


def error_code_from_exception_type(cls):
    """The TF1 error code of an exception class (``OutOfRangeError`` is ``11``).

    gradflow's own subclasses of ``OpError`` give their class's code. For any other
    class TF1 warns and returns an ``UnknownError`` instance; so does this.
    """
    for code, known in _CODE_TO_CLASS.items():
        if cls is known:
            return code
    if isinstance(cls, type) and issubclass(cls, GradflowError):
        return cls.error_code
    warnings.warn("Unknown class exception", stacklevel=2)
    return UnknownError(None, None, "Unknown class exception", None)


class Status:
    """The status a ``raise_exception_on_not_ok_status`` block fills in: ``code`` (TF1's
    error code, ``OK`` at first) and ``message``."""

    def __init__(self):
        self.code, self.message = OK, ""

    def set(self, code, message=""):
        """Record a failure (or ``OK``) with its message."""
        self.code, self.message = int(code), str(message)


class raise_exception_on_not_ok_status:  # noqa: N801 - TF1's name
    """A context manager giving a ``Status`` to fill in; when the block ends with the
    status not ``OK``, it raises the exception class of the status's code with its
    message (TF1's check of a C-API status; gradflow has no C API, so the code of the
    block sets the status itself)::

        with gf.errors.raise_exception_on_not_ok_status() as status:
            status.set(gf.errors.NOT_FOUND, "no such file")   # raises NotFoundError
    """

    def __enter__(self):
        self.status = Status()
        return self.status

    def __exit__(self, exc_type, exc, tb):
        status, self.status = self.status, None
        if exc_type is None and status.code != OK:
            cls = _CODE_TO_CLASS.get(status.code, UnknownError)
            raise cls(None, None, status.message)
        return False
