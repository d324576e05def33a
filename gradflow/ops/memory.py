"""The check that an array fits in the host's memory, from its home ``gradflow.prim.memory``
(primitives' impls call it, so it lives below ``gradflow.ops``); kept here for the modules
that import it by this path."""

from gradflow.prim.memory import (  # noqa: F401 - names of this module
    SMALL,
    available_bytes,
    check_fits,
    needed_bytes,
    on_device,
    readable_bytes,
    shortfall,
)
