"""TF1's ``tensorflow.examples.tutorials``."""
