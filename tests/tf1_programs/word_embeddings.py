import numpy as np

import gradflow as tf

vocabulary_size = 12
embedding_size = 8


def main(steps=150, batch_size=32, learning_rate=1.0):
    tf.set_random_seed(5)
    train_inputs = tf.placeholder(tf.int32, shape=[batch_size])
    train_labels = tf.placeholder(tf.int32, shape=[batch_size, 1])
    valid_dataset = tf.constant([1, 2], dtype=tf.int32)
    with tf.name_scope("embeddings"):
        embeddings = tf.Variable(
            tf.random_uniform([vocabulary_size, embedding_size], -1.0, 1.0))
        embed = tf.nn.embedding_lookup(embeddings, train_inputs)
    with tf.name_scope("weights"):
        softmax_weights = tf.Variable(tf.truncated_normal(
            [vocabulary_size, embedding_size], stddev=1.0 / np.sqrt(embedding_size)))
    with tf.name_scope("biases"):
        softmax_biases = tf.Variable(tf.zeros([vocabulary_size]))
    logits = tf.matmul(embed, tf.transpose(softmax_weights)) + softmax_biases
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(train_labels, [-1]), logits=logits))
    optimizer = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss)
    norm = tf.sqrt(tf.reduce_sum(tf.square(embeddings), 1, keep_dims=True))
    normalized_embeddings = embeddings / norm
    valid_embeddings = tf.nn.embedding_lookup(normalized_embeddings, valid_dataset)
    similarity = tf.matmul(valid_embeddings, normalized_embeddings, transpose_b=True)
    prediction = tf.argmax(logits, 1)
    rng = np.random.RandomState(0)
    losses = []
    with tf.Session() as session:
        tf.global_variables_initializer().run()
        for step in range(steps):
            batch = rng.randint(0, vocabulary_size, batch_size)
            labels = ((batch + 1) % vocabulary_size).reshape(-1, 1)  # "the next word"
            _, loss_val = session.run([optimizer, loss],
                                      feed_dict={train_inputs: batch, train_labels: labels})
            losses.append(loss_val)
        words = np.arange(batch_size) % vocabulary_size
        predicted = session.run(prediction, feed_dict={train_inputs: words})
        sim = similarity.eval()
        final_embeddings = normalized_embeddings.eval()
    return {"losses": losses, "words": words, "predicted": predicted, "similarity": sim,
            "embeddings": final_embeddings}
