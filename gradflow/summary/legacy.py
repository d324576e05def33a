"""The summary functions under their names before TF 1.0 (``tf.scalar_summary``,
``tf.histogram_summary``, ``tf.image_summary``, ``tf.merge_summary``,
``tf.merge_all_summaries``, ``tf.train.SummaryWriter``), which 2016 tutorials call;
each is the ``tf.summary`` function it became, with the old argument names."""

from __future__ import annotations

from gradflow.summary.summary_ops import histogram, image, merge, merge_all, scalar
from gradflow.summary.writer import FileWriter

__all__ = ["SummaryWriter", "histogram_summary", "image_summary", "merge_all_summaries",
           "merge_summary", "scalar_summary"]


def scalar_summary(tags, values, collections=None, name=None):
    """``summary.scalar(tags, values)`` (one tag)."""
    return scalar(tags, values, collections=collections)


def histogram_summary(tag, values, collections=None, name=None):
    """``summary.histogram(tag, values)``."""
    return histogram(tag, values, collections=collections)


def image_summary(tag, tensor, max_images=3, collections=None, name=None):
    """``summary.image(tag, tensor, max_outputs=max_images)``."""
    return image(tag, tensor, max_outputs=max_images, collections=collections)


def merge_summary(inputs, collections=None, name=None):
    """``summary.merge(inputs)``."""
    return merge(inputs, collections=collections, name=name)


def merge_all_summaries(key=None, name=None):
    """``summary.merge_all()``."""
    return merge_all(name=name) if key is None else merge_all(key, name=name)


SummaryWriter = FileWriter
