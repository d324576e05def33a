"""The CTC loss and its gradient in the logits: gradflow's ``nn.ctc_loss`` against
PyTorch's ``ctc_loss`` (its C++ kernel), in one process, the two timed in turn.

Logits ``[T, batch, classes]`` float32 (the last class the blank), random labels of
10 to 30 classes per sequence, every sequence ``T`` long. Each contender computes the
batch's mean loss and its gradient (gradflow: one ``Session.run`` of both; PyTorch:
``log_softmax``, ``ctc_loss`` and ``backward``). Both losses are printed first: they
must agree. Then milliseconds per step, quiet and with one CPU-bound process beside
(the median of 9 rounds there, as ``conv.py``), and the ratio.

    python benchmarks/ctc.py [--steps 100] [--batch 32] [--classes 29] [--seconds 1]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from conv import cpu_bound_neighbour, timing_rule  # noqa: E402
from timing import OtherLoad, parse_args, time_ms_each  # noqa: E402

import gradflow as gf  # noqa: E402


def gradflow_step(x, rows, steps, batch, classes):
    indices = np.array([[b, j] for b, r in enumerate(rows) for j in range(len(r))], np.int64)
    values = np.concatenate(rows).astype(np.int32)
    graph = gf.Graph()
    with graph.as_default():
        labels = gf.sparse_placeholder(gf.int32)
        logits = gf.placeholder(gf.float32, (steps, batch, classes))
        lengths = gf.placeholder(gf.int32, (batch,))
        loss = gf.reduce_mean(gf.nn.ctc_loss(labels, logits, lengths))
        grad = gf.gradients(loss, logits)[0]
    sess = gf.Session(graph=graph)
    feed = {labels: (indices, values, [batch, max(len(r) for r in rows)]), logits: x,
            lengths: np.full(batch, steps, np.int32)}
    return lambda: sess.run([loss, grad], feed, output="native")


def torch_step(torch, x, rows, steps, batch, classes):
    tx = torch.tensor(x, requires_grad=True)
    targets = torch.tensor(np.concatenate(rows))
    target_lengths = torch.tensor([len(r) for r in rows])
    input_lengths = torch.full((batch,), steps)

    def step():
        tx.grad = None
        logp = torch.log_softmax(tx, 2)
        loss = torch.nn.functional.ctc_loss(logp, targets, input_lengths, target_lengths,
                                            blank=classes - 1, reduction="sum") / batch
        loss.backward()
        return loss

    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--classes", type=int, default=29)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parse_args(parser, argv)
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.steps, args.batch, args.classes)).astype(np.float32)
    rows = [rng.integers(0, args.classes - 1, rng.integers(10, 31)) for _ in range(args.batch)]
    steps = {"gradflow": gradflow_step(x, rows, args.steps, args.batch, args.classes),
             "torch": torch_step(torch, x, rows, args.steps, args.batch, args.classes)}
    print(f"loss: gradflow {float(steps['gradflow']()[0]):.6f}, "
          f"torch {float(steps['torch']().detach()):.6f}")
    print("| state | others | gradflow ms | torch ms | gf / torch |\n|---|---|---|---|---|")
    for load, state in ((0, "quiet"), (1, "loaded")):
        with cpu_bound_neighbour(load):
            other = OtherLoad()
            times = time_ms_each(steps, args.seconds, **timing_rule(load))
            cores = other.cores()
        print(f"| {state} | {'?' if cores is None else f'{cores:.2f}'} | "
              f"{times['gradflow']:.2f} | {times['torch']:.2f} | "
              f"{times['gradflow'] / times['torch']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
