"""A fuzzer over the files gradflow reads: valid files, as gradflow and TensorFlow wrote
them, mutated, then read the ways a user reads them.

The seeds: a ``Saver`` checkpoint (TensorFlow's layout: index, data) and its text
``checkpoint`` index; an earlier gradflow's single-file checkpoint and its JSON index; a
SavedModel folder;
``write_graph``'s GraphDef as JSON text and as ``.npz``; TensorFlow's checkpoint of
``tests/data/tf_checkpoints/adam`` (index, data, text index); TensorFlow's TFRecord
files of ``tests/data/tfrecords``. The mutations: flipped bits, cuts, spliced and
inserted bytes, 4- and 8-byte words made huge; in JSON (a SavedModel, a GraphDef, an
index, the header of a checkpoint or of a SavedModel's variables) a value anywhere
replaced by a JSON value of any type, a key dropped or added; an array of an ``.npz``
claiming another shape or dtype; a field of TensorFlow's index re-encoded with another
wire type or value under a right checksum; a line of TensorFlow's text index replaced.

Every outcome is a correct load or a gradflow error (a ``GradflowError``); never a raw
Python exception, a hang (more than 1 s of CPU for a case), a file written outside the
case's folder, or a change to a variable the file has no right to (a bystander
variable, and on an error every variable, keep their values).
``GRADFLOW_FILE_FUZZ_EXAMPLES`` sets the number of examples of each format (the normal
run: 100; the lead's nox session runs 5000).
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import gc
import io
import json
import logging
import os
import shutil
import signal
import tempfile
import time
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_files import field, npz_claiming, rewrite_npz, tf_index_entries, tf_table
from test_saver import write_old_checkpoint

import gradflow as gf
from gradflow import protowire
from gradflow.errors import GradflowError

EXAMPLES = int(os.environ.get("GRADFLOW_FILE_FUZZ_EXAMPLES", "100"))
CPU_LIMIT = 1.0  # seconds of CPU a case may take
WALL_LIMIT = 20  # seconds before a case is stopped as a hang
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
SERVING = gf.saved_model.tag_constants.SERVING
OUTCOMES: collections.Counter = collections.Counter()
SLOWEST = [0.0, ""]  # the most CPU a case took, and the case
# GRADFLOW_FILE_FUZZ_RANDOM=1 draws other examples on each run (with pytest's
# --hypothesis-seed=N to repeat one); by default the same examples every run
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=not os.environ.get("GRADFLOW_FILE_FUZZ_RANDOM"),
                suppress_health_check=list(HealthCheck))
SENTINEL = np.array([-7.0, -7.0], np.float32)


# -- the seeds ----------------------------------------------------------------------------


def _graph_with_everything():
    """A graph of the kinds of node a GraphDef holds: placeholders, constants (arrays),
    a variable, shapes, axes, dtypes, a cast, a slice, prints to each stream, an assert."""
    g = gf.Graph()
    with g.as_default():
        x = gf.placeholder(gf.float32, (None, 3), name="x")
        w = gf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
        y = gf.reshape(gf.matmul(x, w) + np.float32(0.5), (-1,), name="y")
        s = gf.reduce_sum(y, axis=0, keepdims=True, name="s")
        c = gf.cast(gf.argmax(x, 1), gf.float32, name="c")
        gf.concat([x[:, 1:], gf.transpose(x)[:2, :1] * 0.0 + c[:1, None]], 0, name="cat")
        gf.print("s:", s, name="p_err")
        gf.print("y:", y, output_stream=gf.logging.info, name="p_log")
        gf.Assert(gf.reduce_all(s > -1e9), ["bad", s], name="check")
        gf.nn.conv2d(gf.reshape(x, (-1, 1, 3, 1)), np.ones((1, 2, 1, 2), np.float32),
                     [1, 1, 1, 1], "SAME", name="conv")
        gf.one_hot(gf.cast(c, gf.int32), 4, name="hot")
    return g


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    """Folders of valid files, by name; the fuzzer copies one per case."""
    root = tmp_path_factory.mktemp("seeds")
    with gf.Graph().as_default():
        w = gf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        b = gf.Variable(np.int64(3), name="b")
        with gf.Session() as sess:
            sess.run([w.initializer, b.initializer])
            saver = gf.train.Saver([w, b])
            saver.save(sess, str(root / "ckpt" / "model"), global_step=1)
            saver.save(sess, str(root / "ckpt" / "model"), global_step=2)
            values = dict(zip(["w", "b"], sess.run([w, b])))
    (root / "old").mkdir()
    for step in (1, 2):
        write_old_checkpoint(str(root / "old" / f"model-{step}"), values, step)
    (root / "old" / "checkpoint").write_text(json.dumps({
        "model_checkpoint_path": "model-2", "all_model_checkpoint_paths": ["model-1", "model-2"],
        "all_model_checkpoint_timestamps": [1.0, 2.0], "last_preserved_timestamp": 0.0}))
    g = _graph_with_everything()
    with gf.Session(graph=g) as sess:
        with g.as_default():
            sess.run(gf.global_variables_initializer())
        x, y = g.get_tensor_by_name("x:0"), g.get_tensor_by_name("y:0")
        gf.saved_model.simple_save(sess, str(root / "saved" / "m"), {"x": x}, {"y": y})
    (root / "graph").mkdir()
    gf.train.write_graph(g, str(root / "graph"), "g.json")
    gf.train.write_graph(g, str(root / "graph"), "g.npz", as_text=False)
    shutil.copytree(os.path.join(DATA, "tf_checkpoints", "adam"), root / "tf")
    shutil.copytree(os.path.join(DATA, "tfrecords"), root / "tfrecords")
    return root


# -- mutations ------------------------------------------------------------------------------

HUGE = [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 63 - 1, 2 ** 64 - 1]
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.sampled_from([0, -1, 1, 3, 2 ** 31, -(2 ** 63), 10 ** 30])
    | st.integers() | st.floats(allow_nan=False) | st.sampled_from([1e308, -1e308])
    | st.text(max_size=12) | st.sampled_from(
        ["file:///tmp/gradflow-fuzz-victim", "../../etc/passwd", "/abs", "float32", "variant",
         "string", "stdout", "log(info)", "x", "w", "s", "a0", "m0_a0", "v0", "tuple",
         "serve", "gradflow.GraphDef", "\u0000", "-1"])
    | st.sampled_from([{"dtype": "float32"}, {"dtype": "nope"}, {"array": "a0"},
                       {"array": "missing"}, {"node": "x"}, {"node": "nope"},
                       {"tuple": [None, 3]}, {"tuple": [-1]}, {"list": [1, 2]},
                       {"tuple": [10 ** 12, 10 ** 12]}]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)


def _paths(doc, prefix=()):
    """Every place in a JSON document, as a tuple of keys and indices."""
    found = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            found += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            found += _paths(v, prefix + (i,))
    return found


def mutate_json(data, doc, focus=None):
    """``doc`` with one place replaced, dropped or added to; and what was done. With
    ``focus``, a test of paths, the place is one it passes (when there is one)."""
    paths = _paths(doc)
    focused = [p for p in paths if focus(p)] if focus else []
    paths = focused or paths
    path = paths[data.draw(st.integers(0, len(paths) - 1), label="json path")]
    action = data.draw(st.sampled_from(["replace", "drop", "add"]), label="json action")
    value = data.draw(JSON_VALUES, label="json value")
    if not path:
        return (value if action == "replace" else doc), f"{action} the document"
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if action == "drop":
        del parent[key]
    elif action == "add" and isinstance(parent[key], dict):
        parent[key][data.draw(st.text(max_size=8), label="new key")] = value
    elif action == "add" and isinstance(parent[key], list):
        parent[key].append(value)
    else:
        parent[key] = value
    return doc, f"{action} {list(path)}"


def mutate_bytes(data, raw):
    """``raw`` with bits flipped, cut, spliced, grown or a word made huge; and what."""
    kind = data.draw(st.sampled_from(["flip", "truncate", "splice", "insert", "word"]),
                     label="bytes mutation")
    out = bytearray(raw)
    at = data.draw(st.integers(0, max(len(out) - 1, 0)), label="position")
    if kind == "flip":
        for _ in range(data.draw(st.integers(1, 4), label="flips")):
            k = data.draw(st.integers(0, max(len(out) - 1, 0)), label="flip at")
            if out:
                out[k] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    elif kind == "truncate":
        del out[at:]
    elif kind == "splice":
        chunk = data.draw(st.binary(min_size=1, max_size=16), label="chunk")
        out[at:at + len(chunk)] = chunk
    elif kind == "insert":
        out[at:at] = data.draw(st.binary(min_size=1, max_size=64), label="inserted")
    else:
        width = data.draw(st.sampled_from([4, 8]), label="width")
        out[at:at + width] = data.draw(st.sampled_from(HUGE), label="word").to_bytes(
            8, "little")[:width]
    return bytes(out), f"{kind} at {at}"


def mutate_npy(data, path):
    """The .npz at ``path`` with one array's .npy header claiming another shape or dtype
    (the data unchanged)."""
    with np.load(path) as npz:
        key = data.draw(st.sampled_from(sorted(npz.files)), label="array")
    shape = tuple(data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 6, 10 ** 6, 10 ** 12,
                                                      2 ** 62]), max_size=3), label="shape"))
    dtype = data.draw(st.sampled_from(["<f4", "<f8", "<i8", "|u1", "|b1", "<U3", "|V0",
                                       "|O", "<c16"]), label="dtype")
    npz_claiming(path, key, shape, dtype, data.draw(st.booleans(), label="fortran"))
    return f"{key} claims {shape} {dtype}"


def mutate_npz_json(data, path, key):
    """The .npz at ``path`` with the JSON held in array ``key`` mutated."""
    what = []

    def change(arrays):
        doc, done = mutate_json(data, json.loads(arrays[key].tobytes()))
        arrays[key] = np.frombuffer(json.dumps(doc).encode(), np.uint8)
        what.append(done)

    rewrite_npz(path, change)
    return what[0]


def mutate_file(data, path, json_file=False, npz_json_key=None):
    """One mutation of the file at ``path``, of a kind its format allows; what it was."""
    kinds = ["bytes"] + (["json"] * 3 if json_file else []) + \
        (["npy", "npz json", "npz json"] if npz_json_key else [])
    kind = data.draw(st.sampled_from(kinds), label="kind")
    if kind == "json":
        with open(path, "rb") as f:
            doc, what = mutate_json(data, json.loads(f.read()))
        _write(path, json.dumps(doc).encode())
    elif kind == "npy":
        what = mutate_npy(data, path)
    elif kind == "npz json":
        what = mutate_npz_json(data, path, npz_json_key)
    else:
        with open(path, "rb") as f:
            raw, what = mutate_bytes(data, f.read())
        _write(path, raw)
    return f"{os.path.basename(path)}: {kind}: {what}"


def _write(path, raw):
    with open(path, "wb") as f:
        f.write(raw)


# -- the checks every case makes --------------------------------------------------------


class OutsideWrite(BaseException):
    """A write outside the case's folder (a BaseException: no ``except Exception`` in
    the code under test may swallow it)."""


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@contextlib.contextmanager
def writes_only_under(folder):
    """Fail at once on any file opened for writing, created, renamed or removed outside
    ``folder`` while in the block."""
    folder = os.path.realpath(folder)
    real = {name: getattr(os, name) for name in ("open", "replace", "rename", "remove",
                                                 "unlink", "mkdir", "rmdir")}
    real_open = builtins.open

    def check(path, what):
        if isinstance(path, int):
            return
        full = os.path.realpath(os.fspath(path))
        if os.path.commonpath([full, folder]) != folder:
            raise OutsideWrite(f"{what} {full}, outside {folder}")

    def guarded_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            check(file, f"open({mode!r})")
        return real_open(file, mode, *args, **kwargs)

    def guarded_os_open(path, flags, *args, **kwargs):
        if flags & _WRITE_FLAGS:
            check(path, "os.open for writing")
        return real["open"](path, flags, *args, **kwargs)

    def guard(name):
        def guarded(*paths, **kwargs):
            for path in paths[:2]:
                check(path, f"os.{name}")
            return real[name](*paths, **kwargs)
        return guarded

    patched = {name: guard(name) for name in real if name != "open"}
    patched["open"] = guarded_os_open
    try:
        for name, fn in patched.items():
            setattr(os, name, fn)
        builtins.open = io.open = guarded_open
        yield
    finally:
        builtins.open = io.open = real_open
        for name, fn in real.items():
            setattr(os, name, fn)


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang(f"a case ran over {WALL_LIMIT} s")


def run_case(folder, what, action):
    """Run ``action()`` (the reads of one case); its outcome must be a result or a gradflow
    error, in under ``CPU_LIMIT`` of CPU, writing only under ``folder``."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(WALL_LIMIT)
    gc.disable()  # a collection of the whole test's garbage is not the case's time
    start = time.process_time()
    try:
        with writes_only_under(folder), warnings.catch_warnings(), \
                np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            action()
        OUTCOMES["loaded"] += 1
    except GradflowError as err:
        OUTCOMES[type(err).__name__] += 1
    except Exception as err:
        raise AssertionError(f"raw {type(err).__name__} ({err}) from {what}") from err
    finally:
        spent = time.process_time() - start
        gc.enable()
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if spent > SLOWEST[0]:
        SLOWEST[:] = [spent, what]
    assert spent < CPU_LIMIT, f"{spent:.2f} s of CPU for {what}"


