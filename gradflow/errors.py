"""Exceptions gradflow raises, named after TensorFlow 1.x's where it has one."""


class GradflowError(Exception):
    """Base class of gradflow's own errors."""


class InvalidArgumentError(GradflowError, ValueError):
    """A value given to a run (a feed, an array shape met at run time) is wrong."""


class FailedPreconditionError(GradflowError, RuntimeError):
    """The session is not in a state to do what was asked (closed, for instance)."""


class BackendUnavailableError(GradflowError, RuntimeError):
    """The array backend asked for cannot run on this machine."""
