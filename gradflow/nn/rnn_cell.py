"""Recurrent cells with TF1 ``tf.nn.rnn_cell`` names, and the unrolling functions.

A cell maps ``(inputs, state)`` to ``(output, new_state)`` for one time step.
It creates its variables (``<scope>/<cell name>/kernel`` and ``/bias``) through
``get_variable`` on its first call and uses the same ones on every later call,
so unrolling it over time shares the weights, as in TF1. The cells are
``BasicRNNCell``, ``BasicLSTMCell``/``LSTMCell``, ``GRUCell``, ``MultiRNNCell``
and ``DropoutWrapper``; ``static_rnn``, ``dynamic_rnn``, ``static_bidirectional_rnn``
and ``bidirectional_dynamic_rnn`` (over a static time axis) run them, each
honouring ``sequence_length`` as TF1 does. ``dynamic_rnn`` unrolls a static time
axis and runs a ``while_loop`` over one of unknown length.

>>> cell = gf.nn.rnn_cell.LSTMCell(128)
>>> outputs, state = gf.nn.static_rnn(cell, inputs, dtype=gf.float32)
"""

from __future__ import annotations

import inspect
import re
from collections import namedtuple

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, TensorShape, get_default_graph
from gradflow.ops.array_ops import expand_dims, matmul, reshape, transpose
from gradflow.ops.control_flow_ops import while_loop
from gradflow.ops.conv_ops import dropout
from gradflow.ops.index_ops import concat, gather, shape, split, stack, unstack
from gradflow.ops.math_ops import (
    cast,
    clip_by_value,
    equal,
    greater,
    less,
    sigmoid,
    tanh,
    where,
    zeros_like,
)
from gradflow.ops.rnn_ops import batch_zeros, lstm_c, lstm_gates, lstm_h
from gradflow.ops.shape_ops import checked_sequence_length
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import (
    constant_initializer,
    get_variable,
    get_variable_scope,
    variable_scope,
    zeros_initializer,
)

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell",
           "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
           "bidirectional_dynamic_rnn",
           "dynamic_rnn", "static_bidirectional_rnn", "static_rnn"]


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


def _input_state_matmul(inputs, state, kernel, units):
    """``concat([inputs, state], 1) @ kernel``, computed as
    ``inputs @ kernel[:k] + state @ kernel[k:]`` (TF1's kernel layout is unchanged).

    Unrolled over time, the ``inputs`` products of all steps do not depend on each
    other, so the graph compiler batches them into one large GEMM forward and one
    backward; only the ``state`` products stay in the sequential loop, which no longer
    copies ``[inputs, state]`` per step nor splits its gradient."""
    k = int(kernel.shape[0]) - units
    return matmul(inputs, kernel[:k]) + matmul(state, kernel[k:])


class BasicRNNCell(RNNCell):
    """``h = activation([x, h_prev] @ kernel + bias)``; the output is the new state."""

    _default_name = "basic_rnn_cell"

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._activation = activation or tanh

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_size, dtype):
        self._kernel = self._add_variable("kernel", (input_size + self._num_units,
                                                     self._num_units), dtype)
        self._bias = self._add_variable("bias", (self._num_units,), dtype, zeros_initializer())

    def call(self, inputs, state):
        out = self._activation(
            _input_state_matmul(inputs, state, self._kernel, self._num_units) + self._bias)
        return out, out


