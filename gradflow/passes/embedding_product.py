"""A product of rows gathered from a small table is a gather of the table's product.

``embedding_lookup`` followed by a dense or recurrent input layer multiplies the
``N`` looked-up rows by the layer's weights: ``gather(table, ids) @ W``. When the
table has fewer rows ``R`` than there are ids (a char-RNN: 65 characters, 1,600 ids a
batch), the same numbers come from the table's own product, looked up:

    gather(table, ids) @ W            ->  gather(table @ W, ids)
    gather_grad(G @ B^T, ids, table)  ->  S @ B^T              (d table)
    gather(table, ids)^T @ G          ->  table^T @ S          (d W)

with ``S = gather_grad(G, ids, [R, K])``, the rows of ``G`` summed by id into ``R``
rows: one pass over ``G`` where there were two products over ``N`` rows. The two
gradient products read one shared ``S`` when they read the same ``G`` and ids. Each
rule applies on its own: a plan where only one of the patterns is present gets that
one rewritten. The sums run in another order (``S`` sums before it multiplies), so the
results agree to rounding, not bit for bit.

The gathered operand may be seen through views of its leading (id) axes: a
``transpose`` that keeps the last axis last, a ``getitem`` of slices that keeps the
last axis whole, a ``reshape`` that keeps the last axis (``dynamic_rnn``'s time-major
stacking of ``embedding_lookup(table, ids)`` of ``[batch, time]`` ids), a ``reverse``
of leading axes (the backward layer of ``bidirectional_dynamic_rnn``). The forward
then gathers the table's product with the user's ids and applies the same views to
it (one copy, of the product's rows); the gradients sum ``G`` by the ids seen through
those views. Where the views change the ids' layout, the gradient's sum is rewritten
only when its ``G`` is computed from the forward lookup of the same ids, which checks
them first: an id out of range then raises the same error, naming the user's lookup,
as without the pass (the position it names is in the layout of the user's ids).

Only a ``gather`` on axis 0 of a 2-D float32 or float64 table (not half types: the
sum of many rows would lose precision) with every static shape known, ``R < N``, and
no control inputs on the nodes replaced. Nodes that other readers still need stay.
"""

from __future__ import annotations

import math

from gradflow.passes.ir import PlanNode, specialized_shape
from gradflow.prim.registry import REGISTRY

FLOAT_TYPES = ("float32", "float64")
SIGNATURE_DEPTH = 16  # ids are a placeholder seen through a few slices and reshapes


def rewrite_embedding_products(graph) -> None:
    """Rewrite the products of gathered rows of ``graph`` (a PlanGraph) in place."""
    rewriter = _Rewriter(graph)
    for node in graph.nodes():
        if _is(node, "matmul"):
            rewriter.forward(node)
    for node in graph.nodes():
        if _is(node, "gather_grad"):
            rewriter.table_grad(node)
    for node in graph.nodes():
        if _is(node, "matmul"):
            rewriter.weight_grad(node)
    graph.replace(rewriter.mapping, extra=rewriter.made)


def _is(node, name):
    return isinstance(node, PlanNode) and node.opdef.name == name \
        and node.opdef.kind == "compute" and not node.control_inputs


def _known(node, shapes=None):
    shape = (shapes or {}).get(node, node.shape)
    return shape is not None and shape.is_fully_defined()


def _dims(node, shapes=None):
    return tuple(int(d) for d in (shapes or {}).get(node, node.shape))


def _small_table(table, ids, shapes):
    """Whether ``table`` is a 2-D float table of fewer rows than ``ids`` (a leaf fed
    to the run has its shape in ``shapes``)."""
    if not (_known(table, shapes) and _known(ids, shapes)) or len(_dims(table, shapes)) != 2:
        return False
    if table.dtype is None or table.dtype.name not in FLOAT_TYPES:
        return False
    return _dims(table, shapes)[0] < math.prod(_dims(ids, shapes))


def _table_lookup(gather, shapes):
    """Whether ``gather`` looks up rows of a small table (``_small_table``) on axis 0."""
    return _is(gather, "gather") and gather.attrs.get("axis") == 0 and _known(gather) \
        and _small_table(*gather.inputs, shapes)


def _full_slice(entry, size):
    return entry[0] == "slice" and entry[1] in (None, 0) and entry[3] in (None, 1) \
        and (entry[2] is None or entry[2] >= size)


