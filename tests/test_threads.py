"""Session.run from several threads: every run gets its own numbers.

Each check compares what threads fetched with the same runs done in one thread.
"""

from __future__ import annotations

import threading

import numpy as np

import gradflow as gf

THREADS = 4


def _run_threads(target, n=THREADS):
    errors, barrier = [], threading.Barrier(n)

    def wrapped(k):
        try:
            barrier.wait()
            target(k)
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=wrapped, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _elementwise_graph():
    x = gf.placeholder(gf.float32, shape=(8192,), name="x")
    h = gf.tanh(x * 1.5 + 0.25)
    h = gf.exp(h * h) - x
    return x, gf.sqrt(h * h + 1.0) * 2.0 - 1.0


def test_threads_running_one_plan_get_their_own_results(backend):
    x, y = _elementwise_graph()
    rng = np.random.default_rng(0)
    feeds = [rng.uniform(-1, 1, (25, 8192)).astype(np.float32) for _ in range(THREADS)]
    with gf.Session(backend=backend) as sess:
        expected = [[sess.run(y, {x: f}) for f in thread_feeds] for thread_feeds in feeds]
        got = [[None] * 25 for _ in range(THREADS)]

        def work(k):
            for _ in range(2):
                for i, f in enumerate(feeds[k]):
                    got[k][i] = sess.run(y, {x: f})
                    np.testing.assert_array_equal(got[k][i], expected[k][i])

        _run_threads(work)


def test_native_fetches_are_not_overwritten_by_other_threads(backend):
    x, y = _elementwise_graph()
    feeds = [np.full(8192, 0.1 * k, np.float32) for k in range(THREADS)]
    with gf.Session(backend=backend) as sess:
        expected = [sess.run(y, {x: f}) for f in feeds]

        def work(k):
            kept = [sess.run(y, {x: feeds[k]}, output="native") for _ in range(30)]
            for value in kept:
                np.testing.assert_array_equal(sess.backend.to_numpy(value), expected[k])

        _run_threads(work)


def _mlp(seed=3):
    gf.set_random_seed(seed)
    x = gf.placeholder(gf.float32, shape=(None, 8), name="x")
    y = gf.placeholder(gf.int64, shape=(None,), name="y")
    h = gf.layers.dense(x, 16, activation=gf.nn.relu)
    logits = gf.layers.dense(h, 3)
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train = gf.train.AdamOptimizer(0.01).minimize(loss)
    return x, y, loss, train


def _data(n=64, seed=1):
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=(n, 8)).astype(np.float32)
    return xs, (xs[:, 0] > 0).astype(np.int64) + (xs[:, 1] > 0.5)


def test_evaluation_thread_beside_training_sees_whole_steps(backend):
    """An evaluation thread fetches the loss while another thread trains: every value
    it sees is the loss after some whole number of steps, and training ends where
    training alone ends."""
    steps = 40
    xs, ys = _data()
    feed_of = None
    with gf.Graph().as_default():
        x, y, loss, train = _mlp()
        feed_of = {x: xs, y: ys}
        with gf.Session(backend=backend) as sess:  # the single-thread reference
            losses = [sess.run(loss, feed_of)]
            for _ in range(steps):
                sess.run(train, feed_of)
                losses.append(sess.run(loss, feed_of))
            final = [sess.run(v) for v in gf.trainable_variables()]
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            seen, done = [], threading.Event()

            def work(k):
                if k == 0:
                    for _ in range(steps):
                        sess.run(train, feed_of)
                    done.set()
                else:
                    while not done.is_set():
                        seen.append(sess.run(loss, feed_of))

            _run_threads(work, n=3)
            for got, want in zip([sess.run(v) for v in gf.trainable_variables()], final):
                np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    allowed = np.array(losses)
    for value in seen:
        assert np.min(np.abs(allowed - value)) <= 1e-5 * max(1.0, abs(value)), \
            f"evaluation saw loss {value}, which no whole number of steps gives"


def test_training_in_several_threads_applies_every_step(backend):
    """Plain SGD steps from several threads: the updates are sums, so their order
    does not matter, and every one of them lands."""
    w = gf.Variable(np.zeros(32, np.float32), name="w")
    g = gf.placeholder(gf.float32, shape=(32,), name="g")
    step = gf.assign_add(w, g)
    with gf.Session(backend=backend) as sess:
        sess.run(w.initializer)
        lock = threading.Lock()  # assign_add reads then writes: serialize the steps

        def work(k):
            for _ in range(50):
                with lock:
                    sess.run(step, {g: np.full(32, k + 1, np.float32)})

        _run_threads(work)
        np.testing.assert_array_equal(sess.run(w), np.full(32, 50 * (1 + 2 + 3 + 4)))


def test_lazy_initialization_happens_once(backend):
    """Threads that start together on an uninitialized session initialize each
    variable once: an assignment is never undone by another thread's late
    initializer."""
    v = gf.Variable(np.zeros(4, np.float32), name="v")
    set_five = gf.assign(v, np.full(4, 5.0, np.float32))
    readers = [v * float(k) for k in range(1, THREADS)]
    for _ in range(10):
        with gf.Session(backend=backend) as sess:

            def work(k):
                sess.run(set_five if k == 0 else readers[k - 1])

            _run_threads(work)
            np.testing.assert_array_equal(sess.run(v), np.full(4, 5.0, np.float32))


