"""TF1's ``tf.spectral``: the older names of the transforms in ``tf.signal`` (the same
functions: ``fft``, ``rfft``, ``irfft2d``, ``dct``...).

>>> spectrum = gf.spectral.rfft(x)   # as gf.signal.rfft(x)
"""

from __future__ import annotations

from gradflow.signal import (
    dct,
    fft,
    fft2d,
    fft3d,
    idct,
    ifft,
    ifft2d,
    ifft3d,
    irfft,
    irfft2d,
    irfft3d,
    rfft,
    rfft2d,
    rfft3d,
)

__all__ = ["dct", "fft", "fft2d", "fft3d", "idct", "ifft", "ifft2d", "ifft3d", "irfft",
           "irfft2d", "irfft3d", "rfft", "rfft2d", "rfft3d"]
