"""A variational autoencoder as the tutorials write it: the noise is
tf.random_normal(tf.shape(z_log_sigma_sq)), so its shape follows the batch fed."""
import numpy as np

import gradflow as tf


def xavier_init(fan_in, fan_out, constant=1):
    low = -constant * np.sqrt(6.0 / (fan_in + fan_out))
    return tf.random_uniform((fan_in, fan_out), minval=low, maxval=-low, dtype=tf.float32)


def main(data, steps=60, n_z=2, seed=3):
    tf.reset_default_graph()
    tf.set_random_seed(seed)
    n_input = data.shape[1]
    x = tf.placeholder(tf.float32, [None, n_input])
    w = {"h": tf.Variable(xavier_init(n_input, 16)),
         "mean": tf.Variable(xavier_init(16, n_z)),
         "log_sigma": tf.Variable(xavier_init(16, n_z)),
         "out": tf.Variable(xavier_init(n_z, n_input))}
    h = tf.nn.softplus(tf.matmul(x, w["h"]))
    z_mean = tf.matmul(h, w["mean"])
    z_log_sigma_sq = tf.matmul(h, w["log_sigma"])
    eps = tf.random_normal(tf.shape(z_log_sigma_sq), 0, 1, dtype=tf.float32)
    z = tf.add(z_mean, tf.multiply(tf.sqrt(tf.exp(z_log_sigma_sq)), eps))
    x_reconstr_mean = tf.nn.sigmoid(tf.matmul(z, w["out"]))
    reconstr_loss = -tf.reduce_sum(x * tf.log(1e-10 + x_reconstr_mean)
                                   + (1 - x) * tf.log(1e-10 + 1 - x_reconstr_mean), 1)
    latent_loss = -0.5 * tf.reduce_sum(1 + z_log_sigma_sq - tf.square(z_mean)
                                       - tf.exp(z_log_sigma_sq), 1)
    cost = tf.reduce_mean(reconstr_loss + latent_loss)
    optimizer = tf.train.AdamOptimizer(learning_rate=0.01).minimize(cost)
    costs, snapshots = [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(steps):
            batch = data[(step % 4) * 10:(step % 4) * 10 + (10 if step % 2 else 7)]
            if step < 2:
                snapshots.append((batch, sess.run(w), sess.run([eps, cost], {x: batch})))
            _, c = sess.run((optimizer, cost), feed_dict={x: batch})
            costs.append(c)
    return {"costs": costs, "snapshots": snapshots}
