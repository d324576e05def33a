"""TF1's ``tf.saved_model``: save a servable model (graph, signatures, variable values)
to a folder and load it into a fresh session, on any backend.

>>> gf.saved_model.simple_save(sess, "export/1", inputs={"x": x}, outputs={"probs": probs})
>>> with gf.Session(graph=gf.Graph(), backend="torch") as sess:
...     meta = gf.saved_model.loader.load(sess, ["serve"], "export/1")

The folder holds ``saved_model.json`` (format version, tags, signatures and the
nodes each signature needs), ``saved_model.npz`` (constants) and
``variables/variables.npz``; no pickle, and no path is read from a file.
"""

from gradflow.saved_model import (
    builder,
    constants,
    loader,
    main_op,
    signature_constants,
    signature_def_utils,
    tag_constants,
    utils,
)
from gradflow.saved_model._files import SavedModelError
from gradflow.saved_model.builder import SavedModelBuilder
from gradflow.saved_model.constants import (
    ASSETS_DIRECTORY,
    ASSETS_KEY,
    DEBUG_DIRECTORY,
    DEBUG_INFO_FILENAME_PB,
    LEGACY_INIT_OP_KEY,
    MAIN_OP_KEY,
    SAVED_MODEL_FILENAME_PB,
    SAVED_MODEL_FILENAME_PBTXT,
    SAVED_MODEL_SCHEMA_VERSION,
    VARIABLES_DIRECTORY,
    VARIABLES_FILENAME,
)
from gradflow.saved_model.loader import load, maybe_saved_model_directory
from gradflow.saved_model.signature_constants import (
    CLASSIFY_INPUTS,
    CLASSIFY_METHOD_NAME,
    CLASSIFY_OUTPUT_CLASSES,
    CLASSIFY_OUTPUT_SCORES,
    DEFAULT_SERVING_SIGNATURE_DEF_KEY,
    PREDICT_INPUTS,
    PREDICT_METHOD_NAME,
    PREDICT_OUTPUTS,
    REGRESS_INPUTS,
    REGRESS_METHOD_NAME,
    REGRESS_OUTPUTS,
)
from gradflow.saved_model.signature_def_utils import (
    build_signature_def,
    classification_signature_def,
    is_valid_signature,
    predict_signature_def,
    regression_signature_def,
)
from gradflow.saved_model.tag_constants import GPU, SERVING, TPU, TRAINING
from gradflow.saved_model.utils import build_tensor_info, get_tensor_from_tensor_info

Builder = SavedModelBuilder  # TF1's tf.saved_model.Builder


def contains_saved_model(export_dir) -> bool:
    """Whether the folder ``export_dir`` holds a gradflow SavedModel (TF1
    ``tf.saved_model.contains_saved_model``, which looks for TensorFlow's
    ``saved_model.pb``; gradflow's graph file is ``saved_model.json``)."""
    return maybe_saved_model_directory(export_dir)


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Save ``session``'s model with one predict signature, ``serving_default``, under the
    ``serve`` tag (TF1 ``tf.saved_model.simple_save``); ``inputs`` and ``outputs`` map
    names to tensors.

    >>> gf.saved_model.simple_save(sess, "export/1", {"x": x}, {"probs": probs})
    """
    b = SavedModelBuilder(export_dir)
    signature = predict_signature_def(inputs=inputs, outputs=outputs)
    b.add_meta_graph_and_variables(
        session, [tag_constants.SERVING],
        signature_def_map={signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signature},
        legacy_init_op=legacy_init_op)
    return b.save()


__all__ = ["ASSETS_DIRECTORY", "ASSETS_KEY", "Builder", "CLASSIFY_INPUTS", "CLASSIFY_METHOD_NAME",
           "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "DEBUG_DIRECTORY",
           "DEBUG_INFO_FILENAME_PB", "DEFAULT_SERVING_SIGNATURE_DEF_KEY", "GPU",
           "LEGACY_INIT_OP_KEY", "MAIN_OP_KEY", "PREDICT_INPUTS", "PREDICT_METHOD_NAME",
           "PREDICT_OUTPUTS", "REGRESS_INPUTS", "REGRESS_METHOD_NAME", "REGRESS_OUTPUTS",
           "SAVED_MODEL_FILENAME_PB", "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION",
           "SERVING", "TPU", "TRAINING", "VARIABLES_DIRECTORY", "VARIABLES_FILENAME",
           "classification_signature_def", "constants", "contains_saved_model",
           "is_valid_signature", "main_op", "regression_signature_def",
           "SavedModelBuilder", "SavedModelError", "build_signature_def", "build_tensor_info",
           "builder", "get_tensor_from_tensor_info", "load", "loader",
           "maybe_saved_model_directory", "predict_signature_def", "signature_constants",
           "signature_def_utils", "simple_save", "tag_constants", "utils"]
