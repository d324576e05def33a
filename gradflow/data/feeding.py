"""Iterator elements handed to ``Session.run`` as feeds.

A ``get_next`` that reads nothing from the graph (every iterator but a one-shot
iterator over computed tensors) can be evaluated before the run's plan: its
components are then fed to the plan like ``feed_dict`` values, with no copy, and
the Session specializes the plan to their shapes as it does for fed placeholders
(a batch dimension that is ``None`` statically is known at run time; the last,
smaller batch of an epoch gets a plan of its own). Where a ``get_next`` cannot be
fed (it reads tensors, or gives strings, which plans carry but feeds do not) it
runs inside the plan as a call op.

The Session asks for these feeds through ``register_feed_source`` (gf.data sits
above the session, which does not import it).
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import topological_order
from gradflow.session import register_feed_source

GET_NEXT = "_gradflow_data_get_next"  # the graph collection of get_next nodes
_PLANS = "data_feeds"  # run_state.resources key: {(fetches, fed): what to feed}


def register_get_next(node, parts) -> None:
    """Note a ``get_next`` node of the graph and its component tensors."""
    if node.inputs or any(p.dtype is dtypes.string for p in parts):
        return
    node.graph.add_to_collection(GET_NEXT, (node, tuple(parts)))


def next_elements(run, fetches, feed_items) -> list:
    """``(tensor, value)`` feeds of the next elements of the iterators that ``fetches``
    read (each iterator advanced once), or ``[]``; ``run`` is the Session's run state."""
    registered = run.graph.get_collection(GET_NEXT)
    if not registered:
        return []
    fed = tuple(t for t, _ in feed_items)
    plans = run.resources.setdefault(_PLANS, {})
    key = (tuple(fetches), fed)
    plan = plans.get(key)
    if plan is None:
        plan = plans[key] = _needed(registered, fetches, fed)
    feeds = []
    for node, parts in plan:
        iterator = node.attrs["iterator"]
        state = iterator.state(run)
        if iterator.one_shot_dataset is not None and not state.initialized:
            state.initialize(iterator.one_shot_dataset, [], [])
        element = state.get_next(node)
        feeds.extend((part, element[k]) for k, part in parts)
    return feeds


def _needed(registered, fetches, fed):
    """``[(get_next node, [(index, component)])]`` for the components a run of
    ``fetches`` reads (none that the caller feeds)."""
    by_part = {}
    for node, parts in registered:
        for k, part in enumerate(parts):
            by_part[part] = (node, k)
    needed = {}
    for n in topological_order(list(fetches), set(fed) | set(by_part)):
        if n in by_part and n not in fed:
            node, k = by_part[n]
            needed.setdefault(node, []).append((k, n))
    return list(needed.items())


register_feed_source(next_elements)
