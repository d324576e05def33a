"""Attacks on the model files gradflow reads: SavedModels, GraphDefs, gradflow's and
TensorFlow's checkpoints and the ``checkpoint`` index. Each test is written as the
attack; on the code before the fix it succeeded (a silent overwrite, a raw Python
exception, a file written where the file said). Every failure is a gradflow error of
the kind it is, naming the file and the fault."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import shutil
import sys
import time
import zipfile

import numpy as np
import pytest
from test_saver import write_old_checkpoint

import gradflow as gf
from gradflow import protowire
from gradflow.errors import (
    DataLossError,
    GradflowError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
)
from gradflow.graph_io import GraphDefError
from gradflow.prim.registry import REGISTRY
from gradflow.saved_model import SavedModelError
from gradflow.train import tf_checkpoint
from gradflow.train.saver import CheckpointError

SERVING = gf.saved_model.tag_constants.SERVING
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
ADAM = os.path.join(DATA, "tf_checkpoints", "adam")


# -- files to attack, and tools to change them ------------------------------------------


def small_model(folder):
    """A SavedModel of y = x @ w (w a variable) at ``folder``; returns its path."""
    with gf.Graph().as_default() as g:
        x = gf.placeholder(gf.float32, (None, 2), name="x")
        w = gf.Variable(np.ones((2, 2), np.float32), name="w")
        y = gf.reshape(gf.matmul(x, w) + np.float32(0.5), (-1,), name="y")
        gf.reduce_sum(y, axis=0, name="total")
        with gf.Session(graph=g) as sess:
            sess.run(gf.global_variables_initializer())
            gf.saved_model.simple_save(sess, str(folder), {"x": x}, {"y": y})
    return str(folder)


def rewrite_npz(path, change):
    """Apply ``change(dict of arrays)`` to the .npz at ``path``."""
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    change(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    with open(path, "wb") as f:
        f.write(buffer.getvalue())


def header_of(arrays):
    return json.loads(arrays["__header__"].tobytes())


def set_header(arrays, header):
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), np.uint8)


def field(number, kind, value):
    """One protobuf field: ``kind`` 0 (varint), 1 (fixed64), 2 (bytes) or 5 (fixed32)."""
    key = protowire.write_varint(number << 3 | kind)
    if kind == 0:
        return key + protowire.write_varint(value)
    if kind in (1, 5):
        return key + value.to_bytes(8 if kind == 1 else 4, "little")
    return key + protowire.write_varint(len(value)) + value


def tf_index_entries(path):
    """``[(key, value)]`` of a TensorFlow checkpoint's ``.index`` table."""
    data = open(path, "rb").read()
    footer = data[-48:]
    _, pos = tf_checkpoint._handle(footer, 0)
    index_block, _ = tf_checkpoint._handle(footer, pos)
    entries = []
    for _, handle in tf_checkpoint._block_entries(tf_checkpoint._block(data, *index_block)):
        block = tf_checkpoint._block(data, *tf_checkpoint._handle(handle, 0)[0])
        entries += list(tf_checkpoint._block_entries(block))
    return entries


def tf_table(entries):
    """A TensorFlow table (an ``.index``) holding ``entries``, every block's checksum
    right: one data block, an empty metaindex, the index block and the footer."""
    data = bytearray()

    def block(pairs):
        raw = b"".join(protowire.write_varint(0) + protowire.write_varint(len(k))
                       + protowire.write_varint(len(v)) + k + v for k, v in pairs)
        raw += (0).to_bytes(4, "little") + (1).to_bytes(4, "little")  # one restart, at 0
        handle = protowire.write_varint(len(data)) + protowire.write_varint(len(raw))
        data.extend(raw + b"\0")
        data.extend(protowire.masked_crc32c(raw + b"\0").to_bytes(4, "little"))
        return handle

    data_handle = block(entries)
    meta_handle = block([])
    index_handle = block([(entries[-1][0], data_handle)])
    footer = (meta_handle + index_handle).ljust(40, b"\0")
    return bytes(data) + footer + tf_checkpoint._MAGIC.to_bytes(8, "little")


