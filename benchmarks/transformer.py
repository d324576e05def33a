"""A BERT-style encoder's training step: gradflow against PyTorch and TensorFlow 2.x.

The network is written once in TF1's graph API (``import gradflow as tf`` or
``tensorflow.compat.v1``), the way google-research/bert's ``modeling.py`` builds it:
word, position and token-type embeddings, layer norm, ``--layers`` encoder layers
(self-attention with a padding mask and dropout, a GELU feed-forward layer of 4x the
width, residuals and layer norms), the first token's pooled output and a 2-way
softmax loss, trained by Adam. PyTorch runs the same network from the same weights.
The steps take turns round after round in one process, quiet and then beside one
CPU-bound process (``conv.timed``: the best of 5 rounds quiet, the median of 9 loaded).

    python benchmarks/transformer.py [--width 128] [--layers 2] [--batch 16]
                                     [--seq 128] [--seconds 2] [--skip-tf]
                                     [--unfused-attention] [--unfused-layer-norm]
    python benchmarks/transformer.py --profile [--unfused-layer-norm] [--unfused-gelu]

``--unfused-attention`` times gradflow a second time with the attention pass off (its
plan compiled without ``passes.attention.fuse_attention``: the product, softmax,
dropout and product as separate ops, and their gradients) and adds the column
``gf / unfused``: what the fused attention pair gains on the CPU, in the same run.
``--unfused-layer-norm`` does the same for the layer-norm pass
(``passes.layer_norm.fuse_layer_norm``), in the column ``gf / no ln``, and
``--unfused-gelu`` for the GELU pass (``passes.gelu.fuse_gelu``), ``gf / no gelu``;
with both, ``gf / neither`` compares with the plan without either pass.
``--profile`` prints the milliseconds per step in each kind of op of gradflow's step
(with ``--unfused-layer-norm``/``--unfused-gelu``: without those passes), nothing else.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import parse_args, pin_threads_from_argv  # noqa: E402

pin_threads_from_argv()

import numpy as np  # noqa: E402
import op_profile  # noqa: E402  (it loads NumPy: after the threads are pinned)
from conv import add_peer_arguments, load_peers, timed  # noqa: E402

import gradflow as gf  # noqa: E402
from gradflow import passes  # noqa: E402
from gradflow.passes.attention import fuse_attention  # noqa: E402
from gradflow.passes.gelu import fuse_gelu  # noqa: E402
from gradflow.passes.layer_norm import fuse_layer_norm  # noqa: E402

VOCAB, HEADS_WIDTH = 1000, 64


def init_weights(width, layers, seq, seed=0):
    """The network's weights by name (truncated-normal-like 0.02 scale, BERT's init)."""
    rng = np.random.default_rng(seed)

    def normal(*shape):
        return np.clip(rng.normal(0, 0.02, shape), -0.04, 0.04).astype(np.float32)

    w = {"word": normal(VOCAB, width), "position": normal(seq, width),
         "token_type": normal(2, width), "pool": normal(width, width),
         "pool_b": np.zeros(width, np.float32), "out": normal(width, 2),
         "out_b": np.zeros(2, np.float32)}
    for i in range(layers):
        for name, shape in (("q", (width, width)), ("k", (width, width)),
                            ("v", (width, width)), ("o", (width, width)),
                            ("ff1", (width, 4 * width)), ("ff2", (4 * width, width))):
            w[f"{i}/{name}"] = normal(*shape)
            w[f"{i}/{name}_b"] = np.zeros(shape[1], np.float32)
    for name in ["emb"] + [f"{i}/{part}" for i in range(layers) for part in ("ln1", "ln2")]:
        w[f"{name}/gamma"] = np.ones(width, np.float32)
        w[f"{name}/beta"] = np.zeros(width, np.float32)
    return w


def graph_step(m, weights, ids, mask, labels, layers, dropout=0.1, config=None,
               dtype="float32", causal=False):
    """One Adam step of the encoder in TF1's graph API ``m`` (gradflow or
    ``tensorflow.compat.v1``), as a function. ``dtype``: the variables' and activations'
    float type (the loss is taken in float32); ``causal``: GPT-2's attention mask
    (``w * b - 1e10 * (1 - b)``, ``b`` lower-triangular) in place of BERT's padding."""
    batch, seq = ids.shape
    width = weights["word"].shape[1]
    heads = width // HEADS_WIDTH
    graph = m.Graph()
    with graph.as_default():
        v = {k: m.Variable(a.astype(dtype), name=k.replace("/", "_"))
             for k, a in weights.items()}
        ids_p = m.placeholder(m.int32, [None, seq])
        mask_p = m.placeholder(getattr(m, dtype), [None, seq])
        labels_p = m.placeholder(m.int32, [None])
        n = m.shape(ids_p)[0]

        def layer_norm(x, name):
            mean, var = m.nn.moments(x, [-1], keep_dims=True)
            return (x - mean) * m.rsqrt(var + 1e-12) * v[name + "/gamma"] + v[name + "/beta"]

        def dense(x, name):
            return m.matmul(x, v[name]) + v[name + "_b"]

        def gelu(x):
            return 0.5 * x * (1.0 + m.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * m.pow(x, 3))))

        def split_heads(x):
            return m.transpose(m.reshape(x, [n, seq, heads, HEADS_WIDTH]), [0, 2, 1, 3])

        h = m.gather(v["word"], ids_p) + v["position"] + v["token_type"][0]
        h = m.reshape(m.nn.dropout(layer_norm(h, "emb"), rate=dropout), [-1, width])
        adder = m.expand_dims(m.expand_dims((1.0 - mask_p) * -10000.0, 1), 1)
        for i in range(layers):
            q, k, val = (split_heads(dense(h, f"{i}/{p}")) for p in ("q", "k", "v"))
            scores = m.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(HEADS_WIDTH))
            if causal:
                b = m.reshape(m.cast(m.range(seq)[:, None] >= m.range(seq), scores.dtype),
                              [1, 1, seq, seq])
                scores = scores * b - m.cast(1e10, scores.dtype) * (1 - b)
            else:
                scores = scores + adder
            probs = m.nn.dropout(m.nn.softmax(scores), rate=dropout)
            context = m.reshape(m.transpose(m.matmul(probs, val), [0, 2, 1, 3]), [-1, width])
            h = layer_norm(m.nn.dropout(dense(context, f"{i}/o"), rate=dropout) + h, f"{i}/ln1")
            ff = dense(gelu(dense(h, f"{i}/ff1")), f"{i}/ff2")
            h = layer_norm(m.nn.dropout(ff, rate=dropout) + h, f"{i}/ln2")
        first = m.reshape(h, [n, seq, width])[:, 0]
        logits = m.cast(dense(m.tanh(dense(first, "pool")), "out"), m.float32)
        loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels_p, logits=logits))
        train = m.train.AdamOptimizer(1e-4).minimize(loss)
        init = m.global_variables_initializer()
    sess = m.Session(graph=graph) if config is None else m.Session(graph=graph, config=config)
    sess.run(init)
    feed = {ids_p: ids, mask_p: mask.astype(dtype), labels_p: labels}
    return lambda: sess.run(train, feed)


