"""TF1's ``tensorflow.examples.tutorials.mnist``: ``input_data`` reads MNIST; ``mnist``
is the model of TF1's ``fully_connected_feed.py`` tutorial."""
