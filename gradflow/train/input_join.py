"""TF1's other batching functions over queues: ``batch_join`` and
``shuffle_batch_join`` (several lists of tensors, each enqueued by its own thread, into
one queue), and the ``maybe_`` forms of ``batch``, ``shuffle_batch`` and the two joins,
which enqueue an example only where ``keep_input`` is True (a scalar, or with
``enqueue_many`` a vector, one flag per row).

>>> xb, yb = gf.train.batch_join([read(f) for f in files], batch_size=32)
>>> xb = gf.train.maybe_batch([x], keep_input=gf.reduce_sum(x) > 0, batch_size=8)
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import Tensor, get_default_graph
from gradflow.ops.array_ops import expand_dims, reshape
from gradflow.ops.index_ops import boolean_mask
from gradflow.ops.queue_ops import FIFOQueue, PaddingFIFOQueue, RandomShuffleQueue
from gradflow.prim.registry import convert_to_tensor
from gradflow.train.input import _seed
from gradflow.train.queue_runner import QueueRunner, add_queue_runner

__all__ = ["batch_join", "maybe_batch", "maybe_batch_join", "maybe_shuffle_batch",
           "maybe_shuffle_batch_join", "shuffle_batch_join"]


def _flatten(tensors):
    """(dict keys or None, whether one tensor was given, the tensors as a list)."""
    keys = list(tensors) if isinstance(tensors, dict) else None
    single = isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple, dict))
    items = [tensors] if single else ([tensors[k] for k in keys] if keys else list(tensors))
    return keys, single, [convert_to_tensor(t) for t in items]


def _shapes(items, enqueue_many, shapes, dynamic_pad, name):
    if shapes is not None:
        return [tuple(s) for s in shapes]
    out = []
    for t in items:
        shape = None if t.shape is None else tuple(t.shape[1:] if enqueue_many else t.shape)
        if shape is None or (None in shape and not dynamic_pad):
            raise ValueError(f"{name}: all shapes must be fully defined: '{t.name}' has "
                             f"{t.shape}; give shapes=, or dynamic_pad=True")
        out.append(shape)
    return out


def _kept(items, keep_input, enqueue_many, name):
    """The rows of ``items`` to enqueue (always as ``enqueue_many``): those where
    ``keep_input``, or all of them."""
    if keep_input is None:
        return items if enqueue_many else [expand_dims(t, 0) for t in items]
    keep = convert_to_tensor(keep_input, dtype=dtypes.bool_)
    rank = None if keep.shape is None else len(keep.shape)
    if rank != (1 if enqueue_many else 0) and not (rank is None and enqueue_many):
        want = "a vector (one flag per row)" if enqueue_many else "a scalar"
        raise ValueError(f"{name}: keep_input '{keep.name}' must be {want}, got shape "
                         f"{keep.shape}")
    if not enqueue_many:
        keep = reshape(keep, [1])
        items = [expand_dims(t, 0) for t in items]
    return [boolean_mask(t, keep) for t in items]


def _joined(tensors_list, batch_size, enqueue_many, shapes, dynamic_pad, smaller, keep_input,
            name, make_queue, num_threads=1):
    """Enqueue each element of ``tensors_list`` into one queue (``num_threads`` threads
    per element) and dequeue batches as the first element is structured."""
    if not tensors_list:
        raise ValueError(f"{name}: tensors_list is empty")
    flat = [_flatten(t) for t in tensors_list]
    keys, single, first = flat[0]
    for k, _, items in flat[1:]:
        if len(items) != len(first) or k != keys:
            raise ValueError(f"{name}: every element of tensors_list must hold the same "
                             f"tensors (got {len(first)} and {len(items)})")
        for a, b in zip(first, items):
            if a.dtype != b.dtype:
                raise TypeError(f"{name}: '{b.name}' is {b.dtype.name}, but the tensor in its "
                                f"place in the first element, '{a.name}', is {a.dtype.name}")
    queue = make_queue([t.dtype for t in first],
                       _shapes(first, enqueue_many, shapes, dynamic_pad, name))
    ops = [queue.enqueue_many(_kept(items, keep_input, enqueue_many, name))
           for _, _, items in flat]
    add_queue_runner(QueueRunner(queue, ops * int(num_threads)))
    out = (queue.dequeue_up_to if smaller else queue.dequeue_many)(batch_size)
    out = out if isinstance(out, list) else [out]
    if single or (len(out) == 1 and not keys):  # TF1: a list of one gives the tensor
        return out[0]
    return dict(zip(keys, out)) if keys else out


def _fifo(capacity, dynamic_pad, name):
    kind = PaddingFIFOQueue if dynamic_pad else FIFOQueue
    return lambda types, shapes: kind(capacity, types, shapes, name=f"{name}/fifo_queue")


def _shuffling(capacity, min_after_dequeue, seed, name):
    return lambda types, shapes: RandomShuffleQueue(
        capacity, min_after_dequeue, types, shapes, seed=_seed(get_default_graph(), seed),
        name=f"{name}/random_shuffle_queue")


def batch_join(tensors_list, batch_size, capacity=32, enqueue_many=False, shapes=None,
               dynamic_pad=False, allow_smaller_final_batch=False, shared_name=None,
               name=None):
    """``batch`` of several lists of tensors (one per reader, typically), each enqueued
    by its own thread into one ``FIFOQueue``; the batches mix them (TF1)."""
    return maybe_batch_join(tensors_list, None, batch_size, capacity, enqueue_many, shapes,
                            dynamic_pad, allow_smaller_final_batch, shared_name,
                            name or "batch_join")


def maybe_batch_join(tensors_list, keep_input, batch_size, capacity=32, enqueue_many=False,
                     shapes=None, dynamic_pad=False, allow_smaller_final_batch=False,
                     shared_name=None, name=None):
    """``batch_join`` that enqueues an example only where ``keep_input`` (TF1)."""
    name = name or "batch_join"
    return _joined(tensors_list, batch_size, enqueue_many, shapes, dynamic_pad,
                   allow_smaller_final_batch, keep_input, name,
                   _fifo(capacity, dynamic_pad, name))


def maybe_batch(tensors, keep_input, batch_size, num_threads=1, capacity=32,
                enqueue_many=False, shapes=None, dynamic_pad=False,
                allow_smaller_final_batch=False, shared_name=None, name=None):
    """``batch`` that enqueues an example only where ``keep_input`` (TF1)."""
    name = name or "batch"
    return _joined([tensors], batch_size, enqueue_many, shapes, dynamic_pad,
                   allow_smaller_final_batch, keep_input, name,
                   _fifo(capacity, dynamic_pad, name), num_threads)


def shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue, seed=None,
                       enqueue_many=False, shapes=None, allow_smaller_final_batch=False,
                       shared_name=None, name=None):
    """``shuffle_batch`` of several lists of tensors, each enqueued by its own thread
    into one ``RandomShuffleQueue`` (TF1)."""
    return maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                                    None, seed, enqueue_many, shapes,
                                    allow_smaller_final_batch, shared_name,
                                    name or "shuffle_batch_join")


def maybe_shuffle_batch_join(tensors_list, batch_size, capacity, min_after_dequeue,
                             keep_input, seed=None, enqueue_many=False, shapes=None,
                             allow_smaller_final_batch=False, shared_name=None, name=None):
    """``shuffle_batch_join`` that enqueues an example only where ``keep_input`` (TF1)."""
    name = name or "shuffle_batch_join"
    return _joined(tensors_list, batch_size, enqueue_many, shapes, False,
                   allow_smaller_final_batch, keep_input, name,
                   _shuffling(capacity, min_after_dequeue, seed, name))


def maybe_shuffle_batch(tensors, batch_size, capacity, min_after_dequeue, keep_input,
                        num_threads=1, seed=None, enqueue_many=False, shapes=None,
                        allow_smaller_final_batch=False, shared_name=None, name=None):
    """``shuffle_batch`` that enqueues an example only where ``keep_input`` (TF1)."""
    name = name or "shuffle_batch"
    return _joined([tensors], batch_size, enqueue_many, shapes, False,
                   allow_smaller_final_batch, keep_input, name,
                   _shuffling(capacity, min_after_dequeue, seed, name), num_threads)
