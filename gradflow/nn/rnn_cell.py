"""Recurrent cells with TF1 ``tf.nn.rnn_cell`` names, and the unrolling functions
(``gradflow.nn.rnn``; their base class is in ``gradflow.nn.rnn_base``).

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

from gradflow.nn.rnn import (
    bidirectional_dynamic_rnn,
    dynamic_rnn,
    static_bidirectional_rnn,
    static_rnn,
)
from gradflow.nn.rnn_base import LSTMStateTuple, RNNCell
from gradflow.ops.array_ops import matmul
from gradflow.ops.conv_ops import dropout
from gradflow.ops.index_ops import concat, split
from gradflow.ops.math_ops import clip_by_value, sigmoid, tanh
from gradflow.ops.rnn_ops import lstm_c, lstm_gates, lstm_h
from gradflow.prim import gru as _gru  # noqa: F401 - registers the GRU step's primitives
from gradflow.prim import lstm_peephole as _peephole  # noqa: F401 - and the peephole cell's
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.variables import constant_initializer, variable_scope, zeros_initializer

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DropoutWrapper", "GRUCell", "LSTMCell",
           "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
           "bidirectional_dynamic_rnn",
           "dynamic_rnn", "static_bidirectional_rnn", "static_rnn"]


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
        core = not self._use_peepholes and self._cell_clip is None  # the fused ops' cell
        plain = core and self._num_proj is None
        if core and (self._activation is None or self._activation is tanh):
            act = lstm_gates(gates, self._forget_bias)  # a projection reads h after them
            c = lstm_c(act, c_prev)
            h = self._projected(lstm_h(act, c))
        elif plain:
            act = self._activation
            i, j, f, o = split(gates, 4, axis=1)
            c = sigmoid(f + self._forget_bias) * c_prev + sigmoid(i) * act(j)
            h = sigmoid(o) * act(c)
        elif (self._activation is None or self._activation is tanh) \
                and _fusible(inputs, c_prev, gates):
            c, h = self._fused_options(gates, c_prev)
        else:
            c, h = self._with_options(gates, c_prev)
        return h, (LSTMStateTuple(c, h) if self._state_is_tuple else concat([c, h], 1))

    def _fused_options(self, gates, c_prev):
        """``(c, h)`` with peepholes or clipping as the fused ``lstm_peep_c``/``lstm_peep_h``
        nodes (gradflow/prim/lstm_peephole.py): the numbers of ``_with_options``."""
        w_i = w_f = w_o = []
        if self._use_peepholes:
            w_f, w_i, w_o = ([w] for w in self._peepholes)
        c = apply("lstm_peep_c", [gates, c_prev] + w_i + w_f, forget_bias=self._forget_bias,
                  cell_clip=self._cell_clip)
        return c, self._projected(apply("lstm_peep_h", [gates, c] + w_o))

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
        return c, self._projected(sigmoid(o) * act(c))

    def _projected(self, h):
        """``h`` through the projection (and its clip) where the cell has one."""
        if self._num_proj is not None:
            h = matmul(h, self._projection)
            if self._proj_clip is not None:
                h = clip_by_value(h, -self._proj_clip, self._proj_clip)
        return h


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
        if self._activation is tanh and _fusible(inputs, state, gates):
            # the same numbers as below, in two fused nodes (gradflow/prim/gru.py)
            rh = apply("gru_rh", [gates, state])
            zc = _input_state_matmul(inputs, rh, self._candidate_kernel, n) + \
                self._candidate_bias
            new_h = apply("gru_h", [gates, zc, state])
            return new_h, new_h
        r, u = split(gates, 2, axis=1)
        candidate = self._activation(
            _input_state_matmul(inputs, r * state, self._candidate_kernel, n) +
            self._candidate_bias)
        new_h = u * state + (1.0 - u) * candidate
        return new_h, new_h


def _fusible(inputs, state, gates):
    """Whether a GRU (or peephole LSTM) step of these tensors can be its fused nodes:
    floating 2-D gates and state of one dtype (anything else takes the elementary ops,
    which broadcast and check as TF1's do)."""
    shapes = [t.shape for t in (state, gates)]
    if not all(s is not None and s.ndims == 2 for s in shapes):
        return False
    batches = {s[0] for s in shapes} - {None}
    return len(batches) <= 1 and state.dtype == gates.dtype and gates.dtype.is_floating


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


