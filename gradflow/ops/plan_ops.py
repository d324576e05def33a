"""The ops only the graph compiler makes (``fused``, ``fused_output``): their records are
in ``gradflow.prim.plan``; kept here for the modules that import them by this path."""

from gradflow.prim.plan import FUSED, FUSED_OUTPUT  # noqa: F401 - names of this module