class LSTMCell(RNNCell):
    """Long short-term memory cell (TF1 ``tf.nn.rnn_cell.LSTMCell``).

    One fused kernel ``[input_size + output_size, 4 * num_units]`` computes the
    gates ``i, j, f, o`` from ``[x, h_prev]``;
    ``c = sigmoid(f + forget_bias) * c_prev + sigmoid(i) * activation(j)`` and
    ``h = sigmoid(o) * activation(c)``. The state is ``LSTMStateTuple(c, h)``
    (or ``[c, h]`` concatenated when ``state_is_tuple=False``).

    TF1's options: ``use_peepholes`` (diagonal weights ``w_i_diag``, ``w_f_diag``,
    ``w_o_diag`` let ``c_prev`` into the input and forget gates and ``c`` into the
    output gate), ``cell_clip`` (``c`` clipped to ``[-cell_clip, cell_clip]``),
    ``num_proj`` (``h`` projected to ``num_proj`` values by ``projection/kernel``, so
    the output and ``h`` have ``num_proj`` values) and ``proj_clip``.
    """

    _default_name = "lstm_cell"

    def __init__(self, num_units, use_peepholes=False, cell_clip=None, initializer=None,
                 num_proj=None, proj_clip=None, num_unit_shards=None, num_proj_shards=None,
                 forget_bias=1.0, state_is_tuple=True, activation=None, reuse=None, name=None,
                 dtype=None):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        for arg, value in (("num_unit_shards", num_unit_shards),
                           ("num_proj_shards", num_proj_shards)):
            if value:
                raise NotImplementedError(f"LSTMCell: {arg}={value!r} (deprecated in TF1) "
                                          "is not supported")
        self._num_units = int(num_units)
        self._use_peepholes = bool(use_peepholes)
        self._cell_clip = None if cell_clip is None else float(cell_clip)
        self._num_proj = None if num_proj is None else int(num_proj)
        self._proj_clip = None if proj_clip is None else float(proj_clip)
        self._initializer = initializer
        self._forget_bias = float(forget_bias)
        self._state_is_tuple = bool(state_is_tuple)
        self._activation = activation

    @property
    def state_size(self):
        n, m = self._num_units, self.output_size
        return LSTMStateTuple(n, m) if self._state_is_tuple else n + m

    @property
    def output_size(self):
        return self._num_units if self._num_proj is None else self._num_proj

    def build(self, input_size, dtype):
        n = self._num_units
        self._kernel = self._add_variable("kernel", (input_size + self.output_size, 4 * n),
                                          dtype, self._initializer)
        self._bias = self._add_variable("bias", (4 * n,), dtype, zeros_initializer())
        if self._use_peepholes:
            self._peepholes = [self._add_variable(name, (n,), dtype, self._initializer)
                               for name in ("w_f_diag", "w_i_diag", "w_o_diag")]
        if self._num_proj is not None:
            with variable_scope("projection"):
                self._projection = self._add_variable("kernel", (n, self._num_proj), dtype,
                                                      self._initializer)

    def call(self, inputs, state):
        n = self._num_units
        if self._state_is_tuple:
            c_prev, h_prev = state
        else:
            c_prev, h_prev = state[:, :n], state[:, n:]
        gates = _input_state_matmul(inputs, h_prev, self._kernel, self.output_size) \
            + self._bias
        plain = not self._use_peepholes and self._cell_clip is None and self._num_proj is None
        if plain and (self._activation is None or self._activation is tanh):
            act = lstm_gates(gates, self._forget_bias)
            c = lstm_c(act, c_prev)
            h = lstm_h(act, c)
        elif plain:
            act = self._activation
            i, j, f, o = split(gates, 4, axis=1)
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * act(j)
            h = sigmoid(o) * act(c)
        else:
            c, h = self._with_options(gates, c_prev)
        return h, (LSTMStateTuple(c, h) if self._state_is_tuple else concat([c, h], 1))

    def _with_options(self, gates, c_prev):
        """``(c, h)`` with peepholes, clipping or a projection (TF1's order)."""
        act = self._activation or tanh
        i, j, f, o = split(gates, 4, axis=1)
        f = f + self._forget_bias
        if self._use_peepholes:
            w_f, w_i, w_o = self._peepholes
            i, f = i + w_i * c_prev, f + w_f * c_prev
        c = sigmoid(f) * c_prev + sigmoid(i) * act(j)
        if self._cell_clip is not None:
            c = clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            o = o + w_o * c
        h = sigmoid(o) * act(c)
        if self._num_proj is not None:
            h = matmul(h, self._projection)
            if self._proj_clip is not None:
                h = clip_by_value(h, -self._proj_clip, self._proj_clip)
        return c, h


class BasicLSTMCell(LSTMCell):
    """TF1 ``BasicLSTMCell``: an ``LSTMCell`` without options, named ``basic_lstm_cell``."""

    _default_name = "basic_lstm_cell"

    def __init__(self, num_units, forget_bias=1.0, state_is_tuple=True, activation=None,
                 reuse=None, name=None, dtype=None):
        super().__init__(num_units, forget_bias=forget_bias, state_is_tuple=state_is_tuple,
                         activation=activation, reuse=reuse, name=name, dtype=dtype)


