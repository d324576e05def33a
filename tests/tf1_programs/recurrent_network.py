import gradflow as tf
from gradflow.contrib import rnn

num_input = 28
timesteps = 28
num_hidden = 32
num_classes = 10


def RNN(x, weights, biases):
    x = tf.unstack(x, timesteps, 1)
    lstm_cell = rnn.BasicLSTMCell(num_hidden, forget_bias=1.0)
    outputs, states = rnn.static_rnn(lstm_cell, x, dtype=tf.float32)
    return tf.matmul(outputs[-1], weights["out"]) + biases["out"]


def main(mnist, learning_rate=0.01, steps=60, batch_size=64):
    tf.set_random_seed(2)
    X = tf.placeholder("float", [None, timesteps, num_input])
    Y = tf.placeholder("float", [None, num_classes])
    weights = {"out": tf.Variable(tf.random_normal([num_hidden, num_classes], stddev=0.1))}
    biases = {"out": tf.Variable(tf.random_normal([num_classes], stddev=0.1))}
    logits = RNN(X, weights, biases)
    prediction = tf.nn.softmax(logits)
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
    train_op = tf.train.AdamOptimizer(learning_rate=learning_rate).minimize(loss_op)
    correct_pred = tf.equal(tf.argmax(prediction, 1), tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_pred, tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            batch_x, batch_y = mnist.train.next_batch(batch_size)
            batch_x = batch_x.reshape((batch_size, timesteps, num_input))
            sess.run(train_op, feed_dict={X: batch_x, Y: batch_y})
        test_data = mnist.test.images.reshape((-1, timesteps, num_input))
        return {"accuracy": sess.run(accuracy, feed_dict={X: test_data,
                                                          Y: mnist.test.labels})}
