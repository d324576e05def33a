"""benchmarks/transformer.py's encoder step in JAX, ``jit``-compiled: the rows
``JAX jit FP32`` and ``JAX jit bf16`` of benchmarks/gpu_transformer.py.

The same network from the same weights (transformer.init_weights): embeddings, layer norm,
``layers`` encoder layers of self-attention (BERT's padding mask or GPT-2's causal mask),
dropout 0.1 from a key split every step, a tanh-GELU feed-forward layer, the pooled first
token, a 2-way softmax loss, and Adam (written out: lr 1e-4, beta 0.9/0.999, eps 1e-8,
as TF1's AdamOptimizer). In bf16 the weights stay float32 (Adam's state too) and each
step computes in bfloat16 from their casts, the loss in float32 (mixed precision).

``step = jax_step(weights, layers, ids, mask, labels, causal, dtype)`` returns a function
running one step on the default device and waiting for it, or None where JAX has no GPU.
"""

from __future__ import annotations

import math

import transformer

DROPOUT = 0.1


def _gpu_jax():
    try:
        import jax

        jax.devices("gpu")
    except Exception:  # noqa: BLE001 - no JAX, or JAX without a GPU backend
        return None
    return jax


def forward(jnp, jax, p, ids, adder, key, layers, heads, compute):
    """The logits of the encoder for ``ids`` (``adder``: the additive attention mask)."""
    width = p["word"].shape[1]
    hw = width // heads
    batch, seq = ids.shape
    keys = iter(jax.random.split(key, 3 * layers + 1))
    c = {k: v.astype(compute) for k, v in p.items()}

    def drop(x):
        keep = jax.random.bernoulli(next(keys), 1 - DROPOUT, x.shape)
        return jnp.where(keep, x / (1 - DROPOUT), 0).astype(x.dtype)

    def norm(x, name):
        x32 = x.astype(jnp.float32)
        mean = x32.mean(-1, keepdims=True)
        var = ((x32 - mean) ** 2).mean(-1, keepdims=True)
        y = (x32 - mean) * jax.lax.rsqrt(var + 1e-12)
        return (y * p[name + "/gamma"] + p[name + "/beta"]).astype(compute)

    def dense(x, name):
        return x @ c[name] + c[name + "_b"]

    def gelu(x):
        return 0.5 * x * (1 + jnp.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))

    def heads_of(x):
        return x.reshape(batch, seq, heads, hw).transpose(0, 2, 1, 3)

    h = c["word"][ids] + c["position"] + c["token_type"][0]
    h = drop(norm(h, "emb"))
    for i in range(layers):
        q, k, v = (heads_of(dense(h, f"{i}/{n}")) for n in ("q", "k", "v"))
        scores = (q @ k.transpose(0, 1, 3, 2)).astype(jnp.float32) / math.sqrt(hw) + adder
        probs = drop(jax.nn.softmax(scores, -1).astype(compute))
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, width)
        h = norm(drop(dense(context, f"{i}/o")) + h, f"{i}/ln1")
        ff = dense(gelu(dense(h, f"{i}/ff1")), f"{i}/ff2")
        h = norm(drop(ff) + h, f"{i}/ln2")
    pooled = jnp.tanh(dense(h[:, 0], "pool"))
    return dense(pooled, "out").astype(jnp.float32)


def jax_step(weights, layers, ids, mask, labels, causal, dtype="float32"):
    """One jitted Adam step of the encoder as a function (see the module doc), or None."""
    jax = _gpu_jax()
    if jax is None:
        return None
    jnp = jax.numpy
    heads = weights["word"].shape[1] // transformer.HEADS_WIDTH
    seq = ids.shape[1]
    compute = jnp.bfloat16 if dtype == "bfloat16" else jnp.float32
    if causal:
        adder = jnp.triu(jnp.full((seq, seq), -1e10, jnp.float32), 1)[None, None]
    else:
        adder = ((1.0 - jnp.asarray(mask)) * -10000.0)[:, None, None, :]
    ids_d, labels_d = jnp.asarray(ids), jnp.asarray(labels)

    def loss(p, key):
        logits = forward(jnp, jax, p, ids_d, adder, key, layers, heads, compute)
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits), labels_d[:, None], 1)
        return -picked.mean()

    @jax.jit
    def step(state):
        p, m, v, t, key = state
        key, sub = jax.random.split(key)
        g = jax.grad(loss)(p, sub)
        t = t + 1
        lr = 1e-4 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        p = jax.tree_util.tree_map(lambda w, a, b: w - lr * a / (jnp.sqrt(b) + 1e-8), p, m, v)
        return p, m, v, t, key

    params = {k: jnp.asarray(a) for k, a in weights.items()}
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [(params, zeros, zeros, jnp.zeros((), jnp.float32), jax.random.PRNGKey(0))]

    def run():
        state[0] = step(state[0])
        jax.block_until_ready(state[0][0])

    return run


def jax_rows(weights, layers, ids, mask, labels, causal):
    """``{row name: maker}`` for benchmarks/gpu_transformer.py (empty without a GPU JAX)."""
    if _gpu_jax() is None:
        return {}
    return {f"JAX jit {label}": (lambda d=dtype: jax_step(weights, layers, ids, mask, labels,
                                                          causal, d))
            for label, dtype in (("FP32", "float32"), ("bf16", "bfloat16"))}
