"""TF1's complex numbers and Fourier transforms: ``tf.complex``, ``to_complex64``/``128``,
``fft``/``ifft`` (1-, 2- and 3-D), ``rfft``/``irfft`` (1-, 2- and 3-D, with
``fft_length``), ``fftshift``/``ifftshift``, over the primitives of
``gradflow.prim.complex`` and ``gradflow.prim.fft`` (the Array API's ``xp.fft``).

As in TF1, ``fft`` takes complex tensors only, ``rfft`` float32 (to complex64) or float64 (to
complex128); each transforms the innermost 1, 2 or 3 axes. ``fft_length`` must be known when
the graph is built (a list, or a constant); without it, it is the input's innermost sizes
(``irfft``: ``2 * (n - 1)`` for the innermost), which must then be known.

>>> spectrum = gf.signal.rfft(x)                        # x float32 [..., n]
>>> power = gf.reduce_sum(gf.square(gf.abs(spectrum)))  # differentiable in x
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.manip_ops import roll
from gradflow.ops.math_ops import cast
from gradflow.prim import fft as _fft  # noqa: F401 - registers its primitives
from gradflow.prim.array import static_value
from gradflow.prim.registry import apply, convert_to_tensor


def _tensor(x, what):
    x = x if isinstance(x, Tensor) else convert_to_tensor(x)
    if x.shape is None:
        raise ValueError(f"{what}: the rank of '{x.name}' must be known")
    return x


def _axes(rank):
    return tuple(range(-rank, 0))


def _lengths(fft_length, rank, what):
    found = static_value(fft_length) if isinstance(fft_length, Tensor) else fft_length
    if found is None:
        raise ValueError(f"{what}: fft_length must be known when the graph is built, got "
                         f"{fft_length!r}")
    lengths = tuple(int(v) for v in np.asarray(found).reshape(-1))
    if len(lengths) != rank or any(v < 1 for v in lengths):
        raise ValueError(f"{what}: fft_length must be {rank} positive integers, got {lengths}")
    return lengths


def _inner_sizes(x, rank, what):
    if len(x.shape) < rank:
        raise ValueError(f"{what}: '{x.name}' must have rank >= {rank}, got shape {x.shape}")
    sizes = tuple(x.shape[-rank:]) if rank else ()
    if any(d is None for d in sizes):
        raise ValueError(f"{what}: the innermost {rank} sizes of '{x.name}' must be known "
                         f"when fft_length is not given, got {tuple(x.shape)}")
    return tuple(int(d) for d in sizes)


def _complex_transform(rank, inverse, tf_name):
    def transform(input, name=None):  # noqa: A002 - TF1 name
        x = _tensor(input, tf_name)
        if not x.dtype.is_complex:
            raise TypeError(f"{tf_name}: '{x.name}' must be complex64 or complex128, got "
                            f"{x.dtype.name} (cast it with gf.cast or gf.complex)")
        if len(x.shape) < rank:
            _inner_sizes(x, rank, tf_name)
        return apply("fftn", [x], name=name or tf_name, axes=_axes(rank),
                     inverse=inverse, norm="backward")

    what = "inverse " if inverse else ""
    transform.__name__ = transform.__qualname__ = tf_name
    transform.__doc__ = (f"The {what}discrete Fourier transform over the innermost {rank} "
                         f"ax{'i' if rank == 1 else 'e'}s of a complex tensor (TF1 "
                         f"``tf.signal.{tf_name}``){'' if not inverse else ', scaled by 1/N'}.")
    return transform


fft = _complex_transform(1, False, "fft")
ifft = _complex_transform(1, True, "ifft")
fft2d = _complex_transform(2, False, "fft2d")
ifft2d = _complex_transform(2, True, "ifft2d")
fft3d = _complex_transform(3, False, "fft3d")
ifft3d = _complex_transform(3, True, "ifft3d")


def _real_transform(rank, inverse, tf_name):
    def transform(input_tensor, fft_length=None, name=None):
        if not inverse and not isinstance(input_tensor, Tensor) and \
                np.asarray(input_tensor).dtype.kind in "iu":
            input_tensor = convert_to_tensor(input_tensor, dtype=dtypes.float32)
        x = _tensor(input_tensor, tf_name)
        if fft_length is not None:
            lengths = _lengths(fft_length, rank, tf_name)
            if len(x.shape) < rank:
                _inner_sizes(x, rank, tf_name)
        else:
            lengths = _inner_sizes(x, rank, tf_name)
            if inverse:
                lengths = lengths[:-1] + (2 * (lengths[-1] - 1),)
                if lengths[-1] < 1:
                    raise ValueError(f"{tf_name}: the innermost size of '{x.name}' must be "
                                     "> 1 to infer fft_length; give fft_length")
        op = "irfftn" if inverse else "rfftn"
        return apply(op, [x], name=name or tf_name, axes=_axes(rank), sizes=lengths)

    transform.__name__ = transform.__qualname__ = tf_name
    if inverse:
        transform.__doc__ = (f"The real signal of ``fft_length`` points along the innermost "
                             f"{rank} axes whose spectrum's non-negative frequencies are "
                             f"``input_tensor`` (TF1 ``tf.signal.{tf_name}``).")
    else:
        transform.__doc__ = (f"The discrete Fourier transform over the innermost {rank} axes "
                             f"of a real tensor, cropped or padded with zeros to "
                             f"``fft_length``: the innermost axis keeps the "
                             f"``fft_length[-1] // 2 + 1`` non-negative frequencies (TF1 "
                             f"``tf.signal.{tf_name}``).")
    return transform


rfft = _real_transform(1, False, "rfft")
irfft = _real_transform(1, True, "irfft")
rfft2d = _real_transform(2, False, "rfft2d")
irfft2d = _real_transform(2, True, "irfft2d")
rfft3d = _real_transform(3, False, "rfft3d")
irfft3d = _real_transform(3, True, "irfft3d")


def _shift(x, axes, inverse, what):
    x = _tensor(x, what)
    rank = len(x.shape)
    if axes is None:
        axes = list(range(rank))
    elif isinstance(axes, (int, np.integer)):
        axes = [int(axes)]
    axes = [int(a) for a in axes]
    sizes = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"{what}: axis {a} is out of range for '{x.name}' of rank {rank}")
        if x.shape[a] is None:
            raise ValueError(f"{what}: the size of axis {a} of '{x.name}' must be known")
        sizes.append(int(x.shape[a]))
    shifts = [-(n // 2) if inverse else n // 2 for n in sizes]
    if not axes:
        return x
    return roll(x, shifts, axes)


def fftshift(x, axes=None, name=None):
    """``x`` rolled so that frequency 0 is in the middle of each of ``axes`` (all by
    default): by ``n // 2`` (TF1 ``tf.signal.fftshift``)."""
    return _named(_shift(x, axes, False, "fftshift"), name)


def ifftshift(x, axes=None, name=None):
    """The inverse of ``fftshift``: rolled back by ``n // 2`` (TF1 ``tf.signal.ifftshift``)."""
    return _named(_shift(x, axes, True, "ifftshift"), name)


def _named(t, name):
    return t if name is None else apply("identity", [t], name=name)


def complex(real, imag, name=None):  # noqa: A001 - TF1 name
    """The complex tensor ``real + i imag`` (TF1 ``tf.complex``): float32 parts make
    complex64, float64 parts complex128; the parts broadcast."""
    re = real if isinstance(real, Tensor) else None
    im = imag if isinstance(imag, Tensor) else None
    like = re if re is not None else im
    re = convert_to_tensor(real, like=like)
    im = convert_to_tensor(imag, like=re)
    return apply("complex", [re, im], name=name or "Complex")


def to_complex64(x, name="ToComplex64"):
    """``cast(x, complex64)`` (TF1's deprecated ``tf.to_complex64``)."""
    return cast(x, dtypes.complex64, name=name)


def to_complex128(x, name="ToComplex128"):
    """``cast(x, complex128)`` (TF1's deprecated ``tf.to_complex128``)."""
    return cast(x, dtypes.complex128, name=name)
