"""The sums of gradient contributions, rewritten as autodiff builds them.

Where a tensor feeds several ops, reverse mode adds one gradient contribution per
consumer. An unrolled RNN reads its kernel once per step, so the kernel's gradient
is a sum of one small ``h_t^T g_t`` matmul per step; its embedding table's is a sum
of one ``gather_grad`` per step; a time-sliced input's is a sum of zero-padded
arrays of its full size, one per slice. This pass rewrites such a list of
contributions before they are added:

* contributions ``getitem_grad(g_k, x)`` of the same slice of the same ``x``
  become one ``getitem_grad`` of the sum of the ``g_k`` (the op is linear in ``g``);
* slice gradients that together tile ``x`` along one axis (``unstack``, ``split``)
  become one ``stack``/``concat`` of the slice gradients;
* contributions that are sums over rows of the same kind (``a^T g`` of matmuls,
  ``gather_grad`` on axis 0, ``unbroadcast`` over a leading axis) become one op
  over their inputs concatenated along the rows: one large matmul instead of one
  small matmul and one add per step.

It runs while the gradient is built, not on a plan, because what it makes is what
the gradient rules further down read: the user's graph holds the stacked nodes
(``gf.gradients`` returns them), and every plan and session, optimizing or not,
computes the same numbers from them. ``autodiff`` stays a plain walk over gradient
rules: it calls the rewrite that ``gradflow.passes`` installs
(``autodiff.rewrite_sums_with``) on each list of contributions, then adds what is
left in order. ``passes/shared_stacks.py`` later lets the row stacks made here
share their rows with the layer above's.

Example::

    grads = gf.gradients(loss, [kernel])  # kernel read by 6 steps of an LSTM
    # grads[0] is concat([matmul(concat(x_1..x_6), concat(g_1..g_6), transpose_a=True),
    #                     matmul(concat(h_0..h_5), ..., transpose_a=True)], 0)
"""

from __future__ import annotations

from gradflow.autodiff import add_all
from gradflow.ops.array_ops import matmul, unbroadcast
from gradflow.ops.index_ops import concat, stack
from gradflow.prim.registry import apply

# Contributions of one kind are stacked from this many on.
MIN_STACK = 3
_FULL = ("slice", None, None, None)


def stack_gradient_sums(grads, stacks):
    """``grads`` (the contributions to one tensor's gradient, in the order they came)
    with the same slices merged, tiling slices joined and row sums of one kind stacked
    (see the module docstring); the caller adds what is returned. ``stacks`` caches
    the concatenations made within one ``gradients`` call, so that the gradients of an
    RNN's kernel and bias share theirs."""
    grads = _join_slice_grads(_merge_same_slice_grads(grads, stacks))
    if len(grads) < MIN_STACK:
        return grads
    groups: dict = {}
    for g in grads:
        key = _stack_key(g)
        groups.setdefault(key if key is not None else ("single", g), []).append(g)
    if len(groups) == len(grads):
        return grads
    summed = []
    for group in groups.values():
        if len(group) >= MIN_STACK:
            summed.append(_stacked(group, stacks))
        else:
            summed.extend(group)
    return summed


def _total(grads, stacks):
    return add_all(stack_gradient_sums(grads, stacks))


def _slice_part(g):
    """``(axis, start, stop, is_index)`` when ``g`` is the gradient of ``x[..., part, ...]``
    that picks one int or one unit-step slice on a single axis of known size, else None."""
    if g.opdef.name != "getitem_grad":
        return None
    x, key = g.inputs[1], g.attrs["key"]
    if x.shape is None or None in key or len(key) != len(x.shape):
        return None
    picked = [(axis, k) for axis, k in enumerate(key) if k != _FULL]
    if len(picked) != 1 or x.shape[picked[0][0]] is None:
        return None
    axis, k = picked[0]
    size = x.shape[axis]
    if isinstance(k, int):
        return axis, k % size, k % size + 1, True
    if k[3] not in (None, 1):
        return None
    start, stop, _ = slice(k[1], k[2]).indices(size)
    return (axis, start, stop, False) if stop > start else None


def _slice_key(g, k):
    """What ``g`` (the ``k``-th contribution) shares with the contributions it merges
    with: its slice of its ``x``, or a key of its own."""
    if g.opdef.name == "getitem_grad":
        try:
            key = (g.inputs[1], g.attrs["key"])
            hash(key)
            return key
        except TypeError:
            pass
    return ("one", k)


