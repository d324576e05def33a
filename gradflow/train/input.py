"""TF1's queue-based input: producers that fill a queue from a tensor, epoch after epoch
(``input_producer``, ``string_input_producer``, ``range_input_producer``,
``slice_input_producer``, ``limit_epochs``), and ``batch`` / ``shuffle_batch``, which
queue single examples and dequeue them as batches. Each adds a ``QueueRunner``:
start them with ``gf.train.start_queue_runners`` (``MonitoredTrainingSession`` starts
them itself). With ``num_epochs``, the end of the input is a
``gf.errors.OutOfRangeError`` from the batch, after the last one.

>>> image, label = gf.train.slice_input_producer([images, labels], num_epochs=2)
>>> xb, yb = gf.train.batch([image, label], batch_size=32)
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor, get_default_graph
from gradflow.ops.queue_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.train.queue_runner import QueueRunner, add_queue_runner

__all__ = ["batch", "input_producer", "limit_epochs", "range_input_producer",
           "shuffle_batch", "slice_input_producer", "string_input_producer"]


def _seed(graph, seed):
    """The host generator seed of an op: ``seed`` and the graph seed, or None."""
    if seed is None and graph.seed is None:
        return None
    return [int(graph.seed or 0), int(seed if seed is not None else len(graph.nodes))]


def limit_epochs(tensor, num_epochs=None, name=None):
    """``tensor``, for ``num_epochs`` runs per Session; the next run raises
    ``OutOfRangeError`` (``None``: no limit)."""
    return _epochs(tensor, num_epochs, False, None, name or "limit_epochs")


def _epochs(tensor, num_epochs, shuffle, seed, name):
    x = convert_to_tensor(tensor)
    if num_epochs is not None and int(num_epochs) <= 0:
        raise ValueError(f"{name}: num_epochs must be positive, got {num_epochs}")
    if not shuffle and num_epochs is None:
        return x
    return apply("input_epochs", [x], name=name, limit=num_epochs, shuffle=bool(shuffle),
                 seed=_seed(x.graph, seed), shape=x.shape, dtype=x.dtype)


def input_producer(input_tensor, element_shape=None, num_epochs=None, shuffle=True,
                   seed=None, capacity=32, shared_name=None, summary_name=None, name=None,
                   cancel_op=None):
    """A ``FIFOQueue`` that a ``QueueRunner`` fills with the rows of ``input_tensor``,
    in a new random order each epoch where ``shuffle``, for ``num_epochs`` epochs
    (``None``: without end)."""
    x = convert_to_tensor(input_tensor)
    if x.shape is None or len(x.shape) == 0:
        raise ValueError(f"input_producer: '{x.name}' needs a known rank of 1 or more")
    shape = tuple(element_shape) if element_shape is not None else tuple(x.shape[1:])
    if None in shape:
        raise ValueError(f"input_producer: the rows of '{x.name}' have shape {shape}; give "
                         "element_shape=")
    name = name or "input_producer"
    rows = _epochs(x, num_epochs, shuffle, seed, f"{name}/epochs")
    queue = FIFOQueue(capacity, [x.dtype], shapes=[shape], name=f"{name}/fifo_queue")
    add_queue_runner(QueueRunner(queue, [queue.enqueue_many([rows])], cancel_op=cancel_op))
    return queue


def string_input_producer(string_tensor, num_epochs=None, shuffle=True, seed=None,
                          capacity=32, shared_name=None, name=None, cancel_op=None):
    """``input_producer`` over a list of strings (file names, typically)."""
    x = convert_to_tensor(string_tensor, dtype=dtypes.string)
    return input_producer(x, (), num_epochs, shuffle, seed, capacity, name=name or
                          "input_producer", cancel_op=cancel_op)


def range_input_producer(limit, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """``input_producer`` over the int32 numbers ``0 .. limit - 1`` (``limit`` an int,
    or a scalar integer tensor, computed by each Session's queue runner)."""
    if isinstance(limit, Tensor):
        from gradflow.ops.math_ops import cast
        from gradflow.ops.shape_ops import range_

        numbers = range_(cast(limit, dtypes.int32))
    else:
        numbers = np.arange(int(limit), dtype=np.int32)
    return input_producer(numbers, (), num_epochs, shuffle, seed, capacity,
                          name=name or "input_producer")


def slice_input_producer(tensor_list, num_epochs=None, shuffle=True, seed=None, capacity=32,
                         shared_name=None, name=None):
    """One row of each tensor of ``tensor_list`` at a time, the same row of each
    (the rows' order is drawn per epoch where ``shuffle``)."""
    from gradflow.ops.index_ops import gather

    tensors = [convert_to_tensor(t) for t in tensor_list]
    if not tensors:
        raise ValueError("slice_input_producer: tensor_list is empty")
    counts = {None if t.shape is None or not t.shape else t.shape[0] for t in tensors}
    if None in counts or len(counts) != 1:
        raise ValueError(f"slice_input_producer: the tensors need one known first dimension, "
                         f"got shapes {[t.shape for t in tensors]}")
    queue = range_input_producer(counts.pop(), num_epochs, shuffle, seed, capacity,
                                 name=name or "input_producer")
    index = queue.dequeue()
    return [gather(t, index) for t in tensors]


def batch(tensors, batch_size, num_threads=1, capacity=32, enqueue_many=False, shapes=None,
          dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None, name=None):
    """``tensors`` (a tensor, list or dict) as batches of ``batch_size``, through a
    ``FIFOQueue`` of ``capacity`` that ``num_threads`` threads fill (``enqueue_many``:
    the tensors are batches already; ``dynamic_pad``: their sizes may be open (``None``),
    each batch padded with zeros to its largest, through a ``PaddingFIFOQueue``).
    ``allow_smaller_final_batch``: the last batch of
    a finite input may be smaller, else its rest is dropped."""
    kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
    return _batched(tensors, batch_size, num_threads, capacity, enqueue_many, shapes,
                    dynamic_pad, allow_smaller_final_batch, name or "batch",
                    lambda types, shapes_: kind(capacity, types, shapes_,
                                                name=f"{name or 'batch'}/fifo_queue"))


def shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, num_threads=1, seed=None,
                  enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                  shared_name=None, name=None):
    """``batch`` through a ``RandomShuffleQueue``: each batch is drawn at random from
    the queue, which keeps ``min_after_dequeue`` examples until the input ends."""
    name = name or "shuffle_batch"

    def make(types, shapes_):
        return RandomShuffleQueue(capacity, min_after_dequeue, types, shapes_,
                                  seed=_seed(get_default_graph(), seed),
                                  name=f"{name}/random_shuffle_queue")

    return _batched(tensors, batch_size, num_threads, capacity, enqueue_many, shapes, False,
                    allow_smaller_final_batch, name, make)


