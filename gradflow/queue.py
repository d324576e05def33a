"""TF1's ``tf.queue`` (``tf.compat.v1.queue``): the queue classes under the names TF1
programs reach them by (``tf.queue.FIFOQueue``), the same classes as ``tf.FIFOQueue``.

>>> q = gf.queue.FIFOQueue(capacity=10, dtypes=[gf.float32], shapes=[[]])
"""

from gradflow.ops.queue_ops import FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "QueueBase", "RandomShuffleQueue"]
