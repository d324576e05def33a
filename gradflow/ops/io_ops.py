"""TF1's host functions of ``tf.io`` and of a Session's variables: tensors as
``TensorProto`` bytes (``serialize_tensor``, ``parse_tensor``, the ``SparseTensor`` forms),
web-safe base64, ``decode_compressed``, ``write_file``, ``matching_files``, and
``is_variable_initialized``, ``report_uninitialized_variables``,
``assert_variables_initialized``, ``count_up_to``.

>>> text = gf.io.serialize_tensor(gf.constant([[1.0, 2.0]]))   # TensorFlow's bytes
>>> back = gf.io.parse_tensor(text, gf.float32)
>>> gf.io.encode_base64(["hello"])                              # b"aGVsbG8"
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.ops.state_ops import group
from gradflow.prim import io_host as _io_host  # noqa: F401 - registers the host ops
from gradflow.prim import serialize as _serialize
from gradflow.prim.construct import VARIANT, pick
from gradflow.prim.registry import apply, constant, convert_to_tensor
from gradflow.sparse_tensor import SparseTensor
from gradflow.variables import Variable, global_variables, local_variables

__all__ = ["assert_variables_initialized", "count_up_to", "decode_base64",
           "decode_compressed", "deserialize_many_sparse", "encode_base64",
           "is_variable_initialized", "match_filenames_once", "matching_files", "parse_tensor",
           "report_uninitialized_variables", "serialize_many_sparse", "serialize_sparse",
           "serialize_tensor", "write_file"]


def _shape(x):
    return None if x.shape is None else tuple(x.shape)


def _strings(value, what):
    x = convert_to_tensor(value, dtype=dtypes.string)
    if x.dtype is not dtypes.string:
        raise TypeError(f"{what}: '{x.name}' must be a string tensor, got {x.dtype.name}")
    return x


def _scalar_string(value, what):
    x = _strings(value, what)
    if x.shape is not None and len(x.shape):
        raise ValueError(f"{what}: '{x.name}' must be one string, got shape {list(x.shape)}")
    return x


def _dtype(value, what):
    dtype = dtypes.as_dtype(value)
    if dtype not in _serialize.DATATYPES:
        raise TypeError(f"{what}: {dtype.name} has no TensorProto form here")
    return dtype


def serialize_tensor(tensor, name=None):
    """The ``TensorProto`` bytes of ``tensor`` (a string scalar), as TensorFlow writes
    them: ``gf.io.parse_tensor`` and TensorFlow's ``tf.io.parse_tensor`` read them."""
    x = convert_to_tensor(tensor)
    return apply("serialize_tensor", [x], name=name or "SerializeTensor",
                 in_dtype=_dtype(x.dtype, "serialize_tensor"), shape=(), dtype=dtypes.string)


def parse_tensor(serialized, out_type, name=None):
    """The tensor of the ``TensorProto`` bytes ``serialized`` (a string scalar), which
    must hold ``out_type``; its shape is known only when it runs, as in TF1."""
    x = _scalar_string(serialized, "parse_tensor")
    dtype = _dtype(out_type, "parse_tensor")
    return apply("parse_tensor", [x], name=name or "ParseTensor", out_dtype=dtype,
                 shape=None, dtype=dtype)


def _sparse_parts(sp_input, what):
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"{what}: sp_input must be a SparseTensor, got {type(sp_input)!r}")
    values = sp_input.values
    return [sp_input.indices, values, sp_input.dense_shape], _dtype(values.dtype, what)


def _check_out_type(out_type, what):
    if dtypes.as_dtype(out_type) is not dtypes.string:
        raise TypeError(f"{what}: out_type must be string (gradflow has no variant "
                        f"tensors), got {out_type!r}")


def serialize_sparse(sp_input, name=None, out_type=dtypes.string):
    """The ``SparseTensor`` ``sp_input`` as 3 strings: the ``TensorProto`` bytes of its
    indices, values and dense shape (TF1 ``tf.serialize_sparse``)."""
    _check_out_type(out_type, "serialize_sparse")
    parts, dtype = _sparse_parts(sp_input, "serialize_sparse")
    return apply("serialize_sparse", parts, name=name or "SerializeSparse", in_dtype=dtype,
                 many=False, shape=(3,), dtype=dtypes.string)


