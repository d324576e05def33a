"""One MNIST MLP training step (784-512-512-10, ReLU, softmax cross-entropy, Adam, float32).

gradflow (with and without its compiler passes) against the fastest hand-written
NumPy step of the same model, against PyTorch eager on the CPU, against JAX ``jit``
(XLA) where JAX is installed (``pip install "jax[cpu]"``), and against the
step's matrix products alone (the GEMM bound), at several batch sizes, in one
process. Reports milliseconds per step and the ratios. Before timing, it runs 3
steps of each implementation from the same weights and prints how far apart
their weights end up (``--check`` does only that).

    python benchmarks/mnist_mlp.py [--backend numpy] [--threads N] [--batches 32 128 1024]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from timing import (  # noqa: E402
    OtherLoad,
    parse_args,
    pin_threads_from_argv,
    pin_torch_threads,
    time_ms_each,
)

pin_threads_from_argv()

import numpy as np  # noqa: E402

import gradflow as gf  # noqa: E402

SIZES = (784, 512, 512, 10)
LR, BETA1, BETA2, EPSILON = 1e-3, 0.9, 0.999, 1e-8


def init_weights(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        out.append(rng.normal(0, np.sqrt(2 / fan_in), (fan_in, fan_out)).astype(np.float32))
        out.append(np.zeros(fan_out, np.float32))
    return out


def gradflow_step(weights, x, y, backend, gf=gf, optimize=True, session_options=None):
    """One Adam step of the MLP as a function; ``gf`` may be another gradflow version
    (benchmarks/compare_revisions.py), so ``optimize`` reaches the Session only when False.
    ``session_options`` go to the Session too. ``step.weights()`` returns the current
    weights, ``step.parts`` is ``(session, train op, x placeholder, y placeholder)``."""
    graph = gf.Graph()
    with graph.as_default():
        xp = gf.placeholder(gf.float32, (None, 784))
        yp = gf.placeholder(gf.int64, (None,))
        params = [gf.Variable(w) for w in weights]
        h = xp
        for i in range(0, len(params), 2):
            h = gf.matmul(h, params[i]) + params[i + 1]
            if i + 2 < len(params):
                h = gf.nn.relu(h)
        loss = gf.reduce_mean(gf.nn.sparse_softmax_cross_entropy_with_logits(labels=yp, logits=h))
        train = gf.train.AdamOptimizer(LR).minimize(loss)  # TF1's defaults: BETA1, ...
    options = dict({} if optimize else {"optimize": False}, **(session_options or {}))
    sess = gf.Session(graph=graph, backend=backend, **options)
    feed = {xp: x, yp: y}
    step = lambda: sess.run(train, feed)
    step.weights = lambda: sess.run(params)
    step.parts = (sess, train, xp, yp)
    return step


# The hand-written NumPy step, as fast as this author could make it. Variants timed on the
# 2-core AMD EPYC VM (OpenBLAS, 2 threads), ms per step at batch 32 / 128 / 1024:
# - the straightforward step (new arrays for every value, Adam per tensor): 2.07 / 3.92 / 20.1
# - one flat buffer each for weights, gradients and the moments, every value in a
#   preallocated buffer, bias rows appended to the weight matrices and a ones column to the
#   layer inputs (the bias gradient comes out of the weight-gradient GEMM): 1.61 / 3.38 / 19.8
# - the same with the first layer's input copied into a ones-column buffer instead of a bias
#   add and a ones-vector product: no faster (the copy costs what it saves).
# - the same without the ones columns (bias adds, bias gradients by a ones-vector product,
#   or np.add.reduce, 2x slower than the product): within noise, the adds cost as much.
# - feature-major activations (every buffer (batch, features) in Fortran order, which
#   numpy's matmul hands to BLAS as the transposed product): 1.44 / 3.26 / 20.1, against
#   1.56 / 3.40 / 19.5 batch-major in the same run: OpenBLAS prefers one or the other by
#   batch size, so the step times both layouts when it is built and keeps the faster.
# - ReLU as np.maximum(a, 0): 2.7x slower than np.maximum(a, zeros) over a preallocated
#   zero array (the scalar operand takes numpy's non-SIMD loop); np.fmax, np.clip alike.
# - the ReLU gradient: np.greater into a bool buffer and a multiply by it (fastest, tied with
#   a float32 mask made by np.greater(..., casting="unsafe")); np.copyto(where=),
#   np.putmask, np.sign and np.heaviside are 2-20x slower.
# - Adam: TF1's formula written out is 12 passes over the flat buffers (0.83 ms); keeping m
#   and v divided by (1 - beta1) and (1 - beta2) drops the two scalings of the gradient:
#   10 passes, 0.73 ms, of which np.sqrt alone is 0.24 ms (the hardware's vsqrtps rate).
#   Doing the 10 passes in cache-sized chunks (8k-128k elements) was slower (0.86-1.4 ms);
#   np.hypot (to keep sqrt(v) instead of v) is 10x slower than sqrt; np.reciprocal and a
#   multiply are slower than one np.divide. Splitting Adam over two Python threads takes it
#   from 0.73 to 0.44 ms alone but slows the whole step (1.75 against 1.62 ms at batch 32):
#   OpenBLAS's threads still spin on the second core after the last product. It helps only
#   with --threads 1 (1.96 against 2.30 ms), where the GEMMs are 2x slower, so the step
#   stays single-threaded outside BLAS.
def numpy_step(weights, x, y, layout=None):
    """The same model written by hand in NumPy: the fastest step found (see above).

    ``layout`` is "C" (activations batch-major) or "F" (feature-major); None times both
    and keeps the faster. ``step.weights()`` returns the current weights."""
    if layout is None:
        times = time_ms_each({order: numpy_step(weights, x, y, order) for order in "CF"}, 0.4)
        layout = min(times, key=times.get)
    batch = len(x)
    x = np.ascontiguousarray(x, np.float32)
    # Weights with their bias as one more row: (785, 512), (513, 512), (513, 10), stored one
    # after another in one flat buffer, in the order of ``weights`` (w1, b1, w2, b2, w3, b3).
    shapes = [(n_in + 1, n_out) for n_in, n_out in zip(SIZES[:-1], SIZES[1:])]
    size = sum(rows * cols for rows, cols in shapes)
    flat_w = np.concatenate([w.ravel() for w in weights]).astype(np.float32)
    flat_g = np.zeros(size, np.float32)
    flat_m = np.zeros(size, np.float32)  # TF1's m / (1 - beta1)
    flat_v = np.zeros(size, np.float32)  # TF1's v / (1 - beta2)
    w_aug, g_aug, start = [], [], 0
    for rows, cols in shapes:
        w_aug.append(flat_w[start:start + rows * cols].reshape(rows, cols))
        g_aug.append(flat_g[start:start + rows * cols].reshape(rows, cols))
        start += rows * cols
    (w1c, w2c, w3c), (g1c, g2c, g3c) = w_aug, g_aug
    w1, b1, w2, w3 = w1c[:-1], w1c[-1], w2c[:-1], w3c[:-1]
    g1, gb1 = g1c[:-1], g1c[-1]
    # Activations: the inputs of layers 2 and 3 carry a ones column for the bias row.
    new = lambda *shape: np.empty(shape, np.float32, order=layout)
    h1c, h2c = (np.ones((batch, 513), np.float32, order=layout) for _ in range(2))
    h1, h2 = h1c[:, :-1], h2c[:, :-1]
    pre, grad, zeros = new(batch, 512), new(batch, 512), new(batch, 512)
    zeros[:] = 0
    positive = np.empty((batch, 512), bool, order=layout)
    logits, row = new(batch, 10), new(batch, 1)
    ones = np.ones(batch, np.float32)
    examples = np.arange(batch)
    mm, mul, add = np.matmul, np.multiply, np.add
    t = [0]
    eps_hat = EPSILON / math.sqrt(1 - BETA2)

    def step():
        mm(x, w1, out=pre)  # forward
        add(pre, b1, out=pre)
        np.maximum(pre, zeros, out=h1)
        mm(h1c, w2c, out=pre)
        np.maximum(pre, zeros, out=h2)
        mm(h2c, w3c, out=logits)
        np.maximum.reduce(logits, axis=1, keepdims=True, out=row)  # softmax over the classes
        np.subtract(logits, row, out=logits)
        np.exp(logits, out=logits)
        add.reduce(logits, axis=1, keepdims=True, out=row)
        np.divide(1 / batch, row, out=row)
        mul(logits, row, out=logits)
        logits[examples, y] -= 1 / batch  # now d loss / d logits
        mm(h2c.T, logits, out=g3c)  # backward
        mm(logits, w3.T, out=grad)
        np.greater(h2, 0, out=positive)
        mul(grad, positive, out=grad)
        mm(h1c.T, grad, out=g2c)
        mm(grad, w2.T, out=pre)
        np.greater(h1, 0, out=positive)
        mul(pre, positive, out=pre)
        mm(x.T, pre, out=g1)
        mm(ones, pre, out=gb1)
        # Adam over the flat buffers: m' = b1 m + g, v' = b2 v + g^2 (m', v' being TF1's m
        # and v over (1 - b1) and (1 - b2)) and w -= lr_t m / (sqrt(v) + eps)
        # = k m' / (sqrt(v') + eps / sqrt(1 - b2)) with k = lr_t (1 - b1) / sqrt(1 - b2).
        t[0] += 1
        lr_t = LR * math.sqrt(1 - BETA2 ** t[0]) / (1 - BETA1 ** t[0])
        k = lr_t * (1 - BETA1) / math.sqrt(1 - BETA2)
        mul(flat_m, BETA1, out=flat_m)
        add(flat_m, flat_g, out=flat_m)
        np.square(flat_g, out=flat_g)
        mul(flat_v, BETA2, out=flat_v)
        add(flat_v, flat_g, out=flat_v)
        np.sqrt(flat_v, out=flat_g)
        add(flat_g, eps_hat, out=flat_g)
        np.divide(flat_m, flat_g, out=flat_g)
        mul(flat_g, k, out=flat_g)
        np.subtract(flat_w, flat_g, out=flat_w)

    def current():
        return [a.copy() for a in (w1, b1, w2, w2c[-1], w3, w3c[-1])]

    step.weights = current
    step.layout = layout
    return step


def _cores(load):
    cores = load.cores()
    return "?" if cores is None else f"{cores:.2f}"


def gemm_step(batch, seed=0):
    """The step's 8 matrix products alone (3 forward, 3 weight gradients, 2 input gradients),
    batch-major with the transposes of the backward pass, into preallocated outputs."""
    rng = np.random.default_rng(seed)
    new = lambda *shape: rng.standard_normal(shape, dtype=np.float32)
    x, w1, w2, w3 = new(batch, 784), new(784, 512), new(512, 512), new(512, 10)
    h1, h2, logits, d2, d1 = (new(batch, n) for n in (512, 512, 10, 512, 512))
    g1, g2, g3 = np.empty_like(w1), np.empty_like(w2), np.empty_like(w3)
    mm = np.matmul

    def step():
        mm(x, w1, out=h1)
        mm(h1, w2, out=h2)
        mm(h2, w3, out=logits)
        mm(h2.T, logits, out=g3)
        mm(logits, w3.T, out=d2)
        mm(h1.T, d2, out=g2)
        mm(d2, w2.T, out=d1)
        mm(x.T, d1, out=g1)

    return step


def gemm_flops(batch):
    """Floating-point operations of the step's 8 matrix products."""
    layers = [n_in * n_out for n_in, n_out in zip(SIZES[:-1], SIZES[1:])]
    return 2 * batch * (2 * sum(layers) + sum(layers[1:]))