def adam_copy(tmp_path):
    folder = tmp_path / "adam"
    shutil.copytree(ADAM, folder)
    return folder, str(folder / "model.ckpt-3")


def adam_model():
    """The variables of the Adam fixture, as ``test_tf_checkpoint.model`` makes them."""
    from test_tf_checkpoint import model

    return model()


# -- 1. a SavedModel's variables file writes only the saved graph's variables -------------


def _plant(folder, name, value):
    """Add a value for ``name`` to the SavedModel's variables file, header and all."""
    def change(arrays):
        header = header_of(arrays)
        arrays[f"v{len(header['names'])}"] = value
        header["names"].append(name)
        set_header(arrays, header)

    rewrite_npz(os.path.join(folder, "variables", "variables.npz"), change)


def test_a_saved_models_variables_file_cannot_overwrite_the_users_variable(tmp_path):
    folder = small_model(tmp_path / "m")
    _plant(folder, "secret", np.full(3, 666, np.float32))
    with gf.Graph().as_default() as g:
        secret = gf.Variable(np.zeros(3, np.float32), name="secret")
        with gf.Session(graph=g) as sess:
            sess.run(secret.initializer)
            with pytest.raises(SavedModelError, match=r"variables\.npz holds values for "
                               r"'secret', which the saved graph does not define"):
                gf.saved_model.loader.load(sess, [SERVING], folder)
            np.testing.assert_array_equal(sess.run(secret), np.zeros(3))


def test_a_value_for_a_name_no_graph_has_is_a_saved_model_error_not_a_key_error(tmp_path):
    folder = small_model(tmp_path / "m")
    _plant(folder, "nowhere", np.float32(1))
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(SavedModelError, match=r"holds values for 'nowhere'.*nothing was "
                                                 r"loaded") as err:
        gf.saved_model.loader.load(sess, [SERVING], folder)
    assert folder in str(err.value)


def test_a_value_for_a_placeholder_of_the_saved_graph_is_refused(tmp_path):
    folder = small_model(tmp_path / "m")
    _plant(folder, "x", np.zeros((1, 2), np.float32))
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(SavedModelError, match="holds values for 'x'"):
        gf.saved_model.loader.load(sess, [SERVING], folder)


# -- 2. tampered attributes: the node and the file named, never AttributeError -----------


def _graph_file(tmp_path, as_text=True):
    with gf.Graph().as_default() as g:
        x = gf.placeholder(gf.float32, (None, 2), name="x")
        c = gf.constant(np.ones((2, 2), np.float32), name="c")
        gf.reshape(gf.matmul(x, c), (-1,), name="r")
        gf.reduce_sum(x, axis=1, name="s")
        return gf.train.write_graph(g, str(tmp_path), "g.json" if as_text else "g.npz",
                                    as_text=as_text)


def _node(doc, name):
    return next(r for r in doc["node"] if r["name"] == name)


TAMPERED = {
    "constant_value_null": (lambda d: _node(d, "c")["attrs"].update(value=None),
                            r"node 1 \('c'\) has the attribute 'value' = None, which must be "
                            r"an array"),
    "reshape_shape_null": (lambda d: _node(d, "r")["attrs"].update(shape=None),
                           r"\('r'\) has the attribute 'shape' = None"),
    "numeric_dtype": (lambda d: _node(d, "x")["attrs"].update(dtype=3),
                      r"\('x'\) has the attribute 'dtype' = 3, which must be a dtype"),
    "string_dtype": (lambda d: _node(d, "c")["attrs"].update(dtype="float32"),
                     r"\('c'\) has the attribute 'dtype' = 'float32'"),
    "string_for_a_number": (lambda d: _node(d, "s")["attrs"].update(axes={"tuple": ["1"]}),
                            r"\('s'\) has the attribute 'axes'"),
    "number_for_a_shape": (lambda d: _node(d, "x")["attrs"].update(shape=7),
                           r"\('x'\) has the attribute 'shape' = 7"),
}


