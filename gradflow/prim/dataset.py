"""The graph ops of ``gf.data`` input pipelines: an iterator's ``get_next`` and
initializer, and the arguments of a function traced by ``Dataset.map``/``filter``.

They are ``"call"`` ops: the pipeline runs on the host, in the iterator state that
each Session keeps for each iterator (``session.resources``), and these ops only
hand its values to the plan. The iterator object (``gradflow.data.iterator``) is
an attribute; the ops ask it for the session's state, so two sessions on one
graph each have their own position.
"""

from __future__ import annotations

from gradflow.errors import InvalidArgumentError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register


def _get_next_impl(run_state, node):
    iterator, single = node.attrs["iterator"], node.attrs["single"]
    captures = iterator.captures_of_one_shot()

    def run(*values):
        state = iterator.state(run_state)
        if captures is not None and not state.initialized:  # a one-shot iterator starts
            state.initialize(iterator.one_shot_dataset, captures, values)
        element = state.get_next(node)
        return element[0] if single else element

    return run


def _component_impl(run_state, node):
    index = node.attrs["index"]
    return lambda element: element[index]


def _initialize_impl(run_state, node):
    iterator, dataset = node.attrs["iterator"], node.attrs["dataset"]
    captures = node.inputs

    def run(*values):
        iterator.state(run_state).initialize(dataset, captures, values)
        return ()

    return run


def _function_arg_impl(run_state, node):
    """The value the host function runner put in the session for this argument."""
    slots = run_state.resources.setdefault("data_function_args", {})
    static = node.shape

    def run():
        value = slots[node]
        if static is not None and (len(value.shape) != len(static) or any(
                d is not None and int(d) != n for d, n in zip(static, value.shape))):
            raise InvalidArgumentError(
                f"{node.attrs['what']}: an element of shape {tuple(value.shape)} does not "
                f"fit the traced argument '{node.name}' of shape {tuple(static)}")
        return value

    return run


# get_next: the element (a tuple; one component is the value itself)
register("iterator_get_next", _get_next_impl, declared, grad=None, kind="call")
register("iterator_component", _component_impl, declared, grad=None, kind="call")
register("iterator_initialize", _initialize_impl, declared, grad=None, kind="call",
         takes_strings=True)  # file names fed when the iterator starts, say
register("dataset_function_arg", _function_arg_impl, declared, grad=None, kind="call")


def _evaluate_impl(run_state, node):
    """A data set run to its end in one step (``get_single_element``, ``cardinality``,
    ``TFRecordWriter.write``): ``evaluate(run_state, inputs, values)`` gives the value."""
    evaluate, inputs = node.attrs["evaluate"], node.inputs
    return lambda *values: evaluate(run_state, inputs, values)


register("dataset_evaluate", _evaluate_impl, declared, grad=None, kind="call",
         takes_strings=True)
