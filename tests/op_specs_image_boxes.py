"""Op-spec entries of the host ops on boxes and strings added with tf.image's NMS family
and the strings' hashes (gradflow/prim/image_boxes.py, gradflow/prim/strings_hash.py):
they are of kind 'call', run on the host, and have no gradient; their values are checked
against TensorFlow 2.21's in tests/test_image_boxes_tf1.py, tests/test_image_more_tf1.py
and tests/test_strings_hash_tf1.py."""

from op_specs import EXEMPT

EXEMPT.update({
    "non_max_suppression": "kind 'call': greedy (soft-)NMS on the host "
                           "(test_image_boxes_tf1.py)",
    "combined_non_max_suppression": "kind 'call': NMS per class and image on the host "
                                    "(test_image_boxes_tf1.py)",
    "draw_bounding_boxes": "kind 'call': box outlines drawn on the host "
                           "(test_image_more_tf1.py)",
    "string_to_hash_bucket": "kind 'call': TF's Hash64 buckets of strings on the host "
                             "(test_strings_hash_tf1.py)",
    "string_to_hash_bucket_strong": "kind 'call': SipHash-2-4 buckets of strings on the host "
                                    "(test_strings_hash_tf1.py)",
    "fingerprint": "kind 'call': FarmHash fingerprints of rows on the host "
                   "(test_strings_hash_tf1.py)",
    "unsorted_segment_join": "kind 'call': strings joined per segment on the host "
                             "(test_strings_hash_tf1.py)",
})
