"""One node for all the gradients of each GRU step node.

Autodiff gives each input of ``gru_rh(gates, h)`` and ``gru_h(gates, zc, h)``
(``gradflow/prim/gru.py``) its own gradient node, ``gru_rh_grad(g, gates, h,
wrt=...)`` and ``gru_h_grad(g, gates, zc, h, wrt=...)``, all reading the same
arrays. This pass replaces the nodes of one op that read the same inputs by one
``gru_rh_grads`` (outputs: the gates', the state's) or ``gru_h_grads`` (the
gates', the candidate's, the state's) node, read through ``fused_output`` nodes:
one pass over the step's arrays instead of two or three. An output no node reads
(the state's gradient of the first step) is computed and dropped.

The nodes must have fully known 2-D shapes of one batch and one dtype and no
control inputs.
"""

from __future__ import annotations

from gradflow.passes.fusion import output_of
from gradflow.passes.ir import PlanNode
from gradflow.prim.gru import GRU_H_GRADS, GRU_RH_GRADS

_GROUPS = {"gru_rh_grad": (GRU_RH_GRADS, ("gates", "state")),
           "gru_h_grad": (GRU_H_GRADS, ("gates", "candidate", "state"))}


def fuse_gru_grads(graph) -> None:
    """Join the ``gru_rh_grad`` and ``gru_h_grad`` nodes of ``graph`` (a PlanGraph) that
    read the same inputs into one multi-output node each (see the module docstring)."""
    groups: dict = {}
    for node in graph.nodes():
        if _plain(node):
            key = (node.opdef.name,) + tuple(id(x) for x in node.inputs)
            groups.setdefault(key, {})[node.attrs["wrt"]] = node
    mapping, made = {}, []
    for key, by_wrt in groups.items():
        opdef, order = _GROUPS[key[0]]
        if len(by_wrt) < 2 or not _one_dtype(by_wrt):
            continue
        first = next(iter(by_wrt.values()))
        fused = PlanNode.standing_for(by_wrt.get("gates", first), opdef, list(first.inputs),
                                      {})
        made.append(fused)
        for index, wrt in enumerate(order):
            old = by_wrt.get(wrt)
            if old is not None:
                mapping[old] = output_of(fused, index, old)
                made.append(mapping[old])
    graph.replace(mapping, extra=made)


def _one_dtype(by_wrt):
    nodes = list(by_wrt.values())
    return len({n.dtype for n in nodes} | {x.dtype for x in nodes[0].inputs}) == 1


def _plain(node):
    return isinstance(node, PlanNode) and node.opdef.name in _GROUPS \
        and node.opdef.kind == "compute" and not node.control_inputs \
        and all(t.shape is not None and len(t.shape) == 2 and t.shape.is_fully_defined()
                for t in [node] + list(node.inputs))