def _merge_same_slice_grads(grads, stacks):
    """Contributions ``getitem_grad(g_k, x)`` of the same slice of the same ``x`` as one
    ``getitem_grad(sum of g_k, x)`` (the op is linear in ``g``): an RNN cell that reads
    ``kernel[:k]`` at every step then gets one stacked matmul for that slice, and one
    zero-padded array of the kernel's size instead of one per step."""
    if len(grads) < 2:
        return grads
    groups: dict = {}
    for k, g in enumerate(grads):  # the same tensor may come twice (x + x)
        groups.setdefault(_slice_key(g, k), []).append(g)
    if len(groups) == len(grads):
        return grads
    merged = []
    for (x, key), group in groups.items():
        if len(group) == 1:
            merged.append(group[0])
        else:
            inner = _total([g.inputs[0] for g in group], stacks)
            merged.append(apply("getitem_grad", [inner, x], key=key))
    return merged


def _join_slice_grads(grads):
    """The gradients of slices that together tile ``x`` along one axis (``unstack``,
    ``split``) as one ``stack``/``concat`` of the slice gradients, instead of a sum of
    zero-padded arrays of ``x``'s full size, one per slice."""
    if len(grads) < 2:
        return grads
    parts = [_slice_part(g) for g in grads]
    if None in parts or len({(p[0], p[3]) for p in parts}) != 1 \
            or len({g.inputs[1] for g in grads}) != 1:
        return grads
    axis, is_index = parts[0][0], parts[0][3]
    ordered = sorted(zip(parts, grads), key=lambda pg: pg[0][1])
    edges = [p[1:3] for p, _ in ordered]
    size = grads[0].inputs[1].shape[axis]
    if edges[0][0] != 0 or edges[-1][1] != size \
            or any(a[1] != b[0] for a, b in zip(edges, edges[1:])):
        return grads
    pieces = [g.inputs[0] for _, g in ordered]
    return [stack(pieces, axis) if is_index else concat(pieces, axis)]


def _rank(t, rank):
    return t.shape is not None and len(t.shape) == rank


def _stack_key(g):
    """What must agree for ``g`` to be stacked with other contributions, or None."""
    name, ins = g.opdef.name, g.inputs
    if name == "matmul" and g.attrs["transpose_a"] and not g.attrs["transpose_b"] \
            and _rank(ins[0], 2) and _rank(ins[1], 2) \
            and None not in (ins[0].shape[1], ins[1].shape[1]):
        return (name, ins[0].shape[1], ins[1].shape[1], ins[0].dtype, ins[1].dtype)
    if name == "gather_grad" and g.attrs["axis"] == 0 and _rank(ins[1], 1) \
            and ins[0].shape is not None and len(ins[0].shape) >= 1 \
            and None not in ins[0].shape[1:]:
        return (name, tuple(ins[0].shape[1:]), ins[0].dtype, ins[1].dtype, ins[2],
                g.attrs.get("validate", True))
    if name == "unbroadcast" and ins[0].shape is not None and ins[1].shape is not None \
            and len(ins[0].shape) > len(ins[1].shape) and None not in ins[0].shape[1:]:
        return (name, tuple(ins[0].shape[1:]), ins[0].dtype, ins[1])
    return None


def _stacked(group, stacks):
    """One op over the inputs of ``group`` concatenated along axis 0, in the order the
    graph computes them (contributions arrive last first): an RNN's states then stack
    in time order, as the layer above stacks its outputs, and the two stacks can share
    their rows (``passes/shared_stacks.py``)."""
    group = group[::-1]

    def rows(k):
        parts = tuple(g.inputs[k] for g in group)
        if parts not in stacks:
            stacks[parts] = concat(list(parts), 0)
        return stacks[parts]

    first = group[0]
    if first.opdef.name == "matmul":
        return matmul(rows(0), rows(1), transpose_a=True)
    if first.opdef.name == "gather_grad":
        return apply("gather_grad", [rows(0), rows(1), first.inputs[2]], axis=0,
                     validate=first.attrs.get("validate", True))
    return unbroadcast(rows(0), first.inputs[1])
