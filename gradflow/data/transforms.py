"""The transformations of a Dataset: map, filter, batch, padded_batch, shuffle, repeat,
take, skip, cache, unbatch. (``prefetch`` is in ``gradflow.data.prefetch``.)"""

from __future__ import annotations

import os

import numpy as np

from gradflow import dtypes
from gradflow.data import cache_file, structure
from gradflow.data.dataset import INFINITE, Dataset, stack, stage
from gradflow.data.functions import TracedFunction, check_predicate
from gradflow.data.options import Options
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Tensor, TensorShape, get_default_graph
from gradflow.prim.registry import convert_to_tensor


def scalar_argument(value, what):
    """An integer argument: a Python int, or a scalar integer tensor (read when the
    iterator is initialized, as TF1 reads e.g. a batch-size placeholder)."""
    if hasattr(value, "_as_graph_tensor"):
        value = value._as_graph_tensor()
    if isinstance(value, Tensor):
        t = convert_to_tensor(value)
        if not t.dtype.is_integer or (t.shape is not None and len(t.shape) != 0):
            raise TypeError(f"{what} must be a scalar integer, got '{t.name}' "
                            f"({t.dtype.name} {structure.format_shape(t.shape)})")
        return t
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    return int(value)


class _Unary(Dataset):
    """A transformation of one data set."""

    def __init__(self, upstream, template=None, types=None, shapes=None):
        if not isinstance(upstream, Dataset):
            raise TypeError(f"expected a gf.data.Dataset, got {upstream!r}")
        super().__init__(upstream._template if template is None else template,
                         upstream._types if types is None else types,
                         upstream._shapes if shapes is None else shapes, inputs=(upstream,))
        self._upstream = upstream
        self._scalars = ()

    def _own_captures(self):
        return [s for s in self._scalars if isinstance(s, Tensor)]


class _Counted(_Unary):
    """A transformation with one integer argument, ``self._count``."""

    def __init__(self, upstream, count, what):
        super().__init__(upstream)
        self._count = scalar_argument(count, what)
        self._scalars = (self._count,)


@stage
class Map(_Unary):
    """``Dataset.map``."""

    def __init__(self, upstream, fn):
        traced = TracedFunction(fn, upstream._template, upstream._types, upstream._shapes,
                                "Dataset.map")
        super().__init__(upstream, traced.template, traced.types, traced.shapes)
        self._fn = traced

    def _own_captures(self):
        return self._fn.captures

    def _iterate(self, run):
        for element in self._upstream._iterate(run):
            yield self._fn(run, element)

    def _batches(self, run, size, drop_remainder):
        batched = self._fn.vectorized
        if batched is None:
            yield from super()._batches(run, size, drop_remainder)
            return
        for rows in self._upstream._batches(run, size, drop_remainder):
            yield batched(run, rows)


@stage
class Filter(_Unary):
    """``Dataset.filter``."""

    def __init__(self, upstream, predicate):
        super().__init__(upstream)
        self._fn = TracedFunction(predicate, upstream._template, upstream._types,
                                  upstream._shapes, "Dataset.filter")
        check_predicate(self._fn)

    def _own_captures(self):
        return self._fn.captures

    def _iterate(self, run):
        for element in self._upstream._iterate(run):
            if bool(self._fn(run, element)[0]):
                yield element


@stage
class Batch(_Unary):
    """``Dataset.batch``."""

    def __init__(self, upstream, batch_size, drop_remainder=False):
        size = scalar_argument(batch_size, "batch: batch_size")
        if isinstance(size, int) and size < 1:
            raise ValueError(f"batch: batch_size must be positive, got {size}")
        rows = size if drop_remainder and isinstance(size, int) else None
        shapes = [None if s is None else TensorShape((rows, *s)) for s in upstream._shapes]
        super().__init__(upstream, shapes=shapes)
        self._size, self._drop = size, bool(drop_remainder)
        self._scalars = (size,)

    def _cardinality(self, run):
        return batched_count(self._upstream._cardinality(run), run.scalar(self._size),
                             self._drop)

    def _iterate(self, run):
        yield from self._upstream._batches(run, _positive(run, self._size, "batch_size"),
                                           self._drop)


