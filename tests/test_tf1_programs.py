"""TF1 programs as people write them, run with only ``import gradflow as tf``.

The programs live in ``tests/tf1_programs/``. Each test runs one on a backend
(through ``$GRADFLOW_BACKEND``, as a user would switch) and checks its numbers:
against the same computation in NumPy where the program is deterministic,
against an accuracy floor where it trains a net.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import backend_params

import gradflow as gf

PROGRAMS = pathlib.Path(__file__).parent / "tf1_programs"


@pytest.fixture(params=backend_params())
def backend_name(request, monkeypatch):
    """The backend every ``tf.Session()`` of the program gets, by name."""
    monkeypatch.setenv("GRADFLOW_BACKEND", request.param)
    return request.param


@pytest.fixture(autouse=True)
def restore_graph_stack():
    """Programs call ``tf.Graph().as_default()`` without ``with``, as the tutorials do:
    take their graphs off the default stack afterwards."""
    saved = list(gf.graph._state.graph_stack)
    yield
    gf.graph._state.graph_stack[:] = saved


def load_program(name):
    """A fresh module object of ``tf1_programs/<name>.py``."""
    spec = importlib.util.spec_from_file_location(f"tf1_{name}", PROGRAMS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _DataSet:
    """TF1's ``mnist.train``: images flattened to [0, 1], one-hot labels, next_batch."""

    def __init__(self, images, labels):
        self.images = images.reshape(len(images), -1).astype(np.float32) / 255.0
        self.labels = np.eye(10, dtype=np.float32)[labels]
        self.num_examples = len(images)
        self._next = 0

    def next_batch(self, batch_size):
        if self._next + batch_size > self.num_examples:
            self._next = 0
        start, self._next = self._next, self._next + batch_size
        return self.images[start:self._next], self.labels[start:self._next]


class _MNIST:
    def __init__(self, train, test):
        self.train, self.test = _DataSet(*train), _DataSet(*test)


@pytest.fixture(scope="module")
def mnist_arrays():
    root = os.environ.get("GRADFLOW_DATA")
    if not root or not (pathlib.Path(root) / "mnist").is_dir():
        pytest.skip("the MNIST programs need the real digits: set GRADFLOW_DATA to a folder "
                    "with mnist/ (the tests never download)")
    (x_train, y_train), (x_test, y_test) = gf.data.mnist.load(download=False)
    return (x_train[:3000], y_train[:3000]), (x_test[:1000], y_test[:1000])


@pytest.fixture
def mnist(mnist_arrays):
    return _MNIST(*mnist_arrays)


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def test_logistic_regression_matches_numpy(backend_name, mnist):
    out = load_program("logistic_regression").main(mnist, epochs=2)
    # the same full-batch-gradient steps in NumPy, float32 as TF1 computes them
    train = _DataSet.__new__(_DataSet)
    train.__dict__.update(mnist.train.__dict__, _next=0)
    W = np.zeros((784, 10), np.float32)
    b = np.zeros(10, np.float32)
    costs = []
    batches = int(train.num_examples / 100)
    for _ in range(2):
        avg = 0.0
        for _ in range(batches):
            xs, ys = train.next_batch(100)
            p = _softmax(xs @ W + b)
            avg += float(np.mean(-np.sum(ys * np.log(p + 1e-10), axis=1))) / batches
            g = (p - ys) / len(xs)  # through softmax and log (the 1e-10 aside): p - y
            W -= np.float32(0.5) * (xs.T @ g).astype(np.float32)
            b -= np.float32(0.5) * g.sum(axis=0)
        costs.append(avg)
    np.testing.assert_allclose(out["costs"], costs, rtol=2e-3)
    assert out["dtype"] == np.float32  # "float" is float32, as in TF1
    assert out["accuracy"] > 0.8


