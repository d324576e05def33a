"""The MNIST reader of TF1's tutorials, as ``tensorflow.examples.tutorials.mnist.input_data``:

>>> from gradflow.examples.tutorials.mnist import input_data
>>> mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)
>>> batch_xs, batch_ys = mnist.train.next_batch(100)

The files are read with ``gradflow.data.mnist``: from the given folder, else
``$GRADFLOW_DATA/mnist`` or ``~/.cache/gradflow/mnist``, else downloaded
(checksums verified). See ``gradflow.data.mnist.read_data_sets``.
"""

from gradflow.data.mnist import (
    DEFAULT_SOURCE_URL,
    DataSet,
    Datasets,
    dense_to_one_hot,
    extract_images,
    extract_labels,
    read_data_sets,
)

__all__ = ["DEFAULT_SOURCE_URL", "DataSet", "Datasets", "dense_to_one_hot", "extract_images",
           "extract_labels", "read_data_sets"]