@stage
class Unbatch(_Unary):
    """``Dataset.unbatch``: each element's rows as elements of their own."""

    def __init__(self, upstream):
        for k, shape in enumerate(upstream._shapes):
            if shape is not None and len(shape) == 0:
                raise ValueError(f"unbatch: component {k} of the elements is a scalar "
                                 f"({upstream._types[k].name}); every component needs a "
                                 "leading (batch) axis")
        super().__init__(upstream, shapes=[None if s is None else TensorShape(s[1:])
                                           for s in upstream._shapes])

    def _iterate(self, run):
        for element in self._upstream._iterate(run):
            rows = {np.shape(c)[0] if np.ndim(c) else None for c in element}
            if None in rows:
                raise InvalidArgumentError("Dataset.unbatch: an element has a scalar "
                                           "component; every component needs a leading axis")
            if len(rows) > 1:
                raise InvalidArgumentError(
                    "Dataset.unbatch: the components of an element have different numbers "
                    f"of rows {sorted(rows)}; they must be the same")
            for i in range(rows.pop()):
                yield tuple(c[i] for c in element)


def batched_count(n, size, drop_remainder):
    """The number of batches of ``size`` made from ``n`` elements (a cardinality)."""
    if n < 0:
        return n
    return n // size if drop_remainder else -(-n // size)


def _positive(run, value, what):
    n = run.scalar(value)
    if n < 1:
        raise InvalidArgumentError(f"Dataset: {what} must be positive, got {n}")
    return n


@stage
class PaddedBatch(_Unary):
    """``Dataset.padded_batch``."""

    def __init__(self, upstream, batch_size, padded_shapes, padding_values, drop_remainder):
        size = scalar_argument(batch_size, "padded_batch: batch_size")
        n = len(upstream._types)
        targets = [None] * n if padded_shapes is None else \
            structure.shapes_up_to(upstream.output_types, padded_shapes)
        targets = [_padded_target(t, s, k) for k, (t, s) in
                   enumerate(zip(targets, upstream._shapes))]
        if padding_values is None:
            pads = [b"" if t is dtypes.string else 0 for t in upstream._types]
        else:  # values or scalar tensors (TF1's usual form), read when initialized
            pads = [convert_to_tensor(p) if isinstance(p, Tensor) or
                    hasattr(p, "_as_graph_tensor") else p
                    for p in structure.flatten(padding_values)]
            if len(pads) != n:
                raise ValueError("padded_batch: padding_values does not have the structure "
                                 f"of the elements {upstream.output_types!r}")
        rows = size if drop_remainder and isinstance(size, int) else None
        super().__init__(upstream, shapes=[TensorShape((rows, *t)) for t in targets])
        self._size, self._drop, self._targets, self._pads = size, bool(drop_remainder), \
            targets, pads
        self._scalars = (size, *[p for p in pads if isinstance(p, Tensor)])

    def _cardinality(self, run):
        return batched_count(self._upstream._cardinality(run), run.scalar(self._size),
                             self._drop)

    def _iterate(self, run):
        size = _positive(run, self._size, "batch_size")
        pads = [np.asarray(run.value(p)) if isinstance(p, Tensor) else p for p in self._pads]
        group = []
        for element in self._upstream._iterate(run):
            group.append(element)
            if len(group) == size:
                yield self._pad(group, pads)
                group = []
        if group and not self._drop:
            yield self._pad(group, pads)

    def _pad(self, group, pads):
        out = []
        for k, (target, pad) in enumerate(zip(self._targets, pads)):
            parts = [np.asarray(e[k]) for e in group]
            shape = [max(p.shape[d] for p in parts) if t is None else int(t)
                     for d, t in enumerate(target)]
            batch = np.full((len(parts), *shape), pad, dtype=parts[0].dtype)
            for i, p in enumerate(parts):
                if any(a > b for a, b in zip(p.shape, shape)):
                    raise InvalidArgumentError(
                        f"padded_batch: component {k} of an element has shape "
                        f"{list(p.shape)}, larger than its padded shape "
                        f"{structure.format_shape(target)}")
                batch[(i, *[slice(0, d) for d in p.shape])] = p
            out.append(batch)
        return tuple(out)


def _padded_target(target, shape, k):
    """The padded shape of component ``k``: ``target`` (None/-1 = the longest), which
    defaults to the component's static shape."""
    if shape is None and target is None:
        raise ValueError(f"padded_batch: component {k} has unknown rank; give padded_shapes")
    if target is None:
        return TensorShape([None] * len(shape))
    target = TensorShape([None if d is None or int(d) == -1 else int(d) for d in target])
    if shape is not None and len(shape) != len(target):
        raise ValueError(f"padded_batch: padded shape {structure.format_shape(target)} of "
                         f"component {k} does not have the rank of its shape "
                         f"{structure.format_shape(shape)}")
    return target


