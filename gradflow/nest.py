"""TF1's ``tf.nest``: nested structures of lists, tuples, namedtuples and dicts.

A list, a tuple (a namedtuple too) or a mapping is structure; anything else (a tensor,
a number, a string, ``None``) is a leaf. Mappings are walked in sorted key order, and
``pack_sequence_as`` rebuilds them with their own key order, as TensorFlow does.

>>> gf.nest.flatten({"b": [1, 2], "a": (3,)})
[3, 1, 2]
>>> gf.nest.map_structure(lambda v: v * 10, {"a": (1, 2)})
{'a': (10, 20)}
"""

from __future__ import annotations

import collections.abc


def is_nested(seq) -> bool:
    """Whether ``seq`` is structure (a list, a tuple or a mapping), not a leaf."""
    return isinstance(seq, (list, tuple, collections.abc.Mapping))


def _sorted_keys(mapping):
    try:
        return sorted(mapping)
    except TypeError:
        raise TypeError("nest only supports dicts with sortable keys.") from None


def _children(seq):
    """The items of the structure ``seq``, mappings in sorted key order."""
    if isinstance(seq, collections.abc.Mapping):
        return [seq[k] for k in _sorted_keys(seq)]
    return list(seq)


def flatten(structure, expand_composites=False):
    """The leaves of ``structure``, depth first (TF1 ``tf.nest.flatten``); a leaf gives
    ``[leaf]``."""
    if not is_nested(structure):
        return [structure]
    return [leaf for child in _children(structure) for leaf in flatten(child)]


def _is_namedtuple(seq) -> bool:
    return isinstance(seq, tuple) and hasattr(type(seq), "_fields")


def _rebuild(template, items):
    """A structure of ``template``'s kind holding ``items`` (in sorted-key order)."""
    if isinstance(template, collections.abc.Mapping):
        by_key = dict(zip(_sorted_keys(template), items))
        pairs = [(k, by_key[k]) for k in template]
        if isinstance(template, collections.defaultdict):
            out = collections.defaultdict(template.default_factory)
            out.update(pairs)
            return out
        return type(template)(pairs)
    if _is_namedtuple(template):
        return type(template)(*items)
    return type(template)(items)


def _count(structure) -> int:
    return len(flatten(structure))


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """``flat_sequence`` arranged as ``structure`` (TF1 ``tf.nest.pack_sequence_as``),
    the inverse of ``flatten``; ``ValueError`` when the counts differ."""
    if not is_nested(flat_sequence):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence!r}\ninto a structure, "
                        "but found incompatible type `"
                        f"{type(flat_sequence).__name__}` instead.")
    flat = list(flat_sequence)
    if not is_nested(structure):
        if len(flat) != 1:
            raise ValueError(f"The target structure is of type `{type(structure).__name__}`"
                             f"\n  {structure!r}\nHowever the input is a sequence "
                             f"({type(flat_sequence).__name__}) of length {len(flat)}.")
        return flat[0]
    if _count(structure) != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {_count(structure)} "
                         f"atoms, but flat_sequence had {len(flat)} items. Structure: "
                         f"{structure!r}, flat_sequence: {flat!r}.")
    leaves = iter(flat)

    def build(s):
        if not is_nested(s):
            return next(leaves)
        return _rebuild(s, [build(c) for c in _children(s)])

    return build(structure)


def _same_type(a, b) -> bool:
    if type(a) is type(b):
        return True
    if _is_namedtuple(a) and _is_namedtuple(b):
        return type(a).__name__ == type(b).__name__ and a._fields == b._fields
    both_mappings = isinstance(a, collections.abc.Mapping) and \
        isinstance(b, collections.abc.Mapping)
    return both_mappings


def _check_same(a, b, check_types, where):
    if is_nested(a) != is_nested(b):
        raise ValueError("The two structures don't have the same nested structure.\n\n"
                         f"First structure: {where[0]!r}\n\nSecond structure: {where[1]!r}"
                         f"\n\nMore specifically: Substructure {a!r} and {b!r} are not "
                         "both nested.")
    if not is_nested(a):
        return
    if check_types and not _same_type(a, b):
        raise TypeError("The two structures don't have the same sequence type. Input "
                        f"structure has type {type(a)!r}, while shallow structure has type "
                        f"{type(b)!r}.")
    if len(a) != len(b):
        raise ValueError("The two structures don't have the same nested structure.\n\n"
                         f"First structure: {where[0]!r}\n\nSecond structure: {where[1]!r}"
                         f"\n\nMore specifically: Substructure {a!r} has length {len(a)}, "
                         f"while {b!r} has length {len(b)}")
    if isinstance(a, collections.abc.Mapping) and set(a) != set(b):
        raise ValueError("The two dictionaries don't have the same set of keys. First "
                         f"structure has keys {sorted(a)}, while second structure has keys "
                         f"{sorted(b)}.")
    for x, y in zip(_children(a), _children(b)):
        _check_same(x, y, check_types, where)


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raise unless ``nest1`` and ``nest2`` nest the same way (TF1
    ``tf.nest.assert_same_structure``): ``ValueError`` for another shape of nesting or
    other dict keys, ``TypeError`` (with ``check_types``) for another kind of sequence
    (a list where the other has a tuple)."""
    _check_same(nest1, nest2, check_types, (nest1, nest2))


def map_structure(func, *structure, **kwargs):
    """``func`` applied to the leaves of ``structure`` (several structures of one shape
    give ``func`` one leaf of each), in the first structure's shape (TF1
    ``tf.nest.map_structure``); ``check_types`` (default true) as in
    ``assert_same_structure``."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func!r}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.pop("check_types", True)
    kwargs.pop("expand_composites", None)
    if kwargs:
        raise ValueError("Only valid keyword arguments are `check_types` and "
                         f"`expand_composites`, not: `{', '.join(sorted(kwargs))}`")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    columns = zip(*[flatten(s) for s in structure])
    return pack_sequence_as(structure[0], [func(*leaves) for leaves in columns])


__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure",
           "pack_sequence_as"]
