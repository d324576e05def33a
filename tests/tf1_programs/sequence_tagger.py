"""A sequence tagger over padded batches: embeddings, tf.layers.dense on a
[None, None, 128] tensor, and tf.contrib.seq2seq.sequence_loss with a mask from the
sequence lengths; batches of different lengths and sizes in one session."""
import numpy as np

import gradflow as tf

vocab, hidden = 12, 128


def batches(steps, seed=0):
    rng = np.random.RandomState(seed)
    for step in range(steps):
        size, length = (4, 6) if step % 2 else (3, 9)
        lengths = rng.randint(2, length + 1, size)
        words = rng.randint(0, vocab, (size, length))
        yield words, (words * 5 + 3) % vocab, lengths  # the tag is a function of the word


def main(steps=120):
    tf.reset_default_graph()
    tf.set_random_seed(2)
    words = tf.placeholder(tf.int32, [None, None], name="words")
    tags = tf.placeholder(tf.int32, [None, None], name="tags")
    lengths = tf.placeholder(tf.int32, [None], name="lengths")
    embeddings = tf.get_variable("embeddings", [vocab, hidden],
                                 initializer=tf.random_uniform_initializer(-0.1, 0.1))
    inputs = tf.nn.embedding_lookup(embeddings, words)  # [None, None, 128]
    logits = tf.layers.dense(inputs, vocab, name="output")  # [None, None, 12]
    mask = tf.sequence_mask(lengths, tf.shape(words)[1], dtype=tf.float32)
    loss = tf.contrib.seq2seq.sequence_loss(logits, tags, mask)
    per_step = tf.contrib.seq2seq.sequence_loss(logits, tags, mask,
                                                average_across_timesteps=False)
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss)
    losses, checks = [], []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step, (w, t, n) in enumerate(batches(steps)):
            feed = {words: w, tags: t, lengths: n}
            if step < 2:
                checks.append((w, t, n) + tuple(sess.run([logits, loss, per_step], feed)))
            _, step_loss = sess.run([train_op, loss], feed)
            losses.append(step_loss)
    return {"losses": losses, "checks": checks, "logits_shape": logits.shape}
