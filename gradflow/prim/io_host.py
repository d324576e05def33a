"""Host ops of ``tf.io`` and of a Session's variables (``gradflow.ops.io_ops`` builds
them): web-safe base64, ``decode_compressed``, ``write_file``, ``matching_files``, and
the ops that look at the Session's variable store (``is_variable_initialized``,
``report_uninitialized_variables``, ``count_up_to``). All run on the host, none has a
gradient (TensorFlow's have none).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import os
import re
import zlib

import numpy as np

from gradflow import dtypes, gfile
from gradflow.errors import (
    FailedPreconditionError,
    GradflowError,
    InvalidArgumentError,
    OutOfRangeError,
)
from gradflow.prim.construct import declared
from gradflow.prim.registry import register

_WEB_SAFE = re.compile(rb"[A-Za-z0-9_-]*={0,2}")


def _objects(array):
    return np.asarray(array, dtype=object)


def _each(array, fn):
    """``fn`` of each string of ``array``, as a string array of its shape."""
    array = _objects(array)
    out = np.empty(array.shape, dtype=object)
    out.ravel()[:] = [fn(bytes(v)) for v in array.ravel()] or []
    return out


def _encode(value, pad):
    text = base64.urlsafe_b64encode(value)
    return text if pad else text.rstrip(b"=")


def _decode(value, where):
    if not _WEB_SAFE.fullmatch(value):
        raise InvalidArgumentError(f"{where}: {value[:40]!r} is not web-safe base64")
    body = value.rstrip(b"=")
    if len(body) % 4 == 1:
        raise InvalidArgumentError(f"{where}: a base64 string cannot have a length of 1 "
                                   f"modulo 4 ({value[:40]!r})")
    try:
        return base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4))
    except binascii.Error as err:
        raise InvalidArgumentError(f"{where}: {err} ({value[:40]!r})") from None


def _decompress(value, kind, where):
    try:
        if kind == "ZLIB":
            return zlib.decompress(value)
        if kind == "GZIP":
            return gzip.decompress(value)
    except (OSError, EOFError, zlib.error) as err:
        raise InvalidArgumentError(f"{where}: not {kind} data ({err})") from None
    return value


def _string_op(name, compute):
    """Register ``name``, a host op of one string input: ``compute(node, value)`` of each."""

    def impl(run_state, node):
        to_host, device = run_state.backend.host_value, run_state.backend.device_value
        where = f"{name} '{node.name}'"
        return lambda x: device(_each(to_host(x), lambda v: compute(node, v, where)))

    register(name, impl, declared, grad=None, kind="call", takes_strings=True)


_string_op("encode_base64", lambda node, v, where: _encode(v, node.attrs["pad"]))
_string_op("decode_base64", lambda node, v, where: _decode(v, where))
_string_op("decode_compressed", lambda node, v, where: _decompress(v, node.attrs["kind"], where))


def _scalar_text(array):
    return bytes(_objects(array).reshape(())[()]).decode("utf-8", "surrogateescape")


def _write_file_impl(run_state, node):
    to_host = run_state.backend.host_value

    def run(filename, contents):
        path = _scalar_text(to_host(filename))
        data = bytes(_objects(to_host(contents)).reshape(())[()])
        folder = os.path.dirname(path)
        if folder and not gfile.IsDirectory(folder):
            gfile.MakeDirs(folder)
        with gfile.GFile(path, "wb") as out:
            out.write(data)
        return ()

    return run


def _matching_files_impl(run_state, node):
    """The sorted paths matching the patterns; with ``once``, those found at the node's
    first run in the Session, kept for the next ones (``match_filenames_once``)."""
    to_host, device = run_state.backend.host_value, run_state.backend.device_value

    def run(pattern):
        if node.attrs["once"]:
            # the user's node, which a plan's copy of it names as its origin
            key = ("match_filenames_once", getattr(node, "origin", None) or node)
            if key not in run_state.resources:
                run_state.resources[key] = find(pattern)
            return run_state.resources[key]
        return find(pattern)

    def find(pattern):
        found = set()
        for text in _objects(to_host(pattern)).ravel():
            found.update(gfile.Glob(bytes(text).decode("utf-8", "surrogateescape")))
        return device(dtypes.bytes_array([p.encode("utf-8", "surrogateescape")
                                          for p in sorted(found)]).reshape(-1))

    return run


def _initialized_impl(run_state, node):
    """Which of the node's variables have a value in the Session now: ``mode`` "flags",
    a bool per variable; "names", the names of those that do not; "assert", nothing, or
    ``FailedPreconditionError`` naming those that do not."""
    variables, device = node.attrs["variables"], run_state.backend.device_value
    mode = node.attrs["mode"]

    def run():
        with run_state.store_lock:
            have = [v in run_state.store for v in variables]
        if mode == "flags":
            return device(np.asarray(have, dtype=bool).reshape(node.attrs["shape"]))
        missing = [v.name for v, h in zip(variables, have) if not h]
        if mode == "names":
            return device(dtypes.bytes_array([n.encode() for n in missing]).reshape(-1))
        if missing:
            raise FailedPreconditionError(f"{node.name}: attempting to use uninitialized "
                                          f"value {', '.join(missing)}")
        return ()

    return run


def _count_up_to_impl(run_state, node):
    """The variable's value before it counts up by one, under the store lock (no two
    runs see the same value); ``OutOfRangeError`` once it has reached ``limit``."""
    var, limit = node.attrs["var"], node.attrs["limit"]
    backend = run_state.backend

    def run(_read):
        with run_state.store_lock:
            if run_state.closed or var not in run_state.store:
                raise GradflowError(f"count_up_to '{node.name}': variable '{var.name}' has "
                                    "no value in this Session")
            old = np.asarray(backend.host_value(run_state.store[var]))
            if old >= limit:
                raise OutOfRangeError(f"count_up_to '{node.name}': reached limit of {limit}")
            run_state.store[var] = backend.device_value(old + old.dtype.type(1))
        return backend.device_value(old)

    return run


register("write_file", _write_file_impl, declared, grad=None, kind="call", takes_strings=True)
register("matching_files", _matching_files_impl, declared, grad=None, kind="call",
         takes_strings=True)
register("variables_initialized", _initialized_impl, declared, grad=None, kind="call")
register("count_up_to", _count_up_to_impl, declared, grad=None, kind="call")
