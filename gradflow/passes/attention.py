"""Attention as TF1 programs write it, and its gradient, as one fused pair of plan nodes.

google-research/bert's ``attention_layer`` and GPT-2's ``attn`` build attention from
separate ops, and ``gf.gradients`` builds the gradient of each. In the plan graph
(before the elementwise fusion) that is

    s  = matmul(q, k, transpose_b=True) [* scale]        (the scale a scalar constant)
    s  = s + bias                                        BERT's (1 - mask) * -10000, or
    s  = s * b - 1e10 * (1 - b)                          GPT-2's, b lower-triangular ones
    p  = softmax(s)                                      (over the last axis: the primitive,
                                                          or GPT-2's own exp / sum)
    pd = p / keep * mask                                 (dropout; mask = floor(keep + u))
    o  = matmul(pd, v)

and, for an output gradient ``g`` (the unfused ops' gradient rules)::

    dv = matmul(pd, g, transpose_a=True)     dpd = matmul(g, v, transpose_b=True)
    dp = dpd * mask / keep                   ds  = p * (dp - reduce_sum(dp * p, -1))
                                             (GPT-2's softmax: its ops' own gradients)
    ds = ds * b  (causal)                    dss = ds * scale
    dq = matmul(dss, k)                      dk  = matmul(dss, q, transpose_a=True)

This pass replaces all of it by ``attention_fwd`` (``o`` and what the backward reads)
and ``attention_bwd`` (``dq, dk, dv``), so a backend runs one fused kernel each way
(cuDNN's fused attention on the GPU, ``backends/cupy/attention.py``). Dropout stays
inside the fused pair as its mask input, so the numbers are the unfused graph's (the
same draw, the same ``p / keep * mask``): leaving graphs with active dropout unfused
would leave every BERT training step unfused. The mask is still drawn and kept as a
[b, h, sq, sk] array, as the unfused graph does.

The pattern is fused only whole: every node between the inputs and ``o``, ``dq``, ``dk``,
``dv`` must be read by the pattern alone (the probabilities ``p`` may be read elsewhere
when the forward saves them), none fetched, none with control inputs, all of rank 4 in
one dtype, and either the gradient is found entire or no node reads the forward's
intermediates but the forward (an inference graph). Anything else is left as it is.

What the forward saves depends on the dtype: half-precision inputs save the rows'
log-sum-exp (``aux="stats"``, the statistics cuDNN's backward reads), the others the
probabilities (``aux="probs"``: the CPU backward reads them instead of recomputing).
"""

from __future__ import annotations

import threading

import numpy as np

from gradflow import dtypes
from gradflow.passes.fusion import output_of
from gradflow.passes.ir import PlanNode, rewrite_patterns
from gradflow.prim.attention import ATTENTION_BWD, ATTENTION_FWD, CAUSAL_FILL
from gradflow.prim.plan import FUSED_OUTPUT

HALF = ("float16", "bfloat16")
# the fed tensors of the plan being rewritten (a fed constant's value is the feed's); per
# thread, as plans may compile in several threads at once
_PLAN = threading.local()


def fuse_attention(graph) -> None:
    """Replace each attention pattern of ``graph`` (a PlanGraph) and its gradient by an
    ``attention_fwd``/``attention_bwd`` pair (see the module docstring)."""
    _PLAN.fed = graph.fed
    try:
        rewrite_patterns(graph, lambda n: _op(n, "softmax") or _op(n, "divide"), _forward,
                         _backward, _closed, _rewrite)
    finally:
        _PLAN.fed = ()  # the user's tensors are not kept past the pass (nor their graph)


def _op(node, name, **flags):
    return isinstance(node, PlanNode) and node.opdef.name == name \
        and node.opdef.kind == "compute" and not node.control_inputs \
        and node.shape is not None and len(node.shape) in (0, 1, 2, 3, 4) \
        and all(bool(node.attrs.get(k)) == v for k, v in flags.items())


