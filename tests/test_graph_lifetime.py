"""A graph, and everything built in it, is freed once nothing of the user's holds it.

The suite runs thousands of graphs in one process: a module-level map keyed by the graph
whose values hold the graph's own nodes (a weak-key map does not help then) kept every
one of them alive, 1.7 MB a graph of linear-algebra ops.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np

import gradflow as gf


def _build_and_run(backend):
    graph = gf.Graph()
    with graph.as_default(), gf.device("/cpu:0"):
        x = gf.placeholder(gf.float32, [None, 3], name="x")
        with gf.variable_scope("layer"):
            w = gf.get_variable("w", [3, 2], initializer=gf.ones_initializer())
        y = gf.matmul(x, w)
        z = gf.cond(gf.reduce_sum(y) > 0, lambda: y * 2.0, lambda: y - 1.0)
        i, acc = gf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + z),
                               [gf.constant(0), gf.zeros_like(z)])
        loss = gf.reduce_sum(acc)
        step = gf.train.GradientDescentOptimizer(0.1).minimize(loss)
        dataset = gf.data.Dataset.from_tensor_slices(np.ones((4, 3), np.float32)).batch(2)
        batch = dataset.make_one_shot_iterator().get_next()
        with gf.Session(graph=graph, backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            sess.run([loss, step], {x: sess.run(batch)})
    return weakref.ref(graph)


def test_a_graph_with_control_flow_scopes_and_a_pipeline_is_freed(backend):
    graph = _build_and_run(backend)
    gc.collect()
    assert graph() is None, [type(r).__name__ for r in gc.get_referrers(graph())]
