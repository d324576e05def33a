"""The primitives of the discrete Fourier transforms, over the Array API's ``fft`` extension
(``xp.fft``, on every backend), along the last ``len(axes)`` axes:

- ``fftn``: the complex transform (``inverse`` for the inverse; ``norm`` "backward"
  scales the inverse by ``1/N``, "forward" the transform);
- ``rfftn``: of a real signal (cropped or padded to ``sizes``), the non-negative
  frequencies of the last axis (``sizes[-1] // 2 + 1``);
- ``irfftn``: the real signal of ``sizes`` points from those;
- ``rfftn_adjoint``, ``irfftn_adjoint``: the adjoints of the last two, which their
  gradients are.

Every transform is linear, so each gradient is the adjoint map (TF's convention for
complex gradients, see ``gradflow.prim.complex``), and the adjoint's gradient the map
again: ``fftn``'s is the unscaled inverse (``N * ifft``), ``ifftn``'s ``fft / N``.
"""

from __future__ import annotations

import math

from array_api_compat import device as _device

from gradflow.prim import call
from gradflow.prim.complex import complex_dtype
from gradflow.prim.registry import register

_FLIP = {"backward": "forward", "forward": "backward"}


def _resize(xp, x, axes, sizes):
    """``x`` cropped, or padded with zeros at the end, to ``sizes`` along ``axes``."""
    for axis, size in zip(axes, sizes):
        have = x.shape[axis]
        if have > size:
            key = (slice(None),) * (x.ndim + axis) + (slice(0, size), ...)
            x = x[key]
        elif have < size:
            shape = list(x.shape)
            shape[axis] = size - have
            zeros = xp.zeros(tuple(shape), dtype=x.dtype, device=_device(x))
            x = xp.concat([x, zeros], axis=axis)
    return x


def _check_rank(shape, axes):
    if shape is not None and len(shape) < len(axes):
        raise ValueError(f"a transform over {len(axes)} axes needs a tensor of rank >= "
                         f"{len(axes)}, got rank {len(shape)}")


def _with_sizes(shape, axes, sizes):
    if shape is None:
        return None
    out = list(shape)
    for axis, size in zip(axes, sizes):
        out[axis] = size
    return tuple(out)


def _in_sizes(x, axes):
    return tuple(x.shape[a] for a in axes)


def _require(dtype, complex_input):
    if complex_input and not dtype.is_complex:
        raise TypeError(f"the input must be complex64 or complex128, got {dtype.name}")
    if not complex_input and dtype.name not in ("float32", "float64"):
        raise TypeError(f"the input must be float32 or float64, got {dtype.name}")


# -- the complex transform -------------------------------------------------------------------


def _fftn_impl(xp, x, axes, inverse, norm):
    transform = xp.fft.ifftn if inverse else xp.fft.fftn
    return transform(x, axes=axes, norm=norm)


def _fftn_infer(shapes, in_dtypes, axes, inverse, norm):
    _require(in_dtypes[0], True)
    _check_rank(shapes[0], axes)
    return shapes[0], in_dtypes[0]


def _fftn_grad(n, g):
    a = n.attrs
    return [call.fftn(g, axes=a["axes"], inverse=not a["inverse"], norm=_FLIP[a["norm"]])]


register("fftn", _fftn_impl, _fftn_infer, grad=_fftn_grad, takes_complex=True)


# -- real signals --------------------------------------------------------------------------


def _half(sizes):
    return tuple(sizes[:-1]) + (sizes[-1] // 2 + 1,)


def _rfftn_infer(shapes, in_dtypes, axes, sizes):
    _require(in_dtypes[0], False)
    _check_rank(shapes[0], axes)
    return _with_sizes(shapes[0], axes, _half(sizes)), complex_dtype(in_dtypes[0])


def _rfftn_adjoint_impl(xp, g, axes, sizes, in_sizes):
    full = xp.fft.ifftn(g, s=sizes, axes=axes, norm="forward")  # the last axis padded
    return _resize(xp, xp.real(full), axes, in_sizes)


def _rfftn_adjoint_infer(shapes, in_dtypes, axes, sizes, in_sizes):
    _require(in_dtypes[0], True)
    _check_rank(shapes[0], axes)
    return _with_sizes(shapes[0], axes, in_sizes), in_dtypes[0].real_dtype


register("rfftn", lambda xp, x, axes, sizes: xp.fft.rfftn(x, s=sizes, axes=axes),
         _rfftn_infer,
         grad=lambda n, g: [call.rfftn_adjoint(g, axes=n.attrs["axes"], sizes=n.attrs["sizes"],
                                               in_sizes=_known_sizes(n.inputs[0], n))])
register("rfftn_adjoint", _rfftn_adjoint_impl, _rfftn_adjoint_infer,
         grad=lambda n, g: [call.rfftn(g, axes=n.attrs["axes"], sizes=n.attrs["sizes"])],
         takes_complex=True)


def _known_sizes(x, node):
    have = _in_sizes(x, node.attrs["axes"])
    if any(d is None for d in have):
        raise ValueError(f"the gradient of {node.opdef.name} needs the sizes of '{x.name}' "
                         f"along axes {node.attrs['axes']} known when the graph is built, got "
                         f"{have}")
    return have


def _irfftn_infer(shapes, in_dtypes, axes, sizes):
    _require(in_dtypes[0], True)
    _check_rank(shapes[0], axes)
    return _with_sizes(shapes[0], axes, sizes), in_dtypes[0].real_dtype


def _irfftn_adjoint_impl(xp, g, axes, sizes, in_sizes):
    spectrum = xp.fft.rfftn(g, axes=axes)
    n = sizes[-1]
    # irfft counts each frequency but 0 and n/2 twice (with its mirror image)
    weights = [1.0] + [2.0] * ((n - 1) // 2) + ([1.0] if n % 2 == 0 else [])
    weights = xp.asarray(weights, dtype=spectrum.dtype, device=_device(g))
    scaled = spectrum * weights / math.prod(sizes)
    return _resize(xp, scaled, axes, in_sizes)


def _irfftn_adjoint_infer(shapes, in_dtypes, axes, sizes, in_sizes):
    _require(in_dtypes[0], False)
    _check_rank(shapes[0], axes)
    return _with_sizes(shapes[0], axes, in_sizes), complex_dtype(in_dtypes[0])


register("irfftn", lambda xp, y, axes, sizes: xp.fft.irfftn(y, s=sizes, axes=axes),
         _irfftn_infer,
         grad=lambda n, g: [call.irfftn_adjoint(g, axes=n.attrs["axes"], sizes=n.attrs["sizes"],
                                                in_sizes=_known_sizes(n.inputs[0], n))],
         takes_complex=True)
register("irfftn_adjoint", _irfftn_adjoint_impl, _irfftn_adjoint_infer,
         grad=lambda n, g: [call.irfftn(g, axes=n.attrs["axes"], sizes=n.attrs["sizes"])])
