"""TF1's ``tf.data.experimental``: ``AUTOTUNE``, the fused transformations tutorials
used (as the plain transformations they stand for), ``Counter``, ``enumerate_dataset``,
``take_while``, ``unique``, ``choose_from_datasets`` and ``sample_from_datasets``."""

from __future__ import annotations

from gradflow.data import selection
from gradflow.data.dataset import Dataset
from gradflow.data.prefetch import AUTOTUNE
from gradflow.data.selection import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from gradflow.dtypes import int64


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


def Counter(start=0, step=1, dtype=int64):  # noqa: N802 - TF1 name
    """The data set ``start``, ``start + step``, ... without end (TF1).

    >>> ds = gf.data.experimental.Counter().take(3)          # 0, 1, 2 (int64)
    """
    return selection.CounterDataset(start, step, dtype)


def enumerate_dataset(start=0):
    """``lambda ds: Dataset.zip((Counter(start), ds))``, for ``Dataset.apply``: each
    element paired with its number (int64)."""
    return lambda dataset: Dataset.zip((Counter(start), dataset))


def take_while(predicate):
    """For ``Dataset.apply``: the elements up to the first for which ``predicate``
    (traced as ``filter``'s) is false."""
    return lambda dataset: selection.TakeWhile(dataset, predicate)


def unique():
    """For ``Dataset.apply``: each element (an integer or string scalar) once, the first
    time it comes."""
    return lambda dataset: selection.Unique(dataset)


def choose_from_datasets(datasets, choice_dataset, stop_on_empty_dataset=False):
    """The next element of ``datasets[i]`` for each int64 ``i`` of ``choice_dataset``
    (TF1); a data set that has ended is skipped.

    >>> ds = gf.data.experimental.choose_from_datasets([a, b], choices)
    """
    if stop_on_empty_dataset:
        raise NotImplementedError("choose_from_datasets: stop_on_empty_dataset=True is not "
                                  "supported")
    return selection.ChooseFromDatasets(datasets, choice_dataset)


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    """Elements drawn from ``datasets`` at random, each data set with probability
    proportional to its weight (uniform by default), until all have ended (TF1). The
    draws are gradflow's (seeded as ``shuffle``), not TensorFlow's sequence."""
    if stop_on_empty_dataset:
        raise NotImplementedError("sample_from_datasets: stop_on_empty_dataset=True is not "
                                  "supported")
    if weights is not None and not isinstance(weights, (list, tuple)):
        raise NotImplementedError("sample_from_datasets: weights must be a list of numbers "
                                  "(a tensor or a data set of weights is not supported)")
    return selection.SampleFromDatasets(datasets, weights, seed)


__all__ = ["AUTOTUNE", "Counter", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "choose_from_datasets", "enumerate_dataset", "map_and_batch", "sample_from_datasets",
           "shuffle_and_repeat", "take_while", "unbatch", "unique"]
