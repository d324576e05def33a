"""Layer normalization as TF1 programs write it, and its gradient, as one fused pair.

``tf.contrib.layers.layer_norm`` (google-research/bert) and GPT-2's ``norm`` build layer
norm over the last axis from separate ops; in the plan graph (after the algebraic
rewrites, before the elementwise fusion) both start with ::

    mean = reduce_sum(x, -1, keepdims) / n          d = x - mean
    var  = reduce_sum(square(d), -1, keepdims) / n  r = 1 / sqrt(var + eps)

and end in contrib's ``batch_normalization`` arithmetic (``k = r * gamma``,
``y = x * k + (beta - mean * k)``) or GPT-2's ``y = d * r * gamma + beta``. The gradient
ops ``gf.gradients`` builds for them are found from ``dbeta = unbroadcast(dy, beta)``
through each op's gradient rule; the contributions to ``x``'s gradient meet in a chain
of ``add`` nodes, which may hold contributions from ``x``'s other readers (GPT-2's
residual): those stay, added to the fused ``dx``.

The pass replaces it all by ``layer_norm_fwd`` (``y``, ``mean``, ``rstd``) and
``layer_norm_bwd`` (``dx``, ``dgamma``, ``dbeta``): ``prim/layer_norm.py``. As for
attention, the pattern is fused only whole (every node it replaces read by the pattern
alone, none fetched, none with control inputs) and either with its entire gradient or,
in an inference graph, without one; anything else is left as it is.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.passes.attention import _op, _scalar
from gradflow.passes.fusion import output_of
from gradflow.passes.ir import PlanNode, pair_is_closed, rewrite_patterns
from gradflow.prim.layer_norm import LAYER_NORM_BWD, LAYER_NORM_FWD
from gradflow.prim.plan import FUSED_OUTPUT
from gradflow.prim.registry import REGISTRY


def fuse_layer_norm(graph) -> None:
    """Replace each layer-norm pattern of ``graph`` (a PlanGraph) and its gradient by a
    ``layer_norm_fwd``/``layer_norm_bwd`` pair (see the module docstring)."""
    rewrite_patterns(graph, _last_axis_sum, _forward, _backward, _closed,
                     lambda found, mapping, made, _: _rewrite(found, mapping, made))


def _last_axis_sum(node):
    return _op(node, "reduce_sum") and bool(node.attrs.get("keepdims")) \
        and len(node.shape) >= 1 \
        and tuple(node.attrs.get("axes") or ()) in ((len(node.shape) - 1,), (-1,))


def _reader(readers, node, name, other=None):
    """The one reader of ``node`` that is ``name(node, other)`` (either order; ``other``
    None: any second input, or none), else None."""
    if node is None:
        return None
    found = [r for r in readers.get(node, []) if _op(r, name) and node in r.inputs
             and (other is None or other in r.inputs)]
    return found[0] if len(found) == 1 else None


def _find(readers, node, name, test):
    """The one binary reader ``name(node, other)`` (either order) where ``test(other)``."""
    found = [r for r in readers.get(node, []) if _op(r, name) and len(r.inputs) == 2
             and node in r.inputs and test(_other(r, node))]
    return found[0] if len(found) == 1 else None


def _vector(n):
    return lambda v: v.shape is not None and tuple(v.shape) == (n,)


def _other(node, one):
    a, b = node.inputs
    return b if a is one else a


def _divided_by(readers, node, n):
    """The reader ``node / n`` (``n`` a scalar constant), else None."""
    found = [r for r in readers.get(node, []) if _op(r, "divide") and r.inputs[0] is node
             and _scalar(r.inputs[1]) == float(n)]
    return found[0] if len(found) == 1 else None


def _params(node, one, n):
    """The other input of ``node`` (a multiply or add with ``one``) if it is a [n] vector."""
    other = _other(node, one)
    return other if other.shape is not None and tuple(other.shape) == (n,) else None


def _forward(rs1, readers):
    """The forward pattern whose first sum is ``rs1`` as a dict, else None."""
    x = rs1.inputs[0]
    n = None if x.shape is None or len(x.shape) == 0 else x.shape[-1]
    if n is None or x.dtype is None or x.dtype.name not in ("float16", "float32", "float64"):
        return None
    mean = _divided_by(readers, rs1, n)
    d = [r for r in readers.get(mean, []) if _op(r, "subtract") and r.inputs == (x, mean)] \
        if mean is not None else []
    sq = _reader(readers, d[0], "square") if len(d) == 1 else None
    rs2 = sq and _reader(readers, sq, "reduce_sum")
    var = rs2 and _last_axis_sum(rs2) and _divided_by(readers, rs2, n)
    ve = var and _reader(readers, var, "add")
    eps = ve and _scalar(_other(ve, var))
    s = eps is not None and ve and _reader(readers, ve, "sqrt")
    r = s and _find(readers, s, "divide", lambda c: _scalar(c) == 1.0)
    if not r or r.inputs[1] is not s:
        return None
    found = {"x": x, "n": n, "eps": eps, "mean": mean, "d": d[0], "sq": sq, "var": var,
             "s": s, "r": r, "inner": [rs1, mean, d[0], sq, rs2, var, ve, s, r]}
    return _affine(found, readers) or _centered(found, readers)


def _affine(f, readers):
    """contrib's ``k = r * gamma; y = x * k + (beta - mean * k)``, recorded in ``f``."""
    x, r, mean, n = f["x"], f["r"], f["mean"], f["n"]
    k = _find(readers, r, "multiply", _vector(n))
    gamma = k and _params(k, r, n)
    xk = gamma is not None and _reader(readers, k, "multiply", x)
    mk = xk and _reader(readers, k, "multiply", mean)
    bm = mk and _find(readers, mk, "subtract", _vector(n))
    beta = bm and bm.inputs[1] is mk and _params(bm, mk, n)
    y = beta is not None and _reader(readers, xk, "add", bm)
    if not y:
        return None
    f.update(form="affine", gamma=gamma, beta=beta, y=y, k=k)
    f["inner"] += [k, xk, mk, bm]
    return f


