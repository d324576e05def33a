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
    loader,
    signature_constants,
    signature_def_utils,
    tag_constants,
    utils,
)
from gradflow.saved_model._files import SavedModelError
from gradflow.saved_model.builder import SavedModelBuilder
from gradflow.saved_model.loader import load, maybe_saved_model_directory
from gradflow.saved_model.signature_def_utils import (
    build_signature_def,
    predict_signature_def,
)
from gradflow.saved_model.utils import build_tensor_info, get_tensor_from_tensor_info


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


__all__ = ["SavedModelBuilder", "SavedModelError", "build_signature_def", "build_tensor_info",
           "builder", "get_tensor_from_tensor_info", "load", "loader",
           "maybe_saved_model_directory", "predict_signature_def", "signature_constants",
           "signature_def_utils", "simple_save", "tag_constants", "utils"]
