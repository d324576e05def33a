"""TF1's ``tf.errors``: the error codes, the classes of each code and the functions
between them, checked against TensorFlow 2.21's values, pasted as literals (made once
with ``tensorflow.compat.v1.errors``: ``{n: getattr(errors, n)}`` for the codes,
``exception_type_from_error_code(c).__name__`` for 1..16, and the attributes of
``OpError(None, None, "boom", 5)``)."""

from __future__ import annotations

import pytest

import gradflow as gf

TF_CODES = {"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3,
            "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5, "ALREADY_EXISTS": 6,
            "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
            "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13,
            "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16}

TF_CLASSES = {1: "CancelledError", 2: "UnknownError", 3: "InvalidArgumentError",
              4: "DeadlineExceededError", 5: "NotFoundError", 6: "AlreadyExistsError",
              7: "PermissionDeniedError", 8: "ResourceExhaustedError",
              9: "FailedPreconditionError", 10: "AbortedError", 11: "OutOfRangeError",
              12: "UnimplementedError", 13: "InternalError", 14: "UnavailableError",
              15: "DataLossError", 16: "UnauthenticatedError"}


def test_codes_are_tf1s():
    assert {n: getattr(gf.errors, n) for n in TF_CODES} == TF_CODES


@pytest.mark.parametrize("code", sorted(TF_CLASSES))
def test_each_code_has_its_class_and_back(code):
    cls = gf.errors.exception_type_from_error_code(code)
    assert cls.__name__ == TF_CLASSES[code]
    assert cls is getattr(gf.errors, TF_CLASSES[code])
    assert issubclass(cls, gf.errors.OpError)
    assert gf.errors.error_code_from_exception_type(cls) == code
    err = cls(None, None, "what went wrong")
    assert (err.error_code, err.message, str(err)) == (code, "what went wrong",
                                                       "what went wrong")


def test_op_error_takes_its_code():
    err = gf.errors.OpError(None, None, "boom", 5)
    assert (err.error_code, err.message, str(err)) == (5, "boom", "boom")
    with pytest.raises(gf.errors.NotFoundError, match="missing"):
        raise gf.errors.NotFoundError(None, None, "missing")


def test_unknown_code_and_class():
    with pytest.raises(KeyError):
        gf.errors.exception_type_from_error_code(0)
    with pytest.warns(UserWarning, match="Unknown class exception"):
        got = gf.errors.error_code_from_exception_type(ValueError)
    assert type(got).__name__ == "UnknownError"


def test_raise_exception_on_not_ok_status():
    with gf.errors.raise_exception_on_not_ok_status() as status:
        assert status.code == gf.errors.OK
    with pytest.raises(gf.errors.NotFoundError, match="no such file"):
        with gf.errors.raise_exception_on_not_ok_status() as status:
            status.set(gf.errors.NOT_FOUND, "no such file")
    with pytest.raises(gf.errors.UnknownError, match="odd"):
        with gf.errors.raise_exception_on_not_ok_status() as status:
            status.set(99, "odd")


def test_tf1_program_catches_by_class():
    x = gf.placeholder(gf.float32, (2,), name="x")
    with gf.Session() as sess:
        try:
            sess.run(x)
        except gf.errors.OpError as e:
            assert e.error_code == gf.errors.INVALID_ARGUMENT
        else:
            raise AssertionError("missing feed not raised")
