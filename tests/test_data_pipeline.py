"""gf.data pipelines: each source and transformation against plain Python, iterators
per Session, the prefetch thread, and the errors of a misused pipeline."""

from __future__ import annotations

import gzip
import threading
import time

import numpy as np
import pytest

import gradflow as gf
from gradflow.data import feeding
from gradflow.data.functions import TracedFunction


def values(dataset, session=None, **feeds):
    """Every element of ``dataset`` through a one-shot (or initializable) iterator."""
    iterator = dataset.make_initializable_iterator()
    nxt = iterator.get_next()
    sess = session or gf.Session()
    sess.run(iterator.initializer, feed_dict=feeds.get("feed_dict"))
    out = []
    while True:
        try:
            out.append(sess.run(nxt))
        except gf.errors.OutOfRangeError:
            return out


def scalars(dataset):
    return [int(v) for v in values(dataset)]


# -- sources ---------------------------------------------------------------------------


def test_from_tensor_slices_tuple_dict_and_array_keep_order_and_structure():
    x = np.arange(12, dtype=np.float64).reshape(4, 3)
    y = np.array([3, 1, 4, 1])
    pairs = values(gf.data.Dataset.from_tensor_slices((x, y)))
    assert [p[1] for p in pairs] == [3, 1, 4, 1]
    np.testing.assert_array_equal(np.stack([p[0] for p in pairs]), x)
    ds = gf.data.Dataset.from_tensor_slices({"image": x, "label": y})
    assert ds.output_types == {"image": gf.float64, "label": gf.int64}
    assert ds.output_shapes["image"].as_list() == [3]
    first = values(ds)[0]
    assert set(first) == {"image", "label"} and first["label"] == 3
    assert gf.data.Dataset.from_tensor_slices([1.5, 2.5]).output_types == gf.float32  # TF1
    assert scalars(gf.data.Dataset.from_tensor_slices([7, 8, 9])) == [7, 8, 9]


def test_from_tensor_slices_rejects_mismatched_lengths_and_scalars():
    with pytest.raises(ValueError, match="different first dimensions"):
        gf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="scalar"):
        gf.data.Dataset.from_tensor_slices(np.float32(1.0))


def test_from_tensors_range_zip_concatenate():
    one = values(gf.data.Dataset.from_tensors((np.arange(3), 5)))
    assert len(one) == 1 and list(one[0][0]) == [0, 1, 2] and one[0][1] == 5
    assert scalars(gf.data.Dataset.range(2, 11, 3)) == [2, 5, 8]
    assert gf.data.Dataset.range(4).output_types == gf.int64
    zipped = gf.data.Dataset.zip((gf.data.Dataset.range(5), gf.data.Dataset.range(10, 13)))
    assert [(int(a), int(b)) for a, b in values(zipped)] == [(0, 10), (1, 11), (2, 12)]
    both = gf.data.Dataset.range(2).concatenate(gf.data.Dataset.range(5, 7))
    assert scalars(both) == [0, 1, 5, 6]


def test_from_generator_checks_what_it_yields():
    def gen():
        for i in range(3):
            yield [i] * (i + 1), float(i)

    ds = gf.data.Dataset.from_generator(gen, (gf.int32, gf.float32), ([None], []))
    got = values(ds)
    assert [list(a) for a, _ in got] == [[0], [1, 1], [2, 2, 2]]
    assert [float(b) for _, b in got] == [0.0, 1.0, 2.0] and got[0][0].dtype == np.int32
    bad = gf.data.Dataset.from_generator(lambda: iter([[1, 2]]), gf.float32, [3])
    with pytest.raises(gf.errors.InvalidArgumentError, match=r"shape \[2\].*\[3\]"):
        values(bad)


def test_text_line_dataset_reads_lines_of_plain_and_gzip_files(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"x,1\r\ny,2\n")
    with gzip.open(tmp_path / "b.txt.gz", "wb") as f:
        f.write(b"z,3\n")
    plain = gf.data.TextLineDataset([str(tmp_path / "a.txt")])
    packed = gf.data.TextLineDataset(str(tmp_path / "b.txt.gz"), compression_type="GZIP")
    assert plain.output_types == gf.string
    lines = values(plain.concatenate(packed))
    assert [np.asarray(v).item() for v in lines] == [b"x,1", b"y,2", b"z,3"]

    def parse(line):
        return np.float32(line.decode().split(",")[1])

    numbers = plain.map(lambda line: gf.py_func(parse, [line], gf.float32))
    assert [float(v) for v in values(numbers)] == [1.0, 2.0]
    with pytest.raises(gf.errors.NotFoundError, match="missing"):
        values(gf.data.TextLineDataset(str(tmp_path / "missing")))


