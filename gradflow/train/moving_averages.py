"""TF1's ``tf.train.ExponentialMovingAverage``: shadow copies of variables (or tensors)
that follow them with ``shadow -= (1 - decay) * (shadow - value)`` each time the op
returned by ``apply`` runs; evaluation code reads or restores the shadows.
"""

from __future__ import annotations

import numpy as np

from gradflow.graph import Tensor
from gradflow.ops.math_ops import cast, minimum
from gradflow.ops.state_ops import assign_sub, group
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import GraphKeys, Variable


class ExponentialMovingAverage:
    """Moving averages of variables and tensors (TF1 ``tf.train.ExponentialMovingAverage``).

    ``apply(var_list)`` makes one non-trainable shadow variable per item, named
    ``<variable name>/<name>``, and returns the operation that moves each shadow
    toward its item's current value. With ``num_updates`` (a step counter), the
    decay is ``min(decay, (1 + num_updates) / (10 + num_updates))``, so early
    averages are not dominated by the starting value.

    >>> ema = gf.train.ExponentialMovingAverage(0.999, num_updates=global_step)
    >>> with gf.control_dependencies([train_op]):
    ...     train_op = ema.apply(gf.trainable_variables())
    >>> saver = gf.train.Saver(ema.variables_to_restore())  # evaluate with the averages
    """

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if isinstance(decay, (int, float)) and not 0.0 <= decay <= 1.0:
            raise ValueError(f"ExponentialMovingAverage: decay must be in [0, 1], got {decay}")
        if zero_debias:
            raise NotImplementedError("ExponentialMovingAverage: zero_debias=True is not "
                                      "supported")
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages: dict = {}

    @property
    def name(self):
        """The name given to the constructor (``'ExponentialMovingAverage'`` by default)."""
        return self._name

    def apply(self, var_list=None, name=None):
        """Create the shadows of ``var_list`` (default: the trainable variables) where
        they do not exist yet, and return the operation that updates them all."""
        from gradflow.variables import trainable_variables

        items = list(var_list) if var_list is not None else trainable_variables()
        if not items:
            raise ValueError("ExponentialMovingAverage.apply: var_list is empty")
        updates = []
        for item in items:
            item = item if isinstance(item, Variable) else convert_to_tensor(item)
            if not item.dtype.is_floating:
                raise TypeError(f"ExponentialMovingAverage.apply: '{item.name}' is "
                                f"{item.dtype.name}; only float values can be averaged")
            shadow = self._averages.get(item)
            if shadow is None:
                shadow = self._make_shadow(item)
                self._averages[item] = shadow
                if isinstance(item, Variable) and item not in item.graph.get_collection(
                        GraphKeys.MOVING_AVERAGE_VARIABLES):
                    # TF1 lists the averaged variables (not the shadows) there
                    item.graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, item)
            decay = self._decay_tensor(item)
            updates.append(assign_sub(shadow, (shadow - item) * (1.0 - decay)))
        return group(*updates, name=name or self._name)

    def _make_shadow(self, item):
        graph = item.graph
        # a variable's shadow starts at its initial value; a tensor's at zero, as in TF1
        if isinstance(item, Variable):
            initial = item.initialized_value()
        else:
            if item.shape is None or None in item.shape:
                raise ValueError(f"ExponentialMovingAverage.apply: the shape of '{item.name}' "
                                 f"must be fully known to average it, got {item.shape}")
            initial = np.zeros(tuple(item.shape), item.dtype.as_numpy_dtype)
        with graph.name_scope(None), graph.control_dependencies(None):
            shadow = Variable(initial, trainable=False, name=self.average_name(item),
                              shape=None if item.shape is None else tuple(item.shape),
                              collections=[GraphKeys.GLOBAL_VARIABLES])
        return shadow

    def _decay_tensor(self, item):
        decay = self._decay
        if not isinstance(decay, Tensor):
            decay = constant(float(decay), dtype=item.dtype, _graph=item.graph)
        else:
            decay = cast(decay, item.dtype)
        if self._num_updates is not None:
            n = cast(convert_to_tensor(self._num_updates), item.dtype)
            decay = minimum(decay, (1.0 + n) / (10.0 + n))
        return decay

    def average(self, var):
        """The shadow variable of ``var``, or ``None`` if ``apply`` did not make one."""
        return self._averages.get(var)

    def average_name(self, var):
        """The name of ``var``'s shadow: ``<var name>/<this average's name>``."""
        return f"{var.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables=None):
        """``{name: variable}`` for a ``Saver`` that loads each averaged variable (default:
        ``MOVING_AVERAGE_VARIABLES`` and the trainable ones) from its shadow's checkpoint
        entry and every other global variable from its own, so an evaluation graph
        runs with the averaged weights."""
        from gradflow.variables import global_variables, moving_average_variables

        if moving_avg_variables is not None:
            averaged = list(moving_avg_variables)
        else:
            averaged = moving_average_variables()
            averaged += [v for v in global_variables() if v.trainable and v not in averaged]
        mapping = {self.average_name(v): v for v in averaged}
        for v in global_variables():
            if v not in averaged:
                mapping.setdefault(v.name, v)  # a shadow's own name is taken by its variable
        return mapping
