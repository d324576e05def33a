"""``benchmarks/lstm_step.py --profile``: its timers wrap the executor's ``bind`` and
report every kind of op of the char-LSTM step (it broke once when ``bind`` was renamed,
and nothing noticed)."""

from __future__ import annotations

import os
import sys

import numpy as np

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks")


def test_the_lstm_profile_times_each_kind_of_op_once():
    sys.path.insert(0, BENCHMARKS)
    try:
        import lstm_step
    finally:
        sys.path.remove(BENCHMARKS)
    from gradflow import executor

    bind = executor.bind
    rng = np.random.default_rng(1)
    x = rng.integers(0, lstm_step.VOCAB, (4, lstm_step.STEPS)).astype(np.int32)
    wall, ops = lstm_step.profile_ops(lstm_step.init_weights(), x, x, "numpy", steps=2)
    assert executor.bind is bind  # put back
    # the layer is one lstm_seq and one lstm_seq_grad on NumPy (backends/numpy/lstm_seq.py)
    assert {"lstm_seq", "lstm_seq_grad", "log_softmax"} <= set(ops)
    assert ops["lstm_seq"][1] == 1  # one call a training step, members not apart
    assert not any(name.startswith(("exp", "maximum")) for name in ops)  # inside fused
    inside = sum(ms for ms, _ in ops.values())
    assert 0 < inside <= wall * 1.5
