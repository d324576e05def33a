"""Meta graphs: ``tf.train.export_meta_graph`` / ``import_meta_graph`` and the ``.meta``
that ``Saver.save`` writes by default, as TF1 inference scripts use them (a fresh
process rebuilds the model from the file and restores the checkpoint), and hostile
``.meta`` files (data only: never unpickled, never evaluated; a clear error)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

import gradflow as gf
from gradflow.graph_io import GraphDefError
from gradflow.graph_io._base import DamagedGraphDefError, GraphDefNotFoundError

X = (np.arange(24, dtype=np.float32).reshape(8, 3) / 10)
Y = X.sum(1, keepdims=True)


def _train_and_save(prefix, steps=5):
    """A TF1 regression program: trains, saves every step, returns its predictions."""
    graph = gf.Graph()
    with graph.as_default():
        x = gf.placeholder(gf.float32, [None, 3], name="x")
        y_ = gf.placeholder(gf.float32, [None, 1], name="y_")
        w = gf.Variable(gf.random_normal([3, 1], seed=1), name="w")
        b = gf.get_variable("b", [1], initializer=gf.zeros_initializer())
        y = gf.add(gf.matmul(x, w), b, name="y")
        loss = gf.reduce_mean(gf.square(y - y_), name="loss")
        step = gf.train.get_or_create_global_step()
        train = gf.train.AdamOptimizer(0.1).minimize(loss, global_step=step)
        gf.add_to_collection("train_op", train)
        gf.add_to_collection("inputs", x)
        gf.add_to_collection("settings", 0.5)
        gf.add_to_collection("settings", "adam")
        saver = gf.train.Saver(max_to_keep=2)
        with gf.Session() as sess:
            sess.run(gf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train, {x: X, y_: Y})
                path = saver.save(sess, prefix, global_step=step)
            pred = sess.run(y, {x: X})
            sess.run(train, {x: X, y_: Y})
            after_one_more = sess.run(y, {x: X})
    return path, pred, after_one_more


INFERENCE = """
import sys
import numpy as np
import gradflow as tf
saver = tf.train.import_meta_graph(sys.argv[1] + ".meta")
graph = tf.get_default_graph()
x = np.arange(24, dtype=np.float32).reshape(8, 3) / 10
with tf.Session() as sess:
    saver.restore(sess, sys.argv[1])
    y = sess.run(graph.get_tensor_by_name("y:0"), feed_dict={"x:0": x})
