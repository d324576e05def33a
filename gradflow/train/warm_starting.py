"""TF1's ``tf.train.warm_start`` and ``tf.train.VocabInfo``: the initializers of a model's
variables load their values from a checkpoint (gradflow's or TensorFlow's) instead,
renamed, and with the rows (or columns) of a vocabulary remapped to a new vocabulary.

>>> gf.train.warm_start("old/model.ckpt", vars_to_warm_start=".*",
...     var_name_to_vocab_info={"embedding": gf.train.VocabInfo(
...         new_vocab="new.txt", new_vocab_size=5000, num_oov_buckets=1,
...         old_vocab="old.txt")},
...     var_name_to_prev_var_name={"embedding": "old_embedding"})
>>> sess.run(gf.global_variables_initializer())   # loads them
"""

from __future__ import annotations

import collections

import numpy as np

from gradflow import gfile
from gradflow.graph import get_default_graph
from gradflow.ops.math_ops import where
from gradflow.ops.state_ops import assign
from gradflow.prim.registry import constant
from gradflow.train.checkpoint_reader import CheckpointReader, init_from_checkpoint
from gradflow.variables import GraphKeys, Variable

__all__ = ["VocabInfo", "warm_start"]

VocabInfo = collections.namedtuple("VocabInfo", [
    "new_vocab", "new_vocab_size", "num_oov_buckets", "old_vocab", "old_vocab_size",
    "backup_initializer", "axis"])
VocabInfo.__new__.__defaults__ = (-1, None, 0)
VocabInfo.__doc__ = (
    "How a variable's rows (``axis=0``) or columns (``axis=1``) follow a vocabulary: the "
    "first ``new_vocab_size`` words of the file ``new_vocab`` and ``num_oov_buckets`` more, "
    "taken from the checkpoint's rows of the same words in the file ``old_vocab`` (its "
    "first ``old_vocab_size``, or all with -1); the others from ``backup_initializer`` "
    "(zeros if None).")


def _grouped(vars_to_warm_start):
    """``{name: variable}`` of the variables ``vars_to_warm_start`` selects, as TF1."""
    graph = get_default_graph()
    if vars_to_warm_start is None or isinstance(vars_to_warm_start, str):
        found = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=vars_to_warm_start)
    elif isinstance(vars_to_warm_start, list) and all(isinstance(v, str)
                                                      for v in vars_to_warm_start):
        found = [v for scope in vars_to_warm_start
                 for v in graph.get_collection(GraphKeys.GLOBAL_VARIABLES, scope=scope)]
    elif isinstance(vars_to_warm_start, list) and all(isinstance(v, Variable)
                                                      for v in vars_to_warm_start):
        found = vars_to_warm_start
    else:
        raise ValueError("warm_start: vars_to_warm_start must be a regular expression, a "
                         "list of them, or a list of variables")
    return {v.op.name: v for v in found}


def _words(path, size):
    with gfile.GFile(path, "rb") as f:
        words = f.read().decode("utf-8").splitlines()
    return words if size is None or size < 0 else words[:size]


def _remapped(var, reader, stored, info):
    """``(values, loaded mask)`` of ``var`` with the checkpoint tensor ``stored``'s slices
    moved from ``info``'s old vocabulary to its new one."""
    axis = int(info.axis)
    if axis not in (0, 1):
        raise ValueError(f"warm_start: VocabInfo.axis must be 0 or 1, got {info.axis}")
    old = np.asarray(reader.get_tensor(stored))
    new_words = _words(info.new_vocab, info.new_vocab_size)
    if len(new_words) < info.new_vocab_size:
        raise ValueError(f"warm_start: {info.new_vocab} has {len(new_words)} words, "
                         f"new_vocab_size is {info.new_vocab_size}")
    old_index = {w: k for k, w in enumerate(_words(info.old_vocab, info.old_vocab_size))}
    shape = tuple(int(d) for d in var.shape)
    if shape[axis] != len(new_words) + info.num_oov_buckets:
        raise ValueError(f"warm_start: variable '{var.op.name}' has {shape[axis]} slices "
                         f"along axis {axis}; its VocabInfo gives "
                         f"{len(new_words) + info.num_oov_buckets}")
    values = np.zeros(shape, var.dtype.as_numpy_dtype)
    mask = np.zeros(shape, bool)
    moved = np.moveaxis(values, axis, 0)
    loaded = np.moveaxis(mask, axis, 0)
    old_slices = np.moveaxis(old, axis, 0)
    for k, word in enumerate(new_words):
        j = old_index.get(word)
        if j is not None and j < len(old_slices):
            moved[k] = old_slices[j]
            loaded[k] = True
    return values, mask


def _warm_start_with_vocab(var, ckpt, stored, info):
    reader = CheckpointReader(ckpt)
    if not reader.has_tensor(stored):
        raise ValueError(f"warm_start: tensor {stored!r} (for variable '{var.op.name}') is "
                         f"not in checkpoint {ckpt}")
    values, mask = _remapped(var, reader, stored, info)
    with var.graph.as_default(), var.graph.control_dependencies(None):
        value = constant(values, dtype=var.dtype, name=f"{var.op.name}/checkpoint_value")
        if not mask.all() and info.backup_initializer is not None:
            backup = info.backup_initializer(tuple(var.shape), dtype=var.dtype)
            value = where(constant(mask), value, backup)
        var.initial_value = value
        var.initializer = assign(var, value, name=f"{var.op.name}/Initializer")


def warm_start(ckpt_to_initialize_from, vars_to_warm_start=".*", var_name_to_vocab_info=None,
               var_name_to_prev_var_name=None):
    """Have the initializers of the variables ``vars_to_warm_start`` selects (a regular
    expression over the trainable variables, a list of them over all global variables,
    or a list of variables; None: only those with a ``VocabInfo``) load the checkpoint
    ``ckpt_to_initialize_from``'s values: of the tensor
    ``var_name_to_prev_var_name[name]`` or of the same name, remapped by
    ``var_name_to_vocab_info[name]`` where given. A name in either dict that names no
    selected variable is a ValueError, as in TF1. Call it before
    ``global_variables_initializer()``."""
    grouped = _grouped(vars_to_warm_start)
    vocab = dict(var_name_to_vocab_info or {})
    renames = dict(var_name_to_prev_var_name or {})
    for what, given in (("var_name_to_prev_var_name", renames),
                        ("var_name_to_vocab_info", vocab)):
        unused = sorted(set(given) - set(grouped))
        if unused:
            raise ValueError(f"warm_start: {what} names variables that were not selected: "
                             f"{unused}; the selected ones are {sorted(grouped)}")
    plain = {}
    for name, var in grouped.items():
        stored = renames.get(name) or name
        if name in vocab:
            _warm_start_with_vocab(var, ckpt_to_initialize_from, stored, vocab[name])
        elif vars_to_warm_start:
            if stored in plain:  # one checkpoint tensor for two variables: one map each
                init_from_checkpoint(ckpt_to_initialize_from, plain)
                plain = {}
            plain[stored] = var
    if plain:
        init_from_checkpoint(ckpt_to_initialize_from, plain)
