"""The primitives of complex numbers: ``complex`` (from real and imaginary parts), ``real``,
``imag``, ``conj``, ``complex_abs`` and ``angle``, with TF's gradient convention: the
gradient of a real loss ``L`` with respect to a complex ``z`` is ``dL/d(re z) + i dL/d(im z)``
(no conjugate), so that of a real input reached through a complex one is the real part of
what flows back. TF1's functions over them are in ``gradflow.ops.complex_ops``.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.prim import call, rules
from gradflow.prim.registry import register

_COMPLEX_OF = {"float32": dtypes.complex64, "float64": dtypes.complex128}


def complex_dtype(dtype):
    """The complex dtype whose parts have the real ``dtype`` (float32 -> complex64)."""
    found = _COMPLEX_OF.get(dtype.name)
    if found is None:
        raise TypeError(f"the parts of a complex number must be float32 or float64, got "
                        f"{dtype.name}")
    return found


def _require_complex(dtype):
    if not dtype.is_complex:
        raise TypeError(f"the input must be complex64 or complex128, got {dtype.name}")
    return dtype


def _complex_impl(xp, re, im):
    kind = xp.complex64 if re.dtype == xp.float32 else xp.complex128
    return xp.astype(re, kind) + xp.astype(im, kind) * 1j


def _complex_infer(shapes, in_dtypes):
    dtype = rules.same_dtype(in_dtypes)
    return rules.broadcast_shapes(shapes[0], shapes[1]), complex_dtype(dtype)


register("complex", _complex_impl, _complex_infer,
         grad=lambda n, g: [call.real(g), call.imag(g)], broadcasting=True)


def _part_infer(shapes, in_dtypes):
    return shapes[0], _require_complex(in_dtypes[0]).real_dtype


register("real", lambda xp, z: xp.real(z), _part_infer,
         grad=lambda n, g: [call.complex(g, call.zeros_like(g))], takes_complex=True)
register("imag", lambda xp, z: xp.imag(z), _part_infer,
         grad=lambda n, g: [call.complex(call.zeros_like(g), g)], takes_complex=True)
register("conj", lambda xp, z: xp.conj(z),
         lambda s, d: (s[0], _require_complex(d[0])),
         grad=lambda n, g: [call.conj(g)], takes_complex=True)


def _abs_grad(n, g):  # g z / |z|, and 0 where z is 0 (TF's div_no_nan)
    z = n.inputs[0]
    nonzero = call.greater(n, 0.0)
    safe = call.where(nonzero, n, call.ones_like(n))
    scale = call.where(nonzero, call.divide(g, safe), call.zeros_like(g))
    return [call.multiply(call.complex(scale, call.zeros_like(scale)), z)]


register("complex_abs", lambda xp, z: xp.abs(z), _part_infer, grad=_abs_grad,
         takes_complex=True)


def _angle_grad(n, g):  # d atan2(im, re) = (re d im - im d re) / |z|^2
    z = n.inputs[0]
    re, im = call.real(z), call.imag(z)
    scaled = call.divide(g, call.add(call.square(re), call.square(im)))
    return [call.complex(call.negative(call.multiply(scaled, im)), call.multiply(scaled, re))]


register("angle", lambda xp, z: xp.atan2(xp.imag(z), xp.real(z)), _part_infer,
         grad=_angle_grad, takes_complex=True)
