"""``tf.saved_model``'s TF1 names added here: the constants (TensorFlow 2.21's values,
read once from ``tensorflow.python.saved_model.constants`` and pasted), ``Builder``,
``contains_saved_model``, ``main_op``, and the classify and
regress signatures with ``is_valid_signature`` judging them as TF 2.21 does."""

from __future__ import annotations

import pytest

import gradflow as gf

sm = gf.saved_model


@pytest.fixture(autouse=True)
def fresh_graph():
    gf.reset_default_graph()


def test_constants_are_tensorflows():
    expected = {"ASSETS_DIRECTORY": "assets", "ASSETS_KEY": "saved_model_assets",
                "LEGACY_INIT_OP_KEY": "legacy_init_op", "MAIN_OP_KEY": "saved_model_main_op",
                "SAVED_MODEL_SCHEMA_VERSION": 1, "SAVED_MODEL_FILENAME_PB": "saved_model.pb",
                "SAVED_MODEL_FILENAME_PBTXT": "saved_model.pbtxt", "DEBUG_DIRECTORY": "debug",
                "DEBUG_INFO_FILENAME_PB": "saved_model_debug_info.pb",
                "VARIABLES_DIRECTORY": "variables", "VARIABLES_FILENAME": "variables"}
    for name, value in expected.items():
        assert getattr(sm.constants, name) == value and getattr(sm, name) == value
    assert (sm.SERVING, sm.TRAINING, sm.GPU, sm.TPU) == ("serve", "train", "gpu", "tpu")
    assert sm.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert sm.CLASSIFY_METHOD_NAME == "tensorflow/serving/classify"
    assert (sm.CLASSIFY_OUTPUT_CLASSES, sm.CLASSIFY_OUTPUT_SCORES) == ("classes", "scores")
    assert sm.Builder is sm.SavedModelBuilder


def test_classify_and_regress_signatures():
    examples = gf.placeholder(gf.string, (None,), name="examples")
    scores = gf.placeholder(gf.float32, (None, 3), name="scores")
    classes = gf.placeholder(gf.string, (None, 3), name="classes")
    sig = sm.classification_signature_def(examples, classes, scores)
    assert sig.method_name == "tensorflow/serving/classify"
    assert set(sig.inputs) == {"inputs"} and set(sig.outputs) == {"classes", "scores"}
    assert sm.is_valid_signature(sig)
    reg = sm.signature_def_utils.regression_signature_def(examples, gf.reduce_sum(scores, 1))
    assert reg.method_name == "tensorflow/serving/regress" and sm.is_valid_signature(reg)
    with pytest.raises(ValueError, match="Classification input tensors must be of type string"):
        sm.classification_signature_def(scores, classes, None)
    with pytest.raises(ValueError, match="cannot both be None"):
        sm.classification_signature_def(examples, None, None)
    with pytest.raises(ValueError, match="Classification scores must be a float Tensor"):
        sm.classification_signature_def(examples, None, gf.cast(scores, gf.float64))
    with pytest.raises(ValueError, match="Regression output tensors must be of type float"):
        sm.regression_signature_def(examples, classes)
    pred = sm.signature_def_utils.predict_signature_def({"x": scores}, {"y": scores})
    assert sm.is_valid_signature(pred)
    bad = sm.signature_def_utils.build_signature_def(
        {"inputs": sm.utils.build_tensor_info(scores)},
        {"outputs": sm.utils.build_tensor_info(scores)}, sm.REGRESS_METHOD_NAME)
    assert not sm.is_valid_signature(bad) and not sm.is_valid_signature(None)


def test_main_op_initializes_and_contains_saved_model(tmp_path):
    w = gf.Variable([1.0, 2.0], name="w")
    n = gf.Variable(0, name="n", collections=[gf.GraphKeys.LOCAL_VARIABLES])
    op = sm.main_op.main_op()
    with gf.Session() as sess:
        sess.run(op)
        assert sess.run(w).tolist() == [1.0, 2.0] and sess.run(n) == 0
        out = str(tmp_path / "export")
        assert not sm.contains_saved_model(out)
        sm.simple_save(sess, out, {"w_in": gf.placeholder(gf.float32, (2,), name="x")},
                       {"y": gf.identity(w * 2.0, name="y")})
    assert sm.contains_saved_model(out)
