"""A two-layer network learns XOR, the smallest problem a linear model cannot solve.

The four points of {0, 1}^2 are labelled ``x1 XOR x2``. The network is
``sigmoid(act(x W1 + b1) W2 + b2)`` with ``act`` = tanh or ReLU, trained by
full-batch gradient descent on the mean binary cross-entropy
(``gf.nn.sigmoid_cross_entropy_with_logits``). It prints the final loss and
accuracy and saves two PNGs under ``--out``: the learned output over
[-0.5, 1.5]^2 with the four points, and the loss curve.

Run it with::

    python examples/xor.py                              # tanh, numpy backend
    python examples/xor.py --activation relu --backend torch --out out/
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


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None,
                        help="array backend (default: $GRADFLOW_BACKEND, else numpy)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights")
    parser.add_argument("--steps", type=int, default=1000, help="gradient-descent steps")
    parser.add_argument("--learning-rate", type=float, default=0.5)
    parser.add_argument("--hidden", type=int, default=8, help="units in the hidden layer")
    parser.add_argument("--activation", choices=sorted(ACTIVATIONS), default="tanh",
                        help="activation of the hidden layer")
    parser.add_argument("--out", default="out/", help="folder for the PNGs")
    args = parser.parse_args(argv)
    tools.check_backend(parser, args.backend)  # one line, before anything is built
    return args


def xor_data():
    """The four boolean points and their XOR labels, as float32 arrays."""
    x = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
    y = np.array([[0], [1], [1], [0]], dtype=np.float32)
    return x, y


def init_weights(rng, fan_in, fan_out, activation):
    """Glorot-style initial weights for tanh, He-style for ReLU, from a seeded host RNG."""
    scale = np.sqrt(2.0 / fan_in) if activation == "relu" else np.sqrt(1.0 / fan_in)
    return (rng.standard_normal((fan_in, fan_out)) * scale).astype(np.float32)


def build_model(activation, hidden, rng):
    """Placeholders, output probability, logits and the mean cross-entropy loss."""
    x = gf.placeholder(gf.float32, shape=(None, 2), name="x")
    y = gf.placeholder(gf.float32, shape=(None, 1), name="y")
    w1 = gf.Variable(init_weights(rng, 2, hidden, activation), name="W1")
    b1 = gf.Variable(np.zeros(hidden, np.float32), name="b1")
    w2 = gf.Variable(init_weights(rng, hidden, 1, "tanh"), name="W2")
    b2 = gf.Variable(np.zeros(1, np.float32), name="b2")
    h = ACTIVATIONS[activation](gf.matmul(x, w1) + b1)
    logits = gf.matmul(h, w2) + b2
    prob = gf.sigmoid(logits, name="prob")
    loss = gf.reduce_mean(gf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits),
                          name="loss")
    return x, y, prob, loss


def save_region(path, sess, x, prob, points, labels, lims, title):
    """The network's output over a grid on ``lims`` x ``lims``, with the training points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ticks = np.linspace(lims[0], lims[1], 201, dtype=np.float32)
    gx, gy = np.meshgrid(ticks, ticks)
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    z = sess.run(prob, feed_dict={x: grid}).reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(5, 5))
    image = ax.imshow(z, origin="lower", extent=(*lims, *lims), cmap="coolwarm",
                      vmin=0.0, vmax=1.0)
    ax.contour(gx, gy, z, levels=[0.5], colors="k", linewidths=1)
    labels = labels.ravel()
    ax.scatter(points[labels == 0, 0], points[labels == 0, 1], c="tab:blue",
               edgecolors="k", s=60, label="0")
    ax.scatter(points[labels == 1, 0], points[labels == 1, 1], c="tab:red",
               edgecolors="k", s=60, label="1")
    ax.set(title=title, xlabel="x1", ylabel="x2")
    ax.legend(loc="upper right")
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
    points, labels = xor_data()
    start = time.perf_counter()
    with gf.Graph().as_default():
        x, y, prob, loss = build_model(args.activation, args.hidden, rng)
        train_op = gf.train.GradientDescentOptimizer(args.learning_rate).minimize(loss)
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
            seconds = time.perf_counter() - start

            os.makedirs(args.out, exist_ok=True)
            region = tools.png_path(args.out, f"xor_{args.activation}_region", sess.backend.name)
            curve = tools.png_path(args.out, f"xor_{args.activation}_loss", sess.backend.name)
            save_region(region, sess, x, prob, points, labels, (-0.5, 1.5),
                        f"XOR, {args.activation} hidden layer")
    save_loss_curve(curve, losses, f"XOR, {args.activation}: training loss")
    print(f"final loss {float(final_loss):.4f}  accuracy {accuracy:.0%}  "
          f"({args.steps} steps in {seconds:.2f}s)")
    print(f"saved {region} and {curve}")
    return {"loss": float(final_loss), "accuracy": accuracy, "losses": losses,
            "outputs": [region, curve], "seconds": seconds}


if __name__ == "__main__":
    main()
