"""TF1's ``tf.logging`` on Python's ``logging``: the ``gradflow`` logger.

>>> gf.logging.set_verbosity(gf.logging.INFO)
>>> gf.logging.info("step %d: loss %.3f", step, loss)
INFO:gradflow:step 100: loss 0.412

As in TF1 the default verbosity is ``WARN``, and the logger prints to stderr
itself only when the root logger has no handlers (otherwise its records go to
the root's handlers, and ``logging.basicConfig`` or pytest's capture see them).
"""

from __future__ import annotations

import logging as _logging
import sys as _sys
import threading as _threading

DEBUG = _logging.DEBUG
INFO = _logging.INFO
WARN = _logging.WARN
WARNING = _logging.WARNING
ERROR = _logging.ERROR
FATAL = _logging.FATAL

__all__ = ["DEBUG", "ERROR", "FATAL", "INFO", "TaskLevelStatusMessage", "WARN", "debug",
           "error", "fatal", "flush", "get_logger", "get_verbosity", "info", "log", "log_every_n",
           "log_first_n", "log_if", "set_verbosity", "vlog", "warn", "warning"]

_lock = _threading.Lock()
_logger = None
_counts: dict = {}


class _StderrHandler(_logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record."""

    def __init__(self):
        super().__init__(_sys.stderr)

    @property
    def stream(self):
        return _sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def get_logger() -> _logging.Logger:
    """The ``gradflow`` logger (given a stderr handler on first use if nothing else
    would print its records)."""
    global _logger
    if _logger is not None:
        return _logger
    with _lock:
        if _logger is None:
            logger = _logging.getLogger("gradflow")
            if not _logging.getLogger().handlers and not logger.handlers:
                handler = _StderrHandler()
                handler.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT))
                logger.addHandler(handler)
            _logger = logger
    return _logger


def log(level, msg, *args, **kwargs):
    get_logger().log(level, msg, *args, **kwargs)


def debug(msg, *args, **kwargs):
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    get_logger().warning(msg, *args, **kwargs)


warn = warning


def error(msg, *args, **kwargs):
    get_logger().error(msg, *args, **kwargs)


def TaskLevelStatusMessage(msg):  # noqa: N802 - TF1's name
    """Log ``msg`` at ``ERROR`` level, as TF1's ``tf.logging.TaskLevelStatusMessage`` does.

    >>> gf.logging.TaskLevelStatusMessage("task 3 of 8 done")
    ERROR:gradflow:task 3 of 8 done
    """
    error(msg)


def fatal(msg, *args, **kwargs):
    """Log at ``FATAL`` (TF1's ``tf.logging.fatal`` logs; it does not exit)."""
    get_logger().log(FATAL, msg, *args, **kwargs)


def vlog(level, msg, *args, **kwargs):
    get_logger().log(level, msg, *args, **kwargs)


def log_if(level, msg, condition, *args):
    """Log only when ``condition`` holds."""
    if condition:
        log(level, msg, *args)


def _count_here(depth=2):
    frame = _sys._getframe(depth)
    key = (frame.f_code.co_filename, frame.f_lineno)
    with _lock:
        count = _counts.get(key, 0)
        _counts[key] = count + 1
    return count


def log_every_n(level, msg, n, *args):
    """Log the 1st, (n+1)th, (2n+1)th... time this line runs."""
    if _count_here() % max(int(n), 1) == 0:
        log(level, msg, *args)


def log_first_n(level, msg, n, *args):
    """Log only the first ``n`` times this line runs."""
    if _count_here() < n:
        log(level, msg, *args)


def flush():
    for handler in get_logger().handlers:
        handler.flush()


def get_verbosity() -> int:
    """The level below which records are dropped (``WARN`` unless set)."""
    return get_logger().getEffectiveLevel()


def set_verbosity(v) -> None:
    """Drop records below ``v`` (``DEBUG``, ``INFO``, ``WARN``, ``ERROR``, ``FATAL``)."""
    get_logger().setLevel(v)