def serialize_many_sparse(sp_input, name=None, out_type=dtypes.string):
    """Each row of the ``SparseTensor`` ``sp_input`` (rank 2 or more; its first axis
    indexes the rows) serialized as ``serialize_sparse`` does: a ``[rows, 3]`` string
    tensor (TF1 ``tf.serialize_many_sparse``)."""
    _check_out_type(out_type, "serialize_many_sparse")
    parts, dtype = _sparse_parts(sp_input, "serialize_many_sparse")
    dense = sp_input.dense_shape
    rank = dense.shape[0] if dense.shape is not None and len(dense.shape) == 1 else None
    if rank is not None and rank < 2:
        raise ValueError(f"serialize_many_sparse: the SparseTensor must have rank 2 or more, "
                         f"got {rank}")
    return apply("serialize_sparse", parts, name=name or "SerializeManySparse",
                 in_dtype=dtype, many=True, shape=(None, 3), dtype=dtypes.string)


def deserialize_many_sparse(serialized_sparse, dtype, rank=None, name=None):
    """One ``SparseTensor`` of the ``[rows, 3]`` strings ``serialized_sparse`` (as
    ``serialize_many_sparse`` makes), the rows stacked along a new first axis; its dense
    shape is the largest of the rows' (TF1 ``tf.deserialize_many_sparse``)."""
    x = _strings(serialized_sparse, "deserialize_many_sparse")
    if x.shape is not None and (len(x.shape) != 2 or x.shape[1] not in (None, 3)):
        raise ValueError(f"deserialize_many_sparse: '{x.name}' must be of shape [rows, 3], "
                         f"got {list(x.shape)}")
    dtype = _dtype(dtype, "deserialize_many_sparse")
    node = apply("deserialize_many_sparse", [x], name=name or "DeserializeManySparse",
                 out_dtype=dtype, shape=None, dtype=VARIANT)
    full = None if rank is None else int(rank)
    return SparseTensor(pick(node, 0, (None, full), dtypes.int64),
                        pick(node, 1, (None,), dtype), pick(node, 2, (full,), dtypes.int64))


def encode_base64(input, pad=False, name=None):  # noqa: A002
    """Each string of ``input`` in web-safe base64 (``-`` and ``_`` for ``+`` and ``/``),
    padded with ``=`` only with ``pad``, as TF1's ``tf.io.encode_base64``."""
    x = _strings(input, "encode_base64")
    return apply("encode_base64", [x], name=name or "EncodeBase64", pad=bool(pad),
                 shape=_shape(x), dtype=dtypes.string)


def decode_base64(input, name=None):  # noqa: A002
    """Each web-safe base64 string of ``input`` decoded (padding optional); text of
    another alphabet, or of a length 1 modulo 4, is an ``InvalidArgumentError``."""
    x = _strings(input, "decode_base64")
    return apply("decode_base64", [x], name=name or "DecodeBase64", shape=_shape(x),
                 dtype=dtypes.string)


def decode_compressed(bytes, compression_type="", name=None):  # noqa: A002
    """Each string of ``bytes`` decompressed: ``compression_type`` "ZLIB", "GZIP", or
    "" (the strings as they are)."""
    if compression_type not in ("", "ZLIB", "GZIP"):
        raise ValueError(f"decode_compressed: compression_type must be '', 'ZLIB' or "
                         f"'GZIP', got {compression_type!r}")
    x = _strings(bytes, "decode_compressed")
    return apply("decode_compressed", [x], name=name or "DecodeCompressed",
                 kind=compression_type, shape=_shape(x), dtype=dtypes.string)


