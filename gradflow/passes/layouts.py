"""Layout sinking: elementwise ops between NCHW layers run in NHWC.

An NCHW convolution or pool runs the NHWC kernels between two ``image_layout``
copies (``gradflow.prim.conv``). The bias add and activation between a
convolution and a pool then run on the NCHW copy, and the pool copies it back:
two copies of every activation forward, two of every gradient backward. This
pass moves each copy past the elementwise ops that read it:

- ``e(image_layout(x, P), ..., b)``, an elementwise op whose full-shape inputs are
  all copies by the same permutation ``P`` and whose other inputs broadcast along
  at most one axis (a channel bias, a scalar), becomes ``image_layout(e(x, ...,
  b'), P)``, with ``b'`` the same values reshaped to broadcast along that axis in
  ``x``'s layout;
- ``unbroadcast(image_layout(y, P), b)`` (a bias's gradient) becomes
  ``reshape_like(unbroadcast(y, b'), b)``;
- ``reduce_sum(image_layout(x, P), axes, keepdims=True)`` (or ``reduce_mean``) with a
  one-axis result (batch norm's moments) becomes ``image_layout(reduce_sum(x, axes'),
  P)``, a copy of a few values;
- an elementwise op of one-axis values broadcast to the full shape
  (``broadcast_like(b, x) * c``, a channel sum's gradient) becomes
  ``broadcast_like(b * c, x)``, and an op that reads such a broadcast takes ``b``
  itself, which broadcasts in the op all the same.

A moved op keeps its control inputs (TF1's batch norm puts every gradient op after
the moving averages' updates), and a copy that runs after other nodes counts as a
copy only for readers that run after them too.

An op moves only where the copy it reads is needed by nothing else afterwards. The
ops that can all move together are found first (``_movable``): a forward op and the
gradient op that reads the same copy (``x * scale`` and ``g * x``) each wait for the
other in a single sweep. ``rewrite_algebra`` then cancels each copy that meets its
inverse (the pool's), and copies nothing reads any more are gone. Elementwise ops
give the same values in either layout; a bias gradient or a channel's sum (batch
norm's moments) sums the same terms in another order.
"""

from __future__ import annotations

import math

from gradflow.passes.elementwise import is_elementwise
from gradflow.passes.ir import PlanNode
from gradflow.passes.rewrites import apply_rules
from gradflow.prim.registry import REGISTRY


def sink_layouts(graph) -> None:
    """Apply the rules of the module docstring over ``graph`` (a PlanGraph). An
    elementwise op moves a copy only where nothing else keeps that copy: moving it
    would otherwise add a copy of the op's result where there was none."""
    readers, fetched = graph.consumers(), set(graph.outputs)
    memo = {}  # node -> the one-axis value it broadcasts, or None (_spread_shape)
    movable = _movable(graph.nodes(), readers, fetched, memo)
    replaced = {}  # node -> the node standing for it, as the sweep goes
    stands_for = {}  # and back

    def current(node):
        while node in replaced:
            node = replaced[node]
        return node

    def original(node):  # the node of the graph as it was that ``node`` stands for
        while node in stands_for:
            node = stands_for[node]
        return node

    def moves_freely(copy, node):
        """Whether the copy ``copy`` that ``node`` reads would be needed by nothing once
        ``node`` reads its source: not fetched, and read only by ``node``, by copies
        back (they cancel) or by elementwise ops that may move it too."""
        source = original(copy)
        if source in fetched or copy in fetched:
            return False
        perm = copy_perm(copy, node)
        for reader in readers.get(source, ()):
            if reader is node or _leaves_copy(reader, copy, perm, movable, readers, fetched):
                continue
            if reader.opdef.scalar is not None and reader.shape is not None:
                full = [current(i) for i in reader.inputs
                        if tuple(i.shape or ()) == tuple(reader.shape)]
                if all(copy_perm(i, reader) == perm for i in full):
                    continue
            return False
        return True

    def rule_for(node):
        rule = _unbroadcast if node.opdef.name == "unbroadcast" else \
            _reduction if node.opdef.name in _SUMS else \
            _elementwise if node.opdef.scalar is not None else None
        if rule is None:
            return None

        def apply(node, inputs, graph):
            result = rule(node, inputs, moves_freely, memo)
            if result is not None:
                replaced[node], stands_for[result] = result, node
            return result

        return apply

    apply_rules(graph, rule_for)


