"""``gf.string`` values (TF1's ``tf.string``): text constants, string placeholders and
``py_func`` results are NumPy object arrays of ``bytes`` held on the host, whatever the
backend, and come back from ``Session.run`` as TF1 gives them (``b'...'`` for a
scalar)."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError


def test_hello_world_prints_bytes(backend, capsys):
    """The first TF1 program anyone runs, with only the import changed."""
    graph = gf.Graph()
    with graph.as_default():
        hello = gf.constant("Hello, TensorFlow!")
        assert hello.dtype is gf.string and hello.shape.as_list() == []
    sess = gf.Session(graph=graph, backend=backend)
    print(sess.run(hello))
    sess.close()
    assert capsys.readouterr().out == "b'Hello, TensorFlow!'\n"


def test_text_constants_feeds_and_py_func_results(backend):
    graph = gf.Graph()
    with graph.as_default():
        table = gf.constant([["a", "b"], ["c", "é"]])
        fixed = gf.constant(b"x", shape=[3])
        names = gf.placeholder(gf.string, [None], name="names")
        upper = gf.py_func(lambda v: [s.upper() for s in v], [names], gf.string)
        sizes = gf.py_func(lambda v: np.array([len(s) for s in v], np.float32), [upper],
                           gf.float32)
        total = gf.reduce_sum(sizes)
    with gf.Session(graph=graph, backend=backend) as sess:
        got = sess.run(table)
        assert got.dtype == object and got.tolist() == [[b"a", b"b"], [b"c", "é".encode()]]
        assert sess.run(fixed).tolist() == [b"x"] * 3
        words, n = sess.run([upper, total], {names: ["ab", b"cde"]})
        assert words.tolist() == [b"AB", b"CDE"] and n == 5.0
        assert sess.run(upper, {names: np.array(["q"])}).tolist() == [b"Q"]


def test_bad_string_values_name_the_thing_at_fault(backend):
    graph = gf.Graph()
    with graph.as_default():
        names = gf.placeholder(gf.string, [2], name="names")
        echo = gf.identity(names)
    with gf.Session(graph=graph, backend=backend) as sess:
        with pytest.raises(InvalidArgumentError, match="'names' \\(string\\): a string value "
                                                       "holds text or bytes, not int"):
            sess.run(echo, {names: [1, 2]})
        with pytest.raises(InvalidArgumentError, match="shape \\(3,\\) to 'names'"):
            sess.run(echo, {names: ["a", "b", "c"]})
    with pytest.raises(TypeError, match="not int"):
        gf.constant([b"a", 1], dtype=gf.string)
    with pytest.raises(TypeError, match="string tensor"):
        gf.constant("x") + 1.0
    with pytest.raises(TypeError, match="concat: 'Const.*' is a string tensor, and "
                                        "gradflow's strings are values only"):
        gf.concat([gf.constant(["a"]), gf.constant(["b"])], 0)


def test_a_string_tensor_is_written_as_its_text_by_summary_text(backend):
    summary_pb2 = pytest.importorskip("tensorboardX.proto.summary_pb2",
                                      reason="tensorboardX is not installed")
    graph = gf.Graph()
    with graph.as_default():
        notes = gf.placeholder(gf.string, [None])
        fixed = gf.summary.text("fixed", gf.constant("hello **world**"))
        fed = gf.summary.text("fed", notes)
    with gf.Session(graph=graph, backend=backend) as sess:
        got = sess.run([fixed, fed], {notes: ["a", "é"]})
    values = [list(summary_pb2.Summary.FromString(v).value[0].tensor.string_val) for v in got]
    assert values == [[b"hello **world**"], [b"a", "é".encode()]]
