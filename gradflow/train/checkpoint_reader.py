"""Looking inside a checkpoint without a graph (TF1's ``train.load_checkpoint``,
``NewCheckpointReader``, ``list_variables`` and ``load_variable``), for the checkpoints
gradflow and TensorFlow write (one layout) and those of earlier gradflow versions.

Example::

    for name, shape in gf.train.list_variables("ckpt_dir"):
        print(name, shape)
    kernel = gf.train.load_variable("ckpt_dir", "dense/kernel")
"""

from __future__ import annotations

import os

from gradflow import dtypes
from gradflow.train.checkpoint_files import (
    CheckpointNotFoundError,
    _Unreadable,
    read,
    unreadable_error,
)
from gradflow.train.saver import (
    _exists,
    _missing_file_message,
    _path_string,
    latest_checkpoint,
)


class CheckpointReader:
    """The tensors of one checkpoint by name. ``path`` is a checkpoint (the prefix of its
    ``.index`` and data files, or the file of an earlier gradflow) or a folder, whose
    newest checkpoint is read. A missing or damaged checkpoint raises ``CheckpointError``."""

    def __init__(self, path):
        path = _path_string(path, "load_checkpoint")
        if os.path.isdir(path):
            found = latest_checkpoint(path)
            if found is None:
                raise CheckpointNotFoundError(f"load_checkpoint: the folder {path} holds no "
                                              "checkpoint listed in its index")
            path = found
        if not _exists(path):
            raise CheckpointNotFoundError(_missing_file_message(path))
        self.path = path
        header, _ = self._read([])
        self._shapes = dict(zip(header["names"], (list(s) for s in header["shapes"])))
        self._dtypes = dict(zip(header["names"], header["dtypes"]))

    def _read(self, names):
        try:
            return read(self.path, names)
        except _Unreadable as err:
            raise unreadable_error(err, f"checkpoint {self.path} {err}") from None

    def get_variable_to_shape_map(self):
        """``{name: shape as a list}`` of every tensor in the checkpoint."""
        return {name: list(shape) for name, shape in self._shapes.items()}

    def get_variable_to_dtype_map(self):
        """``{name: gradflow dtype}`` of every tensor in the checkpoint (the dtype's name,
        such as ``"string"``, for a TensorFlow tensor gradflow has no dtype for)."""
        return {name: _dtype(d) for name, d in self._dtypes.items()}

    def has_tensor(self, name):
        """Whether the checkpoint holds a tensor called ``name``."""
        return name in self._shapes

    def get_tensor(self, name):
        """The tensor called ``name``, as a NumPy array."""
        if name not in self._shapes:
            raise CheckpointNotFoundError(
                f"checkpoint {self.path} has no tensor {name!r}; it holds "
                f"{', '.join(repr(n) for n in sorted(self._shapes))}")
        return self._read([name])[1][name]


def _dtype(name):
    try:
        return dtypes.as_dtype(name)
    except (TypeError, ValueError):
        return name


def load_checkpoint(ckpt_dir_or_file):
    """TF1's ``train.load_checkpoint``: a :class:`CheckpointReader`."""
    return CheckpointReader(ckpt_dir_or_file)


def NewCheckpointReader(filepattern):  # noqa: N802 (TF1's name)
    """TF1's ``train.NewCheckpointReader``: a :class:`CheckpointReader`."""
    return CheckpointReader(filepattern)


def list_variables(ckpt_dir_or_file):
    """TF1's ``train.list_variables``: ``[(name, shape)]`` of the checkpoint, by name."""
    return sorted(CheckpointReader(ckpt_dir_or_file).get_variable_to_shape_map().items())


def load_variable(ckpt_dir_or_file, name):
    """TF1's ``train.load_variable``: the tensor ``name`` of the checkpoint."""
    return CheckpointReader(ckpt_dir_or_file).get_tensor(name)


def init_from_checkpoint(ckpt_dir_or_file, assignment_map):
    """TF1's ``train.init_from_checkpoint``: the variables' initializers load their
    values from the checkpoint (gradflow's or TensorFlow's) instead, for warm starts
    from a trained model. Call it before ``global_variables_initializer()``.

    ``assignment_map`` maps checkpoint names to the graph's, as TF1 does:
    ``{"old/w": "new/w"}`` or ``{"old/w": variable}`` for one variable, and
    ``{"old_scope/": "new_scope/"}`` or ``{"/": "new_scope/"}`` for every variable
    under a scope, each to the tensor of the same name under the checkpoint's scope.
    A name the checkpoint lacks, or a shape or dtype that differs, raises
    ``ValueError`` and changes no initializer.
    """
    from gradflow.ops.state_ops import assign
    from gradflow.prim.registry import constant
    from gradflow.variables import Variable, global_variables

    reader = CheckpointReader(ckpt_dir_or_file)
    shapes, kinds = reader.get_variable_to_shape_map(), reader._dtypes
    by_name = {v.op.name: v for v in global_variables()}
    pairs = []
    for stored, current in assignment_map.items():
        if isinstance(current, Variable):
            pairs.append((stored, current))
        elif not isinstance(current, str):
            raise TypeError(f"init_from_checkpoint: assignment_map[{stored!r}] is "
                            f"{type(current).__name__}; expected a variable or a name")
        elif stored.endswith("/") or stored == "/":
            inner = "" if current in ("/", "") else current.rstrip("/") + "/"
            outer = "" if stored == "/" else stored
            found = [(outer + name[len(inner):], var) for name, var in by_name.items()
                     if name.startswith(inner)]
            if not found:
                raise ValueError(f"init_from_checkpoint: no variable of the graph is under "
                                 f"the scope {current!r} (assignment_map[{stored!r}])")
            pairs.extend(found)
        elif current in by_name:
            pairs.append((stored, by_name[current]))
        else:
            raise ValueError(f"init_from_checkpoint: the graph has no variable {current!r} "
                             f"(assignment_map[{stored!r}])")
    for stored, var in pairs:
        if stored not in shapes:
            raise ValueError(f"init_from_checkpoint: tensor {stored!r} (for variable "
                             f"'{var.op.name}') is not in checkpoint {reader.path}")
        if tuple(shapes[stored]) != tuple(var.shape) or kinds[stored] != var.dtype.name:
            raise ValueError(f"init_from_checkpoint: variable '{var.op.name}' is "
                             f"{var.dtype.name} {tuple(var.shape)}, tensor {stored!r} of "
                             f"checkpoint {reader.path} is {kinds[stored]} "
                             f"{tuple(shapes[stored])}")
    values = reader._read([stored for stored, _ in pairs])[1]  # one read for them all
    for stored, var in pairs:
        with var.graph.as_default(), var.graph.control_dependencies(None):
            value = constant(values[stored], dtype=var.dtype,
                             name=f"{var.op.name}/checkpoint_value")
            var.initial_value = value
            var.initializer = assign(var, value, name=f"{var.op.name}/Initializer")