class MultiRNNCell(RNNCell):
    """Cells stacked in layers: the output of each is the input of the next.

    The state is a tuple with one state per cell; cell ``k`` makes its variables
    under ``multi_rnn_cell/cell_k/``.
    """

    _default_name = "multi_rnn_cell"

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        cells = list(cells)
        if not cells:
            raise ValueError("MultiRNNCell needs at least one cell")
        if not state_is_tuple:
            raise NotImplementedError("MultiRNNCell: only state_is_tuple=True is supported")
        self._cells = cells

    @property
    def state_size(self):
        return tuple(cell.state_size for cell in self._cells)

    @property
    def output_size(self):
        return self._cells[-1].output_size

    @property
    def trainable_variables(self):
        return [v for cell in self._cells for v in cell.trainable_variables]

    def __call__(self, inputs, state, scope=None):
        """One step through every layer: ``(top output, tuple of new states)``."""
        inputs = convert_to_tensor(inputs)
        if not isinstance(state, (tuple, list)) or len(state) != len(self._cells):
            got = f"a tuple of {len(state)}" if isinstance(state, (tuple, list)) else \
                type(state).__name__
            raise ValueError(f"MultiRNNCell: the state must be a tuple with one state per "
                             f"cell ({len(self._cells)}), got {got}")
        out, new_states = inputs, []
        with self._variable_scope(scope):
            for k, (cell, s) in enumerate(zip(self._cells, state)):
                with variable_scope(f"cell_{k}"):
                    out, s = cell(out, s)
                new_states.append(s)
        return out, tuple(new_states)


class GRUCell(RNNCell):
    """Gated recurrent unit (TF1 ``tf.nn.rnn_cell.GRUCell``), TF1's variable layout.

    ``r, u = sigmoid([x, h] @ gates/kernel + gates/bias)`` (the gate bias
    starts at 1), ``c = activation([x, r * h] @ candidate/kernel +
    candidate/bias)`` and ``h_new = u * h + (1 - u) * c``; the output is the
    new state.
    """

    _default_name = "gru_cell"

    def __init__(self, num_units, activation=None, reuse=None, kernel_initializer=None,
                 bias_initializer=None, name=None, dtype=None):
        super().__init__(reuse=reuse, name=name, dtype=dtype)
        self._num_units = int(num_units)
        self._activation = activation or tanh
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    @property
    def state_size(self):
        return self._num_units

    @property
    def output_size(self):
        return self._num_units

    def build(self, input_size, dtype):
        n, init = self._num_units, self._kernel_initializer
        bias_init = self._bias_initializer
        self._gate_kernel = self._add_variable("gates/kernel", (input_size + n, 2 * n), dtype,
                                               init)
        self._gate_bias = self._add_variable(
            "gates/bias", (2 * n,), dtype,
            bias_init if bias_init is not None else constant_initializer(1.0))
        self._candidate_kernel = self._add_variable("candidate/kernel", (input_size + n, n),
                                                    dtype, init)
        self._candidate_bias = self._add_variable(
            "candidate/bias", (n,), dtype,
            bias_init if bias_init is not None else zeros_initializer())

    def call(self, inputs, state):
        n = self._num_units
        gates = sigmoid(_input_state_matmul(inputs, state, self._gate_kernel, n) +
                        self._gate_bias)
        r, u = split(gates, 2, axis=1)
        candidate = self._activation(
            _input_state_matmul(inputs, r * state, self._candidate_kernel, n) +
            self._candidate_bias)
        new_h = u * state + (1.0 - u) * candidate
        return new_h, new_h


def _keeps_all(keep_prob):
    return isinstance(keep_prob, (int, float)) and keep_prob == 1


class _CellWrapper(RNNCell):
    """A cell around ``self._cell`` with its sizes, state and variables (the wrappers)."""

    @property
    def wrapped_cell(self):
        """The cell this wrapper wraps."""
        return self._cell

    @property
    def state_size(self):
        return self._cell.state_size

    @property
    def output_size(self):
        return self._cell.output_size

    @property
    def trainable_variables(self):
        return self._cell.trainable_variables

    def zero_state(self, batch_size, dtype):
        return self._cell.zero_state(batch_size, dtype)


