"""What every module of gradflow.graph_io shares: the format's constants and its errors."""

from __future__ import annotations

from gradflow.errors import DataLossError, InvalidArgumentError, NotFoundError

FORMAT = "gradflow.GraphDef"
FORMAT_VERSION = 1
_JSON_KEY = "__graph__"
# ops whose attributes hold sub-graphs or Python callables: never rebuilt from a file
_NOT_LOADABLE = ("cond", "while", "while_grad", "tuple_get", "while_loop_var", "py_func")
_NODE_KEYS = {"name", "op", "inputs", "control_inputs", "attrs", "shape", "dtype",
              "trainable", "initial_value", "initializer"}


class GraphDefError(InvalidArgumentError):
    """A graph cannot be written to, or rebuilt from, a GraphDef (the file and fault named)."""


class DamagedGraphDefError(GraphDefError, DataLossError):
    """A graph file's bytes are damaged: cut short, not JSON, a broken archive."""

    error_code = DataLossError.error_code


class GraphDefNotFoundError(GraphDefError, NotFoundError):
    """A graph file that is not there."""

    error_code = NotFoundError.error_code