@pytest.mark.parametrize("case", sorted(TAMPERED))
def test_a_tampered_attribute_in_a_graph_file_names_the_node_and_file(tmp_path, case):
    change, message = TAMPERED[case]
    path = _graph_file(tmp_path)
    doc = json.load(open(path))
    change(doc)
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(GraphDefError, match=message) as err:
        with gf.Graph().as_default():
            gf.import_graph_def(gf.GraphDef.read(path), name="")
    assert isinstance(err.value, InvalidArgumentError)
    assert path in str(err.value)


@pytest.mark.parametrize("case", ["constant_value_null", "numeric_dtype"])
def test_a_tampered_attribute_in_a_saved_model_names_the_node_and_file(tmp_path, case):
    folder = small_model(tmp_path / "m")
    path = os.path.join(folder, "saved_model.json")
    doc = json.load(open(path))
    graph = doc["meta_graphs"][0]["graph"]
    record = next(r for r in graph["node"] if r["op"] == ("constant" if "constant" in case
                                                          else "placeholder"))
    record["attrs"].update(value=None) if "constant" in case else record["attrs"].update(
        dtype=1)
    json.dump(doc, open(path, "w"))
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(SavedModelError, match=f"{record['name']!r}.*has the attribute"):
        gf.saved_model.loader.load(sess, [SERVING], folder)


@pytest.mark.parametrize("fault", [AttributeError("'NoneType' object has no attribute 'x'"),
                                   ZeroDivisionError("division by zero"),
                                   RecursionError("maximum recursion depth exceeded")])
def test_any_fault_of_an_ops_rule_on_a_files_values_is_named(tmp_path, monkeypatch, fault):
    """Whatever a shape rule raises on what a file gave it (here a rule made to fail as
    rules fail on values nobody foresaw) is the file's fault, named as such."""
    path = _graph_file(tmp_path)

    def broken(*args, **kwargs):
        raise fault

    monkeypatch.setitem(REGISTRY, "matmul", dataclasses.replace(REGISTRY["matmul"],
                                                                infer=broken))
    with pytest.raises(GraphDefError, match=rf"{path}: node 'matmul' \(matmul\) cannot be "
                                            rf"rebuilt: {type(fault).__name__}"):
        with gf.Graph().as_default():
            gf.import_graph_def(gf.GraphDef.read(path), name="")


def test_memory_asked_by_a_files_values_is_resource_exhausted_naming_the_node(tmp_path,
                                                                              monkeypatch):
    path = _graph_file(tmp_path)

    def greedy(*args, **kwargs):
        raise MemoryError

    monkeypatch.setitem(REGISTRY, "matmul", dataclasses.replace(REGISTRY["matmul"],
                                                                infer=greedy))
    with pytest.raises(ResourceExhaustedError, match=rf"{path}: node 'matmul'"):
        with gf.Graph().as_default():
            gf.import_graph_def(gf.GraphDef.read(path), name="")


# -- 3. tf.print survives write_graph and import_graph_def, and never writes a file ------


@pytest.mark.parametrize("as_text", [True, False], ids=["text", "binary"])
def test_a_graph_with_tf_print_round_trips(tmp_path, capsys, caplog, as_text):
    with gf.Graph().as_default() as g:
        x = gf.placeholder(gf.float32, (2,), name="x")
        gf.print("out:", x, output_stream=sys.stdout, name="to_stdout")
        gf.print("err:", x, name="to_stderr")
        gf.print("log:", x, output_stream=gf.logging.warning, name="to_log")
        path = gf.train.write_graph(g, str(tmp_path), "g", as_text=as_text)
    with gf.Graph().as_default() as g2:
        gf.import_graph_def(gf.GraphDef.read(path), name="")
    with gf.Session(graph=g2) as sess, caplog.at_level(logging.WARNING):
        sess.run([g2.get_operation_by_name(n) for n in ("to_stdout", "to_stderr", "to_log")],
                 {g2.get_tensor_by_name("x:0"): [1.0, 2.0]})
    out = capsys.readouterr()
    assert out.out == "out: [1. 2.]\n" and out.err == "err: [1. 2.]\n"
    assert "log: [1. 2.]" in caplog.text