def write_file(filename, contents, name=None):
    """An op that writes the string scalar ``contents`` to the file ``filename`` (a
    string scalar), making its folder if needed, at each run (TF1 ``tf.write_file``)."""
    path = _scalar_string(filename, "write_file")
    data = _scalar_string(contents, "write_file")
    node = apply("write_file", [path, data], name=(name or "WriteFile") + "/run",
                 shape=None, dtype=VARIANT)
    return group(node, name=name or "WriteFile")


def matching_files(pattern, name=None):
    """The paths that match ``pattern`` (a string, or a vector of them; ``*``, ``?``,
    ``[...]``), sorted, as a string vector evaluated at each run."""
    x = _strings(pattern, "matching_files")
    if x.shape is not None and len(x.shape) > 1:
        raise ValueError(f"matching_files: '{x.name}' must be a string or a vector of "
                         f"strings, got shape {list(x.shape)}")
    return apply("matching_files", [x], name=name or "MatchingFiles", once=False,
                 shape=(None,), dtype=dtypes.string)


def match_filenames_once(pattern, name=None):
    """The paths that match ``pattern`` (as ``matching_files``), found once per Session,
    at the first run that needs them, and the same at every later run (TF1
    ``tf.train.match_filenames_once``; there the list is a local variable, here a value
    the Session keeps: gradflow has no string variables)."""
    x = _strings(pattern, "match_filenames_once")
    if x.shape is not None and len(x.shape) > 1:
        raise ValueError(f"match_filenames_once: '{x.name}' must be a string or a vector of "
                         f"strings, got shape {list(x.shape)}")
    return apply("matching_files", [x], name=name or "matching_filenames", once=True,
                 shape=(None,), dtype=dtypes.string)


def _variables(var_list, what):
    if var_list is None:
        var_list = global_variables() + local_variables()
    var_list = list(var_list)
    for var in var_list:
        if not isinstance(var, Variable):
            raise TypeError(f"{what}: {var!r} is not a Variable")
    return tuple(var_list)


def is_variable_initialized(variable):
    """A bool scalar: whether ``variable`` has a value in the Session that runs it."""
    (var,) = _variables([variable], "is_variable_initialized")
    return apply("variables_initialized", [], name="IsVariableInitialized", graph=var.graph,
                 variables=(var,), mode="flags", shape=(), dtype=dtypes.bool_)


def report_uninitialized_variables(var_list=None, name="report_uninitialized_variables"):
    """A string vector of the names of the variables of ``var_list`` (default: the
    global and local variables) that have no value in the Session that runs it."""
    variables = _variables(var_list, "report_uninitialized_variables")
    if not variables:
        return constant(dtypes.bytes_array([]), dtype=dtypes.string, name=name)
    return apply("variables_initialized", [], name=name, graph=variables[0].graph,
                 variables=variables, mode="names", shape=(None,), dtype=dtypes.string)


def assert_variables_initialized(var_list=None):
    """An op that fails with ``FailedPreconditionError`` naming the variables of
    ``var_list`` (default: the global and local variables) that have no value in the
    Session; None when there are no variables, as in TF1."""
    variables = _variables(var_list, "assert_variables_initialized")
    if not variables:
        return None
    node = apply("variables_initialized", [], name="AssertVariablesInitialized/run",
                 graph=variables[0].graph, variables=variables, mode="assert", shape=None,
                 dtype=VARIANT)
    return group(node, name="AssertVariablesInitialized")


def count_up_to(ref, limit, name=None):
    """The value of the int32/int64 variable ``ref`` before it is incremented by one;
    once it has reached ``limit``, an ``OutOfRangeError`` (TF1 ``tf.count_up_to``)."""
    if not isinstance(ref, Variable):
        raise TypeError(f"count_up_to: ref must be a Variable, got {ref!r}")
    if ref.dtype not in (dtypes.int32, dtypes.int64) or (ref.shape is not None
                                                         and len(ref.shape)):
        raise TypeError(f"count_up_to: '{ref.name}' must be an int32 or int64 scalar")
    return apply("count_up_to", [ref], name=name or "CountUpTo", var=ref, limit=int(limit),
                 shape=(), dtype=ref.dtype)