@contextlib.contextmanager
def case_folder(seeds, name):
    """A fresh copy of seed folder ``name``, removed after the case."""
    root = tempfile.mkdtemp(dir=seeds, prefix="case.")
    try:
        folder = os.path.join(root, name)
        shutil.copytree(seeds / name, folder)
        yield folder
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _bystander():
    """A variable no file has any right to, at a value none of them holds."""
    return gf.Variable(SENTINEL, name="bystander")


# -- gradflow's checkpoints and their index -----------------------------------------------


@pytest.fixture(scope="module")
def small_session():
    """A session of the seed checkpoint's variables (and a bystander), for every case."""
    with gf.Graph().as_default() as g:
        w = gf.Variable(np.zeros((2, 3), np.float32), name="w")
        b = gf.Variable(np.int64(-1), name="b")
        bystander = _bystander()
        saver = gf.train.Saver([w, b])
    with gf.Session(graph=g) as sess:
        sess.run([w.initializer, b.initializer, bystander.initializer])
        yield sess, saver, [w, b], bystander


@FUZZ
@given(data=st.data())
def test_fuzz_gradflow_checkpoints(seeds, small_session, data):
    sess, saver, variables, bystander = small_session
    with case_folder(seeds, "ckpt") as folder:
        target = data.draw(st.sampled_from(["model-2.index", "model-2.data-00000-of-00001",
                                            "model-1.index", "index fields", "checkpoint",
                                            "checkpoint lines"]), label="file")
        if target == "index fields":
            what = mutate_tf_index(data, os.path.join(folder, "model-2.index"))
        elif target == "checkpoint lines":
            what = mutate_text_index(data, os.path.join(folder, "checkpoint"))
        else:
            what = mutate_file(data, os.path.join(folder, target))

        def reads():
            _restore_all_or_nothing(sess, saver, folder, variables)
            np.testing.assert_array_equal(sess.run(bystander), SENTINEL)
            saver.save(sess, os.path.join(folder, "model"), global_step=3)
            gf.train.list_variables(os.path.join(folder, "model-3"))

        run_case(folder, what, reads)


