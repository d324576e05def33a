"""TF1's ``tf.io`` namespace, for its file functions: ``read_file``, the TFRecord and
``tf.train.Example`` functions, and ``tf.io.gfile.exists`` and the rest of
``gradflow.gfile``."""

from gradflow import dtypes, gfile
from gradflow.ops.csv_ops import decode_csv
from gradflow.ops.io_ops import (
    decode_base64,
    decode_compressed,
    deserialize_many_sparse,
    encode_base64,
    match_filenames_once,
    matching_files,
    parse_tensor,
    serialize_many_sparse,
    serialize_sparse,
    serialize_tensor,
    write_file,
)
from gradflow.ops.parsing_ops import (
    FixedLenFeature,
    SparseFeature,
    VarLenFeature,
    parse_example,
    parse_single_example,
)
from gradflow.ops.queue_ops import PaddingFIFOQueue, QueueBase, RandomShuffleQueue
from gradflow.ops.reader_ops import decode_raw
from gradflow.ops.sequence_parsing_ops import (
    FixedLenSequenceFeature,
    parse_sequence_example,
    parse_single_sequence_example,
)
from gradflow.prim import image_io as image_io_ops  # noqa: F401 - registers read_file
from gradflow.prim.registry import apply, convert_to_tensor
from gradflow.tfrecord import (
    TFRecordCompressionType,
    TFRecordOptions,
    TFRecordWriter,
    tf_record_iterator,
)

__all__ = ["FixedLenFeature", "PaddingFIFOQueue", "QueueBase", "RandomShuffleQueue",
           "TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "VarLenFeature",
           "decode_csv", "decode_raw", "gfile",
           "parse_example", "parse_single_example", "read_file", "tf_record_iterator",
           "decode_base64", "decode_compressed", "deserialize_many_sparse", "encode_base64",
           "match_filenames_once", "matching_files", "parse_tensor", "serialize_many_sparse",
           "serialize_sparse", "serialize_tensor", "write_file", "FixedLenSequenceFeature",
           "parse_sequence_example", "parse_single_sequence_example", "SparseFeature"]


def read_file(filename, name=None):
    """The bytes of the file ``filename`` (a string scalar tensor, or a Python string),
    read at each run, as a string scalar (TF1 ``tf.read_file``). A missing file is a
    ``NotFoundError`` naming it.

    >>> contents = gf.read_file(path)
    >>> image = gf.image.decode_jpeg(contents, channels=3)
    """
    path = convert_to_tensor(filename, dtype=dtypes.string)
    if path.dtype is not dtypes.string or (path.shape is not None and len(path.shape)):
        raise ValueError(f"read_file: '{path.name}' must be one string, got "
                         f"{path.dtype.name} of shape {path.shape}")
    return apply("read_file", [path], name=name or "ReadFile", shape=(), dtype=dtypes.string)
