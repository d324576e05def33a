"""Op-spec entries of the host string ops (gradflow/prim/strings.py): they are of kind
'call', run on the host where gradflow's strings are, and have no gradient; their values
are checked against TensorFlow 2.21's in tests/test_strings_tf1.py."""

from op_specs import EXEMPT

EXEMPT.update({
    "string_split": "kind 'call': strings split into a SparseTensor on the host "
                    "(test_strings_tf1.py)",
    "string_join": "kind 'call': strings joined on the host (test_strings_tf1.py)",
    "reduce_join": "kind 'call': strings joined along axes on the host (test_strings_tf1.py)",
    "string_length": "kind 'call': lengths of strings, on the host (test_strings_tf1.py)",
    "string_transform": "kind 'call': strip, lower, upper on the host (test_strings_tf1.py)",
    "substr": "kind 'call': parts of strings, on the host (test_strings_tf1.py)",
    "regex_replace": "kind 'call': regular-expression rewrites on the host "
                     "(test_strings_tf1.py)",
    "regex_full_match": "kind 'call': regular-expression matches on the host "
                        "(test_strings_tf1.py)",
    "string_to_number": "kind 'call': text parsed into numbers on the host "
                        "(test_strings_tf1.py)",
    "as_string": "kind 'call': numbers formatted as text on the host (test_strings_tf1.py)",
    "string_to_hash_bucket_fast": "kind 'call': FarmHash buckets of strings on the host "
                                  "(test_strings_tf1.py)",
})
