import gradflow as tf


def main():
    tf.Graph().as_default()
    A = tf.Variable([[1, 0], [0, -1]])
    b = tf.Variable([1, 1])
    x = tf.placeholder()
    y = tf.add(tf.matmul(A, x), b)
    session = tf.Session()
    output = session.run(y, {x: [1, 2]})
    print(output)
    return output
