"""``tensorflow.python.client``: its ``timeline`` (``gradflow.timeline``)."""

from gradflow import timeline

__all__ = ["timeline"]
