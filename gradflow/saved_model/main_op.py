"""TF1's ``tf.saved_model.main_op``: the op that readies a loaded model's state.

>>> init = gf.saved_model.main_op.main_op()  # variables, local variables and tables

``main_op_with_restore`` (the main op, then a Saver's restore op, in one run) is left
out: in gradflow the assignments of one run land together when it ends, so a restore
in the same run as the initializers is not ordered after them.
"""

from __future__ import annotations

from gradflow.graph import get_default_graph
from gradflow.ops.state_ops import group
from gradflow.variables import (
    GraphKeys,
    global_variables_initializer,
    local_variables_initializer,
)


def _tables_initializer():
    """The table initializers of the default graph (its ``TABLE_INITIALIZERS``
    collection), grouped; a no-op when it has none, as TF1's ``tables_initializer``."""
    ops = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*ops, name="init_all_tables")


def main_op():
    """One op that initializes the global and the local variables and the tables (TF1
    ``tf.saved_model.main_op.main_op``)."""
    return group(global_variables_initializer(), local_variables_initializer(),
                 _tables_initializer())


__all__ = ["main_op"]
