"""Philox4x32-10, the counter-based generator for random numbers drawn on the device.

A counter-based generator is a pure function of (key, counter): element ``i``
of a draw is computed from the seed and ``offset + i`` alone, so a GPU thread
computes its numbers without shared state, and the only state of a stream is
one 64-bit offset. That offset lives in device memory and the kernel of
``CUDA_SOURCE`` advances it itself, so a draw captured in a CUDA graph draws
new numbers at every replay (a captured cuRAND or ``cupy.random`` call replays
the numbers of its capture forever), and the whole sequence is reproducible
from the seed.

Layout: the key is the 64-bit seed (low word first); block ``b`` is the counter
``(b low, b high, 0, 0)`` and gives four 32-bit words, elements ``4b .. 4b+3``
of the stream. A draw of ``n`` numbers at ``offset`` (in blocks) uses blocks
``offset .. offset + ceil(n / 4) - 1`` and moves the offset past them, so a
draw never reuses a word. A word ``w`` becomes the float32 ``(w >> 8) * 2**-24``:
24 random bits, exact in float32, uniform over ``[0, 1)``.

``philox4x32`` and friends are the NumPy reference (vectorized, uint64
arithmetic); ``CUDA_SOURCE`` is the same algorithm for ``cupy.RawKernel``.

Example::

    >>> u, offset = uniform(seed=7, offset=0, n=5)
    >>> u.dtype, u.shape, offset
    (dtype('float32'), (5,), 2)
"""

from __future__ import annotations

import numpy as np

MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
WEYL = (0x9E3779B9, 0xBB67AE85)  # the key's increments between rounds
ROUNDS = 10
_MASK = np.uint64(0xFFFFFFFF)


def philox4x32(counter, key):
    """Philox4x32-10 of ``counter`` (four uint32 arrays, broadcast together) under ``key``
    (two uint32 words): four uint32 arrays.

    >>> [hex(int(w)) for w in philox4x32((0, 0, 0, 0), (0, 0))]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) & _MASK for c in counter)
    k0, k1 = (int(k) & 0xFFFFFFFF for k in key)
    m0, m1 = np.uint64(MULTIPLIERS[0]), np.uint64(MULTIPLIERS[1])
    for r in range(ROUNDS):
        p0, p1 = m0 * c0, m1 * c2  # 32 x 32 -> 64 bits: never wraps in uint64
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0), p1 & _MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1), p0 & _MASK)
        if r < ROUNDS - 1:
            k0, k1 = (k0 + WEYL[0]) & 0xFFFFFFFF, (k1 + WEYL[1]) & 0xFFFFFFFF
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def seed_key(seed):
    """The two key words of a 64-bit seed, low word first."""
    seed = int(seed) & 0xFFFFFFFFFFFFFFFF
    return seed & 0xFFFFFFFF, seed >> 32


def blocks_for(n):
    """How many counter blocks a draw of ``n`` numbers uses (4 numbers a block)."""
    return (int(n) + 3) // 4


def bits(seed, offset, n):
    """``(words, new_offset)``: ``n`` uint32 words of the stream of ``seed`` starting at
    block ``offset``, and the offset after them."""
    count = blocks_for(n)
    block = np.arange(count, dtype=np.uint64) + np.uint64(offset)
    words = philox4x32((block & _MASK, block >> np.uint64(32), 0, 0), seed_key(seed))
    return np.stack(words, axis=1).reshape(-1)[:n], int(offset) + count


def to_uniform(words):
    """Float32 uniforms on ``[0, 1)`` from uint32 words: the top 24 bits times 2**-24."""
    return (np.asarray(words, np.uint32) >> np.uint32(8)).astype(np.float32) * np.float32(
        2.0 ** -24)


def uniform(seed, offset, n):
    """``(values, new_offset)``: ``n`` float32 uniforms on ``[0, 1)`` from block ``offset``."""
    words, offset = bits(seed, offset, n)
    return to_uniform(words), offset


def dropout_mask(seed, offset, n, keep_prob):
    """``(mask, new_offset)``: a float32 mask of ``n`` ones (kept, probability
    ``keep_prob``) and zeros: 1 where the uniform is below float32 ``keep_prob``."""
    values, offset = uniform(seed, offset, n)
    return (values < np.float32(keep_prob)).astype(np.float32), offset


# The kernels take the stream's state as two uint64 words in device memory:
# state[0] the offset in blocks, state[1] a count of finished thread blocks. Each
# thread block reads the offset first; the block that finishes last (the count
# reaches gridDim.x) moves the offset past this draw and clears the count, so
# the offset advances once per launch without a second kernel or a host call,
# after every block has read it (the "last block" pattern, with fences).
HELPERS = r"""
#define GF_PHILOX_M0 0xD2511F53u
#define GF_PHILOX_M1 0xCD9E8D57u
#define GF_PHILOX_W0 0x9E3779B9u
#define GF_PHILOX_W1 0xBB67AE85u

