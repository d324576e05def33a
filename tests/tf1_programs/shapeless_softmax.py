"""Softmax regression over placeholders with no shape at all, trained on batches of two
sizes in one session, the loss printed each step."""
import gradflow as tf


def main(batches, learning_rate=0.5):
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32)
    y = tf.placeholder(tf.float32)
    W = tf.Variable(tf.zeros([4, 3]))
    b = tf.Variable(tf.zeros([3]))
    pred = tf.matmul(x, W) + b
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=pred))
    optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(cost)
    printed = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch_x, batch_y in batches:
            _, c = sess.run([optimizer, cost], feed_dict={x: batch_x, y: batch_y})
            printed.append("cost=" + repr(c))
            last = c
        return {"W": sess.run(W), "b": sess.run(b), "printed": printed, "last": last}
