"""Op-spec entries of the host ops of ``tf.io`` and of a Session's variables
(gradflow/prim/serialize.py, gradflow/prim/io_host.py): they are of kind 'call', run on
the host, and have no gradient; their values are checked against TensorFlow 2.21's in
tests/test_io_host_tf1.py."""

from op_specs import EXEMPT

EXEMPT.update({
    "serialize_tensor": "kind 'call': a tensor as TensorProto bytes, on the host "
                        "(test_io_host_tf1.py)",
    "parse_tensor": "kind 'call': TensorProto bytes read on the host (test_io_host_tf1.py)",
    "serialize_sparse": "kind 'call': a SparseTensor as TensorProto bytes, on the host "
                        "(test_io_host_tf1.py)",
    "deserialize_many_sparse": "kind 'call': serialized SparseTensors read on the host "
                               "(test_io_host_tf1.py)",
    "encode_base64": "kind 'call': web-safe base64 on the host (test_io_host_tf1.py)",
    "decode_base64": "kind 'call': web-safe base64 on the host (test_io_host_tf1.py)",
    "decode_compressed": "kind 'call': zlib/gzip on the host (test_io_host_tf1.py)",
    "write_file": "kind 'call': writes a file on the host (test_io_host_tf1.py)",
    "matching_files": "kind 'call': a glob on the host (test_io_host_tf1.py)",
    "variables_initialized": "kind 'call': looks at the Session's variable store "
                             "(test_io_host_tf1.py)",
    "count_up_to": "kind 'call': increments a variable under the store lock "
                   "(test_io_host_tf1.py)",
})

EXEMPT.update({
    "parse_sequence_example": "kind 'call': tf.train.SequenceExample records parsed on the "
                              "host (test_sequence_parsing_tf1.py)",
})

EXEMPT.update({
    "TensorSummary": "kind 'call': a serialized Summary protobuf, made on the host "
                     "(test_summary_more_tf1.py)",
    "AudioSummaryV2": "kind 'call': WAV files in a serialized Summary, made on the host "
                      "(test_summary_more_tf1.py)",
})
