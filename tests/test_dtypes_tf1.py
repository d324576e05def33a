"""Dtypes as TensorFlow 1.x has them.

TF1's names (``"float"`` is float32), its integer widths, its DType attributes;
no promotion between tensors of different dtypes (an error at build time that
names both inputs); Python numbers, lists and NumPy arrays converted to the
dtype of the tensor beside them; and the weakly typed ``placeholder()`` of the
tutorials, converted to the dtype it meets.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import gradflow as gf
from gradflow.errors import InvalidArgumentError

HERE = "test_dtypes_tf1.py"

# -- names, attributes, equality -------------------------------------------------------


@pytest.mark.parametrize("name, dtype", [
    ("float", gf.float32), ("float32", gf.float32), ("double", gf.float64),
    ("float64", gf.float64), ("half", gf.float16), ("float16", gf.float16),
    ("int8", gf.int8), ("int16", gf.int16), ("int32", gf.int32), ("int64", gf.int64),
    ("uint8", gf.uint8), ("uint16", gf.uint16), ("uint32", gf.uint32),
    ("uint64", gf.uint64), ("bool", gf.bool)])
def test_tf1_dtype_names(name, dtype):
    assert gf.as_dtype(name) is dtype
    assert gf.placeholder(name).dtype is dtype
    assert gf.cast(gf.placeholder(gf.float32), name).dtype is dtype


def test_other_spellings():
    assert gf.double is gf.float64 and gf.half is gf.float16
    assert gf.as_dtype(np.float32) is gf.float32
    assert gf.as_dtype(np.dtype("uint8")) is gf.uint8
    assert gf.as_dtype(float) is gf.float32 and gf.as_dtype(bool) is gf.bool
    with pytest.raises(TypeError, match="gradflow has no dtype named 'int'; use one of "
                       "float16, .*, float, double"):
        gf.as_dtype("int")
    assert gf.as_dtype(np.complex128) is gf.complex128 and gf.as_dtype(complex) is gf.complex128
    assert gf.as_dtype("complex64") is gf.complex64


def test_complex_dtypes():
    assert gf.complex64.is_complex and not gf.complex64.is_floating
    assert not gf.float32.is_complex
    assert gf.complex64.real_dtype is gf.float32 and gf.complex128.real_dtype is gf.float64
    assert gf.float32.real_dtype is gf.float32
    assert gf.complex64.size == 8 and gf.complex64.as_numpy_dtype is np.complex64
    with pytest.raises(TypeError, match="minimum or maximum value of complex64"):
        _ = gf.complex64.max


def test_complex_constants_feeds_and_fetches(backend):
    z = gf.placeholder(gf.complex128, [2])
    c = gf.constant([1 + 2j, 3j])
    assert c.dtype is gf.complex128
    out = gf.Session().run(z * 2.0 + c - z, {z: np.array([1 - 1j, 2.0])})
    np.testing.assert_allclose(out, [2 + 1j, 2 + 3j])


def test_ops_without_complex_support_refuse_it():
    z = gf.complex(gf.constant([1.0]), gf.constant([2.0]))
    with pytest.raises(TypeError, match="exp: '.*' is a complex64 tensor, and exp does not "
                       "take complex tensors"):
        gf.exp(z)
    with pytest.raises(TypeError, match="must be complex64 or complex128, got float32"):
        gf.signal.fft(gf.constant([1.0]))


def test_float_strings_mean_float32_at_run_time(backend):
    x = gf.placeholder("float", (2,))
    with gf.Session(backend=backend) as sess:
        out, as_double = sess.run([gf.cast(x, "float"), gf.cast(x, "double")], {x: [1.5, 2.0]})
    assert out.dtype == np.float32 and as_double.dtype == np.float64
    np.testing.assert_array_equal(as_double, [1.5, 2.0])


def test_dtype_attributes():
    assert gf.float32.is_floating and not gf.float32.is_integer
    assert gf.uint8.is_integer and gf.uint8.is_unsigned and not gf.int8.is_unsigned
    assert gf.bool.is_bool and not gf.bool.is_integer and not gf.bool.is_unsigned
    assert gf.float32.as_numpy_dtype is np.float32
    assert gf.uint16.as_numpy_dtype is np.uint16
    assert gf.float64.name == "float64" and gf.bool.name == "bool"
    assert (gf.int8.min, gf.int8.max) == (-128, 127)
    assert (gf.uint8.min, gf.uint8.max) == (0, 255)
    assert (gf.int64.min, gf.int64.max) == (-2**63, 2**63 - 1)
    assert gf.uint64.max == 2**64 - 1
    assert gf.float32.max == float(np.finfo(np.float32).max) == -gf.float32.min
    assert gf.float16.max == 65504.0
    with pytest.raises(TypeError, match="cannot find the minimum or maximum value of bool"):
        _ = gf.bool.min
    assert gf.float32.base_dtype is gf.float32 and gf.float64.real_dtype is gf.float64
    assert gf.int16.size == 2 and gf.float64.size == 8


def test_dtype_equality_and_hashing():
    assert gf.float32 == "float32" and gf.float32 == "float" and gf.float32 == np.float32
    assert gf.float32 == np.dtype("float32") and "float32" == gf.float32
    assert gf.float32 != "float64" and gf.float32 != gf.float64 and gf.float32 != "nonsense"
    assert gf.float32 != None  # noqa: E711 - the comparison under test
    assert gf.float64 == "double" and gf.float64 != "float"
    assert {gf.float32: 1}["float32"] == 1
    assert pickle.loads(pickle.dumps(gf.uint8)) is gf.uint8
    assert len({gf.float32, gf.as_dtype("float"), gf.as_dtype(np.float32)}) == 1


# -- the integer widths on every backend --------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8"])
def test_small_integer_dtypes_compute_on_every_backend(dtype, backend):
    x = gf.placeholder(dtype, (None,), name="x")
    y = gf.maximum(x * 2, x + 1) - x
    with gf.Session(backend=backend) as sess:
        out = sess.run(y, {x: np.array([0, 3, 50], dtype)})
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, [1, 3, 50])


def test_uint8_feed_stays_uint8(backend):
    image = gf.placeholder(gf.uint8, (None, 3), name="image")
    scaled = gf.cast(image, gf.float32) / 255.0
    value = np.array([[0, 128, 255]], np.uint8)
    with gf.Session(backend=backend) as sess:
        raw, out = sess.run([image, scaled], {image: value})
    assert raw.dtype == np.uint8
    np.testing.assert_array_equal(raw, value)
    np.testing.assert_allclose(out, value / np.float32(255.0), rtol=1e-7)
    assert gf.constant(value).dtype is gf.uint8
    assert gf.Variable(value).dtype is gf.uint8


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_wide_unsigned_dtypes_carry_data_on_every_backend(dtype, backend):
    """Feeding, reshaping, slicing and casting: what PyTorch supports for them."""
    x = gf.placeholder(dtype, (None,), name="x")
    value = np.array([1, 2, np.iinfo(dtype).max], dtype)
    with gf.Session(backend=backend) as sess:
        raw, col, part, as_float = sess.run(
            [x, gf.reshape(x, (-1, 1)), x[1:], gf.cast(x, gf.float64)], {x: value})
    assert raw.dtype == np.dtype(dtype) and col.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(col[:, 0], value)
    np.testing.assert_array_equal(part, value[1:])
    np.testing.assert_array_equal(as_float, value.astype(np.float64))


def test_uint16_arithmetic_where_the_library_has_it(backend):
    x = gf.placeholder(gf.uint16, (2,), name="x")
    y = gf.add(x, 1, name="plus_one")
    feed = {x: np.array([1, 65534], np.uint16)}
    with gf.Session(backend=backend) as sess:
        if sess.backend.name == "torch":  # PyTorch has no uint16 addition on the CPU
            with pytest.raises(InvalidArgumentError, match="add 'plus_one' failed at run time"):
                sess.run(y, feed)
        else:
            np.testing.assert_array_equal(sess.run(y, feed), [2, 65535])


# -- no promotion between tensors --------------------------------------------------------


def _two(a_dtype, b_dtype, shape=(2, 2)):
    return (gf.placeholder(a_dtype, shape, name="a"), gf.placeholder(b_dtype, shape, name="b"))


MIXED = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: gf.subtract(a, b),
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "maximum": lambda a, b: gf.maximum(a, b),
    "matmul": lambda a, b: gf.matmul(a, b),
    "concat": lambda a, b: gf.concat([a, b], 0),
    "where": lambda a, b: gf.where(gf.placeholder(gf.bool, (2, 2)), a, b),
    "equal": lambda a, b: gf.equal(a, b),
}


@pytest.mark.parametrize("op", list(MIXED))
def test_float32_with_float64_is_an_error_naming_both_inputs(op):
    a, b = _two(gf.float32, gf.float64)
    with pytest.raises(TypeError) as info:
        MIXED[op](a, b)
    message = str(info.value)
    assert message.startswith(f"{op}: its inputs must have the same dtype, but 'a' is float32 "
                              f"(created at ")
    assert "and 'b' is float64 (created at " in message
    assert message.count(HERE + ":") == 3  # where a and b were made, and the op's line
    assert "use gf.cast" in message


def test_int32_with_int64_and_the_fix():
    a, b = _two(gf.int32, gf.int64, (3,))
    with pytest.raises(TypeError, match="'a' is int32 .* 'b' is int64"):
        a + b
    assert (gf.cast(a, gf.int64) + b).dtype is gf.int64


def test_no_float64_surprise_in_the_optimizer():
    """A float64 constant in a float32 model fails where it is used, not in Adam's assign."""
    x = gf.placeholder(gf.float32, (None, 2))
    w = gf.Variable(np.zeros((2, 1), np.float32))
    target = gf.constant(np.ones((1,)), name="target")  # NumPy's default: float64
    with pytest.raises(TypeError, match=r"subtract: .*'target' is float64"):
        gf.matmul(x, w) - target


