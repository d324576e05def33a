"""The ops: each op's record (``registry.register``: its Array API function, shape and
dtype rule, gradient and traits) and the TF1 functions that build its nodes, one module
per family (``math_ops``, ``array_ops``, ``nn_ops``, ``rnn_ops``...). Nothing is
imported here: ``gradflow`` imports the families it exposes."""
