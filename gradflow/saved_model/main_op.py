"""TF1's ``tf.saved_model.main_op``: the op that readies a loaded model's state.

>>> init = gf.saved_model.main_op.main_op()  # variables, local variables and tables
"""

from __future__ import annotations

from gradflow.graph import Operation, Tensor, get_default_graph
from gradflow.ops.control_flow_ops import control_dependencies
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


def main_op_with_restore(restore_op_name):
    """An op that runs ``main_op()`` and then the restore op ``restore_op_name`` (an
    operation, a tensor, or the name of one in the default graph) (TF1
    ``main_op_with_restore``)."""
    restore = restore_op_name
    if not isinstance(restore, (Operation, Tensor)):
        restore = get_default_graph().get_tensor_by_name(str(restore))
    with control_dependencies([main_op()]):
        return group(restore)


__all__ = ["main_op", "main_op_with_restore"]
