"""Host ops of TF1's image input pipelines: ``read_file`` (a file's bytes, as a string
scalar) and ``decode_image`` (JPEG, PNG or BMP bytes as a ``uint8`` image ``[height,
width, channels]``, decoded by Pillow). They run on the host, as a ``py_func`` does,
and have no gradient; the image is then moved to the session's backend.

``encode_image`` writes a ``uint8`` image as PNG or JPEG bytes, by Pillow too.

Decoding refuses what is not an image of the expected format, a truncated file, and an
image of more pixels than Pillow's decompression-bomb limit (``PIL.Image.MAX_IMAGE_PIXELS``),
each with an ``InvalidArgumentError`` naming the op.
"""

from __future__ import annotations

import io

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError, NotFoundError
from gradflow.prim.construct import declared
from gradflow.prim.registry import register

# Pillow's names of the formats each decoder takes (None: any of them)
FORMATS = {"jpeg": ("JPEG",), "png": ("PNG",), "bmp": ("BMP",), "image": ("JPEG", "PNG", "BMP")}
# Pillow's image mode for a requested channel count (0 keeps the file's)
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def _scalar_bytes(value, node):
    array = np.asarray(value, dtype=object)
    if array.shape != ():
        raise InvalidArgumentError(f"{node.opdef.name} '{node.name}': expects one string, got "
                                   f"shape {array.shape}")
    item = array.item()
    return item.encode() if isinstance(item, str) else bytes(item)


def _read_file_impl(run_state, node):
    to_host = run_state.backend.host_value

    def run(filename):
        name = _scalar_bytes(to_host(filename), node).decode("utf-8", "surrogateescape")
        try:
            with open(name, "rb") as f:
                return dtypes.bytes_array(f.read())
        except FileNotFoundError:
            raise NotFoundError(f"read_file '{node.name}': no file {name!r}") from None
        except OSError as err:
            raise InvalidArgumentError(f"read_file '{node.name}': {name!r}: {err}") from None

    return run


def _pixels(image, channels):
    """The array of a Pillow image in the modes TF1's decoders give: grey (``L``), grey
    and alpha (``LA``), ``RGB`` or ``RGBA``, converted to ``channels`` where it is not 0."""
    from PIL import Image  # Pillow: an optional library, needed once an image is decoded

    if image.mode.startswith("I") or image.mode == "F":  # 16-bit grey: its high byte
        wide = np.asarray(image, dtype=np.float64)
        image = Image.fromarray(np.clip(wide / 256, 0, 255).astype(np.uint8), "L")
    elif image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    elif image.mode == "1":
        image = image.convert("L")
    elif image.mode not in ("L", "LA", "RGB", "RGBA"):  # CMYK, YCbCr...
        image = image.convert("RGB")
    if channels and image.mode != _MODES[channels]:
        image = image.convert(_MODES[channels])
    return np.asarray(image, dtype=np.uint8)


def decode(contents, fmt, channels, name="decode"):
    """The ``uint8`` array ``[height, width, channels]`` of image bytes ``contents`` in one
    of the formats ``FORMATS[fmt]``, with ``channels`` channels (0: as in the file);
    ``InvalidArgumentError`` naming ``name`` for anything else."""
    from PIL import Image  # Pillow: an optional library, needed once an image is decoded

    accepted = FORMATS[fmt]
    try:
        with Image.open(io.BytesIO(contents), formats=list(accepted)) as image:
            pixels = image.size[0] * image.size[1]
            limit = Image.MAX_IMAGE_PIXELS
            if limit is not None and pixels > limit:
                raise InvalidArgumentError(f"{name}: an image of {image.size[0]}x"
                                           f"{image.size[1]} pixels is over the limit of "
                                           f"{limit} (PIL.Image.MAX_IMAGE_PIXELS)")
            if channels == 1 and image.format == "JPEG":
                image.draft("L", image.size)  # libjpeg's own grey output: the luma as coded
            array = _pixels(image, channels)
    except InvalidArgumentError:
        raise
    except Image.DecompressionBombError as err:
        raise InvalidArgumentError(f"{name}: {err}") from None
    except (OSError, ValueError, SyntaxError) as err:  # Pillow's errors for bad data
        kinds = " or ".join(accepted)
        raise InvalidArgumentError(f"{name}: the contents ({len(contents)} bytes) are not a "
                                   f"whole {kinds} image: {err}") from None
    return array[:, :, None] if array.ndim == 2 else array


def _decode_impl(run_state, node):
    fmt, channels = node.attrs["format"], node.attrs["channels"]
    to_host, asarray = run_state.backend.host_value, run_state.backend.asarray

    def run(contents):
        image = decode(_scalar_bytes(to_host(contents), node), fmt, channels,
                       f"decode_{fmt} '{node.name}'")
        return asarray(image)

    return run


_WANT = {"grayscale": 1, "rgb": 3}


def encode(pixels, fmt, name="encode", **options):
    """The bytes of the PNG or JPEG file of the ``uint8`` array ``pixels`` ``[height,
    width, channels]``, written by Pillow with ``options`` (``encode_image``'s attributes)."""
    from PIL import Image  # Pillow: an optional library, needed once an image is encoded

    channels = pixels.shape[2]
    want = _WANT.get(options.get("channels") or "")
    if want is not None and want != channels:
        raise InvalidArgumentError(f"{name}: format {options['channels']!r} needs {want} "
                                   f"channels, the image has {channels}")
    if pixels.shape[0] == 0 or pixels.shape[1] == 0:
        raise InvalidArgumentError(f"{name}: the image is empty ({pixels.shape})")
    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
    image = Image.fromarray(pixels[:, :, 0] if channels == 1 else pixels, mode)
    out = io.BytesIO()
    if fmt == "png":
        level = options["quality"]
        image.save(out, "PNG", compress_level=6 if level < 0 else level)
    else:
        image.save(out, "JPEG", quality=options["quality"], progressive=options["progressive"],
                   optimize=options["optimize"], subsampling=options["subsampling"],
                   dpi=options["dpi"])
    return out.getvalue()


def _encode_impl(run, node):
    fmt, to_host = node.attrs["format"], run.backend.host_value
    options = {k: v for k, v in node.attrs.items() if k not in ("format", "shape", "dtype")}

    def run(image):
        pixels = np.ascontiguousarray(to_host(image), dtype=np.uint8)
        return dtypes.bytes_array(encode(pixels, fmt, f"encode_{fmt} '{node.name}'",
                                         **options))

    return run


register("read_file", _read_file_impl, declared, grad=None, kind="call", takes_strings=True)
register("decode_image", _decode_impl, declared, grad=None, kind="call", takes_strings=True)
register("encode_image", _encode_impl, declared, grad=None, kind="call")