def _centered(f, readers):
    """GPT-2's ``y = d * r * gamma + beta``, recorded in ``f``."""
    d, r, n = f["d"], f["r"], f["n"]
    xh = _reader(readers, d, "multiply", r)
    yg = xh and _find(readers, xh, "multiply", _vector(n))
    gamma = yg and _params(yg, xh, n)
    y = gamma is not None and _find(readers, yg, "add", _vector(n))
    beta = y and _params(y, yg, n)
    if beta is None or not y:
        return None
    f.update(form="centered", gamma=gamma, beta=beta, y=y, xh=xh)
    f["inner"] += [xh, yg]
    return f


def _backward(f, readers):
    """The gradient ops of the pattern ``f`` as a dict, or None where not all are found."""
    beta = f["beta"]
    for dbeta in readers.get(beta, []):
        if _op(dbeta, "unbroadcast") and dbeta.inputs[1] is beta and dbeta.inputs[0] in \
                readers and f["y"].shape == dbeta.inputs[0].shape:
            found = (_affine_grad if f["form"] == "affine" else _centered_grad)(
                f, readers, dbeta.inputs[0])
            if found is not None:
                found.update(dy=dbeta.inputs[0], dbeta=dbeta)
                return found
    return None


def _affine_grad(f, readers, dy):
    x, k, mean, gamma, r = f["x"], f["k"], f["mean"], f["gamma"], f["r"]
    direct = _reader(readers, dy, "multiply", k)
    m4 = _reader(readers, dy, "multiply", x)
    neg = _reader(readers, dy, "negative")
    m2 = neg and _reader(readers, neg, "multiply", mean)
    m1 = neg and _reader(readers, neg, "multiply", k)
    ub1 = m1 and _reader(readers, m1, "unbroadcast", mean)
    dk = m2 and m4 and _reader(readers, m2, "add", m4)
    m5 = dk and _reader(readers, dk, "multiply", gamma)
    dr = m5 and _reader(readers, m5, "unbroadcast", r)
    m6 = dk and _reader(readers, dk, "multiply", r)
    dgamma = m6 and _reader(readers, m6, "unbroadcast", gamma)
    nodes = [direct, m4, neg, m2, m1, ub1, dk, m5, dr, m6]
    if not all(nodes) or not dgamma:
        return None
    return _tail(f, readers, dr, [direct], [], [ub1], nodes, dgamma)


def _centered_grad(f, readers, dy):
    gamma, xh, d, r = f["gamma"], f["xh"], f["d"], f["r"]
    dxh = _reader(readers, dy, "multiply", gamma)
    m4 = _reader(readers, dy, "multiply", xh)
    dgamma = m4 and _reader(readers, m4, "unbroadcast", gamma)
    m6 = dxh and _reader(readers, dxh, "multiply", d)
    dr = m6 and _reader(readers, m6, "unbroadcast", r)
    m5 = dxh and _reader(readers, dxh, "multiply", r)
    nodes = [dxh, m4, m6, dr, m5]
    if not all(nodes) or not dgamma:
        return None
    return _tail(f, readers, dr, [], [m5], [], nodes, dgamma)