def _movable(nodes, readers, fetched, memo):
    """The elementwise ops that can all move together: each one's full-shape inputs are
    layout copies by one permutation or ops of the set with that permutation, its other
    inputs one-axis broadcasts, and every reader of a copy that one of them reads is in
    the set, a copy back or a bias gradient. The largest such set, so that a forward op
    and the gradient op that reads the same copy (which can move only once the forward
    op has) move together, where one sweep would move neither."""
    order = [n for n in nodes if n.opdef.scalar is not None and is_elementwise(n)
             and _static(n.shape) and len(n.shape) == 4 and _spread_shape(n, memo) is None]
    candidates = set(order)
    while True:
        perms, keep = {}, set()
        for n in order:  # inputs first: one pass gives each op its permutation
            if n not in candidates:
                continue
            found, ok = set(), True
            for i in n.inputs:
                spread = _spread_shape(i, memo)
                if tuple(i.shape or ()) != tuple(n.shape) or spread is not None:
                    ok = ok and _one_axis(spread or i.shape)
                elif copy_perm(i, n):
                    found.add(copy_perm(i, n))
                elif i in keep:
                    found |= perms[i]
                else:
                    ok = False
            if ok and len(found) == 1:
                keep.add(n)
                perms[n] = found
        for copy, reader in {(i, n) for n in keep for i in n.inputs if copy_perm(i, n)}:
            perm = copy_perm(copy, reader)
            if copy in fetched or not all(_leaves_copy(r, copy, perm, keep, readers, fetched)
                                          for r in readers.get(copy, ())):
                keep -= set(readers.get(copy, ()))
        if keep == candidates:
            return keep
        candidates = keep


def _leaves_copy(reader, copy, perm, moving, readers, fetched):
    """Whether ``reader`` of the layout copy ``copy`` (by ``perm``) needs the copy no more
    once the ops in ``moving`` move past it: it is one of them, a copy back (they
    cancel), a bias gradient or a channel's sum (batch norm's moments; both read the
    copy's source once moved), or a broadcast that reads only the copy's shape and
    whose readers all move (they take its one-axis value)."""
    return reader in moving or copy_perm(reader) == _inverse(perm) \
        or (reader.opdef.name == "unbroadcast" and _one_axis(reader.inputs[1].shape)) \
        or _sums_to_one_axis(reader, copy) \
        or (_broadcast_of_one_axis(reader) and reader not in fetched
            and all(r in moving for r in readers.get(reader, ())))


def _broadcast_of_one_axis(node):
    """Whether ``node`` is ``broadcast_like(b, like)`` of a one-axis ``b`` (the gradient
    of a channel's sum): it reads only ``like``'s shape."""
    return node.opdef.name == "broadcast_like" and _one_axis(node.inputs[0].shape)


def _spread_shape(node, memo):
    """The shape of the one-axis value that ``node`` holds broadcast to a larger shape:
    a ``broadcast_like`` of a one-axis value (a channel sum's gradient), or an
    elementwise op of such values and other one-axis values; else None. ``memo`` keeps
    each node's answer (a plan reads a value many times)."""
    if node not in memo:
        memo[node] = None
        if _broadcast_of_one_axis(node):
            memo[node] = tuple(node.inputs[0].shape)
        elif node.opdef.scalar is not None and node.inputs:
            memo[node] = _spread_of(node.inputs, memo)
    return memo[node]


def _spread_of(inputs, memo):
    """The one-axis shape of an elementwise op of ``inputs``, where at least one of them
    is a broadcast one-axis value (``_spread_shape``) and the others are one-axis."""
    shapes, spread = [], False
    for i in inputs:
        if i.shape is None:
            return None
        s = None if _one_axis(i.shape) else _spread_shape(i, memo)
        if s is None and not _one_axis(i.shape):
            return None
        spread = spread or s is not None
        shapes.append(tuple(i.shape) if s is None else s)
    shape = _broadcast_shape(shapes) if spread else None
    return shape if shape is not None and _one_axis(shape) else None


def _broadcast_shape(shapes):
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    return tuple(max(d) for d in zip(*padded))


_SUMS = ("reduce_sum", "reduce_mean")


def _sums_to_one_axis(node, x):
    """Whether ``node``, reading ``x``, reduces a layout copy to a one-axis result and
    keeps its dims (a channel's sum or mean, as in batch norm's moments)."""
    return node.opdef.name in _SUMS and bool(node.attrs.get("keepdims")) \
        and node.attrs.get("axes") is not None and copy_perm(x, node) is not None \
        and _one_axis(node.shape)


def _inverse(perm):
    return tuple(perm.index(a) for a in range(len(perm)))


def copy_perm(node, reader=None):
    """The permutation of ``node`` if it is a layout copy the plan computes, else None.
    A copy that runs after other nodes (``control_inputs``) counts only for a ``reader``
    that runs after them too: reading the copy's source keeps that order."""
    if node.opdef.kind != "compute" or node.opdef.name != "image_layout":
        return None
    if node.control_inputs and (reader is None or not set(node.control_inputs)
                                <= set(reader.control_inputs)):
        return None
    return tuple(node.attrs["perm"])


def _static(shape):
    return shape is not None and all(d is not None for d in shape)


