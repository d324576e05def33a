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
``--minutes`` stops training after that much wall time (the training steps of
this run only); ``--steps N`` stops it when the global step reaches N.

With ``--checkpoint-dir`` a checkpoint is saved after each evaluation, with
``vocab.json`` beside it (the characters, the model's sizes and a few lines of
held-out text to prime samples with), ``history.json`` (the curves) and
``train_state.npz`` (the LSTM state carried between batches), so that
``--resume`` continues training exactly where it stopped, curves included,
and ``--sample N`` prints N characters from the latest checkpoint without
training. Ctrl-C stops with exit status 130 and one line naming the last
checkpoint and the command that resumes from it.

Samples start from the LSTM's zero state, warmed over a prime before the
first character is drawn. The default prime is two lines of the held-out
text: the end of a passage and the first line of the next, a speaker's name
in Tiny Shakespeare (``--prime`` replaces it). A newline alone, after brief
training, gave garbage such as ``OJBAUYXYZZZ$Z$Z`` before the text settled.

On a CPU shared with other jobs, set ``OPENBLAS_NUM_THREADS=1``: the LSTM's
matrix products are small (batch x 4*hidden), and OpenBLAS threads that
wait for a busy core made each step 3-7 times slower in our measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import example_tools as tools  # noqa: E402

import gradflow as gf  # noqa: E402

VOCAB_FILE = "vocab.json"
STATE_FILE = "train_state.npz"


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


def prime_lines(text, chars, count=32):
    """Openings of passages of ``text`` (the held-out part) to prime the sampler with.

    Each is the last line of a passage, the blank line after it and the first
    line of the next passage: in Tiny Shakespeare the end of a speech and the
    next speaker's name (``"...my lord.\\n\\nROMEO:\\n"``). A text without blank
    lines gives two consecutive lines instead. At most ``count``, spread over
    the text; only characters of ``chars``.
    """
    vocab = set(chars)
    sep = "\n\n" if text.count("\n\n") >= 3 else "\n"
    pieces = text.split(sep)[1:-1]  # the first and the last piece may be cut short
    primes = []
    for before, after in zip(pieces, pieces[1:]):
        last = before.rstrip("\n").rsplit("\n", 1)[-1]
        first = after.lstrip("\n").split("\n", 1)[0]
        prime = f"{last}{sep}{first}\n"
        if last.strip() and first.strip() and len(prime) <= 200 and set(prime) <= vocab:
            primes.append(prime)
    if len(primes) > count:
        primes = [primes[i] for i in np.linspace(0, len(primes) - 1, count).astype(int)]
    return primes


def choose_prime(config, seed=0):
    """A random one of ``config["primes"]`` (made from the held-out text), else a newline."""
    primes = config.get("primes") or ["\n"]
    return primes[int(np.random.default_rng([seed, 1]).integers(len(primes)))]


# -- model --------------------------------------------------------------------------


def zero_state(config, batch_size):
    return [(np.zeros((batch_size, config["hidden"]), np.float32),
             np.zeros((batch_size, config["hidden"]), np.float32))
            for _ in range(config["layers"])]


def build_model(config, seq_len, clip, seed, dropout=0.0):
    """The training/evaluation unroll (``seq_len`` steps) and a one-step sampler.

    With ``dropout``, the LSTM's outputs are dropped at that rate before the
    softmax layer, and between stacked LSTM layers (a ``DropoutWrapper``), while
    the ``training`` placeholder is fed True.
    """
    vocab, hidden, layers = config["vocab_size"], config["hidden"], config["layers"]
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        training = gf.placeholder_with_default(False, (), name="training")
        cells = [gf.nn.rnn_cell.LSTMCell(hidden) for _ in range(layers)]
        if dropout and layers > 1:
            # between stacked layers too; the wrapper keeps the cells' variable names,
            # so checkpoints do not depend on it
            keep = 1.0 - dropout * gf.cast(training, gf.float32)
            cells = [gf.nn.rnn_cell.DropoutWrapper(c, output_keep_prob=keep, seed=seed + i)
                     for i, c in enumerate(cells[:-1])] + cells[-1:]
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


def sample(sess, m, config, n, temperature=1.0, prime=None, seed=0):
    """``n`` characters drawn one at a time after feeding ``prime`` through the model.

    The state starts at zero and is warmed over every character of ``prime``
    before the first draw. A model trained on streams of text seldom sees the
    zero state, so a prime of one or two characters gives garbage at first
    (``OJBAUYXYZZZ$Z...``); the default, ``choose_prime(config, seed)``, is
    two lines of held-out text such as the end of a speech and the next
    speaker's name.
    """
    if prime is None:
        prime = choose_prime(config, seed)
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


