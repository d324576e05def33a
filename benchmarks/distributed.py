"""Data-parallel MNIST MLP steps (784-512-512-10, Adam, float32) on 1, 2 and 4 ranks.

Weak scaling: every rank takes a batch of the same size (``--batch``, default
128), so with perfect scaling the time per step stays that of one process.
For each number of ranks it launches ``mpiexec -n N`` on this file, once with
the gradients fused into one buffer (the default 64 MB threshold) and once
unfused (``fusion_threshold_mb=0``: one allreduce per tensor), and reports
the time per step (the slowest rank's mean), the share of it spent inside
the allreduce calls and in packing/unpacking the fusion buffers, and the
scaling efficiency (one rank's time / N ranks' time). The one-rank rows run
the plain step and the step with the (then no-op) allreduce node.

    python benchmarks/distributed.py [--ranks 1 2 4] [--batch 128] [--steps 60] [--repeats 3]

Each configuration is launched ``--repeats`` times and the fastest launch is
reported, as the other benchmarks report the best of several rounds.

Every rank runs with one BLAS thread (``--threads``). On a machine with fewer
cores than ranks the ranks share cores, and the figures show that overhead,
not a speedup.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import pin_threads_from_argv  # noqa: E402

pin_threads_from_argv()

import numpy as np  # noqa: E402

import gradflow as gf  # noqa: E402
import gradflow.distributed as hvd  # noqa: E402
from gradflow.distributed import ops as dist_ops  # noqa: E402

SIZES = (784, 512, 512, 10)


def build(fusion_mb, plain):
    """The MLP and its Adam step; gradients through one grouped allreduce unless ``plain``."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(0)
        x = gf.placeholder(gf.float32, (None, SIZES[0]), name="x")
        y = gf.placeholder(gf.int64, (None,), name="y")
        h = x
        for width in SIZES[1:-1]:
            h = gf.layers.dense(h, width, activation=gf.nn.relu)
        logits = gf.layers.dense(h, SIZES[-1])
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        opt = gf.train.AdamOptimizer(1e-3)
        pairs = opt.compute_gradients(loss)
        if not plain:  # what DistributedOptimizer builds, also on one rank
            grads = hvd.grouped_allreduce([g for g, _ in pairs], fusion_threshold_mb=fusion_mb)
            pairs = list(zip(grads, [v for _, v in pairs]))
        train = opt.apply_gradients(pairs)
        sync = hvd.broadcast_global_variables(0)
        init = gf.global_variables_initializer()
    return graph, x, y, train, sync, init


def worker(args):
    hvd.init()
    graph, x, y, train, sync, init = build(args.fusion_mb, args.plain)
    rng = np.random.default_rng(hvd.rank())
    feed = {x: rng.random((args.batch, SIZES[0]), dtype=np.float32),
            y: rng.integers(0, SIZES[-1], args.batch)}
    with gf.Session(graph=graph, backend=args.backend) as sess:
        sess.run(init)
        sess.run(sync)
        for _ in range(args.warmup):
            sess.run(train, feed)
        dist_ops.reset_stats()
        hvd.engine().barrier()
        start = time.perf_counter()
        for _ in range(args.steps):
            sess.run(train, feed)
        seconds = time.perf_counter() - start
    stats = dict(dist_ops.STATS)
    everyone = hvd.allgather_object((seconds, stats))
    if hvd.rank() == 0:
        steps = args.steps
        slowest = max(s for s, _ in everyone)
        mean_total = sum(s for s, _ in everyone) / len(everyone)
        reduce = sum(st["reduce"] for _, st in everyone) / len(everyone)
        pack = sum(st["pack"] + st["unpack"] for _, st in everyone) / len(everyone)
        print("RESULT " + json.dumps({
            "ms_per_step": 1e3 * slowest / steps,
            "allreduce_share": reduce / mean_total,
            "pack_share": pack / mean_total,
            "allreduce_ms": 1e3 * reduce / steps,
        }), flush=True)


def launch(n, args, fusion_mb, plain):
    mpiexec = Path(sys.executable).parent / "mpiexec"
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        raise SystemExit("mpiexec not found: pip install mpi4py mpich")
    command = [mpiexec, "-n", str(n), sys.executable, os.path.abspath(__file__), "--worker",
               "--threads", str(args.threads), "--backend", args.backend,
               "--batch", str(args.batch), "--steps", str(args.steps),
               "--warmup", str(args.warmup), "--fusion-mb", str(fusion_mb)]
    if plain:
        command.append("--plain")
    done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=600)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(lines[0][len("RESULT "):])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--batch", type=int, default=128, help="rows per rank and step")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads per rank")
    parser.add_argument("--repeats", type=int, default=3,
                        help="launches per configuration; the fastest is reported")
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fusion-mb", type=float, default=64.0, help=argparse.SUPPRESS)
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    print(f"MNIST MLP Adam step, {args.backend}, batch {args.batch} per rank, {args.steps} "
          f"steps, {args.threads} BLAS thread(s) per rank, {os.cpu_count()} CPU cores")
    print(f"{'ranks':>5} {'allreduce':<22} {'ms/step':>8} {'efficiency':>10} "
          f"{'in allreduce':>12} {'pack+unpack':>11}")
    baseline = None
    for n in args.ranks:
        variants = [("none (plain Adam)", None, True)] if n == 1 else []
        variants += [("fused (64 MB buffer)", 64.0, False), ("unfused (per tensor)", 0.0, False)]
        for label, mb, plain in variants:
            runs = [launch(n, args, 64.0 if mb is None else mb, plain)
                    for _ in range(args.repeats)]
            r = min(runs, key=lambda run: run["ms_per_step"])
            if baseline is None:
                baseline = r["ms_per_step"]
            print(f"{n:>5} {label:<22} {r['ms_per_step']:>8.2f} "
                  f"{baseline / r['ms_per_step']:>9.0%} "
                  f"{r['allreduce_share']:>11.1%} {r['pack_share']:>11.1%}", flush=True)


if __name__ == "__main__":
    main()
