"""Train a small convolutional net on MNIST with Adam and dropout.

    GRADFLOW_DATA=../shared/data python examples/mnist_cnn.py
    python examples/mnist_cnn.py --backend cupy --data-dir /path/to/mnist
    python examples/mnist_cnn.py --checkpoint-dir ckpt --resume --epochs 4

The model: conv 3x3x32 (SAME, ReLU), max-pool 2x2, conv 3x3x64 (SAME, ReLU),
max-pool 2x2, dense 256 (ReLU) with dropout 0.5 while training, dense 10.
Dropout is switched on by feeding the ``training`` placeholder, which is
False by default, so evaluation needs no extra feed. The same flags, progress
bar, checkpoints, curves and Ctrl-C handling as ``mnist_mlp.py``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mnist_common  # noqa: E402

import gradflow as gf  # noqa: E402


def build_model(args, steps_per_epoch):
    """Placeholders (images, labels, the dropout switch), logits, loss and training op."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(args.seed)
        x = gf.placeholder(gf.float32, (None, 28, 28, 1), name="x")
        y = gf.placeholder(gf.int64, (None,), name="y")
        training = gf.placeholder_with_default(False, (), name="training")
        init = gf.he_normal_initializer()
        h = gf.layers.conv2d(x, 32, 3, padding="same", activation=gf.nn.relu,
                             kernel_initializer=init)
        h = gf.layers.max_pooling2d(h, 2, 2)
        h = gf.layers.conv2d(h, 64, 3, padding="same", activation=gf.nn.relu,
                             kernel_initializer=init)
        h = gf.layers.max_pooling2d(h, 2, 2)
        h = gf.layers.dense(gf.layers.flatten(h), 256, activation=gf.nn.relu,
                            kernel_initializer=init)
        h = gf.layers.dropout(h, rate=0.5, training=training)
        logits = gf.layers.dense(h, 10)
        model = mnist_common.finish_model(x, y, logits, args, steps_per_epoch, training)
    return graph, model


def main(argv=None):
    parser = mnist_common.make_parser("MNIST CNN (two conv+pool layers, dense with dropout)",
                                      epochs=5, batch_size=64, lr=1e-3, decay=0.7)
    args = mnist_common.parse(parser, argv)
    data = mnist_common.load_data(args, (28, 28, 1))
    graph, model = build_model(args, -(-len(data[0]) // args.batch_size))
    return mnist_common.train(args, graph, model, data, "mnist_cnn",
                              "CNN conv32-pool-conv64-pool-dense256, Adam", __file__, argv)


if __name__ == "__main__":
    main()
