"""Learning-rate schedules follow TF1's formulas at every step, on every backend."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradflow as gf

STEPS = list(range(0, 45)) + [69, 70, 71, 149, 150, 151, 1000]


def _schedule_values(backend, make, steps=STEPS, float64=True):
    """The schedule ``make(rate, global_step)`` evaluated with the global step at each step."""
    step = gf.train.get_or_create_global_step()
    rate = gf.constant(0.1, dtype=gf.float64) if float64 else 0.1
    lr = make(rate, step)
    value = gf.placeholder(gf.int64, ())
    set_step = gf.assign(step, value)
    out = []
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for s in steps:
            sess.run(set_step, {value: s})
            out.append(sess.run(lr))
    assert lr.dtype is (gf.float64 if float64 else gf.float32)
    return np.array(out)


def _check(backend, make, reference, steps=STEPS):
    """float64 to 1e-12; float32 (a Python learning rate, as most programs pass) to its
    rounding: 2e-6 relative, and 3e-8 absolute (a few ulps of 0.1) where 1 + cos cancels."""
    expected = np.array([reference(0.1, s) for s in steps])
    np.testing.assert_allclose(_schedule_values(backend, make, steps), expected,
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_schedule_values(backend, make, steps, float64=False),
                               expected, rtol=2e-6, atol=3e-8)


# -- NumPy references, written from TF1's documented formulas ------------------------------


def ref_piecewise(boundaries, values):
    def f(_, s):
        for b, v in zip(boundaries, values):
            if s <= b:
                return v
        return values[-1]

    return f


def ref_polynomial(decay_steps, end, power, cycle):
    def f(lr, s):
        if cycle:
            decay_steps_now = decay_steps * max(1, math.ceil(s / decay_steps))
        else:
            decay_steps_now, s = decay_steps, min(s, decay_steps)
        return (lr - end) * (1 - s / decay_steps_now) ** power + end

    return f


def ref_cosine_restarts(first, t_mul, m_mul, alpha):
    """Walks the periods one by one (not TF1's closed form)."""
    def f(lr, s):
        start, length, i = 0.0, float(first), 0
        while s >= start + length:
            start, length, i = start + length, length * t_mul, i + 1
        fraction = (s - start) / length
        cosine = m_mul ** i * 0.5 * (1 + math.cos(math.pi * fraction))
        return lr * ((1 - alpha) * cosine + alpha)

    return f


def ref_linear_cosine(decay_steps, num_periods, alpha, beta):
    def f(lr, s):
        s = min(s, decay_steps)
        linear = (decay_steps - s) / decay_steps
        cosine = 0.5 * (1 + math.cos(math.pi * 2 * num_periods * s / decay_steps))
        return lr * ((alpha + linear) * cosine + beta)

    return f


# -- the schedules ------------------------------------------------------------------------


@pytest.mark.parametrize("alias", ["piecewise_constant", "piecewise_constant_decay"])
def test_piecewise_constant(backend, alias):
    boundaries, values = [5, 12, 20], [0.1, 0.05, 0.01, 0.001]
    fn = getattr(gf.train, alias)
    # values are Python floats: float32, whatever the learning rate below
    got = _schedule_values(backend, lambda _, step: fn(step, boundaries, values), float64=False)
    expected = [ref_piecewise(boundaries, values)(None, s) for s in STEPS]
    np.testing.assert_allclose(got, expected, rtol=1e-7)
    assert got[STEPS.index(5)] == pytest.approx(0.1) and got[STEPS.index(6)] == pytest.approx(0.05)


def test_piecewise_constant_float64_and_int_values(backend):
    values = [gf.constant(v, dtype=gf.float64) for v in (1.5, 0.25, 1e-3)]
    got = _schedule_values(backend, lambda _, step: gf.train.piecewise_constant(
        step, [10, 30], values))
    np.testing.assert_array_equal(got, [ref_piecewise([10, 30], [1.5, 0.25, 1e-3])(0, s)
                                        for s in STEPS])
    ints = gf.train.piecewise_constant(gf.constant(7, dtype=gf.int32), [3, 7], [1, 2, 3])
    with gf.Session(backend=backend) as sess:
        assert ints.dtype is gf.int32 and sess.run(ints) == 2


def test_piecewise_constant_of_a_float_x(backend):
    x = gf.placeholder(gf.float32, ())
    y = gf.train.piecewise_constant(x, [0.5, 1.5], [10.0, 20.0, 30.0])
    with gf.Session(backend=backend) as sess:
        got = [float(sess.run(y, {x: v})) for v in (-1.0, 0.5, 0.51, 1.5, 1.6)]
    assert got == [10.0, 10.0, 20.0, 20.0, 30.0]


@pytest.mark.parametrize("end,power,cycle", [
    (0.0001, 1.0, False), (0.01, 2.0, False), (0.0, 0.5, False),
    (0.0001, 1.0, True), (0.02, 3.0, True)])
def test_polynomial_decay(backend, end, power, cycle):
    _check(backend, lambda lr, step: gf.train.polynomial_decay(
        lr, step, 10, end_learning_rate=end, power=power, cycle=cycle),
        ref_polynomial(10, end, power, cycle))


def test_polynomial_decay_defaults(backend):
    _check(backend, lambda lr, step: gf.train.polynomial_decay(lr, step, 30),
           ref_polynomial(30, 0.0001, 1.0, False))


@pytest.mark.parametrize("staircase", [False, True])
def test_inverse_time_decay(backend, staircase):
    def ref(lr, s):
        p = s // 10 if staircase else s / 10
        return lr / (1 + 0.5 * p)

    _check(backend, lambda lr, step: gf.train.inverse_time_decay(
        lr, step, 10, 0.5, staircase=staircase), ref)


@pytest.mark.parametrize("staircase", [False, True])
def test_natural_exp_decay(backend, staircase):
    def ref(lr, s):
        p = s // 10 if staircase else s / 10
        return lr * math.exp(-0.5 * p)

    _check(backend, lambda lr, step: gf.train.natural_exp_decay(
        lr, step, 10, 0.5, staircase=staircase), ref)


@pytest.mark.parametrize("staircase", [False, True])
def test_exponential_decay_in_float64(backend, staircase):
    def ref(lr, s):
        return lr * 0.96 ** (s // 10 if staircase else s / 10)

    _check(backend, lambda lr, step: gf.train.exponential_decay(
        lr, step, 10, 0.96, staircase=staircase), ref)


@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_cosine_decay(backend, alpha):
    def ref(lr, s):
        fraction = min(s, 40) / 40
        return lr * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * fraction)) + alpha)

    _check(backend, lambda lr, step: gf.train.cosine_decay(lr, step, 40, alpha=alpha), ref)


