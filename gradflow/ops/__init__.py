"""TF1's op functions over the primitives of ``gradflow.prim``, one module per family
(``math_ops``, ``array_ops``, ``nn_ops``, ``rnn_ops``...): argument aliases, Python
values turned into tensors, ``SparseTensor`` and ``Variable`` handling, composites.
The records themselves (implementation, shape and dtype rule, gradient, traits) are
in ``gradflow.prim``, which never imports this package. Nothing is imported here:
``gradflow`` imports the families it exposes."""
