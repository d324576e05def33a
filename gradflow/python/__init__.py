"""The module paths TF1 programs import from ``tensorflow.python`` that gradflow has:
``tensorflow.python.client.timeline`` and ``tensorflow.python.platform.gfile``, so
that ``from gradflow.python.client import timeline`` runs as the TF1 line did."""