# -- Python numbers, lists and NumPy arrays take the tensor's dtype ------------------------


def test_python_numbers_are_weakly_typed():
    f64 = gf.placeholder(gf.float64, (2,))
    i32 = gf.placeholder(gf.int32, (2,), name="i")
    u8 = gf.placeholder(gf.uint8, (2,), name="u")
    assert (f64 * 2.0).dtype is gf.float64 and (2 * f64).dtype is gf.float64
    assert (i32 + 1).dtype is gf.int32 and (u8 * 2).dtype is gf.uint8
    with pytest.raises(TypeError, match="cannot combine the Python float 0.5 with a int32 "
                       r"tensor \('i'\)"):
        i32 * 0.5
    with pytest.raises(TypeError, match="the Python int -1 does not fit in uint8, the dtype "
                       "of 'u'"):
        u8 * -1
    with pytest.raises(TypeError, match="does not fit in int32"):
        i32 + 2**40


def test_numpy_arrays_and_lists_take_the_tensor_dtype(backend):
    x = gf.placeholder(gf.float32, (3,), name="x")
    i = gf.placeholder(gf.int32, (3,), name="i")
    y = x + np.array([0.5, 1.0, 2.0])  # float64 values, converted to float32 as in TF1
    z = i * np.array([1, 2, 3], np.int64) + [1, 1, 1]
    w = x * np.array([1, 2, 3])  # integers a float32 holds exactly
    assert y.dtype is gf.float32 and z.dtype is gf.int32 and w.dtype is gf.float32
    with gf.Session(backend=backend) as sess:
        out = sess.run([y, z, w], {x: [1.0, 2.0, 3.0], i: [1, 2, 3]})
    np.testing.assert_array_equal(out[0], np.array([1.5, 3.0, 5.0], np.float32))
    np.testing.assert_array_equal(out[1], [2, 5, 10])
    np.testing.assert_array_equal(out[2], [1.0, 4.0, 9.0])
    with pytest.raises(TypeError, match=r"cannot combine the ndarray value of dtype float64 "
                       r"and shape \(3,\) with a int32 tensor \('i'\)"):
        i + np.array([0.5, 1.0, 2.0])
    with pytest.raises(TypeError, match="has integers that float32, the dtype of 'x', cannot "
                       "hold exactly"):
        x + np.array([2**24 + 1, 0, 0])


