"""TF1's ``tf.manip`` namespace (TF 1.x): the array-manipulation functions under the
names TF 1.6 to 1.15 also gave them (``tf.manip.roll``, ...)."""

import gradflow as _gf

_NAMES = "batch_to_space_nd gather_nd reshape reverse roll scatter_nd space_to_batch_nd tile"

globals().update({name: getattr(_gf, name) for name in _NAMES.split()})

__all__ = sorted(_NAMES.split())
