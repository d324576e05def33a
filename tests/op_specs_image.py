"""Op-spec entries of tf.image's host ops added with encode_png/encode_jpeg
(gradflow/prim/image_io.py); the other new tf.image functions are composites of ops that
have specs, checked against TensorFlow 2.21's values in tests/test_image_tf1.py."""

from op_specs import EXEMPT

EXEMPT.update({
    "encode_image": "kind 'call': an image written as PNG or JPEG bytes on the host by "
                    "Pillow (test_image_tf1.py)",
})