def _view_step(node):
    """``(op, (attr, value))`` that does to the ids what the view ``node`` does to the rows it
    reads (the last axis kept as it is), ``()`` for a view that changes nothing, or
    None where ``node`` is not such a view."""
    name = node.opdef.name
    if name not in ("transpose", "reshape", "reshape_like", "getitem", "reverse") \
            or not node.inputs \
            or not (_known(node) and _known(node.inputs[0])):
        return None
    before, after = _dims(node.inputs[0]), _dims(node)
    if not before or not after or before[-1] != after[-1]:  # (a scalar has no rows)
        return None
    if name in ("transpose", "getitem") and len(node.inputs) != 1:  # a key read at run time
        return None
    if name == "transpose":
        perm = node.attrs.get("perm")
        if perm is None or perm[-1] != len(perm) - 1:
            return None
        return () if tuple(perm) == tuple(range(len(perm))) else ("transpose",
                                                                  ("perm", tuple(perm[:-1])))
    if name == "reverse":  # (its own inverse)
        axes = node.attrs.get("axes")
        if axes is None:
            return None
        axes = tuple(sorted({a % len(before) for a in ((axes,) if isinstance(axes, int)
                                                       else axes)}))
        return None if len(before) - 1 in axes else (("reverse", ("axes", axes)) if axes else ())
    if name in ("reshape", "reshape_like"):
        return () if before == after else ("reshape", ("shape", after[:-1]))
    if name == "getitem":
        key = node.attrs.get("key")
        if not isinstance(key, tuple) or len(key) > len(before) or not all(
                isinstance(k, tuple) and k and k[0] == "slice" for k in key):
            return None
        if len(key) == len(before) and not _full_slice(key[-1], before[-1]):
            return None
        if all(_full_slice(k, size) for k, size in zip(key, before)):
            return ()
        return ("getitem", ("key", key[:len(before) - 1]))
    return None


def _gathered_rows(a, shapes):
    """``(gather, views)``: ``a`` is ``gather`` (a table lookup) seen through ``views``
    (the view nodes from the gather up to ``a``, none of which changes the last axis),
    or None."""
    views = []
    node = a
    while not _is(node, "gather"):
        if not isinstance(node, PlanNode) or node.control_inputs or _view_step(node) is None:
            return None
        views.append(node)
        node = node.inputs[0]
    return (node, views[::-1]) if _table_lookup(node, shapes) else None


def _inverse_terms(y, steps=()):
    """``[(product, steps), ...]``: ``y`` (rows laid out as the ids) is the sum of 2-D
    ``product``s (one term: no sum), each seen through views of its leading axes (views
    of the sum apply to every term), ``steps`` taking the ids to that product's row
    order; or None."""
    if _is(y, "matmul") and _known(y) and len(y.shape) == 2:
        return [(y, steps)]
    if _is(y, "add") and len(y.inputs) == 2 and _known(y) \
            and all(_known(i) and _dims(i) == _dims(y) for i in y.inputs):
        terms = [_inverse_terms(i, steps) for i in y.inputs]
        return None if None in terms else terms[0] + terms[1]
    if not isinstance(y, PlanNode) or y.opdef.kind != "compute" or y.control_inputs \
            or _view_step(y) is None:
        return None
    name, rows = y.opdef.name, _dims(y.inputs[0])[:-1]
    if name == "reverse" and _view_step(y):
        steps += (_view_step(y),)
    elif name == "transpose" and _view_step(y):
        perm = y.attrs["perm"][:-1]
        inverse = tuple(sorted(range(len(perm)), key=perm.__getitem__))
        steps += (("transpose", ("perm", inverse)),)
    elif name in ("reshape", "reshape_like") and _view_step(y):
        steps += (("reshape", ("shape", rows)),)
    elif _view_step(y):  # a slice: the product has rows the ids do not cover
        return None
    return _inverse_terms(y.inputs[0], steps)


def _upstream_of(node, target):
    """Whether ``target`` is ``node`` or computed before it (an input, transitively)."""
    seen, stack = set(), [node]
    while stack:
        n = stack.pop()
        if n is target:
            return True
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.extend(getattr(n, "inputs", ()) + getattr(n, "control_inputs", ()))
    return False


