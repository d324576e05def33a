"""``Dataset.cache(filename)``'s file holds arrays only: it round-trips every dtype and
shape a pass gives, and a hostile or damaged file is refused without running anything
(it was a pickle, which ran code on load)."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import gradflow as gf
from gradflow.data import cache_file


def _gen():
    for i in range(4):
        yield np.arange(i, dtype=np.float32), ("ab" * i).encode() + b"\x00", i, i % 2 == 0


TYPES = (gf.float32, gf.string, gf.int64, gf.bool)
SHAPES = ([None], [], [], [])


def _cached(path):
    return gf.data.Dataset.from_generator(_gen, TYPES, SHAPES).cache(str(path))


def _elements(ds, passes=1):
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    out = []
    with gf.Session() as sess:
        for _ in range(passes):
            sess.run(it.initializer)
            while True:
                try:
                    out.append(sess.run(nxt))
                except gf.errors.OutOfRangeError:
                    break
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))
            assert np.asarray(u).dtype == np.asarray(v).dtype


def test_a_cache_file_gives_back_what_the_pass_gave(tmp_path):
    first = _elements(_cached(tmp_path / "c"))
    assert os.path.exists(tmp_path / "c.gfcache")
    again = _elements(_cached(tmp_path / "c"))  # a new dataset: read from the file
    _same(first, again)
    assert again[3][1] == b"ababab\x00"  # a trailing NUL byte survives


def test_a_pickle_in_place_of_the_cache_runs_nothing(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (tmp_path / "c.gfcache").write_bytes(pickle.dumps(Payload()))
    with pytest.raises(gf.errors.DataLossError, match="c.gfcache"):
        _elements(_cached(tmp_path / "c"))
    assert not marker.exists()


def _write(path, arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def _good_arrays(tmp_path):
    _elements(_cached(tmp_path / "c"))
    with np.load(tmp_path / "c.gfcache") as z:
        return {k: z[k] for k in z.files}


@pytest.mark.parametrize("change, why", [
    (lambda a: a.update(format=np.array([2, 4, 4], np.int64)), "not a gradflow dataset cache"),
    (lambda a: a.update(format=np.array([1, 4, 3], np.int64)), "of 3 components"),
    (lambda a: a.update(c0_data=a["c0_data"].astype(np.float64)), "c0_data"),
    (lambda a: a.update(c0_dims=-a["c0_dims"]), "negative dimension"),
    (lambda a: a.update(c1_bytes=a["c1_bytes"][:-1]), "c1_bytes"),
    (lambda a: a.update(c2_ranks=a["c2_ranks"] + 1, c2_dims=np.ones(4, np.int64)),
     "static shape"),
    (lambda a: a.pop("c3_data"), "c3_data"),
])
def test_a_damaged_cache_file_is_refused_naming_it(tmp_path, change, why):
    arrays = _good_arrays(tmp_path)
    change(arrays)
    _write(tmp_path / "d.gfcache", arrays)
    with pytest.raises(gf.errors.DataLossError, match=why) as err:
        cache_file.read(tmp_path / "d.gfcache", TYPES, [gf.TensorShape(s) for s in SHAPES])
    assert "d.gfcache" in str(err.value)
