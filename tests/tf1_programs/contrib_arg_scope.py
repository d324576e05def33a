"""A classifier written the tf.contrib.layers way: arg_scope around fully_connected,
batch_norm and dropout, an L2 regularizer, and the batch-norm updates run with the
training step through the UPDATE_OPS collection."""
import numpy as np

import gradflow as tf

fully_connected = tf.contrib.layers.fully_connected
batch_norm = tf.contrib.layers.batch_norm
dropout = tf.contrib.layers.dropout
arg_scope = tf.contrib.framework.arg_scope


def make_data(n, seed):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 2, n)
    centers = np.array([[-1.0] * 8, [1.0] * 8], np.float32)
    return (centers[labels] + rng.normal(0, 1.0, (n, 8))).astype(np.float32), labels


def model(x, is_training):
    with arg_scope([fully_connected], normalizer_fn=batch_norm,
                   normalizer_params={"is_training": is_training, "decay": 0.9},
                   weights_regularizer=tf.contrib.layers.l2_regularizer(1e-3)):
        with arg_scope([dropout], keep_prob=0.8, is_training=is_training):
            net = fully_connected(x, 32, scope="fc1")
            net = dropout(net)
            net = fully_connected(net, 16, scope="fc2")
            net = dropout(net)
    return fully_connected(net, 2, activation_fn=None, scope="logits")


def main(steps=150, batch_size=32):
    tf.reset_default_graph()
    tf.set_random_seed(1)
    x = tf.placeholder(tf.float32, [None, 8], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    is_training = tf.placeholder(tf.bool, name="is_training")
    logits = model(x, is_training)
    xent = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    reg = tf.losses.get_regularization_loss()
    loss = xent + reg
    update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_ops):
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    train_x, train_y = make_data(1024, 0)
    test_x, test_y = make_data(512, 1)
    weights = [v for v in tf.global_variables() if v.name.split(":")[0].endswith("weights")]
    losses = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            start = (step * batch_size) % len(train_x)
            feed = {x: train_x[start:start + batch_size], y: train_y[start:start + batch_size],
                    is_training: True}
            _, step_loss = sess.run([train_op, loss], feed_dict=feed)
            losses.append(step_loss)
        test_feed = {x: test_x, y: test_y, is_training: False}
        acc, acc_again, reg_value = sess.run([accuracy, accuracy, reg], feed_dict=test_feed)
        evaluated = [sess.run(logits, test_feed) for _ in range(2)]
        values = sess.run({"weights": weights,
                           "moving_mean": tf.get_collection(tf.GraphKeys.MODEL_VARIABLES)})
    return {"losses": losses, "accuracy": acc, "reg": reg_value, "evaluated": evaluated,
            "names": [v.name for v in tf.model_variables()], "values": values}