def test_a_planted_print_to_a_file_is_refused_and_writes_nothing(tmp_path):
    victim = tmp_path.parent / f"{tmp_path.name}-victim.txt"
    with gf.Graph().as_default() as g:
        x = gf.placeholder(gf.float32, (2,), name="x")
        gf.print("x:", x, name="p")
        path = gf.train.write_graph(g, str(tmp_path), "g.json")
    doc = json.load(open(path))
    _node(doc, "p/print")["attrs"]["output_stream"] = f"file://{victim}"
    json.dump(doc, open(path, "w"))
    with pytest.raises(GraphDefError, match=r"'output_stream' = 'file://.*a graph read from "
                                            r"a file never writes to a file"):
        gf.GraphDef.read(path)
    assert not victim.exists()


def test_a_print_template_pointing_past_its_inputs_is_refused(tmp_path):
    with gf.Graph().as_default() as g:
        x = gf.placeholder(gf.float32, (2,), name="x")
        gf.print("x:", x, name="p")
        path = gf.train.write_graph(g, str(tmp_path), "g.json")
    doc = json.load(open(path))
    _node(doc, "p/print")["attrs"]["template"] = {"tuple": [{"tuple": ["tensor", 5]}]}
    json.dump(doc, open(path, "w"))
    with pytest.raises(GraphDefError, match=r"'p/print' \(print\) cannot be rebuilt: .*"
                                            r"template item \('tensor', 5\)"):
        with gf.Graph().as_default():
            gf.import_graph_def(gf.GraphDef.read(path), name="")


# -- 4. TensorFlow's index: a field of the wrong wire type under a valid checksum --------


def _retype(entries, name, number, kind, value):
    """``entries`` with field ``number`` of tensor ``name``'s entry replaced."""
    out = []
    for key, entry in entries:
        if key == name.encode():
            kept = b"".join(field(n, k, v) for n, k, v in protowire.fields(entry)
                            if n != number)
            entry = kept + field(number, kind, value)
        out.append((key, entry))
    return out


@pytest.mark.parametrize("number, kind, value, name", [
    (2, 0, 3, "shape"), (4, 2, b"\x10", "offset"), (1, 2, b"x", "dtype"),
    (6, 0, 1, "crc32c"), (5, 5, 7, "size")])
def test_a_wrong_wire_type_in_tensorflows_index_is_data_loss_naming_the_field(
        tmp_path, number, kind, value, name):
    folder, prefix = adam_copy(tmp_path)
    entries = _retype(tf_index_entries(prefix + ".index"), "dense/kernel", number, kind, value)
    with open(prefix + ".index", "wb") as f:
        f.write(tf_table(entries))
    want = (rf"{prefix}\.index is damaged: the entry of tensor 'dense/kernel': its field "
            rf"'{name}' is")
    with pytest.raises(DataLossError, match=want):
        gf.train.list_variables(str(folder))
    with gf.Graph().as_default():
        adam_model()
        saver = gf.train.Saver()
        with gf.Session() as sess, pytest.raises(CheckpointError, match=want) as err:
            saver.restore(sess, prefix)
    assert isinstance(err.value, DataLossError)


def test_a_wrong_wire_type_in_the_bundle_header_is_data_loss(tmp_path):
    folder, prefix = adam_copy(tmp_path)
    entries = [(k, field(1, 2, b"\x01") if k == b"" else v)
               for k, v in tf_index_entries(prefix + ".index")]
    with open(prefix + ".index", "wb") as f:
        f.write(tf_table(entries))
    with pytest.raises(DataLossError, match=r"the bundle header: its field 'num_shards'"):
        gf.train.list_variables(str(folder))


def test_the_rebuilt_table_of_the_fixture_reads_as_the_original(tmp_path):
    """The test's table writer is right: the fixture's entries rewritten read the same."""
    folder, prefix = adam_copy(tmp_path)
    want = gf.train.list_variables(str(folder))
    table = tf_table(tf_index_entries(prefix + ".index"))
    with open(prefix + ".index", "wb") as f:
        f.write(table)
    assert gf.train.list_variables(str(folder)) == want


# -- 5. the header of an earlier gradflow's checkpoint: missing or mistyped fields ----------


