"""TF1's ``tf.signal``: ``frame``, ``overlap_and_add``, the ``hann_window`` and
``hamming_window``, ``linear_to_mel_weight_matrix``, ``dct``/``idct`` (types 2 and 3),
``mfccs_from_log_mel_spectrograms``, the Fourier transforms (``fft``, ``rfft``... from
``gradflow.ops.fft_ops``, complex results), ``stft``, ``inverse_stft`` and
``inverse_stft_window_fn``.

Each is written with gradflow's ops (gathers, products with constant matrices, the
transforms of the Array API's ``fft`` extension), so it runs on every backend and is
differentiable in its signal.

>>> frames = gf.signal.frame(audio, frame_length=400, frame_step=160)
>>> mel = gf.signal.linear_to_mel_weight_matrix(40, 257, 16000, 20.0, 7600.0)
"""

from __future__ import annotations

import math

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import identity, matmul, reduce_sum, reshape
from gradflow.ops.fft_ops import (
    fft,
    fft2d,
    fft3d,
    fftshift,
    ifft,
    ifft2d,
    ifft3d,
    ifftshift,
    irfft,
    irfft2d,
    irfft3d,
    rfft,
    rfft2d,
    rfft3d,
)
from gradflow.ops.index_ops import concat, gather, shape
from gradflow.ops.linalg_ops import tensordot
from gradflow.ops.math_ops import divide, square
from gradflow.ops.shape_ops import fill, pad, tile
from gradflow.prim.array import static_value
from gradflow.prim.registry import convert_to_tensor

__all__ = ["dct", "fft", "fft2d", "fft3d", "fftshift", "frame", "hamming_window",
           "hann_window", "idct", "ifft", "ifft2d", "ifft3d", "ifftshift", "inverse_stft",
           "inverse_stft_window_fn", "irfft", "irfft2d", "irfft3d",
           "linear_to_mel_weight_matrix", "mfccs_from_log_mel_spectrograms",
           "overlap_and_add", "rfft", "rfft2d", "rfft3d", "stft"]


def _static_int(value, what):
    found = static_value(value)
    if found is None or np.asarray(found).ndim:
        raise ValueError(f"{what} must be one integer known when the graph is built, got "
                         f"{value!r}")
    return int(found)


def _float_dtype(dtype, what):
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"{what}: dtype must be floating, got {dtype.name}")
    return dtype


def _raised_cosine(length, periodic, a, b, dtype, name, what):
    length = _static_int(length, f"{what}: window_length")
    if length < 0:
        raise ValueError(f"{what}: window_length must be >= 0, got {length}")
    dtype = _float_dtype(dtype, what)
    kind = dtype.as_numpy_dtype
    if length == 1:
        return convert_to_tensor(np.ones(1, kind), dtype=dtype, name=name)
    even = 1 - length % 2
    denominator = kind(length + int(bool(periodic)) * even - 1)
    angle = kind(2 * np.pi) * np.arange(length, dtype=kind) / denominator
    window = (kind(a) - kind(b) * np.cos(angle)).astype(kind)
    return convert_to_tensor(window, dtype=dtype, name=name)