@FUZZ
@given(data=st.data())
def test_fuzz_checkpoints_of_an_earlier_gradflow(seeds, small_session, data):
    sess, saver, variables, bystander = small_session
    with case_folder(seeds, "old") as folder:
        target = data.draw(st.sampled_from(["model-2", "model-1", "checkpoint"]), label="file")
        path = os.path.join(folder, target)
        what = mutate_file(data, path, json_file=target == "checkpoint",
                           npz_json_key=None if target == "checkpoint" else "__header__")

        def reads():
            _restore_all_or_nothing(sess, saver, folder, variables)
            np.testing.assert_array_equal(sess.run(bystander), SENTINEL)
            saver.save(sess, os.path.join(folder, "model"), global_step=3)
            gf.train.list_variables(os.path.join(folder, "model-3"))

        run_case(folder, what, reads)


def _restore_all_or_nothing(sess, saver, folder, variables):
    before = sess.run(variables)
    try:
        gf.train.list_variables(folder)
        saver.restore(sess, gf.train.latest_checkpoint(folder))
    except GradflowError:
        for var, value in zip(variables, before):
            np.testing.assert_array_equal(sess.run(var), value)
        OUTCOMES["checkpoint refused"] += 1
        return
    for var in variables:
        assert sess.run(var).shape == tuple(var.shape)


