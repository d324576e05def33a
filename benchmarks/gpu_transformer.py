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

Each size runs as a BERT-style step (the padding mask) and a GPT-2-style one (GPT-2's
causal mask ``w * b - 1e10 * (1 - b)``; otherwise the same layers). Rows
(``gpu.report``'s columns: ms/step, kernels/step, host ms): every gradflow variant of
``gpu.gradflow_variants`` (the cupy backend with capture, ``capture=False``, TF32,
``optimize=False``), the whole step in float16 and in bfloat16 (where gradflow has the
dtype; captured, cuDNN's fused attention inside), PyTorch eager, fused Adam, CUDA graph
and ``torch.compile`` (``gpu.torch_variants``) in FP32, a TF32 CUDA graph, and
``scaled_dot_product_attention`` under ``torch.autocast`` in bf16 and fp16 (CUDA graph
and ``torch.compile``; no gradient scaler: speed rows), and JAX ``jit`` in FP32 and
bf16 (where JAX has a GPU). Under each timed row an indented line gives the tokens per
second (batch * seq / step time) and the share of the GPU's dense bf16 peak that the
step's matrix products reach (``step_flops``; H100/H200: 989 TFLOP/s).

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
from jax_transformer import jax_rows  # noqa: E402

import gradflow as gf  # noqa: E402

# (width, layers, batch, seq); heads = width // transformer.HEADS_WIDTH
SIZES = ((128, 2, 16, 128), (768, 2, 16, 128))
DROPOUT = 0.1
MODELS = {"BERT": False, "GPT-2": True}  # name: causal
# dense bf16 tensor-core peaks (FLOP/s) by a word of the device's name
BF16_PEAK = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12}


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


def torch_model(weights, layers, mask, dropout=DROPOUT, causal=False, sdpa=False):
    """transformer.torch_step's forward pass as an ``nn.Module`` (in train mode: dropout
    on) from the same weights, for ``gpu.torch_variants``; ``model(ids)`` -> logits.
    ``causal``: GPT-2's mask; ``sdpa``: attention through
    ``scaled_dot_product_attention`` (its fused kernels) instead of written out."""
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
            seq = mask.shape[1]
            self.register_buffer("upper", torch.triu(torch.full((seq, seq), -1e10), 1))

        def attend(self, q, k, v):
            mask = self.upper if causal else self.adder
            if sdpa:
                return f.scaled_dot_product_attention(
                    q, k, v, attn_mask=mask.to(q.dtype),
                    dropout_p=dropout if self.training else 0.0)
            scores = q @ k.transpose(-1, -2) / math.sqrt(hw) + mask
            return f.dropout(scores.softmax(-1), dropout, self.training) @ v

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
                context = self.attend(q, k, v).transpose(1, 2)
                out = dense(context.reshape(batch, seq, width), f"{i}/o")
                h = norm(drop(out) + h, f"{i}/ln1")
                ff = dense(f.gelu(dense(h, f"{i}/ff1"), approximate="tanh"), f"{i}/ff2")
                h = norm(drop(ff) + h, f"{i}/ln2")
            return dense(torch.tanh(dense(h[:, 0], "pool")), "out")

    return Encoder().train()


def _cross_entropy(model, ids, labels):
    import torch

    return torch.nn.functional.cross_entropy(model(ids), labels)


def step_flops(width, layers, batch, seq):
    """The multiply-adds (x2) of one training step's matrix products: the dense layers
    (q, k, v, o: 4 w^2; the feed-forward: 8 w^2 per token) and the attention products
    (q k^T and p v: 2 s w per token), forward and twice that backward."""
    tokens = batch * seq
    per_layer = 2 * tokens * 12 * width * width + 2 * 2 * tokens * seq * width
    return 3 * layers * per_layer


def bf16_peak():
    """The GPU's dense bf16 peak in FLOP/s from its name (``BF16_PEAK``), or None."""
    try:
        name = gpu.header().splitlines()[0]
    except Exception:  # noqa: BLE001 - no GPU: no peak to compare with
        return None
    return next((peak for word, peak in BF16_PEAK.items() if word in name), None)


def _report(group, name, make, seconds, tokens, flops=None, peak=None):
    """``gpu.report``'s row, and under it (indented) the tokens per second and the share of
    the bf16 peak the step's products reach."""
    ms = gpu.report(group, name, make, seconds)
    if ms is not None:
        share = "" if not flops or not peak else \
            f", {flops / (ms * 1e-3) / peak:.1%} of the bf16 peak"
        print(f"    {tokens / ms * 1e3:,.0f} tokens/s{share}", flush=True)
    return ms


def half_variants():
    """``{row name: (dtype name, options)}`` of the gradflow rows of the whole step in a
    half type: on the GPU only (the CPU backends' fused kernels take no half floats)."""
    if gpu.BACKEND != "cupy":
        return {}
    return {f"gradflow {gpu.BACKEND} fp16": ("float16", {}),
            f"gradflow {gpu.BACKEND} bf16": ("bfloat16", {})}


def _gradflow_rows(group, size, causal, feeds, weights, seconds, per):
    width, layers, batch, seq = size
    rows = {name: ("float32", optimize, options)
            for name, (optimize, options) in gpu.gradflow_variants().items()}
    rows.update({name: (dtype, True, options)
                 for name, (dtype, options) in half_variants().items()})
    for name, (dtype, optimize, options) in rows.items():
        def make(dtype=dtype, optimize=optimize, options=options):
            if not hasattr(gf, dtype):
                return None  # bfloat16 on a gradflow without it
            return transformer.graph_step(_BoundGradflow(optimize, options), weights, *feeds,
                                          layers, dropout=DROPOUT, dtype=dtype, causal=causal)

        _report(group, name, make, seconds, *per)


def encoder_rows(width, layers, batch, seq, seconds, compile_too, models=None):
    """The gradflow, PyTorch and JAX rows of one encoder size, BERT- and GPT-2-style."""
    ids, mask, labels = inputs(batch, seq)
    weights = transformer.init_weights(width, layers, seq)
    feeds = gpu.device_feeds(ids, mask, labels)
    per = (batch * seq, step_flops(width, layers, batch, seq), bf16_peak())
    for model, causal in (MODELS if models is None else models).items():
        group = f"{model} w={width}"
        print(f"    ({group}: {width // transformer.HEADS_WIDTH} heads of "
              f"{transformer.HEADS_WIDTH}, {layers} layers, batch {batch} x {seq} tokens, "
              f"{'causal' if causal else 'padding'} mask)", flush=True)
        _gradflow_rows(group, (width, layers, batch, seq), causal, feeds, weights, seconds,
                       per)
        for name, make in torch_rows(weights, layers, ids, mask, labels, causal,
                                     compile_too).items():
            _report(group, name, make, seconds, *per)
        for name, make in jax_rows(weights, layers, ids, mask, labels, causal).items():
            _report(group, name, make, seconds, *per)


def torch_rows(weights, layers, ids, mask, labels, causal, compile_too):
    """``{row name: maker}``: ``gpu.torch_variants`` in FP32, a TF32 CUDA graph, and SDPA
    under autocast in bf16 and fp16 (CUDA graph, ``torch.compile``)."""
    torch = gpu._torch_cuda()
    if torch is None:
        return {}
    ids_t = torch.from_numpy(ids.astype(np.int64)).cuda()
    labels_t = torch.from_numpy(labels.astype(np.int64)).cuda()

    def variants(sdpa, autocast, wanted):
        def loss_of(model, x, y):
            if autocast is None:
                return _cross_entropy(model, x, y)
            with torch.autocast("cuda", dtype=autocast, cache_enabled=False):
                return _cross_entropy(model, x, y)

        made = gpu.torch_variants(lambda: torch_model(weights, layers, mask, causal=causal,
                                                      sdpa=sdpa), ids_t, labels_t, loss_of,
                                  compile_too)
        return {k: v for k, v in made.items() if wanted is None or k in wanted}

    rows = variants(False, None, None)
    graph = variants(False, None, ("PyTorch CUDA graph",))["PyTorch CUDA graph"]
    rows["PyTorch TF32 CUDA graph"] = lambda: _with_tf32(torch, graph)
    for label, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        for name, make in variants(True, dtype, ("PyTorch CUDA graph", "torch.compile")).items():
            rows[f"{name.replace('PyTorch ', '')} SDPA {label} autocast".replace(
                "CUDA graph", "PyTorch CUDA graph")] = make
    return rows


def _with_tf32(torch, make):
    """``make()`` (a CUDA graph's capture) with TF32 products: the graph keeps the kernels
    of its capture, so the flag is set for the capture and restored after."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        return make()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def transformer_rows(seconds, compile_too, sizes=None):
    """The rows of every size in ``sizes`` (default ``SIZES``: ``(width, layers, batch,
    seq)`` tuples), for benchmarks/gpu.py and ``main``."""
    for width, layers, batch, seq in SIZES if sizes is None else sizes:
        encoder_rows(width, layers, batch, seq, seconds, compile_too)
        if width >= 768:
            print("    (the issue's goal: bf16 at least 3x faster than FP32 on this "
                  "BERT-base-sized layer; compare the rows above)", flush=True)


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
