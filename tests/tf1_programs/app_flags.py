import gradflow as tf

flags = tf.app.flags
flags.DEFINE_integer("steps", 3, "number of steps")
flags.DEFINE_float("learning_rate", 0.1, "learning rate")
flags.DEFINE_string("name", "run", "a name")
FLAGS = flags.FLAGS

def main(_):
    x = tf.Variable(5.0)
    loss = tf.square(x)
    train = tf.train.GradientDescentOptimizer(FLAGS.learning_rate).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(FLAGS.steps):
            sess.run(train)
        print(f"x={sess.run(x):.6f} name={FLAGS.name} steps={FLAGS.steps}")


if __name__ == "__main__":
    tf.app.run()
