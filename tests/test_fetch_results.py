"""What ``Session.run`` returns, as TF1 returns it: a scalar fetch is a NumPy scalar of
the tensor's dtype, nested fetches come back in their structure, and
``output="native"`` keeps the backend's own arrays."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import gradflow as gf

Pair = collections.namedtuple("Pair", "loss grid")


@pytest.mark.parametrize("dtype", [gf.float32, gf.float64, gf.int32, gf.int64, gf.bool])
def test_a_scalar_fetch_is_a_numpy_scalar_of_its_dtype(dtype, backend):
    x = gf.constant(np.ones((2, 3)), dtype=gf.float64)
    value = gf.cast(gf.reduce_sum(x) * 6.25, dtype)
    with gf.Session(backend=backend) as sess:
        got = sess.run(value)
        assert type(got) is np.dtype(dtype.as_numpy_dtype).type
        assert not isinstance(got, np.ndarray)
        assert value.eval(session=sess) == got
    assert got == np.array(37.5).astype(dtype.as_numpy_dtype)


def test_a_printed_loss_reads_as_tf1_prints_it():
    loss = gf.constant(37.33, gf.float32)
    with gf.Session() as sess:
        got = sess.run(loss)
    assert repr(got) in ("37.33", "np.float32(37.33)")  # NumPy 1 and 2 spellings


def test_nested_fetches_keep_their_structure(backend):
    a = gf.constant(2.0)
    m = gf.constant(np.arange(4.0, dtype=np.float32).reshape(2, 2))
    op = gf.no_op()
    fetches = {"pair": Pair(a, [m, (a, op)]), "plain": [a], "tuple": (m,),
               "ordered": collections.OrderedDict(b=a, a=m)}
    with gf.Session(backend=backend) as sess:
        out = sess.run(fetches)
    assert set(out) == {"pair", "plain", "tuple", "ordered"}
    assert isinstance(out["pair"], Pair) and out["pair"].loss == np.float32(2.0)
    inner = out["pair"].grid
    assert isinstance(inner, list) and isinstance(inner[1], tuple) and inner[1][1] is None
    np.testing.assert_array_equal(inner[0], [[0, 1], [2, 3]])
    assert isinstance(out["plain"], list) and isinstance(out["tuple"], tuple)
    assert isinstance(out["ordered"], collections.OrderedDict)
    assert list(out["ordered"]) == ["b", "a"]


def test_native_output_stays_native(backend):
    loss = gf.reduce_sum(gf.constant(np.ones(3, np.float32)))
    with gf.Session(backend=backend) as sess:
        native = sess.run([loss], output="native")[0]
        if sess.backend.name == "numpy":  # NumPy's own reductions give NumPy scalars
            assert isinstance(native, (np.ndarray, np.generic))
        else:
            assert sess.backend.is_native(native)
        assert tuple(native.shape) == ()
        assert type(sess.run(loss)) is np.float32