class DropoutWrapper(_CellWrapper):
    """Dropout on a cell's inputs, outputs and state (TF1 ``DropoutWrapper``).

    Each keep probability is a float in ``(0, 1]`` or a scalar tensor (a
    placeholder, to turn dropout off at evaluation); 1 adds nothing. The
    wrapped cell's variables keep their names. The state's dropout leaves the
    ``c`` of an ``LSTMStateTuple`` alone, as TF1's default filter does.
    """

    def __init__(self, cell, input_keep_prob=1.0, output_keep_prob=1.0, state_keep_prob=1.0,
                 variational_recurrent=False, input_size=None, dtype=None, seed=None,
                 dropout_state_filter_visitor=None):
        if not isinstance(cell, RNNCell):
            raise TypeError(f"DropoutWrapper: cell must be an RNNCell, got "
                            f"{type(cell).__name__}")
        if variational_recurrent:
            raise NotImplementedError("DropoutWrapper: variational_recurrent is not "
                                      "supported")
        for arg, keep in (("input_keep_prob", input_keep_prob),
                          ("output_keep_prob", output_keep_prob),
                          ("state_keep_prob", state_keep_prob)):
            if isinstance(keep, (int, float)) and not 0 < keep <= 1:
                raise ValueError(f"DropoutWrapper: {arg} must be in (0, 1], got {keep}")
        super().__init__(dtype=dtype)
        self._cell = cell
        self._keep = (input_keep_prob, output_keep_prob, state_keep_prob)
        self._seed = seed
        self._draws = 0
        self._state_filter = dropout_state_filter_visitor or _default_state_filter


    def _dropout(self, x, keep_prob):
        seed = None
        if self._seed is not None:  # one stream per dropout node, all fixed by the seed
            self._draws += 1
            seed = (int(self._seed) * 1000003 + self._draws) % (2 ** 31 - 1)
        return dropout(x, keep_prob=keep_prob, seed=seed)

    def __call__(self, inputs, state, scope=None):
        keep_in, keep_out, keep_state = self._keep
        if not _keeps_all(keep_in):
            inputs = self._dropout(convert_to_tensor(inputs), keep_in)
        output, new_state = self._cell(inputs, state, scope=scope)
        if not _keeps_all(keep_state):
            new_state = self._drop_state(new_state, self._state_filter(new_state), keep_state)
        if not _keeps_all(keep_out):
            output = self._dropout(output, keep_out)
        return output, new_state

    def _drop_state(self, state, keep_mask, keep_prob):
        if isinstance(state, (tuple, list)):
            masks = keep_mask if isinstance(keep_mask, (tuple, list)) else \
                [keep_mask] * len(state)
            parts = [self._drop_state(s, m, keep_prob) for s, m in zip(state, masks)]
            return type(state)(*parts) if hasattr(state, "_fields") else type(state)(parts)
        return self._dropout(state, keep_prob) if keep_mask else state


class ResidualWrapper(_CellWrapper):
    """A cell whose output is the wrapped cell's output plus its input (TF1
    ``ResidualWrapper``); the state passes through unchanged.

    The input and the output must have the same shape and dtype (give the cell
    as many units as the input has features). ``residual_fn(inputs, outputs)``
    replaces the sum when given.
    """

    def __init__(self, cell, residual_fn=None):
        if not isinstance(cell, RNNCell):
            raise TypeError(f"ResidualWrapper: cell must be an RNNCell, got "
                            f"{type(cell).__name__}")
        super().__init__()
        self._cell = cell
        self._residual_fn = residual_fn


    def __call__(self, inputs, state, scope=None):
        inputs = convert_to_tensor(inputs)
        output, new_state = self._cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        if (inputs.shape is not None and output.shape is not None
                and inputs.shape[-1] is not None and output.shape[-1] is not None
                and inputs.shape[-1] != output.shape[-1]):
            raise ValueError(f"ResidualWrapper: the input '{inputs.name}' has "
                             f"{inputs.shape[-1]} features but the cell's output "
                             f"'{output.name}' has {output.shape[-1]}; they are added, so "
                             "they must match")
        return inputs + output, new_state


