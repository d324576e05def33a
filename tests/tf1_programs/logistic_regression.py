import numpy as np

import gradflow as tf


def main(mnist, learning_rate=0.5, epochs=3, batch_size=100):
    x = tf.placeholder("float", [None, 784])
    y = tf.placeholder("float", [None, 10])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred + 1e-10), reduction_indices=1))
    optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)
    init = tf.initialize_all_variables()
    costs = []
    with tf.Session() as sess:
        sess.run(init)
        for epoch in range(epochs):
            avg_cost = 0.0
            total_batch = int(mnist.train.num_examples / batch_size)
            for i in range(total_batch):
                batch_xs, batch_ys = mnist.train.next_batch(batch_size)
                _, c = sess.run([optimizer, cost], feed_dict={x: batch_xs, y: batch_ys})
                avg_cost += c / total_batch
            costs.append(avg_cost)
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
        acc = accuracy.eval({x: mnist.test.images, y: mnist.test.labels})
        weights = sess.run(W)
    return {"costs": costs, "accuracy": acc, "W": weights, "dtype": np.asarray(acc).dtype}
