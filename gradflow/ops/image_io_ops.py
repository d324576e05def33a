"""Host ops of TF1's image input pipelines, ``read_file`` and ``decode_image``: their
primitives are in ``gradflow.prim.image_io``, which this module registers;
``gradflow.io.read_file`` and ``gradflow.image``'s decoders build them.
"""

from __future__ import annotations

from gradflow.prim.image_io import FORMATS, decode  # noqa: F401 - names of this module
