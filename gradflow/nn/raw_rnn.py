"""TF1's ``tf.nn.raw_rnn``: an RNN whose inputs, state and outputs each step are
chosen by the user's ``loop_fn``, run as a ``while_loop`` that writes the emitted
outputs into ``TensorArray`` s (the loop of hand-written seq2seq decoders); and
``tf.nn.static_state_saving_rnn``, ``static_rnn`` with its state kept by a state saver.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.nn.rnn import static_rnn
from gradflow.nn.rnn_base import RNNCell
from gradflow.ops.array_ops import reduce_all
from gradflow.ops.control_flow_ops import _flatten, _pack, control_dependencies, while_loop
from gradflow.ops.index_ops import concat, shape
from gradflow.ops.math_ops import logical_not, logical_or, where
from gradflow.ops.shape_ops import fill
from gradflow.ops.state_ops import identity
from gradflow.ops.tensor_array_ops import TensorArray
from gradflow.prim.registry import constant, convert_to_tensor
from gradflow.variables import get_variable_scope, variable_scope

__all__ = ["raw_rnn", "static_state_saving_rnn"]


def _sizes(emit_structure, cell):
    """The per-row shape (a tuple, or a run-time shape tensor less its batch) and dtype
    of each emitted leaf."""
    if emit_structure is None:
        structure = cell.output_size
        leaves = [tuple(s) if isinstance(s, (list, tuple)) else (int(s),)
                  for s in _flatten_sizes(structure)]
        return structure, leaves, None
    structure = emit_structure
    leaves = []
    for emit in _flatten(structure):
        emit = convert_to_tensor(emit)
        known = emit.shape is not None and None not in emit.shape
        leaves.append(tuple(emit.shape) if known else shape(emit))
    return structure, leaves, [convert_to_tensor(e).dtype for e in _flatten(structure)]


def _flatten_sizes(size):
    if isinstance(size, (list, tuple)) and not all(isinstance(s, int) for s in size):
        return [leaf for s in size for leaf in _flatten_sizes(s)]
    if isinstance(size, tuple) and hasattr(size, "_fields"):
        return [leaf for s in size for leaf in _flatten_sizes(s)]
    return [size]


def _copy_some_through(finished, current, candidate):
    """``candidate``, with the rows of finished sequences kept from ``current`` (scalars
    and TensorArrays pass through)."""
    out = []
    for cur, cand in zip(_flatten(current), _flatten(candidate)):
        if isinstance(cur, TensorArray) or cur.shape == ():
            out.append(cand)
        else:
            out.append(where(finished, cur, cand))
    return _pack(candidate, out)


def raw_rnn(cell, loop_fn, parallel_iterations=None, swap_memory=False, scope=None):
    """Run ``cell`` with inputs, states and emitted outputs chosen by ``loop_fn`` (TF1
    ``tf.nn.raw_rnn``).

    ``loop_fn(time, cell_output, cell_state, loop_state)`` returns ``(finished,
    next_input, next_cell_state, emit_output, next_loop_state)``; it is called first with
    ``time=0`` and ``cell_output``, ``cell_state`` and ``loop_state`` None (then
    ``next_cell_state`` is the initial state, ``emit_output`` the structure of what is
    emitted, or None for ``cell.output_size``), then after each step. The loop runs
    until every batch entry is ``finished``; a finished entry emits zeros and keeps its
    state. Returns ``(emit_ta, final_state, final_loop_state)``: ``emit_ta`` the
    TensorArray(s) of the emitted outputs ``[time, batch, ...]`` (``.stack()`` them),
    ``final_loop_state`` None when ``loop_fn`` started it as None.

    >>> outputs_ta, final_state, _ = gf.nn.raw_rnn(cell, loop_fn)
    >>> outputs = outputs_ta.stack()
    """
    if not isinstance(cell, RNNCell) and not (callable(cell) and hasattr(cell, "output_size")
                                              and hasattr(cell, "state_size")):
        raise TypeError(f"raw_rnn: cell must be an RNNCell (callable, with output_size and "
                        f"state_size), got {type(cell).__name__}")
    if not callable(loop_fn):
        raise TypeError("raw_rnn: loop_fn must be callable")
    with variable_scope(scope if scope is not None else "rnn"):
        time = constant(0, dtype=dtypes.int32)
        finished, next_input, state, emit_structure, loop_state = loop_fn(time, None, None,
                                                                          None)
        init_loop_state = loop_state
        loop_state = constant(0, dtype=dtypes.int32) if loop_state is None else loop_state
        first = convert_to_tensor(_flatten(next_input)[0])
        batch = first.shape[0] if first.shape is not None else None
        batch_size = batch if batch is not None else shape(first)[0]
        state = _pack(state, [convert_to_tensor(s) for s in _flatten(state)])
        # the first call creates the variables outside the loop; its nodes never run
        cell(next_input, state)
        get_variable_scope().reuse_variables()
        structure, sizes, kinds = _sizes(emit_structure, cell)
        kinds = kinds or [_flatten(state)[0].dtype] * len(sizes)
        arrays, zero_leaves = [], []
        for i, (size, kind) in enumerate(zip(sizes, kinds)):
            static = isinstance(size, tuple)
            arrays.append(TensorArray(kind, size=0, dynamic_size=True, name=f"rnn_output_{i}",
                                      element_shape=(batch,) + size if static else None))
            dims = [batch_size, *size] if static else concat([[batch_size], size], 0)
            zero_leaves.append(fill(dims, constant(0, dtype=kind)))
        emit_ta, zero_emit = _pack(structure, arrays), _pack(structure, zero_leaves)

        def condition(unused_time, elements_finished, *_):
            return logical_not(reduce_all(elements_finished))

        def body(time, elements_finished, current_input, emit_ta, state, loop_state):
            output, cell_state = cell(current_input, state)
            next_time = time + 1
            next_finished, next_input, next_state, emit_output, next_loop_state = loop_fn(
                next_time, output, cell_state, loop_state)
            loop_state = loop_state if next_loop_state is None else next_loop_state
            emit_output = _copy_some_through(elements_finished, zero_emit, emit_output)
            next_state = _copy_some_through(elements_finished, state, next_state)
            written = [ta.write(time, e) for ta, e in zip(_flatten(emit_ta),
                                                           _flatten(emit_output))]
            return (next_time, logical_or(elements_finished, next_finished), next_input,
                    _pack(emit_ta, written), next_state, loop_state)

        finished = convert_to_tensor(finished)
        returned = while_loop(condition, body, [time, finished, next_input, emit_ta, state,
                                                loop_state], name="rnn_while")
    emit_ta, final_state, final_loop_state = returned[-3:]
    return emit_ta, final_state, None if init_loop_state is None else final_loop_state


def static_state_saving_rnn(cell, inputs, state_saver, state_name, sequence_length=None,
                            scope=None):
    """``static_rnn`` whose initial state comes from ``state_saver`` and whose final state
    goes back to it (TF1 ``tf.nn.static_state_saving_rnn``): ``state_saver.state(name)``
    gives the initial state (one name, or a nested tuple of names matching
    ``cell.state_size``), ``state_saver.save_state(name, value)`` the operation that
    keeps the final one, which runs before the last output and the final state are
    given. Returns ``(outputs, final_state)`` as ``static_rnn``.
    """
    size_is_tuple = isinstance(cell.state_size, (list, tuple))
    if size_is_tuple != isinstance(state_name, (list, tuple)):
        raise ValueError(f"static_state_saving_rnn: state_name should be the same type as "
                         f"cell.state_size, got {state_name!r} for {cell.state_size!r}")
    names = _flatten(state_name) if size_is_tuple else [state_name]
    if size_is_tuple and len(names) != len(_flatten(cell.state_size)):
        raise ValueError(f"static_state_saving_rnn: {len(names)} state names for the "
                         f"{len(_flatten(cell.state_size))} parts of the state")
    initial = [state_saver.state(n) for n in names]
    initial_state = _pack(cell.state_size, initial) if size_is_tuple else initial[0]
    outputs, state = static_rnn(cell, inputs, initial_state=initial_state,
                                sequence_length=sequence_length, scope=scope)
    flat_state = _flatten(state) if size_is_tuple else [state]
    saves = [state_saver.save_state(n, s) for n, s in zip(names, flat_state)]
    outputs = list(outputs)
    with control_dependencies(saves):
        last = [identity(o) for o in _flatten(outputs[-1])]
        outputs[-1] = _pack(outputs[-1], last) if isinstance(outputs[-1], (list, tuple)) \
            else last[0]
        kept = [identity(s) for s in flat_state]
    return outputs, (_pack(state, kept) if size_is_tuple else kept[0])
