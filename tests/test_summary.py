"""TF1 summaries and FileWriter, checked with TensorBoard's own event-file reader.

Every summary is built as graph ops, fetched with ``Session.run`` on each CPU
backend (a ``bytes`` value), written with ``gf.summary.FileWriter`` and read back
with ``tensorboard.backend.event_processing`` (``EventAccumulator`` and
``LegacyEventFileLoader``), never with a reader of gradflow's.
"""

from __future__ import annotations

import glob
import io
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError

pytest.importorskip("tensorboardX", reason="summaries need tensorboardX (pip install tensorboardX)")
event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator",
    reason="the tests read event files with tensorboard's reader")
from tensorboard.backend.event_processing.event_file_loader import (  # noqa: E402
    LegacyEventFileLoader,
)
from tensorboard.compat.proto.summary_pb2 import Summary as TBSummary  # noqa: E402

KEEP_ALL = {event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0,
            event_accumulator.IMAGES: 0, event_accumulator.TENSORS: 0}


def read(logdir):
    """TensorBoard's view of the event files in ``logdir``, every event kept."""
    acc = event_accumulator.EventAccumulator(str(logdir), size_guidance=KEEP_ALL)
    acc.Reload()
    return acc


def event_files(logdir):
    return sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")))


def events_of(path):
    """The events of one file as written (without TensorBoard's migration to tensors)."""
    return list(LegacyEventFileLoader(path).Load())


def decode_png(encoded):
    from PIL import Image

    picture = Image.open(io.BytesIO(encoded))
    return picture, np.asarray(picture)


# -- fetched values ------------------------------------------------------------------------


def test_a_fetched_summary_is_the_serialized_protobuf(backend):
    x = gf.placeholder(gf.float32, (), name="value")
    s = gf.summary.scalar("x", x * 2.0)
    assert s.dtype.name == "string" and tuple(s.shape) == ()
    with gf.Session(backend=backend) as sess:
        value = sess.run(s, {x: 1.25})
        native = sess.run(s, {x: 1.25}, output="native")
    assert type(value) is bytes and value == native
    parsed = TBSummary.FromString(value)
    assert [(v.tag, v.simple_value) for v in parsed.value] == [("x", 2.5)]


def test_scalars_keep_their_steps_and_exact_values(backend, tmp_path):
    x = gf.placeholder(gf.float32, (None,), name="x")
    mean = gf.reduce_mean(x)
    count = gf.Variable(np.int64(0), dtype=gf.int64, name="counter")
    gf.summary.scalar("mean", mean)
    gf.summary.scalar("count", count)
    gf.summary.scalar("rate", 0.1)
    merged = gf.summary.merge_all()
    increment = gf.assign_add(count, 3)
    rng = np.random.default_rng(0)
    fetched = []
    with gf.Session(backend=backend) as sess, gf.summary.FileWriter(tmp_path) as writer:
        sess.run(gf.global_variables_initializer())
        for step in [0, 5, 10, 15]:
            summary, m, c, _ = sess.run([merged, mean, count, increment],
                                        {x: rng.normal(size=7).astype(np.float32)})
            writer.add_summary(summary, global_step=step)
            fetched.append((step, m, c))
    acc = read(tmp_path)
    assert sorted(acc.Tags()["scalars"]) == ["count", "mean", "rate"]
    assert [(e.step, e.value) for e in acc.Scalars("mean")] == \
        [(step, float(np.float32(m))) for step, m, _ in fetched]
    assert [(e.step, e.value) for e in acc.Scalars("count")] == \
        [(step, float(c)) for step, _, c in fetched]
    assert [e.value for e in acc.Scalars("rate")] == [float(np.float32(0.1))] * 4


