"""TF1's ``tf.resource_loader``: paths of data files that sit beside a program's script.

>>> vocab = gf.resource_loader.get_path_to_datafile("vocab.txt")  # next to this script

The file paths are the caller's: ``get_data_files_path()`` is the folder of the
Python file that calls it, as in TensorFlow outside of a Bazel build (which adds its
``runfiles`` tree; gradflow has none).
"""

from __future__ import annotations

import inspect
import os
import sys


def _caller_dir(depth: int) -> str:
    return os.path.dirname(inspect.getfile(sys._getframe(depth + 1)))


def get_data_files_path() -> str:
    """The folder of the Python file that calls this function (TF1
    ``tf.resource_loader.get_data_files_path``)."""
    return _caller_dir(1)


def get_path_to_datafile(path) -> str:
    """``path`` joined to the folder of the Python file that calls this function (TF1
    ``tf.resource_loader.get_path_to_datafile``)."""
    return os.path.join(_caller_dir(1), path)


def readahead_file_path(path, readahead="128M"):
    """``path`` itself (TF1 ``tf.resource_loader.readahead_file_path``, which returns
    its argument unchanged: read-ahead is a file-system setting, not a path)."""
    return path


__all__ = ["get_data_files_path", "get_path_to_datafile", "readahead_file_path"]
