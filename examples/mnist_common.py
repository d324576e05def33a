"""What the MNIST examples share: flags, data, the training loop, checkpoints, curves.

``mnist_mlp.py`` and ``mnist_cnn.py`` each build their own model (logits from
the images) and hand it to ``finish_model`` and ``train`` here.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from example_tools import save_curves, start

import gradflow as gf


def make_parser(description, epochs, batch_size, lr, decay):
    """The flags both examples take; the defaults are each model's tuned settings."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--backend", default=None, help="numpy, cupy, torch, array_api_strict")
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--lr", type=float, default=lr, help="Adam's initial learning rate")
    parser.add_argument("--decay", type=float, default=decay,
                        help="the learning rate is multiplied by this once per epoch")
    parser.add_argument("--data-dir", default=None,
                        help="folder with the MNIST files (default: $GRADFLOW_DATA/mnist)")
    parser.add_argument("--limit", type=int, default=None, help="use only N training images")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out", help="folder for the PNG of the curves")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="save a checkpoint here after each epoch")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the latest checkpoint in --checkpoint-dir")
    return parser


def parse(parser, argv):
    args = parser.parse_args(argv)
    if args.resume and not args.checkpoint_dir:
        parser.error("--resume needs --checkpoint-dir")
    return args


def load_data(args, image_shape):
    """Train and test images as float32 in [0, 1] shaped ``(-1,) + image_shape``, int64 labels."""
    (x_train, y_train), (x_test, y_test) = gf.data.mnist.load(args.data_dir)
    x_train = x_train.reshape((-1,) + image_shape).astype(np.float32) / 255.0
    x_test = x_test.reshape((-1,) + image_shape).astype(np.float32) / 255.0
    if args.limit:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    return x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64)


def finish_model(x, y, logits, args, steps_per_epoch, training=None):
    """Loss, accuracy, Adam with a per-epoch decay, the epoch counter and a Saver.

    Call inside the model's graph. ``training`` is a bool placeholder fed True
    while training (for dropout), or None.
    """
    loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    correct = gf.equal(gf.argmax(logits, axis=1), y)
    accuracy = gf.reduce_mean(gf.cast(correct, gf.float32))
    step = gf.train.get_or_create_global_step()
    lr = gf.train.exponential_decay(args.lr, step, steps_per_epoch, args.decay, staircase=True)
    train_op = gf.train.AdamOptimizer(lr).minimize(loss, global_step=step)
    epoch = gf.Variable(np.int64(0), trainable=False, name="epoch", dtype=gf.int64)
    return dict(x=x, y=y, loss=loss, accuracy=accuracy, train=train_op, step=step, epoch=epoch,
                next_epoch=gf.assign_add(epoch, 1), training=training,
                init=gf.global_variables_initializer(), saver=gf.train.Saver(max_to_keep=3))


def evaluate(sess, m, images, labels, batch_size=1000):
    """Accuracy over all of ``images`` (dropout off: ``training`` keeps its default)."""
    correct = 0.0
    for xb, yb in gf.data.batches(images, labels, batch_size=batch_size, shuffle=False):
        correct += sess.run(m["accuracy"], {m["x"]: xb, m["y"]: yb}) * len(xb)
    return correct / len(images)


def train(args, graph, m, data, name):
    """The epoch loop: progress bar, test accuracy, checkpoint, PNG; returns the results."""
    from tqdm import tqdm

    x_train, y_train, x_test, y_test = data
    losses, accuracies = [], []
    os.makedirs(args.out, exist_ok=True)
    on = {m["training"]: True} if m["training"] is not None else {}
    with gf.Session(graph=graph, backend=args.backend) as sess:
        done = start(sess, m, args.checkpoint_dir, args.resume)
        for epoch in range(done + 1, args.epochs + 1):
            start_time = time.perf_counter()
            steps = gf.data.batches(x_train, y_train, batch_size=args.batch_size,
                                    seed=args.seed + epoch)
            bar = tqdm(steps, total=-(-len(x_train) // args.batch_size),
                       desc=f"epoch {epoch}/{args.epochs}", leave=False)
            for xb, yb in bar:
                _, loss = sess.run([m["train"], m["loss"]], {m["x"]: xb, m["y"]: yb, **on})
                losses.append(float(loss))
                if len(losses) % 50 == 0:
                    bar.set_postfix(loss=f"{loss:.4f}")
            seconds = time.perf_counter() - start_time
            accuracies.append(evaluate(sess, m, x_test, y_test))
            print(f"epoch {epoch}: test accuracy {100 * accuracies[-1]:.2f}% "
                  f"({seconds:.1f} s training, backend {sess.backend.name})")
            sess.run(m["next_epoch"])
            if args.checkpoint_dir:
                path = m["saver"].save(sess, os.path.join(args.checkpoint_dir, "model"),
                                       global_step=m["step"])
                print(f"saved {path}")
        if not accuracies:  # resumed with every epoch already done
            accuracies.append(evaluate(sess, m, x_test, y_test))
    png = os.path.join(args.out, f"{name}_curves.png")
    save_curves(png, losses, accuracies)
    print(f"saved {png}")
    return {"accuracy": accuracies[-1], "accuracies": accuracies, "png": png}