def test_histograms_match_numpy(backend, tmp_path):
    x = gf.placeholder(gf.float32, (None, 3), name="values")
    gf.summary.histogram("x", x)
    gf.summary.histogram("ints", gf.constant(np.arange(-5, 6, dtype=np.int32)))
    merged = gf.summary.merge_all()
    rng = np.random.default_rng(1)
    values = rng.normal(scale=3.0, size=(50, 3)).astype(np.float32)
    values[0, :] = 0.0
    values[1, 0] = 1e-13  # below the smallest bucket edge
    with gf.Session(backend=backend) as sess, gf.summary.FileWriter(tmp_path) as writer:
        writer.add_summary(sess.run(merged, {x: values}), global_step=7)
    acc = read(tmp_path)
    for tag, data in [("x", values), ("ints", np.arange(-5, 6))]:
        (event,) = acc.Histograms(tag)
        h = event.histogram_value
        v = np.asarray(data, dtype=np.float64).ravel()
        assert event.step == 7
        assert h.num == v.size and h.min == v.min() and h.max == v.max()
        assert h.sum == pytest.approx(v.sum(), rel=1e-12, abs=1e-12)
        assert h.sum_squares == pytest.approx(np.dot(v, v), rel=1e-12)
        limits, counts = np.array(h.bucket_limit), np.array(h.bucket)
        assert counts.sum() == v.size and np.all(np.diff(limits) > 0)
        # each written bucket holds the values from the previous limit up to its own
        lower = np.concatenate([[-np.inf], limits[:-1]])
        expect = [np.count_nonzero((v >= lo) & (v < hi)) for lo, hi in zip(lower, limits)]
        np.testing.assert_array_equal(counts, expect)
    assert acc.Tags()["distributions"]  # the distributions tab reads the same events


