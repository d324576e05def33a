"""A character-level LSTM language model on Tiny Shakespeare, after Karpathy's char-rnn.

    GRADFLOW_DATA=../shared/data python examples/char_rnn.py --minutes 30 --checkpoint-dir ck
    python examples/char_rnn.py --checkpoint-dir ck --resume --minutes 10
    python examples/char_rnn.py --checkpoint-dir ck --sample 500 --temperature 0.8 --prime "ROMEO:"

The text (``--data``, else ``$GRADFLOW_DATA/tinyshakespeare/input.txt``) is
split 90/10 into training and validation. As in char-rnn, the training text
is cut into ``--batch-size`` contiguous streams, and each batch is the next
``--seq-len`` characters of every stream. Training is truncated
backpropagation through time: the LSTM's final state after one batch is fed
as the initial state of the next, and gradients stop at the batch boundary.

The validation loss is the mean cross-entropy, in nats per character, over the
validation text laid out the same way (the state carried from chunk to
chunk). It is printed every ``--eval-every`` steps and at the end.
``--minutes`` stops training after that much wall time (training steps only).

With ``--checkpoint-dir`` a checkpoint is saved after each evaluation, with
``vocab.json`` beside it (the characters and the model's sizes), so that
``--resume`` continues training and ``--sample N`` prints N characters from
the latest checkpoint without training.

On a CPU shared with other jobs, set ``OPENBLAS_NUM_THREADS=1``: the LSTM's
matrix products are small (batch x 4*hidden), and OpenBLAS threads that
wait for a busy core made each step 3-7 times slower in our measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import gradflow as gf

VOCAB_FILE = "vocab.json"


# -- data ---------------------------------------------------------------------------


def default_data_path():
    root = os.environ.get("GRADFLOW_DATA")
    if root is None:
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.path.join(here, "..", "..", "shared", "data")
    return os.path.join(root, "tinyshakespeare", "input.txt")


def load_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def split_text(text, train_fraction=0.9):
    cut = int(len(text) * train_fraction)
    return text[:cut], text[cut:]


def encode(text, chars):
    index = {c: i for i, c in enumerate(chars)}
    return np.array([index[c] for c in text], dtype=np.int64)


def stream_batches(ids, batch_size, seq_len):
    """char-rnn's layout: ``batch_size`` contiguous streams, cut into ``seq_len`` chunks.

    Returns ``(x, y)``, each ``(n_batches, batch_size, seq_len)``, where
    ``y`` is ``x`` shifted by one character. Row ``b`` of batch ``k + 1``
    continues row ``b`` of batch ``k``.
    """
    n_batches = (len(ids) - 1) // (batch_size * seq_len)
    if n_batches == 0:
        raise ValueError(f"the text ({len(ids)} characters) is too short for one batch of "
                         f"{batch_size} x {seq_len}")
    n = n_batches * batch_size * seq_len
    x = ids[:n].reshape(batch_size, n_batches, seq_len).transpose(1, 0, 2)
    y = ids[1:n + 1].reshape(batch_size, n_batches, seq_len).transpose(1, 0, 2)
    return x, y


def eval_streams(ids, n_streams, seq_len):
    """The validation layout: ``n_streams`` equal contiguous streams, padded to chunks.

    Returns ``(x, y, weight)``, each ``(n_chunks, n_streams, seq_len)``;
    ``weight`` is 1 on real characters and 0 on padding. Every character but
    the first (and the last ``(len - 1) % n_streams``) is predicted once.
    """
    n_streams = max(1, min(n_streams, len(ids) - 1))
    length = (len(ids) - 1) // n_streams
    n_chunks = -(-length // seq_len)
    x = np.zeros((n_streams, n_chunks * seq_len), np.int64)
    y = np.zeros_like(x)
    w = np.zeros(x.shape, np.float32)
    for b in range(n_streams):
        lo = b * length
        x[b, :length] = ids[lo:lo + length]
        y[b, :length] = ids[lo + 1:lo + length + 1]
        w[b, :length] = 1.0
    shape = (n_streams, n_chunks, seq_len)
    return tuple(a.reshape(shape).transpose(1, 0, 2) for a in (x, y, w))


# -- model --------------------------------------------------------------------------


def zero_state(config, batch_size):
    return [(np.zeros((batch_size, config["hidden"]), np.float32),
             np.zeros((batch_size, config["hidden"]), np.float32))
            for _ in range(config["layers"])]


def build_model(config, seq_len, clip, seed, dropout=0.0):
    """The training/evaluation unroll (``seq_len`` steps) and a one-step sampler.

    With ``dropout``, the LSTM's outputs are dropped at that rate before the
    softmax layer while the ``training`` placeholder is fed True.
    """
    vocab, hidden, layers = config["vocab_size"], config["hidden"], config["layers"]
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        cells = [gf.nn.rnn_cell.LSTMCell(hidden) for _ in range(layers)]
        cell = gf.nn.rnn_cell.MultiRNNCell(cells) if layers > 1 else cells[0]

        def state_placeholders(prefix):
            phs = [(gf.placeholder(gf.float32, (None, hidden), name=f"{prefix}_c{i}"),
                    gf.placeholder(gf.float32, (None, hidden), name=f"{prefix}_h{i}"))
                   for i in range(layers)]
            states = [gf.nn.rnn_cell.LSTMStateTuple(c, h) for c, h in phs]
            return phs, (tuple(states) if layers > 1 else states[0])

        def flat_state(state):
            states = state if layers > 1 else (state,)
            return [(s.c, s.h) for s in states]

        training = gf.placeholder_with_default(False, (), name="training")

        def unroll(ids, steps, initial_state):
            with gf.variable_scope("char_rnn", reuse=gf.AUTO_REUSE):
                embedding = gf.get_variable(
                    "embedding", (vocab, config["embedding"]),
                    initializer=gf.random_uniform_initializer(-0.1, 0.1))
                inputs = gf.unstack(gf.nn.embedding_lookup(embedding, ids), num=steps, axis=1)
                outputs, final = gf.nn.static_rnn(cell, inputs, initial_state=initial_state,
                                                  scope="lstm")
                h = gf.reshape(gf.stack(outputs, axis=1), (-1, hidden))
                if dropout:
                    h = gf.layers.dropout(h, rate=dropout, training=training)
                logits = gf.layers.dense(h, vocab, name="softmax")
            return logits, flat_state(final)

        x = gf.placeholder(gf.int64, (None, seq_len), name="x")
        y = gf.placeholder(gf.int64, (None, seq_len), name="y")
        state_in, initial = state_placeholders("state")
        logits, state_out = unroll(x, seq_len, initial)
        xent = gf.nn.sparse_softmax_cross_entropy_with_logits(labels=gf.reshape(y, (-1,)),
                                                              logits=logits)
        loss = gf.reduce_mean(xent)
        lr = gf.placeholder_with_default(gf.constant(1e-3), (), name="lr")
        step = gf.train.get_or_create_global_step()
        optimizer = gf.train.AdamOptimizer(lr)
        grads_and_vars = optimizer.compute_gradients(loss)
        grads, norm = gf.clip_by_global_norm([g for g, _ in grads_and_vars], clip)
        train_op = optimizer.apply_gradients(
            list(zip(grads, [v for _, v in grads_and_vars])), global_step=step)

        x1 = gf.placeholder(gf.int64, (None, 1), name="sample_x")
        sample_in, sample_initial = state_placeholders("sample_state")
        sample_logits, sample_out = unroll(x1, 1, sample_initial)
        temperature = gf.placeholder_with_default(gf.constant(1.0), (), name="temperature")
        sample_probs = gf.nn.softmax(sample_logits / temperature)

        init_op = gf.global_variables_initializer()
        saver = gf.train.Saver(max_to_keep=3)
    return graph, dict(x=x, y=y, training=training, state_in=state_in, state_out=state_out,
                       xent=xent, loss=loss, lr=lr, norm=norm, train=train_op, step=step,
                       sample_x=x1, sample_in=sample_in, sample_out=sample_out,
                       sample_probs=sample_probs, temperature=temperature,
                       init=init_op, saver=saver)


def state_feed(placeholders, values):
    feed = {}
    for (c_ph, h_ph), (c, h) in zip(placeholders, values):
        feed[c_ph], feed[h_ph] = c, h
    return feed


def evaluate(sess, m, config, data):
    """Mean cross-entropy (nats/char) over ``data = eval_streams(...)``, state carried."""
    x, y, w = data
    state = zero_state(config, x.shape[1])
    total = count = 0.0
    for k in range(len(x)):
        feed = {m["x"]: x[k], m["y"]: y[k], **state_feed(m["state_in"], state)}
        xent, state = sess.run([m["xent"], m["state_out"]], feed)
        weight = w[k].reshape(-1)
        total += float(np.dot(xent, weight))
        count += float(weight.sum())
    return total / count


def sample(sess, m, config, n, temperature=1.0, prime="\n", seed=0):
    """``n`` characters drawn one at a time after feeding ``prime`` through the model."""
    chars = config["chars"]
    index = {c: i for i, c in enumerate(chars)}
    prime = "".join(c for c in prime if c in index) or chars[0]
    rng = np.random.default_rng(seed)
    state = zero_state(config, 1)
    out = []
    probs = None
    for c in prime:
        feed = {m["sample_x"]: [[index[c]]], m["temperature"]: temperature,
                **state_feed(m["sample_in"], state)}
        probs, state = sess.run([m["sample_probs"], m["sample_out"]], feed)
    for _ in range(n):
        p = probs[0].astype(np.float64)
        i = int(rng.choice(len(p), p=p / p.sum()))
        out.append(chars[i])
        feed = {m["sample_x"]: [[i]], m["temperature"]: temperature,
                **state_feed(m["sample_in"], state)}
        probs, state = sess.run([m["sample_probs"], m["sample_out"]], feed)
    return "".join(out)


# -- checkpoints --------------------------------------------------------------------


def save_config(checkpoint_dir, config):
    os.makedirs(checkpoint_dir, exist_ok=True)
    path = os.path.join(checkpoint_dir, VOCAB_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=1)
    os.replace(tmp, path)


def load_config(checkpoint_dir):
    path = os.path.join(checkpoint_dir, VOCAB_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def save_curves(path, losses, history):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(losses, lw=0.5)
    ax1.set(xlabel="step", ylabel="training loss (nats/char)", title="training loss")
    if history:
        ax2.plot([h["minutes"] for h in history], [h["val_loss"] for h in history],
                 marker="o")
    ax2.set(xlabel="training time (min)", ylabel="validation loss (nats/char)",
            title="validation loss")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- main ---------------------------------------------------------------------------


def run_sample(args):
    config = load_config(args.checkpoint_dir)
    latest = gf.train.latest_checkpoint(args.checkpoint_dir)
    if config is None or latest is None:
        raise SystemExit(f"--sample: no trained checkpoint with {VOCAB_FILE} in "
                         f"{args.checkpoint_dir}")
    graph, m = build_model(config, config["seq_len"], 5.0, args.seed)
    with gf.Session(graph=graph, backend=args.backend) as sess:
        m["saver"].restore(sess, latest)
        text = sample(sess, m, config, args.sample, args.temperature, args.prime, args.seed)
    print(text)
    return {"sample": text, "checkpoint": latest}


def main(argv=None):
    parser = argparse.ArgumentParser(description="Character-level LSTM (char-rnn)")
    parser.add_argument("--backend", default=None, help="numpy, cupy, torch, array_api_strict")
    parser.add_argument("--data", default=None,
                        help="text file (default $GRADFLOW_DATA/tinyshakespeare/input.txt)")
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--embedding", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop after this much training wall time")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--lr-decay", type=float, default=0.95,
                        help="multiply the learning rate by this after each epoch")
    parser.add_argument("--clip", type=float, default=5.0, help="global gradient-norm clip")
    parser.add_argument("--dropout", type=float, default=0.3,
                        help="dropout rate on the LSTM outputs while training (0: none)")
    parser.add_argument("--eval-every", type=int, default=200,
                        help="validation loss every N steps (and at the end)")
    parser.add_argument("--eval-streams", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out")
    parser.add_argument("--checkpoint-dir", default=None)
    parser.add_argument("--resume", action="store_true",
                        help="continue from the latest checkpoint in --checkpoint-dir")
    parser.add_argument("--sample", type=int, default=None, metavar="N",
                        help="print N characters from the latest checkpoint; no training")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--prime", default="\n", help="text fed before sampling")
    parser.add_argument("--final-sample", type=int, default=300,
                        help="characters to sample after training")
    args = parser.parse_args(argv)
    if (args.resume or args.sample is not None) and not args.checkpoint_dir:
        parser.error("--resume and --sample need --checkpoint-dir")
    if args.sample is not None:
        return run_sample(args)
    from tqdm import tqdm

    text = load_text(args.data or default_data_path())
    train_text, val_text = split_text(text)
    config = load_config(args.checkpoint_dir) if args.resume else None
    if config is None:
        config = dict(chars=sorted(set(text)), hidden=args.hidden, layers=args.layers,
                      embedding=args.embedding, seq_len=args.seq_len)
        config["vocab_size"] = len(config["chars"])
    chars = config["chars"]
    train_x, train_y = stream_batches(encode(train_text, chars), args.batch_size,
                                      config["seq_len"])
    val_data = eval_streams(encode(val_text, chars), args.eval_streams, config["seq_len"])
    n_batches = len(train_x)
    print(f"{len(train_text)} training and {len(val_text)} validation characters, "
          f"vocabulary {len(chars)}; {n_batches} batches of {args.batch_size} x "
          f"{config['seq_len']} per epoch; LSTM {config['layers']} x {config['hidden']}")

    graph, m = build_model(config, config["seq_len"], args.clip, args.seed, args.dropout)
    losses, history = [], []
    os.makedirs(args.out, exist_ok=True)
    train_seconds = 0.0
    wall0 = time.perf_counter()
    with gf.Session(graph=graph, backend=args.backend) as sess:
        latest = gf.train.latest_checkpoint(args.checkpoint_dir) if args.resume else None
        if latest is None:
            if args.resume:
                print(f"no checkpoint in {args.checkpoint_dir}; starting from scratch")
            sess.run(m["init"])
        else:
            m["saver"].restore(sess, latest)
            print(f"resumed from {latest} (step {int(sess.run(m['step']))})")
        if args.checkpoint_dir:
            save_config(args.checkpoint_dir, config)

        def checkpoint():
            if args.checkpoint_dir:
                m["saver"].save(sess, os.path.join(args.checkpoint_dir, "model"),
                                global_step=m["step"])

        def validate(step):
            val = evaluate(sess, m, config, val_data)
            history.append(dict(step=step, minutes=train_seconds / 60, val_loss=val))
            tqdm.write(f"step {step} (epoch {step / n_batches:.2f}, {train_seconds / 60:.1f} "
                       f"min training): validation loss {val:.4f} nats/char")
            checkpoint()

        step = int(sess.run(m["step"]))
        total = args.epochs * n_batches
        bar = tqdm(total=total, initial=min(step, total), desc="training", leave=False)
        state = zero_state(config, args.batch_size)
        stopped = step >= total
        while not stopped:
            k = step % n_batches
            if k == 0:
                state = zero_state(config, args.batch_size)  # a new pass over the streams
            lr = args.lr * args.lr_decay ** (step // n_batches)
            feed = {m["x"]: train_x[k], m["y"]: train_y[k], m["lr"]: lr, m["training"]: True,
                    **state_feed(m["state_in"], state)}
            t = time.perf_counter()
            _, loss, state = sess.run([m["train"], m["loss"], m["state_out"]], feed)
            train_seconds += time.perf_counter() - t
            step += 1
            losses.append(float(loss))
            bar.update(1)
            if step % 10 == 0:
                bar.set_postfix(loss=f"{loss:.3f}",
                                ms_per_step=f"{1000 * train_seconds / len(losses):.0f}")
            out_of_time = args.minutes is not None and train_seconds >= 60 * args.minutes
            stopped = step >= total or out_of_time
            if step % args.eval_every == 0 and not stopped:
                validate(step)
        bar.close()
        validate(step)
        text_sample = ""
        if args.final_sample:
            text_sample = sample(sess, m, config, args.final_sample, 0.8, args.prime,
                                 args.seed)
            print(f"sample (temperature 0.8):\n{text_sample}")
    ms_per_step = 1000 * train_seconds / max(1, len(losses))
    best = min(history, key=lambda h: h["val_loss"])
    print(f"{len(losses)} steps in {train_seconds / 60:.1f} min of training "
          f"({ms_per_step:.0f} ms/step, {(time.perf_counter() - wall0) / 60:.1f} min in all); "
          f"final validation loss {history[-1]['val_loss']:.4f} nats/char, best "
          f"{best['val_loss']:.4f} at step {best['step']} ({best['minutes']:.1f} min)")
    png = os.path.join(args.out, "char_rnn_curves.png")
    save_curves(png, losses, history)
    return {"val_loss": history[-1]["val_loss"], "best_val_loss": best["val_loss"],
            "history": history, "losses": losses,
            "steps": step, "ms_per_step": ms_per_step, "train_seconds": train_seconds,
            "sample": text_sample, "png": png, "chars": chars}


if __name__ == "__main__":
    main()
