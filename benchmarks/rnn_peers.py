"""TensorFlow and JAX rows of the recurrent benchmarks (``lstm_step.py``, ``rnn_models.py``).

Each peer trains the benchmark's model from the SAME initial weights (the weights dicts
those scripts build), so its first loss is gradflow's to float32 rounding (printed):

* ``tf``: TensorFlow written TF1-style, in its own ``tf.Graph`` and ``tf.compat.v1.Session``
  (graph mode without ``disable_eager_execution``, which is process-wide): ids ->
  ``embedding_lookup`` -> ``tf.compat.v1.nn.dynamic_rnn`` of TF's ``LSTMCell`` /
  ``GRUCell`` / ``MultiRNNCell`` (``bidirectional_dynamic_rnn`` for the biLSTM) -> softmax
  layer -> ``sparse_softmax_cross_entropy_with_logits``, ``AdamOptimizer(1e-3)``; the
  timed step is the ``session.run`` of the train op. TF's LSTM kernel ``[inputs + H, 4H]``
  (gates i, j, f, o, ``forget_bias`` 1.0) and GRU kernels are gradflow's layout, so the
  weights are assigned as they are. With Keras 3 (TF 2.16 on, without ``tf_keras``)
  ``tf.compat.v1.nn.rnn_cell.LSTMCell`` raises "not available with Keras 3"; the same
  classes still ship in TF as ``tensorflow.python.ops.rnn_cell_impl`` (TF's legacy copy of
  the Keras 2 cells), which is used then.
* ``jax``: the same model as pure functions: the input product of all time steps as one
  matmul, ``jax.lax.scan`` over time for the recurrence (``reverse=True`` for the backward
  direction, as TF reverses the inputs), ``jax.value_and_grad``, TF1's Adam written out
  (lr 1e-3, beta 0.9/0.999, eps 1e-8), the whole step under ``jax.jit`` with its state
  buffers donated; the timed call ends in ``jax.block_until_ready``. The GRU is TF's
  formula (the reset gate before the candidate's matmul), not ``flax``'s.

The libraries are imported only when a row is built (``installed`` checks for them without
importing them), so the benchmarks run where they are missing: ``installed`` prints
"tensorflow not installed: no TF rows" and the run goes on. ``pin_threads(n)`` must run
before anything imports JAX: ``--threads 1`` sets ``XLA_FLAGS``
(``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``); any ``n`` sets
TF's ``intra_op_parallelism_threads`` and ``inter_op_parallelism_threads`` to ``n``
(``ConfigProto``). XLA has no flag for ``n > 1`` threads: JAX keeps its own then.
"""

from __future__ import annotations

# no NumPy here: lstm_step.py imports this module before it pins NumPy's BLAS threads
import importlib.util
import os
import traceback
import warnings

ALL = ("tf", "jax")
MODULES = {"tf": "tensorflow", "jax": "jax"}
NAMES = {"tf": "TF", "jax": "JAX"}
AGREE = 1e-5  # relative difference of first losses printed as agreeing (rnn_models's)
FORGET_BIAS = 1.0  # TF1 LSTMCell's default, as gradflow's
LEARNING_RATE, BETA1, BETA2, EPSILON = 1e-3, 0.9, 0.999, 1e-8  # TF1 AdamOptimizer's
_XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
_threads = None  # pin_threads's value, read when a TF session is made


def add_argument(parser):
    """``--peers [tf] [jax]``: the peer libraries to time where installed (default both;
    ``--peers`` alone: none)."""
    parser.add_argument("--peers", nargs="*", choices=ALL, default=list(ALL),
                        help="TensorFlow / JAX rows where installed (default: both; "
                             "--peers alone: none)")


def pin_threads(threads):
    """Pin the peers to ``threads`` as ``timing.pin_threads_from_argv`` pins NumPy and
    PyTorch; ``None`` leaves their defaults. Call it before JAX is imported."""
    global _threads
    _threads = threads
    if threads == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        if _XLA_ONE_THREAD not in flags:
            os.environ["XLA_FLAGS"] = (flags + " " + _XLA_ONE_THREAD).strip()


def installed(peers=ALL):
    """The peers of ``peers`` whose library is installed (found, not imported); prints a
    line for each missing one."""
    found = []
    for peer in peers:
        module = MODULES[peer]
        if importlib.util.find_spec(module) is None:
            print(f"{module} not installed: no {NAMES[peer]} rows")
        else:
            found.append(peer)
    return tuple(found)