def test_linear_regression_matches_numpy(backend_name):
    train_X = np.asarray([3.3, 4.4, 5.5, 6.71, 6.93, 4.168, 9.779, 6.182, 7.59, 2.167,
                          7.042, 10.791, 5.313, 7.997, 5.654, 9.27, 3.1])
    train_Y = np.asarray([1.7, 2.76, 2.09, 3.19, 1.694, 1.573, 3.366, 2.596, 2.53, 1.221,
                          2.827, 3.465, 1.65, 2.904, 2.42, 2.94, 1.3])
    out = load_program("linear_regression").main(train_X, train_Y, training_epochs=20)
    W, b, n = np.float32(0.3), np.float32(-0.2), len(train_X)
    lr = np.float32(0.01)
    for _ in range(20):
        for x, y in zip(train_X.astype(np.float32), train_Y.astype(np.float32)):
            err = W * x + b - y  # d/dW of (W x + b - y)^2 / (2 n)
            W, b = W - lr * err * x / n, b - lr * err / n
    cost = np.sum((W * train_X + b - train_Y) ** 2) / (2 * n)
    np.testing.assert_allclose([out["W"], out["b"]], [W, b], rtol=1e-4)
    np.testing.assert_allclose(out["cost"], cost, rtol=1e-4)


def test_deep_cnn_with_shapeless_keep_prob_trains(backend_name, mnist):
    if backend_name != "numpy":
        pytest.skip("the CNN trains on numpy only, to keep the suite short; its ops are "
                    "checked on every backend in test_ops")
    out = load_program("deep_cnn").main(mnist, steps=60)
    assert out["keep_prob_shape"].ndims is None  # a placeholder without a shape: unknown rank
    assert tuple(out["drop_shape"]) == (None, 64)  # dropout keeps x's shape
    assert out["accuracy"] > 0.6 > out["first"]


def test_multilayer_perceptron_trains(backend_name, mnist):
    if backend_name == "array_api_strict":
        pytest.skip("array_api_strict is slow for training; its ops are checked in test_ops")
    out = load_program("multilayer_perceptron").main(mnist, steps=150)
    assert out["accuracy"] > 0.85


def test_recurrent_network_with_contrib_rnn_trains(backend_name, mnist):
    if backend_name != "numpy":
        pytest.skip("trains on numpy only, to keep the suite short")
    out = load_program("recurrent_network").main(mnist, steps=80)
    assert out["accuracy"] > 0.5


def test_control_flow_program(backend_name):
    out = load_program("control_flow").main()
    x = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(out["train"], x * 2)
    np.testing.assert_allclose(out["eval"], x - 1)
    np.testing.assert_allclose(out["powered"], x * 1.5 ** 4, rtol=1e-6)
    np.testing.assert_allclose(out["grad_w"], x.sum() * 4 * 1.5 ** 3, rtol=1e-6)
    assert [int(r) for r in out["reads"]] == [1, 2, 3]  # identity after the assignment
    np.testing.assert_array_equal(out["checked"], x)
    assert "x has NaN" in out["nan_error"]


def test_shared_variables_program(backend_name):
    out = load_program("shared_variables").main()
    assert [n.split(":")[0] for n in out["names"]] == [
        "model/layer1/w", "model/layer1/b", "model/layer2/w", "model/layer2/b"]
    np.testing.assert_array_equal(out["a"], out["b"])
    np.testing.assert_array_equal(out["a"], out["c"])
    assert out["scope"] == ""


def test_tensorslow_affine_prints_integers(backend_name, capsys):
    output = load_program("tensorslow_affine").main()
    np.testing.assert_array_equal(output, [2, -1])
    assert np.asarray(output).dtype.kind == "i"
    assert capsys.readouterr().out.strip() == "[ 2 -1]"


