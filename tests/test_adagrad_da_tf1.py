"""``tf.train.AdagradDAOptimizer`` (gradflow/train/adagrad_da.py) against TensorFlow 2.21:
the variables after each step are what TensorFlow 2.21's ``compat.v1`` optimizer gave in
graph mode for the same program (run once by hand), written in as literals; on every
CPU backend. float64 agrees to the last bits; float32 to an ulp or so.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf

# (l1, l2) -> w after each of three minimize steps of sum((w * x - 0.2)^2), lr 0.5
STEPS = {
    (0.0, 0.0): [[-0.09320546490017999, 0.4950907973374721, -0.4910627292662335],
                 [0.10976748629871895, 0.44790071265166664, -0.24511772159896852],
                 [0.24328596630841973, 0.4119072407420649, -0.20277057706354526]],
    (0.01, 0.02): [[-0.07533080685817252, 0.4907114036961871, -0.48519855616266083],
                   [0.07267637152017341, 0.4406377543003915, -0.24166334469047698],
                   [0.19071340086028182, 0.40267350179590833, -0.19821623701245264]],
    (0.0, 0.1): [[-0.08067345348484219, 0.48438479475589363, -0.47687040878539033],
                 [0.08301359904589313, 0.4313939941129349, -0.24305092960783684],
                 [0.17457697836825134, 0.3922662359350759, -0.19878911068624805]],
}


def _problem():
    w = gf.Variable([1.0, -2.0, 0.5], dtype=gf.float64, name="w")
    x = gf.constant([0.3, 0.7, -1.1], gf.float64)
    return w, gf.reduce_sum(gf.square(w * x - 0.2))


@pytest.mark.parametrize("l1, l2", sorted(STEPS))
def test_adagrad_da_steps_as_tensorflow(l1, l2, backend):
    gf.reset_default_graph()
    step = gf.train.get_or_create_global_step()
    w, loss = _problem()
    opt = gf.train.AdagradDAOptimizer(0.5, step, initial_gradient_squared_accumulator_value=0.1,
                                      l1_regularization_strength=l1,
                                      l2_regularization_strength=l2)
    train = opt.minimize(loss, global_step=step)
    assert opt.get_slot_names() == ["gradient_accumulator", "gradient_squared_accumulator"]
    assert [v.name for v in gf.global_variables()] == ["global_step", "w", "w/AdagradDA",
                                                      "w/AdagradDA_1"]  # TF 2.21's names
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = []
        for _ in range(3):
            sess.run(train)
            got.append(sess.run(w))
    np.testing.assert_allclose(got, STEPS[(l1, l2)], rtol=1e-13)


def test_the_global_step_counts_one_more_than_its_value(backend):
    # TF 2.21: a global step left at 5 (minimize without global_step) acts as step 6
    gf.reset_default_graph()
    step = gf.Variable(5, dtype=gf.int64)
    w, loss = _problem()
    train = gf.train.AdagradDAOptimizer(0.5, step, l2_regularization_strength=0.1).minimize(loss)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = [(sess.run(train), sess.run(w))[1] for _ in range(2)]
    np.testing.assert_allclose(got, [
        [-0.048241629333994986, 0.43712241638553395, -0.41666040284848194],
        [0.05310796543811151, 0.4073940698848845, -0.26082827720791285]], rtol=1e-13)


def test_a_looked_up_variable_changes_only_the_rows_looked_up(backend):
    gf.reset_default_graph()
    step = gf.train.get_or_create_global_step()
    emb = gf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="emb")
    loss = gf.reduce_sum(gf.square(gf.nn.embedding_lookup(emb, [0, 2, 0])))
    train = gf.train.AdagradDAOptimizer(0.1, step, l1_regularization_strength=0.05).minimize(
        loss, global_step=step)
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        got = [(sess.run(train), sess.run(emb))[1] for _ in range(2)]
    np.testing.assert_allclose(got, [  # TF 2.21's (float32)
        [[-0.09844284504652023, -0.09929744899272919], [3.0, 4.0],
         [-0.09945029020309448, -0.09954877197742462]],
        [[-0.08696530014276505, -0.09359683841466904], [3.0, 4.0],
         [-0.09694337844848633, -0.09746026992797852]]], rtol=1e-6)


def test_bad_arguments_are_refused():
    step = gf.train.get_or_create_global_step()
    with pytest.raises(ValueError, match="positive"):
        gf.train.AdagradDAOptimizer(0.1, step, initial_gradient_squared_accumulator_value=0.0)
    with pytest.raises(ValueError, match="l1_regularization_strength"):
        gf.train.AdagradDAOptimizer(0.1, step, l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="global_step"):
        gf.train.AdagradDAOptimizer(0.1, None)