def model_kind(weights):
    """Which model ``weights`` are for, from their keys: ``"GRU"``, ``"LSTM x2"``,
    ``"biLSTM"`` or ``"LSTM"`` (the char-LSTM)."""
    for key, kind in (("gate_kernel", "GRU"), ("kernel0", "LSTM x2"),
                      ("kernel_fw", "biLSTM"), ("kernel", "LSTM")):
        if key in weights:
            return kind
    raise ValueError(f"weights with keys {sorted(weights)}: no recurrent model known")


PEER_MODELS = ("GRU", "LSTM x2", "biLSTM")  # rnn_models.py's models given peer rows
# the cells' variables of each model, in the order of the cells' trainable_variables
CELL_WEIGHTS = {"LSTM": ("kernel", "bias"),
                "GRU": ("gate_kernel", "gate_bias", "cand_kernel", "cand_bias"),
                "LSTM x2": ("kernel0", "bias0", "kernel1", "bias1"),
                "biLSTM": ("kernel_fw", "bias_fw", "kernel_bw", "bias_bw")}


def peer_makers(weights, x, y, peers):
    """``{row label: make}`` for each peer of ``peers``: ``make()`` builds the peer's step
    from ``weights`` on ids ``x`` and targets ``y`` (int ``[batch, time]``) and returns
    ``(step, first loss)``; ``step.loss()`` is the loss at the step's current weights. A
    library that is found but fails to import prints why and gives no row."""
    makers = {}
    for peer in peers:
        try:
            label, make = (tf_row if peer == "tf" else jax_row)(weights, x, y)
        except Exception as err:  # noqa: BLE001 - a broken install must not end the run
            print(f"{MODULES[peer]} failed to import ({type(err).__name__}: {err}): "
                  f"no {NAMES[peer]} rows")
            continue
        makers[label] = make
    return makers


def add_rows(steps, weights, x, y, peers, reference=None):
    """Build each peer's step into ``steps`` (``{label: step}``, timed later); prints its
    first loss against ``reference`` (gradflow's), or FAILED and the last lines of the
    traceback where building or a first step raises. Returns ``{label: first loss}``."""
    losses = {}
    for label, make in peer_makers(weights, x, y, peers).items():
        try:
            step, losses[label] = make()
            step()
        except Exception as err:  # noqa: BLE001 - one failed peer must not end the run
            lines = traceback.format_exception(type(err), err, err.__traceback__)
            print(f"  {label:36s} FAILED: {type(err).__name__}: {err}")
            print("\n".join("      " + s for s in "".join(lines).rstrip().splitlines()[-6:]))
            losses.pop(label, None)
            continue
        steps[label] = step
        if reference is not None:
            rel = abs(losses[label] - reference) / abs(reference)
            verdict = "agree" if rel <= AGREE else "DIFFER"
            print(f"first loss: {label} {losses[label]:.6f}, gradflow {reference:.6f}: "
                  f"{verdict} (relative difference {rel:.1e})")
    return losses


# -- TensorFlow ---------------------------------------------------------------------------


def _import_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # no C++ info lines (set before import)
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # the legacy cells' deprecation notices
    return tf


def _tf_cells(tf):
    """TF's TF1 cell classes: ``tf.compat.v1.nn.rnn_cell``, or where Keras 3 hides it, the
    same classes from ``tensorflow.python.ops.rnn_cell_impl``."""
    cells = tf.compat.v1.nn.rnn_cell
    try:
        cells.LSTMCell  # noqa: B018 - raises where Keras 3 hides the TF1 cells
        return cells
    except AttributeError:  # "`LSTMCell` is not available with Keras 3."
        from tensorflow.python.ops import rnn_cell_impl

        return rnn_cell_impl


