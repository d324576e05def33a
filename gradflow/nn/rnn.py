"""The unrolling functions of the recurrent cells (TF1 ``static_rnn``, ``dynamic_rnn``,
``static_bidirectional_rnn``, ``bidirectional_dynamic_rnn``), each honouring
``sequence_length`` as TF1 does. ``dynamic_rnn`` unrolls a static time axis and runs a
``while_loop`` over one of unknown length (a plan specialized to the shapes fed unrolls
that loop too: ``gradflow/passes/while_unroll.py``). ``gradflow.nn.rnn_cell`` exports them too.

>>> outputs, state = gf.nn.static_rnn(gf.nn.rnn_cell.LSTMCell(128), inputs, dtype=gf.float32)
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.nn.rnn_base import RNNCell, _check_state, _flat
from gradflow.ops.array_ops import expand_dims, matmul, reshape, transpose
from gradflow.ops.control_flow_ops import while_loop
from gradflow.ops.index_ops import concat, gather, shape, stack, unstack
from gradflow.ops.manip_ops import reverse_sequence
from gradflow.ops.math_ops import cast, equal, greater, less, where, zeros_like
from gradflow.ops.rnn_ops import batch_zeros
from gradflow.ops.shape_ops import checked_sequence_length, reverse
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import get_variable_scope, variable_scope

__all__ = ["bidirectional_dynamic_rnn", "dynamic_rnn", "static_bidirectional_rnn", "static_rnn"]


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
    """A forward and a backward RNN over a 3-D tensor (TF1 ``bidirectional_dynamic_rnn``):
    returns ``((output_fw, output_bw), (output_state_fw, output_state_bw))``, the outputs
    stacked like ``inputs``. A static time axis is unrolled as in
    ``static_bidirectional_rnn``; one of unknown length runs ``dynamic_rnn`` forward and
    over the inputs reversed in time (``reverse_sequence`` by ``sequence_length``, so each
    row from its own last step), its outputs put back in time order. The variables are
    the same ones (same names) either way."""
    what = "bidirectional_dynamic_rnn"
    inputs = convert_to_tensor(inputs)
    axis = 0 if time_major else 1
    if inputs.shape is not None and len(inputs.shape) == 3 and inputs.shape[axis] is None:
        return _dynamic_bidirectional(what, cell_fw, cell_bw, inputs, sequence_length,
                                      initial_state_fw, initial_state_bw, dtype, time_major,
                                      scope)
    steps, axis = _time_steps(what, inputs, time_major)
    out_fw, out_bw, state_fw, state_bw = _bidirectional(
        "bidirectional_dynamic_rnn", cell_fw, cell_bw, steps, initial_state_fw,
        initial_state_bw, dtype, sequence_length, scope)
    return (stack(out_fw, axis=axis), stack(out_bw, axis=axis)), (state_fw, state_bw)


def _dynamic_bidirectional(what, cell_fw, cell_bw, inputs, sequence_length, initial_state_fw,
                           initial_state_bw, dtype, time_major, scope):
    """``bidirectional_dynamic_rnn`` over a time axis of unknown length: two ``dynamic_rnn``
    loops, the backward one over the inputs reversed in time."""
    for cell, arg in ((cell_fw, "cell_fw"), (cell_bw, "cell_bw")):
        if not isinstance(cell, RNNCell):
            raise TypeError(f"{what}: {arg} must be an RNNCell, got {type(cell).__name__}")
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def reversed_in_time(x):
        if sequence_length is None:
            return reverse(x, [time_axis])
        return reverse_sequence(x, sequence_length, seq_axis=time_axis, batch_axis=batch_axis)

    with variable_scope(scope if scope is not None else "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                           dtype, time_major=time_major, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            out_bw, state_bw = dynamic_rnn(cell_bw, reversed_in_time(inputs), sequence_length,
                                           initial_state_bw, dtype, time_major=time_major,
                                           scope=bw_scope)
    return (out_fw, reversed_in_time(out_bw)), (state_fw, state_bw)


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
