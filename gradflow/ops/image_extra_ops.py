"""More of TF1's ``tf.image`` (``gradflow.image`` exports them): ``rot90``,
``transpose``, the YIQ/YUV colour spaces, ``sobel_edges``, ``extract_image_patches``
(and ``extract_volume_patches``) and the bicubic and area resizes' sampling matrices.
Each is a composite of gradflow's ops, differentiable in the image.
"""

from __future__ import annotations

import numpy as np

from gradflow import dtypes
from gradflow.graph import Tensor
from gradflow.ops.array_ops import reshape, transpose
from gradflow.ops.index_ops import stack
from gradflow.ops.linalg_ops import tensordot
from gradflow.ops.math_ops import cast
from gradflow.ops.shape_ops import pad, reverse
from gradflow.prim.registry import apply, convert_to_tensor

__all__ = ["extract_image_patches", "extract_patches", "extract_volume_patches", "rgb_to_yiq",
           "rgb_to_yuv", "rot90", "sobel_edges", "transpose_image", "yiq_to_rgb", "yuv_to_rgb"]


def _image(image, what, ranks=(3, 4)):
    x = image if isinstance(image, Tensor) else convert_to_tensor(image)
    if x.shape is None or len(x.shape) not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ValueError(f"{what}: '{x.name}' must be {want}, got shape {x.shape}")
    return x


def rot90(image, k=1, name=None):
    """``image`` (3-D, or a 4-D batch) turned ``k`` quarter turns counter-clockwise (TF1);
    ``k`` is a Python int."""
    x = _image(image, "rot90")
    if isinstance(k, Tensor):
        raise NotImplementedError("rot90: k must be a Python int (a tensor k is not "
                                  "supported)")
    k = int(k) % 4
    h = len(x.shape) - 3
    order = list(range(len(x.shape)))
    order[h], order[h + 1] = order[h + 1], order[h]
    if k == 1:
        return transpose(reverse(x, [h + 1]), order, name=name)
    if k == 2:
        return reverse(x, [h, h + 1], name=name)
    if k == 3:
        return reverse(transpose(x, order), [h + 1], name=name)
    return x


def transpose_image(image, name=None):
    """``image`` (3-D, or a 4-D batch) with its height and width swapped (TF1
    ``tf.image.transpose``)."""
    x = _image(image, "transpose_image")
    order = list(range(len(x.shape)))
    order[-3], order[-2] = order[-2], order[-3]
    return transpose(x, order, name=name)


# TF's colour-space kernels: each pixel (a row vector) times the matrix
_YIQ = ((0.299, 0.59590059, 0.2115), (0.587, -0.27455667, -0.52273617),
        (0.114, -0.32134392, 0.31119955))
_YIQ_INV = ((1.0, 1.0, 1.0), (0.95598634, -0.27201283, -1.10674021),
            (0.6208248, -0.64720424, 1.70423049))
_YUV = ((0.299, -0.14714119, 0.61497538), (0.587, -0.28886916, -0.51496512),
        (0.114, 0.43601035, -0.10001026))
_YUV_INV = ((1.0, 1.0, 1.0), (0.0, -0.394642334, 2.03206185),
            (1.13988303, -0.58062185, 0.0))


def _colour(images, kernel, what):
    x = _image(images, what, ranks=range(1, 9))
    if x.shape[-1] is not None and int(x.shape[-1]) != 3:
        raise ValueError(f"{what}: '{x.name}' must have 3 channels, got {x.shape[-1]}")
    if not x.dtype.is_floating:
        raise TypeError(f"{what}: '{x.name}' must be float, got {x.dtype.name}")
    k = convert_to_tensor(np.asarray(kernel, x.dtype.as_numpy_dtype))
    return tensordot(x, k, [[len(x.shape) - 1], [0]])


def rgb_to_yiq(images):
    """RGB ``images`` (floats) as YIQ (TF1)."""
    return _colour(images, _YIQ, "rgb_to_yiq")


