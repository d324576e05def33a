"""Op specs of the CTC beam search (gradflow/prim/ctc_beam.py): host ops of kind "call"
without gradients, EXEMPT here; tests/test_ctc_more_tf1.py checks them against
TensorFlow 2.21's values.
"""

from __future__ import annotations

from op_specs import EXEMPT

EXEMPT.update({
    "ctc_beam_search": "kind 'call': nn.ctc_beam_search_decoder's beam search "
                       "(test_ctc_more_tf1.py)",
    "ctc_beam_path": "kind 'call': one path of the beam search's value (test_ctc_more_tf1.py)",
    "ctc_unique": "kind 'call': nn.ctc_unique_labels's rows (test_ctc_more_tf1.py)",
})