@pytest.mark.parametrize("t_mul,m_mul,alpha", [
    (2.0, 1.0, 0.0),  # restarts at steps 10, 30, 70, 150
    (1.0, 0.5, 0.1),  # restarts every 10 steps, each starting at half the last
    (1.5, 0.9, 0.0),
    # restarts at 10, 40, 130, 400, 1210: at 1210, log(243) / log(3) in TF1's closed form
    # rounds below 5, which would put the step at the end of the previous period
    (3.0, 1.0, 0.0)])
def test_cosine_decay_restarts(backend, t_mul, m_mul, alpha):
    _check(backend, lambda lr, step: gf.train.cosine_decay_restarts(
        lr, step, 10, t_mul=t_mul, m_mul=m_mul, alpha=alpha),
        ref_cosine_restarts(10, t_mul, m_mul, alpha), steps=STEPS + [399, 400, 1209, 1210, 1211])


def test_cosine_decay_restarts_with_tensor_t_mul(backend):
    def make(t_mul):
        return lambda lr, step: gf.train.cosine_decay_restarts(
            lr, step, 10, t_mul=gf.constant(t_mul, dtype=gf.float64))

    for t_mul in (1.0, 2.0):
        got = _schedule_values(backend, make(t_mul))
        np.testing.assert_allclose(got, [ref_cosine_restarts(10, t_mul, 1.0, 0.0)(0.1, s)
                                         for s in STEPS], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("num_periods,alpha,beta", [(0.5, 0.0, 0.001), (2.0, 0.1, 0.01)])
def test_linear_cosine_decay(backend, num_periods, alpha, beta):
    _check(backend, lambda lr, step: gf.train.linear_cosine_decay(
        lr, step, 40, num_periods=num_periods, alpha=alpha, beta=beta),
        ref_linear_cosine(40, num_periods, alpha, beta))


def test_schedule_drives_an_optimizer_step_by_step(backend):
    step = gf.train.get_or_create_global_step()
    lr = gf.train.polynomial_decay(1.0, step, 4, end_learning_rate=0.0)
    w = gf.Variable(np.float32(0.0))
    train = gf.train.GradientDescentOptimizer(lr).minimize(-w, global_step=step)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        for _ in range(6):
            sess.run(train)
        # the rate read before each step: 1, 0.75, 0.5, 0.25, 0, 0
        assert sess.run(w) == pytest.approx(2.5) and sess.run(step) == 6


def test_name_argument():
    step = gf.train.get_or_create_global_step()
    lr = gf.train.cosine_decay(0.1, step, 10, name="lr")
    assert lr.name.split(":")[0] == "lr"


# -- bad arguments --------------------------------------------------------------------------


def test_piecewise_constant_arguments():
    step = gf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="3 values for 3 boundaries"):
        gf.train.piecewise_constant(step, [1, 2, 3], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="increasing order"):
        gf.train.piecewise_constant(step, [5, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"boundaries\[1\] = 2.5 is not an integer"):
        gf.train.piecewise_constant(step, [1, 2.5], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"values\[1\].*float64"):
        gf.train.piecewise_constant(step, [1], [gf.constant(0.1),
                                                gf.constant(0.2, dtype=gf.float64)])
    with pytest.raises(ValueError, match="boundaries.*must have the dtype of x"):
        gf.train.piecewise_constant(step, [gf.constant(1.0)], [0.1, 0.2])
    with pytest.raises(ValueError, match="x must be a scalar"):
        gf.train.piecewise_constant(gf.constant([1, 2]), [1], [0.1, 0.2])


SCHEDULES = {
    "exponential_decay": lambda step, n: gf.train.exponential_decay(0.1, step, n, 0.5),
    "natural_exp_decay": lambda step, n: gf.train.natural_exp_decay(0.1, step, n, 0.5),
    "inverse_time_decay": lambda step, n: gf.train.inverse_time_decay(0.1, step, n, 0.5),
    "polynomial_decay": lambda step, n: gf.train.polynomial_decay(0.1, step, n),
    "cosine_decay": lambda step, n: gf.train.cosine_decay(0.1, step, n),
    "cosine_decay_restarts": lambda step, n: gf.train.cosine_decay_restarts(0.1, step, n),
    "linear_cosine_decay": lambda step, n: gf.train.linear_cosine_decay(0.1, step, n),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedule_arguments(name):
    step = gf.train.get_or_create_global_step()
    steps_arg = "first_decay_steps" if name == "cosine_decay_restarts" else "decay_steps"
    with pytest.raises(ValueError, match=f"{name}: {steps_arg} must be positive, got 0"):
        SCHEDULES[name](step, 0)
    with pytest.raises(ValueError, match=f"{name}: global_step is required"):
        SCHEDULES[name](None, 10)
    with pytest.raises(TypeError, match=f"{name}: {steps_arg} must be a number or a tensor"):
        SCHEDULES[name](step, "10")


def test_integer_learning_rate_tensor_is_refused():
    step = gf.train.get_or_create_global_step()
    with pytest.raises(TypeError, match="learning_rate must be a float tensor"):
        gf.train.cosine_decay(gf.constant(1), step, 10)


# -- TF1 training arguments the tutorials pass ----------------------------------------------


def test_saver_takes_tf1_arguments(tmp_path):
    w = gf.Variable(np.float32(3.0), name="w")
    saver = gf.train.Saver(max_to_keep=2, keep_checkpoint_every_n_hours=0.5)
    with gf.Session() as sess:
        sess.run(gf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=7,
                          write_meta_graph=False)
    state = gf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == path == str(tmp_path / "model.ckpt-7")
    with gf.Session() as sess:
        saver.restore(sess, state.model_checkpoint_path)
        assert sess.run(w) == 3.0
