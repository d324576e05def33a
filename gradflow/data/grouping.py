"""``tf.data.experimental``'s stateful transformations: ``scan``, ``group_by_window``,
``group_by_reducer`` (with ``Reducer``), ``bucket_by_sequence_length`` and
``assert_cardinality``.

Their functions are traced once, as ``map``'s. ``group_by_window``'s ``reduce_func``
gets a symbolic window data set (``Window``), whose elements a ``ScopedRun`` holds
while the data set it returned runs for that window.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.data import structure
from gradflow.data.dataset import Dataset
from gradflow.data.functions import TracedFunction
from gradflow.data.nested import DatasetFunction, ScopedRun
from gradflow.data.sources import _components
from gradflow.data.transforms import _Unary
from gradflow.errors import FailedPreconditionError, InvalidArgumentError
from gradflow.graph import Tensor, TensorShape


def _check_state(traced, types, what):
    if traced.types[:len(types)] != list(types):
        raise TypeError(f"{what}: the new state's types "
                        f"{[t.name for t in traced.types[:len(types)]]} differ from the "
                        f"initial state's {[t.name for t in types]}")


class Scan(_Unary):
    """``scan``: ``(state, out) = scan_func(state, element)`` for each element."""

    def __init__(self, upstream, initial_state, scan_func):
        state_template, self._initial = _components(initial_state, "scan: initial_state")
        types = [t.dtype if isinstance(t, Tensor) else structure.dtype_of(t)
                 for t in self._initial]
        shapes = [structure.shape_of(t) for t in self._initial]
        fn = TracedFunction(scan_func, (state_template, upstream._template),
                            types + upstream._types, shapes + upstream._shapes, "scan")
        if not (isinstance(fn.template, tuple) and len(fn.template) == 2):
            raise TypeError(f"scan: {fn.label} must return a pair (new_state, output_element)")
        _check_state(fn, types, "scan")
        n = len(types)
        super().__init__(upstream, fn.template[1], fn.types[n:], fn.shapes[n:])
        self._fn, self._n = fn, n

    def _own_captures(self):
        return [*self._fn.captures, *[t for t in self._initial if isinstance(t, Tensor)]]

    def _iterate(self, run):
        state = tuple(np.asarray(run.value(t)) for t in self._initial)
        for element in self._upstream._iterate(run):
            out = self._fn(run, state + tuple(element))
            state = tuple(out[:self._n])
            yield tuple(out[self._n:])


class Window(Dataset):
    """The elements of one window of ``group_by_window`` (held by the run)."""

    def __init__(self, upstream):
        super().__init__(upstream._template, upstream._types, upstream._shapes)

    def _cardinality(self, run):
        return len(run.values[self])

    def _iterate(self, run):
        yield from run.values[self]


def _key_function(key_func, upstream, what):
    fn = TracedFunction(key_func, upstream._template, upstream._types, upstream._shapes,
                        f"{what}: key_func")
    if fn.types != [dtypes.int64] or (fn.shapes[0] is not None and len(fn.shapes[0])):
        raise TypeError(f"{what}: key_func must return an int64 scalar, got "
                        f"{[t.name for t in fn.types]}")
    return fn


class GroupByWindow(_Unary):
    """``group_by_window``: elements grouped by key; each full window (and, at the end,
    each partial one, by increasing key) goes through ``reduce_func``."""

    def __init__(self, upstream, key_func, reduce_func, window_size, window_size_func):
        what = "group_by_window"
        if (window_size is None) == (window_size_func is None):
            raise ValueError(f"{what}: give exactly one of window_size and window_size_func")
        self._key = _key_function(key_func, upstream, what)
        self._window = Window(upstream)
        self._reduce = DatasetFunction(lambda k: reduce_func(k, self._window),
                                       _KeyOnly(), f"{what}: reduce_func")
        if window_size_func is None:
            self._sizes = int(window_size)
        else:
            self._sizes = _key_function(lambda k: window_size_func(k), _KeyOnly(),
                                        f"{what}: window_size_func")
        inner = self._reduce.inner
        super().__init__(upstream, inner._template, inner._types, inner._shapes)

    def _own_captures(self):
        sizes = [] if isinstance(self._sizes, int) else self._sizes.captures
        return [*self._key.captures, *self._reduce.captures, *sizes]

    def _size(self, run, key):
        if isinstance(self._sizes, int):
            return self._sizes
        return int(self._sizes(run, (np.asarray(key, np.int64),))[0])

    def _emit(self, run, key, window):
        element = (np.asarray(key, np.int64),)
        scoped = self._reduce.dataset_run(run, element)
        yield from self._reduce.inner._iterate(ScopedRun(scoped, {self._window: window}))

    def _iterate(self, run):
        groups, sizes = {}, {}
        for element in self._upstream._iterate(run):
            key = int(self._key(run, element)[0])
            if key not in sizes:
                sizes[key] = self._size(run, key)
                if sizes[key] < 1:
                    raise InvalidArgumentError(f"group_by_window: window size must be "
                                               f"greater than zero, got {sizes[key]}")
            group = groups.setdefault(key, [])
            group.append(element)
            if len(group) == sizes[key]:
                del groups[key]
                yield from self._emit(run, key, group)
        for key in sorted(groups):
            yield from self._emit(run, key, groups[key])


class _KeyOnly(Dataset):
    """The structure of a function of one int64 key (never run)."""

    def __init__(self):
        super().__init__(None, [dtypes.int64], [TensorShape(())])


class Reducer:
    """``group_by_reducer``'s functions (TF1 ``tf.data.experimental.Reducer``):
    ``init_func(key)`` gives a group's first state, ``reduce_func(state, element)``
    the next, ``finalize_func(state)`` the group's element."""

    def __init__(self, init_func, reduce_func, finalize_func):
        self.init_func, self.reduce_func, self.finalize_func = \
            init_func, reduce_func, finalize_func