def _rank4(node):
    return node.shape is not None and len(node.shape) == 4


def _constant(node):
    """The value of a constant node without control inputs, else None."""
    if node in _PLAN.fed or node.opdef.kind != "constant" or node.control_inputs:
        return None
    array = getattr(node.attrs.get("value"), "array", None)
    return array if isinstance(array, np.ndarray) and array.dtype.kind == "f" else None


def _scalar(node):
    value = _constant(node)
    return None if value is None or value.size != 1 else float(value.reshape(()))


def _split(node, name, test):
    """``(a, b)`` for a node ``name(a, b)`` (either order) where ``test(a)``, else None."""
    if not _op(node, name):
        return None
    a, b = node.inputs
    if test(a):
        return a, b
    if name in ("add", "multiply") and test(b):
        return b, a
    return None


def _scaled(node):
    """``(matmul node, scale, scale node or None)`` for ``matmul(q, k^T) [* scale]``."""
    if _op(node, "matmul", transpose_a=False, transpose_b=True) and _rank4(node):
        return node, 1.0, None
    pair = _split(node, "multiply", lambda a: _op(a, "matmul", transpose_a=False,
                                                  transpose_b=True) and _rank4(a))
    if pair is None or _scalar(pair[1]) is None:
        return None
    return pair[0], _scalar(pair[1]), node


def _causal(node):
    """``(scaled logits, b, [nodes])`` for GPT-2's ``w * b - 1e10 * (1 - b)`` with a
    lower-triangular ``b`` of ones (its ``1e10 * (1 - b)`` as ops or folded to a
    constant), else None."""
    if not _op(node, "subtract"):
        return None
    kept, fill = node.inputs
    pair = _split(kept, "multiply", lambda a: _scaled(a) is not None)
    if pair is None or not _lower_triangular(pair[1], node):
        return None
    b = pair[1]
    folded = _constant(fill)
    if folded is not None:
        want = -CAUSAL_FILL * (1 - _constant(b))
        if folded.shape != want.shape or not np.array_equal(folded, want.astype(folded.dtype)):
            return None
        return pair[0], b, [node, kept]
    big = _split(fill, "multiply", lambda a: _scalar(a) == -CAUSAL_FILL)
    if big is None or not _op(big[1], "subtract") or _scalar(big[1].inputs[0]) != 1.0 \
            or big[1].inputs[1] is not b:
        return None
    return pair[0], b, [node, kept, fill, big[1]]


def _lower_triangular(b, logits):
    value = _constant(b)
    if value is None or value.ndim < 2 or any(d != 1 for d in value.shape[:-2]):
        return False
    sq, sk = value.shape[-2:]
    if logits.shape[-2] != sq or logits.shape[-1] != sk:
        return False
    want = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
    return bool(np.array_equal(value.reshape(sq, sk), want.astype(value.dtype)))


def _last_axis(node, name):
    return _op(node, name) and bool(node.attrs.get("keepdims")) \
        and tuple(node.attrs.get("axes", ())) in ((3,), (-1,))


def _softmax(p):
    """``(logits, [nodes between])`` where ``p`` is ``softmax(logits)`` over the last axis:
    the primitive, or GPT-2's own ``exp(x - reduce_max(x)) / reduce_sum(exp(...))``."""
    if not _rank4(p):
        return None
    if _op(p, "softmax"):
        return (p.inputs[0], []) if p.attrs.get("axis") in (3, -1) else None
    ex, total = p.inputs
    if not (_op(ex, "exp") and _last_axis(total, "reduce_sum") and total.inputs[0] is ex
            and _op(ex.inputs[0], "subtract")):
        return None
    shifted = ex.inputs[0]
    x, top = shifted.inputs
    if not (_last_axis(top, "reduce_max") and top.inputs[0] is x):
        return None
    return x, [ex, total, shifted, top]


