"""Ops that only the graph compiler makes: a fused group of elementwise ops and the
outputs of a group with several.

``fused`` computes a ``FusedProgram`` (``gradflow.passes.fusion``, its attribute
``program``); each backend lowers it to one kernel (``Backend.fused``). A group
with several outputs returns a tuple that its ``fused_output`` nodes read. (The
LSTM step ops are plan-only too; they live with the other LSTM ops in ``rnn_ops``.)
"""

from __future__ import annotations

from gradflow.prim.registry import register


def _fused_infer(shapes, in_dtypes, program):
    root = program.members[program.outputs[-1]]
    return root.shape, root.dtype


def _fused_output_infer(shapes, in_dtypes, index, shape, dtype):
    return shape, dtype


def _unbound(xp, *args, **attrs):  # the executor binds fused nodes through the backend
    raise RuntimeError("a fused node is lowered by its backend (Backend.fused)")


FUSED = register("fused", _unbound, _fused_infer, grad=None, plan_only=True)
FUSED_OUTPUT = register("fused_output", _unbound, _fused_output_infer, grad=None,
                        plan_only=True)
