"""The fused GRU and peephole-LSTM cells against the same cells built from elementary ops.

``GRUCell(128)`` and ``LSTMCell(128, use_peepholes=True)`` build their steps from the
fused primitives of ``gradflow/prim/gru.py`` and ``gradflow/prim/lstm_peephole.py``;
given an activation that is not ``tanh`` itself (here ``lambda v: tanh(v)``, the same
function) they build them from elementary ops, as before those primitives. Both run the
char-LSTM benchmark's training step (``rnn_models.py``: vocab 65, embed 64, hidden 128,
50 steps, batch 32, Adam) from the same weights in one process, the rows taking turns
(best of 5 rounds); it prints ms/step and the fused / elementary ratios.

    python benchmarks/rnn_fused_cells.py [--seconds 1] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import OtherLoad, parse_args, pin_threads_from_argv, time_ms_each  # noqa: E402

pin_threads_from_argv()

import numpy as np  # noqa: E402
import rnn_models as rm  # noqa: E402

import gradflow as gf  # noqa: E402


def _plain_tanh(v):
    return gf.tanh(v)  # not gf.tanh itself: the cells take their elementary-op path


def gru_elementary(weights):
    cell = gf.nn.rnn_cell.GRUCell(rm.HIDDEN, activation=_plain_tanh)
    ids, targets, loss = rm._static_rnn_graph(weights, cell)
    names = ("gate_kernel", "gate_bias", "cand_kernel", "cand_bias")
    return ids, targets, loss, list(zip(cell.trainable_variables, (weights[k] for k in names)))


def peephole_elementary(weights):
    cell = gf.nn.rnn_cell.LSTMCell(rm.HIDDEN, use_peepholes=True, activation=_plain_tanh)
    ids, targets, loss = rm._static_rnn_graph(weights, cell)
    zeros = np.zeros(rm.HIDDEN, np.float32)
    values = (weights["kernel"], weights["bias"], zeros, zeros, zeros)
    return ids, targets, loss, list(zip(cell.trainable_variables, values))


ROWS = {"GRU fused": (rm.gru_graph, rm.gru_weights),
        "GRU elementary ops": (gru_elementary, rm.gru_weights),
        "LSTM peephole fused": (rm.lstm_peephole_graph, rm.lstm_weights),
        "LSTM peephole elementary ops": (peephole_elementary, rm.lstm_weights)}


def main(seconds):
    x, y = rm.make_data()
    steps, firsts = {}, {}
    for label, (graph_fn, init) in ROWS.items():
        step, firsts[label], *_ = rm._stepper(graph_fn)(init(), x, y, "numpy")
        step()
        steps[label] = step
    print("first losses: " + ", ".join(f"{k} {v:.6f}" for k, v in firsts.items()))
    load = OtherLoad()
    ms = time_ms_each(steps, seconds)
    cores = load.cores()
    print(f"fused cells, CPU, best of 5 rounds; other processes used "
          f"{'?' if cores is None else f'{cores:.2f}'} cores meanwhile")
    for label, t in ms.items():
        print(f"  {label:30s} {t:8.2f} ms/step")
    for cell in ("GRU", "LSTM peephole"):
        ratio = ms[cell + " fused"] / ms[cell + " elementary ops"]
        print(f"  {cell}: fused / elementary ops {ratio:.2f}")
    return ms


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/numba threads (read before the imports: timing.py)")
    main(parse_args(parser).seconds)