def _forward(p, readers):
    """The forward pattern ending in the softmax ``p`` as a dict, else None."""
    site = _softmax(p)
    if site is None:
        return None
    x, bias, causal, inner = site[0], None, None, list(site[1])
    hand = list(inner)
    if _causal(x) is not None:
        x, causal, inner = _causal(x)
        inner += hand
    else:
        pair = _split(x, "add", lambda a: _scaled(a) is not None)
        if pair is not None and not _rank4(pair[1]) and pair[1].shape is not None:
            pair = None  # a bias of another rank than 4: left to the unfused ops
        if pair is not None:
            inner, (x, bias) = [x] + hand, pair
    scaled = _scaled(x)
    if scaled is None:
        return None
    mm, scale, scale_node = scaled
    found = {"p": p, "hand": hand, "mm": mm, "scale": scale, "scaled": scale_node is not None,
             "bias": bias, "causal": causal,
             "q": mm.inputs[0], "k": mm.inputs[1], "keep": None, "mask": None,
             "inner": inner + [mm] + ([scale_node] if scale_node is not None else [])}
    pd = _dropout(p, readers, found)
    outs = [r for r in readers.get(pd, []) if _op(r, "matmul", transpose_a=False,
                                                   transpose_b=False) and r.inputs[0] is pd]
    if len(outs) != 1 or not _rank4(outs[0]):
        return None
    found.update(pd=pd, o=outs[0], v=outs[0].inputs[1])
    values = [found[n] for n in ("q", "k", "v", "o", "p", "mm")]
    if len({v.dtype for v in values}) != 1 or not all(_rank4(v) for v in values):
        return None
    return found


def _dropout(p, readers, found):
    """The dropped-out probabilities ``p / keep * mask`` read from ``p`` (recorded in
    ``found``), or ``p`` itself where no such dropout reads it."""
    for div in readers.get(p, []):
        if not _op(div, "divide") or div.inputs[0] is not p or _scalar(div.inputs[1]) is None:
            continue
        for mul in readers.get(div, []):
            pair = _split(mul, "multiply", lambda a: a is div)
            if pair is not None and pair[1].shape is not None \
                    and tuple(pair[1].shape) == tuple(p.shape) and pair[1].dtype == p.dtype:
                found.update(keep=_scalar(div.inputs[1]), mask=pair[1])
                found["inner"] += [div]
                return mul
    return p


def _backward(f, readers):
    """The gradient ops of the pattern ``f`` as a dict, or None where not all are found."""
    for dpd in readers.get(f["v"], []):
        if not _op(dpd, "matmul", transpose_a=False, transpose_b=True) \
                or dpd.inputs[1] is not f["v"] or not _rank4(dpd):
            continue
        g = dpd.inputs[0]
        dvs = [r for r in readers.get(f["pd"], []) if _op(r, "matmul", transpose_a=True,
                                                          transpose_b=False)
               and r.inputs[1] is g]
        found = _softmax_grad(f, readers, dpd) if dvs else None
        if found is not None:
            found.update(g=g, dv=dvs[0])
            return found
    return None


def _dropout_grad(f, readers, dpd):
    """``(dp, [nodes])``: the gradient through the dropout (``dpd * mask / keep``)."""
    if f["mask"] is None:
        return dpd, []
    for mul in readers.get(dpd, []):
        if _split(mul, "multiply", lambda a: a is dpd) not in ((dpd, f["mask"]),):
            continue
        for div in readers.get(mul, []):
            if _op(div, "divide") and div.inputs[0] is mul \
                    and _scalar(div.inputs[1]) == f["keep"]:
                return div, [mul]
    return None, None