def test_histogram_buckets_are_tf1s():
    from gradflow.summary.summary_ops import bucket_limits

    limits = bucket_limits()
    assert limits[len(limits) // 2] == 0.0
    assert limits[len(limits) // 2 + 1] == 1e-12 and limits[-1] == np.finfo(np.float64).max
    np.testing.assert_array_equal(limits, -limits[::-1])
    assert len(limits) == 1551  # 775 edges each side of zero, as TF1's histogram.cc makes


def test_bucket_index_is_a_binary_search_over_the_edges():
    """``bucket_index`` (a logarithm, then comparisons) agrees with ``searchsorted`` on
    every edge, its neighbours on both sides, zeros, tiny and huge values."""
    from gradflow.summary.summary_ops import bucket_index, bucket_limits

    limits = bucket_limits()
    rng = np.random.default_rng(0)
    big = np.finfo(np.float64).max
    cases = [rng.standard_normal(50_000), rng.standard_normal(2000) * 1e-13,
             rng.standard_normal(2000) * 1e25, limits, np.nextafter(limits[:-1], big),
             np.nextafter(limits[1:], -big),
             np.array([0.0, -0.0, 1e-300, -1e-300, 5e-324, 9.9e-13, -9.9e-13, 1e20, -1e20]),
             rng.standard_normal(1000).astype(np.float32).astype(np.float64)]
    for v in cases:
        np.testing.assert_array_equal(bucket_index(v), np.searchsorted(limits, v, side="right"))


def test_histogram_of_nan_fails_naming_the_tensor(backend):
    x = gf.placeholder(gf.float32, (None,), name="activations")
    with gf.name_scope("layer1"):
        s = gf.summary.histogram("acts", x)
    with gf.Session(backend=backend) as sess:
        with pytest.raises(InvalidArgumentError, match=r"Nan in summary histogram for: "
                                                       r"layer1/acts.*'activations'"):
            sess.run(s, {x: [1.0, np.nan]})


def test_images_are_written_as_tf1_writes_them(backend, tmp_path):
    pytest.importorskip("PIL", reason="image summaries encode PNGs with Pillow")
    rng = np.random.default_rng(2)
    rgb = rng.uniform(0, 1, (4, 5, 6, 3)).astype(np.float32)
    rgb[:, 0, 0, :] = 1.0  # every image reaches 1: the scale is exactly 255
    gray = rng.integers(0, 256, (2, 7, 3, 1)).astype(np.uint8)
    rgba = rng.uniform(-2, 1, (1, 4, 4, 4))
    x = gf.placeholder(gf.float32, (None, 5, 6, 3), name="rgb_images")
    g = gf.placeholder(gf.uint8, (None, 7, 3, 1), name="gray_images")
    gf.summary.image("rgb", x)  # max_outputs=3 of 4
    gf.summary.image("gray", g, max_outputs=1)
    gf.summary.image("rgba", gf.constant(rgba))
    merged = gf.summary.merge_all()
    with gf.Session(backend=backend) as sess, gf.summary.FileWriter(tmp_path) as writer:
        writer.add_summary(sess.run(merged, {x: rgb, g: gray}), global_step=1)
    acc = read(tmp_path)
    assert sorted(acc.Tags()["images"]) == ["gray/image", "rgb/image/0", "rgb/image/1",
                                            "rgb/image/2", "rgba/image/0"]
    for i in range(3):
        (event,) = acc.Images(f"rgb/image/{i}")
        assert (event.width, event.height, event.step) == (6, 5, 1)
        picture, pixels = decode_png(event.encoded_image_string)
        assert picture.mode == "RGB" and picture.size == (6, 5)
        np.testing.assert_array_equal(pixels, (rgb[i] * np.float32(255)).astype(np.uint8))
    (event,) = acc.Images("gray/image")
    picture, pixels = decode_png(event.encoded_image_string)
    assert picture.mode == "L" and picture.size == (3, 7)
    np.testing.assert_array_equal(pixels, gray[0, :, :, 0])
    (event,) = acc.Images("rgba/image/0")
    picture, pixels = decode_png(event.encoded_image_string)
    assert picture.mode == "RGBA" and picture.size == (4, 4)
    # negative values: 0 maps to 128 and the largest magnitude to 1 or 255 (TF1)
    top = np.abs(rgba[0]).max()
    np.testing.assert_array_equal(pixels, (rgba[0] * (127.0 / top) + 128.0).astype(np.uint8))


def test_text_summaries(backend, tmp_path):
    x = gf.placeholder(gf.int64, (None,), name="labels")
    gf.summary.text("note", "learning rate **0.1**")
    gf.summary.text("table", [["a", "b"], ["c", "d"]])
    with gf.name_scope("eval"):
        gf.summary.text("labels", x)
    merged = gf.summary.merge_all()
    with gf.Session(backend=backend) as sess, gf.summary.FileWriter(tmp_path) as writer:
        writer.add_summary(sess.run(merged, {x: [3, 1, 4]}), global_step=2)
        writer.add_summary(sess.run(merged, {x: [1, 5]}), global_step=3)
    acc = read(tmp_path)
    assert sorted(acc.Tags()["tensors"]) == ["eval/labels", "note", "table"]
    (note, _) = acc.Tensors("note")
    assert list(note.tensor_proto.string_val) == [b"learning rate **0.1**"]
    (table, _) = acc.Tensors("table")
    assert [d.size for d in table.tensor_proto.tensor_shape.dim] == [2, 2]
    assert list(table.tensor_proto.string_val) == [b"a", b"b", b"c", b"d"]
    first, second = acc.Tensors("eval/labels")
    assert (first.step, list(first.tensor_proto.string_val)) == (2, [b"3", b"1", b"4"])
    assert (second.step, list(second.tensor_proto.string_val)) == (3, [b"1", b"5"])
    # the text plugin's metadata is written with the first value of a tag only (TF1)
    assert acc.SummaryMetadata("note").plugin_data.plugin_name == "text"
    summaries = [e.summary for e in events_of(event_files(tmp_path)[0]) if e.HasField("summary")]
    assert [v.HasField("metadata") for v in summaries[1].value] == [False] * 3


# -- merge, collections, tags ----------------------------------------------------------------


def test_merge_and_merge_all_and_collections(tmp_path):
    assert gf.summary.merge_all() is None  # nothing to merge: None, as in TF1
    a = gf.summary.scalar("a", 1.0)
    b = gf.summary.scalar("b", 2.0, collections=["mine"])
    c = gf.summary.scalar("c", 3.0, collections=[])
    assert gf.get_collection(gf.GraphKeys.SUMMARIES) == [a]
    assert gf.get_collection("mine") == [b]
    everything = gf.summary.merge([a, b, c])
    with gf.Session(backend="numpy") as sess:
        assert [v.tag for v in TBSummary.FromString(sess.run(gf.summary.merge_all())).value] \
            == ["a"]
        assert [v.tag for v in TBSummary.FromString(
            sess.run(gf.summary.merge_all("mine"))).value] == ["b"]
        nested = gf.summary.merge([everything, gf.summary.scalar("d", 4.0)])
        parsed = TBSummary.FromString(sess.run(nested))
    assert [(v.tag, v.simple_value) for v in parsed.value] == \
        [("a", 1.0), ("b", 2.0), ("c", 3.0), ("d", 4.0)]


def test_merge_all_with_scope():
    with gf.name_scope("train"):
        gf.summary.scalar("loss", 1.0)
    gf.summary.scalar("other", 2.0)
    merged = gf.summary.merge_all(scope="train")
    with gf.Session(backend="numpy") as sess:
        assert [v.tag for v in TBSummary.FromString(sess.run(merged)).value] == ["train/loss"]


def test_merging_one_tag_twice_fails():
    a = gf.summary.scalar("a", 1.0)
    merged = gf.summary.merge([a, a])
    with gf.Session(backend="numpy") as sess:
        with pytest.raises(InvalidArgumentError, match="Duplicate tag a found"):
            sess.run(merged)


def test_name_scopes_and_families_make_the_tags():
    with gf.name_scope("train"):
        loss = gf.summary.scalar("loss", 1.0)
        again = gf.summary.scalar("loss", 2.0)
        fam = gf.summary.scalar("acc", 0.5, family="metrics")
    root = gf.summary.scalar("loss", 3.0)
    odd = gf.summary.scalar("my loss:0", 4.0)
    assert [loss.name, again.name, root.name, odd.name] == \
        ["train/loss", "train/loss_1", "loss", "my_loss_0"]
    with gf.Session(backend="numpy") as sess:
        tags = [TBSummary.FromString(b).value[0].tag
                for b in sess.run([loss, again, fam, root, odd])]
    assert tags == ["train/loss", "train/loss_1", "metrics/train/metrics/acc", "loss",
                    "my_loss_0"]


# -- the graph, the writer -------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # in the graph plugin's imports
def test_the_graph_is_written_as_a_graph_def(tmp_path):
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, (None, 784), name="x")
        logits = gf.layers.dense(x, 10, name="dense")
        loss = gf.reduce_mean(logits, name="loss")
        gf.train.GradientDescentOptimizer(0.1).minimize(loss)
        gf.summary.scalar("loss", loss)
    gf.summary.FileWriter(tmp_path, graph).close()
    acc = read(tmp_path)
    assert acc.Tags()["graph"]
    graph_def = acc.Graph()
    nodes = {n.name: n for n in graph_def.node}
    assert set(nodes) == {n.name for n in graph.nodes}
    assert nodes["x"].op == "placeholder"
    assert nodes["x"].attr["dtype"].type == 1  # DT_FLOAT
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [-1, 784]
    assert [d.size for d in nodes["dense/kernel"].attr["_output_shapes"].list.shape[0].dim] \
        == [784, 10]
    matmul = next(n for n in graph_def.node if n.op == "matmul")
    assert list(matmul.input) == ["x", "dense/kernel"]
    assert nodes["loss_1"].attr["dtype"].type == 7  # the summary: DT_STRING
    for node in graph_def.node:
        for name in node.input:
            assert name.lstrip("^") in nodes
    # TensorBoard's graph plugin can prepare it for display
    from tensorboard.plugins.graph import graph_util  # noqa: F401 - present with the plugin
    from tensorboard.plugins.graph.graphs_plugin import process_graph

    process_graph.prepare_graph_for_ui(graph_def)


def test_flush_writes_everything_added_so_far(tmp_path):
    writer = gf.summary.FileWriter(tmp_path, flush_secs=1000, filename_suffix=".mine")
    (path,) = event_files(tmp_path)
    assert path.endswith(".mine") and writer.path == path and writer.get_logdir() == \
        str(tmp_path)
    for step in range(25):  # more than max_queue: adds wait for the writer thread
        writer.add_summary(gf.summary.Summary(value=[gf.summary.Summary.Value(
            tag="manual", simple_value=float(step))]), global_step=step)
    writer.flush()
    events = events_of(path)
    assert events[0].file_version == "brain.Event:2"
    assert [(e.step, e.summary.value[0].simple_value) for e in events[1:]] == \
        [(s, float(s)) for s in range(25)]
    writer.close()
    writer.close()  # twice is fine


def test_close_then_add_is_dropped_with_a_warning_and_reopen_starts_a_new_file(tmp_path):
    with gf.summary.FileWriter(tmp_path) as writer:
        writer.add_summary(gf.summary.Summary(value=[gf.summary.Summary.Value(
            tag="a", simple_value=1.0)]), 1)
    assert len(events_of(event_files(tmp_path)[0])) == 2  # closed by the with block
    with pytest.warns(RuntimeWarning, match="closed"):
        writer.add_summary(gf.summary.Summary(), 2)
    writer.reopen()
    writer.add_summary(gf.summary.Summary(value=[gf.summary.Summary.Value(
        tag="a", simple_value=3.0)]), 3)
    writer.close()
    assert len(event_files(tmp_path)) == 2
    assert [(e.step, e.value) for e in read(tmp_path).Scalars("a")] == [(1, 1.0), (3, 3.0)]


def test_two_writers_in_one_folder_write_two_files(tmp_path):
    with gf.summary.FileWriter(tmp_path) as a, gf.summary.FileWriter(tmp_path) as b:
        a.add_summary(gf.summary.Summary(value=[gf.summary.Summary.Value(
            tag="a", simple_value=1.0)]), 1)
        b.add_summary(gf.summary.Summary(value=[gf.summary.Summary.Value(
            tag="b", simple_value=2.0)]), 1)
    assert len(event_files(tmp_path)) == 2
    assert sorted(read(tmp_path).Tags()["scalars"]) == ["a", "b"]


def test_file_writer_cache(tmp_path):
    first = gf.summary.FileWriterCache.get(tmp_path)
    assert gf.summary.FileWriterCache.get(str(tmp_path)) is first
    gf.summary.FileWriterCache.clear()
    assert gf.summary.FileWriterCache.get(tmp_path) is not first
    gf.summary.FileWriterCache.clear()
    assert read(tmp_path).Tags()["graph"]  # made with the default graph


def test_session_log_and_manual_events(tmp_path):
    with gf.summary.FileWriter(tmp_path) as writer:
        writer.add_session_log(gf.summary.SessionLog(status=gf.summary.SessionLog.START), 0)
        writer.add_event(gf.summary.Event(step=4, summary=gf.summary.Summary(
            value=[gf.summary.Summary.Value(tag="e", simple_value=0.5)])))
        # a Summary protobuf of another library (here TensorBoard's own) is taken too
        writer.add_summary(TBSummary(value=[TBSummary.Value(tag="e", simple_value=0.25)]), 5)
    events = events_of(event_files(tmp_path)[0])
    assert events[1].session_log.status == 1 and events[2].step == 4
    assert [(e.step, e.value) for e in read(tmp_path).Scalars("e")] == [(4, 0.5), (5, 0.25)]


def test_tf1_program_as_written(tmp_path):
    import gradflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    w = tf.Variable(tf.zeros([2, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("w", w)
    merged = tf.summary.merge_all()
    losses = []
    with tf.Session() as sess:
        writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
        sess.run(tf.global_variables_initializer())
        for i in range(5):
            summary, value, _ = sess.run([merged, loss, train_op], {x: [[1.0, 2.0]]})
            writer.add_summary(summary, i)
            losses.append(value)
        writer.close()
    acc = read(tmp_path)
    assert [e.value for e in acc.Scalars("loss")] == [float(np.float32(v)) for v in losses]
    assert len(acc.Histograms("w")) == 5


# -- errors -----------------------------------------------------------------------------------


def test_scalar_of_a_non_scalar_names_the_tensor():
    x = gf.placeholder(gf.float32, (None, 3), name="batch_loss")
    with pytest.raises(ValueError, match=r"summary.scalar\('loss'\).*'batch_loss'.*"
                                         r"shape \(None, 3\).*test_summary.py"):
        gf.summary.scalar("loss", x)
    with pytest.raises(TypeError, match="'flags' is bool"):
        gf.summary.scalar("f", gf.placeholder(gf.bool, (), name="flags"))
    with pytest.raises(TypeError, match="operation"):
        gf.summary.scalar("op", gf.no_op(name="nothing"))
    with pytest.raises(ValueError, match="non-empty"):
        gf.summary.scalar("", 1.0)


def test_scalar_of_unknown_shape_is_checked_at_run_time(backend):
    x = gf.placeholder(gf.float32, name="anything")
    s = gf.summary.scalar("v", x)
    with gf.Session(backend=backend) as sess:
        assert TBSummary.FromString(sess.run(s, {x: 2.0})).value[0].simple_value == 2.0
        with pytest.raises(InvalidArgumentError, match=r"summary.scalar 'v'.*'anything'.*"
                                                       r"shape \(3,\)"):
            sess.run(s, {x: [1.0, 2.0, 3.0]})


def test_bad_images_name_the_tensor(backend):
    with pytest.raises(ValueError, match=r"'flat' must have rank 4.*shape \(None, 784\)"):
        gf.summary.image("img", gf.placeholder(gf.float32, (None, 784), name="flat"))
    with pytest.raises(ValueError, match=r"'two' must have 1, 3 or 4 channels"):
        gf.summary.image("img", gf.placeholder(gf.float32, (None, 4, 4, 2), name="two"))
    with pytest.raises(TypeError, match="'ints' is int32"):
        gf.summary.image("img", gf.placeholder(gf.int32, (None, 4, 4, 1), name="ints"))
    with pytest.raises(ValueError, match="max_outputs"):
        gf.summary.image("img", gf.placeholder(gf.float32, (None, 4, 4, 1)), max_outputs=0)
    x = gf.placeholder(gf.float32, name="unknown")
    s = gf.summary.image("img", x)
    with gf.Session(backend=backend) as sess:
        with pytest.raises(InvalidArgumentError, match=r"'img'.*'unknown' must have rank 4"):
            sess.run(s, {x: np.zeros((4, 4, 1), np.float32)})


def test_bad_text_and_merge_inputs():
    with pytest.raises(TypeError, match=r"summary.text\('t'\).*dict"):
        gf.summary.text("t", {"a": 1})
    x = gf.placeholder(gf.float32, (), name="not_a_summary")
    with pytest.raises(TypeError, match="'not_a_summary'.*is not a summary"):
        gf.summary.merge([x])


def test_add_summary_rejects_what_is_not_a_summary(tmp_path):
    with gf.summary.FileWriter(tmp_path) as writer:
        with pytest.raises(TypeError, match="add_summary: expected a summary"):
            writer.add_summary(3.0)
        with pytest.raises(ValueError, match="not a serialized Summary"):
            writer.add_summary(b"\xff\xff\xff")
        with pytest.raises(TypeError, match="gf.Graph"):
            writer.add_graph("graph")
        with pytest.raises(TypeError, match="global_step"):
            writer.add_summary(gf.summary.Summary(), global_step="x")


def test_missing_tensorboardx_says_what_to_install(monkeypatch):
    from gradflow.summary import _tbx

    _tbx.reset()
    for module in [m for m in sys.modules if m.split(".")[0] == "tensorboardX"]:
        monkeypatch.setitem(sys.modules, module, None)
    try:
        with pytest.raises(ImportError, match=r"pip install tensorboardX crc32c"):
            gf.summary.scalar("x", 1.0)
        with pytest.raises(ImportError, match="tensorboardX"):
            gf.summary.FileWriter("unused")
    finally:
        monkeypatch.undo()
        _tbx.reset()


def test_import_gradflow_does_not_import_tensorboardx():
    code = ("import sys, gradflow as tf; assert 'tensorboardX' not in sys.modules; "
            "assert tf.summary.FileWriter is tf.summary.writer.FileWriter; "
            "tf.summary.Summary; assert 'tensorboardX' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_writing_a_graph_warns_nothing(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with gf.summary.FileWriter(tmp_path) as writer:
            writer.add_graph(gf.get_default_graph())


def test_a_missing_crc32c_package_is_named(monkeypatch, caplog):
    """Without crc32c, tensorboardX checksums each event in a Python loop (milliseconds
    per summary, in a thread holding the GIL): gradflow says so once, with the fix."""
    import tensorboardX.crc32c

    from gradflow.summary import _tbx

    monkeypatch.setattr(tensorboardX.crc32c, "_crc32c_native", None)
    _tbx.reset()
    try:
        with caplog.at_level("WARNING", logger="gradflow.summary"):
            _tbx.require()
            _tbx.require()
    finally:
        _tbx.reset()
    assert [r.getMessage() for r in caplog.records] == [
        "the crc32c package is not installed: event files' checksums are computed in "
        f"Python, a few milliseconds per summary written; install it with: {_tbx.INSTALL_HINT}"]


def test_run_metadata_goes_to_tensorboard_as_tf1_writes_it(tmp_path):
    """``FileWriter.add_run_metadata`` of a traced run: TensorBoard reads the
    ``RunMetadata`` protobuf back with every op's name, times and label."""
    from tensorboard.compat.proto.config_pb2 import RunMetadata as TBRunMetadata

    x = gf.placeholder(gf.float32, (None, 3), name="x")
    w = gf.Variable(np.ones((3, 2), np.float32), name="w")
    loss = gf.reduce_sum(gf.matmul(x, w), name="loss")
    md = gf.RunMetadata()
    with gf.Session() as sess:
        sess.run(w.initializer)
        sess.run(loss, {x: np.ones((4, 3))}, run_metadata=md,
                 options=gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE))
    parsed = TBRunMetadata.FromString(md.SerializeToString())
    ours = [s for dev in md.step_stats.dev_stats for s in dev.node_stats]
    theirs = [s for dev in parsed.step_stats.dev_stats for s in dev.node_stats]
    assert len(ours) >= 2 and [s.node_name for s in theirs] == [s.node_name for s in ours]
    for a, b in zip(ours, theirs):
        assert (b.all_start_micros, b.op_end_rel_micros, b.timeline_label) == \
            (a.all_start_micros, a.op_end_rel_micros, a.timeline_label)
    assert [d.device for d in parsed.step_stats.dev_stats] == \
        [d.device for d in md.step_stats.dev_stats]
    with gf.summary.FileWriter(str(tmp_path)) as writer:
        writer.add_run_metadata(md, "step001", global_step=1)
    acc = read(tmp_path)
    assert acc.Tags()["run_metadata"] == ["step001"]
    assert acc.RunMetadata("step001") == parsed
    with pytest.raises(TypeError, match="expected a RunMetadata"):
        gf.summary.FileWriter(str(tmp_path)).add_run_metadata({"a": 1}, "bad")


def test_a_processs_event_files_sort_in_the_order_they_were_made(tmp_path):
    """TensorBoard reads a folder's event files in name order: the tenth writer of a
    process must sort after the ninth (a reopened writer's file after its first)."""
    for k in range(12):
        with gf.summary.FileWriter(tmp_path) as writer:
            writer.add_summary(gf.summary.Summary(value=[gf.summary.Summary.Value(
                tag="a", simple_value=float(k))]), k)
    assert [e.step for e in read(tmp_path).Scalars("a")] == list(range(12))
