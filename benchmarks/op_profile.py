"""Time per kind of op of a gradflow training step (``lstm_step.py --profile``,
``transformer.py --profile``).

``profile_ops(make_step)`` wraps a timer around every op function the plan binds while
``make_step()`` builds and first runs the step (``executor.bind``; a fused node's
members are timed as the node), then runs the step ``steps`` times:
``(wall ms, {op: (ms, calls per step)})``, medians over the runs, so one slow spell of a
shared machine moves them little. The timers add about half a microsecond to each call,
so the total runs a little above the step's time. ``print_profile`` prints the table.
"""

from __future__ import annotations

import collections
import time

import numpy as np

import gradflow as gf
from gradflow import executor

# ops named with their shape: the same op at several sizes is several rows
SIZED = ("matmul", "concat", "add", "split_like", "fused", "layer_norm")


def profile_ops(make_step, backend=None, steps=10, sized=SIZED):
    """``(wall ms, {op: (ms, calls per step)})`` of the step ``make_step()`` returns, run
    on ``backend`` (a name or None for the default); ops whose name starts with one of
    ``sized`` carry their shape in their row's name."""
    totals, counts = collections.defaultdict(float), collections.Counter()
    bind, depth = executor.bind, [0]

    def timed_bind(backend_, node, attrs=None, draw=None):
        if depth[0]:  # a fused node's members: timed as the node
            return bind(backend_, node, attrs, draw)
        depth[0] += 1
        try:
            fn = bind(backend_, node, attrs, draw)
        finally:
            depth[0] -= 1
        name = _name(node, sized)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            result = fn(*args, **kwargs)
            totals[name] += time.perf_counter() - start
            counts[name] += 1
            return result

        timed.__dict__.update(getattr(fn, "__dict__", {}))  # accepts_out and the like
        timed.inner = fn
        return timed

    backend = gf.backends.get(backend)
    accepts_out = backend.accepts_out
    backend.accepts_out = lambda fn: accepts_out(getattr(fn, "inner", fn))
    executor.bind = timed_bind
    try:
        step = make_step()
        step()
        step()
    finally:
        executor.bind = bind
        backend.accepts_out = accepts_out
    per_run, walls = [], []
    for _ in range(steps):
        totals.clear()
        counts.clear()
        start = time.perf_counter()
        step()
        walls.append(time.perf_counter() - start)
        per_run.append((dict(totals), dict(counts)))
    ops = {k: (float(np.median([t.get(k, 0.0) for t, _ in per_run])) * 1e3, per_run[0][1][k])
           for k in per_run[0][0]}
    return float(np.median(walls)) * 1e3, ops


def _name(node, sized):
    name = node.opdef.name
    if "wrt" in node.attrs:
        name += "/" + node.attrs["wrt"]
    if name == "fused":
        name += "[" + " ".join(m.type for m in node.attrs["program"].members) + "]"
    if name.startswith(sized):
        name += str(tuple(node.shape)) if node.shape is not None else ""
    return name


def print_profile(wall, ops):
    """The table of ``profile_ops``, slowest first."""
    inside = sum(ms for ms, _ in ops.values())
    print(f"gradflow step {wall:.2f} ms with timers: {inside:.2f} ms in ops, "
          f"{wall - inside:.2f} ms outside them")
    for name, (ms, calls) in sorted(ops.items(), key=lambda kv: -kv[1][0]):
        print(f"  {name:28s} {ms:7.3f} ms  {calls:5d} calls  {ms / calls * 1e3:8.1f} us/call")
