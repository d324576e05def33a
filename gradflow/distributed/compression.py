"""Gradient compression for the wire (Horovod's ``Compression.none`` and ``Compression.fp16``).

A compressor names the dtype a tensor travels in. The fusion buffers are
allocated in that dtype, so compressing costs no extra buffer: packing casts
into the bucket and unpacking casts back.
"""

from __future__ import annotations


class Compressor:
    """Keeps every tensor in its own dtype."""

    name = "none"

    @staticmethod
    def wire_dtype(dtype_name: str) -> str:
        """The dtype name a tensor of ``dtype_name`` travels in."""
        return dtype_name

    def __repr__(self) -> str:
        return f"Compression.{self.name}"


class NoneCompressor(Compressor):
    """No compression: tensors travel in their own dtype."""


class FP16Compressor(Compressor):
    """Floating-point tensors travel as float16 (half the bytes of float32); others
    unchanged. Values beyond float16's range (65504) become infinite, so with
    ``op=Average`` gradients are divided by the number of ranks before the cast."""

    name = "fp16"

    @staticmethod
    def wire_dtype(dtype_name: str) -> str:
        return "float16" if dtype_name in ("float32", "float64") else dtype_name


class Compression:
    """The compressors, by Horovod's names: ``Compression.none``, ``Compression.fp16``."""

    none = NoneCompressor()
    fp16 = FP16Compressor()


def as_compressor(compression) -> Compressor:
    """``compression`` checked: ``Compression.none``, ``Compression.fp16`` (or their
    classes, or the names ``"none"``, ``"fp16"``); None means no compression."""
    if compression is None:
        return Compression.none
    if isinstance(compression, type) and issubclass(compression, Compressor):
        compression = compression()
    if isinstance(compression, str):
        found = {"none": Compression.none, "fp16": Compression.fp16}.get(compression.lower())
        if found is None:
            raise ValueError(f"unknown compression {compression!r}; use Compression.none or "
                             "Compression.fp16")
        return found
    if not isinstance(compression, Compressor):
        raise TypeError(f"compression must be Compression.none or Compression.fp16, got "
                        f"{compression!r}")
    return compression
