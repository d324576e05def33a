"""TF1's ``tf.saved_model.constants``: the collection keys and the folder and file names
of TensorFlow's SavedModel layout, with TensorFlow's values.

The keys and folder names are what gradflow uses too (``variables``). A gradflow
SavedModel keeps its graph in ``saved_model.json`` (``MODEL_FILENAME``), not in
TensorFlow's ``saved_model.pb``: to ask whether a folder holds one, use
``gf.saved_model.contains_saved_model``.
"""

ASSETS_DIRECTORY = "assets"
ASSETS_KEY = "saved_model_assets"
DEBUG_DIRECTORY = "debug"
DEBUG_INFO_FILENAME_PB = "saved_model_debug_info.pb"
LEGACY_INIT_OP_KEY = "legacy_init_op"
MAIN_OP_KEY = "saved_model_main_op"
SAVED_MODEL_FILENAME_PB = "saved_model.pb"
SAVED_MODEL_FILENAME_PBTXT = "saved_model.pbtxt"
SAVED_MODEL_SCHEMA_VERSION = 1
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
MODEL_FILENAME = "saved_model.json"  # gradflow's own graph file (not a TF1 name)

__all__ = ["ASSETS_DIRECTORY", "ASSETS_KEY", "DEBUG_DIRECTORY", "DEBUG_INFO_FILENAME_PB",
           "LEGACY_INIT_OP_KEY", "MAIN_OP_KEY", "MODEL_FILENAME", "SAVED_MODEL_FILENAME_PB",
           "SAVED_MODEL_FILENAME_PBTXT", "SAVED_MODEL_SCHEMA_VERSION", "VARIABLES_DIRECTORY",
           "VARIABLES_FILENAME"]