def _softmax_grad(f, readers, dpd):
    """The ops from ``dpd`` to ``dq`` and ``dk`` as a dict, else None."""
    p = f["p"]
    dp, inner = _dropout_grad(f, readers, dpd)
    if dp is None:
        return None
    if f["hand"]:
        found = _hand_softmax_grad(f, readers, dp)
        tail = None if found is None else _to_products(f, readers, found[0])
        if tail is not None:
            tail["inner"] = [dpd] + inner + ([dp] if dp is not dpd else []) + found[1] \
                + tail["inner"]
        return tail
    prods = [r for r in readers.get(dp, []) if _split(r, "multiply", lambda a: a is dp)
             in ((dp, p),)]
    for prod in prods:
        for rs in readers.get(prod, []):
            if not _op(rs, "reduce_sum") or not rs.attrs.get("keepdims") \
                    or tuple(rs.attrs.get("axes", ())) not in ((3,), (-1,)):
                continue
            for sub in readers.get(rs, []):
                if not _op(sub, "subtract") or sub.inputs != (dp, rs):
                    continue
                for ds in readers.get(sub, []):
                    if _split(ds, "multiply", lambda a: a is p) in ((p, sub),):
                        tail = _to_products(f, readers, ds)
                        if tail is not None:
                            tail["inner"] = [dpd] + inner + ([dp] if dp is not dpd else []) \
                                + [prod, rs, sub, ds] + tail["inner"]
                            return tail
    return None


def _reader(readers, node, name, other=None, first=None):
    """The one reader of ``node`` that is ``name(node, other)`` (``other`` None: any;
    multiply and add in either order; ``first``: ``node`` must come first), else None."""
    found = [r for r in readers.get(node, []) if _op(r, name) and node in r.inputs
             and (other is None or other in r.inputs)
             and (not first or r.inputs[0] is node)]
    return found[0] if len(found) == 1 else None


def _hand_softmax_grad(f, readers, dp):
    """``(ds, [nodes])``: the gradient ops of GPT-2's own softmax (``_softmax``) from the
    probabilities' gradient ``dp`` to the logits' (the divide's two branches, exp's,
    and reduce_max's through its ``equal`` mask), else None."""
    p = f["p"]
    ex, total, _, top = f["hand"]
    logits = top.inputs[0]
    a = _reader(readers, dp, "divide", total, first=True)
    neg = _reader(readers, dp, "negative")
    m2 = neg and _reader(readers, neg, "multiply", p)
    d1 = m2 and _reader(readers, m2, "divide", total, first=True)
    u = d1 and _reader(readers, d1, "unbroadcast", total, first=True)
    bl = u and _reader(readers, u, "broadcast_like", ex, first=True)
    add1 = a and bl and _reader(readers, a, "add", bl)
    dx = add1 and _reader(readers, add1, "multiply", ex)
    eq = _reader(readers, top, "equal", logits)
    cast = eq and _reader(readers, eq, "cast")
    nneg = dx and _reader(readers, dx, "negative")
    u1 = nneg and _reader(readers, nneg, "unbroadcast", top, first=True)
    count = cast and _reader(readers, cast, "reduce_sum")
    d2 = u1 and count and _reader(readers, u1, "divide", count, first=True)
    m4 = d2 and _reader(readers, d2, "multiply", cast)
    ds = m4 and _reader(readers, dx, "add", m4)
    nodes = [a, neg, m2, d1, u, bl, add1, dx, eq, cast, nneg, u1, count, d2, m4]
    if not ds or not all(nodes) or not _last_axis(count, "reduce_sum"):
        return None
    return ds, nodes


