"""TF1's ``tf.flags`` (also ``tf.app.flags``): absl-py's flags, as TensorFlow's own is.

TensorFlow 1.5 and later define ``tf.flags`` as ``absl.flags`` with two changes, and so
does this module: ``FLAGS`` parses ``sys.argv`` the first time a flag is read before any
parse (so scripts that never call ``tf.app.run`` see their flags), and ``DEFINE_string``,
``DEFINE_integer``, ``DEFINE_float`` and ``DEFINE_boolean`` also take TF's old keyword
names ``flag_name``, ``default_value`` and ``docstring``. Everything else (``DEFINE_enum``,
``DEFINE_multi_*``, ``DEFINE_alias``, validators, ``mark_flag_as_required``, flag files,
the parser classes and errors) is absl's, so a flag behaves exactly as under TF1.

>>> flags = gf.flags
>>> flags.DEFINE_integer("epochs", 10, "how many passes over the data", lower_bound=1)
>>> flags.DEFINE_enum("mode", "train", ["train", "eval"], "what to do")
>>> FLAGS = flags.FLAGS
>>> FLAGS.epochs          # reads --epochs=N from sys.argv on first use, else 10
"""

from __future__ import annotations

import functools
import sys

from absl import flags as _absl
from absl.flags import *  # noqa: F403 - tf.flags offers every public name of absl.flags

from gradflow import tf_logging

__all__ = list(_absl.__all__)

_OLD_KEYWORDS = {"flag_name": "name", "default_value": "default", "docstring": "help"}


def _taking_old_keywords(define):
    """``define`` that also accepts TF's pre-absl keyword names."""

    @functools.wraps(define)
    def define_flag(*args, **kwargs):
        if _OLD_KEYWORDS.keys() & kwargs.keys():
            tf_logging.warning("flags: the keywords flag_name, default_value and docstring are "
                               "deprecated; TF1 and absl name them name, default and help")
        for old, new in _OLD_KEYWORDS.items():
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{define.__name__}() got both {old}= and {new}=")
                kwargs[new] = kwargs.pop(old)
        return define(*args, **kwargs)

    return define_flag


DEFINE_string = _taking_old_keywords(_absl.DEFINE_string)
DEFINE_integer = _taking_old_keywords(_absl.DEFINE_integer)
DEFINE_float = _taking_old_keywords(_absl.DEFINE_float)
DEFINE_boolean = _taking_old_keywords(_absl.DEFINE_boolean)
DEFINE_bool = DEFINE_boolean


class _FlagValuesWrapper:
    """A ``FlagValues`` that parses ``sys.argv`` (undefined flags left alone) the first
    time an attribute it does not have, such as a flag, is read before any parse."""

    def __init__(self, flag_values):
        self.__dict__["_wrapped"] = flag_values

    def __getattr__(self, name):
        wrapped = self.__dict__["_wrapped"]
        try:
            return object.__getattribute__(wrapped, name)  # a method, or __flags
        except AttributeError:
            pass
        if not wrapped.is_parsed():
            wrapped(sys.argv, known_only=True)
        return getattr(wrapped, name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_wrapped"], name, value)

    def __delattr__(self, name):
        delattr(self.__dict__["_wrapped"], name)

    def __dir__(self):
        return dir(self.__dict__["_wrapped"])

    def __getitem__(self, name):
        return self.__dict__["_wrapped"][name]

    def __setitem__(self, name, flag):
        self.__dict__["_wrapped"][name] = flag

    def __contains__(self, name):
        return name in self.__dict__["_wrapped"]

    def __len__(self):
        return len(self.__dict__["_wrapped"])

    def __iter__(self):
        return iter(self.__dict__["_wrapped"])

    def __call__(self, *args, **kwargs):
        return self.__dict__["_wrapped"](*args, **kwargs)

    def _parse_flags(self, args=None):
        """TF 1.4's ``FLAGS._parse_flags()``, which programs of that era call before reading
        flags: parse ``args`` (default ``sys.argv[1:]``), leaving undefined flags alone, and
        return those left. (TensorFlow 1.5 and later do not have it.)"""
        argv = [sys.argv[0], *(sys.argv[1:] if args is None else args)]
        return self.__dict__["_wrapped"](argv, known_only=True)[1:]

    def __str__(self):
        return str(self.__dict__["_wrapped"])

    def __repr__(self):
        return repr(self.__dict__["_wrapped"])


FLAGS = _FlagValuesWrapper(_absl.FLAGS)

# flags defined through the wrappers above belong to their caller's module (--help lists
# the main module's own flags first, as absl does for direct definitions)
_absl.disclaim_key_flags()
