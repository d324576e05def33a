"""The inference graph of an export: the nodes between the inputs and the outputs,
with everything that does not depend on the inputs folded to values.

Folding uses the session: variables give their current values, and a
``placeholder_with_default`` that is not an input gives its default (so a
``training`` switch defaulting to False is off). Then the training-only parts
fall away: a ``cond`` whose predicate folds keeps only its taken branch, a
dropout mask ``floor(keep + uniform)`` with ``keep`` folded to 1 is exactly 1,
and ``x * 1`` and ``x / 1`` are ``x``. A random value that is still needed, or
a placeholder that is neither an input nor has a default, is an error.
"""

from __future__ import annotations

import numpy as np

from gradflow.onnx._builder import fail

_PASS_THROUGH = ("identity", "stop_gradient", "ensure_shape")
_DYNAMIC, _STATIC, _RANDOM, _ONES = "dynamic", "static", "random", "ones"


class InferenceGraph:
    """Classifies every node that ``outputs`` need, from ``inputs``, in one walk.

    ``order`` lists the nodes to convert (inputs first, outputs last);
    ``source(node)`` is the node a consumer really reads (after pass-throughs,
    taken branches and ``x * 1``); ``value(node)`` the folded value of a static one.
    """

    def __init__(self, sess, inputs, outputs):
        self.sess = sess
        self.inputs = list(inputs)
        self.kind: dict = {n: _DYNAMIC for n in self.inputs}
        self.alias: dict = {}
        self._values: dict = {}
        self._busy: set = set()  # nodes being folded now
        self._folded_conds: dict = {}  # cond result (tuple_get) -> its taken branch's output
        self.order: list = list(self.inputs)
        for out in outputs:
            self._walk(out)
        self._check_leftovers(outputs)

    def source(self, node):
        while node in self.alias:
            node = self.alias[node]
        return node

    def value(self, node) -> np.ndarray:
        """The folded value of a static node (run in the session, cached)."""
        node = self.source(node)
        if node not in self._values:
            self.prefetch([node])
        return self._values[node]

    def prefetch(self, nodes) -> None:
        """Fold many static nodes in one session run. A folded cond's result is fed
        the value of its taken branch: the cond node itself would want its other
        branch's inputs too."""
        todo = list(dict.fromkeys(n for n in map(self.source, nodes) if n not in self._values))
        if not todo:
            return
        self._busy.update(todo)
        try:
            feeds = self._cond_feeds()
            for node, val in zip(todo, self.sess.run(todo, feed_dict=feeds)):
                self._values[node] = np.asarray(val)
        finally:
            self._busy.difference_update(todo)

    def _cond_feeds(self) -> dict:
        """The values of the folded conds' taken branches (those computed now excepted)."""
        feeds = {}
        for picker, taken in list(self._folded_conds.items()):
            taken = self.source(taken)
            if self.kind.get(taken) != _STATIC or taken in self._busy:
                continue
            feeds[picker] = self.value(taken)
        return feeds

    def is_static(self, node) -> bool:
        return self.kind[self.source(node)] in (_STATIC, _ONES)

    # -- the walk ------------------------------------------------------------------

    def _walk(self, root) -> None:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in self.kind:
                continue
            target = self._pass_to(node)
            if target is not None:
                self.alias[node] = target
                if target in self.kind:
                    self.kind[node] = self.kind[self.source(target)]
                else:
                    stack += [(node, False), (target, False)]
                continue
            deps = [i for i in node.inputs if i not in self.kind]
            if not expanded and deps and not self._is_leaf(node):
                stack.append((node, True))
                stack += [(d, False) for d in reversed(deps)]
                continue
            self._classify(node)

    def _pass_to(self, node):
        """The node that stands for ``node`` (a pass-through's input, a folded cond's
        taken branch), or None; folding a cond's predicate walks it first."""
        if node.type in _PASS_THROUGH:
            return node.inputs[0]
        if node.type != "tuple_get" or node.inputs[0].type != "cond":
            return None
        cond = node.inputs[0]
        info = cond.attrs["info"]
        if node.attrs["index"] >= info.n_slots:
            raise fail(node, "reads a variable a cond branch assigns; assignments are "
                             "training-only and cannot be exported")
        pred = cond.inputs[0]
        self._walk(pred)
        if not self.is_static(pred):
            raise fail(cond, f"has a predicate ('{pred.name}') that depends on the inputs; "
                             "ONNX export keeps only a branch chosen at export time (feed "
                             "the switch its default, or leave it out of the inputs)")
        branch = info.branches[0 if bool(self.value(pred)) else 1]
        self._folded_conds[node] = branch.outputs[node.attrs["index"]]
        return self._folded_conds[node]

    def _is_leaf(self, node) -> bool:
        return node.opdef.kind in ("placeholder", "variable", "constant") or \
            node.type == "placeholder_with_default"

    def _classify(self, node) -> None:
        kind = node.opdef.kind
        if node.type == "placeholder_with_default" or kind in ("variable", "constant"):
            self.kind[node] = _STATIC
            return
        if kind == "placeholder":
            raise fail(node, "is needed by the outputs but is not among the inputs (and has "
                             "no default); add it to the inputs")
        if kind == "random":
            self.kind[node] = _RANDOM
            return
        if self._is_dropout_mask(node):
            self.kind[node] = _ONES
            self._values[node] = np.ones((), node.dtype.as_numpy_dtype)
            return
        kinds = [self.kind[self.source(i)] for i in node.inputs]
        if _RANDOM in kinds:  # an error unless a dropout mask of ones takes it in
            self.kind[node] = _RANDOM
            return
        if _DYNAMIC not in kinds:
            self.kind[node] = _STATIC
            return
        eliminated = self._unit_factor(node)
        if eliminated is not None:
            self.alias[node] = eliminated
            self.kind[node] = _DYNAMIC
            return
        self.kind[node] = _DYNAMIC
        self.order.append(node)

    def _is_dropout_mask(self, node) -> bool:
        """``floor(keep + uniform[0, 1))`` with ``keep`` folded to 1: a mask of ones."""
        if node.type != "floor":
            return False
        total = self.source(node.inputs[0])
        if total.type != "add":
            return False
        parts = [self.source(i) for i in total.inputs]
        for keep, noise in (parts, parts[::-1]):
            if noise.opdef.kind == "random" and noise.attrs.get("dist") == "random_uniform" \
                    and noise.attrs.get("minval") == 0.0 and noise.attrs.get("maxval") == 1.0 \
                    and self.kind[keep] == _STATIC and np.all(self.value(keep) == 1):
                return True
        return False

    def _unit_factor(self, node):
        """The operand ``x`` when ``node`` is ``x * 1``, ``1 * x`` or ``x / 1`` and has the
        shape of ``x`` (so dropping the factor changes nothing), else None."""
        if node.type == "multiply":
            pairs = [(node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])]
        elif node.type == "divide":
            pairs = [(node.inputs[0], node.inputs[1])]
        else:
            return None
        for x, one in pairs:
            x, one = self.source(x), self.source(one)
            if self.kind[x] == _DYNAMIC and self.kind[one] in (_STATIC, _ONES) \
                    and x.dtype is node.dtype and _same_shape(x.shape, node.shape) \
                    and np.all(self.value(one) == 1):
                return x
        return None

    def _check_leftovers(self, outputs) -> None:
        """A random value still needed, a dropout mask that ``x * 1`` did not absorb (it
        would change the output's shape), or an output that is a constant, is an error."""
        outputs = [self.source(o) for o in outputs]
        for node in self.order + outputs:
            for i in ([node] if node in outputs else node.inputs):
                kind = self.kind[self.source(i)]
                if kind == _RANDOM:
                    raise fail(node, f"uses the random value '{i.name}'; random ops are "
                                     "training-only (a dropout whose rate is not 0 when the "
                                     "training switch takes its default?) and an exported "
                                     "model must be deterministic")
                if kind == _ONES and node not in outputs:
                    raise fail(node, "multiplies by a dropout mask that could not be "
                                     "removed (a noise_shape that broadcasts the input?)")
        for out in outputs:
            if self.kind[out] != _DYNAMIC:
                raise fail(out, f"is an output but does not depend on the inputs "
                                f"{[t.name for t in self.inputs]}: it would be a constant")


def _same_shape(a, b) -> bool:
    return a is not None and b is not None and tuple(a) == tuple(b)
