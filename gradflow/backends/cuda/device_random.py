"""Random ops drawn on the device: the CUDA C text of ``random_uniform`` and of a fused
dropout, on the Philox stream of ``gradflow.backends.cuda.philox``, and their NumPy references.

Importable without CuPy: ``gradflow.backends.cupy.random`` compiles this text with
NVRTC, and the tests compile the same text with g++ on the host. Each random node
has its own stream: a 64-bit key (``device_seed``, from the same seeds as the
node's host generator) and an offset in device memory that every launch advances
itself, so a captured CUDA graph draws new numbers at each replay and a run of
replays is reproducible from the seed.

The numbers follow the graph's own formulas on the stream's float32 uniforms
``u`` (the top 24 bits of a word), rounding as NumPy does:

* ``random_uniform``: ``dtype(minval + (maxval - minval) * float64(u))``;
* dropout (``gf.nn.dropout``: ``x / keep * floor(keep + u)``): in ``x``'s dtype,
  with ``keep`` read from device memory (a fed ``keep_prob`` changes without a
  new capture). The host draws of other backends are different numbers of the
  same distribution.

Kernels (``kernel_source(dtype)``, compile with ``--fmad=false``):
``gf_random_uniform_<T>(seed, state, n, double minval, double maxval, T *out)`` and
``gf_dropout_<T>(seed, state, n, const T *keep, const T *x, T *out)``.

Example::

    >>> import numpy as np
    >>> values, offset = uniform_reference(seed=3, offset=0, n=6, minval=-1.0, maxval=1.0,
    ...                                    dtype="float64")
    >>> values.shape, offset
    ((6,), 2)
"""

from __future__ import annotations

import numpy as np

from gradflow.backends.cuda import philox

C_TYPES = {"float32": "float", "float64": "double"}
DTYPES = tuple(C_TYPES)
OPTIONS = ("--fmad=false",)
# spawn key that separates a node's device stream from its host generator's numbers
_DEVICE_SPAWN_KEY = 0x64657669


def uniform_kernel_name(dtype):
    return f"gf_random_uniform_{C_TYPES[str(dtype)]}"


def dropout_kernel_name(dtype):
    return f"gf_dropout_{C_TYPES[str(dtype)]}"


def kernel_source(dtype):
    """The CUDA C text of the uniform and dropout kernels of ``dtype`` (float32, float64)."""
    t = C_TYPES[str(dtype)]
    uniform = philox.draw_kernel(
        uniform_kernel_name(dtype), f"double minval, double maxval, {t} *out",
        f"out[i] = ({t})(minval + (maxval - minval) * (double)gf_philox_uniform(w));")
    dropout = philox.draw_kernel(
        dropout_kernel_name(dtype), f"const {t} *keep, const {t} *x, {t} *out",
        f"const {t} k = keep[0];\n"
        f"            out[i] = (x[i] / k) * floor(k + ({t})gf_philox_uniform(w));")
    return philox.HELPERS + uniform + dropout


def device_seed(host_rng):
    """The 64-bit key of a random node's device stream, from its host generator's seed
    sequence (``RunState.host_rng(node)``): the same graph, op and Session seeds fix
    both, a node without any seed gets fresh entropy in both, and the device key is
    not any of the host generator's own words."""
    seq = host_rng.bit_generator.seed_seq
    child = np.random.SeedSequence(seq.entropy,
                                   spawn_key=tuple(seq.spawn_key) + (_DEVICE_SPAWN_KEY,))
    return int(child.generate_state(1, np.uint64)[0])


def uniform_reference(seed, offset, n, minval=0.0, maxval=1.0, dtype="float32"):
    """``(values, new_offset)``: what ``gf_random_uniform_<T>`` writes, in NumPy."""
    u, offset = philox.uniform(seed, offset, n)
    values = float(minval) + (float(maxval) - float(minval)) * u.astype(np.float64)
    return values.astype(dtype), offset


def dropout_reference(seed, offset, x, keep):
    """``(out, new_offset)``: what ``gf_dropout_<T>`` writes for ``x`` (flattened, C order)
    and the scalar ``keep``, in NumPy, in ``x``'s dtype."""
    x = np.ascontiguousarray(x)
    keep = x.dtype.type(keep)
    u, offset = philox.uniform(seed, offset, x.size)
    mask = np.floor(keep + u.astype(x.dtype).reshape(x.shape))
    return (x / keep) * mask, offset


def grid_for(n, threads=256, max_blocks=1024):
    """Thread blocks for a draw of ``n`` numbers: one thread per counter block (4 numbers),
    at most ``max_blocks`` blocks (a grid-stride loop covers the rest), at least one (so
    the offset is written back even for an empty draw)."""
    return max(1, min(max_blocks, (philox.blocks_for(n) + threads - 1) // threads))
