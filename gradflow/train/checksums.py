"""The masked CRC-32C of a checkpoint's tensors, fast without the optional ``crc32c``
package too: where ``protowire`` has only its byte-at-a-time Python loop (about 10 MB/s),
a long buffer is cut into many lanes whose CRCs NumPy advances together, a byte of every
lane per step, then joined by the CRC's linearity (the CRC of ``a + b`` is the CRC of
``a`` carried over ``len(b)`` zero bytes, xor the CRC of ``b`` from zero).

Example::

    from gradflow.train import checksums
    stored = checksums.masked_crc32c(array.tobytes())
"""

from __future__ import annotations

import numpy as np

from gradflow import protowire

_TABLE = np.array(protowire._TABLE, np.uint32)
_MIN_LANE = 256  # bytes: each lane at least this long
_LONG = 1 << 17  # bytes: shorter buffers take the Python loop (as quick, below this)
_BITS = np.arange(32, dtype=np.uint32)


def masked_crc32c(data):
    """TensorFlow's masked CRC-32C of ``data`` (bytes-like), as ``protowire``'s."""
    if protowire.crc32c is not protowire.crc32c_python or len(data) < _LONG:
        return protowire.masked_crc32c(data)
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + protowire.MASK_DELTA) & 0xFFFFFFFF


def crc32c(data):
    """The CRC-32C of ``data`` (any length), the lanes advanced together by NumPy."""
    raw = np.frombuffer(memoryview(data).cast("B"), np.uint8)
    lanes = 1 << max(0, min(16, (len(raw) // _MIN_LANE).bit_length() - 1))
    width = len(raw) // lanes
    body = raw[:lanes * width].reshape(lanes, width)
    states = np.zeros(lanes, np.uint32)
    for column in body.T:  # every lane from a zero state, one byte each step
        states = _TABLE[(states ^ column) & 0xFF] ^ (states >> 8)
    state = 0xFFFFFFFF
    if width:
        shift = _power(_one_zero_byte(), width)
        while len(states) > 1:  # neighbours joined: the left one carried over the right one
            states = _apply(shift, states[0::2]) ^ states[1::2]
            shift = _compose(shift, shift)
        state = int(_apply(shift, np.array([state], np.uint32))[0] ^ states[0])
    for byte in raw[lanes * width:].tolist():
        state = protowire._TABLE[(state ^ byte) & 0xFF] ^ (state >> 8)
    return state ^ 0xFFFFFFFF


def _one_zero_byte():
    """The linear map of a CRC state over one zero byte, as the images of its 32 bits."""
    units = np.left_shift(np.uint32(1), _BITS)
    return _TABLE[units & 0xFF] ^ (units >> 8)


def _apply(columns, states):
    """The map given by ``columns`` applied to each of ``states``."""
    out = np.zeros_like(states)
    for bit in range(32):
        out ^= np.where((states >> np.uint32(bit)) & 1, columns[bit], np.uint32(0))
    return out


def _compose(outer, inner):
    """The map ``outer`` after ``inner``."""
    return _apply(outer, inner)


def _power(columns, count):
    """The map ``columns`` applied ``count`` times (``count`` >= 1)."""
    result = None
    while count:
        if count & 1:
            result = columns if result is None else _compose(columns, result)
        count >>= 1
        if count:
            columns = _compose(columns, columns)
    return result
