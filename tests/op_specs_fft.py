"""Op specs of complex numbers and the Fourier transforms (gradflow/prim/complex.py,
gradflow/prim/fft.py). The harness checks real inputs and real results, so each spec is a
real -> complex -> real chain: complex inputs are made with ``gf.complex`` from two real
tensors, complex results read with ``gf.real``/``gf.imag`` (or ``gf.abs``), and the
finite-difference check covers the complex gradients in between. The references are
NumPy's. TensorFlow 2.21's values are in tests/test_fft_tf1.py.
"""

from __future__ import annotations

import numpy as np
from op_specs import nonzero, positive, spec, uniform

import gradflow as gf
from gradflow.prim.registry import apply

_STATIC = dict(dynamic=None, needs_rank="the transforms need their sizes")
_C32 = {"float32": (2e-4, 1e-5), "float64": (1e-9, 1e-11)}


def _mix(z):
    """A real tensor that depends on both parts of the complex ``z``."""
    return gf.real(z) + 0.5 * gf.imag(z)


def _np_mix(z, like):
    return (z.real + 0.5 * z.imag).astype(like.dtype)


spec("complex_parts", ("complex", "real", "imag", "multiply"),
     lambda a, b: _mix(gf.complex(a, b) * gf.complex(b, a)),
     [uniform(3, 4), uniform(3, 4)], lambda a, b: _np_mix((a + 1j * b) * (b + 1j * a), a))
spec("complex_conj", ("complex", "conj", "imag", "multiply", "add", "subtract"),
     lambda a, b: gf.imag(gf.conj(gf.complex(a, b)) * gf.complex(b, a) - gf.complex(a, a)),
     [uniform(3, 4), uniform(3, 4)],
     lambda a, b: (np.conj(a + 1j * b) * (b + 1j * a) - (a + 1j * a)).imag.astype(a.dtype))
spec("complex_abs", ("complex", "complex_abs"), lambda a, b: gf.abs(gf.complex(a, b)),
     [nonzero(3, 4), nonzero(3, 4)], lambda a, b: np.hypot(a, b).astype(a.dtype))
spec("complex_angle", ("complex", "angle"), lambda a, b: gf.math.angle(gf.complex(a, b)),
     [positive(3, 4), uniform(3, 4)], lambda a, b: np.arctan2(b, a).astype(a.dtype))
spec("complex_cast", ("complex", "cast", "real"),
     lambda a, b: gf.cast(gf.complex(a, b), a.dtype) * 2.0 + gf.real(gf.cast(a, {
         gf.float32: gf.complex64, gf.float64: gf.complex128}[a.dtype])),
     [uniform(3, 4), uniform(3, 4)], lambda a, b: (3 * a).astype(a.dtype))

for _name, _rank, _shape in (("fft", 1, (3, 5)), ("ifft", 1, (3, 6)), ("fft2d", 2, (2, 3, 4)),
                             ("ifft2d", 2, (3, 4)), ("fft3d", 3, (2, 3, 4)),
                             ("ifft3d", 3, (2, 2, 3))):
    _np_fn = np.fft.ifftn if _name.startswith("i") else np.fft.fftn
    _gf_fn = getattr(gf.signal, _name)
    spec(f"fft_{_name}", ("complex", "fftn", "real", "imag"),
         lambda a, b, f=_gf_fn: _mix(f(gf.complex(a, b))),
         [uniform(*_shape), uniform(*_shape)],
         lambda a, b, f=_np_fn, r=_rank: _np_mix(f(a + 1j * b, axes=tuple(range(-r, 0))), a),
         tol=_C32, **_STATIC)

for _id, _rank, _shape, _length in (("rfft", 1, (3, 8), None), ("rfft_odd", 1, (2, 7), None),
                                    ("rfft_pad", 1, (3, 6), [9]), ("rfft_crop", 1, (3, 8), [5]),
                                    ("rfft2d", 2, (2, 3, 4), [4, 6]),
                                    ("rfft3d", 3, (2, 3, 4), None)):
    _fn = gf.signal.rfft if _rank == 1 else getattr(gf.signal, f"rfft{_rank}d")
    spec(f"fft_{_id}", ("rfftn", "real", "imag", "rfftn_adjoint"),
         lambda x, f=_fn, n=_length: _mix(f(x, n)), [uniform(*_shape)],
         lambda x, r=_rank, n=_length: _np_mix(
             np.fft.rfftn(x, s=n, axes=tuple(range(-r, 0))), x), tol=_C32, **_STATIC)

for _id, _rank, _shape, _length in (("irfft", 1, (3, 5), None), ("irfft_odd", 1, (2, 5), [9]),
                                    ("irfft_pad", 1, (3, 4), [10]),
                                    ("irfft_crop", 1, (3, 6), [6]),
                                    ("irfft2d", 2, (2, 3, 4), [3, 5]),
                                    ("irfft3d", 3, (2, 3, 3), None)):
    _fn = gf.signal.irfft if _rank == 1 else getattr(gf.signal, f"irfft{_rank}d")
    spec(f"fft_{_id}", ("complex", "irfftn", "irfftn_adjoint"),
         lambda a, b, f=_fn, n=_length: f(gf.complex(a, b), n),
         [uniform(*_shape), uniform(*_shape)],
         lambda a, b, r=_rank, n=_length: np.fft.irfftn(
             a + 1j * b, s=n, axes=tuple(range(-r, 0))).astype(a.dtype), tol=_C32, **_STATIC)

spec("fft_rfftn_adjoint", ("complex", "rfftn_adjoint", "rfftn"),
     lambda a, b: apply("rfftn_adjoint", [gf.complex(a, b)], axes=(-1,), sizes=(6,),
                        in_sizes=(5,)),
     [uniform(3, 4), uniform(3, 4)],
     lambda a, b: (np.fft.ifft(a + 1j * b, n=6) * 6).real[:, :5].astype(a.dtype),
     tol=_C32, **_STATIC)


def _np_irfft_adjoint(g):
    spectrum = np.fft.rfft(g) * np.array([1.0, 2.0, 2.0, 1.0]) / 6
    return np.concatenate([spectrum, np.zeros((3, 1))], axis=1)


spec("fft_irfftn_adjoint", ("irfftn_adjoint", "irfftn", "real", "imag"),
     lambda g: _mix(apply("irfftn_adjoint", [g], axes=(-1,), sizes=(6,), in_sizes=(5,))),
     [uniform(3, 6)], lambda g: _np_mix(_np_irfft_adjoint(g), g), tol=_C32, **_STATIC)
