"""gf.data pipelines against hostile inputs (issue 45): a stalled input must not hang
``Session.close()``, a dropped Session must not keep its prefetch thread, sources and
transformations are lazy, compressed files are streamed (a bomb costs one buffer, a
damaged stream is a ``DataLossError`` at its record), folders and missing files are
gradflow errors, and a generator's exception reaches ``sess.run`` wrapped as TF1 wraps
it. Every risky call runs in a daemon thread joined with a timeout, so a regression
fails the test instead of hanging the suite."""

from __future__ import annotations

import gc
import gzip
import os
import struct
import threading
import time
import tracemalloc
import weakref
import zlib

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import (
    CancelledError,
    DataLossError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    UnknownError,
)
from gradflow.tfrecord import frame

PREFETCH = "gradflow-data-prefetch"


def _within(fn, timeout):
    """Run ``fn`` in a daemon thread: ``(finished, value, error, seconds)``."""
    box = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as err:  # noqa: BLE001 - reported to the test
            box["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(timeout)
    return (not thread.is_alive(), box.get("value"), box.get("error"),
            time.monotonic() - start)


def _wait_for(condition, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name == PREFETCH]


# -- 1. close() cancels a get_next waiting on a stalled input ---------------------------


@pytest.mark.parametrize("dtype", [gf.int64, gf.string], ids=["fed", "in-plan"])
def test_close_cancels_a_get_next_waiting_on_a_stalled_prefetch(dtype):
    release = threading.Event()

    def stalls():
        yield b"0" if dtype is gf.string else 0
        release.wait(20)  # the input stalls until the test ends
        yield b"1" if dtype is gf.string else 1

    nxt = gf.data.Dataset.from_generator(stalls, dtype, []).prefetch(1) \
        .make_one_shot_iterator().get_next()
    sess = gf.Session()
    try:
        sess.run(nxt)
        box = {}
        waiter = threading.Thread(target=_record, args=(sess, nxt, box), daemon=True)
        waiter.start()
        time.sleep(0.2)  # it now waits in get_next
        assert waiter.is_alive()
        finished, _, error, seconds = _within(sess.close, 3.0)
        assert finished and error is None and seconds < 1.0, \
            f"close() took {seconds:.2f}s (finished: {finished})"
        waiter.join(1.0)
        assert not waiter.is_alive()
        assert isinstance(box.get("error"), CancelledError), box
    finally:
        release.set()


def _record(sess, fetch, box):
    try:
        box["value"] = sess.run(fetch)
    except BaseException as err:  # noqa: BLE001 - reported to the test
        box["error"] = err


def test_a_run_after_close_of_a_stalled_pipeline_fails_at_once():
    release = threading.Event()

    def stalls():
        yield 0
        release.wait(20)
        yield 1

    nxt = gf.data.Dataset.from_generator(stalls, gf.int64, []).prefetch(1) \
        .make_one_shot_iterator().get_next()
    sess = gf.Session()
    try:
        sess.run(nxt)
        assert _within(sess.close, 3.0)[0]
        finished, _, error, seconds = _within(lambda: sess.run(nxt), 3.0)
        assert finished and seconds < 1.0 and isinstance(error, gf.errors.GradflowError)
    finally:
        release.set()


def test_close_returns_while_a_stalled_generator_runs_in_the_waiting_run_itself():
    release = threading.Event()

    def stalls():
        yield 0
        release.wait(20)  # no prefetch: the waiting run's own thread is in here
        yield 1

    nxt = gf.data.Dataset.from_generator(stalls, gf.int64, []) \
        .make_one_shot_iterator().get_next()
    sess = gf.Session()
    try:
        assert int(sess.run(nxt)) == 0
        box = {}
        waiter = threading.Thread(target=_record, args=(sess, nxt, box), daemon=True)
        waiter.start()
        time.sleep(0.1)
        finished, _, error, seconds = _within(sess.close, 3.0)
        assert finished and error is None and seconds < 1.0, f"close() took {seconds:.2f}s"
        release.set()  # the element it was making is dropped: the run is cancelled
        waiter.join(2.0)
        assert isinstance(box.get("error"), CancelledError), box
    finally:
        release.set()


# -- 2. a dropped Session neither stays alive nor keeps its thread -----------------------


def test_a_dropped_session_is_collected_and_its_prefetch_thread_ends():
    def forever():
        i = 0
        while True:
            yield i
            i += 1

    before = len(_prefetch_threads())
    nxt = gf.data.Dataset.from_generator(forever, gf.int64, []).prefetch(2) \
        .make_one_shot_iterator().get_next()
    sess = gf.Session()
    assert int(sess.run(nxt)) == 0
    assert _wait_for(lambda: len(_prefetch_threads()) == before + 1)
    ref = weakref.ref(sess)
    del sess
    assert _wait_for(lambda: gc.collect() is not None and ref() is None, 2.0), \
        "the prefetch thread keeps its Session reachable"
    assert _wait_for(lambda: len(_prefetch_threads()) <= before, 2.0), \
        "the prefetch thread outlives its Session"


# -- 3. sources and transformations are lazy ---------------------------------------------


HUGE = 10 ** 12

LAZY = {
    "batch": lambda r: r.batch(4),
    "batch-drop": lambda r: r.batch(4, drop_remainder=True),
    "map-batch": lambda r: r.map(lambda x: x * 2).batch(4),
    "repeat": lambda r: r.repeat().batch(4),
    "shuffle": lambda r: r.shuffle(8, seed=1).batch(4),
    "take": lambda r: r.take(HUGE - 1).batch(4),
    "skip": lambda r: r.skip(2).batch(4),
    "filter": lambda r: r.filter(lambda x: x >= 0).batch(4),
    "zip": lambda r: gf.data.Dataset.zip((r, r)).map(lambda a, b: a + b).batch(4),
    "concatenate": lambda r: r.concatenate(r).batch(4),
    "unbatch": lambda r: r.batch(3).unbatch().batch(4),
    "padded": lambda r: r.padded_batch(4, padded_shapes=[]),
    "prefetch": lambda r: r.batch(4).prefetch(2),
    "stepped": lambda r: gf.data.Dataset.range(HUGE, -1, -1).batch(4),
}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_a_huge_range_gives_its_first_batch_at_the_cost_of_one_batch(name):
    nxt = LAZY[name](gf.data.Dataset.range(HUGE)).make_one_shot_iterator().get_next()
    sess = gf.Session()
    tracemalloc.start()
    try:
        finished, value, error, seconds = _within(lambda: sess.run(nxt), 5.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert finished and error is None, error
    assert np.asarray(value).shape == (4,)
    assert seconds < 2.0 and peak < 10 * 2 ** 20, f"{seconds:.3f}s, {peak / 2**20:.1f} MiB"
    assert _within(sess.close, 3.0)[0]


def test_a_huge_range_batches_right_at_its_end():
    ds = gf.data.Dataset.range(HUGE - 5, HUGE).batch(2, drop_remainder=True)
    nxt = ds.make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert sess.run(nxt).tolist() == [HUGE - 5, HUGE - 4]
        assert sess.run(nxt).tolist() == [HUGE - 3, HUGE - 2]
        with pytest.raises(gf.errors.OutOfRangeError):
            sess.run(nxt)
    back = gf.data.Dataset.range(10, 0, -3).batch(2).make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert [sess.run(back).tolist() for _ in range(2)] == [[10, 7], [4, 1]]


# -- 4. compressed files are streamed; folders and missing files are gradflow errors -----


def _zlib_bomb(path, first, mib, wbits=zlib.MAX_WBITS):
    """A compressed TFRecord stream: ``first`` framed, then ``mib`` MiB of zeros."""
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = bytes(2 ** 20)
    with open(path, "wb") as f:
        f.write(packer.compress(first))
        for _ in range(mib):
            f.write(packer.compress(zeros))
        f.write(packer.flush())


def _first_under(make_iter, limit=16 * 2 ** 20):
    tracemalloc.start()
    try:
        finished, value, error, seconds = _within(lambda: next(iter(make_iter())), 5.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert finished and error is None, error
    assert peak < limit, f"{peak / 2**20:.1f} MiB before the first record"
    return value


@pytest.mark.parametrize("kind,wbits", [("ZLIB", zlib.MAX_WBITS), ("GZIP", 16 + 15)])
def test_a_compressed_tfrecord_bomb_gives_its_first_record_at_once(tmp_path, kind, wbits):
    path = str(tmp_path / "bomb.tfrecords")
    _zlib_bomb(path, frame(b"first"), 48, wbits)
    assert os.path.getsize(path) < 2 ** 20
    assert _first_under(lambda: gf.python_io.tf_record_iterator(path, kind)) == b"first"


@pytest.mark.parametrize("kind,wbits", [("ZLIB", zlib.MAX_WBITS), ("GZIP", 16 + 15)])
def test_a_compressed_text_bomb_gives_its_first_line_at_once(tmp_path, kind, wbits):
    path = str(tmp_path / "bomb.txt")
    _zlib_bomb(path, b"first line\nsecond\n", 48, wbits)
    nxt = gf.data.TextLineDataset(path, compression_type=kind).make_one_shot_iterator() \
        .get_next()
    sess = gf.Session()
    try:
        assert _first_under(lambda: [sess.run(nxt)]) == b"first line"
        assert sess.run(nxt) == b"second"
    finally:
        sess.close()


def _records(count, size=3000, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for _ in range(count)]


@pytest.mark.parametrize("kind,wbits", [("ZLIB", zlib.MAX_WBITS), ("GZIP", 16 + 15)])
@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_a_damaged_compressed_stream_fails_at_its_record(tmp_path, kind, wbits, damage):
    records = _records(4)
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    packed = packer.compress(b"".join(frame(r) for r in records)) + packer.flush()
    keep = len(packed) * 5 // 8  # within record 2 (the records do not compress)
    packed = packed[:keep] + (b"" if damage == "cut" else bytes(range(256)) * 8)
    path = tmp_path / "damaged.tfrecords"
    path.write_bytes(packed)
    got = []
    with pytest.raises(DataLossError, match=r"damaged.tfrecords'?: record 2"):
        for record in gf.python_io.tf_record_iterator(str(path), kind):
            got.append(record)
    assert got == records[:2]


@pytest.mark.parametrize("kind,wbits", [("ZLIB", zlib.MAX_WBITS), ("GZIP", 16 + 15)])
def test_a_damaged_compressed_text_file_is_data_loss_naming_it(tmp_path, kind, wbits):
    lines = b"".join(b"%d " % k + r.hex().encode() + b"\n" for k, r in enumerate(_records(4)))
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    packed = packer.compress(lines) + packer.flush()
    path = tmp_path / "damaged.txt"
    path.write_bytes(packed[:len(packed) // 2] + bytes(range(256)) * 8)
    nxt = gf.data.TextLineDataset(str(path), compression_type=kind) \
        .make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert sess.run(nxt).startswith(b"0 ")
        with pytest.raises(DataLossError, match="damaged.txt"):
            for _ in range(4):
                sess.run(nxt)


def test_gzip_members_one_after_another_and_padding_are_read_in_turn(tmp_path):
    records = _records(5, size=700)
    framed = [frame(r) for r in records]
    path = tmp_path / "members.tfrecords"
    path.write_bytes(gzip.compress(b"".join(framed[:2])) + gzip.compress(framed[2])
                     + gzip.compress(b"".join(framed[3:])) + bytes(8))
    assert list(gf.python_io.tf_record_iterator(str(path), "GZIP")) == records
    text = tmp_path / "lines.txt"
    packer = zlib.compressobj(9)
    text.write_bytes(packer.compress(b"a\r\nb\n" * 5000) + packer.flush())
    lines = gf.data.TextLineDataset(str(text), compression_type="ZLIB").batch(10000) \
        .make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert sess.run(lines).tolist() == [b"a", b"b"] * 5000


@pytest.mark.parametrize("kind", ["", "ZLIB"])
def test_a_hostile_record_length_costs_only_what_the_file_holds(tmp_path, kind):
    from gradflow.protowire import masked_crc32c

    length = struct.pack("<Q", 3 << 29)  # 1.5 GiB claimed, under LARGEST_RECORD
    data = frame(b"ok") + length + struct.pack("<I", masked_crc32c(length)) + bytes(100)
    path = tmp_path / "liar.tfrecords"
    path.write_bytes(zlib.compress(data) if kind else data)
    got = []
    tracemalloc.start()
    try:
        with pytest.raises(DataLossError, match="liar.tfrecords'?: record 1 is cut short"):
            for record in gf.python_io.tf_record_iterator(str(path), kind):
                got.append(record)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == [b"ok"] and peak < 16 * 2 ** 20, f"{peak / 2**20:.1f} MiB"
    big = [bytes(range(256)) * 12289, b"x"]  # a real record over the piece size
    real = tmp_path / "big.tfrecords"
    with gf.python_io.TFRecordWriter(str(real), gf.python_io.TFRecordOptions(kind)) as w:
        for record in big:
            w.write(record)
    assert list(gf.python_io.tf_record_iterator(str(real), kind)) == big


def test_an_empty_compressed_file_has_no_records(tmp_path):
    path = tmp_path / "empty.tfrecords"
    path.write_bytes(b"")
    for kind in ("ZLIB", "GZIP"):
        assert list(gf.python_io.tf_record_iterator(str(path), kind)) == []


FILE_SETS = {
    "tfrecord": lambda p: gf.data.TFRecordDataset(p),
    "tfrecord-zlib": lambda p: gf.data.TFRecordDataset(p, compression_type="ZLIB"),
    "text": lambda p: gf.data.TextLineDataset(p),
    "text-gzip": lambda p: gf.data.TextLineDataset(p, compression_type="GZIP"),
    "fixed": lambda p: gf.data.FixedLengthRecordDataset(p, 4),
}


@pytest.mark.parametrize("name", sorted(FILE_SETS))
@pytest.mark.parametrize("where,error", [("folder", FailedPreconditionError),
                                         ("missing", NotFoundError)])
def test_a_folder_or_a_missing_file_is_a_gradflow_error_naming_it(tmp_path, name, where,
                                                                  error):
    path = str(tmp_path / "nothere") if where == "missing" else str(tmp_path)
    nxt = FILE_SETS[name](path).make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        with pytest.raises(error, match=str(tmp_path)):
            sess.run(nxt)


def test_tf_record_iterator_of_a_folder_is_failed_precondition(tmp_path):
    for kind in ("", "ZLIB", "GZIP"):
        with pytest.raises(FailedPreconditionError, match="is a directory"):
            list(gf.python_io.tf_record_iterator(str(tmp_path), kind))


# -- 5. a generator's exception is wrapped as TF1 wraps it --------------------------------


@pytest.mark.parametrize("prefetch", [False, True], ids=["plain", "prefetch"])
@pytest.mark.parametrize("raised,wrapped", [(ValueError, InvalidArgumentError),
                                            (TypeError, InvalidArgumentError),
                                            (KeyError, UnknownError),
                                            (ZeroDivisionError, UnknownError)])
def test_a_generators_exception_is_wrapped_with_its_cause(prefetch, raised, wrapped):
    def broken():
        yield 1
        raise raised("the source broke")

    ds = gf.data.Dataset.from_generator(broken, gf.int64, [])
    nxt = (ds.prefetch(2) if prefetch else ds).make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        assert int(sess.run(nxt)) == 1
        with pytest.raises(wrapped, match="the source broke") as info:
            sess.run(nxt)
    assert isinstance(info.value.__cause__, raised)
    assert "broken" in str(info.value) and raised.__name__ in str(info.value)


def test_a_generator_that_cannot_start_is_wrapped_too():
    def needs_an_argument(x):
        yield x

    nxt = gf.data.Dataset.from_generator(needs_an_argument, gf.int64, []) \
        .make_one_shot_iterator().get_next()
    with gf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="needs_an_argument") as info:
            sess.run(nxt)
    assert isinstance(info.value.__cause__, TypeError)
