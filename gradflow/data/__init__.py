"""Data: TF1's ``tf.data`` input pipelines, MNIST (IDX files) and aligned mini-batches.

>>> ds = gf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(10000).batch(128)
>>> images, labels = ds.make_one_shot_iterator().get_next()
"""

# prefetch, sources and transforms register the stages Dataset's methods build
from gradflow.data import experimental, mnist, nested, prefetch, sources, transforms  # noqa: F401
from gradflow.data.batching import batches
from gradflow.data.dataset import Dataset
from gradflow.data.iterator import (
    Iterator,
    get_output_classes,
    get_output_shapes,
    get_output_types,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from gradflow.data.options import Options, ThreadingOptions
from gradflow.data.prefetch import AUTOTUNE
from gradflow.data.selection import INFINITE_CARDINALITY, UNKNOWN_CARDINALITY
from gradflow.data.sources import FixedLengthRecordDataset, TextLineDataset, TFRecordDataset

__all__ = ["AUTOTUNE", "Dataset", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "FixedLengthRecordDataset", "Iterator", "Options", "ThreadingOptions", "TextLineDataset",
           "TFRecordDataset", "batches",
           "experimental", "get_output_classes", "get_output_shapes", "get_output_types",
           "make_initializable_iterator", "make_one_shot_iterator", "mnist"]
