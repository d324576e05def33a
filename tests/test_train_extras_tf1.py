"""TF1's ``train`` helpers added in gradflow/train/ (sequence_example, cluster,
checkpoint_management, input_join, loops, session_creators). Where TF1's result is a value,
the expected value is TensorFlow 2.21's (``tensorflow.compat.v1`` in graph mode, the same
calls run once and their printed results pasted here as literals): the wire bytes of a
``SequenceExample`` and of a ``ClusterDef``, ``ClusterSpec``'s views, the paths of
``generate_checkpoint_state_proto``, the devices ``replica_device_setter`` chose, and
``assert_global_step``'s errors. The rest is behaviour: queues, sessions, threads, files.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import gradflow as gf

# TF 2.21: the SequenceExample built in test_sequence_example_bytes_are_tensorflows
TF_SEQUENCE_EXAMPLE = (b"\n\x11\n\x0f\n\x06length\x12\x05\x1a\x03\n\x01\x02\x12,\n\x19\n\x06tok"
                       b"ens\x12\x0f\n\x05\x1a\x03\n\x01\x07\n\x06\x1a\x04\n\x02\x08\t\n\x0f\n"
                       b"\x01w\x12\n\n\x08\x12\x06\n\x04\x00\x00\x00?")
# TF 2.21: ClusterSpec({"ps": [...], "worker": {1: ..., 3: ...}}).as_cluster_def(), serialized
TF_CLUSTER_DEF = (b'\n \n\x02ps\x12\x0c\x08\x01\x12\x08ps1:2222\x12\x0c\x08\x00\x12\x08ps0:2222\n"'
                  b"\n\x06worker\x12\x0b\x08\x03\x12\x07w3:2222\x12\x0b\x08\x01\x12\x07w1:2222")
CLUSTER = {"ps": ["ps0:2222", "ps1:2222"], "worker": {1: "w1:2222", 3: "w3:2222"}}


def test_sequence_example_bytes_are_tensorflows():
    seq = gf.train.SequenceExample()
    seq.context.feature["length"].int64_list.value.append(2)
    tokens = seq.feature_lists.feature_list["tokens"]
    tokens.feature.add().int64_list.value.append(7)
    tokens.feature.add().int64_list.value.extend([8, 9])
    seq.feature_lists.feature_list["w"].feature.add().float_list.value.append(0.5)
    assert seq.SerializeToString() == TF_SEQUENCE_EXAMPLE
    back = gf.train.SequenceExample.FromString(TF_SEQUENCE_EXAMPLE)
    assert back == seq
    lists = back.feature_lists.feature_list
    assert [f.int64_list.value for f in lists["tokens"].feature] == [[7], [8, 9]]
    assert lists["w"].feature[0].float_list.value == [0.5]
    assert back.context.feature["length"].int64_list.value == [2]
    assert gf.train.FeatureLists(feature_list={"a": gf.train.FeatureList(
        feature=[gf.train.Feature(int64_list=gf.train.Int64List(value=[1]))])}) == \
        gf.train.FeatureLists.FromString(gf.train.FeatureLists(feature_list={
            "a": gf.train.FeatureList([gf.train.Feature(
                int64_list=gf.train.Int64List(value=[1]))])}).SerializeToString())


def test_cluster_spec_views_are_tensorflows():
    c = gf.train.ClusterSpec(CLUSTER)
    assert c.as_dict() == {"ps": ["ps0:2222", "ps1:2222"],
                           "worker": {1: "w1:2222", 3: "w3:2222"}}
    assert c.jobs == ["ps", "worker"]
    assert c.num_tasks("worker") == 2 and c.task_indices("worker") == [1, 3]
    assert c.job_tasks("worker") == [None, "w1:2222", None, "w3:2222"]
    assert c.task_address("ps", 1) == "ps1:2222"
    assert not gf.train.ClusterSpec({})
    assert gf.train.ClusterSpec(c) == c and gf.train.ClusterSpec(c.as_cluster_def()) == c
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        c.num_tasks("chief")
    with pytest.raises(ValueError, match="No task with index 0"):
        c.task_address("worker", 0)
    with pytest.raises(TypeError, match="job 'ps'"):
        gf.train.ClusterSpec({"ps": "ps0:2222"})


def test_cluster_def_reads_tensorflows_bytes_and_writes_what_it_reads():
    tf_def = gf.train.ClusterDef.FromString(TF_CLUSTER_DEF)
    assert gf.train.ClusterSpec(tf_def) == gf.train.ClusterSpec(CLUSTER)
    ours = gf.train.ClusterSpec(CLUSTER).as_cluster_def()
    assert [(j.name, j.tasks) for j in ours.job] == [(j.name, j.tasks) for j in tf_def.job]
    assert gf.train.ClusterDef.FromString(ours.SerializeToString()) == ours


class _Op:
    def __init__(self, kind, device=""):
        self.type, self.device = kind, device


def test_replica_device_setter_places_as_tensorflow():
    assert gf.train.replica_device_setter() is None  # TF 2.21: None without ps tasks
    choose = gf.train.replica_device_setter(ps_tasks=2)
    # TF 2.21: three variables and a product -> ps:0, ps:1, ps:0 and /job:worker
    assert [choose(_Op(k)) for k in ("VariableV2", "VariableV2", "variable", "Mul")] == \
        ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0", "/job:worker"]
    choose = gf.train.replica_device_setter(cluster={"ps": ["a:1"], "worker": ["b:1"]},
                                            worker_device="/job:worker/task:0")
    assert (choose(_Op("VariableV2")), choose(_Op("Add"))) == \
        ("/job:ps/task:0", "/job:worker/task:0")
    assert choose(_Op("Add", "/device:GPU:1")) == "/job:worker/task:0/device:GPU:1"
    with gf.device(choose):  # accepted by gf.device, as a TF1 program writes it
        gf.Variable(1.0)


def test_generate_checkpoint_state_proto_paths_are_tensorflows():
    state = gf.train.generate_checkpoint_state_proto("run", "run/model-10", ["run/model-5"])
    assert state.model_checkpoint_path == "model-10"
    assert state.all_model_checkpoint_paths == ["model-5", "model-10"]
    state = gf.train.generate_checkpoint_state_proto("/abs/run", "model-10")
    assert (state.model_checkpoint_path, state.all_model_checkpoint_paths) == \
        ("model-10", ["model-10"])
    with pytest.raises(ValueError, match="timestamps"):
        gf.train.generate_checkpoint_state_proto("/d", "m", ["m"], [1.0, 2.0])


def test_assert_global_step_errors_are_tensorflows():
    gf.train.assert_global_step(gf.train.get_or_create_global_step())
    gf.train.assert_global_step(gf.placeholder(gf.int64, [None]))  # TF 2.21: accepted
    with pytest.raises(TypeError, match='Existing "global_step" does not have integer type'):
        gf.train.assert_global_step(gf.constant(1.0))
    with pytest.raises(TypeError, match=r'Existing "global_step" is not scalar: \(2,\)'):
        gf.train.assert_global_step(gf.constant([1, 2]))
    with pytest.raises(TypeError, match="must be a Variable or Tensor"):
        gf.train.assert_global_step(3)


def test_checkpoint_files_update_mtimes_remove_and_iterate(tmp_path):
    gf.Variable(3.0)
    saver = gf.train.Saver()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        first = saver.save(sess, str(tmp_path / "m"), global_step=1)
        second = saver.save(sess, str(tmp_path / "m"), global_step=2)
    times = gf.train.get_checkpoint_mtimes([first, second, str(tmp_path / "none")])
    assert len(times) == 2 and all(isinstance(t, float) for t in times)
    gf.train.update_checkpoint_state(str(tmp_path), first)
    assert gf.train.latest_checkpoint(str(tmp_path)) == first
    assert list(gf.train.checkpoints_iterator(str(tmp_path), timeout=0)) == [first]
    with pytest.raises(RuntimeError, match="conflicts with path used for checkpoint state"):
        gf.train.update_checkpoint_state(str(tmp_path), str(tmp_path / "checkpoint"))
    gf.train.remove_checkpoint(first)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-2.data-00000-of-00001",
                                            "m-2.index", "m-2.meta"]
    gf.train.remove_checkpoint(first)  # already gone: a warning, no error


def _drain(sess, fetch):
    out = []
    while not sess.should_stop():
        out.append(sess.run(fetch))
    return np.concatenate(out).tolist()


def test_batch_join_mixes_its_inputs_and_maybe_batch_filters():
    a = gf.train.limit_epochs(gf.constant(np.arange(6, dtype=np.float32)), 1)
    b = gf.train.limit_epochs(gf.constant(np.arange(100, 106, dtype=np.float32)), 1)
    joined = gf.train.batch_join([[a], [b]], batch_size=4, enqueue_many=True,
                                 allow_smaller_final_batch=True)
    assert joined.shape.as_list() == [None]
    with gf.train.SingularMonitoredSession() as sess:
        assert sorted(_drain(sess, joined)) == list(range(6)) + list(range(100, 106))
    gf.reset_default_graph()
    xs = gf.train.limit_epochs(gf.constant(np.arange(8, dtype=np.int32)), 1)
    kept = gf.train.maybe_batch([xs], keep_input=gf.equal(xs % 2, 0), batch_size=2,
                                enqueue_many=True, allow_smaller_final_batch=True)
    creator = gf.train.ChiefSessionCreator()
    with gf.train.MonitoredSession(session_creator=creator) as sess:
        assert _drain(sess, kept) == [0, 2, 4, 6]
    gf.reset_default_graph()
    xs = gf.train.limit_epochs(gf.constant(np.arange(8, dtype=np.int32)), 1)
    shuffled = gf.train.maybe_shuffle_batch_join([[xs]], 3, 16, 0, xs < 5, seed=1,
                                                 enqueue_many=True,
                                                 allow_smaller_final_batch=True)
    with gf.train.SingularMonitoredSession() as sess:
        assert sorted(_drain(sess, shuffled)) == [0, 1, 2, 3, 4]
    gf.reset_default_graph()
    with pytest.raises(ValueError, match="keep_input .* must be a scalar"):
        gf.train.maybe_batch([gf.constant(1.0)], gf.constant([True]), 2)


def test_singular_monitored_session_restores_and_gives_its_raw_session(tmp_path):
    v = gf.Variable(1.0)
    bump = gf.assign_add(v, 1.0)
    saver = gf.train.Saver()
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        sess.run(bump)
        saver.save(sess, str(tmp_path / "model"))
    with gf.train.SingularMonitoredSession(checkpoint_dir=str(tmp_path)) as sess:
        assert sess.raw_session().run(v) == 2.0
    with gf.train.SingularMonitoredSession() as sess:
        assert sess.run(v) == 1.0
    with pytest.raises(ValueError, match="give scaffold, checkpoint_dir and config"):
        gf.train.MonitoredSession(session_creator=gf.train.ChiefSessionCreator(),
                                  checkpoint_dir=str(tmp_path))
    with pytest.raises(NotImplementedError):
        gf.train.SessionCreator().create_session()


def test_worker_session_creator_waits_for_a_ready_model():
    gf.constant(1.0)
    sess = gf.train.WorkerSessionCreator(max_wait_secs=0).create_session()  # nothing to wait for
    sess.close()
    gf.reset_default_graph()
    gf.Variable(1.0)  # initialized by no other session: never ready here
    with pytest.raises(gf.errors.DeadlineExceededError, match="not ready"):
        gf.train.WorkerSessionCreator(max_wait_secs=0).create_session()


def test_looper_thread_and_basic_train_loop():
    coord = gf.train.Coordinator()
    calls = []
    gf.train.LooperThread.loop(coord, 0.02, calls.append, args=(1,))
    time.sleep(0.2)
    coord.request_stop()
    coord.join()
    assert len(calls) >= 2 and set(calls) == {1}
    with pytest.raises(ValueError, match="'coord' argument must be a Coordinator"):
        gf.train.LooperThread(None, 1)
    with pytest.raises(ValueError, match="require that you also pass 'target'"):
        gf.train.LooperThread(gf.train.Coordinator(), 1, args=(1,))
    counter = gf.Variable(0)
    bump = gf.assign_add(counter, 1)
    sv = gf.train.Supervisor(logdir=None)
    seen = []

    def step(sess):
        seen.append(int(sess.run(bump)))
        if len(seen) == 3:
            sv.request_stop()

    gf.train.basic_train_loop(sv, step)
    assert seen == [1, 2, 3]
