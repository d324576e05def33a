"""The BERT-style encoder's training step of benchmarks/transformer.py on one CUDA GPU:
gradflow against PyTorch, in one process, as rows of benchmarks/gpu.py.

The network is transformer.py's (word, position and token-type embeddings, layer norm,
encoder layers of self-attention with a padding mask and dropout 0.1 and a GELU
feed-forward layer of 4x the width, the pooled first token and a 2-way softmax loss,
Adam), built from the same weights by ``transformer.init_weights``; the gradflow step is
``transformer.graph_step``, PyTorch runs the same forward pass as an ``nn.Module`` in
train mode (dropout on). Two sizes: the benchmark's default (width 128, 2 heads, 2
layers, batch 16 x 128 tokens, "BERT w=128") and BERT-base's layer width and heads in a
2-layer stack ("BERT w=768": width 768, 12 heads, 2 layers, batch 16 x 128).

Rows (``gpu.report``'s columns: ms/step, kernels/step, host ms): every gradflow variant
of ``gpu.gradflow_variants`` (the cupy backend with capture, ``capture=False``, TF32,
``optimize=False``) and PyTorch eager, fused Adam, CUDA graph and ``torch.compile``
(``gpu.torch_variants``). Under each timed row an indented line gives the tokens per
second (batch * seq / step time).

    python benchmarks/gpu_transformer.py [--seconds 1.0] [--skip-compile] [--top N]

Without a CUDA device (or without CuPy) it prints why and exits 0 having measured
nothing; any other failure of a row is printed in that row and the run goes on.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_common as gpu  # noqa: E402
import numpy as np  # noqa: E402
import transformer  # noqa: E402

import gradflow as gf  # noqa: E402

# (width, layers, batch, seq); heads = width // transformer.HEADS_WIDTH
SIZES = ((128, 2, 16, 128), (768, 2, 16, 128))
DROPOUT = 0.1


class _BoundGradflow:
    """gradflow as ``transformer.graph_step`` sees it (its ``m``), with ``Session`` bound to
    ``gpu.BACKEND`` and one variant's options (graph_step itself passes neither)."""

    def __init__(self, optimize, options):
        self._options = dict({} if optimize else {"optimize": False}, **options)

    def __getattr__(self, name):
        return getattr(gf, name)

    def Session(self, graph=None, config=None):  # graph_step calls m.Session(graph=...)
        return gf.Session(graph=graph, backend=gpu.BACKEND, **self._options)


def inputs(batch, seq):
    """``(ids, mask, labels)`` as transformer.py's main draws them: padding in the last
    quarter of every row."""
    rng = np.random.default_rng(1)
    ids = rng.integers(0, transformer.VOCAB, (batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.float32)
    mask[:, seq * 3 // 4:] = 0.0
    labels = rng.integers(0, 2, batch).astype(np.int32)
    return ids, mask, labels


def torch_model(weights, layers, mask, dropout=DROPOUT):
    """transformer.torch_step's forward pass as an ``nn.Module`` (in train mode: dropout
    on) from the same weights, for ``gpu.torch_variants``; ``model(ids)`` -> logits."""
    import torch

    f = torch.nn.functional
    width = weights["word"].shape[1]
    heads, hw = width // transformer.HEADS_WIDTH, transformer.HEADS_WIDTH

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p = torch.nn.ParameterDict(
                {k.replace("/", "_"): torch.nn.Parameter(torch.tensor(a))
                 for k, a in weights.items()})
            self.register_buffer("adder", ((1.0 - torch.from_numpy(mask)) * -10000.0)[
                :, None, None, :].contiguous())

        def forward(self, ids):
            p = {k: self.p[k.replace("/", "_")] for k in weights}
            batch, seq = ids.shape

            def drop(x):
                return f.dropout(x, dropout, self.training)

            def norm(x, name):
                return f.layer_norm(x, (width,), p[name + "/gamma"], p[name + "/beta"], 1e-12)

            def dense(x, name):
                return f.linear(x, p[name].t(), p[name + "_b"])

            def split_heads(x):
                return x.reshape(batch, seq, heads, hw).transpose(1, 2)

            h = f.embedding(ids, p["word"]) + p["position"] + p["token_type"][0]  # = word[ids]
            h = drop(norm(h, "emb"))
            for i in range(layers):
                q, k, v = (split_heads(dense(h, f"{i}/{n}")) for n in ("q", "k", "v"))
                scores = q @ k.transpose(-1, -2) / math.sqrt(hw) + self.adder
                context = (drop(scores.softmax(-1)) @ v).transpose(1, 2)
                out = dense(context.reshape(batch, seq, width), f"{i}/o")
                h = norm(drop(out) + h, f"{i}/ln1")
                ff = dense(f.gelu(dense(h, f"{i}/ff1"), approximate="tanh"), f"{i}/ff2")
                h = norm(drop(ff) + h, f"{i}/ln2")
            return dense(torch.tanh(dense(h[:, 0], "pool")), "out")

    return Encoder().train()


def _cross_entropy(model, ids, labels):
    import torch

    return torch.nn.functional.cross_entropy(model(ids), labels)


def _report(group, name, make, seconds, tokens):
    """``gpu.report``'s row, and under it (indented) the tokens per second."""
    ms = gpu.report(group, name, make, seconds)
    if ms is not None:
        print(f"    {tokens / ms * 1e3:,.0f} tokens/s", flush=True)
    return ms


def encoder_rows(width, layers, batch, seq, seconds, compile_too):
    """The gradflow and PyTorch rows of one encoder size."""
    group = f"BERT w={width}"
    print(f"    ({group}: {width // transformer.HEADS_WIDTH} heads of "
          f"{transformer.HEADS_WIDTH}, {layers} layers, batch {batch} x {seq} tokens)",
          flush=True)
    ids, mask, labels = inputs(batch, seq)
    weights = transformer.init_weights(width, layers, seq)
    ids_d, mask_d, labels_d = gpu.device_feeds(ids, mask, labels)
    tokens = batch * seq
    for name, (optimize, options) in gpu.gradflow_variants().items():
        _report(group, name, lambda o=optimize, opts=options: transformer.graph_step(
            _BoundGradflow(o, opts), weights, ids_d, mask_d, labels_d, layers,
            dropout=DROPOUT), seconds, tokens)
    torch = gpu._torch_cuda()
    if torch is None:
        return
    ids_t = torch.from_numpy(ids.astype(np.int64)).cuda()
    labels_t = torch.from_numpy(labels.astype(np.int64)).cuda()
    rows = gpu.torch_variants(lambda: torch_model(weights, layers, mask), ids_t, labels_t,
                              _cross_entropy, compile_too)
    for name, make in rows.items():
        _report(group, name, make, seconds, tokens)


def transformer_rows(seconds, compile_too, sizes=None):
    """The rows of every size in ``sizes`` (default ``SIZES``: ``(width, layers, batch,
    seq)`` tuples), for benchmarks/gpu.py and ``main``."""
    for width, layers, batch, seq in SIZES if sizes is None else sizes:
        encoder_rows(width, layers, batch, seq, seconds, compile_too)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per row")
    parser.add_argument("--skip-compile", action="store_true", help="no torch.compile rows")
    parser.add_argument("--top", type=int, default=0,
                        help="under each row, its N kernels with the most GPU time per step")
    args = parser.parse_args(argv)
    gpu.TOP = args.top
    status = gpu.begin("benchmarks/gpu_transformer.py")
    if status is not None:
        return status
    transformer_rows(args.seconds, not args.skip_compile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
