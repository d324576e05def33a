"""TF1's ``tf.contrib.training.HParams``: a model's hyperparameters as named, typed values.

Each value keeps the type it was added with: setting or parsing it later converts to
that type (an int into a float hyperparameter; a float with a fractional part is
refused for an int one), as TF1 does.

>>> hp = HParams(n_embd=768, learning_rate=0.1, activation="relu")
>>> hp = hp.override_from_dict({"n_embd": 16}).parse("learning_rate=0.01,activation=tanh")
>>> hp.n_embd, hp.learning_rate
(16, 0.01)
"""

from __future__ import annotations

import json
import numbers
import re

__all__ = ["HParams"]

_ASSIGNMENT = re.compile(r"\s*([A-Za-z_]\w*)\s*=\s*(\[[^\]]*\]|[^,\[]*)\s*(?:,|$)")


class HParams:
    """Named hyperparameters (TF1 ``tf.contrib.training.HParams``): attributes, with
    ``add_hparam``, ``set_hparam``, ``del_hparam``, ``parse``, ``override_from_dict``,
    ``values``, ``get``, ``to_json`` and ``parse_json``."""

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        if hparam_def is not None:
            raise ValueError("HParams: hparam_def (a protocol buffer) is not supported; "
                             "pass the values as keyword arguments")
        self._types = {}
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        """Add hyperparameter ``name`` (a new one) with ``value``; its type is fixed now."""
        if name in self._types or hasattr(type(self), name) or name.startswith("_"):
            raise ValueError(f"HParams: hyperparameter name {name!r} is already used")
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"HParams: {name!r}: an empty list has no type to keep")
            self._types[name] = (type(value[0]), True)
        else:
            self._types[name] = (type(value), False)
        setattr(self, name, value)

    def set_hparam(self, name, value):
        """Set the existing hyperparameter ``name``, converted to its type."""
        kind, is_list = self._kind(name)
        if is_list:
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"HParams: {name!r} holds a list; got {value!r}")
            setattr(self, name, [_converted(name, kind, v) for v in value])
        elif isinstance(value, (list, tuple)):
            raise ValueError(f"HParams: {name!r} holds one value; got the list {value!r}")
        else:
            setattr(self, name, _converted(name, kind, value))

    def del_hparam(self, name):
        """Remove hyperparameter ``name`` (if it exists)."""
        if name in self._types:
            del self._types[name]
            delattr(self, name)

    def parse(self, values):
        """Set hyperparameters from ``"name=value,name=[v1,v2],..."``; each value is read
        as its hyperparameter's type. Returns self."""
        position, text = 0, values.strip()
        while position < len(text):
            match = _ASSIGNMENT.match(text, position)
            if match is None:
                raise ValueError(f"HParams.parse: cannot read {text[position:]!r} "
                                 "(expected name=value, comma-separated)")
            name, raw = match.group(1), match.group(2).strip()
            kind, is_list = self._kind(name)
            if is_list:
                if not (raw.startswith("[") and raw.endswith("]")):
                    raise ValueError(f"HParams.parse: {name!r} holds a list: write "
                                     f"{name}=[v1,v2]")
                items = [v.strip() for v in raw[1:-1].split(",") if v.strip()]
                setattr(self, name, [_parsed(name, kind, v) for v in items])
            else:
                setattr(self, name, _parsed(name, kind, raw))
            position = match.end()
        return self

    def override_from_dict(self, values_dict):
        """Set each existing hyperparameter named in ``values_dict``. Returns self."""
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def values(self):
        """The hyperparameters as a dict ``{name: value}``."""
        return {name: getattr(self, name) for name in self._types}

    def get(self, key, default=None):
        """The value of ``key``, or ``default`` where there is no such hyperparameter."""
        return getattr(self, key) if key in self._types else default

    def to_json(self, indent=None, separators=None, sort_keys=False):
        """The hyperparameters as a JSON object."""
        return json.dumps(self.values(), indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def parse_json(self, values_json):
        """Set existing hyperparameters from a JSON object. Returns self."""
        return self.override_from_dict(json.loads(values_json))

    def set_model_structure(self, model_structure):
        """Keep ``model_structure`` (any object) with the hyperparameters."""
        self._model_structure = model_structure

    def get_model_structure(self):
        """What ``set_model_structure`` (or the constructor) kept."""
        return self._model_structure

    def __contains__(self, key):
        return key in self._types

    def __repr__(self):
        return f"HParams({self.values()!r})"

    __str__ = __repr__

    def _kind(self, name):
        if name not in self._types:
            raise KeyError(f"HParams: no hyperparameter named {name!r}; add it with "
                           "add_hparam")
        return self._types[name]


def _converted(name, kind, value):
    """``value`` as a ``kind`` hyperparameter's value (TF1's rules)."""
    if value is None or kind is type(None):
        return value
    if kind is bool:
        if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
            raise ValueError(f"HParams: {name!r} is a bool; got {value!r}")
        return bool(value)
    if issubclass(kind, numbers.Integral):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or value != int(value):
            raise ValueError(f"HParams: {name!r} is an int; got {value!r}")
        return int(value)
    if issubclass(kind, numbers.Real):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"HParams: {name!r} is a float; got {value!r}")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f"HParams: {name!r} is a string; got {value!r}")
        return value
    return value


def _parsed(name, kind, text):
    """The text ``text`` read as a ``kind`` hyperparameter's value."""
    if kind is bool:
        lowered = text.lower()
        if lowered not in ("true", "false", "1", "0"):
            raise ValueError(f"HParams.parse: {name!r} is a bool; got {text!r}")
        return lowered in ("true", "1")
    if kind is str or kind is type(None):
        return text
    try:
        number = float(text) if issubclass(kind, numbers.Real) else text
    except ValueError:
        article = "an" if kind.__name__[0] in "aeiou" else "a"
        raise ValueError(f"HParams.parse: {name!r} is {article} {kind.__name__}; got "
                         f"{text!r}") from None
    return _converted(name, kind, number)