def yiq_to_rgb(images):
    """YIQ ``images`` as RGB (TF1)."""
    return _colour(images, _YIQ_INV, "yiq_to_rgb")


def rgb_to_yuv(images):
    """RGB ``images`` (floats) as YUV (TF1)."""
    return _colour(images, _YUV, "rgb_to_yuv")


def yuv_to_rgb(images):
    """YUV ``images`` as RGB (TF1)."""
    return _colour(images, _YUV_INV, "yuv_to_rgb")


def sobel_edges(image):
    """The Sobel gradients of each channel of the 4-D ``image``, ``[batch, height, width,
    channels, 2]`` (dy, then dx), over the image reflected at its edges (TF1)."""
    x = _image(image, "sobel_edges", ranks=(4,))
    if not x.dtype.is_floating:
        x = cast(x, dtypes.float32)
    padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    weights = np.array([[-1, -2, -1], [0, 0, 0], [1, 2, 1]], np.float64)
    out = []
    for kernel in (weights, weights.T):
        total = None
        for i in range(3):
            for j in range(3):
                if kernel[i, j] == 0:
                    continue
                part = padded[:, i:i - 2 or None, j:j - 2 or None, :] * float(kernel[i, j])
                total = part if total is None else total + part
        out.append(total)
    return stack(out, axis=-1)


