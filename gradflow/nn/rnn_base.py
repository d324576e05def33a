"""The base of the recurrent cells: ``RNNCell`` (variables made on the first call, in the
cell's own scope, and reused after), ``LSTMStateTuple`` and the checks of a (nested)
state. The cells are in ``gradflow.nn.rnn_cell``, the unrolling functions in
``gradflow.nn.rnn``.
"""

from __future__ import annotations

import inspect
import re
from collections import namedtuple

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape, get_default_graph
from gradflow.ops.rnn_ops import batch_zeros
from gradflow.prim.registry import convert_to_tensor
from gradflow.variables import get_variable, get_variable_scope, variable_scope


class LSTMStateTuple(namedtuple("LSTMStateTuple", ("c", "h"))):
    """The state of an LSTM cell: the cell state ``c`` and the output ``h``."""

    __slots__ = ()

    @property
    def dtype(self):
        """The dtype of ``c`` and ``h`` (they must agree)."""
        if self.c.dtype is not self.h.dtype:
            raise TypeError(f"LSTMStateTuple: c is {self.c.dtype.name}, h is {self.h.dtype.name}")
        return self.c.dtype


def _flat(structure):
    if isinstance(structure, (tuple, list)):
        return [leaf for part in structure for leaf in _flat(part)]
    return [structure]


def _zeros(size, batch_size, dtype):
    if isinstance(size, (tuple, list)):
        parts = [_zeros(s, batch_size, dtype) for s in size]
        return LSTMStateTuple(*parts) if isinstance(size, LSTMStateTuple) else tuple(parts)
    return batch_zeros(batch_size, (size,), dtype)


class RNNCell:
    """Base class of the cells: ``cell(inputs, state) -> (output, new_state)``.

    Subclasses give ``state_size`` and ``output_size`` and implement
    ``build(input_size, dtype)`` (create the variables with ``get_variable``)
    and ``call(inputs, state)`` (one step).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "_default_name" not in cls.__dict__:  # TF1: the class name in snake case
            name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_",
                          cls.__name__).lower()
            cls._default_name = "private" + name if name.startswith("_") else name

    _default_name = "rnn_cell"

    def __init__(self, reuse=None, name=None, dtype=None):
        self._reuse = reuse
        self._name = name
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self._input_size = None  # set by the first call, which builds the variables
        self._scope = self._scope_name = None

    @property
    def state_size(self):
        """The size of the state: an int, or a (nested) tuple of ints."""
        raise NotImplementedError

    @property
    def output_size(self):
        """The size of the output (an int)."""
        raise NotImplementedError

    @property
    def trainable_variables(self):
        """The variables the cell made when first called (empty before).

        >>> cell = gf.nn.rnn_cell.LSTMCell(16)
        >>> outputs, state = gf.nn.dynamic_rnn(cell, x, dtype=gf.float32)
        >>> [v.name for v in cell.trainable_variables]
        ['rnn/lstm_cell/kernel', 'rnn/lstm_cell/bias']
        """
        return list(getattr(self, "_variables", ()))

    trainable_weights = variables = weights = trainable_variables

    def zero_state(self, batch_size, dtype):
        """A state of zeros: ``batch_size`` is an int or a scalar integer tensor
        (such as ``gf.shape(x)[0]``)."""
        return _zeros(self.state_size, batch_size, dtypes.as_dtype(dtype))

    def build(self, input_size, dtype):
        """Create the cell's variables for inputs of ``input_size`` features."""

    def call(self, inputs, state):
        """One step on checked inputs and state (with the variables built)."""
        raise NotImplementedError

    def __call__(self, inputs, state, scope=None):
        """One time step: ``(output, new_state)``; the first call creates the variables."""
        what = f"{type(self).__name__}"
        inputs = convert_to_tensor(inputs)
        if inputs.shape is None or len(inputs.shape) != 2:
            raise ValueError(f"{what}: inputs '{inputs.name}' must be 2-D [batch, input_size], "
                             f"got shape {inputs.shape}")
        if inputs.shape[1] is None:
            raise ValueError(f"{what}: the input size (last axis of '{inputs.name}') must be "
                             f"known, got shape {tuple(inputs.shape)}")
        if not inputs.dtype.is_floating:
            raise TypeError(f"{what}: inputs '{inputs.name}' must be floating, got "
                            f"{inputs.dtype.name}")
        state = _check_state(what, state, self.state_size, inputs)
        first_call = self._input_size is None
        if first_call:
            with self._variable_scope(scope):
                self._dtype = self._dtype or inputs.dtype
                if _takes_one_argument(self.build):  # TF1's build(inputs_shape)
                    self.build(TensorShape(inputs.shape))
                else:
                    self.build(int(inputs.shape[1]), self._dtype)
                self._scope = get_variable_scope()
                self.built = True
                self._scope_name = self._scope.name
            self._input_size = int(inputs.shape[1])
        elif inputs.shape[1] != self._input_size:
            raise ValueError(f"{what} '{self._scope_name}': inputs '{inputs.name}' have "
                             f"{inputs.shape[1]} features, but the cell was built for "
                             f"{self._input_size}")
        # ``call`` in the cell's variable scope, reusing after the first call: a cell
        # written for TF1 may make its variables there with ``get_variable``
        with variable_scope(self._scope, reuse=None if first_call else True,
                            auxiliary_name_scope=False), \
                get_default_graph().name_scope(self._name or self._default_name):
            return self.call(inputs, state)

    def _variable_scope(self, scope):
        if scope is not None:
            return variable_scope(scope, reuse=self._reuse)
        name = self._name or self._default_name
        if self._reuse:
            return variable_scope(name, reuse=self._reuse)
        # as TF1's cells: each new cell takes a name of its own within the scope entered
        # (lstm_cell, lstm_cell_1...), reusing or not; entering the scope again counts
        # from the start, so a model built twice finds its cells' variables
        return variable_scope(None, default_name=name)

    def _add_variable(self, name, shape, dtype, initializer=None):
        var = get_variable(name, shape, dtype=dtype, initializer=initializer)
        self.__dict__.setdefault("_variables", []).append(var)
        return var

    @property
    def dtype(self):
        """The dtype of the cell's variables (its inputs' once first called)."""
        return self._dtype

    def add_variable(self, name, shape, dtype=None, initializer=None, regularizer=None,
                     trainable=True):
        """TF1 (in a cell's ``build``): a variable of the cell's scope, kept in
        ``trainable_variables``; ``dtype`` defaults to the cell's."""
        var = get_variable(name, shape, dtype=dtype or self._dtype, initializer=initializer,
                           regularizer=regularizer, trainable=trainable)
        self.__dict__.setdefault("_variables", []).append(var)
        return var

    add_weight = add_variable