# -- SavedModels ----------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_fuzz_saved_models(seeds, data):
    with case_folder(seeds, "saved") as folder:
        model = os.path.join(folder, "m")
        target = data.draw(st.sampled_from(["saved_model.json", "saved_model.json",
                                            "saved_model.npz", "variables/variables.npz"]),
                           label="file")
        what = mutate_file(data, os.path.join(model, target),
                           json_file=target.endswith(".json"),
                           npz_json_key="__header__" if target.startswith("variables") else None)

        def reads():
            with gf.Graph().as_default() as g:
                bystander = _bystander()
            with gf.Session(graph=g) as sess:
                sess.run(bystander.initializer)
                try:
                    gf.saved_model.loader.load(sess, [SERVING], model)
                finally:
                    np.testing.assert_array_equal(sess.run(bystander), SENTINEL)

        run_case(folder, what, reads)


# -- GraphDefs, as JSON text and as .npz -------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_fuzz_graph_defs(seeds, data):
    with case_folder(seeds, "graph") as folder:
        name = data.draw(st.sampled_from(["g.json", "g.json", "g.npz"]), label="file")
        path = os.path.join(folder, name)
        what = mutate_file(data, path, json_file=name.endswith(".json"),
                           npz_json_key="__graph__" if name.endswith(".npz") else None)

        def reads():
            graph_def = gf.GraphDef.read(path)
            with gf.Graph().as_default():
                bystander = _bystander()
                gf.import_graph_def(graph_def, name="imported")
                assert bystander.graph.get_tensor_by_name("bystander:0") is bystander

        run_case(folder, what, reads)