def _default_state_filter(state):
    """Which parts of a state dropout applies to: all but an LSTM's ``c``."""
    if isinstance(state, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    if isinstance(state, (tuple, list)):
        return type(state)(_default_state_filter(s) for s in state)
    return True


def _batch_size(x):
    return x.shape[0] if x.shape[0] is not None else shape(x)[0]


def _check_inputs(what, inputs):
    """``inputs`` as a list of 2-D tensors of one feature size and dtype."""
    if isinstance(inputs, Tensor) or not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{what}: inputs must be a list of [batch, input_size] tensors, "
                        f"got {type(inputs).__name__}")
    if not inputs:
        raise ValueError(f"{what}: inputs is empty")
    inputs = [convert_to_tensor(x) for x in inputs]
    first = inputs[0]
    for t, x in enumerate(inputs):
        if x.shape is None or len(x.shape) != 2:
            raise ValueError(f"{what}: inputs[{t}] '{x.name}' must be 2-D "
                             f"[batch, input_size], got shape {x.shape}")
        if x.shape[1] != first.shape[1] or x.dtype is not first.dtype:
            raise ValueError(f"{what}: inputs[{t}] '{x.name}' is {tuple(x.shape)} "
                             f"{x.dtype.name}, but inputs[0] '{first.name}' is "
                             f"{tuple(first.shape)} {first.dtype.name}")
    return inputs


def _select(valid, new, old):
    """``new`` where ``valid`` (a [batch, 1] bool tensor), else ``old``, leaf by leaf
    of a (nested) state."""
    if isinstance(new, (tuple, list)):
        parts = [_select(valid, n, o) for n, o in zip(new, old)]
        return type(new)(*parts) if hasattr(new, "_fields") else type(new)(parts)
    return where(valid, new, convert_to_tensor(old, like=new))


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """Unroll ``cell`` over a list of ``[batch, input_size]`` tensors (TF1 ``static_rnn``).

    Returns ``(outputs, final_state)``: one output per step and the state after
    the last. ``initial_state`` (a tensor or tuple of tensors shaped like
    ``cell.state_size``; placeholders work, to carry the state between runs)
    defaults to zeros of ``dtype``. Variables live under ``scope`` (a name or a
    ``VariableScope``; default ``"rnn"``), e.g. ``rnn/lstm_cell/kernel``.

    ``sequence_length`` (an integer vector, one length per batch row) stops
    each sequence at its length, as TF1 does: the outputs of the steps past it
    are zeros, and the state passes through them unchanged, so the final state
    is the one at each sequence's last step.
    """
    what = "static_rnn"
    if not isinstance(cell, RNNCell):
        raise TypeError(f"{what}: cell must be an RNNCell, got {type(cell).__name__}")
    inputs = _check_inputs(what, inputs)
    first = inputs[0]
    with variable_scope(scope if scope is not None else "rnn"):
        if initial_state is None:
            if dtype is None:
                raise ValueError(f"{what}: give initial_state or dtype")
            state = cell.zero_state(_batch_size(first), dtype)
        else:
            state = initial_state
        lengths = None if sequence_length is None else \
            checked_sequence_length(what, sequence_length, first)
        outputs, zero_output = [], None
        for t, x in enumerate(inputs):
            if t == 1:  # as TF1: a cell that makes its variables on every call reuses them
                get_variable_scope().reuse_variables()
            out, new_state = cell(x, state)
            if lengths is None:
                state = new_state
            else:  # past its length a sequence outputs zeros and keeps its state
                valid = expand_dims(greater(lengths, t), 1)
                if zero_output is None:
                    zero_output = zeros_like(out)
                out = where(valid, out, zero_output)
                state = _select(valid, new_state, state)
            outputs.append(out)
    return outputs, state


def _reverse_seq(sequence, lengths):
    """The steps of ``sequence`` in reverse order; with ``lengths`` (int32 [batch]) each
    row's first ``lengths[b]`` steps are reversed and the rest stay in place (TF1's
    ``reverse_sequence``). Done as one batched matmul with a 0/1 permutation, which
    moves values exactly and carries their gradients back the same way."""
    if lengths is None:
        return list(reversed(sequence))
    steps = len(sequence)
    x = stack(sequence, axis=1)  # [batch, time, depth]
    ends = reshape(lengths, (-1, 1, 1))  # [batch, 1, 1]
    t = constant(np.arange(steps, dtype=np.int32).reshape(1, steps, 1))
    s = constant(np.arange(steps, dtype=np.int32).reshape(1, 1, steps))
    source = where(less(t, ends), ends - 1 - t, t)  # the step row b of output t reads
    perm = cast(equal(source, s), x.dtype)  # [batch, time, time]
    return unstack(matmul(perm, x), axis=1)