def test_app_run_parses_flags():
    env = dict(os.environ, GRADFLOW_BACKEND="numpy")
    done = subprocess.run([sys.executable, str(PROGRAMS / "app_flags.py"), "--steps", "2",
                           "--learning_rate=0.25", "--name", "trial"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # x <- x - 0.25 * 2x twice: 5 * 0.5 ** 2
    assert done.stdout.strip() == "x=1.250000 name=trial steps=2"


def test_autoencoder_with_decay_weight_decay_and_checkpoints(backend_name, mnist, tmp_path):
    if backend_name == "array_api_strict":
        pytest.skip("array_api_strict is slow for training; its ops are checked in test_ops")
    out = load_program("autoencoder").main(mnist, str(tmp_path), steps=200)
    # exponential_decay(0.01, global_step, 50, 0.5, staircase=True), read before each step
    np.testing.assert_allclose(out["rates"], [0.01 * 0.5 ** (i // 50) for i in range(200)],
                               rtol=1e-6)
    assert out["losses"][-1] < 0.1 < 0.2 < out["losses"][0]
    assert out["test_loss"] < 0.1
    # the Saver round trip: get_checkpoint_state names the last of max_to_keep=3
    assert out["step"] == 200
    assert out["checkpoint"] == str(tmp_path / "model.ckpt-200")
    assert out["all_checkpoints"] == [str(tmp_path / f"model.ckpt-{s}") for s in (100, 150, 200)]
    np.testing.assert_array_equal(out["restored"], out["trained"])
    np.testing.assert_allclose(out["restored_loss"], out["test_loss"], rtol=1e-5)
    assert [n.split(":")[0] for n in out["names"]] == [
        "decoder/sigmoid_1", "loss/divide", "weights/Variable"]


def test_tensor_idioms_program(backend_name):
    images = np.arange(5 * 12, dtype=np.float32).reshape(5, 4, 3) / 7.0
    out = load_program("tensor_idioms").main(images)
    assert out["n_features"] == 12 and out["dims"] == [None, 4, 3]  # Dimension.value
    assert out["flat_shape"] == [None, 12]  # reshape to [tf.shape(x)[0], -1], as TF1 infers
    assert tuple(out["state_shape"]) == (None, 2)  # zeros([tf.shape(x)[0], 2])
    W = (np.arange(24, dtype=np.float32) / np.float32(10.0)).reshape(12, 2)
    expected = images.reshape(5, -1) @ W
    np.testing.assert_array_equal(out["W"], W)
    np.testing.assert_allclose(out["fetched"]["logits"], expected, rtol=1e-5)
    np.testing.assert_allclose(out["fetched"]["total"], expected, rtol=1e-5)  # keep_prob 1.0
    np.testing.assert_array_equal(out["fetched"]["ones"], np.ones((5, 1), np.int32))
    np.testing.assert_allclose(out["by_name"], expected, rtol=1e-5)
    np.testing.assert_allclose(out["batches"], expected, rtol=1e-5)
    kept = out["trained"] != 0  # is_training fed True: keep_prob 0.5 scales by 2
    np.testing.assert_allclose(out["trained"][kept], 2 * expected[kept], rtol=1e-5)
    assert [n.split(":")[0] for n in out["names"]] == ["dense/W", "dense/b", "dense/add"]


def test_word_embeddings_program(backend_name):
    out = load_program("word_embeddings").main()
    assert out["losses"][-1] < 0.1 < 2.0 < out["losses"][0]
    np.testing.assert_array_equal(out["predicted"], (out["words"] + 1) % 12)
    np.testing.assert_allclose(np.linalg.norm(out["embeddings"], axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(out["similarity"], out["embeddings"][[1, 2]] @ out["embeddings"].T,
                               rtol=1e-4, atol=1e-6)


def _real_mnist_or_skip():
    root = os.environ.get("GRADFLOW_DATA")
    if not root or not (pathlib.Path(root) / "mnist").is_dir():
        pytest.skip("the MNIST tutorial reads the real digits: set GRADFLOW_DATA to a folder "
                    "with mnist/ (the tests never download)")


def test_mnist_softmax_tutorial_with_input_data(backend_name, tmp_path):
    """The classic tutorial, unchanged but for its imports: read_data_sets finds no files in
    its data_dir and falls back to $GRADFLOW_DATA/mnist."""
    _real_mnist_or_skip()
    steps = 1000 if backend_name == "numpy" else 300  # the others, shorter: same ops
    # in a process of its own: the tutorial's MNIST (TF1's float32 copy, 220 MB) and its
    # first use of each backend are the test process's largest peak otherwise
    runner = ("import importlib.util, json, sys\n"
              "spec = importlib.util.spec_from_file_location('tf1_mnist_softmax', sys.argv[1])\n"
              "module = importlib.util.module_from_spec(spec)\n"
              "spec.loader.exec_module(module)\n"
              "out = module.train_and_test(sys.argv[2], int(sys.argv[3]))\n"
              "print(json.dumps([out['mnist'].train.epochs_completed, float(out['accuracy'])]))\n")
    done = subprocess.run([sys.executable, "-c", runner, str(PROGRAMS / "mnist_softmax.py"),
                           str(tmp_path / "MNIST_data"), str(steps)],
                          capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert done.returncode == 0, done.stderr
    epochs, accuracy = json.loads(done.stdout.strip().splitlines()[-1])
    assert epochs == (1 if steps == 1000 else 0)
    assert accuracy > (0.9 if steps == 1000 else 0.88)
    assert not (tmp_path / "MNIST_data").exists()  # nothing downloaded


def test_mnist_softmax_tutorial_runs_as_a_script(tmp_path):
    _real_mnist_or_skip()
    env = dict(os.environ, GRADFLOW_BACKEND="numpy")
    done = subprocess.run([sys.executable, str(PROGRAMS / "mnist_softmax.py"),
                           "--data_dir", str(tmp_path / "input_data")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert 0.9 < float(done.stdout.strip().splitlines()[-1]) < 0.95  # about 0.92


def _mnist_like():
    """MNIST-shaped data with a learnable rule, 600 examples to train on and 200 to test:
    784 pixels in [0, 1], labels of a random linear teacher."""
    rng = np.random.default_rng(0)
    images = rng.random((800, 784), dtype=np.float32)
    labels = (images @ rng.normal(size=(784, 10))).argmax(1).astype(np.int64)
    return images[:600], labels[:600], images[600:], labels[600:]


def _softmax_regression_numpy(images, labels, test_images, test_labels, epochs, batch_size,
                              learning_rate):
    """What mnist_dataset.py computes when its shuffle keeps the order (buffer_size=1)."""
    W, b = np.zeros((784, 10)), np.zeros(10)
    losses = []
    for _ in range(epochs):
        batch_losses = []
        for start in range(0, len(images), batch_size):
            x = images[start:start + batch_size].astype(np.float64)
            y = np.eye(10)[labels[start:start + batch_size]]
            z = x @ W + b
            p = np.exp(z - z.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            batch_losses.append(-np.mean(np.sum(y * np.log(p), 1)))
            W -= learning_rate * x.T @ (p - y) / len(x)
            b -= learning_rate * (p - y).mean(0)
        losses.append(np.mean(batch_losses))
    accuracy = np.mean((test_images @ W + b).argmax(1) == test_labels)
    return losses, W, accuracy


def test_mnist_dataset_initializable_iterator_matches_numpy(backend_name, capsys):
    """make_initializable_iterator fed through placeholders, epochs ended by
    OutOfRangeError: the same numbers as NumPy (buffer_size=1 keeps the order)."""
    images, labels, test_images, test_labels = _mnist_like()
    out = load_program("mnist_dataset").main(images, labels, test_images, test_labels,
                                             epochs=2, batch_size=128, buffer_size=1,
                                             learning_rate=0.01)
    losses, W, accuracy = _softmax_regression_numpy(images, labels, test_images, test_labels,
                                                    epochs=2, batch_size=128,
                                                    learning_rate=0.01)
    assert out["steps"] == 2 * 5  # 600 rows: four batches of 128 and one of 88 per epoch
    np.testing.assert_allclose(out["losses"], losses, rtol=1e-4)
    np.testing.assert_allclose(out["W"], W, atol=1e-4)
    assert abs(out["accuracy"] - accuracy) < 1e-6 and out["dtype"] == np.float32
    assert "Epoch 2, loss" in capsys.readouterr().out


def test_mnist_dataset_shuffled_is_the_same_on_every_backend(backend_name, monkeypatch):
    """A seeded shuffle draws on the host: every backend trains on the same batches."""
    images, labels, test_images, test_labels = _mnist_like()
    program = load_program("mnist_dataset")
    out = program.main(images, labels, test_images, test_labels, epochs=3, learning_rate=0.01)
    monkeypatch.setenv("GRADFLOW_BACKEND", "numpy")
    ref = program.main(images, labels, test_images, test_labels, epochs=3, learning_rate=0.01)
    np.testing.assert_allclose(out["W"], ref["W"], atol=1e-5)
    assert out["steps"] == 3 * 6 and out["losses"][2] < out["losses"][0]
    assert out["accuracy"] > 0.5  # from 0.1 by chance, on 600 examples of a linear rule


def test_mnist_dataset_on_real_digits(backend_name, mnist_arrays):
    (x_train, y_train), (x_test, y_test) = mnist_arrays
    flat = [(x.reshape(len(x), -1) / np.float32(255.0)).astype(np.float32)
            for x in (x_train, x_test)]
    out = load_program("mnist_dataset").main(flat[0], y_train.astype(np.int64), flat[1],
                                             y_test.astype(np.int64), epochs=5)
    # softmax regression, 150 steps of 100 of the first 3,000 digits: 0.831 after 2 epochs
    assert out["accuracy"] > 0.86


def test_reinitializable_iterator_switches_train_and_validation(backend_name):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.1).astype(np.float32)
    history = load_program("reinitializable_iterator").main(x[:160], y[:160], x[160:], y[160:])
    assert [h["train_batches"] for h in history] == [5] * 4  # 160 rows, batches of 32
    assert [h["val_count"] for h in history] == [40] * 4
    assert history[-1]["val_loss"] < 0.5 * history[0]["val_loss"]
    assert history[0]["val_loss"] < float(np.mean(y[160:] ** 2))  # it learned something


def test_the_fully_connected_feed_tutorials_mnist_module(backend_name):
    """``tensorflow.examples.tutorials.mnist.mnist`` (inference, loss, training,
    evaluation), as TF1's ``fully_connected_feed.py`` uses it, on a separable toy set."""
    pytest.importorskip("tensorboardX", reason="mnist.training adds a loss summary, which "
                        "needs tensorboardX (pip install tensorboardX crc32c)")
    import gradflow as tf
    from gradflow.examples.tutorials.mnist import mnist

    rng = np.random.default_rng(0)
    labels_np = rng.integers(0, 10, 200)
    images_np = rng.normal(0, 0.1, (200, mnist.IMAGE_PIXELS)).astype(np.float32)
    images_np[np.arange(200), labels_np * 7] += 3.0  # one bright pixel per class
    with tf.Graph().as_default() as graph:
        images = tf.placeholder(tf.float32, (None, mnist.IMAGE_PIXELS))
        labels = tf.placeholder(tf.int32, (None,))
        logits = mnist.inference(images, 32, 16)
        loss = mnist.loss(logits, labels)
        train_op = mnist.training(loss, 0.1)
        correct = mnist.evaluation(logits, labels)
        names = sorted(v.op.name for v in tf.global_variables())
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            feed = {images: images_np, labels: labels_np}
            before = sess.run(correct, feed)
            for _ in range(150):
                sess.run(train_op, feed)
            after, step = sess.run([correct, "global_step:0"], feed)
    assert names == ["global_step", "hidden1/biases", "hidden1/weights", "hidden2/biases",
                     "hidden2/weights", "softmax_linear/biases", "softmax_linear/weights"]
    assert step == 150 and before < 60 and after >= 190