# -- map and filter ----------------------------------------------------------------------


def test_map_vectorizes_rowwise_functions_and_runs_others_per_element(backend):
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    y = np.arange(6)
    rowwise = gf.data.Dataset.from_tensor_slices((x, y)).map(
        lambda a, b: (gf.cast(a, gf.float64) / 2.0 + 1.0, gf.one_hot(b, 6)))
    reshaping = gf.data.Dataset.from_tensor_slices((x, y)).map(
        lambda a, b: (gf.reshape(a, [2, 2]) * 3.0, b + 1))
    assert rowwise._fn.vectorized is not None and reshaping._fn.vectorized is None
    sess = gf.Session(backend=backend)
    got = values(rowwise.batch(4), sess)
    np.testing.assert_allclose(np.concatenate([g[0] for g in got]), x / 2.0 + 1.0)
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), np.eye(6))
    assert got[0][0].dtype == np.float64
    per_element = values(reshaping.batch(4), sess)
    np.testing.assert_allclose(np.concatenate([g[0] for g in per_element]),
                               x.reshape(6, 2, 2) * 3)
    assert list(np.concatenate([g[1] for g in per_element])) == list(y + 1)


def test_vectorized_map_is_refused_where_rows_would_mix():
    args = dict(template=(None,), types=[gf.float32], shapes=[gf.TensorShape([3])],
                what="Dataset.map")
    assert TracedFunction(lambda a: a - gf.reduce_mean(a), **args).vectorized is None
    assert TracedFunction(lambda a: a * gf.random_uniform([3]), **args).vectorized is None
    assert TracedFunction(lambda a: a * np.ones((2, 3), np.float32), **args).vectorized \
        is None  # the constant has a higher rank: it would broadcast against the batch
    assert TracedFunction(lambda a: gf.maximum(a, 0.0), **args).vectorized is not None


def test_map_reads_placeholders_when_the_iterator_is_initialized():
    scale = gf.placeholder(gf.float32, [])
    ds = gf.data.Dataset.from_tensor_slices(np.ones(3, np.float32)).map(lambda v: v * scale)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()
    with gf.Session() as sess:
        sess.run(it.initializer, {scale: 2.0})
        assert float(sess.run(nxt)) == 2.0
        sess.run(it.initializer, {scale: 5.0})
        assert float(sess.run(nxt)) == 5.0


def test_map_of_untraceable_python_says_to_use_py_func():
    ds = gf.data.Dataset.range(3)
    with pytest.raises(Exception) as info:
        ds.map(lambda v: int(v) + 1)  # int() of a symbolic tensor
    assert "py_func" in "".join(getattr(info.value, "__notes__", []))
    wrapped = ds.map(lambda v: gf.py_func(lambda n: np.int64(int(n) + 1), [v], gf.int64))
    assert scalars(wrapped) == [1, 2, 3]


def test_filter_keeps_elements_where_the_predicate_holds():
    ds = gf.data.Dataset.range(10).filter(lambda v: gf.equal(v % 3, 0))
    assert scalars(ds) == [0, 3, 6, 9]
    with pytest.raises(ValueError, match="scalar bool"):
        gf.data.Dataset.range(3).filter(lambda v: v)


# -- batching ------------------------------------------------------------------------------


def test_batch_and_drop_remainder():
    ds = gf.data.Dataset.range(7)
    assert [list(b) for b in values(ds.batch(3))] == [[0, 1, 2], [3, 4, 5], [6]]
    dropped = ds.batch(3, drop_remainder=True)
    assert dropped.output_shapes.as_list() == [3]
    assert [list(b) for b in values(dropped)] == [[0, 1, 2], [3, 4, 5]]
    assert ds.batch(3).output_shapes.as_list() == [None]
    ragged = gf.data.Dataset.from_generator(lambda: iter([[1], [1, 2]]), gf.int64, [None])
    with pytest.raises(gf.errors.InvalidArgumentError, match="different shapes"):
        values(ragged.batch(2))


def test_padded_batch_pads_to_the_longest_or_the_given_shape():
    rows = [[1], [2, 2, 2], [3, 3]]
    ds = gf.data.Dataset.from_generator(lambda: iter(rows), gf.int32, [None])
    (longest,) = values(ds.padded_batch(3, padded_shapes=[None]))
    np.testing.assert_array_equal(longest, [[1, 0, 0], [2, 2, 2], [3, 3, 0]])
    first, second = values(ds.padded_batch(2, padded_shapes=[4], padding_values=-1))
    np.testing.assert_array_equal(first, [[1, -1, -1, -1], [2, 2, 2, -1]])
    np.testing.assert_array_equal(second, [[3, 3, -1, -1]])
    with pytest.raises(gf.errors.InvalidArgumentError, match="larger than its padded shape"):
        values(ds.padded_batch(3, padded_shapes=[2]))


