"""Op-spec entries of the host set ops (gradflow/prim/sets.py): kind 'call', value-sized
SparseTensor results made on the host, no gradient; their values are checked against
TensorFlow 2.21's in tests/test_sets_tf1.py."""

from op_specs import EXEMPT

EXEMPT.update({
    "set_operation": "kind 'call': intersections, unions and differences of sets, on the "
                     "host (test_sets_tf1.py)",
    "set_size": "kind 'call': the sizes of a SparseTensor's sets, on the host "
                "(test_sets_tf1.py)",
})
