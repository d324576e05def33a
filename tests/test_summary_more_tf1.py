"""``tf.summary.tensor_summary``, ``tf.summary.audio``, ``tf.train.summary_iterator`` and
the summary protobuf classes (gradflow/summary/more_summaries.py), against TensorFlow
2.21: each expected ``Summary`` is the serialized bytes TensorFlow 2.21's ``compat.v1``
op gave in graph mode for the same input (``sess.run(tf.summary.audio("snd", a, 8000,
max_outputs=3)).hex()`` and so on), and EVENTS is an event file TensorFlow 2.21's
``FileWriter`` wrote (a scalar ``loss`` of 0.25 at step 7), all written in as literals.
"""

from __future__ import annotations

import pytest

import gradflow as gf

pytest.importorskip("tensorboardX", reason="gradflow.summary needs tensorboardX")

TENSOR = "0a1d0a0174421608011208120208011202080222080000803f000000404a00"
DESCRIBED = "0a270a016442120803120412020802220803000000040000004a0e120553686f776e1a0568656c6c6f"
STRINGS = "0a160a0173420f0807120412020802420161420262634a00"
AUDIO = ("0a590a0b736e642f617564696f2f30324a0d0000fa45100118042234524946462c00000057415645666d"
         "74201000000001000100401f0000803e0000020010006461746108000000000000400080ff7f2a0961"
         "7564696f2f7761760a590a0b736e642f617564696f2f31324a0d0000fa45100118042234524946462c"
         "00000057415645666d74201000000001000100401f0000803e000002001000646174610800000000200"
         "00000009ad92a09617564696f2f776176")
AUDIO_ONE = ("0a550a096f6e652f617564696f32480d00007a46100118032232524946462a00000057415645666d"
             "74201000000001000100803e0000007d0000020010006461746106000000cd0c33f39a592a096175"
             "64696f2f776176")
EVENTS = ("3e00000000000000d9d240e70900000012e0c2da411a0d627261696e2e4576656e743a3252240a2274"
          "656e736f72666c6f772e636f72652e7574696c2e6576656e74735f7772697465729a61630c1a000000"
          "00000000129bd82d098c783712e0c2da4110072a0d0a0b0a046c6f7373150000803ea5d8fc97")


def test_tensor_summaries_are_tensorflows_bytes(backend):
    gf.reset_default_graph()
    plain = gf.summary.tensor_summary("t", gf.constant([[1.0, 2.0]]))
    described = gf.summary.tensor_summary("d", gf.constant([3, 4]), summary_description="hello",
                                          display_name="Shown")
    strings = gf.summary.tensor_summary("s", gf.constant([b"a", b"bc"]), collections=[])
    assert gf.get_collection(gf.GraphKeys.SUMMARIES) == [plain, described]
    with gf.Session(backend=backend) as sess:
        got = sess.run([plain, described, strings])
    assert [g.hex() for g in got] == [TENSOR, DESCRIBED, STRINGS]


def test_audio_summaries_are_tensorflows_wav_files(backend):
    gf.reset_default_graph()
    sound = gf.constant([[[0.0], [0.5], [-1.0], [1.2]], [[0.25], [0.0], [0.0], [-0.3]]])
    many = gf.summary.audio("snd", sound, 8000, max_outputs=3)
    one = gf.summary.audio("one", gf.constant([[0.1, -0.1, 0.7]]), 16000.0, max_outputs=1)
    with gf.Session(backend=backend) as sess:
        got = sess.run([many, one])
    assert [g.hex() for g in got] == [AUDIO, AUDIO_ONE]
    with pytest.raises(TypeError, match="float32"):
        gf.summary.audio("bad", gf.constant([[1, 2]]), 8000)


def test_summary_iterator_reads_tensorflows_and_gradflows_event_files(tmp_path):
    path = tmp_path / "events.out.tfevents.1.tf"
    path.write_bytes(bytes.fromhex(EVENTS))
    events = list(gf.train.summary_iterator(str(path)))
    assert events[0].file_version == "brain.Event:2"
    assert events[1].step == 7 and events[1].summary.value[0].tag == "loss"
    assert events[1].summary.value[0].simple_value == 0.25
    gf.reset_default_graph()
    with gf.Session() as sess, gf.summary.FileWriter(str(tmp_path / "mine")) as writer:
        writer.add_summary(sess.run(gf.summary.scalar("acc", gf.constant(0.5))), 3)
    (mine,) = (tmp_path / "mine").iterdir()
    steps = [(e.step, [v.tag for v in e.summary.value]) for e in
             gf.train.summary_iterator(str(mine))]
    assert steps[-1] == (3, ["acc"])


def test_summary_protobuf_classes_are_tensorboards():
    value = gf.Summary.Value(tag="acc", simple_value=0.98)
    assert gf.Summary(value=[value]).value[0].tag == "acc"
    assert gf.summary.HistogramProto(min=0.0, max=1.0).max == 1.0
    assert gf.SummaryMetadata(display_name="x").display_name == "x"
    assert gf.HistogramProto is gf.summary.HistogramProto
    event = gf.Event(step=2, session_log=gf.SessionLog(status=gf.SessionLog.START))
    assert gf.Event.FromString(event.SerializeToString()).session_log.status == 1
    assert gf.summary.TaggedRunMetadata(tag="step1").tag == "step1"
    with pytest.raises(AttributeError):
        gf.NoSuchName  # noqa: B018