def _tail(f, readers, dr, to_x, to_d, to_mean, nodes, dgamma):
    """The gradient from ``dr`` (the rstd's) through the variance, and the sums of the
    contributions to ``d``, ``mean`` and ``x``."""
    r, s, d, mean, x, n = f["r"], f["s"], f["d"], f["mean"], f["x"], f["n"]
    neg1 = _reader(readers, dr, "negative")
    m7 = neg1 and _reader(readers, neg1, "multiply", r)
    d1 = m7 and _reader(readers, m7, "divide", s)
    m8 = d1 and _reader(readers, d1, "multiply")
    d2 = m8 and _scalar(_other(m8, d1)) == 0.5 and _reader(readers, m8, "divide", s)
    d3 = d2 and _divided_by(readers, d2, n)
    bl1 = d3 and _reader(readers, d3, "broadcast_like", f["sq"])
    m10 = bl1 and _reader(readers, bl1, "multiply")
    m11 = m10 and _scalar(_other(m10, bl1)) == 2.0 and _reader(readers, m10, "multiply", d)
    if not m11:
        return None
    nodes = nodes + [neg1, m7, d1, m8, d2, d3, bl1, m10]
    for c in [m11] + to_d:  # d = x - mean: each contribution goes to x, its negative to mean
        neg = _reader(readers, c, "negative")
        ub = neg and _reader(readers, neg, "unbroadcast", mean)
        if not ub:
            return None
        nodes += [c, neg]
        to_x, to_mean = to_x + [c], to_mean + [ub]
    dmean = _sum_of(readers, to_mean, allow_others=False)
    d5 = dmean and _divided_by(readers, dmean[0], n)
    bl2 = d5 and _reader(readers, d5, "broadcast_like", x)
    dx = bl2 and _sum_of(readers, to_x + [bl2], allow_others=True)
    if not dx:
        return None
    nodes += to_mean + dmean[1] + [dmean[0], d5] + to_x + [bl2] + dx[1]
    return {"dgamma": dgamma, "dx": dx[0], "others": dx[2], "inner": nodes}


def _sum_of(readers, terms, allow_others):
    """``(root, [sum nodes below it], [other terms])``: the ``add`` chain in which all of
    ``terms`` meet, else None (``_closed`` checks that the partial sums are read by the
    chain alone)."""
    if len(terms) == 1:
        return terms[0], [], []
    paths = []
    for term in terms:
        path, node = [], term
        while True:
            adds = [r for r in readers.get(node, []) if _op(r, "add")]
            if len(adds) != 1:
                break
            node = adds[0]
            path.append(node)
        paths.append(path)
    common = [n for n in paths[0] if all(n in p for p in paths[1:])]
    if not common:
        return None
    root = common[0]
    below = {n for p in paths for n in p[:p.index(root)]}
    others = [i for n in below | {root} for i in n.inputs if i not in below
              and i not in terms]
    if others and not allow_others:
        return None
    return root, sorted(below, key=lambda n: n.index), others


def _closed(f, readers, fetched):
    """Whether every node the pair replaces is read by the pattern alone (and not fetched)."""
    return pair_is_closed(f, readers, fetched, "y", ("dx", "dgamma", "dbeta"))


def _rewrite(f, mapping, made):
    attrs = {"eps": f["eps"], "form": f["form"]}
    x, y, mean, r = f["x"], f["y"], f["mean"], f["r"]
    fwd = PlanNode.standing_for(y, LAYER_NORM_FWD, [x, f["gamma"], f["beta"]], attrs,
                                name=y.name + "/layer_norm")
    stats_dtype = dtypes.float32 if x.dtype.name == "float16" else x.dtype
    outs = [output_of(fwd, 0, y)]
    for index, old in ((1, mean), (2, r)):
        shape = old.shape
        outs.append(PlanNode.standing_for(old, FUSED_OUTPUT, [fwd],
                                          {"index": index, "shape": shape,
                                           "dtype": stats_dtype},
                                          dtype=stats_dtype, name=old.name + "/stats"))
    mapping[y] = outs[0]
    made += [fwd] + outs
    grad = f["grad"]
    if grad is None:
        return
    dx = grad["dx"]
    bwd = PlanNode.standing_for(dx, LAYER_NORM_BWD, [grad["dy"], x, f["gamma"], outs[1],
                                                    outs[2]], {}, name=dx.name + "/layer_norm_grad")
    made.append(bwd)
    total = output_of(bwd, 0, dx)
    made.append(total)
    for other in grad["others"]:  # x's other readers' contributions (GPT-2's residual)
        total = PlanNode.standing_for(dx, REGISTRY["add"], [other, total], {})
        made.append(total)
    mapping[dx] = total
    for index, old in ((1, grad["dgamma"]), (2, grad["dbeta"])):
        mapping[old] = output_of(bwd, index, old)
        made.append(mapping[old])
