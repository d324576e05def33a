"""Op specs of the stateless random draw (gradflow/prim/stateless_random.py): a host op
of kind "call" with no gradient, EXEMPT as random numbers have no NumPy reference;
tests/test_stateless_random_tf1.py checks its shapes, dtypes, determinism in the seed on
every backend, moments and the gradients of TF1's functions over it.
"""

from __future__ import annotations

from op_specs import EXEMPT

EXEMPT.update({
    "stateless_draw": "kind 'call': numbers drawn on the host from the seed's value "
                      "(test_stateless_random_tf1.py)",
})
