"""ONNX converters of the shape and indexing ops: reshape, transpose, expand_dims,
squeeze, concat, gather, ``x[key]`` and shape."""

from __future__ import annotations

from gradflow.onnx._builder import axis_for, converts, fail, onnx_dtype

_END = 2**63 - 1  # ONNX Slice clamps bounds, so these mean "to the end" either way
_BEGIN = -(2**63)


@converts("reshape")
def _reshape(m, node, ins):
    if len(ins) == 2:  # a shape computed when the graph runs
        shape = m.add("Cast", [ins[1]], node.name + "/shape", to=7)
        return m.add("Reshape", [ins[0], shape], node.name)
    shape = [int(d) for d in node.attrs["shape"]]
    # TF1's 0 is a size of zero; ONNX reads 0 as "copy this size" unless allowzero is set
    extra = {"allowzero": 1} if 0 in shape else {}
    if extra and m.opset < 14:
        raise fail(node, f"reshapes to a size of 0, which needs opset 14 (have {m.opset})")
    return m.add("Reshape", [ins[0], m.const(shape)], node.name, **extra)


@converts("transpose", "image_layout")  # image_layout: NCHW <-> NHWC around convolutions
def _transpose(m, node, ins):
    return m.add("Transpose", ins, node.name, perm=[int(p) for p in node.attrs["perm"]])


@converts("expand_dims")
def _expand_dims(m, node, ins):  # (ONNX's negative axes count in the output, as here)
    axes = sorted(axis_for(a, node.shape) for a in node.attrs["axes"])
    return m.add("Unsqueeze", [ins[0], m.const(axes)], node.name)


@converts("squeeze")
def _squeeze(m, node, ins):
    axes = node.attrs.get("axes")
    if axes is None:  # every size-1 axis of the value, found when the model runs: as here
        return m.add("Squeeze", ins, node.name)
    shape = node.inputs[0].shape
    return m.add("Squeeze", [ins[0], m.const(sorted(axis_for(a, shape) for a in axes))],
                 node.name)


@converts("concat")
def _concat(m, node, ins):
    return m.add("Concat", ins, node.name, axis=axis_for(node.attrs["axis"], node.shape))


@converts("gather")
def _gather(m, node, ins):
    axis = axis_for(node.attrs.get("axis", 0), node.inputs[0].shape)
    return m.add("Gather", ins, node.name, axis=axis)


@converts("shape")
def _shape(m, node, ins):
    shape = m.add("Shape", ins, node.name + "/int64")
    return m.add("Cast", [shape], node.name, to=onnx_dtype(node.dtype))


@converts("getitem")
def _getitem(m, node, ins):
    """``x[key]``: one Slice over every sliced or indexed axis, a Squeeze of the indexed
    ones, then an Unsqueeze for each ``None`` (new axis) of the key."""
    starts, ends, axes, steps, dropped = [], [], [], [], []
    out_axes, new_axes, dim = 0, [], 0
    for k in node.attrs["key"]:
        if k is None:
            new_axes.append(out_axes)
            out_axes += 1
            continue
        if isinstance(k, int):
            starts.append(k)
            ends.append(k + 1 if k != -1 else _END)
            steps.append(1)
            axes.append(dim)
            dropped.append(dim)
        elif k[1:] != (None, None, None):
            _, start, stop, step = k
            step = 1 if step is None else step
            starts.append(start if start is not None else (0 if step > 0 else _END))
            ends.append(stop if stop is not None else (_END if step > 0 else _BEGIN))
            steps.append(step)
            axes.append(dim)
            out_axes += 1
        else:
            out_axes += 1
        dim += 1
    out = ins[0]
    if axes:
        out = m.add("Slice", [out, m.const(starts), m.const(ends), m.const(axes),
                              m.const(steps)], node.name + "/slice")
    if dropped:
        out = m.add("Squeeze", [out, m.const(dropped)], node.name + "/squeeze")
    if new_axes:
        out = m.add("Unsqueeze", [out, m.const(new_axes)], node.name + "/unsqueeze")
    return m.add("Identity", [out], node.name) if out == ins[0] else out