# -- the weakly typed placeholder() of the tutorials ------------------------------------


def test_tutorial_affine_prints_int32(backend, capsys):
    with gf.Graph().as_default():
        A = gf.Variable([[1, 0], [0, -1]])
        b = gf.Variable([1, 1])
        x = gf.placeholder()
        y = gf.add(gf.matmul(A, x), b)
        output = gf.Session(backend=backend).run(y, {x: [1, 2]})
    print(output)
    assert capsys.readouterr().out == "[ 2 -1]\n"
    assert output.dtype == np.int32 and y.dtype is gf.int32


def test_dtypeless_placeholder_refuses_values_that_do_not_convert(backend):
    A = gf.Variable([[1, 0], [0, -1]], name="A")
    x = gf.placeholder(name="x")
    y = gf.matmul(A, x)
    with gf.Session(backend=backend) as sess:
        with pytest.raises(InvalidArgumentError, match=r"placeholder 'x' \(created at .*"
                           + HERE + r":\d+\) has no dtype of its own and is used as int32 "
                           r"here, with 'A', but the value fed to it has elements \(such as "
                           r"1.5\) that int32 cannot hold exactly"):
            sess.run(y, {x: [1.5, 2]})
        np.testing.assert_array_equal(sess.run(y, {x: [[3], [-4]]}), [[3], [4]])


