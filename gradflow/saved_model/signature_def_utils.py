"""Signatures of a SavedModel (TF1's ``SignatureDef`` and ``TensorInfo``, and
``tf.saved_model.signature_def_utils``): named inputs and outputs by tensor name.

>>> sig = gf.saved_model.signature_def_utils.predict_signature_def(
...     inputs={"x": x}, outputs={"probs": probs})
>>> sig.inputs["x"].name
'x:0'
"""

from __future__ import annotations

from gradflow.graph import Operation, Tensor
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


def _examples_info(examples, kind):
    if examples is None:
        raise ValueError(f"{kind} `examples` cannot be None.")
    if not isinstance(examples, Tensor) or isinstance(examples, Operation):
        raise ValueError(f"{kind} `examples` must be a string Tensor. Found `examples` of "
                         f"type {type(examples)}.")
    info = build_tensor_info(examples)
    if info.dtype != "string":
        raise ValueError(f"{kind} input tensors must be of type string. Found tensors of "
                         f"type {info.dtype}")
    return info


def classification_signature_def(examples, classes, scores):
    """A classify signature (TF1 ``classification_signature_def``, for TensorFlow
    Serving's Classify API): ``examples`` a string tensor (serialized ``tf.Example``s),
    ``classes`` a string tensor, ``scores`` a float32 tensor; one of the two may be
    ``None``. Other dtypes are a ``ValueError``, as in TF1."""
    inputs = {signature_constants.CLASSIFY_INPUTS: _examples_info(examples, "Classification")}
    if classes is None and scores is None:
        raise ValueError("Classification `classes` and `scores` cannot both be None.")
    outputs = {}
    if classes is not None:
        info = build_tensor_info(classes)
        if info.dtype != "string":
            raise ValueError("Classification classes must be of type string Tensor. Found "
                             f"tensors of type {info.dtype}.")
        outputs[signature_constants.CLASSIFY_OUTPUT_CLASSES] = info
    if scores is not None:
        info = build_tensor_info(scores)
        if info.dtype != "float32":
            raise ValueError("Classification scores must be a float Tensor.")
        outputs[signature_constants.CLASSIFY_OUTPUT_SCORES] = info
    return build_signature_def(inputs, outputs, signature_constants.CLASSIFY_METHOD_NAME)


def regression_signature_def(examples, predictions):
    """A regress signature (TF1 ``regression_signature_def``, for TensorFlow Serving's
    Regress API): ``examples`` a string tensor, ``predictions`` a float32 tensor."""
    inputs = {signature_constants.REGRESS_INPUTS: _examples_info(examples, "Regression")}
    if predictions is None:
        raise ValueError("Regression `predictions` cannot be None.")
    info = build_tensor_info(predictions)
    if info.dtype != "float32":
        raise ValueError("Regression output tensors must be of type float. Found tensors "
                         f"with type {info.dtype}.")
    return build_signature_def(inputs, {signature_constants.REGRESS_OUTPUTS: info},
                               signature_constants.REGRESS_METHOD_NAME)


def _valid_classify(sig) -> bool:
    c = signature_constants
    if set(sig.inputs) != {c.CLASSIFY_INPUTS} or sig.inputs[c.CLASSIFY_INPUTS].dtype != \
            "string":
        return False
    allowed = {c.CLASSIFY_OUTPUT_CLASSES: "string", c.CLASSIFY_OUTPUT_SCORES: "float32"}
    return bool(sig.outputs) and all(k in allowed and v.dtype == allowed[k]
                                     for k, v in sig.outputs.items())


def _valid_regress(sig) -> bool:
    c = signature_constants
    return set(sig.inputs) == {c.REGRESS_INPUTS} and set(sig.outputs) == {c.REGRESS_OUTPUTS} \
        and sig.inputs[c.REGRESS_INPUTS].dtype == "string" \
        and sig.outputs[c.REGRESS_OUTPUTS].dtype == "float32"


def is_valid_signature(signature_def) -> bool:
    """Whether ``signature_def`` is one TensorFlow Serving accepts (TF1
    ``is_valid_signature``): a predict signature with inputs and outputs, or a classify or
    regress signature with the keys and dtypes of ``classification_signature_def`` and
    ``regression_signature_def``."""
    if not isinstance(signature_def, SignatureDef):
        return False
    method = signature_def.method_name
    if method == signature_constants.PREDICT_METHOD_NAME:
        return bool(signature_def.inputs) and bool(signature_def.outputs)
    if method == signature_constants.CLASSIFY_METHOD_NAME:
        return _valid_classify(signature_def)
    return method == signature_constants.REGRESS_METHOD_NAME and _valid_regress(signature_def)


__all__ = ["SignatureDef", "TensorInfo", "build_signature_def", "classification_signature_def",
           "is_valid_signature", "predict_signature_def", "regression_signature_def"]
