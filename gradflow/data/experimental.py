"""TF1's ``tf.data.experimental``: ``AUTOTUNE``, the fused transformations tutorials
used (as the plain transformations they stand for), ``Counter``, ``enumerate_dataset``,
``take_while``, ``unique``, ``choose_from_datasets`` and ``sample_from_datasets``."""

from __future__ import annotations

import numpy as np

from gradflow.data import grouping, selection, structure
from gradflow.data.dataset import Dataset
from gradflow.data.evaluate import TFRecordWriter, cardinality, get_single_element
from gradflow.data.grouping import Reducer
from gradflow.data.nested import parallel_interleave
from gradflow.data.options import (
    AutoShardPolicy,
    AutotuneAlgorithm,
    AutotuneOptions,
    DistributeOptions,
    ExternalStatePolicy,
    OptimizationOptions,
    ThreadingOptions,
)
from gradflow.data.prefetch import AUTOTUNE
from gradflow.data.selection import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from gradflow.dtypes import int64
from gradflow.ops.array_ops import reduce_sum
from gradflow.ops.index_ops import gather
from gradflow.ops.math_ops import cast, greater_equal
from gradflow.prim.registry import constant


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


def scan(initial_state, scan_func):
    """For ``Dataset.apply``: ``scan_func(state, element)`` returns ``(new_state,
    output)`` for each element, from ``initial_state`` (TF1).

    >>> running = ds.apply(gf.data.experimental.scan(0, lambda s, x: (s + x, s + x)))
    """
    return lambda dataset: grouping.Scan(dataset, initial_state, scan_func)


def group_by_window(key_func, reduce_func, window_size=None, window_size_func=None):
    """For ``Dataset.apply``: the elements grouped by ``key_func`` (an int64 scalar);
    each group's window of ``window_size`` (or ``window_size_func(key)``) elements is
    given, as a data set, to ``reduce_func(key, window)``, whose data set's elements
    come out. At the end, the unfinished windows go through it by increasing key."""
    return lambda dataset: grouping.GroupByWindow(dataset, key_func, reduce_func,
                                                  window_size, window_size_func)


def group_by_reducer(key_func, reducer):
    """For ``Dataset.apply``: one element per key of ``key_func``, made by ``reducer``
    (a ``Reducer``) from the group's elements, by increasing key at the end."""
    return lambda dataset: grouping.GroupByReducer(dataset, key_func, reducer)


def assert_cardinality(expected_cardinality):
    """For ``Dataset.apply``: the same elements; a run that finds more or fewer than
    ``expected_cardinality`` fails with ``FailedPreconditionError``, and
    ``cardinality`` gives it."""
    return lambda dataset: grouping.AssertCardinality(dataset, expected_cardinality)


def bucket_by_sequence_length(element_length_func, bucket_boundaries, bucket_batch_sizes,
                              padded_shapes=None, padding_values=None,
                              pad_to_bucket_boundary=False, no_padding=False,
                              drop_remainder=False):
    """For ``Dataset.apply``: elements batched with others whose length (an int32 or
    int64 scalar, ``element_length_func(element)``) falls in the same bucket of
    ``bucket_boundaries``, ``bucket_batch_sizes[bucket]`` at a time, padded as
    ``padded_batch`` pads (``group_by_window`` underneath, as in TF)."""
    boundaries = [int(b) for b in bucket_boundaries]
    sizes = [int(b) for b in bucket_batch_sizes]
    if len(sizes) != len(boundaries) + 1:
        raise ValueError("bucket_by_sequence_length: len(bucket_batch_sizes) must equal "
                         "len(bucket_boundaries) + 1")
    if pad_to_bucket_boundary:
        raise NotImplementedError("bucket_by_sequence_length: pad_to_bucket_boundary=True "
                                  "is not supported")

    def key_func(*element):
        length = element_length_func(*element)
        above = greater_equal(cast(length, int64), constant(boundaries, dtype=int64))
        return reduce_sum(cast(above, int64))

    def batch_size(key):
        return gather(constant(sizes, dtype=int64), key)

    def batching(key, window):
        size = batch_size(key)
        if no_padding:
            return window.batch(size, drop_remainder)
        return window.padded_batch(size, padded_shapes, padding_values, drop_remainder)

    return group_by_window(key_func, batching, window_size_func=batch_size)


def from_list(elements):
    """The data set of ``elements`` (a list of values of one structure), in order (TF's
    ``tf.data.experimental.from_list``).

    >>> ds = gf.data.experimental.from_list([(1, "a"), (2, "b")])
    """
    elements = list(elements)
    if not elements:
        raise ValueError("from_list: elements must not be empty")
    columns = list(zip(*[structure.flatten(e) for e in elements]))
    if any(len(structure.flatten(e)) != len(columns) for e in elements):
        raise ValueError("from_list: the elements do not all have the same structure")
    stacked = [np.stack([structure.host_array(v, what="from_list") for v in column])
               for column in columns]
    return Dataset.from_tensor_slices(structure.pack(elements[0], stacked))


def copy_to_device(target_device, source_device="/cpu:0"):
    """For ``Dataset.apply``: the same data set. TF copies it to ``target_device``'s
    memory; a gradflow Session runs on one device, where ``get_next`` already puts
    each element."""
    return lambda dataset: dataset


def prefetch_to_device(device, buffer_size=None):
    """For ``Dataset.apply``: ``prefetch(buffer_size)`` (TF: into ``device``'s memory;
    gradflow's last ``prefetch`` already moves each element onto the Session's
    device). ``None``: ``AUTOTUNE``."""
    return lambda dataset: dataset.prefetch(AUTOTUNE if buffer_size is None else buffer_size)


__all__ = ["AUTOTUNE", "Counter", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "choose_from_datasets", "enumerate_dataset", "map_and_batch", "sample_from_datasets",
           "shuffle_and_repeat", "take_while", "unbatch", "unique",
           "AutoShardPolicy", "AutotuneAlgorithm", "AutotuneOptions", "DistributeOptions",
           "ExternalStatePolicy", "OptimizationOptions", "Reducer", "TFRecordWriter",
           "ThreadingOptions", "assert_cardinality", "bucket_by_sequence_length",
           "cardinality", "copy_to_device", "from_list", "get_single_element",
           "group_by_reducer", "group_by_window", "parallel_interleave",
           "prefetch_to_device", "scan"]