def torch_model(weights):
    """The MLP as a ``torch.nn.Sequential`` holding ``weights``."""
    import torch

    layers = []
    for i in range(0, len(weights), 2):
        lin = torch.nn.Linear(*weights[i].shape)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(weights[i].T.copy()))
            lin.bias.copy_(torch.from_numpy(weights[i + 1]))
        layers += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def torch_step(weights, x, y):
    import torch

    model = torch_model(weights)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(BETA1, BETA2), eps=EPSILON)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    loss_fn = torch.nn.CrossEntropyLoss()

    group, t = opt.param_groups[0], [0]

    def step():
        # TF1's Adam adds epsilon to sqrt(v), torch's to sqrt(v / (1 - beta2^t)): the same
        # step takes torch's epsilon scaled by 1 / sqrt(1 - beta2^t).
        t[0] += 1
        group["eps"] = EPSILON / math.sqrt(1 - BETA2 ** t[0])
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()

    def current():
        out = []
        for lin in model[::2]:
            out += [lin.weight.detach().numpy().T.copy(), lin.bias.detach().numpy().copy()]
        return out

    step.weights = current
    return step


def jax_step(weights, x, y):
    """The same step as one ``jax.jit`` function (XLA), Adam written out with TF1's epsilon
    placement; the parameters and moments are donated, so XLA may update them in place.
    Raises ImportError without JAX (``pip install "jax[cpu]"``: an optional reference)."""
    import jax
    import jax.numpy as jnp

    def loss_fn(params, x, y):
        h = x
        for i in range(0, len(params), 2):
            h = h @ params[i] + params[i + 1]
            if i + 2 < len(params):
                h = jax.nn.relu(h)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def update(params, m, v, t, x, y):
        grads = jax.grad(loss_fn)(params, x, y)
        t = t + 1
        lr_t = LR * jnp.sqrt(1 - BETA2 ** t) / (1 - BETA1 ** t)
        m = [BETA1 * a + (1 - BETA1) * g for a, g in zip(m, grads)]
        v = [BETA2 * a + (1 - BETA2) * g * g for a, g in zip(v, grads)]
        params = [p - lr_t * a / (jnp.sqrt(b) + EPSILON) for p, a, b in zip(params, m, v)]
        return params, m, v, t

    update = jax.jit(update, donate_argnums=(0, 1, 2))
    state = [[jnp.asarray(w) for w in weights], [jnp.zeros_like(jnp.asarray(w)) for w in weights],
             [jnp.zeros_like(jnp.asarray(w)) for w in weights], jnp.float32(0)]
    xj, yj = jnp.asarray(x), jnp.asarray(y.astype(np.int32))

    def step():
        state[:] = update(*state, xj, yj)
        jax.block_until_ready(state[0])

    step.weights = lambda: [np.asarray(w) for w in state[0]]
    return step


