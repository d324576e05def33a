"""TF1's ``tf.data.experimental``: ``AUTOTUNE`` and the fused transformations tutorials
used, as the plain transformations they stand for."""

from __future__ import annotations

from gradflow.data.prefetch import AUTOTUNE


def shuffle_and_repeat(buffer_size, count=None, seed=None):
    """``lambda ds: ds.shuffle(buffer_size, seed).repeat(count)``, for ``Dataset.apply``."""
    return lambda dataset: dataset.shuffle(buffer_size, seed=seed).repeat(count)


def map_and_batch(map_func, batch_size, num_parallel_batches=None, drop_remainder=False,
                  num_parallel_calls=None):
    """``lambda ds: ds.map(map_func).batch(batch_size, drop_remainder)``, for ``apply``."""
    return lambda dataset: dataset.map(map_func).batch(batch_size, drop_remainder)


def unbatch():
    """``lambda ds: ds.unbatch()``, for ``Dataset.apply`` (TF1.13's form)."""
    return lambda dataset: dataset.unbatch()


__all__ = ["AUTOTUNE", "map_and_batch", "shuffle_and_repeat", "unbatch"]