# -- order: shuffle, repeat, take, skip, cache -------------------------------------------------


def shuffled_orders(seed, reshuffle=True, epochs=3, buffer_size=4):
    ds = gf.data.Dataset.range(10).shuffle(buffer_size, seed=seed,
                                           reshuffle_each_iteration=reshuffle)
    flat = scalars(ds.repeat(epochs))
    return [flat[i * 10:(i + 1) * 10] for i in range(epochs)]


def test_shuffle_is_a_permutation_determined_by_the_seed():
    orders = shuffled_orders(seed=7)
    assert all(sorted(o) == list(range(10)) for o in orders)
    assert orders == shuffled_orders(seed=7)  # the same seed, the same orders
    assert orders != shuffled_orders(seed=8)
    assert len({tuple(o) for o in orders}) == 3  # a new order each pass
    fixed = shuffled_orders(seed=7, reshuffle=False)
    assert fixed[0] == fixed[1] == fixed[2]
    assert shuffled_orders(seed=7, buffer_size=1)[0] == list(range(10))
    # a buffer of 4 cannot move element 9 before position 6
    assert all(o.index(9) >= 6 for o in orders)


def test_shuffle_follows_the_graph_seed_and_reinitialization():
    gf.set_random_seed(3)
    ds = gf.data.Dataset.range(20).shuffle(20)
    it = ds.make_initializable_iterator()
    nxt = it.get_next()

    def epoch(sess):
        sess.run(it.initializer)
        return [int(sess.run(nxt)) for _ in range(20)]

    a, b = gf.Session(), gf.Session()
    first = epoch(a)
    assert epoch(b) == first  # two sessions, same seed: same order
    assert epoch(a) != first  # the next initialization reshuffles


def test_repeat_take_skip_match_python():
    ds = gf.data.Dataset.range(5)
    assert scalars(ds.repeat(2)) == list(range(5)) * 2
    assert scalars(ds.skip(2).take(2)) == [2, 3]
    assert scalars(ds.take(-1)) == list(range(5))
    assert scalars(ds.skip(-1)) == []
    assert scalars(ds.repeat().take(12)) == (list(range(5)) * 3)[:12]
    assert scalars(ds.take(0).repeat()) == []


def test_cache_replays_the_first_pass():
    calls = []

    def gen():
        calls.append(1)
        yield from range(4)

    ds = gf.data.Dataset.from_generator(gen, gf.int64, []).cache().repeat(3)
    assert scalars(ds) == list(range(4)) * 3
    assert len(calls) == 1


def test_file_cache_survives_the_iterator(tmp_path):
    calls = []

    def gen():
        calls.append(1)
        yield from range(3)

    ds = gf.data.Dataset.from_generator(gen, gf.int64, []).cache(str(tmp_path / "c"))
    assert scalars(ds) == [0, 1, 2] and scalars(ds) == [0, 1, 2]
    assert len(calls) == 1


# -- iterators ------------------------------------------------------------------------------


def test_each_session_has_its_own_position(backend):
    nxt = gf.data.Dataset.range(4).make_one_shot_iterator().get_next()
    a, b = gf.Session(backend=backend), gf.Session()
    assert [int(a.run(nxt)) for _ in range(2)] == [0, 1]
    assert [int(b.run(nxt)) for _ in range(3)] == [0, 1, 2]
    assert int(a.run(nxt)) == 2
    a.close()
    b.close()


def test_one_get_next_per_run_advances_once():
    x, y = gf.data.Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 10)) \
        .make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert [int(v) for v in sess.run([x, y, x + 1])] == [0, 0, 1]
        assert [int(v) for v in sess.run([y, x])] == [10, 1]


def test_batches_reach_the_plan_without_a_copy():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    nxt = gf.data.Dataset.from_tensor_slices(x).batch(4).make_one_shot_iterator().get_next()
    with gf.Session(backend="numpy") as sess:
        batch = sess.run(nxt, output="native")
    assert np.shares_memory(batch, x)