def _batched(tensors, batch_size, num_threads, capacity, enqueue_many, shapes, dynamic_pad,
             smaller, name, make_queue):
    keys = list(tensors) if isinstance(tensors, dict) else None
    single = isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple, dict))
    items = [tensors] if single else ([tensors[k] for k in keys] if keys else list(tensors))
    items = [convert_to_tensor(t) for t in items]
    if shapes is None:
        shapes = []
        for t in items:
            shape = None if t.shape is None else tuple(t.shape[1:] if enqueue_many else t.shape)
            if shape is None or (None in shape and not dynamic_pad):
                raise ValueError(f"{name}: all shapes must be fully defined: '{t.name}' has "
                                 f"{t.shape}; give shapes=, or dynamic_pad=True")
            shapes.append(shape)
    queue = make_queue([t.dtype for t in items], shapes)
    enqueue = (queue.enqueue_many if enqueue_many else queue.enqueue)(items)
    add_queue_runner(QueueRunner(queue, [enqueue] * int(num_threads)))
    out = (queue.dequeue_up_to if smaller else queue.dequeue_many)(batch_size)
    out = out if isinstance(out, list) else [out]
    if single or (len(out) == 1 and not keys):  # TF1: a list of one gives the tensor
        return out[0]
    return dict(zip(keys, out)) if keys else out
