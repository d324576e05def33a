"""A two-layer network learns the disk of radius 0.5 centred at (0.5, 0.5).

Training points are drawn uniformly from the unit square (seeded NumPy) and
labelled 1 inside the disk, 0 outside. The network is
``sigmoid(act(x' W1 + b1) W2 + b2)`` with ``x' = 2 (x - 0.5)`` (the square
mapped to [-1, 1]^2 inside the graph) and ``act`` = tanh or ReLU, trained by
full-batch gradient descent with momentum on the mean binary cross-entropy
(``gf.nn.sigmoid_cross_entropy_with_logits``). It prints the final loss and
the accuracy on the training points and on fresh test points, and saves two
PNGs under ``--out``: the learned output over [0, 1]^2 with the training
points, and the loss curve.

Run it with::

    python examples/disk.py                             # tanh, numpy backend
    python examples/disk.py --activation relu --backend torch --out out/
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import example_tools as tools  # noqa: E402

import gradflow as gf  # noqa: E402

ACTIVATIONS = {"tanh": gf.nn.tanh, "relu": gf.nn.relu}
CENTRE, RADIUS = np.array([0.5, 0.5], np.float32), 0.5


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None,
                        help="array backend (default: $GRADFLOW_BACKEND, else numpy)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and initial weights")
    parser.add_argument("--steps", type=int, default=2000, help="gradient-descent steps")
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--hidden", type=int, default=16, help="units in the hidden layer")
    parser.add_argument("--points", type=int, default=500, help="training points")
    parser.add_argument("--activation", choices=sorted(ACTIVATIONS), default="tanh",
                        help="activation of the hidden layer")
    parser.add_argument("--out", default="out/", help="folder for the PNGs")
    args = parser.parse_args(argv)
    tools.check_backend(parser, args.backend)  # one line, before anything is built
    return args


def disk_data(rng, n):
    """``n`` uniform points of the unit square, labelled 1 inside the disk."""
    x = rng.uniform(0.0, 1.0, size=(n, 2)).astype(np.float32)
    y = (np.sum((x - CENTRE) ** 2, axis=1, keepdims=True) < RADIUS ** 2).astype(np.float32)
    return x, y


def init_weights(rng, fan_in, fan_out, activation):
    """Glorot-style initial weights for tanh, He-style for ReLU, from a seeded host RNG."""
    scale = np.sqrt(2.0 / fan_in) if activation == "relu" else np.sqrt(1.0 / fan_in)
    return (rng.standard_normal((fan_in, fan_out)) * scale).astype(np.float32)


def build_model(activation, hidden, rng):
    """Placeholders, output probability and the mean cross-entropy loss."""
    x = gf.placeholder(gf.float32, shape=(None, 2), name="x")
    y = gf.placeholder(gf.float32, shape=(None, 1), name="y")
    w1 = gf.Variable(init_weights(rng, 2, hidden, activation), name="W1")
    b1 = gf.Variable(np.zeros(hidden, np.float32), name="b1")
    w2 = gf.Variable(init_weights(rng, hidden, 1, "tanh"), name="W2")
    b2 = gf.Variable(np.zeros(1, np.float32), name="b2")
    centred = (x - 0.5) * 2.0
    h = ACTIVATIONS[activation](gf.matmul(centred, w1) + b1)
    logits = gf.matmul(h, w2) + b2
    prob = gf.sigmoid(logits, name="prob")
    loss = gf.reduce_mean(gf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits),
                          name="loss")
    return x, y, prob, loss


def save_region(path, sess, x, prob, points, labels, title):
    """The network's output over a grid on [0, 1]^2, the true circle and the training points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ticks = np.linspace(0.0, 1.0, 201, dtype=np.float32)
    gx, gy = np.meshgrid(ticks, ticks)
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    z = sess.run(prob, feed_dict={x: grid}).reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(5, 5))
    image = ax.imshow(z, origin="lower", extent=(0, 1, 0, 1), cmap="coolwarm",
                      vmin=0.0, vmax=1.0)
    ax.contour(gx, gy, z, levels=[0.5], colors="k", linewidths=1)
    ax.add_patch(plt.Circle(tuple(CENTRE), RADIUS, fill=False, ls="--", color="w"))
    labels = labels.ravel()
    ax.scatter(points[labels == 0, 0], points[labels == 0, 1], c="tab:blue",
               edgecolors="k", linewidths=0.5, s=12, label="outside")
    ax.scatter(points[labels == 1, 0], points[labels == 1, 1], c="tab:red",
               edgecolors="k", linewidths=0.5, s=12, label="inside")
    ax.set(title=title, xlabel="x1", ylabel="x2", xlim=(0, 1), ylim=(0, 1))
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="network output")
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def save_loss_curve(path, losses, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(np.arange(1, len(losses) + 1), losses)
    ax.set(title=title, xlabel="step", ylabel="mean cross-entropy", yscale="log")
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    points, labels = disk_data(rng, args.points)
    test_points, test_labels = disk_data(rng, 2000)
    start = time.perf_counter()
    with gf.Graph().as_default():
        x, y, prob, loss = build_model(args.activation, args.hidden, rng)
        optimizer = gf.train.MomentumOptimizer(args.learning_rate, args.momentum)
        train_op = optimizer.minimize(loss)
        with gf.Session(backend=args.backend) as sess:
            sess.run(gf.global_variables_initializer())
            feed = {x: points, y: labels}
            losses = []
            for step in range(args.steps):
                _, value = sess.run([train_op, loss], feed_dict=feed)
                losses.append(float(value))
                if step % max(1, args.steps // 5) == 0:
                    print(f"step {step:5d}  loss {value:.4f}")
            final_loss, p = sess.run([loss, prob], feed_dict=feed)
            accuracy = float(np.mean((p > 0.5) == (labels > 0.5)))
            p_test = sess.run(prob, feed_dict={x: test_points})
            test_accuracy = float(np.mean((p_test > 0.5) == (test_labels > 0.5)))
            seconds = time.perf_counter() - start

            os.makedirs(args.out, exist_ok=True)
            region = tools.png_path(args.out, f"disk_{args.activation}_region", sess.backend.name)
            curve = tools.png_path(args.out, f"disk_{args.activation}_loss", sess.backend.name)
            save_region(region, sess, x, prob, points, labels,
                        f"disk, {args.activation} hidden layer")
    save_loss_curve(curve, losses, f"disk, {args.activation}: training loss")
    print(f"final loss {float(final_loss):.4f}  accuracy {accuracy:.1%} (train), "
          f"{test_accuracy:.1%} (test)  ({args.steps} steps in {seconds:.2f}s)")
    print(f"saved {region} and {curve}")
    return {"loss": float(final_loss), "accuracy": accuracy, "test_accuracy": test_accuracy,
            "losses": losses, "outputs": [region, curve], "seconds": seconds}


if __name__ == "__main__":
    main()
