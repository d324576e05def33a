"""Ops of ``tf.data.experimental`` (EXEMPT: host ops without a gradient; their values are
checked against TensorFlow 2.21's in tests/test_data_experimental2_tf1.py)."""

from op_specs import EXEMPT

EXEMPT.update({
    "dataset_evaluate": "kind 'call': runs a gf.data pipeline to its end in one step "
                        "(get_single_element, cardinality, TFRecordWriter.write)",
})
