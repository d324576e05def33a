"""TF1's ``tf.estimator.inputs``: ``input_fn``s over NumPy arrays, built on ``gf.data``."""

from __future__ import annotations

import numpy as np

__all__ = ["numpy_input_fn"]


def numpy_input_fn(x, y=None, batch_size=128, num_epochs=1, shuffle=None,
                   queue_capacity=1000, num_threads=1):
    """An ``input_fn`` giving batches of ``x`` (an array, or a dict of arrays: the
    features) and ``y`` (the labels, if given): ``num_epochs`` passes (``None``: no end)
    in order, or shuffled when ``shuffle`` is True (uniformly: the whole data set is the
    buffer; the graph seed decides the order). The last batch of a pass may be smaller.
    ``queue_capacity`` and ``num_threads`` are accepted (it reads through ``gf.data``)."""
    if not isinstance(shuffle, bool):
        raise ValueError(f"numpy_input_fn: shuffle must be given as True or False, got "
                         f"{shuffle!r}")
    if batch_size <= 0 or (num_epochs is not None and num_epochs <= 0):
        raise ValueError(f"numpy_input_fn: batch_size ({batch_size}) and num_epochs "
                         f"({num_epochs}) must be positive")
    features = {k: np.asarray(v) for k, v in x.items()} if isinstance(x, dict) else np.asarray(x)
    labels = None if y is None else (
        {k: np.asarray(v) for k, v in y.items()} if isinstance(y, dict) else np.asarray(y))
    lengths = {name: len(a) for name, a in _named(features, "x").items()}
    if labels is not None:
        lengths.update({name: len(a) for name, a in _named(labels, "y").items()})
    if len(set(lengths.values())) > 1:
        raise ValueError(f"numpy_input_fn: the arrays have different lengths: {lengths}")
    size = next(iter(lengths.values()))

    def input_fn():
        from gradflow.data import Dataset

        data = Dataset.from_tensor_slices(features if labels is None else (features, labels))
        if shuffle:
            data = data.shuffle(max(size, 1))
        return data.repeat(num_epochs).batch(batch_size).make_one_shot_iterator().get_next()

    return input_fn


def _named(arrays, what):
    return {f"{what}[{k!r}]": v for k, v in arrays.items()} if isinstance(arrays, dict) \
        else {what: arrays}
