"""gf.estimator (TF1's tf.estimator): train / evaluate / predict through checkpoints in
model_dir, numpy_input_fn, EstimatorSpec's checks, seeds, warm starts."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

RNG = np.random.default_rng(0)
X = RNG.standard_normal((100, 4)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5, 0.0]) > 0).astype(np.int64)


def model_fn(features, labels, mode, params):
    logits = gf.layers.dense(features["x"], 2, name="out")
    classes = gf.argmax(logits, 1)
    if mode == gf.estimator.ModeKeys.PREDICT:
        return gf.estimator.EstimatorSpec(mode, predictions={"class": classes,
                                                             "logits": logits})
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    train = gf.train.GradientDescentOptimizer(params["lr"]).minimize(
        loss, global_step=gf.train.get_global_step())
    return gf.estimator.EstimatorSpec(
        mode, predictions=classes, loss=loss, train_op=train,
        eval_metric_ops={"accuracy": gf.metrics.accuracy(labels, classes)})


def estimator(tmp_path, seed=1, lr=0.5, **kwargs):
    config = gf.estimator.RunConfig(tf_random_seed=seed, save_checkpoints_steps=10)
    return gf.estimator.Estimator(model_fn, model_dir=str(tmp_path), config=config,
                                  params={"lr": lr}, **kwargs)


def batches(shuffle, epochs=1, batch_size=32):
    return gf.estimator.inputs.numpy_input_fn({"x": X}, Y, batch_size=batch_size,
                                              num_epochs=epochs, shuffle=shuffle)


def _numpy_logits(est, x):
    return x @ est.get_variable_value("out/kernel") + est.get_variable_value("out/bias")


def test_train_resumes_from_its_checkpoints_and_evaluate_and_predict_use_them(tmp_path):
    est = estimator(tmp_path)
    with pytest.raises(ValueError, match="Could not find trained model in model_dir"):
        est.evaluate(batches(False))
    est.train(batches(True, epochs=None), steps=15)
    assert est.get_variable_value("global_step") == 15
    est.train(batches(True, epochs=None), steps=5)  # 5 more, from the checkpoint
    assert est.get_variable_value("global_step") == 20
    est.train(batches(True, epochs=None), max_steps=20)  # already there: no step
    assert est.get_variable_value("global_step") == 20
    est.train(batches(True, epochs=2))  # to the end of the input: 200 examples in 7 batches
    assert est.get_variable_value("global_step") == 27
    assert est.latest_checkpoint() == str(tmp_path / "model.ckpt-27")

    logits = _numpy_logits(est, X)
    result = est.evaluate(batches(False))
    assert result["global_step"] == 27
    assert result["accuracy"] == pytest.approx(np.mean(logits.argmax(1) == Y))
    shifted = logits - logits.max(1, keepdims=True)
    losses = np.log(np.exp(shifted).sum(1)) - shifted[np.arange(len(Y)), Y]
    per_batch = [losses[k:k + 32].mean() for k in range(0, len(Y), 32)]  # TF1: batch means
    assert result["loss"] == pytest.approx(np.mean(per_batch), rel=1e-5)
    assert est.evaluate(batches(False), steps=1)["accuracy"] == pytest.approx(
        np.mean(logits[:32].argmax(1) == Y[:32]))

    predicted = list(est.predict(gf.estimator.inputs.numpy_input_fn(
        {"x": X}, batch_size=32, shuffle=False)))
    assert len(predicted) == len(X)
    assert [p["class"] for p in predicted] == logits.argmax(1).tolist()
    np.testing.assert_allclose(np.stack([p["logits"] for p in predicted]), logits, rtol=1e-5,
                               atol=1e-6)
    batched = list(est.predict(gf.estimator.inputs.numpy_input_fn(
        {"x": X}, batch_size=32, shuffle=False), predict_keys=["class"],
        yield_single_examples=False))
    assert [len(b["class"]) for b in batched] == [32, 32, 32, 4] and set(batched[0]) == {"class"}


def test_the_same_seed_trains_the_same_weights(tmp_path):
    weights = []
    for k in range(2):
        est = estimator(tmp_path / str(k), seed=7).train(batches(True, epochs=3))
        weights.append(est.get_variable_value("out/kernel"))
    other = estimator(tmp_path / "other", seed=8).train(batches(True, epochs=3))
    np.testing.assert_array_equal(weights[0], weights[1])
    assert not np.array_equal(weights[0], other.get_variable_value("out/kernel"))


def test_warm_start_from_another_model_dir_takes_its_trainable_variables(tmp_path):
    first = estimator(tmp_path / "first").train(batches(True, epochs=2))
    # a learning rate of 0: the step changes nothing but the global step
    second = estimator(tmp_path / "second", lr=0.0, warm_start_from=str(tmp_path / "first"))
    second.train(batches(False), steps=1)
    for name in ("out/kernel", "out/bias"):
        np.testing.assert_array_equal(second.get_variable_value(name),
                                      first.get_variable_value(name))
    assert second.get_variable_value("global_step") == 1  # not warm-started, as in TF1
    fresh = estimator(tmp_path / "fresh", lr=0.0).train(batches(False), steps=1)
    assert not np.array_equal(fresh.get_variable_value("out/kernel"),
                              first.get_variable_value("out/kernel"))


def test_an_input_fn_may_return_a_dataset(tmp_path):
    def input_fn():
        return gf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(50)

    est = estimator(tmp_path).train(input_fn)
    assert est.get_variable_value("global_step") == 2
    assert set(est.evaluate(input_fn)) == {"accuracy", "loss", "global_step"}


def test_bad_specs_and_inputs_say_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match="mode 'train' needs loss and train_op"):
        gf.estimator.EstimatorSpec(gf.estimator.ModeKeys.TRAIN, predictions=1)
    with pytest.raises(ValueError, match="mode must be one of ModeKeys, got 'training'"):
        gf.estimator.EstimatorSpec("training")
    with pytest.raises(ValueError, match="shuffle must be given as True or False, got None"):
        gf.estimator.inputs.numpy_input_fn({"x": X}, Y)
    with pytest.raises(ValueError, match=r"different lengths: \{\"x\['x'\]\": 100, 'y': 99\}"):
        gf.estimator.inputs.numpy_input_fn({"x": X}, Y[:99], shuffle=False)
    with pytest.raises(ValueError, match="give steps or max_steps, not both"):
        estimator(tmp_path).train(batches(False), steps=1, max_steps=2)
    with pytest.raises(ValueError, match="model_fn must return an EstimatorSpec, got dict"):
        gf.estimator.Estimator(lambda features, labels, mode: {}, model_dir=str(tmp_path)) \
            .train(batches(False))
    config = gf.estimator.RunConfig(save_checkpoints_steps=5).replace(save_checkpoints_secs=60)
    assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (None, 60)
