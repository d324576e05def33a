"""Learn the embedded Reber grammar with an LSTM (Hochreiter & Schmidhuber 1997).

    python examples/reber_lstm.py
    python examples/reber_lstm.py --backend torch --hidden 32 --epochs 4
    python examples/reber_lstm.py --checkpoint-dir ckpt/reber --resume --epochs 6

Strings of the embedded Reber grammar (``B T <Reber string> T E`` or
``B P <Reber string> P E``, see shared/data/reber/README.md) are generated
with a seeded NumPy Generator. An LSTM reads a string one symbol at a time and
predicts a distribution over the next symbol (softmax cross-entropy against
the symbol that actually comes next). The LSTM is unrolled for a few lengths
(multiples of ``--bucket-width``) that share one set of weights and one Adam
optimizer; each batch holds strings of similar length and runs through the
shortest unrolling that fits it, with a mask keeping the padding out of the
loss. (A single unrolling over the longest string, 47 steps, would spend about
four times the work of the mean length, 12.)

A string counts as solved when, at every position, the set of symbols whose
predicted probability exceeds ``--threshold`` (default 0.1) is exactly the
set of symbols the grammar allows next. Where the grammar offers two symbols
each has probability 1/2, so a trained network puts about 0.5 on both and
about 0 on the others; the hard position is the second-to-last one, where
the only legal symbol is the T or P seen right after the first B.

Checkpoints, curves and Ctrl-C work as in ``mnist_mlp.py``: the history of the
curves is saved beside each checkpoint and restored with ``--resume``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import example_tools as tools  # noqa: E402

import gradflow as gf  # noqa: E402

SYMBOLS = "BTPSXVE"
INDEX = {s: i for i, s in enumerate(SYMBOLS)}

# The plain Reber grammar: state -> [(symbol, next state)]; None is the final state.
REBER = {
    0: [("B", 1)],
    1: [("T", 2), ("P", 3)],
    2: [("S", 2), ("X", 4)],
    3: [("T", 3), ("V", 5)],
    4: [("X", 3), ("S", 6)],
    5: [("P", 4), ("V", 6)],
    6: [("E", None)],
}


def _embedded_table():
    """The embedded grammar as one automaton: two copies of REBER, one per outer letter."""
    table = {"start": [("B", "outer")],
             "outer": [("T", ("T", 0)), ("P", ("P", 0))],
             "last": [("E", None)]}
    for letter in "TP":
        for state, edges in REBER.items():
            table[(letter, state)] = [
                (sym, (letter, "done") if nxt is None else (letter, nxt)) for sym, nxt in edges]
        table[(letter, "done")] = [(letter, "last")]
    return table


EMBEDDED = _embedded_table()


def _generate(table, start, rng):
    state, out = start, []
    while state is not None:
        edges = table[state]
        sym, state = edges[int(rng.integers(len(edges)))] if len(edges) > 1 else edges[0]
        out.append(sym)
    return "".join(out)


def reber_string(rng):
    """One plain Reber string, each two-way choice 50/50."""
    return _generate(REBER, 0, rng)


def embedded_reber_string(rng):
    """One embedded Reber string: B, T|P, a plain Reber string, the same T|P, E."""
    return _generate(EMBEDDED, "start", rng)


def legal_next_sets(string, table=None, start="start"):
    """For each prefix ``string[:i+1]``, the set of symbols the grammar allows next.

    The set after the final ``E`` is empty. Raises ValueError if ``string`` is
    not in the grammar (default: the embedded Reber grammar).
    """
    table = EMBEDDED if table is None else table
    state, sets = start, []
    for i, sym in enumerate(string):
        if state is None:
            raise ValueError(f"{string!r}: symbols after the end, at position {i}")
        edges = dict(table[state])
        if sym not in edges:
            raise ValueError(f"{string!r}: {sym!r} at position {i} is not allowed; "
                             f"expected one of {''.join(sorted(edges))}")
        state = edges[sym]
        sets.append(set() if state is None else {s for s, _ in table[state]})
    if state is not None:
        raise ValueError(f"{string!r}: the string stops before the end of the grammar")
    return sets


def is_valid(string, table=None, start="start"):
    """Whether ``string`` belongs to the grammar (default: embedded Reber)."""
    try:
        legal_next_sets(string, table, start)
    except ValueError:
        return False
    return True


def make_strings(n, rng):
    return [embedded_reber_string(rng) for _ in range(n)]


def encode(strings, length):
    """Inputs, targets and mask, each ``(len(strings), length)``: symbol t predicts t+1."""
    x = np.zeros((len(strings), length), np.int64)
    y = np.zeros((len(strings), length), np.int64)
    mask = np.zeros((len(strings), length), np.float32)
    for k, s in enumerate(strings):
        ids = [INDEX[c] for c in s]
        n = len(ids) - 1
        x[k, :n], y[k, :n], mask[k, :n] = ids[:-1], ids[1:], 1.0
    return x, y, mask


def legal_mask(strings, length):
    """``(n, length, 7)`` booleans: the legal next symbols at each input position."""
    out = np.zeros((len(strings), length, len(SYMBOLS)), bool)
    for k, s in enumerate(strings):
        for t, allowed in enumerate(legal_next_sets(s)[:-1]):
            out[k, t, [INDEX[c] for c in allowed]] = True
    return out


def bucket_lengths(strings, width):
    """The unroll lengths used: each string's step count rounded up to a multiple of width."""
    return sorted({-(-(len(s) - 1) // width) * width for s in strings})


def bucket_of(string, width):
    return -(-(len(string) - 1) // width) * width


def build_model(lengths, hidden, lr, seed):
    """One unrolled LSTM per length in ``lengths``, all sharing one set of weights.

    A batch runs through the shortest unrolling that fits it; the padding is
    masked out of the loss. One Adam optimizer serves every length, so its
    moments (and the weights) are shared too.
    """
    graph = gf.Graph()
    with graph.as_default():
        gf.set_random_seed(seed)
        step = gf.train.get_or_create_global_step()
        optimizer = gf.train.AdamOptimizer(lr)
        cell = gf.nn.rnn_cell.LSTMCell(hidden)
        models = {}
        for length in lengths:
            with gf.variable_scope("reber", reuse=gf.AUTO_REUSE):
                x = gf.placeholder(gf.int64, (None, length), name=f"x{length}")
                y = gf.placeholder(gf.int64, (None, length), name=f"y{length}")
                mask = gf.placeholder(gf.float32, (None, length), name=f"mask{length}")
                inputs = gf.unstack(gf.one_hot(x, len(SYMBOLS)), num=length, axis=1)
                outputs, _ = gf.nn.static_rnn(cell, inputs, dtype=gf.float32, scope="lstm")
                h = gf.reshape(gf.stack(outputs, axis=1), (-1, hidden))
                logits = gf.layers.dense(h, len(SYMBOLS), name="softmax")
            flat_mask = gf.reshape(mask, (-1,))
            xent = gf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=gf.reshape(y, (-1,)), logits=logits)
            loss = gf.reduce_sum(xent * flat_mask) / gf.reduce_sum(flat_mask)
            probs = gf.reshape(gf.nn.softmax(logits), (-1, length, len(SYMBOLS)))
            train_op = optimizer.minimize(loss, global_step=step)
            models[length] = dict(x=x, y=y, mask=mask, loss=loss, probs=probs, train=train_op)
        epoch = gf.Variable(np.int64(0), trainable=False, name="epoch", dtype=gf.int64)
        next_epoch = gf.assign_add(epoch, 1)
        init_op = gf.global_variables_initializer()
        saver = gf.train.Saver(max_to_keep=2)
    return graph, dict(models=models, init=init_op, step=step, epoch=epoch,
                       next_epoch=next_epoch, saver=saver)


def batches_by_length(strings, width, batch_size, rng=None):
    """Batches of strings that share an unroll length: [(length, [strings])], shuffled."""
    groups = {}
    for s in strings:
        groups.setdefault(bucket_of(s, width), []).append(s)
    out = []
    for length, group in sorted(groups.items()):
        if rng is not None:
            group = [group[i] for i in rng.permutation(len(group))]
        out += [(length, group[i:i + batch_size]) for i in range(0, len(group), batch_size)]
    if rng is not None:
        out = [out[i] for i in rng.permutation(len(out))]
    return out


def evaluate(sess, m, strings, width, threshold, batch_size=500):
    """Share of strings whose thresholded prediction equals the legal set everywhere,
    and the mean loss per predicted symbol."""
    solved = loss_sum = count = 0.0
    for length, group in batches_by_length(strings, width, batch_size):
        model = m["models"][length]
        x, y, mask = encode(group, length)
        probs, loss = sess.run([model["probs"], model["loss"]],
                               {model["x"]: x, model["y"]: y, model["mask"]: mask})
        ok = ((probs > threshold) == legal_mask(group, length)).all(axis=2) | (mask == 0)
        solved += float(ok.all(axis=1).sum())
        loss_sum += float(loss) * float(mask.sum())
        count += float(mask.sum())
    return solved / len(strings), loss_sum / count


def main(argv=None):
    parser = argparse.ArgumentParser(description="Embedded Reber grammar with an LSTM")
    parser.add_argument("--backend", default=None, help="numpy, cupy, torch, array_api_strict")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train-strings", type=int, default=8000)
    parser.add_argument("--test-strings", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=24)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--threshold", type=float, default=0.1,
                        help="a symbol is predicted when its probability exceeds this")
    parser.add_argument("--bucket-width", type=int, default=8,
                        help="unroll lengths are multiples of this; each batch takes the "
                             "shortest that fits its strings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="save a checkpoint here after each epoch")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the latest checkpoint in --checkpoint-dir")
    args = parser.parse_args(argv)
    tools.check_backend(parser, args.backend)  # one line, before anything is built
    if args.resume and not args.checkpoint_dir:
        parser.error("--resume needs --checkpoint-dir")
    from tqdm import tqdm

    rng = np.random.default_rng(args.seed)
    train_strings = make_strings(args.train_strings, rng)
    test_strings = make_strings(args.test_strings, rng)
    lengths = bucket_lengths(train_strings + test_strings, args.bucket_width)
    print(f"{len(train_strings)} training and {len(test_strings)} held-out strings, "
          f"mean length {np.mean([len(s) for s in train_strings]):.2f}, "
          f"unrolled over {', '.join(map(str, lengths))} steps")

    graph, m = build_model(lengths, args.hidden, args.lr, args.seed)
    steps_per_epoch = len(batches_by_length(train_strings, args.bucket_width, args.batch_size))
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    with gf.Session(graph=graph, backend=args.backend) as sess:
        backend = sess.backend.name
        png = tools.png_path(args.out, "reber_lstm_curves", backend)
        done, history, latest = tools.start(sess, m, args.checkpoint_dir, args.resume)
        step = int(sess.run(m["step"]))

        def curves():
            title = (f"reber_lstm: LSTM {args.hidden} units, embedded Reber grammar, "
                     f"{tools.backends_text(history, backend)}")
            tools.save_curves(png, title, history, steps_per_epoch,
                              loss_label="training loss (nats/symbol)",
                              metric_label="held-out strings solved (%)")

        if done >= args.epochs:
            if not tools.redraw_finished(done, args.epochs, latest, history, curves, png):
                acc, test_loss = evaluate(sess, m, test_strings, args.bucket_width,
                                          args.threshold)
                history.add_eval(step=step, epoch=done, accuracy=acc, test_loss=test_loss,
                                 backend=backend)
                print(f"held-out strings solved {100 * acc:.1f}%; {png} left as it was (no "
                      "saved history to draw it from)")
                png = None
            return results(history, time.perf_counter() - t0, png)
        epoch = done + 1
        try:
            for epoch in range(done + 1, args.epochs + 1):
                batches = batches_by_length(train_strings, args.bucket_width, args.batch_size,
                                            np.random.default_rng([args.seed, epoch]))
                with tqdm(batches, desc=f"epoch {epoch}/{args.epochs}", leave=False) as bar:
                    for length, group in bar:
                        model = m["models"][length]
                        x, y, mask = encode(group, length)
                        _, loss = sess.run([model["train"], model["loss"]],
                                           {model["x"]: x, model["y"]: y, model["mask"]: mask})
                        step += 1
                        history.add_loss(step, loss)
                        if step % 20 == 0:
                            bar.set_postfix(loss=f"{loss:.4f}")
                acc, test_loss = evaluate(sess, m, test_strings, args.bucket_width,
                                          args.threshold)
                history.add_eval(step=step, epoch=epoch, accuracy=acc, test_loss=test_loss,
                                 backend=backend)
                print(f"epoch {epoch}: held-out strings solved {100 * acc:.1f}%, held-out loss "
                      f"{test_loss:.4f} nats/symbol ({time.perf_counter() - t0:.1f} s, "
                      f"backend {backend})")
                sess.run(m["next_epoch"])
                if args.checkpoint_dir:
                    print(f"saved {tools.save_checkpoint(sess, m, args.checkpoint_dir, history)}")
        except KeyboardInterrupt:
            tools.interrupted(__file__, argv, args.checkpoint_dir, history,
                              f"epoch {epoch}, step {step}")
    seconds = time.perf_counter() - t0
    curves()
    print(f"saved {png}")
    return results(history, seconds, png)


def results(history, seconds, png):
    """What ``main`` returns: every epoch's figures so far, a resumed run's included."""
    accuracies = [e["accuracy"] for e in history.evals]
    return {"accuracy": accuracies[-1], "accuracies": accuracies,
            "losses": history.loss_values(), "seconds": seconds, "png": png}

if __name__ == "__main__":
    main()