def test_dtypeless_placeholder_meets_uint8_range(backend):
    pixels = gf.Variable(np.array([1, 2], np.uint8))
    x = gf.placeholder(name="offset")
    with gf.Session(backend=backend) as sess:
        assert sess.run(pixels + x, {x: [3, 4]}).tolist() == [4, 6]
        with pytest.raises(InvalidArgumentError, match="placeholder 'offset'.*used as uint8.*"
                           r"\(such as 300.0\)"):
            sess.run(pixels + x, {x: [300, 0]})


def test_dtypeless_placeholder_with_float64(backend):
    w = gf.Variable(np.array([0.5, 0.25]))
    x = gf.placeholder()
    y = w * x
    assert y.dtype is gf.float64
    with gf.Session(backend=backend) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [2.0, 4.0]}), [1.0, 1.0])
    assert (x * 2.0).dtype is gf.float32  # with a Python number it stays float32


def test_only_the_dtypeless_placeholder_itself_is_weak():
    A = gf.Variable([[1, 0], [0, -1]], name="A")
    strict = gf.placeholder(gf.float32, name="strict")
    with pytest.raises(TypeError, match="matmul: .*'A' is int32.*'strict' is float32"):
        gf.matmul(A, strict)
    derived = gf.placeholder(name="loose") * 1.0
    with pytest.raises(TypeError, match="'A' is int32.*'multiply' is float32"):
        gf.matmul(A, derived)
    flag = gf.placeholder(gf.bool, (2, 2), name="flag")
    with pytest.raises(TypeError, match="'flag' is bool"):  # only numeric dtypes convert
        gf.equal(flag, gf.placeholder(name="x2"))


def test_dtypeless_placeholder_assigned_to_an_int_variable(backend):
    v = gf.Variable([0, 0], name="counts")
    x = gf.placeholder(name="x")
    assign = v.assign(x)
    with gf.Session(backend=backend) as sess:
        sess.run(assign, {x: [3, 4]})
        assert sess.run(v).tolist() == [3, 4]
        assert sess.run(v).dtype == np.int32