def _patch_geometry(size, k, stride, rate, padding):
    """``(output size, padding before, padding after)`` of one axis."""
    span = (k - 1) * rate + 1
    if padding == "VALID":
        return max(-(-(size - span + 1) // stride), 0), 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + span - size, 0)
    return out, total // 2, total - total // 2


def _patches(x, sizes, strides, rates, padding, what):
    """The patches of ``x`` ``[batch, *spatial, depth]`` along its spatial axes."""
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"{what}: padding must be 'SAME' or 'VALID', got {padding!r}")
    spatial = x.shape[1:-1]
    if None in spatial:
        raise ValueError(f"{what}: the spatial sizes of '{x.name}' must be known, got "
                         f"{x.shape}")
    geometry = [_patch_geometry(int(n), k, s, r, padding)
                for n, k, s, r in zip(spatial, sizes, strides, rates)]
    x = pad(x, [[0, 0]] + [[lo, hi] for _, lo, hi in geometry] + [[0, 0]])
    pieces = []
    for offsets in np.ndindex(*sizes):
        key = [slice(None)]
        for o, r, s, (out, _, _) in zip(offsets, rates, strides, geometry):
            key.append(slice(o * r, o * r + (out - 1) * s + 1, s))
        pieces.append(x[tuple(key + [slice(None)])])
    out = stack(pieces, axis=-2)
    depth = x.shape[-1]
    lead = [-1] + [out for out, _, _ in geometry]
    return reshape(out, lead + [int(np.prod(sizes)) * int(depth)])


def _window(values, what, name, count):
    values = [int(v) for v in values]
    if len(values) != count + 2 or values[0] != 1 or values[-1] != 1 or min(values) < 1:
        raise ValueError(f"{what}: {name} must be [1, " + ", ".join(["n"] * count) +
                         f", 1] of positive ints, got {values}")
    return values[1:-1]


def extract_image_patches(images, ksizes=None, strides=None, rates=None, padding=None,
                          name=None, sizes=None):
    """The ``ksizes`` patches of the 4-D ``images`` at ``strides``, their pixels
    ``rates`` apart, each flattened (rows, columns, channels) into the depth:
    ``[batch, out_rows, out_cols, k_rows * k_cols * depth]`` (TF1
    ``tf.extract_image_patches``, ``tf.image.extract_patches``). ``padding`` 'SAME' pads
    with zeros. The height and width must be known when the graph is built."""
    x = _image(images, "extract_image_patches", ranks=(4,))
    ksizes = sizes if ksizes is None else ksizes
    sizes_ = _window(ksizes, "extract_image_patches", "ksizes", 2)
    strides_ = _window(strides, "extract_image_patches", "strides", 2)
    rates_ = _window(rates, "extract_image_patches", "rates", 2)
    out = _patches(x, sizes_, strides_, rates_, padding, "extract_image_patches")
    return out if name is None else apply("identity", [out], name=name)


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """``extract_image_patches`` under its ``tf.image`` name."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)


def extract_volume_patches(input, ksizes, strides, padding, name=None):  # noqa: A002
    """The 3-D patches of the 5-D ``input`` ``[batch, planes, rows, cols, depth]``, each
    flattened into the depth (TF1 ``tf.extract_volume_patches``)."""
    x = _image(input, "extract_volume_patches", ranks=(5,))
    sizes_ = _window(ksizes, "extract_volume_patches", "ksizes", 3)
    strides_ = _window(strides, "extract_volume_patches", "strides", 3)
    out = _patches(x, sizes_, strides_, [1, 1, 1], padding, "extract_volume_patches")
    return out if name is None else apply("identity", [out], name=name)


def _scale(in_size, out_size, align_corners):
    f32 = np.float32
    if align_corners and out_size > 1:
        return f32(in_size - 1) / f32(out_size - 1)
    return f32(in_size) / f32(out_size)


def _cubic_table(a=-0.75, size=1024):
    """TF's table of Keys' cubic weights (``a`` -0.75) at ``size + 1`` offsets, float32:
    column 0 the weight at distance ``x``, column 1 at ``x + 1``."""
    a = np.float32(a)
    x = (np.arange(size + 1) * (1.0 / size)).astype(np.float32)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x = x + np.float32(1)
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.stack([near, far], 1).astype(np.float32)


def bicubic_matrix(in_size, out_size, align_corners):
    """``[out, in]``: TF1's legacy bicubic resize along one axis (positions ``out *
    scale``, weights from its 1024-entry table, edge pixels repeated)."""
    table, size = _cubic_table(), 1024
    scale = _scale(in_size, out_size, align_corners)
    w = np.zeros((out_size, in_size), np.float64)
    for out in range(out_size):
        pos = np.float32(out) * scale
        base = np.floor(pos)
        offset = int(np.rint(np.float32(pos - base) * np.float32(size)))
        weights = (table[offset, 1], table[offset, 0], table[size - offset, 0],
                   table[size - offset, 1])
        for k, weight in enumerate(weights):
            w[out, min(max(int(base) - 1 + k, 0), in_size - 1)] += weight
    return w


def area_matrix(in_size, out_size, align_corners):
    """``[out, in]``: TF1's legacy area resize along one axis (each output pixel the mean
    of the input it covers, partial pixels in part)."""
    scale = _scale(in_size, out_size, align_corners)
    w = np.zeros((out_size, in_size), np.float64)
    for out in range(out_size):
        low, high = np.float32(out) * scale, np.float32(out + 1) * scale
        for i in range(int(np.floor(low)), int(np.ceil(high))):
            if i < low:
                part = scale if i + 1 > high else np.float32(i + 1) - low
            else:
                part = high - np.float32(i) if i + 1 > high else np.float32(1)
            w[out, min(max(i, 0), in_size - 1)] += part / scale
    return w


def resize_separable(x, height, width, build, align_corners):
    """The 4-D float32 ``x`` resized to ``height`` x ``width`` by the one-axis matrices
    ``build(in, out, align_corners)`` applied down and across."""
    in_h, in_w = x.shape[1], x.shape[2]
    if in_h is None or in_w is None:
        raise ValueError(f"resize: the height and width of '{x.name}' must be known for "
                         "this method")
    wy = convert_to_tensor(build(int(in_h), height, align_corners).astype(np.float32))
    wx = convert_to_tensor(build(int(in_w), width, align_corners).astype(np.float32))
    across = tensordot(x, wx, [[2], [1]])  # [b, h, c, width]
    down = tensordot(across, wy, [[1], [1]])  # [b, c, width, height]
    return transpose(down, [0, 3, 2, 1])
