"""TF1's ``tf.io`` namespace, for its file functions: ``tf.io.gfile.exists`` and the
rest of ``gradflow.gfile``."""

from gradflow import gfile

__all__ = ["gfile"]
