"""Op-spec entries of the host ops of lookup tables and feature columns
(gradflow/prim/lookup.py): they are of kind 'call', run on the host, and have no
gradient; their values are checked against TensorFlow 2.21's in
tests/test_feature_column_tf1.py."""

from op_specs import EXEMPT

EXEMPT.update({
    "lookup_table_init": "kind 'call': fills a table in the Session from two tensors "
                         "(test_feature_column_tf1.py)",
    "lookup_table_text_init": "kind 'call': fills a table in the Session from a text file "
                              "(test_feature_column_tf1.py)",
    "lookup_table_find": "kind 'call': keys to values through a Session's table "
                         "(test_feature_column_tf1.py)",
    "lookup_table_size": "kind 'call': the size of a Session's table "
                         "(test_feature_column_tf1.py)",
    "drop_ignored_values": "kind 'call': a dense tensor to a SparseTensor's parts on the host "
                           "(test_feature_column_tf1.py)",
    "sparse_cross_hashed": "kind 'call': hashed crosses of sparse features on the host "
                           "(test_feature_column_tf1.py)",
})
