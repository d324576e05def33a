"""``tf.contrib``: ``framework.arg_scope``, the ``contrib.layers`` functions
(``dropout``, ``conv2d``, ``fully_connected`` on unknown leading dims) and
``optimize_loss``."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.contrib import layers
from gradflow.contrib.framework import (
    add_arg_scope,
    arg_scope,
    arg_scoped_arguments,
    current_arg_scope,
    has_arg_scope,
)


@add_arg_scope
def _op(a, b=1, c=2):
    return a, b, c


@add_arg_scope
def _other(a, b=10):
    return a, b


def test_arg_scope_nests_as_tf1():
    assert _op(0) == (0, 1, 2)
    with arg_scope([_op], b=5) as outer:
        assert _op(0) == (0, 5, 2)
        with arg_scope([_op, _other], b=7) as inner:
            assert _op(0) == (0, 7, 2) and _other(0) == (0, 7)
            with arg_scope([_op], c=8):  # merged with the outer arguments of _op
                assert _op(0) == (0, 7, 8)
                assert _op(0, c=3) == (0, 7, 3)  # the call wins
                assert _op(0, 4) == (0, 4, 8)  # also by position
        with arg_scope([_other], b=9):
            assert _op(0) == (0, 5, 2) and _other(0) == (0, 9)
        assert _op(0) == (0, 5, 2) and _other(0) == (0, 10)
    assert current_arg_scope() == {}
    with arg_scope(inner):  # re-entering a saved scope restores exactly it
        assert _op(0) == (0, 7, 2)
        with arg_scope(outer):
            assert _op(0) == (0, 5, 2) and _other(0) == (0, 10)
    assert has_arg_scope(_op) and not has_arg_scope(len)
    assert arg_scoped_arguments(_op) == ["a", "b", "c"]


def test_arg_scope_refuses_what_tf1_refuses():
    with pytest.raises(ValueError, match="len is not decorated with @add_arg_scope"):
        with arg_scope([len], b=1):
            pass
    with pytest.raises(ValueError, match="kwargs must be empty"):
        with arg_scope({}, b=1):
            pass
    with pytest.raises(TypeError, match="list/tuple or reused scope"):
        with arg_scope(_op, b=1):
            pass


def test_arg_scope_around_fully_connected_batch_norm_and_dropout(backend):
    gf.set_random_seed(0)
    x = gf.placeholder(gf.float32, (None, 4), name="x")
    training = gf.placeholder(gf.bool, (), name="training")
    with arg_scope([layers.fully_connected], activation_fn=None,
                   normalizer_fn=layers.batch_norm,
                   normalizer_params={"is_training": training, "scale": True},
                   weights_initializer=gf.constant_initializer(0.5)):
        with arg_scope([layers.dropout], keep_prob=0.5, is_training=training):
            h = layers.dropout(layers.fully_connected(x, 3, scope="fc"))
    names = sorted(v.name for v in gf.global_variables())
    assert names == ["fc/BatchNorm/beta", "fc/BatchNorm/gamma", "fc/BatchNorm/moving_mean",
                     "fc/BatchNorm/moving_variance", "fc/weights"]  # no biases: normalizer
    xs = np.array([[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 3, 0], [1, 1, 1, 1]], np.float32)
    z = xs @ np.full((4, 3), 0.5, np.float32)
    want = (z - z.mean(0)) / np.sqrt(z.var(0) + 1e-3)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        dropped = sess.run(h, {x: xs, training: True})
        kept = dropped != 0
        np.testing.assert_allclose(dropped[kept], 2 * want[kept], rtol=1e-4, atol=1e-5)
        assert 0 < kept.sum() < kept.size
        infer = sess.run(h, {x: xs, training: False})  # moving averages: 0 and 1
        np.testing.assert_allclose(infer, z / np.sqrt(1 + 1e-3), rtol=1e-5)


def test_contrib_dropout_outside_training_is_the_identity():
    x = gf.constant(np.ones((2, 3), np.float32))
    assert layers.dropout(x, is_training=False) is x
    with pytest.raises(ValueError, match="keep_prob must be in"):
        layers.dropout(x, keep_prob=0.0)


def test_contrib_conv2d_variables_and_numbers(backend):
    x = gf.placeholder(gf.float64, (None, 4, 4, 2), name="images")
    w0 = np.random.default_rng(1).normal(size=(3, 3, 2, 5))
    with arg_scope([layers.conv2d], weights_initializer=gf.constant_initializer(w0),
                   biases_initializer=gf.constant_initializer(0.25)):
        y = layers.conv2d(x, 5, [3, 3], stride=2)
    assert y.shape == (None, 2, 2, 5)
    assert [v.name for v in gf.global_variables()] == ["Conv/weights", "Conv/biases"]
    assert len(gf.get_collection(gf.GraphKeys.MODEL_VARIABLES)) == 2
    xs = np.random.default_rng(2).normal(size=(1, 4, 4, 2))
    padded = np.pad(xs, ((0, 0), (0, 1), (0, 1), (0, 0)))  # SAME, stride 2: pad after
    want = np.array([[[np.einsum("hwc,hwco->o", padded[0, i:i + 3, j:j + 3], w0)
                       for j in (0, 2)] for i in (0, 2)]])
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {x: xs}), np.maximum(want + 0.25, 0),
                                   rtol=1e-10)


def test_fully_connected_on_several_unknown_leading_dims(backend):
    x = gf.placeholder(gf.float64, (None, None, 3), name="x")
    y = layers.fully_connected(x, 2, activation_fn=None,
                               weights_initializer=gf.constant_initializer(
                                   np.arange(6.0).reshape(3, 2)))
    assert y.shape == (None, None, 2)
    grad, = gf.gradients(gf.reduce_sum(y * y), [x])
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for shape in ((2, 5, 3), (4, 1, 3)):
            xs = np.random.default_rng(0).normal(size=shape)
            out, g = sess.run([y, grad], {x: xs})
            w = np.arange(6.0).reshape(3, 2)
            np.testing.assert_allclose(out, xs @ w, rtol=1e-12)
            np.testing.assert_allclose(g, 2 * (xs @ w) @ w.T, rtol=1e-12)


@pytest.mark.parametrize("optimizer", ["SGD", gf.train.GradientDescentOptimizer,
                                       lambda lr: gf.train.GradientDescentOptimizer(lr)])
def test_optimize_loss_runs_a_step_and_returns_the_loss(optimizer, backend):
    pytest.importorskip("tensorboardX", reason="summaries=['loss'] are built with tensorboardX")
    w = gf.Variable(np.array([3.0, -4.0]), name="w")
    loss = gf.reduce_sum(w * w)
    step = gf.train.get_or_create_global_step()
    train_op = layers.optimize_loss(loss, step, learning_rate=0.1, optimizer=optimizer,
                                    clip_gradients=5.0, summaries=["loss"])
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        assert sess.run(train_op) == pytest.approx(25.0)
        # gradient (6, -8) has norm 10, clipped to 5: (3, -4); one SGD step of 0.1
        np.testing.assert_allclose(sess.run(w), [2.7, -3.6], rtol=1e-12)
        assert sess.run(step) == 1
    assert len(gf.get_collection(gf.GraphKeys.SUMMARIES)) == 1


def test_optimize_loss_refuses_an_unknown_optimizer():
    w = gf.Variable(1.0)
    with pytest.raises(ValueError, match="Optimizer name should be one of"):
        layers.optimize_loss(w * w, None, 0.1, "Nesterov")


def test_layer_norm_normalizes_each_example_over_its_last_axes_as_tf1(backend):
    # BERT's modeling.py: layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1, scope=...)
    x = np.random.default_rng(0).normal(2.0, 3.0, (2, 3, 4))
    with gf.Graph().as_default():
        out = gf.contrib.layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1,
                                           scope="ln")
        whole = gf.contrib.layers.layer_norm(x, activation_fn=gf.nn.relu)  # axes 1.. , [4]
        names = [v.name for v in gf.trainable_variables()]
        model = [v.name for v in gf.model_variables()]
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            got, got_whole = sess.run([out, whole])
    assert names == model == ["ln/beta", "ln/gamma", "LayerNorm/beta", "LayerNorm/gamma"]
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-12), rtol=1e-12, atol=1e-12)
    mean, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    np.testing.assert_allclose(got_whole, np.maximum((x - mean) / np.sqrt(var + 1e-12), 0),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="begin_norm_axis"):
        gf.contrib.layers.layer_norm(x, begin_norm_axis=3)


def test_expand_dims_takes_a_list_of_one_axis_and_tf1s_dim():
    x = gf.constant([[1, 2], [3, 4]])
    assert gf.expand_dims(x, axis=[-1]).shape == (2, 2, 1)  # BERT's embedding_lookup
    assert gf.expand_dims(x, dim=0).shape == (1, 2, 2)
    with pytest.raises(ValueError, match="one int"):
        gf.expand_dims(x, [0, 1])


def test_hparams_keep_each_values_type_as_tf1():
    from gradflow.contrib.training import HParams

    hp = HParams(n_embd=768, learning_rate=0.1, activation="relu", use_bias=True, sizes=[1, 2])
    hp.override_from_dict({"n_embd": 16, "learning_rate": 1})  # gpt-2's model.py
    assert (hp.n_embd, hp.learning_rate) == (16, 1.0) and isinstance(hp.learning_rate, float)
    hp.parse("learning_rate=0.01, activation=tanh,use_bias=false,sizes=[3, 4]")
    assert hp.values() == {"n_embd": 16, "learning_rate": 0.01, "activation": "tanh",
                           "use_bias": False, "sizes": [3, 4]}
    assert "n_embd" in hp and hp.get("missing", 5) == 5
    other = HParams(n_embd=1, activation="relu").parse_json('{"n_embd": 2, "activation": "gelu"}')
    assert other.to_json(sort_keys=True) == '{"activation": "gelu", "n_embd": 2}'
    hp.add_hparam("dropout", 0.5)
    hp.del_hparam("dropout")
    assert "dropout" not in hp
    with pytest.raises(ValueError, match="'n_embd' is an int"):
        hp.set_hparam("n_embd", 2.5)
    with pytest.raises(ValueError, match="'n_embd' is an int"):
        hp.parse("n_embd=abc")
    with pytest.raises(KeyError, match="no hyperparameter named 'depth'"):
        hp.parse("depth=3")
    with pytest.raises(ValueError, match="already used"):
        hp.add_hparam("n_embd", 3)


def test_newaxis_inserts_an_axis_in_indexing():
    x = gf.constant([[1.0, 2.0], [3.0, 4.0]])
    with gf.Session() as sess:
        assert sess.run(x[:, -1, gf.newaxis]).tolist() == [[2.0], [4.0]]  # gpt-2's sample.py


def test_vocabulary_processor_maps_documents_to_padded_word_ids(tmp_path):
    # a text CNN's preprocessing: ids in the order words are first seen, 0 for padding and
    # for words unseen at fit time; TF1's tokenizer splits acronyms and CamelCase words
    from gradflow.contrib import learn

    docs = ["the cat sat", "the dog, the cat!", "it's a well-known NASAProgram"]
    vp = learn.preprocessing.VocabularyProcessor(4)
    rows = np.array(list(vp.fit_transform(docs)))
    assert rows.dtype == np.int64 and rows.tolist() == [[1, 2, 3, 0], [1, 4, 1, 2],
                                                        [5, 6, 7, 8]]
    assert len(vp.vocabulary_) == 10  # <UNK> and 9 words ("NASA", "Program" the last two)
    assert list(vp.reverse([[8, 9, 0]])) == ["NASA Program <UNK>"]
    assert [r.tolist() for r in vp.transform(["a bird sat"])] == [[6, 0, 3, 0]]
    vp.save(str(tmp_path / "vocab"))
    back = learn.preprocessing.VocabularyProcessor.restore(str(tmp_path / "vocab"))
    assert back.max_document_length == 4 and len(back.vocabulary_) == 10
    assert [r.tolist() for r in back.transform(docs[1:2])] == [[1, 4, 1, 2]]
    # min_frequency keeps words seen more often, renumbered by count, ties alphabetically
    vp = learn.preprocessing.VocabularyProcessor(3, min_frequency=1)
    rows = [r.tolist() for r in vp.fit_transform(["b a c", "c a", "a b d"])]
    assert rows == [[2, 1, 3], [3, 1, 0], [1, 2, 0]]  # a: 3 times, b and c: twice, d: once
