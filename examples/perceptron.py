"""A perceptron separates two Gaussian clusters, as in the tutorial's first training example.

Fifty red points around (-2, -2) and fifty blue points around (2, 2)
(seeded NumPy, unit spread) are classified by ``p = softmax(X W + b)``,
trained by ``gf.train.GradientDescentOptimizer`` on the cross-entropy
``J = -sum(c * log p)`` over all points, where ``c`` is the one-hot class.
The graph uses the tutorial's free functions (``gf.softmax``, ``gf.log``,
``gf.multiply``, ``gf.negative``, ``gf.reduce_sum``). It prints the loss every
so often and the final accuracy, and saves the decision boundary as a PNG
under ``--out``.

Run it with::

    python examples/perceptron.py                      # numpy (or $GRADFLOW_BACKEND)
    python examples/perceptron.py --backend torch --steps 200 --out out/
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

COLORS = ("tab:red", "tab:blue")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None,
                        help="array backend (default: $GRADFLOW_BACKEND, else numpy)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and initial weights")
    parser.add_argument("--steps", type=int, default=100, help="gradient-descent steps")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--points", type=int, default=50, help="points per cluster")
    parser.add_argument("--out", default="out/", help="folder for the PNG")
    args = parser.parse_args(argv)
    tools.check_backend(parser, args.backend)  # one line, before anything is built
    return args


def clusters(rng, n):
    """``n`` red points around (-2, -2) (class 0) and ``n`` blue around (2, 2) (class 1)."""
    red = rng.standard_normal((n, 2)) + np.array([-2.0, -2.0])
    blue = rng.standard_normal((n, 2)) + np.array([2.0, 2.0])
    points = np.concatenate([red, blue]).astype(np.float32)
    classes = np.repeat([0, 1], n)
    return points, classes


def save_boundary(path, sess, X, p, points, classes, title):
    """P(blue) over a grid, the 0.5 level set (the decision boundary) and the points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lo, hi = points.min() - 1.0, points.max() + 1.0
    ticks = np.linspace(lo, hi, 151, dtype=np.float32)
    gx, gy = np.meshgrid(ticks, ticks)
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    z = sess.run(p, feed_dict={X: grid})[:, 1].reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.contourf(gx, gy, z, levels=np.linspace(0, 1, 11), cmap="coolwarm_r", alpha=0.6)
    ax.contour(gx, gy, z, levels=[0.5], colors="k", linewidths=1.5)
    for k, name in enumerate(("red", "blue")):
        ax.scatter(points[classes == k, 0], points[classes == k, 1], c=COLORS[k],
                   edgecolors="k", linewidths=0.5, s=25, label=name)
    ax.set(title=title, xlabel="x1", ylabel="x2", aspect="equal")
    ax.legend(loc="upper left")
    fig.savefig(path, dpi=80, bbox_inches="tight")
    plt.close(fig)


def main(argv=None):
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    points, classes = clusters(rng, args.points)
    onehot = np.eye(2, dtype=np.float32)[classes]
    start = time.perf_counter()
    with gf.Graph().as_default():
        X = gf.placeholder(gf.float32, shape=(None, 2), name="X")
        c = gf.placeholder(gf.float32, shape=(None, 2), name="c")
        W = gf.Variable(rng.standard_normal((2, 2)).astype(np.float32), name="W")
        b = gf.Variable(rng.standard_normal(2).astype(np.float32), name="b")
        p = gf.softmax(gf.add(gf.matmul(X, W), b))
        J = gf.negative(gf.reduce_sum(gf.reduce_sum(gf.multiply(c, gf.log(p)), axis=1)))
        minimization_op = gf.train.GradientDescentOptimizer(args.learning_rate).minimize(J)

        with gf.Session(backend=args.backend) as sess:
            sess.run(gf.global_variables_initializer())
            feed = {X: points, c: onehot}
            for step in range(args.steps):
                _, loss = sess.run([minimization_op, J], feed_dict=feed)
                if step % max(1, args.steps // 10) == 0:
                    print(f"step {step:4d}  loss {loss:.4f}")
            loss, probs, W_value, b_value = sess.run([J, p, W, b], feed_dict=feed)
            accuracy = float(np.mean(np.argmax(probs, axis=1) == classes))
            seconds = time.perf_counter() - start

            os.makedirs(args.out, exist_ok=True)
            path = tools.png_path(args.out, "perceptron_boundary", sess.backend.name)
            save_boundary(path, sess, X, p, points, classes,
                          f"perceptron after {args.steps} steps")
    print(f"final loss {float(loss):.4f}  accuracy {accuracy:.0%}  "
          f"({args.steps} steps in {seconds:.2f}s)")
    print(f"W = {W_value.tolist()}  b = {b_value.tolist()}")
    print(f"saved {path}")
    return {"loss": float(loss), "accuracy": accuracy, "W": W_value, "b": b_value,
            "outputs": [path], "seconds": seconds}


if __name__ == "__main__":
    main()
