"""TF1's ``tensorflow.examples`` modules that tutorial scripts import
(``from gradflow.examples.tutorials.mnist import input_data``)."""
