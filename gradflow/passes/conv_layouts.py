"""NCHW convolutions as one op each, for a backend whose kernels read NCHW themselves.

An NCHW convolution runs the NHWC ops between two ``image_layout`` copies
(``gradflow.prim.conv``). Within a network the layout pass cancels most of them
(``gradflow.passes.layouts``); where they stay, the two copies around one pass can
cost more than the pass (a 1x1 convolution: twice its time). This pass, which the
NumPy backend runs where oneDNN is there (``NumpyBackend.kernel_passes``), makes
each convolution pass whose every image (the forward's input and result, the input
gradient's output gradient and result, the filter gradient's input and output
gradient) is such a copy one NCHW op (``gradflow.prim.conv.NCHW_FORMS``) that reads and writes
the NCHW values. Only whole passes: where one image stays NHWC, the NHWC kernels
with a copy of the other are the faster.

A copy of an input folds only where every reader of it folds too (the forward pass
and the filter gradient read the same copy of the images), so that folding never
leaves a copy computed for fewer readers; a copy back folds with its pass where the
pass's result is read by nothing else. float32 with known shapes only (oneDNN's
path). The NCHW op computes the same values as the pass between its copies; it runs
other kernels, so the last bits may differ from the NHWC pass's.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.passes.ir import PlanNode
from gradflow.passes.layouts import copy_perm
from gradflow.prim.conv import NCHW_FORMS, TO_NCHW, TO_NHWC
from gradflow.prim.registry import REGISTRY


def fold_conv_layouts(graph) -> None:
    """Apply the rule of the module docstring over ``graph`` (a PlanGraph)."""
    readers, fetched = graph.consumers(), set(graph.outputs)
    found = {}  # pass -> (its NCHW inputs, the copies back it replaces or None)
    for node in graph.nodes():
        folded = _foldable(node, readers, fetched)
        if folded is not None:
            found[node] = folded
    while True:  # drop the passes reading a copy that something else keeps
        kept = {node: f for node, f in found.items()
                if all(copy not in fetched and all(r in found for r in readers[copy])
                       for copy in _copies_read(node))}
        if len(kept) == len(found):
            break
        found = kept
    mapping, made = {}, []
    for node, (inputs, backs) in found.items():
        form = REGISTRY[NCHW_FORMS[node.opdef.name][0]]
        shape = backs[0].shape if backs else node.shape
        new = PlanNode.standing_for(node, form, inputs, node.attrs, shape=shape,
                                    control_inputs=node.control_inputs)
        made.append(new)
        for old in backs or [node]:
            mapping[old] = new
    graph.replace(mapping, extra=made)


def _foldable(node, readers, fetched):
    """``(inputs, copies back)`` of ``node`` as its NCHW form, or None where it has none
    or an image of it is not a copy."""
    if node.opdef.kind != "compute" or node.opdef.name not in NCHW_FORMS \
            or node.dtype != dtypes.float32 or not _static(node.shape):
        return None
    _, images, image_out = NCHW_FORMS[node.opdef.name]
    inputs = list(node.inputs)
    for k in images:
        if copy_perm(inputs[k], node) != TO_NHWC or not _static(inputs[k].shape):
            return None
        inputs[k] = inputs[k].inputs[0]
    if not image_out:
        return inputs, None
    backs = readers.get(node, [])
    if node in fetched or not backs or any(copy_perm(r) != TO_NCHW for r in backs):
        return None
    return inputs, backs


def _copies_read(node):
    return [node.inputs[k] for k in NCHW_FORMS[node.opdef.name][1]]


def _static(shape):
    return shape is not None and all(d is not None for d in shape)