@pytest.fixture(scope="module")
def every_op_graph():
    """The GraphDef text of each op spec's graph (its ops and their gradients) that can
    be written: every attribute of every op, for the fuzzer to change."""
    from op_specs import SPECS

    texts = []
    for spec in SPECS:
        arrays = spec.make(np.random.default_rng(0))
        g = gf.Graph()
        try:
            with g.as_default():
                xs = [gf.placeholder(gf.as_dtype(a.dtype.name), a.shape) for a in arrays]
                outs = spec.fn(*xs)
                outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
                floats = [x for x in xs if x.dtype.is_floating]
                if floats and all(getattr(o, "dtype", None) is not None and o.dtype.is_floating
                                  for o in outs):
                    try:
                        gf.gradients(gf.add_n([gf.reduce_sum(o) for o in outs]), floats)
                    except NotImplementedError:  # a gradient TF does not define either
                        pass
            texts.append((spec.id, gf.GraphDef.of_graph(g).to_text()))
        except GradflowError:  # a cond, a py_func: never written to a file
            continue
    return texts


def _in_attrs(path):
    return len(path) >= 4 and path[0] == "node" and path[2] == "attrs"


@FUZZ
@given(data=st.data())
def test_fuzz_the_attributes_of_every_op(every_op_graph, tmp_path_factory, data):
    spec, text = data.draw(st.sampled_from(every_op_graph), label="spec")
    doc, what = mutate_json(data, json.loads(text),
                            focus=_in_attrs if data.draw(st.integers(0, 3)) else None)
    folder = str(tmp_path_factory.getbasetemp())

    def reads():
        graph_def = gf.GraphDef(source=f"<{spec}>")
        graph_def.ParseFromString(json.dumps(doc).encode())
        with gf.Graph().as_default():
            bystander = _bystander()
            gf.import_graph_def(graph_def)
            assert bystander.graph.get_tensor_by_name("bystander:0") is bystander

    run_case(folder, f"{spec}: {what}", reads)


# -- TensorFlow's checkpoints ------------------------------------------------------------------

TF_FIELDS = st.tuples(st.integers(1, 8), st.sampled_from([0, 1, 2, 5]),
                      st.sampled_from(HUGE) | st.integers(0, 2 ** 64 - 1),
                      st.binary(max_size=24))


def mutate_tf_index(data, path):
    """Re-encode one field of one entry of TensorFlow's index, checksums made right."""
    entries = tf_index_entries(path)
    k = data.draw(st.integers(0, len(entries) - 1), label="entry")
    number, kind, number_value, bytes_value = data.draw(TF_FIELDS, label="field")
    action = data.draw(st.sampled_from(["replace", "add", "drop"]), label="action")
    key, value = entries[k]
    raw = b"".join(field(n, t, v) for n, t, v in protowire.fields(value)
                   if action == "add" or n != number)
    if action != "drop":
        raw += field(number, kind, bytes_value if kind == 2 else
                     number_value % (2 ** (32 if kind == 5 else 64)))
    entries[k] = (key, raw)
    _write(path, tf_table(entries))
    return f"entry {key!r}: {action} field {number} of wire type {kind}"


TEXT_LINES = st.sampled_from([
    'model_checkpoint_path: "model.ckpt-3"', 'all_model_checkpoint_paths: "model.ckpt-3"',
    "all_model_checkpoint_timestamps: 1e999", "all_model_checkpoint_timestamps: nan",
    "last_preserved_timestamp: yesterday", 'model_checkpoint_path: "a" ' + "-" * 100_000 + ' "',
    'model_checkpoint_path: "' + "\\" * 5001 + '"', 'model_checkpoint_path: "\\777"',
    'model_checkpoint_path: "\\xff\\xfe"', 'all_model_checkpoint_paths: "../../etc/passwd"',
    "all_model_checkpoint_timestamps: 1_0", "model_checkpoint_path: 3"]) | st.text(max_size=40)


