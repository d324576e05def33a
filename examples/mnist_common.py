"""What the MNIST examples share: flags, data, the training loop, checkpoints, curves.

``mnist_mlp.py`` and ``mnist_cnn.py`` each build their own model (logits from
the images) and hand it to ``finish_model`` and ``train`` here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time

import example_tools as tools
import numpy as np

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
                        help="folder with the four MNIST files; only this folder is read "
                             "(default: $GRADFLOW_DATA/mnist, else ~/.cache/gradflow/mnist, "
                             "downloaded there if missing)")
    parser.add_argument("--download", action="store_true",
                        help="with --data-dir: download the files into it if missing")
    parser.add_argument("--limit", type=int, default=None, help="use only N training images")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out", help="folder for the PNG of the curves")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="save a checkpoint here after each epoch")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the latest checkpoint in --checkpoint-dir")
    parser.add_argument("--distributed", action="store_true",
                        help="data-parallel over the processes of an MPI job (launch with "
                             "mpiexec -n N python -m mpi4py SCRIPT --distributed): each rank "
                             "takes batch-size/N rows of every batch; rank 0 alone prints and "
                             "writes checkpoints, summaries and the PNG")
    parser.add_argument("--logdir", default=None,
                        help="write TensorBoard event files here: training loss, accuracy and "
                             "learning rate, weight histograms, test accuracy per epoch and "
                             "the graph (view with: tensorboard --logdir DIR)")
    parser.add_argument("--data-on-device", choices=("auto", "yes", "no"), default="auto",
                        help="copy the training and test sets to the session's device once "
                             "and gather each shuffled batch there (auto: with --backend "
                             "cupy, when not --distributed)")
    parser.add_argument("--summary-every", type=int, default=100,
                        help="with --logdir: write the training summaries every N steps")
    return parser


def parse(parser, argv):
    args = parser.parse_args(argv)
    tools.check_backend(parser, args.backend)  # before the data is read: one line if not
    if args.resume and not args.checkpoint_dir:
        parser.error("--resume needs --checkpoint-dir")
    if args.summary_every < 1:
        parser.error("--summary-every must be at least 1")
    if args.distributed:
        join_job(parser, args)
    return args


def join_job(parser, args):
    """``--distributed``: join the MPI job; the global batch stays ``--batch-size``, so the
    run takes the same steps as one process would (and reaches the same accuracy)."""
    import sys

    import gradflow.distributed as hvd

    hvd.init()
    if args.batch_size % hvd.size():
        parser.error(f"--batch-size {args.batch_size} must be a multiple of the number of "
                     f"processes ({hvd.size()}): each takes an equal part of every batch")
    if hvd.rank() != 0:  # one rank reports; the others' lines would repeat it
        sys.stdout = open(os.devnull, "w")


def distributed(args):
    """``gradflow.distributed`` when running with ``--distributed``, else None."""
    if not getattr(args, "distributed", False):
        return None
    import gradflow.distributed as hvd

    return hvd


def load_data(args, image_shape):
    """Train and test images as float32 in [0, 1] shaped ``(-1,) + image_shape``, int64 labels."""
    try:
        data = gf.data.mnist.load(args.data_dir, download=True if args.download else None)
    except gf.data.mnist.MnistError as err:
        hint = (" From the command line: add --download to fetch the files into --data-dir, "
                "or leave --data-dir out." if args.data_dir is not None else "")
        raise SystemExit(f"{err}{hint}") from None
    (x_train, y_train), (x_test, y_test) = data
    print(f"MNIST read from {data.folder} ({len(x_train)} training, {len(x_test)} test images)")
    if args.limit:  # before the float copy, which is then only as large as the images kept
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    x_train, x_test = (_scaled(x, image_shape) for x in (x_train, x_test))
    return x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64)


def _scaled(images, image_shape):
    """``images`` (uint8) as float32 in [0, 1], divided in place in their one float copy."""
    scaled = images.reshape((-1,) + image_shape).astype(np.float32)
    scaled /= np.float32(255.0)
    return scaled


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
    optimizer = gf.train.AdamOptimizer(lr)
    hvd = distributed(args)
    if hvd is not None:  # the gradients are averaged over the ranks before the update
        optimizer = hvd.DistributedOptimizer(optimizer)
    # TF1's idiom: the batch-norm moving averages (if any) update with every step
    with gf.control_dependencies(gf.get_collection(gf.GraphKeys.UPDATE_OPS)):
        train_op = optimizer.minimize(loss, global_step=step)
    epoch = gf.Variable(np.int64(0), trainable=False, name="epoch", dtype=gf.int64)
    # every rank starts from rank 0's variables (weights, Adam's slots, step and epoch)
    sync = hvd.broadcast_global_variables(0) if hvd is not None else None
    if hvd is not None:  # report the loss of the whole batch: the mean over the ranks
        loss = hvd.allreduce(loss, name="loss_of_all_ranks")
    summaries = add_summaries(loss, accuracy, lr) if getattr(args, "logdir", None) else {}
    return dict(x=x, y=y, loss=loss, accuracy=accuracy, train=train_op, step=step, epoch=epoch,
                next_epoch=gf.assign_add(epoch, 1), training=training, sync=sync,
                init=gf.global_variables_initializer(), saver=gf.train.Saver(max_to_keep=3),
                **summaries)


def add_summaries(loss, accuracy, lr):
    """TensorBoard summaries (TF1's tf.summary): the merged training ones (loss, batch
    accuracy, learning rate, a histogram of every weight) and the test accuracy, which
    is fed after each epoch (it is computed over many batches in Python)."""
    with gf.name_scope("train"):
        gf.summary.scalar("loss", loss)
        gf.summary.scalar("accuracy", accuracy)
        gf.summary.scalar("learning_rate", lr)
    with gf.name_scope("weights"):
        for var in gf.trainable_variables():
            gf.summary.histogram(var.op.name, var)
    test_accuracy = gf.placeholder(gf.float32, (), name="test_accuracy")
    with gf.name_scope("test"):
        test_summary = gf.summary.scalar("accuracy", test_accuracy, collections=[])
    return dict(summaries=gf.summary.merge_all(), test_accuracy=test_accuracy,
                test_summary=test_summary)


def keeps_data_on_device(args, backend_name, hvd):
    """Whether ``train`` copies the data to the device once (``--data-on-device``)."""
    if args.data_on_device == "auto":
        return backend_name == "cupy" and hvd is None
    return args.data_on_device == "yes" and hvd is None


def device_batches(backend, arrays, batch_size, seed):
    """The shuffled batches ``gf.data.batches(*arrays, batch_size=..., seed=seed)`` yields,
    for ``arrays`` already on ``backend``'s device: the same NumPy order (so a seed gives
    the same batches on every backend), copied to the device once; each batch is
    gathered there, so no image crosses the bus during an epoch."""
    count = len(arrays[0])
    order = backend.asarray(np.random.default_rng(seed).permutation(count))
    for start in range(0, count, batch_size):
        index = order[start:start + batch_size]
        yield tuple(backend.xp.take(a, index, axis=0) for a in arrays)


def evaluate(sess, m, images, labels, batch_size=1000):
    """Accuracy over all of ``images`` (dropout off: ``training`` keeps its default)."""
    correct = 0.0
    for xb, yb in gf.data.batches(images, labels, batch_size=batch_size, shuffle=False):
        correct += sess.run(m["accuracy"], {m["x"]: xb, m["y"]: yb}) * len(xb)
    return correct / len(images)


def train(args, graph, m, data, name, description, script, argv=None, finish=None):
    """The epoch loop: progress bar, test accuracy, checkpoint and history, PNG.

    Returns the results, with the accuracies of every epoch so far (those of a
    resumed run's checkpoint included). Ctrl-C ends the program with status
    130 and one line naming the last checkpoint and the command to resume.
    ``finish(sess)``, when given, runs on the trained session before it closes (on
    rank 0 alone in a distributed run), also when a resumed run had nothing to train.
    The PNG is ``--out/NAME_curves_BACKEND.png``.
    """
    from tqdm import tqdm

    x_train, y_train, x_test, y_test = data
    steps_per_epoch = -(-len(x_train) // args.batch_size)
    hvd = distributed(args)
    lead = hvd is None or hvd.rank() == 0  # the one process that writes files
    batching = {"batch_size": args.batch_size} if hvd is None else \
        {"batch_size": args.batch_size // hvd.size(), "shard": (hvd.rank(), hvd.size())}
    os.makedirs(args.out, exist_ok=True)
    on = {m["training"]: True} if m["training"] is not None else {}
    writer = gf.summary.FileWriter(args.logdir, graph) if args.logdir and lead else None
    with gf.Session(graph=graph, backend=args.backend) as sess, writer or contextlib.nullcontext():
        backend = sess.backend.name
        png = tools.png_path(args.out, f"{name}_curves", backend)
        on_device = keeps_data_on_device(args, backend, hvd)
        if on_device:
            x_train, y_train, x_test, y_test = (sess.backend.asarray(a) for a in data)
        done, history, latest = tools.start(sess, m, args.checkpoint_dir if lead else None,
                                            args.resume and lead)
        if hvd is not None:  # rank 0's variables, restored or fresh, to every rank
            sess.run(m["sync"])
            done = int(sess.run(m["epoch"]))
        step = int(sess.run(m["step"]))

        def curves():
            title = f"{name}: {description}, {tools.backends_text(history, backend)}"
            tools.save_curves(png, title, history, steps_per_epoch)

        if done >= args.epochs:
            if not tools.redraw_finished(done, args.epochs, latest, history, curves, png):
                history.add_eval(step=step, epoch=done, backend=backend,
                                 accuracy=evaluate(sess, m, x_test, y_test))
                print(f"test accuracy {100 * history.evals[-1]['accuracy']:.2f}%; "
                      f"{png} left as it was (no saved history to draw it from)")
                png = None
            if finish is not None and lead:
                finish(sess)
            return results(history, png)
        epoch = done + 1
        try:
            for epoch in range(done + 1, args.epochs + 1):
                start_time = time.perf_counter()
                if on_device:
                    batches = device_batches(sess.backend, (x_train, y_train),
                                             args.batch_size, args.seed + epoch)
                else:
                    batches = gf.data.batches(x_train, y_train, **batching,
                                              seed=args.seed + epoch)
                desc = f"epoch {epoch}/{args.epochs}"
                # a session's first two steps compile the training step (its plan, and the
                # numba kernels, which later runs load from their cache): seconds, not ms
                compiling, compiled_at = epoch == done + 1, step + 2
                with tqdm(batches, total=steps_per_epoch, leave=False, disable=not lead,
                          desc=f"{desc} (compiling)" if compiling else desc) as bar:
                    for xb, yb in bar:
                        feed = {m["x"]: xb, m["y"]: yb, **on}
                        if writer is not None and step % args.summary_every == 0:
                            # the batch's values before this step's update, as TF1 scripts do
                            _, loss, summary = sess.run([m["train"], m["loss"],
                                                         m["summaries"]], feed)
                            writer.add_summary(summary, global_step=step)
                        else:
                            _, loss = sess.run([m["train"], m["loss"]], feed)
                        step += 1
                        history.add_loss(step, loss)
                        if compiling and step >= compiled_at:
                            compiling = False
                            bar.set_description(desc)
                        if step % 50 == 0:
                            bar.set_postfix(loss=f"{loss:.4f}")
                seconds = time.perf_counter() - start_time
                accuracy = evaluate(sess, m, x_test, y_test)
                history.add_eval(step=step, epoch=epoch, accuracy=accuracy, backend=backend)
                if writer is not None:
                    writer.add_summary(sess.run(m["test_summary"],
                                                {m["test_accuracy"]: accuracy}), step)
                    writer.flush()
                print(f"epoch {epoch}: test accuracy {100 * accuracy:.2f}% "
                      f"({seconds:.1f} s training, backend {backend})")
                sess.run(m["next_epoch"])
                if args.checkpoint_dir and lead:
                    print(f"saved {tools.save_checkpoint(sess, m, args.checkpoint_dir, history)}")
        except KeyboardInterrupt:
            tools.interrupted(script, argv, args.checkpoint_dir, history,
                              f"epoch {epoch}, step {step}")
        if finish is not None and lead:
            finish(sess)
    if not lead:
        return results(history, None)
    curves()
    print(f"saved {png}")
    return results(history, png)


def results(history, png):
    accuracies = [e["accuracy"] for e in history.evals]
    return {"accuracy": accuracies[-1], "accuracies": accuracies,
            "epochs": [e["epoch"] for e in history.evals], "losses": history.loss_values(),
            "png": png}
