"""The dtypes a graph can carry, named and behaving as in TensorFlow 1.x.

``as_dtype`` reads TF1's names: ``"float"`` is float32 (not NumPy's float64),
``"double"`` float64 and ``"half"`` float16. Every integer width NumPy has is a
dtype of its own, so a ``uint8`` image fed to a ``uint8`` placeholder stays uint8.

PyTorch implements little beyond storage, casts and copies for uint16, uint32
and uint64 (no addition, no max): on the torch backend such tensors are for
carrying data to a ``gf.cast``, as in TF1, whose CPU kernels mostly lack them too.

``bfloat16`` (8 exponent bits, 7 mantissa bits) is ``ml_dtypes.bfloat16`` on NumPy and
``torch.bfloat16`` on torch; the Array API standard has no half type, so the
``array_api_strict`` backend refuses ``float16`` and ``bfloat16`` tensors.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np


class DType:
    """A backend-neutral dtype: a name that each array namespace resolves itself.

    The attributes are TF1's: ``is_floating``, ``is_integer``, ``is_unsigned``,
    ``is_bool``, ``as_numpy_dtype``, ``min``, ``max``, ``size``, ``base_dtype``.
    A dtype equals whatever ``as_dtype`` turns into it: ``gf.float32 == "float32"``,
    ``gf.float32 == np.float32`` and ``gf.float32 == "float"`` hold.
    """

    __slots__ = ("name", "kind", "bits")

    def __init__(self, name: str, kind: str, bits: int):
        self.name = name
        # "f" floating, "i" signed integer, "u" unsigned integer, "b" boolean, "c" complex
        self.kind = kind
        self.bits = bits

    @property
    def is_floating(self) -> bool:
        """Whether it is a floating-point type.

        >>> gf.float32.is_floating
        True
        """
        return self.kind == "f"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (TF1: ``tf.uint8.is_integer`` is true)."""
        return self.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        """Whether it is an unsigned integer type (``uint8`` ... ``uint64``)."""
        return self.kind == "u"

    @property
    def is_bool(self) -> bool:
        """Whether it is ``gf.bool``."""
        return self.kind == "b"

    @property
    def is_half(self) -> bool:
        """Whether it is one of the 16-bit floating types, ``float16`` or ``bfloat16``
        (gradflow's; not a TF1 attribute)."""
        return self.kind == "f" and self.bits == 16

    @property
    def is_complex(self) -> bool:
        """Whether it is ``complex64`` or ``complex128``.

        >>> gf.complex64.is_complex
        True
        """
        return self.kind == "c"

    @property
    def is_quantized(self) -> bool:
        """Always false: gradflow has no quantized types."""
        return False

    @property
    def is_numpy_compatible(self) -> bool:
        """Always true: every gradflow dtype has a NumPy dtype."""
        return True

    @property
    def as_numpy_dtype(self):
        """The NumPy scalar type (``np.float32``), as TF1 returns it (``object`` for
        ``string``)."""
        if self.kind == "O":
            return np.object_
        return ml_dtypes.bfloat16 if self.name == "bfloat16" else np.dtype(self.name).type

    @property
    def base_dtype(self) -> "DType":
        """The dtype itself (TF1's reference dtypes do not exist here).

        >>> gf.float32.base_dtype
        tf.float32
        """
        return self

    @property
    def real_dtype(self) -> "DType":
        """The dtype of the real part: ``float32`` for ``complex64``, ``float64`` for
        ``complex128``, else the dtype itself."""
        if self.kind == "c":
            return float32 if self.bits == 64 else float64
        return self

    @property
    def size(self) -> int:
        """Bytes per element."""
        return np.dtype(self.as_numpy_dtype).itemsize

    @property
    def min(self):
        """The smallest value of the dtype (the most negative finite one for floats)."""
        return self._limits()[0]

    @property
    def max(self):
        """The largest (finite) value of the dtype."""
        return self._limits()[1]

    def _limits(self):
        if self.is_bool or self.is_complex:
            raise TypeError(f"cannot find the minimum or maximum value of {self.name}")
        info = ml_dtypes.finfo(self.as_numpy_dtype) if self.is_floating else \
            np.iinfo(self.name)
        cast = float if self.is_floating else int
        return cast(info.min), cast(info.max)

    def is_compatible_with(self, other) -> bool:
        """Whether a value of ``other`` may be used where this dtype is expected (equal dtypes)."""
        return self == other

    def resolve(self, xp):
        """This dtype as an object of the array namespace ``xp``: its attribute of the
        dtype's name, else what a backend registered for it (``add_resolution``: NumPy's
        ``bfloat16`` is ``ml_dtypes.bfloat16``)."""
        found = getattr(xp, self.name, None)
        if found is None:
            found = _RESOLUTIONS.get((getattr(xp, "__name__", None), self.name))
        if found is None:
            raise TypeError(f"the array namespace {getattr(xp, '__name__', xp)} has no "
                            f"{self.name}")
        return found

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return other is self
        if other is None or not isinstance(other, (str, type, np.dtype)):
            return NotImplemented
        try:
            return as_dtype(other) is self
        except TypeError:
            return False

    def __ne__(self, other) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"gf.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType("float16", "f", 16)