def _bidirectional(what, cell_fw, cell_bw, inputs, initial_state_fw, initial_state_bw, dtype,
                   sequence_length, scope):
    for cell, arg in ((cell_fw, "cell_fw"), (cell_bw, "cell_bw")):
        if not isinstance(cell, RNNCell):
            raise TypeError(f"{what}: {arg} must be an RNNCell, got {type(cell).__name__}")
    inputs = _check_inputs(what, inputs)
    lengths = None if sequence_length is None else \
        checked_sequence_length(what, sequence_length, inputs[0])
    with variable_scope(scope if scope is not None else "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype, lengths,
                                          scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_seq(inputs, lengths)
            out_bw, state_bw = static_rnn(cell_bw, reversed_inputs, initial_state_bw, dtype,
                                          lengths, scope=bw_scope)
    return out_fw, _reverse_seq(out_bw, lengths), state_fw, state_bw


def static_bidirectional_rnn(cell_fw, cell_bw, inputs, initial_state_fw=None,
                             initial_state_bw=None, dtype=None, sequence_length=None,
                             scope=None):
    """A forward and a backward RNN over a list of steps (TF1
    ``static_bidirectional_rnn``).

    Returns ``(outputs, output_state_fw, output_state_bw)``: ``outputs[t]`` is
    ``concat([fw_t, bw_t], 1)``, where the backward cell reads each sequence
    from its end (with ``sequence_length``, from each row's own last step; its
    outputs are put back in time order). Variables live under
    ``<scope>/fw/`` and ``<scope>/bw/`` (default scope ``"bidirectional_rnn"``).
    """
    out_fw, out_bw, state_fw, state_bw = _bidirectional(
        "static_bidirectional_rnn", cell_fw, cell_bw, inputs, initial_state_fw,
        initial_state_bw, dtype, sequence_length, scope)
    outputs = [concat([f, b], 1) for f, b in zip(out_fw, out_bw)]
    return outputs, state_fw, state_bw


def bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs, sequence_length=None,
                              initial_state_fw=None, initial_state_bw=None, dtype=None,
                              parallel_iterations=None, swap_memory=False, time_major=False,
                              scope=None):
    """``static_bidirectional_rnn`` over a 3-D tensor with a static time axis (TF1
    ``bidirectional_dynamic_rnn``): returns ``((output_fw, output_bw),
    (output_state_fw, output_state_bw))``, the outputs stacked like ``inputs``."""
    steps, axis = _time_steps("bidirectional_dynamic_rnn", inputs, time_major)
    out_fw, out_bw, state_fw, state_bw = _bidirectional(
        "bidirectional_dynamic_rnn", cell_fw, cell_bw, steps, initial_state_fw,
        initial_state_bw, dtype, sequence_length, scope)
    return (stack(out_fw, axis=axis), stack(out_bw, axis=axis)), (state_fw, state_bw)


def _time_steps(what, inputs, time_major):
    inputs = convert_to_tensor(inputs)
    if inputs.shape is None or len(inputs.shape) != 3:
        raise ValueError(f"{what}: inputs '{inputs.name}' must be 3-D, got shape "
                         f"{inputs.shape}")
    axis = 0 if time_major else 1
    if inputs.shape[axis] is None:
        raise ValueError(f"{what}: the time axis of '{inputs.name}' must have a static "
                         f"length, got shape {tuple(inputs.shape)}")
    return unstack(inputs, axis=axis), axis


