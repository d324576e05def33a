"""Train a small convolutional net on MNIST with Adam and dropout.

    GRADFLOW_DATA=../shared/data python examples/mnist_cnn.py
    python examples/mnist_cnn.py --backend cupy --data-dir /path/to/mnist
    python examples/mnist_cnn.py --checkpoint-dir ckpt --resume --epochs 4
    mpiexec -n 2 python -m mpi4py examples/mnist_cnn.py --distributed   # data-parallel
    python examples/mnist_cnn.py --logdir logs/cnn    # then: tensorboard --logdir logs
    python examples/mnist_cnn.py --batch-norm          # conv, batch norm, ReLU

The model: conv 3x3x32 (SAME, ReLU), max-pool 2x2, conv 3x3x64 (SAME, ReLU),
max-pool 2x2, dense 256 (ReLU) with dropout 0.5 while training, dense 10.
With ``--batch-norm`` each convolution is followed by ``layers.batch_normalization``
(batch statistics while training, the moving averages at evaluation).
Dropout is switched on by feeding the ``training`` placeholder, which is
False by default, so evaluation needs no extra feed. The same flags, progress
bar, checkpoints, curves, TensorBoard summaries (``--logdir``) and Ctrl-C
handling as ``mnist_mlp.py``.
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

        def conv(h, filters):
            if not args.batch_norm:
                return gf.layers.conv2d(h, filters, 3, padding="same", activation=gf.nn.relu,
                                        kernel_initializer=init)
            # conv (no bias: the norm's beta takes its place), batch norm, then ReLU
            h = gf.layers.conv2d(h, filters, 3, padding="same", use_bias=False,
                                 kernel_initializer=init)
            return gf.nn.relu(gf.layers.batch_normalization(h, training=training))

        h = gf.layers.max_pooling2d(conv(x, 32), 2, 2)
        h = gf.layers.max_pooling2d(conv(h, 64), 2, 2)
        h = gf.layers.dense(gf.layers.flatten(h), 256, activation=gf.nn.relu,
                            kernel_initializer=init)
        h = gf.layers.dropout(h, rate=0.5, training=training)
        logits = gf.layers.dense(h, 10)
        model = mnist_common.finish_model(x, y, logits, args, steps_per_epoch, training)
    return graph, model


def main(argv=None):
    parser = mnist_common.make_parser("MNIST CNN (two conv+pool layers, dense with dropout)",
                                      epochs=5, batch_size=64, lr=1e-3, decay=0.7)
    parser.add_argument("--batch-norm", action="store_true",
                        help="batch normalization after each convolution (its moving "
                             "averages update through GraphKeys.UPDATE_OPS, as in TF1)")
    args = mnist_common.parse(parser, argv)
    data = mnist_common.load_data(args, (28, 28, 1))
    graph, model = build_model(args, -(-len(data[0]) // args.batch_size))
    return mnist_common.train(args, graph, model, data, "mnist_cnn",
                              "CNN conv32-pool-conv64-pool-dense256, Adam", __file__, argv)


if __name__ == "__main__":
    main()
