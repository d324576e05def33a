"""TF1 idioms of real tutorial programs: collections, variable_scope objects and reuse,
tf.contrib.layers, tf.app / tf.flags, tf.logging, ConfigProto and tf.device."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gradflow as gf
from gradflow import app

# -- collections ------------------------------------------------------------------------


def test_graph_keys_are_the_collections_gradflow_uses():
    assert gf.GraphKeys.GLOBAL_VARIABLES == gf.GraphKeys.VARIABLES == "variables"
    assert gf.GraphKeys.TRAINABLE_VARIABLES == "trainable_variables"
    assert gf.GraphKeys.GLOBAL_STEP == "global_step"
    for key in ("LOCAL_VARIABLES", "MODEL_VARIABLES", "UPDATE_OPS", "LOSSES",
                "REGULARIZATION_LOSSES", "SUMMARIES", "QUEUE_RUNNERS", "TRAIN_OP", "INIT_OP",
                "ACTIVATIONS", "WEIGHTS", "BIASES", "MOVING_AVERAGE_VARIABLES"):
        assert getattr(gf.GraphKeys, key) == key.lower()
    w = gf.Variable(1.0, name="w")
    step = gf.train.get_or_create_global_step()
    assert gf.get_collection(gf.GraphKeys.GLOBAL_STEP) == [step]
    assert gf.get_collection(gf.GraphKeys.GLOBAL_VARIABLES) == [w, step]
    assert gf.get_collection(gf.GraphKeys.TRAINABLE_VARIABLES) == [w]


def test_get_collection_scope_add_and_ref():
    with gf.variable_scope("enc"):
        a = gf.get_variable("a", (1,))
        with gf.variable_scope("inner"):
            b = gf.get_variable("b", (1,))
    c = gf.get_variable("encoder_c", (1,))
    keys = gf.GraphKeys
    assert gf.get_collection(keys.GLOBAL_VARIABLES, scope="enc") == [a, b, c]  # re.match
    assert gf.get_collection(keys.GLOBAL_VARIABLES, scope="enc/") == [a, b]
    assert gf.get_collection(keys.TRAINABLE_VARIABLES, scope=".*/b") == [b]
    assert gf.global_variables("enc/inner") == [b] == gf.trainable_variables(".*inner")
    gf.add_to_collection("mine", a)
    gf.add_to_collection("mine", "no name")  # kept, but a scope filter skips it
    gf.add_to_collections(["mine", "other", "mine"], b)  # once in each
    assert gf.get_collection("mine") == [a, "no name", b]
    assert gf.get_collection("mine", scope="enc") == [a, b]
    assert gf.get_collection("other") == [b]
    assert gf.get_collection("missing") == []
    copy = gf.get_collection("mine")
    copy.append(c)
    assert gf.get_collection("mine") == [a, "no name", b]  # a copy
    ref = gf.get_collection_ref("mine")
    ref.remove("no name")
    assert gf.get_collection("mine") == [a, b]  # the list itself
    gf.get_collection_ref("fresh").append(c)
    assert gf.get_collection("fresh") == [c]


def test_local_and_model_variables(backend):
    keys = gf.GraphKeys
    counter = gf.Variable(0.0, trainable=False, name="counter",
                          collections=[keys.LOCAL_VARIABLES])
    w = gf.Variable([1.0, 2.0], name="w")
    model = gf.Variable(3.0, name="m", collections=[keys.GLOBAL_VARIABLES,
                                                    keys.MODEL_VARIABLES])
    ema = gf.Variable(4.0, trainable=False, name="ema",
                      collections=[keys.GLOBAL_VARIABLES, keys.MOVING_AVERAGE_VARIABLES])
    local_trainable = gf.Variable(5.0, name="lt", collections=[keys.LOCAL_VARIABLES])
    assert gf.global_variables() == [w, model, ema]
    assert gf.local_variables() == [counter, local_trainable]
    # TF1: a trainable variable joins the trainable ones whatever collections says
    assert gf.trainable_variables() == [w, model, local_trainable]
    assert gf.model_variables() == [model]
    assert gf.moving_average_variables() == [ema]
    assert gf.all_variables() == gf.global_variables()
    local = gf.get_local_variable("seen", (2,), initializer=gf.ones_initializer())
    assert local in gf.local_variables() and local not in gf.global_variables()
    assert local not in gf.trainable_variables()
    with gf.Session(backend=backend) as sess:
        sess.run([gf.initialize_all_variables(), gf.local_variables_initializer()])
        sess.run(gf.assign_add(counter, 2.0))
        assert float(sess.run(counter)) == 2.0
        sess.run(gf.initialize_local_variables())
        assert float(sess.run(counter)) == 0.0
        sess.run(gf.assign(w, [5.0, 6.0]))
        sess.run(gf.initialize_variables([w]))
        np.testing.assert_array_equal(sess.run(w), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(local), [1.0, 1.0])
    with pytest.raises(ValueError, match="collections must be a list"):
        gf.Variable(1.0, collections="variables")
    assert gf.Variable(1.0, trainable=False, collections=[]) not in gf.global_variables()


def test_get_variable_regularizer_and_collections(backend):
    l2 = gf.contrib.layers.l2_regularizer(0.5)
    w = gf.get_variable("w", initializer=np.array([[1.0, -2.0], [3.0, 0.5]]), regularizer=l2)
    assert w.dtype is gf.float64  # an array's dtype, as in TF1
    with gf.variable_scope("layer", regularizer=gf.contrib.layers.l1_regularizer(0.25)):
        v = gf.get_variable("v", (3,), initializer=gf.constant_initializer(-2.0))
        u = gf.get_variable("u", (2,), regularizer=gf.contrib.layers.l2_regularizer(0.0))
    losses = gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2  # w's and v's; a zero scale adds none
    with gf.variable_scope("layer", reuse=True):
        assert gf.get_variable("v") is v  # sharing does not add a second penalty
    assert len(gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES)) == 2
    extra = gf.get_variable("extra", (1,), collections=["mine"], trainable=False)
    assert gf.get_collection("mine") == [extra] and extra not in gf.global_variables()
    assert u in gf.trainable_variables()
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = sess.run(losses)
    np.testing.assert_allclose(got[0], 0.5 * (1 + 4 + 9 + 0.25) / 2, rtol=1e-12)
    np.testing.assert_allclose(got[1], 0.25 * 6.0, rtol=1e-6)
    with pytest.raises(ValueError, match="scale cannot be an integer"):
        gf.contrib.layers.l2_regularizer(1)
    with pytest.raises(ValueError, match="less than 0"):
        gf.contrib.layers.l1_regularizer(-0.1)


# -- variable_scope ----------------------------------------------------------------------


def test_scope_reuse_variables_sticks_for_the_block():
    with gf.variable_scope("rnn") as scope:
        assert isinstance(scope, gf.VariableScope)
        assert scope is gf.get_variable_scope()
        assert (scope.name, scope.reuse, scope.original_name_scope) == ("rnn", False, "rnn/")
        w = gf.get_variable("w", (2, 2))
        scope.reuse_variables()
        assert gf.get_variable_scope().reuse is True
        assert gf.get_variable("w") is w
        with gf.variable_scope("inner"):  # inherited by the scopes opened inside
            with pytest.raises(ValueError, match="does not exist"):
                gf.get_variable("fresh", (1,))
    with gf.variable_scope("rnn", reuse=gf.AUTO_REUSE):
        assert gf.get_variable("w") is w
        made = gf.get_variable("made", (1,))
        assert gf.get_variable("made") is made
    with pytest.raises(ValueError, match="already exists"):
        with gf.variable_scope("rnn"):
            gf.get_variable("w", (2, 2))


def test_reentering_a_scope_object_keeps_its_name():
    with gf.variable_scope("model") as model_scope:
        w = gf.get_variable("w", (1,))
        first_op = gf.identity(w, name="op")
    with gf.variable_scope("elsewhere"):
        with gf.variable_scope(model_scope, reuse=True) as again:
            assert again.name == "model"  # not elsewhere/model, not model_1
            assert again.original_name_scope == "model/"
            assert gf.get_variable("w") is w
            with gf.variable_scope("sub"):
                assert gf.get_variable_scope().name == "model/sub"
    with gf.variable_scope(model_scope):  # reuse stays off: a new name is an error-free add
        v = gf.get_variable("v", (1,))
    assert v.name == "model/v" and first_op.name == "model/op"
    model_scope.reuse_variables()  # reuse set on the object carries into re-entries
    with gf.variable_scope(model_scope):
        assert gf.get_variable("v") is v


def test_top_level_reuse_variables_affects_the_root_scope():
    root = gf.get_variable_scope()
    assert (root.name, root.reuse, root.original_name_scope) == ("", False, "")
    w = gf.get_variable("w", (1,))
    with gf.variable_scope("s"):
        s = gf.get_variable("s", (1,))
    gf.get_variable_scope().reuse_variables()
    assert gf.get_variable_scope() is root and root.reuse is True
    assert gf.get_variable("w") is w
    with gf.variable_scope("s"):
        assert gf.get_variable("s") is s
    gf.reset_default_graph()  # a new graph has a new root scope
    assert gf.get_variable_scope().reuse is False


def test_default_name_scopes_and_name_scope_inside():
    with gf.variable_scope(None, default_name="x") as a:
        pass
    with gf.variable_scope(None, default_name="x") as b:
        pass
    assert (a.name, b.name) == ("x", "x_1")
    with gf.variable_scope("net", default_name="ignored") as net:
        with gf.name_scope("ops"):
            w = gf.get_variable("w", (1,))
            y = gf.identity(w, name="y")
    assert net.name == "net" and w.name == "net/w" and y.name == "net/ops/y"
    with pytest.raises(TypeError, match="name_or_scope is required"):
        gf.variable_scope(None)
    with pytest.raises(ValueError, match="reuse=True cannot be used without"):
        gf.variable_scope(None, default_name="x", reuse=True)
    values = [gf.constant(1.0)]
    with gf.variable_scope(None, "attn", values) as scope:  # TF1's positional order
        assert scope.name == "attn" and scope.reuse is False


def test_model_function_called_twice_shares_its_layers(backend):
    """The TF1 idiom: the same layer calls under a scope entered again with reuse=True."""
    x1 = gf.placeholder(gf.float32, (None, 3), name="x1")
    x2 = gf.placeholder(gf.float32, (None, 3), name="x2")

    def model(x):
        h = gf.layers.dense(x, 4, activation=gf.nn.relu)
        return gf.contrib.layers.fully_connected(h, 2, activation_fn=None)

    with gf.variable_scope("model"):
        y1 = model(x1)
    with gf.variable_scope("model", reuse=True):
        y2 = model(x2)
    names = [v.name for v in gf.trainable_variables()]
    assert names == ["model/dense/kernel", "model/dense/bias",
                     "model/fully_connected/weights", "model/fully_connected/biases"]
    value = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        a, b = sess.run([y1, y2], {x1: value, x2: value})
    np.testing.assert_array_equal(a, b)


def test_scope_initializer_and_dtype_are_inherited():
    with gf.variable_scope("a", initializer=gf.constant_initializer(7.0), dtype=gf.float64):
        with gf.variable_scope("b"):
            v = gf.get_variable("v", (2,))
    assert v.dtype is gf.float64
    with gf.Session() as sess:
        np.testing.assert_array_equal(sess.run(v), [7.0, 7.0])


# -- tf.contrib.layers -------------------------------------------------------------------


def test_fully_connected_and_flatten(backend):
    x = gf.placeholder(gf.float64, (None, 2, 3), name="x")
    flat = gf.contrib.layers.flatten(x)
    assert tuple(flat.shape) == (None, 6)
    y = gf.contrib.layers.fully_connected(flat, 4, outputs_collections="outs")
    z = gf.contrib.layers.fully_connected(y, 2, activation_fn=gf.nn.sigmoid,
                                          biases_initializer=None,
                                          variables_collections={"weights": ["W"]})
    names = [v.name for v in gf.model_variables()]
    assert names == ["fully_connected/weights", "fully_connected/biases",
                     "fully_connected_1/weights"]
    assert gf.get_collection("W") == [gf.model_variables()[2]]
    assert gf.get_collection("outs") == [y]
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(3, 2, 3))
    w1, b1, w2 = (rng.normal(size=v.shape) for v in gf.model_variables())
    with gf.Session(backend=backend) as sess:
        feed = {x: xv, **dict(zip(gf.model_variables(), (w1, b1, w2)))}
        got = sess.run(z, feed)
    h = np.maximum(xv.reshape(3, 6) @ w1 + b1, 0.0)
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-(h @ w2))), rtol=1e-12)


def test_xavier_and_variance_scaling_initializers():
    layers = gf.contrib.layers
    u = gf.get_variable("u", (400, 600), initializer=layers.xavier_initializer(seed=1))
    n = gf.get_variable("n", (400, 600),
                        initializer=layers.xavier_initializer(uniform=False, seed=2))
    he = gf.get_variable("he", (3, 3, 50, 64), initializer=layers.variance_scaling_initializer())
    with gf.Session() as sess:
        uv, nv, hv = sess.run([u, n, he])
    limit = np.sqrt(6.0 / 1000)
    assert np.abs(uv).max() <= limit and np.abs(uv).max() > 0.99 * limit
    # a normal truncated at 2 stddev keeps ~0.774 of its variance
    np.testing.assert_allclose(nv.std(), np.sqrt(2.6 / 1000) * 0.8796, rtol=0.02)
    np.testing.assert_allclose(hv.std(), np.sqrt(1.3 * 2.0 / (9 * 50)) * 0.8796, rtol=0.03)
    with pytest.raises(TypeError, match="Unknown mode"):
        layers.variance_scaling_initializer(mode="FAN_SUM")
    with pytest.raises(TypeError, match="non-floating"):
        layers.xavier_initializer(dtype=gf.int32)


def test_apply_regularization():
    w = gf.Variable([3.0, 4.0], name="w")
    gf.add_to_collection(gf.GraphKeys.WEIGHTS, w)
    total = gf.contrib.layers.apply_regularization(gf.contrib.layers.l2_regularizer(0.1))
    assert gf.get_collection(gf.GraphKeys.REGULARIZATION_LOSSES) == [total]
    both = gf.contrib.layers.l1_l2_regularizer(1.0, 0.1)(w)
    with gf.Session() as sess:
        np.testing.assert_allclose(sess.run(total), 0.1 * 25 / 2, rtol=1e-6)
        np.testing.assert_allclose(sess.run(both), 7.0 + 0.1 * 25 / 2, rtol=1e-6)


# -- tf.app and tf.flags -----------------------------------------------------------------


@pytest.fixture
def fresh_flags():
    return gf.flags.FlagValues()


def _define(flags):
    f = gf.app.flags
    f.DEFINE_string("data_dir", "/tmp/data", "where the data is", flag_values=flags)
    f.DEFINE_integer("epochs", 10, "passes", flag_values=flags, lower_bound=1)
    f.DEFINE_float("learning_rate", 0.01, "step size", flag_values=flags)
    f.DEFINE_boolean("fake_data", False, "use fake data", flag_values=flags)
    f.DEFINE_bool("shuffle", True, "shuffle", flag_values=flags)
    f.DEFINE_list("layers", "64,32", "sizes", flag_values=flags)
    f.DEFINE_enum("mode", "train", ["train", "eval"], "what to do", flag_values=flags)


def test_flags_parse_and_leave_the_rest(fresh_flags):
    _define(fresh_flags)
    rest = fresh_flags(["prog", "--epochs=3", "--learning_rate", "0.5", "-fake_data",
                        "--noshuffle", "--layers=8,4", "--unknown=1", "pos", "--mode", "eval"],
                       known_only=True)
    assert rest == ["prog", "--unknown=1", "pos"]
    assert fresh_flags.epochs == 3 and fresh_flags.learning_rate == 0.5
    assert fresh_flags.fake_data is True and fresh_flags.shuffle is False
    assert fresh_flags.layers == ["8", "4"] and fresh_flags.mode == "eval"
    assert fresh_flags.data_dir == "/tmp/data"
    fresh_flags(["prog", "--fake_data=false", "--shuffle=1"])
    assert fresh_flags.fake_data is False and fresh_flags.shuffle is True
    assert fresh_flags.epochs == 3  # as TF1's (absl's): a parse sets only the flags given
    fresh_flags.epochs = 7
    assert fresh_flags.epochs == 7 and fresh_flags["epochs"].value == 7
    assert fresh_flags.flag_values_dict()["data_dir"] == "/tmp/data"
    assert fresh_flags.__flags["mode"].value == "eval"  # TF >= 1.5's FLAGS.__flags: Flags
    with pytest.raises(AttributeError):
        fresh_flags.nope  # noqa: B018
    with pytest.raises(gf.flags.UnrecognizedFlagError):
        fresh_flags(["prog", "--unknown"], known_only=False)
    for bad in (["p", "--epochs=x"], ["p", "--epochs=0"], ["p", "--mode=test"],
                ["p", "--fake_data=maybe"]):
        with pytest.raises(gf.flags.IllegalFlagValueError):
            fresh_flags(bad)
    with pytest.raises(gf.flags.DuplicateFlagError):
        gf.flags.DEFINE_string("mode", "x", "again", flag_values=fresh_flags)


def test_flags_parse_sys_argv_lazily(monkeypatch):
    # gf.flags.FLAGS is this wrapper around absl's global FlagValues, as TF1's tf.flags.FLAGS
    assert type(gf.flags.FLAGS) is gf.flags._FlagValuesWrapper
    fresh_flags = gf.flags._FlagValuesWrapper(gf.flags.FlagValues())
    monkeypatch.setattr(sys, "argv", ["prog", "--epochs", "4", "--other"])
    _define(fresh_flags)
    assert not fresh_flags.is_parsed()
    assert fresh_flags.epochs == 4 and fresh_flags.is_parsed()
    gf.app.flags.DEFINE_integer("late", 1, "defined after the parse", flag_values=fresh_flags)
    monkeypatch.setattr(sys, "argv", ["prog", "--late=5"])  # the parsed argv is kept
    assert fresh_flags.late == 1 and fresh_flags.epochs == 4


def test_app_run_parses_flags_and_calls_main(monkeypatch):
    flags = gf.flags.FlagValues()
    monkeypatch.setattr(app, "FLAGS", flags)
    _define(flags)
    seen = {}

    def main(argv):
        seen["argv"], seen["epochs"] = argv, flags.epochs
        return 3

    with pytest.raises(SystemExit) as exit_info:
        gf.app.run(main, argv=["prog", "--epochs=2", "extra"])
    assert exit_info.value.code == 3
    assert seen == {"argv": ["prog", "extra"], "epochs": 2}
    with pytest.raises(SystemExit) as exit_info:
        gf.app.run(lambda argv: None, argv=["prog", "--epochs=zero"])
    assert exit_info.value.code == 1


def test_tf1_script_with_app_run_and_flags(tmp_path):
    """A plain TF1 program: tf.app.flags, tf.logging, ConfigProto, tf.device, variable
    scopes, contrib.layers, initialize_all_variables, tf.app.run."""
    script = tmp_path / "tf1_script.py"
    script.write_text(textwrap.dedent('''
        import numpy as np
        import gradflow as tf

        flags = tf.app.flags
        flags.DEFINE_integer("steps", 5, "training steps")
        flags.DEFINE_float("lr", 0.5, "learning rate")
        FLAGS = flags.FLAGS
        tf.logging.set_verbosity(tf.logging.INFO)

        def main(_):
            x = tf.placeholder(tf.float32, [None, 2])
            y = tf.placeholder(tf.float32, [None, 1])
            with tf.device("/cpu:0"), tf.variable_scope("net") as scope:
                pred = tf.contrib.layers.fully_connected(x, 1, activation_fn=None)
                scope.reuse_variables()
                w = tf.get_variable("fully_connected/weights")
            loss = tf.reduce_mean(tf.square(pred - y))
            train = tf.train.GradientDescentOptimizer(FLAGS.lr).minimize(loss)
            config = tf.ConfigProto(allow_soft_placement=True, log_device_placement=False)
            config.gpu_options.allow_growth = True
            xs = np.array([[0, 0], [1, 0], [0, 1], [1, 1]], np.float32)
            ys = xs @ np.array([[2.0], [-1.0]], np.float32)
            with tf.Session(config=config) as sess:
                sess.run(tf.initialize_all_variables())
                for step in range(FLAGS.steps):
                    _, l = sess.run([train, loss], {x: xs, y: ys})
                    tf.logging.info("step %d loss %.4f", step, l)
                print("weights", sess.run(w).ravel().round(1).tolist())
            return 0

        if __name__ == "__main__":
            tf.app.run()
    '''))
    result = subprocess.run([sys.executable, str(script), "--steps=200", "--lr", "0.5"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "weights [2.0, -1.0]" in result.stdout
    assert "INFO:gradflow:step 199 loss" in result.stderr


# -- tf.logging --------------------------------------------------------------------------


def test_logging(caplog):
    log = gf.logging
    assert (log.DEBUG, log.INFO, log.WARN, log.ERROR) == (10, 20, 30, 40)
    before = log.get_verbosity()
    try:
        log.set_verbosity(log.INFO)
        assert log.get_verbosity() == log.INFO
        with caplog.at_level(logging.DEBUG, logger="gradflow"):
            log.set_verbosity(log.INFO)
            log.debug("hidden %d", 1)
            log.info("step %d", 2)
            log.warn("careful")
            log.warning("careful %s", "twice")
            log.error("bad")
            for k in range(5):
                log.log_every_n(log.INFO, "every %d", 2, k)
                log.log_first_n(log.INFO, "first %d", 1, k)
        messages = [r.getMessage() for r in caplog.records if r.name == "gradflow"]
        assert messages == ["step 2", "careful", "careful twice", "bad", "every 0",
                            "first 0", "every 2", "every 4"]
    finally:
        log.set_verbosity(before)


# -- ConfigProto and tf.device -----------------------------------------------------------


def test_config_proto_fields():
    gpu = gf.GPUOptions(per_process_gpu_memory_fraction=0.4, allow_growth=True)
    config = gf.ConfigProto(allow_soft_placement=True, log_device_placement=True,
                            gpu_options=gpu, intra_op_parallelism_threads=2,
                            inter_op_parallelism_threads=4, device_count={"GPU": 0})
    assert config.gpu_options.per_process_gpu_memory_fraction == 0.4
    assert config.device_count == {"GPU": 0} and config.intra_op_parallelism_threads == 2
    fresh = gf.ConfigProto()
    assert fresh.gpu_options.allow_growth is False and fresh.allow_soft_placement is False
    fresh.gpu_options.allow_growth = True
    fresh.graph_options.optimizer_options.global_jit_level = gf.OptimizerOptions.ON_1
    assert gf.ConfigProto().gpu_options.allow_growth is False  # no shared default
    with pytest.raises(ValueError, match='no "allow_growth" field'):
        gf.ConfigProto(allow_growth=True)
    with pytest.raises(AttributeError, match="no field"):
        fresh.gpu_options.alow_growth = True
    with pytest.raises(TypeError, match="must be an int"):
        gf.ConfigProto(intra_op_parallelism_threads="2")
    options = gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE)
    metadata = gf.RunMetadata()
    x = gf.constant(2.0)
    with gf.Session(config=config) as sess:
        assert sess.run(x * 3, options=options, run_metadata=metadata) == 6.0


def test_device_blocks():
    from gradflow.config import current_device

    assert current_device() == ""
    with gf.device("/gpu:0"):
        y = gf.constant(1.0) + 1.0
        assert current_device() == "/device:GPU:0"
        with gf.device("/job:worker/task:1"):
            assert current_device() == "/job:worker/task:1/device:GPU:0"
        with gf.device("/cpu:0"):
            assert current_device() == "/device:CPU:0"
        with gf.device(None):
            assert current_device() == ""
        with gf.device(lambda op: "/cpu:0"):
            assert current_device() == "/device:GPU:0"
    assert current_device() == ""
    with gf.device("/device:GPU:*"), gf.device("CPU"):
        assert current_device() == "/device:CPU:*"
    for bad, match in (("/gpu0", "Unknown attribute: 'gpu0'"),
                       ("/cpu:0/gpu:0", "multiple device types"),
                       ("/device:GPU:x", "bad index")):
        with pytest.raises(ValueError, match=match):
            with gf.device(bad):
                pass
    with gf.Session() as sess:
        assert sess.run(y) == 2.0