def dynamic_rnn(cell, inputs, sequence_length=None, initial_state=None, dtype=None,
                parallel_iterations=None, swap_memory=False, time_major=False, scope=None):
    """Run ``cell`` over a 3-D tensor (TF1 ``dynamic_rnn``).

    ``inputs`` is ``[batch, time, features]`` (``[time, batch, features]`` with
    ``time_major=True``); returns ``(outputs, final_state)`` with the outputs
    stacked the same way. ``sequence_length`` works as in ``static_rnn``.

    When the time axis has a static length the cell is unrolled as in
    ``static_rnn`` (the fastest plan). When it is unknown (a placeholder of
    shape ``[None, None, n]``) the cell runs inside a ``while_loop`` over the
    time steps, so one graph takes batches of any length; the variables are the
    same ones (same names) in both cases, and gradients flow through the loop.
    """
    what = "dynamic_rnn"
    inputs = convert_to_tensor(inputs)
    if inputs.shape is None or len(inputs.shape) != 3:
        raise ValueError(f"{what}: inputs '{inputs.name}' must be 3-D, got shape "
                         f"{inputs.shape}")
    axis = 0 if time_major else 1
    if inputs.shape[axis] is not None:
        steps, axis = _time_steps(what, inputs, time_major)
        outputs, state = static_rnn(cell, steps, initial_state=initial_state, dtype=dtype,
                                    sequence_length=sequence_length, scope=scope)
        return stack(outputs, axis=axis), state
    return _while_rnn(what, cell, inputs, sequence_length, initial_state, dtype, time_major,
                      scope)


def _while_rnn(what, cell, inputs, sequence_length, initial_state, dtype, time_major, scope):
    """``dynamic_rnn`` over a time axis of unknown length: a ``while_loop`` whose
    variables are the step ``t``, the state and the outputs so far (time-major,
    grown by one step per iteration with ``concat``)."""
    if not isinstance(cell, RNNCell):
        raise TypeError(f"{what}: cell must be an RNNCell, got {type(cell).__name__}")
    if inputs.shape[2] is None:
        raise ValueError(f"{what}: the input size (last axis of '{inputs.name}') must be "
                         f"known, got shape {tuple(inputs.shape)}")
    if not inputs.dtype.is_floating:
        raise TypeError(f"{what}: inputs '{inputs.name}' must be floating, got "
                        f"{inputs.dtype.name}")
    time_axis = 0 if time_major else 1
    first = inputs[0] if time_major else inputs[:, 0]  # a probe for the shapes; never run
    batch = first.shape[0]
    batch_size = batch if batch is not None else shape(inputs)[1 - time_axis]
    with variable_scope(scope if scope is not None else "rnn"):
        if initial_state is None:
            if dtype is None:
                raise ValueError(f"{what}: give initial_state or dtype")
            state = cell.zero_state(batch_size, dtype)
        else:
            state = initial_state
        lengths = None if sequence_length is None else \
            checked_sequence_length(what, sequence_length, first)
        # The first call creates the variables (named as by static_rnn), outside the
        # loop; the loop body's calls reuse them. Its own nodes are never run.
        probe, _ = cell(first, state)
        get_variable_scope().reuse_variables()  # for cells that ask on every call (TF1)
        units = probe.shape[1]
        state = _check_state(what, state, cell.state_size, first)
        flat_state = _flat(state)
        empty = expand_dims(batch_zeros(batch_size, (units,), probe.dtype), 0)[:0]
        time = shape(inputs)[time_axis]

        def body(t, acc, *leaves):
            x = gather(inputs, t, axis=time_axis)  # no transpose: a contiguous feed stays so
            out, new_state = cell(x, _pack_like(state, list(leaves)))
            if lengths is not None:  # past its length a row outputs zeros, keeps its state
                valid = expand_dims(greater(lengths, t), 1)
                out = where(valid, out, zeros_like(out))
                new_state = _select(valid, new_state, _pack_like(state, list(leaves)))
            acc = concat([acc, expand_dims(out, 0)], 0)
            return (t + 1, acc, *_flat(new_state))

        invariants = [(), (None, batch, units)] + \
            [(batch, leaf.shape[1]) for leaf in flat_state]
        finals = while_loop(lambda t, acc, *leaves: less(t, time), body,
                            [constant(0, dtype=dtypes.int32), empty, *flat_state],
                            shape_invariants=invariants, name="rnn_while")
        outputs, final_state = finals[1], _pack_like(state, list(finals[2:]))
    if not time_major:
        outputs = transpose(outputs, (1, 0, 2))
    return outputs, final_state


def _pack_like(structure, leaves):
    """``leaves`` (a list, consumed) arranged as the nested state ``structure``."""
    if isinstance(structure, (tuple, list)):
        parts = [_pack_like(s, leaves) for s in structure]
        return type(structure)(*parts) if hasattr(structure, "_fields") else \
            type(structure)(parts)
    return leaves.pop(0)
