"""The run-time range checks of index arrays, from their home ``gradflow.prim.index_checks``
(primitives' impls call them, so they live below ``gradflow.ops``); kept here for the
modules that import them by this path."""

from gradflow.prim.index_checks import (  # noqa: F401 - names of this module
    IndexOutOfRange,
    _position,
    as_take_index,
    check_ids,
    check_index_tuples,
    first_bad,
    row_major_positions,
)