# Brain floating point (TF1 ``tf.bfloat16``): float32's exponent range, 8 significant bits
bfloat16 = DType("bfloat16", "f", 16)
float32 = DType("float32", "f", 32)
float64 = DType("float64", "f", 64)
int8 = DType("int8", "i", 8)
int16 = DType("int16", "i", 16)
int32 = DType("int32", "i", 32)
int64 = DType("int64", "i", 64)
uint8 = DType("uint8", "u", 8)
uint16 = DType("uint16", "u", 16)
uint32 = DType("uint32", "u", 32)
uint64 = DType("uint64", "u", 64)
bool_ = DType("bool", "b", 8)
# Complex numbers (TF1 ``tf.complex64``, ``tf.complex128``): only the ops that say so take
# them (``OpDef.takes_complex``: ``complex``, ``real``, ``imag``, ``conj``, the Fourier
# transforms, casts, sums, ``+ - *`` and reshapes); any other op refuses them.
complex64 = DType("complex64", "c", 64)
complex128 = DType("complex128", "c", 128)
# Byte strings (TF1 ``tf.string``): host values only, NumPy object arrays of ``bytes``,
# carried by input pipelines (``gf.data.TextLineDataset``) and ``py_func``.
string = DType("string", "O", 0)

# TF1's other names for three of them
half = float16
double = float64

ALL = (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
       uint64, bool_, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL + (string,)}
# TF1's string aliases: "float" is float32 in TensorFlow, whatever NumPy says.
_ALIASES = {"half": float16, "float": float32, "double": float64}
# (array namespace's __name__, dtype name) -> that namespace's dtype, where the namespace
# has no attribute of the name (``add_resolution``)
_RESOLUTIONS = {}


def add_resolution(namespace_name: str, dtype_name: str, value) -> None:
    """Say what ``dtype_name`` is in the array namespace called ``namespace_name`` where
    it has no attribute of that name (a backend's module calls it when imported)."""
    _RESOLUTIONS[namespace_name, dtype_name] = value


def as_dtype(value) -> DType:
    """Turn a DType, a TF1 dtype name, a NumPy dtype or a Python type into a DType.

    Strings are TF1's names (``"float32"``, ``"float"`` = float32, ``"double"``,
    ``"half"``, ``"uint8"``, ``"complex64"``, ...); Python ``float`` is float32, ``int``
    int64, ``complex`` complex128.
    """
    if isinstance(value, DType):
        return value
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return float32
    if value in (bytes, str):
        return string
    if value is complex:
        return complex128
    if isinstance(value, str):
        found = _BY_NAME.get(value) or _ALIASES.get(value)
        if found is None:
            raise TypeError(f"gradflow has no dtype named {value!r}; use one of "
                            f"{', '.join(list(_BY_NAME) + list(_ALIASES))}")
        return found
    try:
        numpy_dtype = np.dtype(value)
        name = "string" if numpy_dtype.kind in "OSU" else numpy_dtype.name
    except TypeError:  # a dtype object of another library (torch.float32, ...)
        name = getattr(value, "name", None) or str(value).rsplit(".", 1)[-1]
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(f"gradflow has no dtype for {value!r}; use one of {', '.join(_BY_NAME)}")


_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def numpy_kind(np_dtype) -> str:
    """NumPy's kind letter of ``np_dtype``, but ``"f"`` for ``ml_dtypes.bfloat16``
    (whose own kind is ``"V"``): what the checks of values entering a graph read."""
    np_dtype = np.dtype(np_dtype)
    return "f" if np_dtype == _BFLOAT16 else np_dtype.kind


def result_type(a: DType, b: DType) -> DType:
    """The dtype of an op over two tensors of dtypes ``a`` and ``b``: they must agree.

    As in TF1, tensors do not promote: ``float32 * float64`` is an error, not a
    float64. (Python scalars and NumPy arrays are converted to the tensor's dtype
    before this, see ``gradflow.prim.registry.convert_to_tensor``.)
    """
    if a is b:
        return a
    hint = "cast one with gf.cast" if a.kind == b.kind else \
        "use gf.cast first (the Array API does not promote across kinds)"
    raise TypeError(f"cannot combine {a.name} and {b.name}: {hint}")


def bytes_array(value) -> np.ndarray:
    """Text or bytes (one, or nested lists or an array of them) as a NumPy object array
    of ``bytes``: how ``string`` values are held, on the host, whatever the backend.
    ``str`` is encoded as UTF-8; anything else raises TypeError.

    >>> bytes_array(["ab", b"c"])
    array([b'ab', b'c'], dtype=object)
    """
    array = np.asarray(value, dtype=object)
    flat = []
    for v in array.ravel():
        if isinstance(v, str):
            flat.append(v.encode())
        elif isinstance(v, (bytes, bytearray, memoryview)):
            flat.append(bytes(v))
        else:
            raise TypeError(f"a string value holds text or bytes, not {type(v).__name__} "
                            f"({v!r})")
    out = np.empty(array.shape, dtype=object)
    out.ravel()[:] = flat if flat else []
    return out


def is_bytes_array(value) -> bool:
    """Whether ``value`` is a host array of ``string`` values (``bytes_array``)."""
    return isinstance(value, np.ndarray) and value.dtype == object