def torch_step(torch, weights, ids, mask, labels, layers, dropout=0.1):
    """The same step in PyTorch (eager, float32)."""
    f = torch.nn.functional
    p = {k: torch.tensor(a, requires_grad=True) for k, a in weights.items()}
    opt = torch.optim.Adam(list(p.values()), lr=1e-4)
    ids_t, labels_t = torch.from_numpy(ids.astype(np.int64)), torch.from_numpy(
        labels.astype(np.int64))
    adder = ((1.0 - torch.from_numpy(mask)) * -10000.0)[:, None, None, :]
    batch, seq = ids.shape
    width = weights["word"].shape[1]
    heads = width // HEADS_WIDTH

    def split_heads(x):
        return x.reshape(batch, seq, heads, HEADS_WIDTH).transpose(1, 2)

    def step():
        h = p["word"][ids_t] + p["position"] + p["token_type"][0]
        h = f.dropout(f.layer_norm(h, (width,), p["emb/gamma"], p["emb/beta"], 1e-12), dropout)
        for i in range(layers):
            q, k, v = (split_heads(f.linear(h, p[f"{i}/{n}"].t(), p[f"{i}/{n}_b"]))
                       for n in ("q", "k", "v"))
            scores = q @ k.transpose(-1, -2) / math.sqrt(HEADS_WIDTH) + adder
            context = (f.dropout(scores.softmax(-1), dropout) @ v).transpose(1, 2)
            out = f.linear(context.reshape(batch, seq, width), p[f"{i}/o"].t(), p[f"{i}/o_b"])
            h = f.layer_norm(f.dropout(out, dropout) + h, (width,), p[f"{i}/ln1/gamma"],
                             p[f"{i}/ln1/beta"], 1e-12)
            ff = f.linear(f.gelu(f.linear(h, p[f"{i}/ff1"].t(), p[f"{i}/ff1_b"]),
                                 approximate="tanh"), p[f"{i}/ff2"].t(), p[f"{i}/ff2_b"])
            h = f.layer_norm(f.dropout(ff, dropout) + h, (width,), p[f"{i}/ln2/gamma"],
                             p[f"{i}/ln2/beta"], 1e-12)
        pooled = torch.tanh(f.linear(h[:, 0], p["pool"].t(), p["pool_b"]))
        loss = f.cross_entropy(f.linear(pooled, p["out"].t(), p["out_b"]), labels_t)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def unfused_step(weights, ids, mask, labels, layers, without=fuse_attention):
    """gradflow's step with its plan compiled without the pass ``without`` (or a tuple of
    passes; run once here, while they are off: the plan is kept for the later runs)."""
    saved = list(passes.PASSES)
    off = without if isinstance(without, tuple) else (without,)
    passes.PASSES[:] = [p for p in saved if p not in off]
    try:
        step = graph_step(gf, weights, ids, mask, labels, layers)
        step()
    finally:
        passes.PASSES[:] = saved
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--seconds", type=float, default=2.0, help="timing per contender")
    parser.add_argument("--unfused-attention", action="store_true",
                        help="also time gradflow with the attention pass off")
    parser.add_argument("--unfused-layer-norm", action="store_true",
                        help="also time gradflow with the layer-norm pass off")
    parser.add_argument("--unfused-gelu", action="store_true",
                        help="also time gradflow with the GELU pass off")
    parser.add_argument("--profile", action="store_true",
                        help="only print the time per op of gradflow's step")
    add_peer_arguments(parser)
    args = parse_args(parser)
    torch, tf = load_peers(args, "benchmarks/transformer.py")
    rng = np.random.default_rng(1)
    ids = rng.integers(0, VOCAB, (args.batch, args.seq)).astype(np.int32)
    mask = np.ones((args.batch, args.seq), np.float32)
    mask[:, args.seq * 3 // 4:] = 0.0  # padding at the end of every row
    labels = rng.integers(0, 2, args.batch).astype(np.int32)
    weights = init_weights(args.width, args.layers, args.seq)
    if args.profile:
        without = (fuse_layer_norm,) * args.unfused_layer_norm + (fuse_gelu,) * args.unfused_gelu
        op_profile.print_profile(*profile_ops(lambda: unfused_step(weights, ids, mask, labels,
                                                        args.layers, without)))
        return
    steps = {"gradflow": graph_step(gf, weights, ids, mask, labels, args.layers),
             "torch": torch_step(torch, weights, ids, mask, labels, args.layers)}
    if tf is not None:
        steps["tf"] = graph_step(tf[0], weights, ids, mask, labels, args.layers, config=tf[1])
    if args.unfused_attention:
        steps["unfused"] = unfused_step(weights, ids, mask, labels, args.layers)
    if args.unfused_layer_norm:
        steps["no ln"] = unfused_step(weights, ids, mask, labels, args.layers,
                                      fuse_layer_norm)
    if args.unfused_gelu:
        steps["no gelu"] = unfused_step(weights, ids, mask, labels, args.layers, fuse_gelu)
    if args.unfused_gelu and args.unfused_layer_norm:
        steps["neither"] = unfused_step(weights, ids, mask, labels, args.layers,
                                        (fuse_layer_norm, fuse_gelu))
    print(f"encoder: width {args.width}, {args.layers} layers, batch {args.batch} x {args.seq}"
          f"; TensorFlow: {'not timed' if tf is None else tf[0].VERSION}\n")
    extra = [k for k in ("unfused", "no ln", "no gelu", "neither") if k in steps]
    print("| state | load | others | gradflow ms | torch ms | tf ms | gf / torch | gf / tf |"
          + "".join(f" gf / {k} |" for k in extra))
    print("|---|---|---|---|---|---|---|---|" + "---|" * len(extra))
    for load, state in ((0, "quiet"), (1, "loaded")):
        times, others, avg = timed(steps, args.seconds, load)
        ours, tf_ms = times["gradflow"], times.get("tf")
        print(f"| {state} | {avg:.1f} | {'?' if others is None else f'{others:.2f}'} "
              f"| {ours:.1f} | {times['torch']:.1f} "
              f"| {'-' if tf_ms is None else f'{tf_ms:.1f}'} "
              f"| {ours / times['torch']:.2f} "
              f"| {'-' if tf_ms is None else f'{ours / tf_ms:.2f}'} |"
              + "".join(f" {ours / times[k]:.3f} |" for k in extra), flush=True)


def profile_ops(make_step, steps=10):
    """Milliseconds per training step in each kind of op of the gradflow step
    ``make_step()`` builds (``op_profile.profile_ops``, as ``lstm_step.py --profile``)."""
    return op_profile.profile_ops(make_step, None, steps)


if __name__ == "__main__":
    main()