def check(weights, x, y, backend, steps=3):
    """The weights after ``steps`` steps from ``weights``: for each pair of implementations,
    (max abs difference, number of weights more than 1e-4 apart).

    Differences are float32 rounding (1e-5 or less) except where a ReLU input lies within
    rounding of 0 for some example: the unit is then on in one implementation and off in the
    other, and Adam, which divides by the gradient's size, can move that unit's weights apart
    by up to the learning rate (one unit of layer 1 at batch 1024 of the default data)."""
    makers = {
        "numpy": lambda: numpy_step(weights, x, y, "C"),
        "numpy(F)": lambda: numpy_step(weights, x, y, "F"),
        "torch": lambda: torch_step(weights, x, y),
        "jax": lambda: jax_step(weights, x, y),
        "gradflow": lambda: gradflow_step(weights, x, y, backend),
        "gf-noopt": lambda: gradflow_step(weights, x, y, backend, optimize=False),
    }
    results = {}
    for name, make in makers.items():
        try:
            step = make()
        except ImportError:
            continue
        for _ in range(steps):
            step()
        results[name] = np.concatenate([w.ravel() for w in step.weights()])
    pairs = [("numpy", other) for other in results if other != "numpy"]
    pairs += [("torch", "gradflow")] if "torch" in results else []
    out = {}
    for a, b in pairs:
        diff = np.abs(results[a] - results[b])
        out[f"{a} vs {b}"] = (float(diff.max()), int(np.count_nonzero(diff > 1e-4)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None)
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS threads for NumPy and PyTorch (default: their own)")
    parser.add_argument("--batches", type=int, nargs="+", default=[32, 128, 1024])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--check", action="store_true",
                        help="only compare the weights after 3 steps of each implementation")
    args = parse_args(parser, argv)
    pin_torch_threads(args.threads)
    weights = init_weights()
    rng = np.random.default_rng(1)
    data = {}
    for batch in args.batches:
        data[batch] = (rng.random((batch, 784), dtype=np.float32),
                       rng.integers(0, 10, batch).astype(np.int64))
    for batch in args.batches if args.check else args.batches[:1]:
        diffs = check(weights, *data[batch], args.backend)
        print(f"check, batch {batch}: max |difference| of the weights after 3 steps from the"
              " same weights (and how many of them differ by more than 1e-4)")
        print("  " + ", ".join(f"{pair} {d:.1e} ({n})" for pair, (d, n) in diffs.items()))
    if args.check:
        return None
    print("ms per step; gf-noopt = gf.Session(optimize=False); gemm = the step's 8 matrix"
          " products alone (NumPy),\nGFLOP/s theirs; others = cores busy with other processes"
          " meanwhile (above 0.1: disturbed)")
    print(f"{'batch':>5} {'numpy':>7} {'torch':>7} {'jax':>7} {'gradflow':>8} {'gf-noopt':>8}"
          f" {'gemm':>7} {'GFLOP/s':>7}  {'gf/numpy':>8} {'gf/torch':>8} {'gf/jax':>7}"
          f" {'noopt/np':>8} {'gf/gemm':>7} {'np/gemm':>7} {'others':>6}")
    rows = {}
    for batch in args.batches:
        x, y = data[batch]
        load = OtherLoad()
        step = numpy_step(weights, x, y)
        steps = {"numpy": step, "gradflow": gradflow_step(weights, x, y, args.backend),
                 "gf-noopt": gradflow_step(weights, x, y, args.backend, optimize=False),
                 "gemm": gemm_step(batch)}
        for name, make in (("torch", torch_step), ("jax", jax_step)):
            try:
                steps[name] = make(weights, x, y)
            except ImportError:
                pass
        times = time_ms_each(steps, args.seconds)
        t_np, t_gf, t_noopt, t_gemm = (times[k] for k in ("numpy", "gradflow", "gf-noopt", "gemm"))
        t_torch = times.get("torch", float("nan"))
        t_jax = times.get("jax", float("nan"))
        gflops = gemm_flops(batch) / t_gemm / 1e6
        print(f"{batch:5d} {t_np:7.3f} {t_torch:7.3f} {t_jax:7.3f} {t_gf:8.3f} {t_noopt:8.3f}"
              f" {t_gemm:7.3f} {gflops:7.1f}  {t_gf / t_np:8.2f} {t_gf / t_torch:8.2f}"
              f" {t_gf / t_jax:7.2f} {t_noopt / t_np:8.2f} {t_gf / t_gemm:7.2f}"
              f" {t_np / t_gemm:7.2f} {_cores(load):>6}")
        rows[batch] = {"numpy": t_np, "torch": t_torch, "jax": t_jax, "gradflow": t_gf,
                       "gradflow_noopt": t_noopt, "gemm": t_gemm, "numpy_layout": step.layout}
    print("hand numpy layout per batch (C batch-major, F feature-major): "
          + ", ".join(f"{batch} {row['numpy_layout']}" for batch, row in rows.items()))
    return rows


if __name__ == "__main__":
    main()
