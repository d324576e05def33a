"""GELU's tanh form as TF1 programs write it, and its gradient, as two elementwise ops.

GPT-2's ``gelu`` (and ``benchmarks/transformer.py``'s) is
``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * pow(x, 3))))``, google-research/
bert's ``x * (0.5 * (1 + tanh(...)))``; in the plan graph
(after the rewrites turn ``pow(x, 3)`` into ``x * square(x)``, before the elementwise
fusion) it is eight ops, and its gradient a dozen whose contributions to ``x``'s
gradient meet in a chain of ``add`` nodes (with those of ``x``'s other readers). The
fusion already makes each side one kernel, but the forward kernel writes four of its
intermediates for the backward to read (five outputs, and a backward of ten inputs, in
BERT's feed-forward layer). This pass replaces the ops by ``gelu_tanh(x)`` and their
gradient by ``gelu_tanh_grad(dy, x)`` (``prim/gelu.py``, the same arithmetic in the same
order): the fusion then saves only ``x``.

Fused only whole, as the attention and layer-norm passes do: every node replaced read by
the pattern alone, none fetched, none with control inputs; with its entire gradient, or
in a graph that reads none of the forward's intermediates.
"""

from __future__ import annotations

import math

from gradflow.passes.attention import _op, _scalar
from gradflow.passes.ir import PlanNode, pair_is_closed, rewrite_patterns
from gradflow.passes.layer_norm import _find, _other, _sum_of
from gradflow.prim import gelu as _registers  # noqa: F401 (gelu_tanh's records)
from gradflow.prim.registry import REGISTRY

C = math.sqrt(2 / math.pi)
K = 0.044715


def fuse_gelu(graph) -> None:
    """Replace each tanh-form GELU of ``graph`` (a PlanGraph) and its gradient by
    ``gelu_tanh`` and ``gelu_tanh_grad`` (see the module docstring)."""
    rewrite_patterns(graph, lambda n: _op(n, "tanh"), _forward, _backward, _closed,
                     lambda found, mapping, made, _: _rewrite(found, mapping, made))


def _near(value, want):
    return value is not None and abs(value - want) <= 1e-6 * abs(want)


def _is(value):
    return lambda node: _scalar(node) == value


def _forward(t, readers):
    """The forward pattern around the tanh ``t`` as a dict, else None."""
    a2 = t.inputs[0]
    if not _op(a2, "multiply") or not any(_near(_scalar(i), C) for i in a2.inputs):
        return None
    c_node = next(i for i in a2.inputs if _near(_scalar(i), C))
    a1 = _other(a2, c_node)
    if not _op(a1, "add"):
        return None
    for h in a1.inputs:
        m1 = _other(a1, h)
        if _op(m1, "multiply") and any(_near(_scalar(i), K) for i in m1.inputs):
            k_node = next(i for i in m1.inputs if _near(_scalar(i), K))
            found = _rest(readers, t, h, m1, _other(m1, k_node), [a2, a1, m1])
            if found is not None:
                found.update(c=_scalar(c_node), k=_scalar(k_node))
                return found
    return None


def _rest(readers, t, h, m1, p3, inner):
    """The cube ``p3 = h * square(h)`` and the ops after the tanh, else None."""
    if not _op(p3, "multiply") or h not in p3.inputs:
        return None
    sq = _other(p3, h)
    if not (_op(sq, "square") and sq.inputs[0] is h):
        return None
    a3 = _find(readers, t, "add", _is(1.0))
    if not a3 or h.dtype is None or h.dtype.name not in ("float16", "float32", "float64"):
        return None
    half = _find(readers, h, "multiply", _is(0.5))  # GPT-2's (0.5 * x) * (1 + t)
    y = half and _find(readers, a3, "multiply", lambda o: o is half)
    form, scaled = "gpt2", half
    if not y:  # BERT's x * (0.5 * (1 + t))
        scaled = _find(readers, a3, "multiply", _is(0.5))
        y = scaled and _find(readers, scaled, "multiply", lambda o: o is h)
        form = "bert"
    if not y or len({n.dtype for n in (h, t, y)}) != 1 or not _same_shape(h, y):
        return None
    return {"h": h, "t": t, "y": y, "scaled": scaled, "a3": a3, "form": form,
            "inner": inner + [sq, p3, t, a3, scaled]}


