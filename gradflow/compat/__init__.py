"""TF1's ``tf.compat``: ``tf.compat.v1`` (all of gradflow, as
``import tensorflow.compat.v1 as tf`` gives all of TF1) and the byte/text helpers.

>>> import gradflow.compat.v1 as tf
>>> tf.disable_v2_behavior()  # a no-op: gradflow is TF1 graph mode already
"""

from __future__ import annotations

import os


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


from gradflow.compat import v1  # noqa: E402 - after the helpers, which v1 does not need

__all__ = ["as_bytes", "as_str", "as_str_any", "as_text", "path_to_str", "v1"]