def _one_axis(shape):
    """Whether a static ``shape`` of rank 4 or less has at most one dimension above 1."""
    return _static(shape) and len(shape) <= 4 and sum(d != 1 for d in shape) <= 1


def _in_source_layout(node, b, perm):
    """``b`` (a one-axis broadcast in the copy's layout) reshaped to broadcast the same
    way in the source layout, or ``b`` itself where it is one element."""
    shape = (1,) * (4 - len(b.shape)) + tuple(b.shape)
    if math.prod(shape) == 1:
        return b
    source = [1] * 4
    for k, p in enumerate(perm):  # axis k of the copy is axis perm[k] of its source
        source[p] = shape[k]
    # without the leading ones: a bias of shape (C,) is what the kernels read fastest
    # (a row; and unbroadcast sums down to it as a matrix's columns)
    source = tuple(source[next(a for a, d in enumerate(source) if d != 1):])
    return _made(node, "reshape", [b], {"shape": source}, source, b.dtype,
                 f"{b.name}/in_source_layout")


def _made(node, op, inputs, attrs, shape, dtype, name=None, after=()):
    """A node standing for ``node``; ``after``: its control inputs (the moved op keeps
    those of ``node``: it still runs after what ``node`` ran after)."""
    return PlanNode.standing_for(node, REGISTRY[op], inputs, attrs, shape=shape,
                                 dtype=dtype, name=name, control_inputs=after)


def _elementwise(node, inputs, moves_freely, memo):
    if not is_elementwise(node) or not _static(node.shape) or len(node.shape) != 4:
        return None
    if _spread_of(inputs, memo) is not None and all(  # (b * c broadcast like x)
            _broadcast_of_one_axis(x) or _one_axis(x.shape) for x in inputs):
        small = [x.inputs[0] if _broadcast_of_one_axis(x) else x for x in inputs]
        like = next(x.inputs[1] for x in inputs if _broadcast_of_one_axis(x))
        shape = _broadcast_shape([x.shape for x in small])
        inner = _made(node, node.opdef.name, small, node.attrs, shape, node.dtype,
                      f"{node.name}/of_one_axis", after=node.control_inputs)
        return _made(node, "broadcast_like", [inner, like], {}, tuple(node.shape), node.dtype)
    # a one-axis value broadcast to the full shape broadcasts in the op all the same
    inputs = [x.inputs[0] if _broadcast_of_one_axis(x) else x for x in inputs]
    copies = [copy_perm(x, node) if tuple(x.shape or ()) == tuple(node.shape) else None
              for x in inputs]
    perms = set(copies) - {None}
    if len(perms) != 1 or not all(c is not None or _one_axis(x.shape)
                                  for x, c in zip(inputs, copies)):
        return None
    (perm,) = perms
    if not all(moves_freely(x, node) for x, c in zip(inputs, copies) if c is not None):
        return None
    moved = [x.inputs[0] if c is not None else _in_source_layout(node, x, perm)
             for x, c in zip(inputs, copies)]
    source_shape = tuple(node.shape[perm.index(a)] for a in range(4))
    inner = _made(node, node.opdef.name, moved, node.attrs, source_shape, node.dtype,
                  f"{node.name}/in_source_layout", after=node.control_inputs)
    return _made(node, "image_layout", [inner], {"perm": perm}, tuple(node.shape),
                 node.dtype)


def _reduction(node, inputs, moves_freely, memo):
    # reading the source instead of the copy never adds a copy: no moves_freely check
    (x,) = inputs
    perm = copy_perm(x, node)
    if not _sums_to_one_axis(node, x) or not _static(x.shape) or len(x.shape) != 4:
        return None
    axes = tuple(sorted(perm[a % 4] for a in node.attrs["axes"]))  # the source's axes
    shape = tuple(1 if a in axes else d for a, d in enumerate(x.inputs[0].shape))
    inner = _made(node, node.opdef.name, [x.inputs[0]], {**node.attrs, "axes": axes},
                  shape, node.dtype, f"{node.name}/in_source_layout", after=node.control_inputs)
    return _made(node, "image_layout", [inner], {"perm": perm}, tuple(node.shape),
                 node.dtype)


def _unbroadcast(node, inputs, moves_freely, memo):
    # reading the source instead of the copy never adds a copy: no moves_freely check
    g, like = inputs
    perm = copy_perm(g, node)
    if perm is None or not _one_axis(like.shape) \
            or not _static(g.shape) or len(g.shape) != 4:
        return None
    target = _in_source_layout(node, like, perm)
    summed = _made(node, "unbroadcast", [g.inputs[0], target], {}, tuple(target.shape),
                   node.dtype, f"{node.name}/in_source_layout", after=node.control_inputs)
    return _made(node, "reshape_like", [summed, like], {}, tuple(like.shape), node.dtype)
