"""ONNX converters of the elementwise, activation, reduction and matmul ops.

Binary ops broadcast as NumPy does in both gradflow and ONNX, so they map one to one.
"""

from __future__ import annotations

import numpy as np

from gradflow.onnx._builder import axis_for, converts, fail, onnx_dtype

BINARY = {
    "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "pow": "Pow",
    "maximum": "Max", "minimum": "Min", "equal": "Equal", "greater": "Greater",
    "less": "Less", "greater_equal": "GreaterOrEqual", "less_equal": "LessOrEqual",
    "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
}
UNARY = {
    "negative": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
    "sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu", "floor": "Floor", "ceil": "Ceil",
    "sign": "Sign", "sin": "Sin", "cos": "Cos", "round": "Round", "softplus": "Softplus",
    "softsign": "Softsign", "logical_not": "Not", "is_nan": "IsNaN", "tan": "Tan", "asin": "Asin",
    "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh",
    "acosh": "Acosh", "atanh": "Atanh",
}


def _binary(m, node, ins):
    return m.add(BINARY[node.type], ins, node.name)


def _unary(m, node, ins):
    return m.add(UNARY[node.type], ins, node.name)


converts(*BINARY)(_binary)
converts(*UNARY)(_unary)


@converts("not_equal")
def _not_equal(m, node, ins):
    return m.add("Not", [m.add("Equal", ins, node.name + "/equal")], node.name)


@converts("square")
def _square(m, node, ins):
    return m.add("Mul", [ins[0], ins[0]], node.name)


@converts("floor_mod")
def _floor_mod(m, node, ins):
    """TF1's floormod: the remainder takes the divisor's sign. ONNX's ``Mod(fmod=0)`` is
    that for integers only (ONNX Runtime refuses it for floats); a float's is C's
    ``fmod`` moved by the divisor where a nonzero remainder's sign differs from it, as
    TF's kernel computes it."""
    if not node.dtype.is_floating:
        return m.add("Mod", ins, node.name, fmod=0)
    x, y = ins
    name = node.name
    rem = m.add("Mod", [x, y], name + "/fmod", fmod=1)
    zero = m.const(0, node.dtype.as_numpy_dtype)
    signs = m.add("Xor", [m.add("Less", [rem, zero], name + "/rem_negative"),
                          m.add("Less", [y, zero], name + "/divisor_negative")],
                  name + "/signs_differ")
    nonzero = m.add("Not", [m.add("Equal", [rem, zero], name + "/rem_zero")],
                    name + "/rem_nonzero")
    moved = m.add("Add", [rem, y], name + "/moved")
    return m.add("Where", [m.add("And", [signs, nonzero], name + "/move"), moved, rem],
                 name)


@converts("relu6")
def _relu6(m, node, ins):
    zero, six = (m.const(v, node.dtype.as_numpy_dtype) for v in (0, 6))
    return m.add("Clip", [ins[0], zero, six], node.name)


@converts("elu")
def _elu(m, node, ins):  # scale * elu(x, alpha): selu is elu with both set
    scale = float(node.attrs.get("scale", 1.0))
    out = m.add("Elu", ins, node.name if scale == 1.0 else node.name + "/elu",
                alpha=float(node.attrs.get("alpha", 1.0)))
    if scale == 1.0:
        return out
    return m.add("Mul", [out, m.const(scale, node.dtype.as_numpy_dtype)], node.name)


@converts("leaky_relu")
def _leaky_relu(m, node, ins):
    return m.add("LeakyRelu", ins, node.name, alpha=float(node.attrs["alpha"]))


@converts("swish")
def _swish(m, node, ins):
    return m.add("Mul", [ins[0], m.add("Sigmoid", ins, node.name + "/sigmoid")], node.name)


@converts("softmax", "log_softmax")
def _softmax(m, node, ins):
    op = "Softmax" if node.type == "softmax" else "LogSoftmax"
    return m.add(op, ins, node.name, axis=int(node.attrs["axis"]))