def hann_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / N)`` of ``window_length`` points (TF1;
    ``periodic`` for spectral analysis, ``N = window_length``; else symmetric,
    ``N = window_length - 1``)."""
    return _raised_cosine(window_length, periodic, 0.5, 0.5, dtype, name, "hann_window")


def hamming_window(window_length, periodic=True, dtype=dtypes.float32, name=None):
    """The Hamming window ``0.54 - 0.46 cos(2 pi n / N)`` (see ``hann_window``)."""
    return _raised_cosine(window_length, periodic, 0.54, 0.46, dtype, name, "hamming_window")


def _signal(signal, what):
    x = signal if isinstance(signal, Tensor) else convert_to_tensor(signal)
    if x.shape is None:
        raise ValueError(f"{what}: the rank of '{x.name}' must be known")
    return x


def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """The frames of ``frame_length`` samples every ``frame_step`` samples of ``signal``
    along ``axis``, which becomes two axes ``[frames, frame_length]`` (TF1
    ``tf.signal.frame``). With ``pad_end`` the signal is padded with ``pad_value`` so that
    every sample is in a frame (``ceil(length / frame_step)`` frames); else
    only whole frames are kept. The length along ``axis`` must be known."""
    x = _signal(signal, "frame")
    length, step = _static_int(frame_length, "frame: frame_length"), \
        _static_int(frame_step, "frame: frame_step")
    if length <= 0 or step <= 0:
        raise ValueError(f"frame: frame_length and frame_step must be positive, got {length} "
                         f"and {step}")
    rank = len(x.shape)
    if not -rank <= axis < rank:
        raise ValueError(f"frame: axis {axis} is out of range for '{x.name}' of rank {rank}")
    axis %= rank
    size = x.shape[axis]
    if size is None:
        raise ValueError(f"frame: the length of '{x.name}' along axis {axis} must be known")
    size = int(size)
    if pad_end:
        count = -(-size // step)
        extra = max(0, (count - 1) * step + length - size)
        if extra:
            sizes = [shape(x)[a] if a != axis else extra for a in range(rank)]
            padding = fill(sizes, convert_to_tensor(pad_value, dtype=x.dtype))
            x = concat([x, padding], axis)
    else:
        count = max(0, 1 + (size - length) // step)
    where = np.arange(count)[:, None] * step + np.arange(length)[None, :]
    return gather(x, where.astype(np.int32), axis=axis, name=name)


def overlap_and_add(signal, frame_step, name=None):
    """The sum of the frames ``[..., frames, frame_length]`` of ``signal``, each placed
    ``frame_step`` samples after the one before: ``[..., (frames - 1) * frame_step +
    frame_length]`` (TF1; the inverse of ``frame`` up to the overlaps' sums). The two
    last sizes must be known."""
    x = _signal(signal, "overlap_and_add")
    step = _static_int(frame_step, "overlap_and_add: frame_step")
    if len(x.shape) < 2 or x.shape[-1] is None or x.shape[-2] is None:
        raise ValueError(f"overlap_and_add: '{x.name}' must be [..., frames, frame_length] "
                         f"with both known, got shape {x.shape}")
    if step <= 0:
        raise ValueError(f"overlap_and_add: frame_step must be positive, got {step}")
    count, length = int(x.shape[-2]), int(x.shape[-1])
    total = (count - 1) * step + length if count else 0
    placement = np.zeros((count * length, total), dtype=x.dtype.as_numpy_dtype)
    for k in range(count):
        placement[k * length + np.arange(length), k * step + np.arange(length)] = 1
    lead = [shape(x)[a] for a in range(len(x.shape) - 2)]
    flat = reshape(x, lead + [count * length]) if lead else reshape(x, [count * length])
    out = tensordot(flat, convert_to_tensor(placement), 1)
    return out if name is None else identity(out, name=name)


def _hertz_to_mel(frequencies):
    return 1127.0 * np.log1p(frequencies / 700.0)


def linear_to_mel_weight_matrix(num_mel_bins=20, num_spectrogram_bins=129, sample_rate=8000,
                                lower_edge_hertz=125.0, upper_edge_hertz=3800.0,
                                dtype=dtypes.float32, name=None):
    """The ``[num_spectrogram_bins, num_mel_bins]`` matrix that takes a linear magnitude
    spectrum (``num_spectrogram_bins`` bins from 0 to ``sample_rate / 2``) to mel bands:
    triangles on the mel scale (``1127 ln(1 + f / 700)``) between ``lower_edge_hertz``
    and ``upper_edge_hertz``; the 0 Hz bin has no weight (TF1)."""
    dtype = _float_dtype(dtype, "linear_to_mel_weight_matrix")
    mel_bins, bins = int(num_mel_bins), int(num_spectrogram_bins)
    low, high, rate = float(lower_edge_hertz), float(upper_edge_hertz), float(sample_rate)
    if mel_bins <= 0 or bins <= 0:
        raise ValueError("linear_to_mel_weight_matrix: num_mel_bins and num_spectrogram_bins "
                         f"must be positive, got {mel_bins} and {bins}")
    if rate <= 0 or not 0 <= low < high or high > rate / 2:
        raise ValueError("linear_to_mel_weight_matrix: need sample_rate > 0 and 0 <= "
                         "lower_edge_hertz < upper_edge_hertz <= sample_rate / 2, got "
                         f"{rate}, {low}, {high}")
    kind = dtype.as_numpy_dtype
    linear = np.linspace(0.0, rate / 2, bins).astype(kind)[1:]
    spectrum_mel = _hertz_to_mel(linear).astype(kind)[:, None]
    edges = np.linspace(_hertz_to_mel(low), _hertz_to_mel(high), mel_bins + 2).astype(kind)
    lower, center, upper = edges[:-2][None], edges[1:-1][None], edges[2:][None]
    rising = (spectrum_mel - lower) / (center - lower)
    falling = (upper - spectrum_mel) / (upper - center)
    weights = np.maximum(kind(0), np.minimum(rising, falling)).astype(kind)
    weights = np.concatenate([np.zeros((1, mel_bins), kind), weights])
    return convert_to_tensor(weights, dtype=dtype, name=name)


def _dct_matrix(size, kind, norm, np_dtype):
    """``M`` with ``dct(x) = x @ M`` over the last axis of ``size`` samples."""
    n = np.arange(size)[:, None]
    k = np.arange(size)[None, :]
    if kind == 2:
        matrix = 2.0 * np.cos(np.pi * k * (2 * n + 1) / (2.0 * size))
        if norm == "ortho":
            matrix[:, 0] *= math.sqrt(1.0 / (4 * size))
            matrix[:, 1:] *= math.sqrt(1.0 / (2 * size))
    else:  # type 3, the inverse of type 2 up to 2 size (the transposed matrix)
        matrix = 2.0 * np.cos(np.pi * n * (2 * k + 1) / (2.0 * size))
        matrix[0, :] = 1.0
        if norm == "ortho":
            matrix[0, :] *= math.sqrt(1.0 / size)
            matrix[1:, :] *= math.sqrt(0.5 / size)
    return matrix.astype(np_dtype)


def dct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002
    """The discrete cosine transform of type 2 or 3 of ``input`` along its last axis, as
    TF1's (and ``scipy.fftpack.dct``'s): unnormalized, or orthonormal with
    ``norm="ortho"``. ``n`` (fewer samples than the axis holds) cuts the signal first.
    The last axis must be known."""
    x = _signal(input, "dct")
    if type not in (2, 3):
        raise NotImplementedError(f"dct: only types 2 and 3 are supported, got {type}")
    if axis != -1:
        raise NotImplementedError("dct: only axis=-1 is supported (as in TF1)")
    if norm not in (None, "ortho"):
        raise ValueError(f"dct: norm must be None or 'ortho', got {norm!r}")
    if not x.dtype.is_floating or x.shape[-1] is None:
        raise ValueError(f"dct: '{x.name}' must be float with a known last axis, got "
                         f"{x.dtype.name} of shape {x.shape}")
    size = int(x.shape[-1])
    if n is not None:
        if not 0 < int(n) <= size:
            raise NotImplementedError(f"dct: n must be in [1, {size}] (padding is not "
                                      f"supported), got {n}")
        x, size = x[..., :int(n)], int(n)
    matrix = convert_to_tensor(_dct_matrix(size, type, norm, x.dtype.as_numpy_dtype))
    if len(x.shape) == 2:
        return matmul(x, matrix, name=name)
    return tensordot(x, matrix, 1)


def idct(input, type=2, n=None, axis=-1, norm=None, name=None):  # noqa: A002
    """The inverse of ``dct`` of ``type`` as TF1 defines it: ``dct`` of the other type
    (type 3 for 2, 2 for 3). Unless ``norm="ortho"``, the result is ``2 N`` times the
    signal, as in TF1 (which leaves that scaling to the caller)."""
    if type not in (2, 3):
        raise NotImplementedError(f"idct: only types 2 and 3 are supported, got {type}")
    return dct(input, 5 - type, n, axis, norm, name=name)


def mfccs_from_log_mel_spectrograms(log_mel_spectrograms, name=None):
    """The mel-frequency cepstral coefficients of ``log_mel_spectrograms`` ``[...,
    num_mel_bins]``: their ``dct`` of type 2 times ``1 / sqrt(2 num_mel_bins)`` (TF1)."""
    x = _signal(log_mel_spectrograms, "mfccs_from_log_mel_spectrograms")
    if x.shape[-1] is None:
        raise ValueError(f"mfccs_from_log_mel_spectrograms: the last axis of '{x.name}' "
                         "(num_mel_bins) must be known")
    return dct(x, 2) * (1.0 / math.sqrt(2.0 * int(x.shape[-1])))



def _enclosing_power_of_two(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def stft(signals, frame_length, frame_step, fft_length=None, window_fn=hann_window,
         pad_end=False, name=None):
    """The short-time Fourier transform of the real ``signals`` ``[..., samples]`` (TF1
    ``tf.signal.stft``): frames of ``frame_length`` every ``frame_step`` samples, each
    multiplied by ``window_fn(frame_length, dtype=...)`` (none when None) and transformed by
    ``rfft`` of ``fft_length`` points (the smallest power of 2 >= ``frame_length`` by
    default): complex ``[..., frames, fft_length // 2 + 1]``."""
    frames = frame(signals, frame_length, frame_step, pad_end=pad_end)
    length = _static_int(frame_length, "stft: frame_length")
    if fft_length is None:
        fft_length = _enclosing_power_of_two(length)
    if window_fn is not None:
        frames = frames * window_fn(length, dtype=frames.dtype)
    return rfft(frames, [_static_int(fft_length, "stft: fft_length")], name=name)


def inverse_stft(stfts, frame_length, frame_step, fft_length=None, window_fn=hann_window,
                 name=None):
    """The real signal of the short-time transforms ``stfts`` ``[..., frames, bins]`` (TF1
    ``tf.signal.inverse_stft``): each frame's ``irfft`` of ``fft_length`` points (by default
    the smallest power of 2 >= ``frame_length``), cropped or padded to ``frame_length``,
    multiplied by ``window_fn(frame_length, dtype=...)`` and overlapped and added every
    ``frame_step`` samples. For a perfect reconstruction of ``stft``, pass
    ``window_fn=inverse_stft_window_fn(frame_step)``."""
    length = _static_int(frame_length, "inverse_stft: frame_length")
    if fft_length is None:
        fft_length = _enclosing_power_of_two(length)
    points = _static_int(fft_length, "inverse_stft: fft_length")
    frames = irfft(stfts, [points])
    if points > length:
        frames = frames[..., :length]
    elif points < length:
        rank = len(frames.shape)
        frames = pad(frames, [[0, 0]] * (rank - 1) + [[0, length - points]])
    if window_fn is not None:
        frames = frames * window_fn(length, dtype=frames.dtype)
    return overlap_and_add(frames, frame_step, name=name)


def inverse_stft_window_fn(frame_step, forward_window_fn=hann_window, name=None):
    """A ``window_fn`` for ``inverse_stft`` that undoes ``stft`` with
    ``forward_window_fn`` and ``frame_step`` (TF1 ``tf.signal.inverse_stft_window_fn``):
    the forward window divided by the sum of the squared windows overlapping each sample."""
    step = _static_int(frame_step, "inverse_stft_window_fn: frame_step")

    def window_fn(frame_length, dtype):
        length = _static_int(frame_length, "inverse_stft_window_fn: frame_length")
        forward = forward_window_fn(length, dtype=dtype)
        overlaps = -(-length // step)
        squares = pad(square(forward), [[0, overlaps * step - length]])
        sums = reduce_sum(reshape(squares, [overlaps, step]), 0, keepdims=True)
        denominator = reshape(tile(sums, [overlaps, 1]), [overlaps * step])[:length]
        return divide(forward, denominator, name=name)

    return window_fn