def _saved_checkpoint(tmp_path):
    """A checkpoint as gradflow wrote it before it wrote TensorFlow's layout (one .npz
    with a JSON header), which restores still."""
    path = str(tmp_path / "model-1")
    write_old_checkpoint(path, {"w": np.arange(3, dtype=np.float32)}, 1)
    return path


HEADERS = {
    "no_names": (lambda h: h.pop("names"), "'names' is not a list"),
    "names_a_string": (lambda h: h.update(names="w"), "'names' is not a list"),
    "no_shapes": (lambda h: h.pop("shapes"), "'shapes' is not a list"),
    "shapes_of_strings": (lambda h: h.update(shapes=[["3"]]), "'shapes' is not a list"),
    "dtypes_an_int": (lambda h: h.update(dtypes=3), "'dtypes' is not a list"),
    "wrong_shape": (lambda h: h.update(shapes=[[4]]), "'w' is not of the shape its header"),
    "unlisted_array": (lambda h: h.update(names=["v"]), "its header lists 'v' and not 'w'"),
    "step_a_string": (lambda h: h.update(global_step="1"), "'global_step' is '1'"),
    "header_a_list": (None, "format version None"),
}


@pytest.mark.parametrize("case", sorted(HEADERS))
def test_a_mistyped_checkpoint_header_is_an_error_naming_the_file(tmp_path, case):
    change, message = HEADERS[case]
    path = _saved_checkpoint(tmp_path)

    def tamper(arrays):
        header = header_of(arrays)
        if change is not None:
            change(header)
        set_header(arrays, header if change is not None else [])

    rewrite_npz(path, tamper)
    with pytest.raises(CheckpointError, match=message) as err:
        gf.train.list_variables(path)
    assert path in str(err.value)
    with gf.Graph().as_default():
        w = gf.Variable(np.full(3, 7.0, np.float32), name="w")
        with gf.Session() as sess:
            sess.run(w.initializer)
            with pytest.raises(CheckpointError, match=message):
                gf.train.Saver().restore(sess, path)
            np.testing.assert_array_equal(sess.run(w), [7, 7, 7])


def npz_claiming(path, key, shape, descr=None, fortran=False):
    """Rewrite the .npz at ``path`` so that array ``key``'s .npy header claims ``shape``
    (and the dtype ``descr``, when given); its data unchanged."""
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    header = {"descr": descr or np.lib.format.dtype_to_descr(arrays[key].dtype),
              "fortran_order": fortran, "shape": shape}
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, header)
    buffer = io.BytesIO()
    np.savez(buffer, **{k: a for k, a in arrays.items() if k != key})
    with zipfile.ZipFile(buffer, "a") as archive:
        archive.writestr(f"{key}.npy", npy.getvalue() + arrays[key].tobytes())
    with open(path, "wb") as f:
        f.write(buffer.getvalue())


def test_an_array_claiming_a_huge_shape_is_refused_before_it_is_allocated(tmp_path):
    """The .npy header of an array in a checkpoint, a SavedModel and a GraphDef claims
    10**12 elements: refused as damaged at once, never a MemoryError."""
    start = time.perf_counter()
    path = _saved_checkpoint(tmp_path)
    npz_claiming(path, "w", (10 ** 12,))
    with gf.Graph().as_default():
        gf.Variable(np.zeros(3, np.float32), name="w")
        with gf.Session() as sess, pytest.raises(DataLossError, match="array 'w' claims"):
            gf.train.Saver().restore(sess, path)
    folder = small_model(tmp_path / "m")
    npz_claiming(os.path.join(folder, "variables", "variables.npz"), "v0", (10 ** 10, 2))
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(DataLossError, match=r"variables\.npz is damaged: array 'v0' claims"):
        gf.saved_model.loader.load(sess, [SERVING], folder)
    graph = _graph_file(tmp_path, as_text=False)
    npz_claiming(graph, "a0", (10 ** 10, 2))
    with pytest.raises(DataLossError, match="array 'a0' claims"):
        gf.GraphDef.read(graph)
    assert time.perf_counter() - start < 5


# -- 6. the ``checkpoint`` index ------------------------------------------------------------