@stage
class Shuffle(_Unary):
    """``Dataset.shuffle``: TF1's buffer algorithm (draw a random element of the
    buffer, put the next input element in its place)."""

    def __init__(self, upstream, buffer_size, seed=None, reshuffle_each_iteration=None):
        super().__init__(upstream)
        self._buffer = scalar_argument(buffer_size, "shuffle: buffer_size")
        self._scalars = (self._buffer,)
        graph = get_default_graph()
        self._position = len(graph.nodes)
        self._graph_seed = graph.seed
        self._op_seed = int(seed) if seed is not None else \
            (self._position if graph.seed is not None else None)
        self._reshuffle = True if reshuffle_each_iteration is None \
            else bool(reshuffle_each_iteration)

    def _cardinality(self, run):
        return self._upstream._cardinality(run)

    def _iterate(self, run):
        size = _positive(run, self._buffer, "shuffle buffer_size")
        rng = run.rng(self, self._graph_seed, self._op_seed, self._position, self._reshuffle)
        buffer = []
        upstream = self._upstream._iterate(run)
        for element in upstream:
            buffer.append(element)
            if len(buffer) == size:
                break
        for element in upstream:
            i = int(rng.integers(len(buffer)))
            yield buffer[i]
            buffer[i] = element
        while buffer:
            i = int(rng.integers(len(buffer)))
            buffer[i], buffer[-1] = buffer[-1], buffer[i]
            yield buffer.pop()


@stage
class Repeat(_Counted):
    """``Dataset.repeat``."""

    def __init__(self, upstream, count=None):
        super().__init__(upstream, -1 if count is None else count, "repeat: count")

    def _cardinality(self, run):
        n, count = self._upstream._cardinality(run), run.scalar(self._count)
        if count < 0:
            return 0 if n == 0 else INFINITE
        return n if n < 0 else n * count

    def _iterate(self, run):
        count = run.scalar(self._count)
        done = 0
        while count < 0 or done < count:
            empty = True
            for element in self._upstream._iterate(run):
                empty = False
                yield element
            done += 1
            if empty:  # repeating nothing forever is nothing
                return


@stage
class Take(_Counted):
    """``Dataset.take``."""

    def __init__(self, upstream, count):
        super().__init__(upstream, count, "take: count")

    def _cardinality(self, run):
        n, count = self._upstream._cardinality(run), run.scalar(self._count)
        if count < 0:
            return n
        if n == INFINITE:
            return count
        return n if n < 0 else min(n, count)

    def _iterate(self, run):
        count = run.scalar(self._count)
        if count == 0:
            return
        stream = self._upstream._iterate(run)
        try:
            for taken, element in enumerate(stream, 1):
                yield element
                if taken == count:
                    return
        finally:
            stream.close()  # stops a prefetch thread upstream


@stage
class Skip(_Counted):
    """``Dataset.skip``."""

    def __init__(self, upstream, count):
        super().__init__(upstream, count, "skip: count")

    def _cardinality(self, run):
        n, count = self._upstream._cardinality(run), run.scalar(self._count)
        if count < 0:
            return 0
        return n if n < 0 else max(n - count, 0)

    def _iterate(self, run):
        count = run.scalar(self._count)
        for seen, element in enumerate(self._upstream._iterate(run)):
            if count < 0:
                return
            if seen >= count:
                yield element


@stage
class Cache(_Unary):
    """``Dataset.cache``: the first complete pass is recorded (in memory for this
    initialization of the iterator, or in ``filename`` for every later one)."""

    def __init__(self, upstream, filename=""):
        super().__init__(upstream)
        self._file = os.fspath(filename) + ".gfcache" if filename else None

    def _cardinality(self, run):
        return self._upstream._cardinality(run)

    def _iterate(self, run):
        cached = self._load(run)
        if cached is not None:
            yield from cached
            return
        recorded = []
        for element in self._upstream._iterate(run):
            recorded.append(element)
            yield element
        self._store(run, recorded)  # reached only when the pass completed

    def _load(self, run):
        if self._file is None:
            return run.caches.get(self)
        if not os.path.exists(self._file):
            return None
        return [tuple(e) for e in cache_file.read(self._file, self._types, self._shapes)]

    def _store(self, run, recorded):
        if self._file is None:
            run.caches[self] = recorded
            return
        cache_file.write(self._file, recorded, self._types)


@stage
class WithOptions(_Unary):
    """``Dataset.with_options``: the same elements, with options attached."""

    def __init__(self, upstream, options):
        if not isinstance(options, Options):
            raise TypeError(f"with_options: expected a gf.data.Options, got {options!r}")
        super().__init__(upstream)
        self._own_options = options

    def _cardinality(self, run):
        return self._upstream._cardinality(run)

    def _iterate(self, run):
        return self._upstream._iterate(run)

    def _batches(self, run, size, drop_remainder):
        return self._upstream._batches(run, size, drop_remainder)


__all__ = ["Batch", "Cache", "Filter", "Map", "PaddedBatch", "Repeat", "Shuffle", "Skip",
           "Take", "stack"]
