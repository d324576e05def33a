"""Signatures of a SavedModel (TF1's ``SignatureDef`` and ``TensorInfo``, and
``tf.saved_model.signature_def_utils``): named inputs and outputs by tensor name.

>>> sig = gf.saved_model.signature_def_utils.predict_signature_def(
...     inputs={"x": x}, outputs={"probs": probs})
>>> sig.inputs["x"].name
'x:0'
"""

from __future__ import annotations

from gradflow.saved_model import signature_constants
from gradflow.saved_model.utils import TensorInfo, build_tensor_info


class SignatureDef:
    """Named inputs and outputs (``TensorInfo`` dicts) and a ``method_name``."""

    def __init__(self, inputs=None, outputs=None, method_name=""):
        self.inputs = dict(inputs or {})
        self.outputs = dict(outputs or {})
        self.method_name = method_name

    def to_json(self) -> dict:
        return {"method_name": self.method_name,
                "inputs": {k: v.to_json() for k, v in self.inputs.items()},
                "outputs": {k: v.to_json() for k, v in self.outputs.items()}}

    @classmethod
    def from_json(cls, doc, where):
        if not isinstance(doc, dict) or set(doc) != {"method_name", "inputs", "outputs"} or \
                not isinstance(doc["method_name"], str):
            raise ValueError(f"{where} is not a signature (method_name, inputs, outputs)")
        parts = {}
        for side in ("inputs", "outputs"):
            if not isinstance(doc[side], dict):
                raise ValueError(f"{where}: {side} is not an object")
            parts[side] = {k: TensorInfo.from_json(v, f"{where} {side}[{k!r}]")
                           for k, v in doc[side].items()}
        return cls(parts["inputs"], parts["outputs"], doc["method_name"])

    def __repr__(self) -> str:
        return (f"SignatureDef(inputs={sorted(self.inputs)}, outputs={sorted(self.outputs)}, "
                f"method_name={self.method_name!r})")


def build_signature_def(inputs=None, outputs=None, method_name=None):
    """A ``SignatureDef`` from ``TensorInfo`` dicts (TF1 ``build_signature_def``)."""
    for side, infos in (("inputs", inputs or {}), ("outputs", outputs or {})):
        for key, info in infos.items():
            if not isinstance(info, TensorInfo):
                raise TypeError(f"build_signature_def: {side}[{key!r}] must be a TensorInfo "
                                "(from gf.saved_model.utils.build_tensor_info), got "
                                f"{type(info).__name__}")
    return SignatureDef(inputs, outputs, method_name or "")


def predict_signature_def(inputs, outputs):
    """A predict signature from ``{name: tensor}`` dicts (TF1 ``predict_signature_def``)."""
    for side, tensors in (("inputs", inputs), ("outputs", outputs)):
        if not isinstance(tensors, dict) or not tensors:
            raise ValueError(f"predict_signature_def: {side} must be a non-empty dict of "
                             f"name -> tensor, got {tensors!r}")
    return build_signature_def({k: build_tensor_info(t) for k, t in inputs.items()},
                               {k: build_tensor_info(t) for k, t in outputs.items()},
                               signature_constants.PREDICT_METHOD_NAME)


def is_valid_signature(signature_def) -> bool:
    """Whether ``signature_def`` has a method name, inputs and outputs (TF1 name)."""
    return isinstance(signature_def, SignatureDef) and bool(signature_def.method_name) and \
        bool(signature_def.inputs) and bool(signature_def.outputs)


__all__ = ["SignatureDef", "TensorInfo", "build_signature_def", "is_valid_signature",
           "predict_signature_def"]
