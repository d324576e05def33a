"""Session(check_numerics=True), control inputs in plans, session error wording,
and the layering rule that the graph module knows nothing of sessions."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import FailedPreconditionError, InvalidArgumentError


def test_check_numerics_names_the_op_that_made_the_nan(backend):
    x = gf.placeholder(gf.float32, shape=(3,), name="x")
    y = gf.log(x, name="log_of_x")
    z = gf.reduce_sum(gf.square(y))
    with gf.Session(backend=backend, check_numerics=True) as sess:
        np.testing.assert_allclose(sess.run(z, {x: [1.0, 2.0, 3.0]}),
                                   np.sum(np.log([1.0, 2.0, 3.0]) ** 2), rtol=1e-6)
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(z, {x: [1.0, -1.0, 2.0]})
    message = str(info.value)
    assert "log 'log_of_x' produced NaN" in message
    assert "test_session_checks.py" in message  # the user's line that built the op


def test_check_numerics_names_a_fed_nan_and_a_variable_that_holds_one(backend):
    x = gf.placeholder(gf.float32, shape=(2,), name="features")
    w = gf.Variable(np.ones(2, np.float32), name="weights")
    blow_up = gf.assign(w, w / 0.0)
    y = gf.reduce_sum(w * x)
    with gf.Session(backend=backend, check_numerics=True) as sess:
        with pytest.raises(InvalidArgumentError, match="the value fed to 'features' holds NaN"):
            sess.run(y, {x: [np.nan, 1.0]})
        with pytest.raises(InvalidArgumentError, match="divide .* produced infinity"):
            sess.run(blow_up)
    with gf.Session(backend=backend) as sess:  # unchecked, the infinity lands ...
        sess.run(blow_up)
        sess.check_numerics = True  # ... and a checked plan names the variable
        with pytest.raises(InvalidArgumentError, match="variable 'weights' holds infinity"):
            sess.run(y, {x: [1.0, 1.0]})


def test_unchecked_session_lets_nan_through(backend):
    x = gf.placeholder(gf.float32, shape=(2,))
    with gf.Session(backend=backend) as sess:
        assert np.isnan(sess.run(gf.log(x), {x: [-1.0, 1.0]})[0])


def test_control_inputs_run_before_the_node_that_waits_for_them(backend):
    v = gf.Variable(0.0, name="counter")
    bump = gf.assign_add(v, 1.0)
    x = gf.placeholder(gf.float32, shape=())
    with gf.get_default_graph().control_dependencies([bump]):
        y = x * 2.0
    z = x * 3.0  # outside the block: no control input
    assert y.control_inputs == (bump,) and z.control_inputs == ()
    with gf.Session(backend=backend) as sess:
        assert sess.run(y, {x: 1.0}) == 2.0
        assert sess.run(y, {x: 1.0}) == 2.0
        assert sess.run(z, {x: 1.0}) == 3.0
        assert sess.run(v) == 2.0  # two runs of y, none of z


def test_feeding_a_placeholder_of_another_graph_says_feed(backend):
    with gf.Graph().as_default():
        other = gf.placeholder(gf.float32, shape=(), name="elsewhere")
    x = gf.placeholder(gf.float32, shape=(), name="here")
    with gf.Session(backend=backend) as sess:
        with pytest.raises(ValueError, match="cannot feed 'elsewhere': it belongs to another"):
            sess.run(x * 2.0, {x: 1.0, other: 2.0})
        with pytest.raises(ValueError, match="cannot fetch 'elsewhere'"):
            sess.run(other)


def test_a_closed_session_says_it_is_closed(backend):
    x = gf.constant(1.0)
    with gf.Session(backend=backend) as sess:
        sess.run(x)
    with pytest.raises(FailedPreconditionError, match="this Session is closed .*open a new"):
        sess.run(x)


def test_graph_module_does_not_import_session():
    source = pathlib.Path(gf.graph.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    assert not any(m and m.startswith("gradflow.") for m in imported), imported


def test_eval_and_run_find_the_default_session(backend):
    v = gf.Variable(2.0)
    inc = gf.group(gf.assign_add(v, 1.0))
    with gf.Session(backend=backend):
        inc.run()
        assert (v * 1.0).eval() == 3.0
