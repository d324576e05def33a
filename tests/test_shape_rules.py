"""Property tests of the static shape rules against NumPy's behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradflow as gf
from gradflow.prim import rules

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=200, deadline=None)
@given(shapes, shapes)
def test_broadcast_rule_agrees_with_numpy(a, b):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        with pytest.raises(ValueError):
            rules.broadcast_shapes(a, b)
        return
    assert rules.broadcast_shapes(a, b) == expected


@settings(max_examples=100, deadline=None)
@given(shapes, shapes, st.data())
def test_unknown_dims_never_contradict_the_known_result(a, b, data):
    try:
        expected = np.broadcast_shapes(a, b)
    except ValueError:
        return
    hide_a = data.draw(st.lists(st.booleans(), min_size=len(a), max_size=len(a)))
    partial = tuple(None if h else d for d, h in zip(a, hide_a))
    got = rules.broadcast_shapes(partial, b)
    assert len(got) == len(expected)
    assert all(g is None or g == e for g, e in zip(got, expected))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.data())
def test_reduce_and_transpose_shapes_match_results(dims, data):
    gf.reset_default_graph()
    axis = data.draw(st.integers(-len(dims), len(dims) - 1))
    keep = data.draw(st.booleans())
    perm = data.draw(st.permutations(range(len(dims))))
    x = gf.placeholder(gf.float64, tuple(dims))
    outs = [gf.reduce_sum(x, axis, keepdims=keep), gf.transpose(x, perm)]
    value = np.arange(np.prod(dims), dtype=np.float64).reshape(dims)
    with gf.Session() as sess:
        results = sess.run(outs, {x: value})
    np.testing.assert_array_equal(results[0], value.sum(axis, keepdims=keep))
    np.testing.assert_array_equal(results[1], value.transpose(perm))
    for t, r in zip(outs, results):
        assert tuple(t.shape) == r.shape


def test_tensor_shape_is_compatible_with():
    from gradflow.graph import TensorShape

    shape = TensorShape((None, 3))
    assert shape.is_compatible_with((5, 3)) and shape.is_compatible_with((None, None))
    assert shape.is_compatible_with(None)  # unknown rank
    assert not shape.is_compatible_with((5, 4)) and not shape.is_compatible_with((5, 3, 1))
