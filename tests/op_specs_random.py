"""Op specs of the random draws whose distribution takes tensors
(gradflow/prim/random_draws.py): the draws themselves are host ops of kind "call"
(EXEMPT: random numbers have no NumPy reference; tests/test_random_ops_tf1.py checks
them); ``random_gamma_grad`` against TensorFlow 2.21's ``RandomGammaGrad`` (the
literals below, from ``tf.raw_ops.RandomGammaGrad(alpha=A, sample=X)`` in float64);
``gamma_reparam``, the identity in its sample whose alpha-gradient is that op's.
"""

from __future__ import annotations

import numpy as np
from op_specs import EXEMPT, spec

from gradflow.prim.registry import apply

EXEMPT.update({
    "random_gamma": "kind 'call': gamma numbers drawn on the host (test_random_ops_tf1.py)",
    "random_poisson": "kind 'call': Poisson numbers drawn on the host "
                      "(test_random_ops_tf1.py)",
    "multinomial_counts": "kind 'call': multinomial counts drawn on the host for "
                          "distributions.Multinomial (test_distributions_tf1.py)",
})

_ALPHA = np.array([0.01, 0.1, 0.5, 1.0, 1.0, 2.5, 2.5, 7.0, 30.0, 30.0, 100.0, 0.3, 5.0])
_SAMPLE = np.array([1e-30, 0.05, 0.3, 0.5, 8.0, 2.0, 12.0, 8.5, 31.5, 45.0, 80.0, 20.0, 0.01])
# TensorFlow 2.21, float64
_TF_GRAD = np.array([
    6.851666733195268e-27, 1.3672830678368921, 1.0098019459488548, 0.806979116825318,
    2.768936845834867, 0.9534627029186169, 2.110481520182, 1.1267592047415695,
    1.0303042539271872, 1.2231425063703325, 0.8940606683561856, 6.332733869356949,
    0.012644200458450366])




def _literal(inputs, outputs):
    """A reference that knows only TensorFlow's outputs for the spec's own inputs: other
    inputs (the fuzzer's NaNs, empty arrays) have none, which it says by refusing them."""
    def ref(*arrays):
        if not all(a.shape == i.shape and np.allclose(a, i.astype(a.dtype), rtol=1e-6)
                   for a, i in zip(arrays, inputs)):
            raise ValueError("no TensorFlow value recorded for these inputs")
        return outputs.astype(arrays[0].dtype)

    return ref


_BROADCAST = (np.array([[2.5], [7.0]]), np.array([[2.0, 12.0]]))
# float32 holds 1e-30 as a normal number; its inputs' rounding moves results by < 2e-5
spec("random_gamma_grad", "random_gamma_grad",
     lambda a, x: apply("random_gamma_grad", [a, x]),
     lambda rng: [_ALPHA.copy(), _SAMPLE.copy()], _literal((_ALPHA, _SAMPLE), _TF_GRAD),
     grad=(), tol={"float32": (2e-5, 1e-30), "float64": (1e-11, 1e-300)})
spec("random_gamma_grad_broadcast", "random_gamma_grad",
     lambda a, x: apply("random_gamma_grad", [a, x]),
     lambda rng: [a.copy() for a in _BROADCAST],
     _literal(_BROADCAST, np.array([[0.9534627029186169, 2.110481520182],  # TensorFlow 2.21's
                                    [0.5124724019298228, 1.3246077171645299]])),
     grad=(), tol={"float32": (2e-5, 1e-30), "float64": (1e-11, 1e-300)})
# the identity in x; its gradient in alpha is random_gamma_grad's (checked above and, on
# random_gamma's draws, in test_random_ops_tf1.py): finite differences check x only
spec("gamma_reparam", "gamma_reparam",
     lambda x, a: apply("gamma_reparam", [x, a]),
     lambda rng: [rng.uniform(0.5, 3.0, (4, 3)), rng.uniform(0.5, 3.0, (3,))],
     lambda x, a: x, grad=(0,))