def test_batches_are_fed_to_the_plan_like_feed_dict_values():
    x = np.ones((5, 3), np.float32)
    batch = gf.data.Dataset.from_tensor_slices(x).batch(2).make_one_shot_iterator().get_next()
    total = gf.reduce_sum(batch, axis=0)
    assert batch.shape.as_list() == [None, 3]
    with gf.Session() as sess:
        sums = [sess.run(total) for _ in range(3)]
        fed = list(sess.resources[feeding._PLANS].values())
    assert [list(s) for s in sums] == [[2.0] * 3, [2.0] * 3, [1.0] * 3]
    assert fed == [[(batch, [(0, batch)])]]  # the batch was a feed of the run


def test_get_next_over_computed_tensors_runs_inside_the_plan(backend):
    doubled = gf.data.Dataset.from_tensor_slices(gf.range(4) * 2).batch(3)
    nxt = doubled.make_one_shot_iterator().get_next()
    with gf.Session(backend=backend) as sess:
        assert [list(sess.run(nxt)) for _ in range(2)] == [[0, 2, 4], [6]]
        with pytest.raises(gf.errors.OutOfRangeError):
            sess.run(nxt)


def test_iterator_misuse_errors():
    it = gf.data.Dataset.range(3).make_initializable_iterator()
    nxt = it.get_next()
    with gf.Session() as sess:
        with pytest.raises(gf.errors.FailedPreconditionError, match="not been initialized"):
            sess.run(nxt)
    with pytest.raises(ValueError, match="one-shot"):
        gf.data.Dataset.from_tensor_slices(gf.placeholder(gf.float32, [None])) \
            .make_one_shot_iterator()
    reinit = gf.data.Iterator.from_structure(gf.int64, [])
    with pytest.raises(TypeError, match="do not match"):
        reinit.make_initializer(gf.data.Dataset.from_tensor_slices(np.zeros(2, np.float32)))
    with pytest.raises(ValueError, match="no initializer"):
        reinit.initializer  # noqa: B018
    with pytest.raises(TypeError, match="Session"):
        iter(gf.data.Dataset.range(2))


def test_compat_v1_function_forms():
    import gradflow.compat.v1 as tf

    ds = tf.data.Dataset.range(3)
    nxt = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
    assert tf.compat.v1.data.get_output_types(ds) == gf.int64
    with gf.Session() as sess:
        assert int(sess.run(nxt)) == 0
    assert tf.data.experimental.AUTOTUNE == -1
    applied = ds.apply(tf.data.experimental.shuffle_and_repeat(3, count=2, seed=1))
    assert sorted(scalars(applied)) == [0, 0, 1, 1, 2, 2]


# -- prefetch --------------------------------------------------------------------------------


def _counting_generator(pulled, count):
    def gen():
        for i in range(count):
            pulled.append(i)
            yield i
    return gen


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == "gradflow-data-prefetch"]


def _wait_for(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()


def test_prefetch_runs_ahead_and_stops_with_the_session():
    before = len(_prefetch_threads())
    pulled = []
    ds = gf.data.Dataset.from_generator(_counting_generator(pulled, 100), gf.int64, [])
    nxt = ds.prefetch(3).make_one_shot_iterator().get_next()
    sess = gf.Session()
    assert int(sess.run(nxt)) == 0
    # while no step runs, the thread fills its buffer: 1 taken + 3 queued + 1 in hand
    assert _wait_for(lambda: len(pulled) == 5)
    time.sleep(0.05)
    assert len(pulled) == 5  # and no further: the buffer is bounded
    assert [int(sess.run(nxt)) for _ in range(3)] == [1, 2, 3]
    assert len(_prefetch_threads()) == before + 1
    sess.close()
    assert _wait_for(lambda: len(_prefetch_threads()) == before)


def test_prefetch_forwards_errors_and_the_end():
    def gen():
        yield 1
        raise RuntimeError("broken source")

    nxt = gf.data.Dataset.from_generator(gen, gf.int64, []).prefetch(2) \
        .make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert int(sess.run(nxt)) == 1
        with pytest.raises(Exception, match="broken source"):
            sess.run(nxt)
        with pytest.raises(gf.errors.OutOfRangeError):
            sess.run(nxt)


def test_prefetch_thread_stops_when_the_iterator_is_reinitialized():
    before = len(_prefetch_threads())
    it = gf.data.Dataset.range(1000).prefetch(2).make_initializable_iterator()
    nxt = it.get_next()
    with gf.Session() as sess:
        for _ in range(3):
            sess.run(it.initializer)
            assert int(sess.run(nxt)) == 0
        assert _wait_for(lambda: len(_prefetch_threads()) == before + 1)
    assert _wait_for(lambda: len(_prefetch_threads()) == before)
