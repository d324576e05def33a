"""gf.data input pipelines: what a training step pays for taking its batch from an iterator.

Three ways to give one MNIST MLP step (784-512-10, ReLU, softmax cross-entropy, SGD,
float32) its batch of 128, timed in turn in one process: ``feed_dict`` (slices of an
array), a ``tf.data`` iterator over the same array, and that iterator behind a
per-element ``map`` (a reshape, run once per element on the host) with and without
``prefetch`` (the map then runs in a background thread while the step computes). Also
the pipeline alone: milliseconds per batch of a few pipelines, with no step.

    python benchmarks/data_pipeline.py [--backend numpy] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import OtherLoad, pin_threads_from_argv, time_ms_each  # noqa: E402

pin_threads_from_argv()

import numpy as np  # noqa: E402

import gradflow as gf  # noqa: E402

ROWS, BATCH = 12800, 128


def data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((ROWS, 784), dtype=np.float32), rng.integers(0, 10, ROWS)


def step_on(source, backend):
    """``run()``: one SGD step of the MLP on the batch ``source(graph)`` gives
    (``(x, y, feeds)``, where ``feeds()`` returns the feed_dict of a step)."""
    graph = gf.Graph()
    with graph.as_default():
        x, y, feeds = source()
        h = gf.layers.dense(x, 512, activation=gf.nn.relu)
        logits = gf.layers.dense(h, 10)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                              logits=logits))
        train = gf.train.GradientDescentOptimizer(0.01).minimize(loss)
        sess = gf.Session(graph=graph, backend=backend)
        sess.run(gf.global_variables_initializer())
    return lambda: sess.run(train, feeds())


def fed(images, labels):
    def source():
        xp, yp = gf.placeholder(gf.float32, (None, 784)), gf.placeholder(gf.int64, (None,))
        starts = iter(range(0, 10**9, BATCH))

        def feeds():
            start = next(starts) % (ROWS - BATCH)
            return {xp: images[start:start + BATCH], yp: labels[start:start + BATCH]}
        return xp, yp, feeds
    return source


def pipeline(images, labels, per_element=False, prefetch=False):
    def source():
        ds = gf.data.Dataset.from_tensor_slices((images, labels))
        if per_element:
            ds = ds.map(lambda x, y: (gf.reshape(x, [784]), y))
        ds = ds.batch(BATCH).repeat()
        if prefetch:
            ds = ds.prefetch(2)
        x, y = ds.make_one_shot_iterator().get_next()
        return x, y, lambda: None
    return source


def batch_only(dataset, backend):
    nxt = dataset.repeat().make_one_shot_iterator().get_next()
    sess = gf.Session(backend=backend)
    return lambda: sess.run(nxt)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    images, labels = data()
    load = OtherLoad()
    load.start()
    steps = {
        "step, feed_dict": step_on(fed(images, labels), args.backend),
        "step, iterator": step_on(pipeline(images, labels), args.backend),
        "step, iterator + per-element map": step_on(
            pipeline(images, labels, per_element=True), args.backend),
        "step, iterator + per-element map + prefetch": step_on(
            pipeline(images, labels, per_element=True, prefetch=True), args.backend),
    }
    slices = gf.data.Dataset.from_tensor_slices((images, labels))
    batches = {
        "batch only: slices.batch": batch_only(slices.batch(BATCH), args.backend),
        "batch only: slices.shuffle(10000).batch": batch_only(
            slices.shuffle(10000, seed=0).batch(BATCH), args.backend),
        "batch only: slices.map(x / 255, one_hot).batch (vectorized)": batch_only(
            slices.map(lambda x, y: (x / 255.0, gf.one_hot(y, 10))).batch(BATCH),
            args.backend),
        "batch only: slices.map(reshape).batch (per element)": batch_only(
            slices.map(lambda x, y: (gf.reshape(x, [784]), y)).batch(BATCH), args.backend),
    }
    for name, ms in {**time_ms_each(steps, args.seconds),
                     **time_ms_each(batches, args.seconds)}.items():
        print(f"{name:62s} {ms:8.2f} ms")
    busy = load.cores()
    if busy is not None:
        print(f"(other processes kept {busy:.1f} cores busy meanwhile)")


if __name__ == "__main__":
    main()