def _to_products(f, readers, ds):
    """``dq``, ``dk`` (and the nodes between) from the logits' gradient ``ds``."""
    inner = []
    if f["causal"] is not None:
        b = f["causal"]  # the lower-triangular constant of ones
        masked = [r for r in readers.get(ds, [])
                  if _split(r, "multiply", lambda a: a is ds) in ((ds, b),)]
        if len(masked) != 1:
            return None
        inner.append(ds)
        ds = masked[0]
    if f["scaled"]:
        scaled = [r for r in readers.get(ds, []) if _scale_of(r, ds) == f["scale"]]
        if len(scaled) != 1:
            return None
        inner.append(ds)
        ds = scaled[0]
    dq = [r for r in readers.get(ds, []) if _op(r, "matmul", transpose_a=False,
                                                 transpose_b=False)
          and r.inputs == (ds, f["k"])]
    dk = [r for r in readers.get(ds, []) if _op(r, "matmul", transpose_a=True,
                                                 transpose_b=False)
          and r.inputs == (ds, f["q"])]
    if len(dq) != 1 or len(dk) != 1:
        return None
    return {"dq": dq[0], "dk": dk[0], "inner": inner + [ds]}


def _scale_of(node, ds):
    pair = _split(node, "multiply", lambda a: a is ds)
    return None if pair is None else _scalar(pair[1])


def _aux(found):
    return "stats" if found["q"].dtype.name in HALF else "probs"


def _closed(f, readers, fetched):
    """Whether every node the pair replaces is read by the pattern alone (and not fetched)."""
    grad = f["grad"]
    inner = set(f["inner"]) | {f["pd"]}
    ends = {f["o"]}
    if grad is not None:
        inner |= set(grad["inner"])
        ends |= {grad["dq"], grad["dk"], grad["dv"]}
    free = {f["p"]} if _aux(f) == "probs" else set()  # its value is the forward's aux
    inner.add(f["p"])
    allowed = inner | ends | set(_draws_like(f["p"], readers))
    return all(n not in fetched and (n in free or all(r in allowed for r in readers.get(n, [])))
               for n in inner)


def _draws_like(p, readers):
    """The draws of ``p``'s shape (dropout's ``random_uniform(shape(p))``) whose static
    shape is known: the rewrite makes them draws of that shape, reading nothing (read
    from the fused forward, they would wait for it while it waits for their mask)."""
    return [r for r in readers.get(p, []) if r.opdef.kind == "random"
            and isinstance(r, PlanNode) and r.inputs == (p,) and not r.control_inputs
            and r.shape is not None and r.shape.is_fully_defined()]


def _rewrite(f, mapping, made, readers):
    aux = _aux(f)
    attrs = {"scale": f["scale"], "causal": f["causal"] is not None,
             "bias": f["bias"] is not None, "keep": f["keep"], "aux": aux}
    extra = [x for x in (f["bias"], f["mask"]) if x is not None]
    o, p = f["o"], f["p"]
    for draw in _draws_like(p, readers):  # same user node, so the same generator
        mapping[draw] = PlanNode.standing_for(
            draw, draw.opdef, [], dict(draw.attrs, shape=tuple(draw.shape)))
        made.append(mapping[draw])
    fwd = PlanNode.standing_for(o, ATTENTION_FWD, [f["q"], f["k"], f["v"]] + extra, attrs,
                                name=o.name + "/attention")
    out = output_of(fwd, 0, o)
    if aux == "probs":
        saved = output_of(fwd, 1, p)
        mapping[p] = saved
    else:
        shape = tuple(p.shape)[:3] + (1,)
        saved = PlanNode.standing_for(p, FUSED_OUTPUT, [fwd], {"index": 1, "shape": shape,
                                                               "dtype": dtypes.float32},
                                      shape=shape, dtype=dtypes.float32,
                                      name=p.name + "/stats")
    mapping[o] = out
    made += [fwd, out, saved]
    grad = f["grad"]
    if grad is None:
        return
    dq = grad["dq"]
    bwd = PlanNode.standing_for(dq, ATTENTION_BWD, [grad["g"], f["q"], f["k"], f["v"], out,
                                                    saved] + extra, attrs,
                                name=dq.name + "/attention_grad")
    made.append(bwd)
    for index, old in enumerate((dq, grad["dk"], grad["dv"])):
        mapping[old] = output_of(bwd, index, old)
        made.append(mapping[old])
