"""The steps of a compiled training plan, counted by op kind (``rnn_models.py --plan``).

Every node a plan runs is one step of its generated Python function: a call of a bound
op, a view, or one tuple index of a multi-output node's result (``fused_output``). Per
time step of an unrolled RNN, the steps beyond the cell kernels and the products are
its overhead::

    python benchmarks/rnn_models.py --plan [--only biLSTM "LSTM x2"]
"""

from __future__ import annotations

import collections


def plan_steps(sess):
    """``(steps, {op kind: steps})`` of the largest plan ``sess`` compiled (the training
    step's): one step per node the plan runs; a fused node is named by its members, an
    output of a multi-output node is ``fused_output`` (one tuple index of the plan)."""
    plans = [p for p in sess._plans.values() if getattr(p, "line_nodes", None)]
    nodes = set(max(plans, key=lambda p: len(p.line_nodes)).line_nodes.values())
    kinds = collections.Counter()
    for node in nodes:
        name = node.opdef.name
        if name == "fused":
            name += "[" + " ".join(m.type for m in node.attrs["program"].members) + "]"
        kinds[name] += 1
    return len(nodes), kinds


def print_plans(rnn_models, backend="numpy", only=None, top=12):
    """The plan steps of the training step of each model of ``rnn_models`` (the module
    ``benchmarks/rnn_models.py``; and of the char-LSTM of ``lstm_step.py``, the reference
    of ``LSTM dynamic``), by op kind, most first."""
    x, y = rnn_models.make_data()
    models = [("LSTM (lstm_step)", rnn_models.lstm_weights, rnn_models.static_lstm_step)] + \
        [(name, m.init_weights, m.gradflow_step) for name, m in rnn_models.MODELS.items()
         if not only or name in only]
    for name, init, make in models:
        step, _, sess, _, _ = make(init(), x, y, backend)
        step()  # compiles the training step's plan
        total, kinds = plan_steps(sess)
        text = ", ".join(f"{k} {v}" for k, v in kinds.most_common(top))
        print(f"{name:16s} {total:5d} plan steps: {text}")
