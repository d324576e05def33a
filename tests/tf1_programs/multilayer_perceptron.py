import gradflow as tf

n_hidden_1 = 64
n_hidden_2 = 64
n_input = 784
n_classes = 10

weights = None
biases = None


def multilayer_perceptron(x):
    layer_1 = tf.add(tf.matmul(x, weights["h1"]), biases["b1"])
    layer_1 = tf.nn.relu(layer_1)
    layer_2 = tf.add(tf.matmul(layer_1, weights["h2"]), biases["b2"])
    layer_2 = tf.nn.relu(layer_2)
    return tf.matmul(layer_2, weights["out"]) + biases["out"]


def main(mnist, learning_rate=0.001, steps=150, batch_size=100):
    global weights, biases
    tf.set_random_seed(1)
    X = tf.placeholder("float", [None, n_input])
    Y = tf.placeholder("float", [None, n_classes])
    weights = {
        "h1": tf.Variable(tf.random_normal([n_input, n_hidden_1], stddev=0.05)),
        "h2": tf.Variable(tf.random_normal([n_hidden_1, n_hidden_2], stddev=0.1)),
        "out": tf.Variable(tf.random_normal([n_hidden_2, n_classes], stddev=0.1)),
    }
    biases = {
        "b1": tf.Variable(tf.random_normal([n_hidden_1], stddev=0.01)),
        "b2": tf.Variable(tf.random_normal([n_hidden_2], stddev=0.01)),
        "out": tf.Variable(tf.random_normal([n_classes], stddev=0.01)),
    }
    logits = multilayer_perceptron(X)
    loss_op = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
    optimizer = tf.train.AdamOptimizer(learning_rate=learning_rate)
    train_op = optimizer.minimize(loss_op)
    init = tf.global_variables_initializer()
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(init)
        for step in range(steps):
            batch_x, batch_y = mnist.train.next_batch(batch_size)
            sess.run(train_op, feed_dict={X: batch_x, Y: batch_y})
        pred = tf.nn.softmax(logits)
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(Y, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, "float"))
        return {"accuracy": accuracy.eval({X: mnist.test.images, Y: mnist.test.labels})}