def test_threads_running_control_flow_get_their_own_results(backend):
    """Plans with cond and while_loop sub-plans: each concurrent instance has its own."""
    x = gf.placeholder(gf.float32, shape=(8192,), name="x")
    flag = gf.placeholder(gf.bool, shape=(), name="flag")
    picked = gf.cond(flag, lambda: gf.tanh(x * 2.0) + 1.0, lambda: gf.exp(x * 0.5) - x)
    _, looped = gf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 1.5 + picked),
                              (gf.constant(0), x))
    rng = np.random.default_rng(2)
    feeds = [(rng.uniform(-1, 1, 8192).astype(np.float32), k % 2 == 0) for k in range(THREADS)]
    with gf.Session(backend=backend) as sess:
        expected = [sess.run(looped, {x: f, flag: b}) for f, b in feeds]

        def work(k):
            f, b = feeds[k]
            for _ in range(15):
                np.testing.assert_array_equal(sess.run(looped, {x: f, flag: b}), expected[k])

        _run_threads(work)


def test_threads_running_an_lstm_plan_get_their_own_results(backend):
    """The compiled LSTM plan (batched input products, one node per step forward and
    backward with several outputs, row stacks in the plan's buffers) run from several
    threads at once gives each run the numbers of the same run in one thread."""
    rng = np.random.default_rng(1)
    gf.set_random_seed(1)
    steps, units = 6, 16
    ids = gf.placeholder(gf.int32, (None, steps))
    table = gf.Variable(rng.standard_normal((11, 8)).astype(np.float32))
    inputs = [gf.nn.embedding_lookup(table, ids[:, t]) for t in range(steps)]
    cell = gf.nn.rnn_cell.LSTMCell(units)
    outputs, _ = gf.nn.static_rnn(cell, inputs, dtype=gf.float32)
    loss = gf.reduce_sum(gf.square(gf.concat(outputs, 0)))
    grads = gf.gradients(loss, [table] + cell.trainable_variables)
    feeds = [[rng.integers(0, 11, (4, steps)).astype(np.int32) for _ in range(6)]
             for _ in range(THREADS)]
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())
        expected = [[sess.run([loss] + grads, {ids: f}) for f in thread_feeds]
                    for thread_feeds in feeds]

        def work(k):
            for _ in range(3):
                for i, f in enumerate(feeds[k]):
                    for got, want in zip(sess.run([loss] + grads, {ids: f}), expected[k][i]):
                        if backend == "cupy":  # the embedding gradient adds rows with
                            # atomics on the GPU, in whatever order the threads come: a
                            # row's float32 sum may move by some 1e-7 where its terms
                            # cancel (atol=1e-7 failed once among 8 workers on an H100)
                            np.testing.assert_allclose(got, want, rtol=1e-6, atol=2e-6)
                        else:
                            np.testing.assert_array_equal(got, want)

        _run_threads(work)


def test_concurrent_increments_are_never_lost(backend):
    """4 threads x 300 ``assign_add`` steps, each with a matmul to widen the window
    between a run's start and its commit: all 1,200 land (TF1's use_locking=True)."""
    p = gf.Variable(0.0, name="p")
    a = gf.Variable(np.full((128, 128), 1e-3, np.float32), name="a")
    inc = gf.assign_add(p, 1.0, use_locking=True)
    work = gf.reduce_sum(gf.matmul(a, a))
    with gf.Session(backend=backend) as sess:
        sess.run(gf.global_variables_initializer())

        def loop(k):
            for _ in range(300):
                sess.run([inc, work])

        _run_threads(loop)
        assert sess.run(p) == 1200.0


def test_adam_from_several_threads_lands_every_step(backend):
    """Four threads of Adam on one model: every step counts (global step, Adam's beta
    powers, exactly), and the model trains about as far as one thread with 4x the steps
    (a little less: each thread's gradients come from weights a few steps old)."""
    steps = 40
    xs, ys = _data()
    with gf.Graph().as_default():
        x, y, loss, _ = _mlp()
        global_step = gf.train.get_or_create_global_step()
        adam = gf.train.AdamOptimizer(0.01)
        train = adam.minimize(loss, global_step=global_step)
        [beta1_power] = [v for v in adam.variables() if v.name.startswith("beta1_power")]
        feed = {x: xs, y: ys}
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            start = sess.run(loss, feed)
            for _ in range(THREADS * steps):
                sess.run(train, feed)
            alone = sess.run(loss, feed)
        with gf.Session(backend=backend) as sess:
            sess.run(gf.global_variables_initializer())
            _run_threads(lambda k: [sess.run(train, feed) for _ in range(steps)])
            assert sess.run(global_step) == THREADS * steps
            np.testing.assert_allclose(sess.run(beta1_power), 0.9 ** (THREADS * steps + 1),
                                       rtol=1e-4)
            together = sess.run(loss, feed)
    assert together < start / 10 and together < 6 * alone, (start, alone, together)
