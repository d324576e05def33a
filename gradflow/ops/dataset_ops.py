"""The graph ops of ``gf.data`` input pipelines (an iterator's ``get_next`` and
initializer, the arguments of a traced function): their primitives are in
``gradflow.prim.dataset``, which this module registers; ``gradflow.data`` builds them.
"""

from __future__ import annotations

from gradflow.prim import dataset as _dataset  # noqa: F401 - registers the ops
from gradflow.prim.construct import declared as _declared  # noqa: F401 - others import it