def _tf_recurrent(tf, cells, kind, inputs, hidden):
    """``(outputs [batch, time, features], the cells' variables in CELL_WEIGHTS order)``."""
    v1 = tf.compat.v1
    if kind == "biLSTM":
        fw, bw = cells.LSTMCell(hidden), cells.LSTMCell(hidden)
        (out_fw, out_bw), _ = v1.nn.bidirectional_dynamic_rnn(fw, bw, inputs,
                                                              dtype=tf.float32)
        return tf.concat([out_fw, out_bw], 2), fw.trainable_variables + bw.trainable_variables
    if kind == "LSTM x2":
        layers = [cells.LSTMCell(hidden), cells.LSTMCell(hidden)]
        cell = cells.MultiRNNCell(layers)
    else:
        layers = [cells.GRUCell(hidden) if kind == "GRU" else cells.LSTMCell(hidden)]
        cell = layers[0]
    outputs, _ = v1.nn.dynamic_rnn(cell, inputs, dtype=tf.float32)
    return outputs, [v for layer in layers for v in layer.trainable_variables]


def _tf_graph(tf, weights, steps):
    """The TF1 graph: ``(ids, targets, loss, train op, init op, assign ops)``."""
    v1 = tf.compat.v1
    kind = model_kind(weights)
    hidden = weights[CELL_WEIGHTS[kind][0]].shape[1] // (2 if kind == "GRU" else 4)
    ids = v1.placeholder(tf.int32, (None, steps), name="ids")
    targets = v1.placeholder(tf.int32, (None, steps), name="targets")
    emb = v1.get_variable("emb", initializer=weights["emb"])
    inputs = tf.nn.embedding_lookup(emb, ids)  # [batch, time, embed]
    outputs, variables = _tf_recurrent(tf, _tf_cells(tf), kind, inputs, hidden)
    features = weights["w_out"].shape[0]
    w_out = v1.get_variable("softmax/w", initializer=weights["w_out"])
    b_out = v1.get_variable("softmax/b", initializer=weights["b_out"])
    logits = tf.matmul(tf.reshape(outputs, (-1, features)), w_out) + b_out
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.reshape(targets, (-1,)), logits=logits))
    train = v1.train.AdamOptimizer(LEARNING_RATE, BETA1, BETA2, EPSILON).minimize(loss)
    names = CELL_WEIGHTS[kind]
    if len(variables) != len(names):
        raise RuntimeError(f"TF's {kind} cells have {len(variables)} variables, "
                           f"expected {len(names)} ({', '.join(names)})")
    assigns = [v1.assign(var, weights[name]) for var, name in zip(variables, names)]
    return ids, targets, loss, train, v1.global_variables_initializer(), assigns


def tf_row(weights, x, y):
    """``(label, make)`` of the TensorFlow row (module docstring)."""
    tf = _import_tf()
    kind = model_kind(weights)
    what = "bidir dynamic_rnn" if kind == "biLSTM" else "dynamic_rnn"
    label = f"TF {tf.__version__} graph {what}"

    def make():
        graph = tf.Graph()
        with graph.as_default(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # layer.add_variable's deprecation notice
            ids, targets, loss, train, init, assigns = _tf_graph(tf, weights, x.shape[1])
        config = None
        if _threads:
            config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=_threads,
                                              inter_op_parallelism_threads=_threads)
        sess = tf.compat.v1.Session(graph=graph, config=config)
        sess.run(init)
        sess.run(assigns)
        feed = {ids: x, targets: y}
        first = float(sess.run(loss, feed))

        def step():
            sess.run(train, feed)

        step.loss = lambda: float(sess.run(loss, feed))  # the loss now, for the tests
        return step, first

    return label, make


# -- JAX ----------------------------------------------------------------------------------


def _jax_lstm(jax, jnp, kernel, bias, xs, reverse=False):
    """TF's LSTMCell over time-major ``xs [time, batch, inputs]``: the input product of
    every step as one matmul, then ``lax.scan`` of ``h @ W_h`` and the gates (i, j, f, o);
    the outputs ``[time, batch, H]`` in the inputs' order."""
    n_in, hidden = xs.shape[-1], kernel.shape[1] // 4
    zx = xs @ kernel[:n_in] + bias
    w_h = kernel[n_in:]

    def cell(carry, z):
        c, h = carry
        i, j, f, o = jnp.split(z + h @ w_h, 4, axis=-1)
        c = jax.nn.sigmoid(f + FORGET_BIAS) * c + jax.nn.sigmoid(i) * jnp.tanh(j)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (c, h), h

    zeros = jnp.zeros((xs.shape[1], hidden), xs.dtype)
    return jax.lax.scan(cell, (zeros, zeros), zx, reverse=reverse)[1]


