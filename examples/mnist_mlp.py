"""Train a 784-512-512-10 ReLU MLP on MNIST with Adam: gradflow's main job.

    GRADFLOW_DATA=../shared/data python examples/mnist_mlp.py --epochs 3
    python examples/mnist_mlp.py --backend cupy --data-dir /path/to/mnist
    python examples/mnist_mlp.py --checkpoint-dir ckpt --resume --epochs 5

Shows a progress bar per epoch, the test accuracy after each epoch, and saves
a PNG of the loss and accuracy curves. With ``--checkpoint-dir`` it saves a
checkpoint after each epoch (weights, Adam's slots, the global step and the
epoch count); ``--resume`` continues from the latest one.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import gradflow as gf


def build_model(seed):
    """Placeholders, logits, loss, accuracy, the Adam training op and a Saver."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        x = gf.placeholder(gf.float32, (None, 784), name="x")
        y = gf.placeholder(gf.int64, (None,), name="y")
        init = gf.he_normal_initializer()
        h = gf.layers.dense(x, 512, activation=gf.nn.relu, kernel_initializer=init)
        h = gf.layers.dense(h, 512, activation=gf.nn.relu, kernel_initializer=init)
        logits = gf.layers.dense(h, 10)
        loss = gf.reduce_mean(
            gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        correct = gf.equal(gf.argmax(logits, axis=1), y)
        accuracy = gf.reduce_mean(gf.cast(correct, gf.float32))
        step = gf.train.get_or_create_global_step()
        train_op = gf.train.AdamOptimizer(1e-3).minimize(loss, global_step=step)
        epoch = gf.Variable(np.int64(0), trainable=False, name="epoch", dtype=gf.int64)
        next_epoch = gf.assign_add(epoch, 1)
        init_op = gf.global_variables_initializer()
        saver = gf.train.Saver(max_to_keep=3)
    return graph, dict(x=x, y=y, loss=loss, accuracy=accuracy, train=train_op, init=init_op,
                       step=step, epoch=epoch, next_epoch=next_epoch, saver=saver)


def start(sess, m, checkpoint_dir, resume):
    """Initialize the variables, or restore the latest checkpoint; return the epochs done."""
    latest = gf.train.latest_checkpoint(checkpoint_dir) if resume else None
    if latest is None:
        if resume:
            print(f"no checkpoint in {checkpoint_dir}; starting from scratch")
        sess.run(m["init"])
        return 0
    m["saver"].restore(sess, latest)
    done = int(sess.run(m["epoch"]))
    print(f"resumed from {latest} (epoch {done}, step {int(sess.run(m['step']))})")
    return done


def evaluate(sess, m, images, labels, batch_size=1000):
    correct = 0.0
    for xb, yb in gf.data.batches(images, labels, batch_size=batch_size, shuffle=False):
        correct += sess.run(m["accuracy"], {m["x"]: xb, m["y"]: yb}) * len(xb)
    return correct / len(images)


def save_curves(path, losses, accuracies):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(losses, lw=0.5)
    ax1.set(xlabel="step", ylabel="training loss", yscale="log", title="loss")
    ax2.plot(range(1, len(accuracies) + 1), [100 * a for a in accuracies], marker="o")
    ax2.set(xlabel="epoch", ylabel="test accuracy (%)", title="accuracy")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description="MNIST MLP (784-512-512-10, Adam)")
    parser.add_argument("--backend", default=None, help="numpy, cupy, torch, array_api_strict")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--limit", type=int, default=None, help="use only N training images")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="save a checkpoint here after each epoch")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the latest checkpoint in --checkpoint-dir")
    args = parser.parse_args(argv)
    if args.resume and not args.checkpoint_dir:
        parser.error("--resume needs --checkpoint-dir")
    from tqdm import tqdm

    (x_train, y_train), (x_test, y_test) = gf.data.mnist.load(args.data_dir)
    x_train = x_train.reshape(-1, 784).astype(np.float32) / 255.0
    x_test = x_test.reshape(-1, 784).astype(np.float32) / 255.0
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    graph, m = build_model(args.seed)
    losses, accuracies = [], []
    os.makedirs(args.out, exist_ok=True)
    with gf.Session(graph=graph, backend=args.backend) as sess:
        done = start(sess, m, args.checkpoint_dir, args.resume)
        for epoch in range(done + 1, args.epochs + 1):
            start_time = time.perf_counter()
            steps = gf.data.batches(x_train, y_train, batch_size=args.batch_size,
                                    seed=args.seed + epoch)
            bar = tqdm(steps, total=-(-len(x_train) // args.batch_size),
                       desc=f"epoch {epoch}/{args.epochs}", leave=False)
            for xb, yb in bar:
                _, loss = sess.run([m["train"], m["loss"]], {m["x"]: xb, m["y"]: yb})
                losses.append(float(loss))
                if len(losses) % 50 == 0:
                    bar.set_postfix(loss=f"{loss:.4f}")
            accuracies.append(evaluate(sess, m, x_test, y_test))
            print(f"epoch {epoch}: test accuracy {100 * accuracies[-1]:.2f}% "
                  f"({time.perf_counter() - start_time:.1f} s, backend {sess.backend.name})")
            sess.run(m["next_epoch"])
            if args.checkpoint_dir:
                path = m["saver"].save(sess, os.path.join(args.checkpoint_dir, "model"),
                                       global_step=m["step"])
                print(f"saved {path}")
        if not accuracies:  # resumed with every epoch already done
            accuracies.append(evaluate(sess, m, x_test, y_test))
    png = os.path.join(args.out, "mnist_mlp_curves.png")
    save_curves(png, losses, accuracies)
    print(f"saved {png}")
    return {"accuracy": accuracies[-1], "accuracies": accuracies, "png": png}


if __name__ == "__main__":
    main()