__device__ inline void gf_philox4x32_10(unsigned int c[4], unsigned int k0, unsigned int k1) {
    for (int r = 0; r < 10; ++r) {
        const unsigned long long p0 = (unsigned long long)GF_PHILOX_M0 * c[0];
        const unsigned long long p1 = (unsigned long long)GF_PHILOX_M1 * c[2];
        const unsigned int n0 = (unsigned int)(p1 >> 32) ^ c[1] ^ k0;
        const unsigned int n2 = (unsigned int)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0; c[1] = (unsigned int)p1; c[2] = n2; c[3] = (unsigned int)p0;
        k0 += GF_PHILOX_W0; k1 += GF_PHILOX_W1;
    }
}

__device__ inline float gf_philox_uniform(unsigned int w) {
    return (float)(w >> 8) * 5.9604644775390625e-08f;  /* 2**-24 */
}

/* The offset every thread of the block draws from: read once per block. */
__device__ inline unsigned long long gf_philox_begin(const unsigned long long *state,
                                                     unsigned long long *shared_base) {
    if (threadIdx.x == 0) *shared_base = state[0];
    __syncthreads();
    return *shared_base;
}

/* Called by every thread once its block is done: the last block to finish moves the
   offset past the ``blocks`` counter blocks of this draw and clears the count. */
__device__ inline void gf_philox_advance(unsigned long long *state, unsigned long long base,
                                         long long blocks) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&state[1], 1ULL) == (unsigned long long)gridDim.x - 1) {
            state[0] = base + (unsigned long long)blocks;
            state[1] = 0ULL;
            __threadfence();
        }
    }
}
"""


def draw_kernel(name, params, element):
    """The CUDA C text of a kernel ``name(seed, state, n, <params>)`` that draws ``n``
    words of the stream at the device offset ``state[0]``, runs the statement
    ``element`` for each (with ``i``, the element's index, and ``w``, its uint32 word),
    and advances the offset. Compile it after ``HELPERS``."""
    return f"""
extern "C" __global__ void {name}(unsigned long long seed, unsigned long long *state,
                                  long long n, {params}) {{
    __shared__ unsigned long long shared_base;
    const unsigned long long base = gf_philox_begin(state, &shared_base);
    const long long blocks = (n + 3) / 4;
    const unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
    for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < blocks;
         b += (long long)blockDim.x * gridDim.x) {{
        const unsigned long long block = base + (unsigned long long)b;
        unsigned int c[4] = {{(unsigned int)block, (unsigned int)(block >> 32), 0u, 0u}};
        gf_philox4x32_10(c, k0, k1);
        for (int j = 0; j < 4 && 4 * b + j < n; ++j) {{
            const long long i = 4 * b + j;
            const unsigned int w = c[j];
            {element}
        }}
    }}
    gf_philox_advance(state, base, blocks);
}}
"""


CUDA_SOURCE = HELPERS + "".join([
    draw_kernel("gf_philox_bits", "unsigned int *out", "out[i] = w;"),
    draw_kernel("gf_philox_uniform_f32", "float *out", "out[i] = gf_philox_uniform(w);"),
    draw_kernel("gf_philox_dropout_mask", "float keep_prob, float *out",
                "out[i] = gf_philox_uniform(w) < keep_prob ? 1.0f : 0.0f;"),
])

KERNEL_NAMES = ("gf_philox_bits", "gf_philox_uniform_f32", "gf_philox_dropout_mask")