def _jax_gru(jax, jnp, p, xs):
    """TF's GRUCell: ``r, u = sigmoid([x, h] W_g + b_g)``, ``c = tanh([x, r h] W_c + b_c)``,
    ``h = u h + (1 - u) c``, the input halves of both products over all steps at once."""
    n_in, hidden = xs.shape[-1], p["cand_kernel"].shape[1]
    xg = xs @ p["gate_kernel"][:n_in] + p["gate_bias"]
    xc = xs @ p["cand_kernel"][:n_in] + p["cand_bias"]
    w_hg, w_hc = p["gate_kernel"][n_in:], p["cand_kernel"][n_in:]

    def cell(h, inputs):
        xg_t, xc_t = inputs
        r, u = jnp.split(jax.nn.sigmoid(xg_t + h @ w_hg), 2, axis=-1)
        c = jnp.tanh(xc_t + (r * h) @ w_hc)
        h = u * h + (1 - u) * c
        return h, h

    zeros = jnp.zeros((xs.shape[1], hidden), xs.dtype)
    return jax.lax.scan(cell, zeros, (xg, xc))[1]


def _jax_loss_fn(jax, jnp, kind):
    """``loss(params, ids [time, batch], labels [time * batch])`` of the model ``kind``."""

    def recurrent(p, xs):
        if kind == "GRU":
            return _jax_gru(jax, jnp, p, xs)
        if kind == "LSTM x2":
            hs = _jax_lstm(jax, jnp, p["kernel0"], p["bias0"], xs)
            return _jax_lstm(jax, jnp, p["kernel1"], p["bias1"], hs)
        if kind == "biLSTM":
            return jnp.concatenate(
                [_jax_lstm(jax, jnp, p["kernel_fw"], p["bias_fw"], xs),
                 _jax_lstm(jax, jnp, p["kernel_bw"], p["bias_bw"], xs, reverse=True)], -1)
        return _jax_lstm(jax, jnp, p["kernel"], p["bias"], xs)

    def loss(p, ids, labels):
        hs = recurrent(p, jnp.take(p["emb"], ids, axis=0))
        logits = hs.reshape(-1, hs.shape[-1]) @ p["w_out"] + p["b_out"]
        log_p = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(log_p, labels[:, None], axis=1))

    return loss


def _jax_train_step(jax, jnp, loss_fn):
    """``step(params, m, v, t, ids, labels) -> (params, m, v, t, loss before the update)``:
    value_and_grad and TF1's Adam, jitted, params and moments donated."""
    grad_fn = jax.value_and_grad(loss_fn)
    tree_map = jax.tree_util.tree_map

    def step(p, m, v, t, ids, labels):
        loss, g = grad_fn(p, ids, labels)
        t = t + 1
        lr_t = LEARNING_RATE * jnp.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
        m = tree_map(lambda m_, g_: BETA1 * m_ + (1 - BETA1) * g_, m, g)
        v = tree_map(lambda v_, g_: BETA2 * v_ + (1 - BETA2) * g_ * g_, v, g)
        p = tree_map(lambda p_, m_, v_: p_ - lr_t * m_ / (jnp.sqrt(v_) + EPSILON), p, m, v)
        return p, m, v, t, loss

    return jax.jit(step, donate_argnums=(0, 1, 2))


def jax_row(weights, x, y):
    """``(label, make)`` of the JAX row (module docstring)."""
    import jax
    import jax.numpy as jnp

    label = f"JAX {jax.__version__} lax.scan jit"

    def make():
        loss_fn = _jax_loss_fn(jax, jnp, model_kind(weights))
        train = _jax_train_step(jax, jnp, loss_fn)
        params = {k: jnp.asarray(v) for k, v in weights.items()}
        state = [params] + [{k: jnp.zeros_like(v) for k, v in params.items()}
                            for _ in range(2)] + [jnp.zeros((), jnp.float32)]
        ids = jnp.asarray(x.T.copy())  # time-major, as the scan runs
        labels = jnp.asarray(y.T.copy().reshape(-1))
        jit_loss = jax.jit(loss_fn)
        first = float(jit_loss(params, ids, labels))

        def step():
            state[:] = jax.block_until_ready(train(*state, ids, labels))[:4]

        step.loss = lambda: float(jit_loss(state[0], ids, labels))  # the loss now
        return step, first

    return label, make
