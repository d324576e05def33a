"""The graph compiler: passes from graph to graph, run when a plan is compiled.

``optimize`` copies the nodes a run needs into a private ``PlanGraph``
(specializing static shapes to the shapes fed), then runs each pass of
``PASSES`` over it in turn; the executor compiles the result. Each pass is a
function ``pass(graph) -> None`` that rewires the plan graph in place and lives
in its own module. ``Session(optimize=False)`` skips all of them.

One pass runs earlier, on the user's graph: ``gradient_sums`` rewrites the sums of
gradient contributions while ``gradients`` builds them (the nodes it makes are what
the gradient rules further down read, and what ``gf.gradients`` returns), so every
plan, optimizing or not, starts from its stacks. It is installed here, with the
graph compiler it belongs to.
"""

from __future__ import annotations

from gradflow.autodiff import rewrite_sums_with
from gradflow.passes.attention import fuse_attention
from gradflow.passes.batch_matmuls import batch_matmuls
from gradflow.passes.constant_folding import fold_constants
from gradflow.passes.cse import eliminate_common_subexpressions
from gradflow.passes.embedding_product import rewrite_embedding_products
from gradflow.passes.fusion import fuse_elementwise
from gradflow.passes.gelu import fuse_gelu
from gradflow.passes.gradient_sums import stack_gradient_sums
from gradflow.passes.gru_steps import fuse_gru_steps
from gradflow.passes.ir import PlanGraph, PlanNode
from gradflow.passes.layer_norm import fuse_layer_norm
from gradflow.passes.layouts import sink_layouts
from gradflow.passes.lstm_steps import fuse_lstm_steps
from gradflow.passes.mixed_precision import mixed_precision_pass
from gradflow.passes.rewrites import rewrite_algebra
from gradflow.passes.shape_noops import drop_shape_noops
from gradflow.passes.shared_stacks import share_row_stacks
from gradflow.passes.while_unroll import unroll_while_loops

# Folding first makes more static shapes known (an RNN's zero state and what reads it);
# shape no-ops go next: gradient code wraps one value in a different ``unbroadcast`` for
# each reader, and CSE can merge what reads them only once they are gone. Batching finds
# the gradient code's row stacks before the rewrites turn stacks of lookups into lookups.
# Layout copies sink past elementwise ops before the rewrites cancel the pairs they form.
# Row stacks share their parts once the rewrites have made the stacks they make.
# A product of rows looked up in a small table becomes a lookup in the table's product
# once the rewrites have made one lookup of all the ids and batching one product of all
# the rows (and before the LSTM/GRU and elementwise fusions read the product's slices).
# A while_loop whose trip count folding made known is unrolled next, so the passes after
# it see the copies as they see a static unroll.
# Attention's ops (and their gradient's) become one fused pair before the elementwise
# fusion hides them in fused groups; so do layer norm's (contrib's and GPT-2's), and GELU's
# tanh form becomes two elementwise ops that the fusion then takes in.
PASSES = [fold_constants, unroll_while_loops, drop_shape_noops,
          eliminate_common_subexpressions, batch_matmuls, sink_layouts, rewrite_algebra,
          share_row_stacks, rewrite_embedding_products,
          fuse_lstm_steps, fuse_gru_steps, fuse_attention,
          fuse_layer_norm, fuse_gelu, fuse_elementwise]

rewrite_sums_with(stack_gradient_sums)


def optimize(fetches, fed, feed_shapes=None, passes=None, mixed_precision=None) -> PlanGraph:
    """The plan graph computing ``fetches`` from ``fed`` after ``passes`` (default all);
    with ``mixed_precision`` (a low float dtype), its rewrite runs too, before the fusion
    pass (``gradflow.passes.mixed_precision``), so that its casts fuse."""
    graph = PlanGraph(fetches, fed, feed_shapes)
    passes = list(PASSES if passes is None else passes)
    if mixed_precision is not None:
        at = passes.index(fuse_elementwise) if fuse_elementwise in passes else len(passes)
        passes.insert(at, mixed_precision_pass(mixed_precision))
    for run_pass in passes:
        run_pass(graph)
    return graph


__all__ = ["PASSES", "PlanGraph", "PlanNode", "optimize"]