class _Rewriter:
    """The replacements of one plan: ``mapping`` (node -> its replacement) and ``made``
    (the new nodes), with the new nodes shared between the rules: the table's product
    per ``(table, weights, transpose_b)``, the ids seen through views per ``(ids,
    steps)``, the sum of a gradient's rows per ``(gradient, ids)``."""

    def __init__(self, graph):
        self.graph = graph
        self.shapes = graph.feed_shapes
        self.mapping, self.made = {}, []
        self.products, self.ids_views, self.sums = {}, {}, {}

    def _matrix(self, node):
        """The static shape of ``node`` if it is a matrix of known shape, else None."""
        known = _known(node, self.shapes) and len(_dims(node, self.shapes)) == 2
        return _dims(node, self.shapes) if known else None

    def _make(self, like, op, inputs, attrs, shape, dtype=None, name=None):
        node = PlanNode.standing_for(like, REGISTRY[op], inputs, attrs, shape=shape,
                                     dtype=dtype, name=name)
        self.made.append(node)
        return node

    def _product(self, like, table, weights, transpose_b):
        """``table @ weights`` (``weights`` transposed with ``transpose_b``), made once."""
        key = (table, weights, bool(transpose_b))
        if key not in self.products:
            cols = _dims(weights, self.shapes)[0 if transpose_b else 1]
            self.products[key] = self._make(
                like, "matmul", [table, weights],
                {"transpose_a": False, "transpose_b": bool(transpose_b)},
                shape=(_dims(table, self.shapes)[0], cols), dtype=table.dtype,
                name=like.name + "/table_product")
        return self.products[key]

    def forward(self, m):
        """``view(gather(table, ids)) @ W`` -> ``view'(gather(table @ W, ids))``."""
        weights = m.inputs[1]
        if m.attrs.get("transpose_a") or not (self._matrix(m) and self._matrix(weights)):
            return
        found = _gathered_rows(m.inputs[0], self.shapes)
        if found is None or not m.dtype == found[0].dtype == weights.dtype:
            return
        gather, views = found
        table, ids = gather.inputs
        product = self._product(m, table, weights, m.attrs.get("transpose_b"))
        cols = self._matrix(m)[1]
        # the lookup stands for the user's: an id out of range names their lookup
        node = self._make(gather, "gather", [product, ids], dict(gather.attrs),
                          shape=_dims(ids, self.shapes) + (cols,), dtype=m.dtype)
        for view in views:
            shape = _dims(view, self.shapes)[:-1] + (cols,)
            op, attrs = view.opdef.name, dict(view.attrs)
            if op in ("reshape", "reshape_like"):
                op, attrs = "reshape", {"shape": shape}
            node = self._make(m, op, [node], attrs, shape=shape, dtype=m.dtype)
        self.mapping[m] = node

    def _ids_seen(self, like, ids, steps):
        """``ids`` seen through ``steps`` (``(op, (attr, value))`` pairs), made once per
        ids that compute the same (``_signature``) and steps."""
        node = ids
        for i, (op, (attr, value)) in enumerate(steps):
            key = (_signature(ids), steps[:i + 1])
            if key not in self.ids_views:
                made = self._make(like, op, [node], {attr: value}, shape=None, dtype=ids.dtype)
                made.shape = None  # (``like``'s until inferred from the ids')
                made.shape = specialized_shape(made, self.shapes)
                self.ids_views[key] = made
            node = self.ids_views[key]
        return node

    def _row_sum(self, like, grad, ids, shape_like, attrs):
        """The rows of ``grad`` summed by ``ids`` into ``shape_like``'s rows (made once
        per gradient and ids)."""
        key = (grad, _signature(ids))
        if key not in self.sums:
            self.sums[key] = self._make(like, "gather_grad", [grad, ids, shape_like], attrs,
                                        shape=_dims(shape_like, self.shapes), dtype=grad.dtype,
                                        name=like.name + "/row_sum")
        return self.sums[key]

    def table_grad(self, gg):
        """``gather_grad(view(G @ B^T), ids, table)`` -> ``gather_grad(G, ids') @ B^T``;
        a sum of such products (a bidirectional RNN's two layers read the same rows) is
        the sum of their rewrites."""
        table, ids = gg.inputs[2], gg.inputs[1]
        if gg.attrs.get("axis") != 0 or not _small_table(table, ids, self.shapes):
            return
        terms = _inverse_terms(gg.inputs[0])
        if terms is None or not all(self._table_term(gg, product, steps)
                                    for product, steps in terms):
            return
        total = None
        for product, steps in terms:
            grad, weights = product.inputs
            tb = bool(product.attrs.get("transpose_b"))
            like = self._product(gg, table, weights, not tb)
            rows = self._row_sum(gg, grad, self._ids_seen(gg, ids, steps), like, dict(gg.attrs))
            term = self._make(gg, "matmul", [rows, weights],
                              {"transpose_a": False, "transpose_b": tb},
                              shape=_dims(table, self.shapes), dtype=table.dtype)
            total = term if total is None else self._make(
                gg, "add", [total, term], {}, shape=_dims(table, self.shapes), dtype=table.dtype)
        self.mapping[gg] = total

    def _table_term(self, gg, product, steps):
        """Whether the term ``product`` of the table's gradient ``gg`` (``G @ B^T``, seen
        through ``steps``) can be ``gather_grad(G) @ B^T``."""
        table, ids = gg.inputs[2], gg.inputs[1]
        grad, weights = product.inputs
        return not product.attrs.get("transpose_a") and bool(
            self._matrix(grad) and self._matrix(weights)) \
            and grad.dtype == weights.dtype == product.dtype == table.dtype \
            and _dims(product, self.shapes) == (math.prod(_dims(ids, self.shapes)),
                                                _dims(table, self.shapes)[1]) \
            and (not steps or self._checked_before(grad, ids, table))

    def weight_grad(self, m):
        """``view(gather(table, ids))^T @ G`` -> ``table^T @ gather_grad(G, ids')``."""
        grad = m.inputs[1]
        if not m.attrs.get("transpose_a") or m.attrs.get("transpose_b") \
                or not (self._matrix(m) and self._matrix(grad)):
            return
        found = _gathered_rows(m.inputs[0], self.shapes)
        if found is None or not grad.dtype == m.dtype == found[0].dtype:
            return
        gather, views = found
        table, ids = gather.inputs
        steps = tuple(s for s in (_view_step(v) for v in views) if s)
        if steps and not self._checked_before(grad, ids, table):
            return
        seen = self._ids_seen(m, ids, steps)
        rows = self.sums.get((grad, _signature(seen)))
        if rows is None:
            cols = self._matrix(grad)[1]
            like = next((p for p in self.products.values() if p.inputs[0] is table
                         and int(p.shape[1]) == cols and not _upstream_of(p, m)), None)
            if like is None:
                return
            attrs = {"axis": 0, "validate": gather.attrs.get("validate", True)}
            rows = self._row_sum(m, grad, seen, like, attrs)
        self.mapping[m] = self._make(m, "matmul", [table, rows],
                                     {"transpose_a": True, "transpose_b": False},
                                     shape=_dims(m, self.shapes), dtype=m.dtype)

    def _checked_before(self, grad, ids, table):
        """Whether ``grad`` is computed after a lookup that checks ``ids`` against the
        rows of ``table`` (so an id out of range is reported there first)."""
        rows = _dims(table, self.shapes)[0]
        return any(_upstream_of(grad, g) for g in self.graph.nodes()
                   if _is(g, "gather") and g.inputs[1] is ids and g.attrs.get("validate", True)
                   and _known(g.inputs[0], self.shapes)
                   and _dims(g.inputs[0], self.shapes)[0] == rows)


def _signature(node, memo=None, depth=0):
    """What ``node`` computes, as a hashable key: its op, attributes and the signatures
    of its inputs, down to leaves (themselves) or ``SIGNATURE_DEPTH`` ops deep (the node
    itself there). Two copies of one slice of the ids (the forward's and the gradient's)
    have one signature."""
    memo = {} if memo is None else memo
    if not isinstance(node, PlanNode) or node.opdef.kind != "compute" or node.control_inputs \
            or depth >= SIGNATURE_DEPTH:
        return node
    if node not in memo:
        attrs = tuple(sorted((k, repr(v)) for k, v in node.attrs.items()))
        memo[node] = (node.opdef.name, attrs,
                      tuple(_signature(i, memo, depth + 1) for i in node.inputs))
    return memo[node]
