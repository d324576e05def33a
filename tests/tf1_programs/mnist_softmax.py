"""Softmax regression on MNIST, the first TF1 tutorial, read with input_data."""
import argparse
import sys

import gradflow as tf
from gradflow.examples.tutorials.mnist import input_data

FLAGS = None


def train_and_test(data_dir, steps=1000):
    # Read the digits: 55,000 training images flattened to 784 floats, one-hot labels
    mnist = input_data.read_data_sets(data_dir, one_hot=True)

    # The model: y = x W + b
    x = tf.placeholder(tf.float32, [None, 784])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b

    # The loss: cross-entropy of the softmax against the true labels
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    for _ in range(steps):
        batch_xs, batch_ys = mnist.train.next_batch(100)
        sess.run(train_step, feed_dict={x: batch_xs, y_: batch_ys})

    # How many test digits does the model get right?
    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    result = sess.run(accuracy, feed_dict={x: mnist.test.images, y_: mnist.test.labels})
    sess.close()
    return {"accuracy": result, "mnist": mnist}


def main(_):
    print(train_and_test(FLAGS.data_dir, FLAGS.steps)["accuracy"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", type=str, default="/tmp/tensorflow/mnist/input_data",
                        help="Directory for storing input data")
    parser.add_argument("--steps", type=int, default=1000)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
