"""TF1's ``timeline``: a traced run's step stats as a Chrome trace.

The JSON that :meth:`Timeline.generate_chrome_trace_format` returns opens in
``chrome://tracing`` and in Perfetto (https://ui.perfetto.dev): one row per
device, one bar per op, with the op's inputs and the line of user code that
built it under the bar's arguments.

>>> md = gf.RunMetadata()
>>> sess.run(train, feed, options=gf.RunOptions(trace_level=gf.RunOptions.FULL_TRACE),
...          run_metadata=md)
>>> with open("timeline.json", "w") as f:
...     f.write(gf.timeline.Timeline(md.step_stats).generate_chrome_trace_format())
"""

from __future__ import annotations

import json

__all__ = ["Timeline"]


class Timeline:
    """The ops of one traced run (``step_stats`` of a ``RunMetadata``) on a time line.

    ``graph`` is accepted, as in TF1, and not needed: the step stats name each op.
    """

    def __init__(self, step_stats, graph=None):
        if step_stats is None or not hasattr(step_stats, "dev_stats"):
            raise ValueError("Timeline: step_stats is empty; pass the run_metadata.step_stats "
                             "of a run made with options=gf.RunOptions(trace_level="
                             "gf.RunOptions.FULL_TRACE)")
        self._step_stats = step_stats

    def generate_chrome_trace_format(self, show_dataflow=True, show_memory=False) -> str:
        """The trace as a JSON string in the Chrome trace event format. ``show_dataflow``
        and ``show_memory`` are accepted; arrows and memory counters are not drawn."""
        events = []
        starts = [s.all_start_micros for d in self._step_stats.dev_stats for s in d.node_stats]
        origin = min(starts) if starts else 0
        for pid, device in enumerate(self._step_stats.dev_stats):
            events.append({"name": "process_name", "ph": "M", "pid": pid,
                           "args": {"name": f"{device.device} Compute"}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid,
                           "args": {"sort_index": pid}})
            for stat in device.node_stats:
                events.append({
                    "name": stat.node_name, "cat": "Op", "ph": "X", "pid": pid, "tid": 0,
                    "ts": stat.all_start_micros - origin,
                    "dur": max(stat.all_end_rel_micros, 1),
                    "args": {"name": stat.node_name, "label": stat.timeline_label}})
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}, indent=None)