@converts("cast", "weak_cast")
def _cast(m, node, ins):
    return m.add("Cast", ins, node.name, to=onnx_dtype(node.dtype))


@converts("where")
def _where(m, node, ins):
    return m.add("Where", ins, node.name)


_REDUCE = {"reduce_sum": "ReduceSum", "reduce_max": "ReduceMax", "reduce_min": "ReduceMin",
           "reduce_prod": "ReduceProd"}


@converts(*_REDUCE)
def _reduce(m, node, ins):
    axes = _axes(node)
    keep = int(bool(node.attrs.get("keepdims", False)))
    op = _REDUCE[node.type]
    if axes == []:  # over no axis: the value as it is (ONNX reads no axes as all of them)
        return m.add("Identity", ins, node.name)
    if axes is None:  # every axis of a value of unknown rank: ONNX's default
        return m.add(op, ins, node.name, keepdims=keep)
    if op == "ReduceSum" or m.opset >= 18:  # the axes became an input in these opsets
        return m.add(op, [ins[0], m.const(axes)], node.name, keepdims=keep)
    return m.add(op, ins, node.name, axes=axes, keepdims=keep)


def _axes(node):
    """The reduced axes, non-negative where the rank is known; for an input of unknown
    rank the axes as given (ONNX counts a negative one from the end, as the run does),
    or None for all of them."""
    axes = node.attrs.get("axes")
    shape = node.inputs[0].shape
    if shape is None:
        return None if axes is None else [int(a) for a in axes]
    rank = len(shape)
    return list(range(rank)) if axes is None else [int(a) % rank for a in axes]


@converts("reduced_count")
def _reduced_count(m, node, ins):
    """The number of elements over ``axes``: the product of those sizes of the shape."""
    axes, shape = _axes(node), m.add("Shape", ins, node.name + "/shape")
    sizes = shape if axes is None else \
        m.add("Gather", [shape, m.const(axes)], node.name + "/sizes", axis=0)
    count = _reduce_prod(m, sizes, node.name + "/count")
    return m.add("Cast", [count], node.name, to=onnx_dtype(node.dtype))


def _reduce_prod(m, x, hint):
    if m.opset >= 18:
        return m.add("ReduceProd", [x, m.const([0])], hint, keepdims=0)
    return m.add("ReduceProd", [x], hint, axes=[0], keepdims=0)


@converts("argmax", "argmin")
def _argmax(m, node, ins):
    axis = axis_for(node.attrs["axis"], node.inputs[0].shape)
    op = "ArgMax" if node.type == "argmax" else "ArgMin"
    index = m.add(op, ins, node.name + "/index", axis=axis, keepdims=0)
    return m.add("Cast", [index], node.name, to=onnx_dtype(node.dtype))


@converts("matmul")
def _matmul(m, node, ins):
    a, b = ins
    for k, flag in enumerate(("transpose_a", "transpose_b")):
        if node.attrs.get(flag):
            if node.inputs[k].shape is None:
                raise fail(node, f"has {flag} on an input of unknown rank "
                                 f"('{node.inputs[k].name}'), which ONNX's Transpose needs; "
                                 "give it a shape")
            rank = len(node.inputs[k].shape)
            if rank < 2:
                raise fail(node, f"has {flag} on a rank-{rank} input")
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            transposed = m.add("Transpose", [ins[k]], f"{node.name}/{flag}", perm=perm)
            a, b = (transposed, b) if k == 0 else (a, transposed)
    return m.add("MatMul", [a, b], node.name)


@converts("ones_like", "zeros_like")
def _fill_like(m, node, ins):
    value = np.array([1 if node.type == "ones_like" else 0], node.dtype.as_numpy_dtype)
    from onnx import numpy_helper

    shape = m.add("Shape", ins, node.name + "/shape")
    return m.add("ConstantOfShape", [shape], node.name,
                 value=numpy_helper.from_array(value, "value"))
