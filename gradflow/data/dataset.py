"""``gf.data.Dataset``: TF1's input pipelines, built in the graph and run on the host.

A Dataset describes a pipeline (immutable; every transformation returns a new
one); an iterator made from it gives graph tensors whose values each
``Session.run`` takes from the iterator's state in that Session. Each Dataset
yields elements as flat tuples of host arrays (``_iterate(run)``), and batches
of them (``_batches``), which sources and ``map`` may produce faster than by
stacking elements.

The sources, transformations and iterators subclass ``Dataset`` (or check for one),
so their modules import this one; its methods build them by name from ``_STAGES``,
where each registers itself (``@stage``), instead of importing them back.
"""

from __future__ import annotations

import numpy as np

from gradflow.data import structure
from gradflow.data.options import Options
from gradflow.errors import InvalidArgumentError

INFINITE, UNKNOWN = -1, -2  # TF's INFINITE_CARDINALITY and UNKNOWN_CARDINALITY
_STAGES: dict = {}  # class name -> a source, transformation or iterator class (``stage``)


def stage(cls):
    """Register ``cls`` for ``Dataset``'s methods to build by its name."""
    _STAGES[cls.__name__] = cls
    return cls


class Dataset(structure.Elements):
    """A sequence of elements, each a nested tuple/dict of tensors (TF1 ``tf.data.Dataset``).

    >>> ds = gf.data.Dataset.from_tensor_slices((x_train, y_train))
    >>> ds = ds.shuffle(10000, seed=0).batch(128).repeat()
    >>> images, labels = ds.make_one_shot_iterator().get_next()
    """

    def __init__(self, template, types, shapes, inputs=()):
        self._template = template
        self._types = list(types)
        self._shapes = list(shapes)
        self._inputs = tuple(inputs)

    def __repr__(self):
        parts = ", ".join(f"{structure.format_shape(s)} {t.name}"
                          for s, t in zip(self._shapes, self._types))
        return f"<{type(self).__name__} ({parts})>"

    def __iter__(self):
        raise TypeError("a gf.data.Dataset is iterated in a Session, as in TF1 graph mode: "
                        "make an iterator (ds.make_one_shot_iterator(), "
                        "ds.make_initializable_iterator()) and sess.run its get_next()")

    # -- running on the host -------------------------------------------------------
    def _own_captures(self):
        """The graph tensors this stage reads (their values come at initialization)."""
        return ()

    def _captures(self):
        """Every graph tensor the pipeline reads, each once, in a stable order."""
        seen = {}
        for ds in self._inputs:
            seen.update(dict.fromkeys(ds._captures()))
        seen.update(dict.fromkeys(self._own_captures()))
        return list(seen)

    def _iterate(self, run):
        """Yield the elements, flat tuples of host arrays (one pass)."""
        raise NotImplementedError

    def _cardinality(self, run):
        """The number of elements, ``INFINITE`` or ``UNKNOWN`` (TF1's rules: a stage
        that does not know says ``UNKNOWN``); ``run`` holds the captured values."""
        return UNKNOWN

    def _delivered(self, run):
        """The elements as ``get_next`` hands them to the plan (``run.deliver``)."""
        for element in self._iterate(run):
            yield run.deliver(element)

    def _batches(self, run, size, drop_remainder):
        """Yield the elements ``size`` at a time, stacked."""
        group = []
        for element in self._iterate(run):
            group.append(element)
            if len(group) == size:
                yield stack(group)
                group = []
        if group and not drop_remainder:
            yield stack(group)

    # -- sources -----------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors):
        """The slices of ``tensors`` (arrays, tensors, or a tuple/dict of them) along
        their first axis, one element each.

        >>> ds = gf.data.Dataset.from_tensor_slices({"x": x_train, "y": y_train})
        """
        return _STAGES["TensorSlices"](tensors)

    @staticmethod
    def from_tensors(tensors):
        """One element: ``tensors`` (arrays, tensors, or a tuple/dict of them)."""
        return _STAGES["Tensors"](tensors)

    @staticmethod
    def from_generator(generator, output_types, output_shapes=None, args=None):
        """The elements a Python generator yields; ``generator(*args)`` is called at the
        start of each pass. ``output_types`` (and ``output_shapes``) give the structure.

        >>> ds = gf.data.Dataset.from_generator(lambda: iter(range(5)), gf.int64, ())
        """
        return _STAGES["Generator"](generator, output_types, output_shapes, args)

    @staticmethod
    def range(*args, output_type=None):
        """``start, stop, step`` as Python's ``range``, as int64 scalars (TF1)."""
        return _STAGES["Range"](args, output_type)

    @staticmethod
    def zip(datasets):
        """Elements of several data sets side by side: ``datasets`` is a tuple (or a
        nested tuple/dict) of data sets; it ends with the shortest."""
        return _STAGES["Zip"](datasets)

    def concatenate(self, dataset):
        """The elements of this data set, then those of ``dataset``."""
        return _STAGES["Concatenate"](self, dataset)

    # -- transformations ------------------------------------------------------------
    def map(self, map_func, num_parallel_calls=None):
        """``map_func`` applied to each element (traced once as a graph; see
        ``gradflow.data.functions``). A tuple element is passed as arguments.

        >>> ds = ds.map(lambda x, y: (gf.cast(x, gf.float32) / 255.0, y))
        """
        return _STAGES["Map"](self, map_func)

    def filter(self, predicate):
        """The elements for which ``predicate`` (traced as ``map``'s function) is true."""
        return _STAGES["Filter"](self, predicate)

    def flat_map(self, map_func):
        """The elements of the data set ``map_func`` returns for each element, one data
        set after another (``map_func`` is traced as ``map``'s).

        >>> ds = gf.data.Dataset.from_tensor_slices(files).flat_map(gf.data.TextLineDataset)
        """
        return _STAGES["FlatMap"](self, map_func)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None):
        """The elements of the data sets ``map_func`` returns for each element, taken
        ``block_length`` (default 1) at a time from ``cycle_length`` of them in turn
        (TF's deterministic order; ``None``: the number of CPU cores, as TF's AUTOTUNE).

        >>> ds = files.interleave(gf.data.TFRecordDataset, cycle_length=4, block_length=16)
        """
        return _STAGES["Interleave"](self, map_func, cycle_length, block_length)

    def batch(self, batch_size, drop_remainder=False):
        """Elements stacked ``batch_size`` at a time; the last batch is smaller unless
        ``drop_remainder``."""
        return _STAGES["Batch"](self, batch_size, drop_remainder)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        """Like ``batch`` for elements of different shapes: each component is padded to
        ``padded_shapes`` (``None``/-1 dimensions: to the longest in the batch) with
        ``padding_values`` (default 0, or ``b""`` for strings)."""
        return _STAGES["PaddedBatch"](self, batch_size, padded_shapes, padding_values,
                                      drop_remainder)

    def unbatch(self):
        """The rows of each element as elements of their own: the inverse of ``batch``
        (every component's first axis is split; they must agree in length).

        >>> ds = gf.data.Dataset.from_tensors(([1, 2, 3], [4, 5, 6])).unbatch()  # 3 rows
        """
        return _STAGES["Unbatch"](self)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        """Elements in random order, drawn from a buffer of ``buffer_size`` (TF1's
        algorithm: ``buffer_size`` >= the data set's size gives a uniform shuffle)."""
        return _STAGES["Shuffle"](self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count=None):
        """The data set ``count`` times over (``None`` or -1: forever)."""
        return _STAGES["Repeat"](self, count)

    def take(self, count):
        """The first ``count`` elements (-1: all)."""
        return _STAGES["Take"](self, count)

    def skip(self, count):
        """All but the first ``count`` elements (-1: none)."""
        return _STAGES["Skip"](self, count)

    def prefetch(self, buffer_size):
        """The same elements, produced ahead by a background thread into a buffer of
        ``buffer_size`` (``gf.data.experimental.AUTOTUNE``: 2) while a step runs."""
        return _STAGES["Prefetch"](self, buffer_size)

    def cache(self, filename=""):
        """The same elements, kept after the first full pass (in memory, or in
        ``filename`` when given) and replayed by later passes."""
        return _STAGES["Cache"](self, filename)

    def with_options(self, options):
        """The same data set with ``options`` (a ``gf.data.Options``) set; see
        ``gradflow.data.options`` for what they change here (nothing in the elements)."""
        return _STAGES["WithOptions"](self, options)

    def options(self):
        """The ``gf.data.Options`` of this data set: those set upstream, merged with
        the later ``with_options`` ones (TF1)."""
        merged = Options()
        for ds in self._inputs:
            merged = merged.merge(ds.options())
        own = getattr(self, "_own_options", None)
        return merged if own is None else merged.merge(own)

    def apply(self, transformation_func):
        """``transformation_func(self)``, for chaining (TF1)."""
        result = transformation_func(self)
        if not isinstance(result, Dataset):
            raise TypeError(f"Dataset.apply: {transformation_func!r} must return a Dataset, "
                            f"got {type(result).__name__}")
        return result

    # -- iterators -----------------------------------------------------------------
    def make_one_shot_iterator(self):
        """An iterator that starts by itself at its first ``get_next`` in each Session."""
        return _STAGES["Iterator"]._one_shot(self)

    def make_initializable_iterator(self, shared_name=None):
        """An iterator that starts when its ``initializer`` runs (with the placeholders
        the data set reads fed then)."""
        return _STAGES["Iterator"]._initializable(self)


def stack(elements):
    """Stack a list of elements (flat tuples) component by component."""
    first = elements[0]
    out = []
    for k, component in enumerate(first):
        shape = np.shape(component)
        for i, element in enumerate(elements[1:], 1):
            if np.shape(element[k]) != shape:
                raise InvalidArgumentError(
                    f"Dataset.batch: cannot batch tensors with different shapes in component "
                    f"{k}: the first element had shape {list(shape)} and element {i} had "
                    f"shape {list(np.shape(element[k]))} (use padded_batch, or map them to "
                    "one shape first)")
        out.append(np.stack([e[k] for e in elements]))
    return tuple(out)
