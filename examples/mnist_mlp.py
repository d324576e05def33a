"""Train a 784-512-512-10 ReLU MLP on MNIST with Adam: gradflow's main job.

    GRADFLOW_DATA=../shared/data python examples/mnist_mlp.py
    python examples/mnist_mlp.py --backend cupy --data-dir /path/to/mnist
    python examples/mnist_mlp.py --checkpoint-dir ckpt --resume --epochs 8
    mpiexec -n 2 python -m mpi4py examples/mnist_mlp.py --distributed   # data-parallel
    python examples/mnist_mlp.py --logdir logs/mlp    # then: tensorboard --logdir logs
    python examples/mnist_mlp.py --export model.onnx  # then serve it with ONNX Runtime

Prints the folder the MNIST files were read from (``--data-dir`` when given,
and then only that folder; ``--download`` fetches the files into it), shows a
progress bar per epoch and the test accuracy after each epoch, and saves a PNG
of the loss and accuracy curves (``out/mnist_mlp_curves_BACKEND.png``). The
first two steps compile the training step (a few seconds the first time, when
numba compiles its kernels; later runs load them from its cache), which the
progress bar says. With ``--checkpoint-dir`` it saves a
checkpoint after each epoch (weights, Adam's slots, the global step and the
epoch count) with the history of the curves beside it (``history.json``);
``--resume`` continues from the latest one, curves included. Ctrl-C stops with
exit status 130 and one line naming the last checkpoint and the command that
resumes from it. The learning rate starts at 1e-3 and is multiplied by 0.6
after each epoch. With ``--logdir`` it writes TensorBoard event files (TF1's
``tf.summary``): the graph, the training loss, batch accuracy, learning rate and
weight histograms every ``--summary-every`` steps, and the test accuracy per epoch.
With ``--export FILE.onnx`` the trained model (images ``x`` in, class
probabilities ``probs`` out, any batch size) is written as an ONNX model at the end.
"""

from __future__ import annotations

import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mnist_common  # noqa: E402

import gradflow as gf  # noqa: E402


def build_model(args, steps_per_epoch):
    """Placeholders, logits, and what ``mnist_common.finish_model`` adds."""
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(args.seed)
        x = gf.placeholder(gf.float32, (None, 784), name="x")
        y = gf.placeholder(gf.int64, (None,), name="y")
        init = gf.he_normal_initializer()
        h = gf.layers.dense(x, 512, activation=gf.nn.relu, kernel_initializer=init)
        h = gf.layers.dense(h, 512, activation=gf.nn.relu, kernel_initializer=init)
        logits = gf.layers.dense(h, 10)
        model = mnist_common.finish_model(x, y, logits, args, steps_per_epoch)
        model["probs"] = gf.nn.softmax(logits, name="probs")
    return graph, model


def export_onnx(sess, model, path):
    """Write the trained model of ``sess`` as ONNX: ``x`` in, ``probs`` out."""
    import gradflow.onnx

    gradflow.onnx.export(sess, {"x": model["x"]}, {"probs": model["probs"]}, path)
    print(f"exported the model to {path} (ONNX: input x [batch, 784], output probs "
          "[batch, 10])")


def main(argv=None):
    parser = mnist_common.make_parser("MNIST MLP (784-512-512-10, ReLU, Adam)",
                                      epochs=8, batch_size=128, lr=1e-3, decay=0.6)
    parser.add_argument("--export", default=None, metavar="FILE.onnx",
                        help="after training, write the model as ONNX to this file")
    args = mnist_common.parse(parser, argv)
    if args.export:  # checked before training, not after it
        error = f"{parser.prog}: error: --export {args.export}:"
        if importlib.util.find_spec("onnx") is None:
            parser.exit(2, f"{error} needs the onnx package: pip install onnx (from the "
                           "gradflow checkout: pip install -e '.[onnx]')\n")
        if not os.path.isdir(os.path.dirname(os.path.abspath(args.export))):
            parser.exit(2, f"{error} its folder does not exist\n")
    data = mnist_common.load_data(args, (784,))
    graph, model = build_model(args, -(-len(data[0]) // args.batch_size))
    finish = (lambda sess: export_onnx(sess, model, args.export)) if args.export else None
    return mnist_common.train(args, graph, model, data, "mnist_mlp",
                              "784-512-512-10 ReLU MLP, Adam", __file__, argv, finish=finish)


if __name__ == "__main__":
    main()