@pytest.mark.parametrize("index", [
    {"model_checkpoint_path": "model-1", "all_model_checkpoint_paths": ["model-1"],
     "all_model_checkpoint_timestamps": ["yesterday"]},
    {"model_checkpoint_path": "model-1", "all_model_checkpoint_paths": ["model-1"],
     "last_preserved_timestamp": {"t": 1}},
    {"model_checkpoint_path": "model-1", "all_model_checkpoint_paths": ["model-1"],
     "all_model_checkpoint_timestamps": [10 ** 400]},
    {"model_checkpoint_path": 5, "all_model_checkpoint_paths": ["model-1"]},
], ids=["stamp_text", "preserved_object", "stamp_huge", "newest_number"])
def test_a_mistyped_index_is_an_error_and_a_save_replaces_it_with_a_warning(tmp_path, caplog,
                                                                           index):
    _saved_checkpoint(tmp_path)
    (tmp_path / "checkpoint").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"checkpoint is damaged: its '"):
        gf.train.latest_checkpoint(str(tmp_path))
    with gf.Graph().as_default():
        gf.Variable(1.0, name="w")
        with gf.Session() as sess, caplog.at_level(logging.WARNING), \
                pytest.warns(UserWarning, match="was damaged"):
            gf.train.Saver().save(sess, str(tmp_path / "model"), global_step=2)
    assert "was damaged" in caplog.text
    assert gf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model-2")


def test_a_100kb_line_of_a_tensorflow_index_is_refused_quickly(tmp_path):
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "' + "(" * 100_000 + '"\n')
    start = time.perf_counter()
    assert tf_checkpoint.read_index_text(open(tmp_path / "checkpoint", "rb").read())[
        "model_checkpoint_path"] == "(" * 100_000
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "a" ' + "-" * 100_000 + ' "\n')
    with pytest.raises(CheckpointError, match="line 1: model_checkpoint_path is not a valid "
                                              "string"):
        gf.train.latest_checkpoint(str(tmp_path))
    assert time.perf_counter() - start < 2


def test_a_huge_index_file_is_refused_unread(tmp_path):
    with open(tmp_path / "checkpoint", "wb") as f:
        f.write(b'{"all_model_checkpoint_paths": ["' + b"a" * (2 << 20) + b'"]}')
    with pytest.raises(CheckpointError, match="larger than 1048576 bytes"):
        gf.train.latest_checkpoint(str(tmp_path))


# -- missing files are NotFoundError ----------------------------------------------------------


def test_missing_files_are_not_found_errors(tmp_path):
    with pytest.raises(NotFoundError, match="no such file"):
        gf.GraphDef.read(tmp_path / "nothing.json")
    with gf.Session(graph=gf.Graph()) as sess, pytest.raises(NotFoundError):
        gf.saved_model.loader.load(sess, [SERVING], str(tmp_path / "nothing"))
    with gf.Graph().as_default():
        gf.Variable(1.0, name="w")
        with gf.Session() as sess, pytest.raises(NotFoundError, match="no such file"):
            gf.train.Saver().restore(sess, str(tmp_path / "nothing"))
    folder = small_model(tmp_path / "m")
    os.remove(os.path.join(folder, "variables", "variables.npz"))
    with gf.Session(graph=gf.Graph()) as sess, \
            pytest.raises(NotFoundError, match=r"variables\.npz is missing"):
        gf.saved_model.loader.load(sess, [SERVING], folder)


def test_every_reader_error_is_a_gradflow_error():
    """The classes the readers raise are gradflow's, of the kind the fault is."""
    from gradflow.saved_model._files import DamagedSavedModelError, SavedModelNotFoundError
    from gradflow.train.checkpoint_files import CheckpointNotFoundError, DamagedCheckpointError

    assert issubclass(DamagedCheckpointError, DataLossError)
    assert issubclass(DamagedCheckpointError, CheckpointError)
    assert issubclass(CheckpointNotFoundError, NotFoundError)
    assert issubclass(DamagedSavedModelError, DataLossError)
    assert issubclass(SavedModelNotFoundError, NotFoundError)
    assert issubclass(tf_checkpoint.TFCheckpointError, GradflowError)
    assert DamagedCheckpointError("x").error_code == 15