def mutate_text_index(data, path):
    """A line inserted into TensorFlow's text ``checkpoint`` index at ``path``."""
    lines = open(path).read().splitlines()
    lines.insert(data.draw(st.integers(0, len(lines)), label="line"),
                 data.draw(TEXT_LINES, label="text"))
    _write(path, "\n".join(lines).encode("utf-8", "surrogatepass"))
    return f"checkpoint: {lines}"[:300]


@pytest.fixture(scope="module")
def adam_session():
    """A session of the TensorFlow checkpoint's model (and a bystander), for every case."""
    from test_tf_checkpoint import model

    with gf.Graph().as_default() as g:
        model()
        bystander = _bystander()
        variables = [v for v in gf.global_variables() if v is not bystander]
        saver = gf.train.Saver(variables)
        init = gf.global_variables_initializer()
    with gf.Session(graph=g) as sess:
        sess.run(init)
        yield sess, saver, variables, bystander


@FUZZ
@given(data=st.data())
def test_fuzz_tensorflow_checkpoints(seeds, adam_session, data):
    sess, saver, variables, bystander = adam_session
    with case_folder(seeds, "tf") as folder:
        prefix = os.path.join(folder, "model.ckpt-3")
        target = data.draw(st.sampled_from(["index fields", "index", "data", "checkpoint"]),
                           label="file")
        if target == "index fields":
            what = mutate_tf_index(data, prefix + ".index")
        elif target == "checkpoint":
            what = mutate_text_index(data, os.path.join(folder, "checkpoint"))
        else:
            path = prefix + (".index" if target == "index" else ".data-00000-of-00001")
            what = mutate_file(data, path)

        def reads():
            _restore_all_or_nothing(sess, saver, folder, variables)
            np.testing.assert_array_equal(sess.run(bystander), SENTINEL)

        run_case(folder, what, reads)


# -- TFRecord files ---------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_fuzz_tfrecord_files(seeds, data):
    with case_folder(seeds, "tfrecords") as folder:
        name = data.draw(st.sampled_from(["plain.tfrecords", "gzip.tfrecords",
                                          "single.tfrecords"]), label="file")
        path = os.path.join(folder, name)
        what = mutate_file(data, path)
        options = gf.python_io.TFRecordOptions("GZIP" if name.startswith("gzip") else "")

        def reads():
            for record in gf.python_io.tf_record_iterator(path, options):
                assert isinstance(record, bytes)

        run_case(folder, what, reads)


def test_the_harness_catches_what_it_must(tmp_path):
    """The fuzzer's checks fail as they should: a write outside the case's folder, a raw
    exception, a case that takes too long."""
    seen, slowest = OUTCOMES.copy(), list(SLOWEST)
    inside = tmp_path / "case"
    inside.mkdir()
    with writes_only_under(inside):
        (inside / "fine.txt").write_text("a write inside")
    for write in (lambda: open(tmp_path / "outside.txt", "w"),
                  lambda: (tmp_path / "outside.txt").write_text("x"),
                  lambda: os.replace(inside / "fine.txt", tmp_path / "moved.txt"),
                  lambda: tempfile.mkstemp(dir=tmp_path)):
        with pytest.raises(OutsideWrite):
            run_case(str(inside), "a write outside", write)
    assert sorted(os.listdir(tmp_path)) == ["case"]
    with pytest.raises(AssertionError, match="raw KeyError"):
        run_case(str(inside), "a raw error", lambda: {}["x"])
    with pytest.raises(AssertionError, match="s of CPU for a slow case"):
        run_case(str(inside), "a slow case", lambda: _spin(CPU_LIMIT * 1.2))
    OUTCOMES.clear()
    OUTCOMES.update(seen)
    SLOWEST[:] = slowest


def _spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_zz_report_outcomes():
    """Prints what the fuzzer saw (run with -s); loads and refusals both happen."""
    logging.getLogger(__name__).info("file fuzz outcomes: %s", dict(OUTCOMES))
    print(f"\nfile fuzz outcomes ({EXAMPLES} examples per format): {dict(OUTCOMES)}; "
          f"the slowest case took {SLOWEST[0]:.3f} s of CPU ({SLOWEST[1][:200]})")
    if EXAMPLES >= 12 and OUTCOMES:
        assert OUTCOMES["loaded"] > 0