np.save(sys.argv[2], y)
"""


def test_a_fresh_process_restores_the_model_from_the_meta_graph(tmp_path):
    path, pred, _ = _train_and_save(str(tmp_path / "m.ckpt"))
    assert path == str(tmp_path / "m.ckpt-5") and os.path.isfile(path + ".meta")
    script = tmp_path / "infer.py"
    script.write_text(textwrap.dedent(INFERENCE))
    out = tmp_path / "y.npy"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script), path, str(out)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(np.load(out), pred)


def test_collections_train_op_and_global_step_come_back(tmp_path):
    path, pred, after_one_more = _train_and_save(str(tmp_path / "m.ckpt"))
    with gf.Graph().as_default() as graph:
        saver = gf.train.import_meta_graph(path + ".meta")
        assert gf.get_collection("settings") == [0.5, "adam"]
        assert [t.name for t in gf.get_collection("inputs")] == ["x"]
        assert [v.name for v in gf.trainable_variables()] == ["w", "b"]
        assert "global_step" in [v.name for v in gf.global_variables()]
        assert gf.train.get_global_step().name == "global_step"
        train = gf.get_collection("train_op")[0]
        with gf.Session() as sess:
            saver.restore(sess, path)
            assert sess.run(gf.train.get_global_step()) == 5
            np.testing.assert_array_equal(sess.run("y:0", {"x:0": X}), pred)
            sess.run(train, {"x:0": X, "y_:0": Y})  # Adam's slots were restored too
            np.testing.assert_allclose(sess.run(graph.get_tensor_by_name("y:0"), {"x:0": X}),
                                       after_one_more, rtol=1e-6)
            assert sess.run(gf.train.get_global_step()) == 6


def test_import_scope_prefixes_names_and_the_saver_reads_the_unscoped_checkpoint(tmp_path):
    path, pred, _ = _train_and_save(str(tmp_path / "m.ckpt"))
    with gf.Graph().as_default() as graph:
        saver = gf.train.import_meta_graph(path + ".meta", import_scope="net",
                                           clear_devices=True)
        assert {v.name for v in gf.trainable_variables()} == {"net/w", "net/b"}
        assert [t.name for t in gf.get_collection("inputs")] == ["net/x"]
        with gf.Session() as sess:
            saver.restore(sess, path)
            got = sess.run(graph.get_tensor_by_name("net/y:0"), {"net/x:0": X})
    np.testing.assert_array_equal(got, pred)


def test_export_and_import_without_a_checkpoint_initialize_from_the_file(tmp_path):
    with gf.Graph().as_default():
        w = gf.Variable([[1.0], [2.0], [3.0]], name="w")
        x = gf.placeholder(gf.float32, [None, 3], name="x")
        gf.matmul(x, w, name="y")
        gf.add_to_collection("init", gf.global_variables_initializer())
        meta = gf.train.export_meta_graph(str(tmp_path / "m.json"), as_text=True)
    assert isinstance(meta, gf.MetaGraphDef) and "init" in meta.collection_def
    assert json.loads((tmp_path / "m.json").read_text())["format"] == "gradflow.MetaGraphDef"
    with gf.Graph().as_default():
        saver = gf.train.import_meta_graph(str(tmp_path / "m.json"))
        assert isinstance(saver, gf.train.Saver)
        with gf.Session() as sess:
            sess.run(gf.get_collection("init")[0])
            np.testing.assert_allclose(sess.run("y:0", {"x:0": X[:2]}),
                                       X[:2] @ [[1], [2], [3]], rtol=1e-6)
    again = gf.MetaGraphDef()
    again.ParseFromString(meta.SerializeToString())
    assert again.collection_def == meta.collection_def


def test_saver_methods_and_collection_list(tmp_path):
    with gf.Graph().as_default():
        v = gf.Variable(1.0, name="v")
        gf.add_to_collection("keep", v)
        gf.add_to_collection("drop", v)
        saver = gf.train.Saver({"renamed": v}, max_to_keep=3)
        assert saver.as_saver_def()["variables"] == [["renamed", "v"]]
        meta = saver.export_meta_graph(str(tmp_path / "m.meta"), collection_list=["keep"])
        assert set(meta.collection_def) == {"keep"}
        assert gf.train.export_meta_graph(saver_def=saver.saver_def).saver_def["max_to_keep"] == 3
        with gf.Session() as sess:
            sess.run(v.assign(7.0))
            saver.save(sess, str(tmp_path / "ck"), write_meta_graph=False)
    assert not os.path.exists(tmp_path / "ck.meta")
    with gf.Graph().as_default():
        restored = gf.train.import_meta_graph(str(tmp_path / "m.meta"))
        with gf.Session() as sess:
            restored.restore(sess, str(tmp_path / "ck"))
            assert sess.run("v:0") == 7.0


def test_rotation_deletes_the_meta_graphs_of_deleted_checkpoints(tmp_path):
    with gf.Graph().as_default():
        gf.Variable(1.0, name="v")
        saver = gf.train.Saver(max_to_keep=2)
        with gf.Session() as sess:
            for step in range(4):
                saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint"] + sorted(
        p + s for p in ("m-2", "m-3") for s in (".data-00000-of-00001", ".index", ".meta"))


def test_a_graph_with_a_loop_saves_its_checkpoint_without_a_meta_graph(tmp_path, caplog):
    with gf.Graph().as_default():
        v = gf.Variable(1.0, name="v")
        gf.while_loop(lambda i: i < 3.0, lambda i: i + v, [0.0])
        saver = gf.train.Saver()
        with gf.Session() as sess:
            path = saver.save(sess, str(tmp_path / "m"))
        with pytest.raises(GraphDefError, match="sub-graphs"):
            gf.train.export_meta_graph(str(tmp_path / "x.meta"))
    assert os.path.isfile(path + ".index") and not os.path.exists(path + ".meta")
    assert "no meta graph is written" in caplog.text
    with pytest.raises(GraphDefNotFoundError, match="the checkpoint .* is there"):
        gf.train.import_meta_graph(path + ".meta")


# -- hostile files ---------------------------------------------------------------------


def _meta_bytes(tmp_path):
    with gf.Graph().as_default():
        gf.Variable(1.0, name="v")
        gf.add_to_collection("c", 1)
        return gf.train.export_meta_graph().to_text()


def _import_text(text, tmp_path):
    path = tmp_path / "bad.meta"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with gf.Graph().as_default():
        gf.train.import_meta_graph(str(path))


@pytest.mark.parametrize("change, message", [
    (lambda d: d["collections"].update(c=[{"node": "nope"}]), "names the node 'nope'"),
    (lambda d: d["collections"].update(c=[{"code": "import os"}]), "neither"),
    (lambda d: d["collections"].update(c=[{"value": {"__reduce__": 1}}]), "neither"),
    (lambda d: d.update(saver={"variables": [["v", "gone"]]}), "saves the node 'gone'"),
    (lambda d: d.update(saver={"variables": [], "max_to_keep": -1}), "settings are damaged"),
    (lambda d: d.update(extra=1), "unknown fields"),
    (lambda d: d.update(version=99), "upgrade gradflow"),
    (lambda d: d["graph"]["node"][0].update(op="os.system"), "unknown op 'os.system'"),
    (lambda d: d.update(format="gradflow.GraphDef"), "not a gradflow.MetaGraphDef"),
])
def test_a_changed_meta_graph_is_refused_with_the_fault_named(tmp_path, change, message):
    doc = json.loads(_meta_bytes(tmp_path))
    change(doc)
    with pytest.raises(GraphDefError, match=message):
        _import_text(json.dumps(doc), tmp_path)


def test_tensorflow_protobuf_pickle_and_damaged_bytes_are_refused(tmp_path):
    with pytest.raises(GraphDefError, match="not a gradflow meta graph.*TensorFlow"):
        _import_text(b"\n\x0b\n\x05serve\x12\x02v1\x1a\x00", tmp_path)
    with pytest.raises(DamagedGraphDefError):
        _import_text(_meta_bytes(tmp_path)[:50], tmp_path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        header = json.dumps({"format": "gradflow.MetaGraphDef"}).encode()
        for key, array in (("__graph__", np.frombuffer(header, np.uint8)),
                           ("a0", np.array([print], dtype=object))):
            member = io.BytesIO()
            np.save(member, array, allow_pickle=True)
            archive.writestr(key + ".npy", member.getvalue())
    with pytest.raises(GraphDefError, match="pickle"):
        _import_text(buffer.getvalue(), tmp_path)
    with pytest.raises(TypeError, match="file name or a gf.MetaGraphDef"):
        gf.train.import_meta_graph(42)


def test_tensors_found_through_get_operation_by_name_after_import_meta_graph(tmp_path):
    # a text classifier's evaluation script: placeholders and a scoped prediction are
    # looked up as operations, and their first output is fed and fetched
    prefix = str(tmp_path / "model")
    words = np.array([[1, 0, 2, 3], [3, 3, 0, 1]], np.int32)
    with gf.Graph().as_default() as graph:
        input_x = gf.placeholder(gf.int32, [None, 4], name="input_x")
        keep = gf.placeholder(gf.float32, name="dropout_keep_prob")
        with gf.name_scope("output"):
            w = gf.Variable(gf.random_normal([4, 3], seed=3), name="W")
            scores = gf.nn.dropout(gf.matmul(gf.cast(input_x, gf.float32), w), keep)
            gf.argmax(scores, 1, name="predictions")
        init = gf.global_variables_initializer()
        assert graph.get_operation_by_name(init.name).outputs == []  # an op with no value
        with gf.Session() as sess:
            sess.run(init)
            expected = sess.run("output/predictions:0", {input_x: words, keep: 1.0})
            gf.train.Saver().save(sess, prefix)
    graph = gf.Graph()
    with graph.as_default():
        sess = gf.Session()
        with sess.as_default():
            saver = gf.train.import_meta_graph(f"{prefix}.meta")
            saver.restore(sess, prefix)
            input_x = graph.get_operation_by_name("input_x").outputs[0]
            keep = graph.get_operation_by_name("dropout_keep_prob").outputs[0]
            op = graph.get_operation_by_name("output/predictions")
            predictions = op.outputs[0]
            got = sess.run(predictions, {input_x: words, keep: 1.0})
    np.testing.assert_array_equal(got, expected)
    assert op.name == "output/predictions" and op.values() == (predictions,)
    assert predictions is graph.get_tensor_by_name("output/predictions:0")
    assert input_x.dtype == gf.int32 and input_x.shape.as_list() == [None, 4]
    with pytest.raises(ValueError, match="'input_x:0' names a tensor, not an operation"):
        graph.get_operation_by_name("input_x:0")
    with pytest.raises(KeyError, match="no tensor named 'output/prediction'"):
        graph.get_operation_by_name("output/prediction")
