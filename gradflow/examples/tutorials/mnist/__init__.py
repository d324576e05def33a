"""TF1's ``tensorflow.examples.tutorials.mnist``: ``input_data`` reads MNIST."""
