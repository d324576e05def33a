"""``tensorflow.python.platform``: its ``gfile`` (``gradflow.gfile``)."""

from gradflow import gfile

__all__ = ["gfile"]