def save_train_state(checkpoint_dir, step, state):
    """The LSTM state carried between training batches, at global step ``step``, in
    ``train_state.npz`` (written atomically), so that a resumed run goes on exactly."""
    arrays = {"step": np.array(step, np.int64)}
    for i, (c, h) in enumerate(state):
        arrays[f"c{i}"], arrays[f"h{i}"] = c, h
    fd, tmp = tempfile.mkstemp(dir=checkpoint_dir, prefix=f".{STATE_FILE}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, os.path.join(checkpoint_dir, STATE_FILE))
    except BaseException:
        os.unlink(tmp)
        raise


def load_train_state(checkpoint_dir, step, config, batch_size):
    """The carried state saved at ``step``, or None (another step, another batch size)."""
    try:
        with np.load(os.path.join(checkpoint_dir, STATE_FILE)) as f:
            if int(f["step"]) != step:
                return None
            state = [(f[f"c{i}"], f[f"h{i}"]) for i in range(config["layers"])]
    except (OSError, KeyError, ValueError):
        return None
    shape = (batch_size, config["hidden"])
    return state if all(c.shape == h.shape == shape for c, h in state) else None


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


# -- main ---------------------------------------------------------------------------


def run_sample(args):
    config = load_config(args.checkpoint_dir)
    latest = gf.train.latest_checkpoint(args.checkpoint_dir)
    if config is None or latest is None:
        raise SystemExit(f"--sample: no trained checkpoint with {VOCAB_FILE} in "
                         f"{args.checkpoint_dir}")
    data = args.data or default_data_path()
    if not config.get("primes") and args.prime is None and os.path.isfile(data):
        config["primes"] = prime_lines(split_text(load_text(data))[1], config["chars"])
    graph, m = build_model(config, config["seq_len"], 5.0, args.seed)
    with gf.Session(graph=graph, backend=args.backend) as sess:
        m["saver"].restore(sess, latest)
        prime = choose_prime(config, args.seed) if args.prime is None else args.prime
        text = sample(sess, m, config, args.sample, args.temperature, prime, args.seed)
    print(prime + text)
    return {"sample": text, "prime": prime, "checkpoint": latest}


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
                        help="dropout rate on the LSTM outputs (and between stacked layers) "
                             "while training (0: none)")
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
    parser.add_argument("--prime", default=None,
                        help="text fed before sampling (default: the end of a held-out "
                             "passage and the first line of the next, e.g. a speaker's name)")
    parser.add_argument("--steps", type=int, default=None,
                        help="stop when the global step reaches N (a resumed run counts the "
                             "steps already done)")
    parser.add_argument("--final-sample", type=int, default=300,
                        help="characters to sample after training")
    args = parser.parse_args(argv)
    tools.check_backend(parser, args.backend)  # before the text is read: one line if not
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
    if not config.get("primes"):
        config["primes"] = prime_lines(val_text, chars)
    train_x, train_y = stream_batches(encode(train_text, chars), args.batch_size,
                                      config["seq_len"])
    val_data = eval_streams(encode(val_text, chars), args.eval_streams, config["seq_len"])
    n_batches = len(train_x)
    print(f"{len(train_text)} training and {len(val_text)} validation characters, "
          f"vocabulary {len(chars)}; {n_batches} batches of {args.batch_size} x "
          f"{config['seq_len']} per epoch; LSTM {config['layers']} x {config['hidden']}")

    graph, m = build_model(config, config["seq_len"], args.clip, args.seed, args.dropout)
    os.makedirs(args.out, exist_ok=True)
    run_seconds = 0.0  # training time of this run (--minutes)
    wall0 = time.perf_counter()
    with gf.Session(graph=graph, backend=args.backend) as sess:
        backend = sess.backend.name
        png = tools.png_path(args.out, "char_rnn_curves", backend)
        latest, history = tools.begin(sess, m, args.checkpoint_dir, args.resume)
        step = first_step = int(sess.run(m["step"]))
        if latest is not None:
            print(f"resumed from {latest} (step {step}, epoch {step / n_batches:.2f})")
        if args.checkpoint_dir:
            save_config(args.checkpoint_dir, config)
        earlier_seconds = 60 * history.evals[-1]["minutes"] if history.evals else 0.0

        def minutes():
            return (earlier_seconds + run_seconds) / 60

        def curves():
            title = (f"char_rnn: LSTM {config['layers']} x {config['hidden']}, embedding "
                     f"{config['embedding']}, {tools.backends_text(history, backend)}, "
                     f"{history.evals[-1]['minutes']:.1f} min of training")
            tools.save_curves(png, title, history, n_batches, metric="val_loss",
                              metric_label="validation loss (nats/char)",
                              loss_label="training loss (nats/char)", percent=False,
                              log_loss=False)

        def validate(step):
            val = evaluate(sess, m, config, val_data)
            history.add_eval(step=step, epoch=step / n_batches, minutes=minutes(), val_loss=val,
                             backend=backend)
            tqdm.write(f"step {step} (epoch {step / n_batches:.2f}, {minutes():.1f} min "
                       f"training): validation loss {val:.4f} nats/char")
            if args.checkpoint_dir:
                tools.save_checkpoint(sess, m, args.checkpoint_dir, history, before=lambda:
                                      save_train_state(args.checkpoint_dir, step, state))

        total = args.epochs * n_batches if args.steps is None else args.steps
        if step >= total:
            print(f"the run is already complete: the checkpoint {latest} is at step {step}, "
                  f"the run ends at {total}; nothing to train (--sample N writes text from "
                  "it)" if latest else "nothing to train")
            if not history.evals:
                validate(step)
                png = None
            else:
                curves()
                print(f"redrew {png} from the saved history")
            return results(history, step, first_step, run_seconds, "", "", png, chars)
        state = zero_state(config, args.batch_size)
        if latest is not None and step % n_batches:
            saved = load_train_state(args.checkpoint_dir, step, config, args.batch_size)
            if saved is None:
                print(f"no {STATE_FILE} for step {step}: the LSTM state carried between "
                      "batches starts again from zero")
            state = saved or state
        try:
            with tqdm(total=total, initial=step, desc="training", leave=False) as bar:
                stopped = False
                while not stopped:
                    k = step % n_batches
                    if k == 0:
                        state = zero_state(config, args.batch_size)  # a new pass over the text
                    lr = args.lr * args.lr_decay ** (step // n_batches)
                    feed = {m["x"]: train_x[k], m["y"]: train_y[k], m["lr"]: lr,
                            m["training"]: True, **state_feed(m["state_in"], state)}
                    t = time.perf_counter()
                    _, loss, state = sess.run([m["train"], m["loss"], m["state_out"]], feed)
                    run_seconds += time.perf_counter() - t
                    step += 1
                    history.add_loss(step, loss)
                    bar.update(1)
                    if step % 10 == 0:
                        ms = 1000 * run_seconds / (step - first_step)
                        bar.set_postfix(loss=f"{loss:.3f}", ms_per_step=f"{ms:.0f}")
                    out_of_time = args.minutes is not None and run_seconds >= 60 * args.minutes
                    stopped = step >= total or out_of_time
                    if step % args.eval_every == 0 and not stopped:
                        validate(step)
            validate(step)
        except KeyboardInterrupt:
            tools.interrupted(__file__, argv, args.checkpoint_dir, history,
                              f"step {step} (epoch {step / n_batches:.2f})")
        prime = text_sample = ""
        if args.final_sample:
            prime = choose_prime(config, args.seed) if args.prime is None else args.prime
            text_sample = sample(sess, m, config, args.final_sample, 0.8, prime, args.seed)
            print(f"sample (temperature 0.8):\n{prime}{text_sample}")
    out = results(history, step, first_step, run_seconds, text_sample, prime, png, chars)
    best = min(history.evals, key=lambda h: h["val_loss"])
    print(f"{step - first_step} steps in {run_seconds / 60:.1f} min of training "
          f"({out['ms_per_step']:.0f} ms/step, {(time.perf_counter() - wall0) / 60:.1f} min in "
          f"all); final validation loss {out['val_loss']:.4f} nats/char, best "
          f"{best['val_loss']:.4f} at step {best['step']} ({best['minutes']:.1f} min)")
    curves()
    print(f"saved {png}")
    return out


def results(history, step, first_step, run_seconds, text_sample, prime, png, chars):
    """What ``main`` returns; ``history`` and ``losses`` cover the whole run so far, a
    resumed run's checkpoint included; the timings are this run's."""
    return {"val_loss": history.evals[-1]["val_loss"],
            "best_val_loss": min(e["val_loss"] for e in history.evals),
            "history": history.evals, "losses": history.loss_values(), "steps": step,
            "ms_per_step": 1000 * run_seconds / max(1, step - first_step),
            "train_seconds": run_seconds, "sample": text_sample, "prime": prime, "png": png,
            "chars": chars}

if __name__ == "__main__":
    main()