class GroupByReducer(_Unary):
    """``group_by_reducer``: one element per key, by increasing key, at the end."""

    def __init__(self, upstream, key_func, reducer):
        what = "group_by_reducer"
        self._key = _key_function(key_func, upstream, what)
        key = _KeyOnly()
        self._init = TracedFunction(reducer.init_func, None, key._types, key._shapes,
                                    f"{what}: init_func")
        types, shapes, tmpl = self._init.types, self._init.shapes, self._init.template
        self._reduce = TracedFunction(reducer.reduce_func, (tmpl, upstream._template),
                                      types + upstream._types, shapes + upstream._shapes,
                                      f"{what}: reduce_func")
        _check_state(self._reduce, types, what)
        self._final = TracedFunction(reducer.finalize_func, tmpl, types, shapes,
                                     f"{what}: finalize_func")
        fin = self._final
        super().__init__(upstream, fin.template, fin.types, fin.shapes)

    def _own_captures(self):
        return [*self._key.captures, *self._init.captures, *self._reduce.captures,
                *self._final.captures]

    def _iterate(self, run):
        states = {}
        for element in self._upstream._iterate(run):
            key = int(self._key(run, element)[0])
            if key not in states:
                states[key] = self._init(run, (np.asarray(key, np.int64),))
            states[key] = self._reduce(run, tuple(states[key]) + tuple(element))
        for key in sorted(states):
            yield tuple(self._final(run, tuple(states[key])))


class AssertCardinality(_Unary):
    """``assert_cardinality``: the same elements, failing the run that finds more or
    fewer than ``expected``."""

    def __init__(self, upstream, expected):
        super().__init__(upstream)
        self._expected = int(expected)

    def _cardinality(self, run):
        return self._expected

    def _iterate(self, run):
        expected, count = self._expected, 0
        for element in self._upstream._iterate(run):
            count += 1
            if 0 <= expected < count:
                raise FailedPreconditionError(
                    f"Input dataset was expected to contain {expected} elements but "
                    f"contained at least {count} elements.")
            yield element
        if expected == -1 or count < expected:
            what = "an infinite number of" if expected == -1 else str(expected)
            raise FailedPreconditionError(
                f"Input dataset was expected to contain {what} elements but contained only "
                f"{count} elements.")
