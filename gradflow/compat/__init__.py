"""TF1's ``tf.compat``: ``tf.compat.v1`` (all of gradflow, as
``import tensorflow.compat.v1 as tf`` gives all of TF1) and the byte/text helpers.

>>> import gradflow.compat.v1 as tf
>>> tf.disable_v2_behavior()  # a no-op: gradflow is TF1 graph mode already
"""

from __future__ import annotations

import contextlib
import datetime
import numbers
import os

import numpy as np

from gradflow.graph import Dimension

# TF1's type tuples, for isinstance checks of Python and NumPy values
bytes_or_text_types = (bytes, str)
integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)


def as_bytes(bytes_or_text, encoding="utf-8"):
    """``bytes_or_text`` as bytes: text is encoded with ``encoding``."""
    if isinstance(bytes_or_text, (bytes, bytearray)):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    raise TypeError(f"as_bytes: expected bytes or str, got {type(bytes_or_text).__name__} "
                    f"{bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    """``bytes_or_text`` as str: bytes are decoded with ``encoding``."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, (bytes, bytearray)):
        return bytes(bytes_or_text).decode(encoding)
    raise TypeError(f"as_text: expected bytes or str, got {type(bytes_or_text).__name__} "
                    f"{bytes_or_text!r}")


as_str = as_text


def as_str_any(value):
    """``str(value)``, decoding bytes as UTF-8."""
    return as_text(value) if isinstance(value, (bytes, bytearray)) else str(value)


def path_to_str(path):
    """A path-like object as a str (other values unchanged)."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path


def dimension_value(dimension):
    """The size of one dimension of a static shape as an ``int``, or ``None`` when it is
    unknown (TF1 ``tf.compat.dimension_value``: ``x.shape[0]`` may be either).

    >>> gf.compat.dimension_value(gf.placeholder(gf.float32, (None, 3)).shape[1])
    3
    """
    if isinstance(dimension, Dimension):
        return int(dimension)
    return dimension


def dimension_at_index(shape, index):
    """``shape[index]`` (a ``Dimension``, or ``None`` when unknown), and ``None`` for any
    index of a shape of unknown rank (TF1 ``tf.compat.dimension_at_index``, whose unknown
    dimension is ``Dimension(None)``: gradflow's is ``None``)."""
    if shape is None or getattr(shape, "ndims", 0) is None:
        return None
    return shape[index]


# TensorFlow 2.21's forward-compatibility horizon: the date whose graph features a
# consumer may be assumed to understand. ``forward_compatible`` compares against it.
_HORIZON = datetime.date(2026, 1, 16)
_DELTA_DAYS_VAR = "TF_FORWARD_COMPATIBILITY_DELTA_DAYS"


def _date_number(year, month, day) -> int:
    return (year << 9) | (month << 5) | day


def _horizon_number(date=None) -> int:
    if date is None:
        date = _HORIZON
        delta = os.getenv(_DELTA_DAYS_VAR)
        if delta:
            date += datetime.timedelta(days=int(delta))
    date = max(date, _HORIZON)  # a date before the horizon is ignored, as in TF1
    return _date_number(date.year, date.month, date.day)


_horizon = [_horizon_number()]


def forward_compatible(year, month, day) -> bool:
    """Whether the forward-compatibility horizon is past ``year-month-day`` (TF1
    ``tf.compat.forward_compatible``): TensorFlow 2.21's horizon, 2026-01-16, moved by
    ``TF_FORWARD_COMPATIBILITY_DELTA_DAYS`` or ``forward_compatibility_horizon``."""
    return _horizon[0] > _date_number(year, month, day)


@contextlib.contextmanager
def forward_compatibility_horizon(year, month, day):
    """Within the block, the horizon is ``year-month-day`` (TF1
    ``tf.compat.forward_compatibility_horizon``, for tests of code that checks
    ``forward_compatible``); a date before TF 2.21's horizon is ignored."""
    before = _horizon[0]
    _horizon[0] = _horizon_number(datetime.date(year, month, day))
    try:
        yield
    finally:
        _horizon[0] = before


from gradflow.compat import v1  # noqa: E402 - after the helpers, which v1 does not need

__all__ = ["as_bytes", "as_str", "as_str_any", "as_text", "bytes_or_text_types",
           "complex_types", "dimension_at_index", "dimension_value",
           "forward_compatibility_horizon", "forward_compatible", "integral_types", "path_to_str",
           "real_types", "v1"]