def _takes_one_argument(method):
    """Whether a bound ``method`` takes one positional argument (TF1's ``build``)."""
    params = [p for p in inspect.signature(method).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(params) == 1


def _check_state(what, state, size, inputs):
    """``state`` with tensors in place of values, checked against ``size``."""
    if isinstance(size, (tuple, list)):
        if not isinstance(state, (tuple, list)) or isinstance(state, Tensor) or \
                len(state) != len(size):
            got = f"a tuple of {len(state)}" if isinstance(state, (tuple, list)) else \
                f"{type(state).__name__}"
            raise ValueError(f"{what}: the state must be a tuple of {len(size)} "
                             f"(state_size {size}), got {got}")
        parts = [_check_state(what, s, z, inputs) for s, z in zip(state, size)]
        return type(size)(*parts) if isinstance(size, LSTMStateTuple) else \
            (LSTMStateTuple(*parts) if isinstance(state, LSTMStateTuple) else tuple(parts))
    if isinstance(state, (tuple, list)):
        raise ValueError(f"{what}: the state must be one tensor of size {size}, got a tuple "
                         f"of {len(state)}")
    state = convert_to_tensor(state, like=inputs)
    if state.shape is None or len(state.shape) != 2 or \
            state.shape[1] not in (None, size):
        raise ValueError(f"{what}: state '{state.name}' must have shape [batch, {size}], got "
                         f"{state.shape if state.shape is None else tuple(state.shape)}")
    b_in, b_st = inputs.shape[0], state.shape[0]
    if b_in is not None and b_st is not None and b_in != b_st:
        raise ValueError(f"{what}: state '{state.name}' has batch {b_st}, inputs "
                         f"'{inputs.name}' have {b_in}")
    if state.dtype is not inputs.dtype:
        raise TypeError(f"{what}: state '{state.name}' is {state.dtype.name}, inputs "
                        f"'{inputs.name}' are {inputs.dtype.name}")
    return state