def _same_shape(h, y):
    """Whether ``h`` (a fed placeholder may keep its unknown dimensions) has ``y``'s shape:
    ``gelu_tanh`` does not broadcast."""
    if h.shape is None or len(h.shape) != len(y.shape):
        return False
    return all(a is None or a == b for a, b in zip(h.shape.as_list(), y.shape.as_list()))


def _backward(f, readers):
    """The gradient ops of the pattern ``f`` as a dict, or None where not all are found."""
    scaled, a3, t, h, y = f["scaled"], f["a3"], f["t"], f["h"], f["y"]
    if f["form"] == "gpt2":  # dy * half, then dy * (1 + t) * 0.5
        m2s = [r for r in readers.get(scaled, []) if r is not y and _op(r, "multiply")]
        dy = _other(m2s[0], scaled) if len(m2s) == 1 else None
        m2 = m2s[0] if len(m2s) == 1 else None
        m1 = dy is not None and _find(readers, dy, "multiply", lambda o: o is a3)
        direct = m1 and _find(readers, m1, "multiply", _is(0.5))
        to_tanh, nodes = m2, [m2, m1]
    else:  # dy * cdf, then dy * x * 0.5
        m1s = [r for r in readers.get(scaled, []) if r is not y and _op(r, "multiply")]
        direct = m1s[0] if len(m1s) == 1 else None
        dy = _other(direct, scaled) if direct else None
        m2 = dy is not None and _find(readers, dy, "multiply", lambda o: o is h)
        to_tanh = m2 and _find(readers, m2, "multiply", _is(0.5))
        nodes = [m2]
    if not direct or not to_tanh:
        return None
    sq = _square_of(readers, t)
    sub = sq and _find(readers, sq, "subtract", _is(1.0))
    m3 = sub and sub.inputs[1] is sq and _find(readers, to_tanh, "multiply",
                                               lambda o: o is sub)
    m5 = m3 and _find(readers, m3, "multiply", lambda o: _near(_scalar(o), C))
    m7 = m5 and _find(readers, m5, "multiply", lambda o: _near(_scalar(o), K))
    m8 = m7 and _find(readers, m7, "multiply", _is(3.0))
    m9 = m8 and _find(readers, m8, "multiply",
                      lambda o: _op(o, "square") and o.inputs[0] is h)
    dx = m9 and _sum_of(readers, [m5, m9, direct], allow_others=True)
    if not dx:
        return None
    hsq = _other(m9, m8)
    nodes += [direct, to_tanh, sq, sub, m3, m5, m7, m8, m9] + dx[1]
    nodes += [hsq] if hsq not in f["inner"] else []
    return {"dy": dy, "dx": dx[0], "others": dx[2], "inner": list(dict.fromkeys(nodes))}


def _square_of(readers, t):
    found = [r for r in readers.get(t, []) if _op(r, "square")]
    return found[0] if len(found) == 1 else None


def _closed(f, readers, fetched):
    """Whether every node the pair replaces is read by the pattern alone (and not fetched)."""
    return pair_is_closed(f, readers, fetched, "y", ("dx",))


def _rewrite(f, mapping, made):
    attrs = {"c": f["c"], "k": f["k"], "form": f["form"]}
    y, h = f["y"], f["h"]
    mapping[y] = PlanNode.standing_for(y, REGISTRY["gelu_tanh"], [h], attrs,
                                       name=y.name + "/gelu")
    made.append(mapping[y])
    grad = f["grad"]
    if grad is None:
        return
    dx = grad["dx"]
    total = PlanNode.standing_for(dx, REGISTRY["gelu_tanh_grad"], [grad["dy"], h], attrs,
                                  name=dx.name + "/gelu_grad")
    made.append(total)
    for other in grad["others"]:  # x's other readers' contributions
        total = PlanNode.standing_for(dx, REGISTRY["add"], [other, total], {})
        made.append(total)
    mapping[dx] = total
