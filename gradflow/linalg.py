"""TF1's ``tf.linalg`` namespace: the linear-algebra ops gradflow has (``matmul``,
``norm``, ``eye``, ``tensordot``, ``einsum``, ``transpose``, ``l2_normalize``)."""

import gradflow as _gf

_TOP_LEVEL = "einsum eye matmul norm tensordot transpose".split()

globals().update({name: getattr(_gf, name) for name in _TOP_LEVEL})
l2_normalize = _gf.nn.l2_normalize

__all__ = sorted(_TOP_LEVEL + ["l2_normalize"])
