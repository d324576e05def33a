"""TF1's ``tf.app``: ``run(main)`` and the ``flags`` module (absl-style flags on argparse).

>>> flags = gf.app.flags
>>> flags.DEFINE_integer("epochs", 10, "how many passes over the data")
>>> FLAGS = flags.FLAGS
>>> def main(argv):
...     print(FLAGS.epochs)        # from --epochs=N on the command line, else 10
>>> gf.app.run(main)               # parses the flags, calls main(remaining argv), exits

``FLAGS.name`` parses ``sys.argv`` the first time a flag is read (so scripts
that never call ``app.run`` see their flags too); arguments that are not
defined flags are left alone, for ``main``. Flags are written
``--name=value``, ``--name value`` or ``-name=value``; booleans also as
``--name`` / ``--noname``.
"""

from __future__ import annotations

import argparse
import sys
import types

__all__ = ["flags", "run"]


class Error(Exception):
    """A flag definition or value is wrong."""


class DuplicateFlagError(Error):
    """A flag was defined twice."""


class IllegalFlagValueError(Error, ValueError):
    """A flag's value on the command line (or its default) does not parse."""


class UnrecognizedFlagError(Error, AttributeError):
    """No flag of that name is defined."""


_TRUE = ("true", "t", "1")
_FALSE = ("false", "f", "0")


def _parse_bool(text):
    if isinstance(text, bool):
        return text
    if isinstance(text, str):
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
    if isinstance(text, int) and text in (0, 1):
        return bool(text)
    raise ValueError(f"expected true/false, got {text!r}")


def _parse_list(text):
    if isinstance(text, (list, tuple)):
        return list(text)
    return [part.strip() for part in text.split(",") if part.strip()] if text else []


class Flag:
    """One defined flag: ``name``, ``default``, ``help`` and its current ``value``."""

    def __init__(self, name, default, help_text, parse, kind, choices=None):
        self.name, self.help, self.kind, self.choices = name, help_text, kind, choices
        self._parse = parse
        self.default = self.convert(default) if default is not None else None
        self.value = self.default
        self.present = False  # given on the command line at the last parse
        self.assigned = False  # set by ``FLAGS.name = value``
        self.seen = False  # read from the command line at least once

    def convert(self, value):
        """``value`` (a command-line string, or a Python value) as the flag's type."""
        try:
            parsed = self._parse(value)
        except (TypeError, ValueError) as err:
            raise IllegalFlagValueError(f"flag --{self.name}={value!r}: {err}") from None
        if self.choices is not None and parsed not in self.choices:
            raise IllegalFlagValueError(f"flag --{self.name}={value!r}: value should be one "
                                        f"of <{'|'.join(self.choices)}>")
        return parsed

    def __repr__(self) -> str:
        return f"<Flag --{self.name}={self.value!r} ({self.kind})>"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise IllegalFlagValueError(message)


class FlagValues:
    """The defined flags and their values (``flags.FLAGS`` is the global one).

    ``FLAGS.name`` reads a value (parsing ``sys.argv`` on first use);
    ``FLAGS.name = v`` sets it; ``FLAGS(argv)`` parses ``argv`` now and returns
    ``[argv[0]] + the arguments that are not defined flags``.
    """

    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_argv", None)  # what the last parse read

    # -- definitions ---------------------------------------------------------------
    def _define(self, flag):
        if flag.name in self._flags:
            raise DuplicateFlagError(f"the flag '{flag.name}' is defined twice")
        if not flag.name.isidentifier():
            raise Error(f"flag names must be Python identifiers, got {flag.name!r}")
        self._flags[flag.name] = flag
        return flag

    # -- reading and writing -------------------------------------------------------
    def __getattr__(self, name):
        flags = self.__dict__["_flags"]
        if name == "__flags":  # old TF: FLAGS.__flags, a dict of the values
            return self.flag_values_dict()
        if name not in flags:
            raise UnrecognizedFlagError(f"no flag named {name!r} is defined")
        self._parse_if_needed(flags[name])
        return flags[name].value

    def __setattr__(self, name, value):
        flag = self._flags.get(name)
        if flag is None:
            raise UnrecognizedFlagError(f"no flag named {name!r} is defined")
        flag.value = value
        flag.assigned = True

    def __getitem__(self, name) -> Flag:
        if name not in self._flags:
            raise UnrecognizedFlagError(f"no flag named {name!r} is defined")
        self._parse_if_needed(self._flags[name])
        return self._flags[name]

    def __contains__(self, name) -> bool:
        return name in self._flags

    def __iter__(self):
        return iter(list(self._flags))

    def __dir__(self):
        return list(self._flags) + list(super().__dir__())

    def flag_values_dict(self) -> dict:
        """``{name: value}`` of every flag."""
        for flag in list(self._flags.values()):
            self._parse_if_needed(flag)
        return {name: flag.value for name, flag in self._flags.items()}

    def get_flag_value(self, name, default):
        return getattr(self, name) if name in self._flags else default

    def is_parsed(self) -> bool:
        return self._argv is not None

    def mark_as_parsed(self):
        """Take the values as they are: no parse of ``sys.argv`` on the next read."""
        for flag in self._flags.values():
            flag.seen = True
        object.__setattr__(self, "_argv", [sys.argv[0] if sys.argv else ""])

    def unparse_flags(self):
        """Every flag back to its default, to be parsed again on next use."""
        for flag in self._flags.values():
            flag.value, flag.present, flag.assigned = flag.default, False, False
            flag.seen = False
        object.__setattr__(self, "_argv", None)

    # -- parsing -------------------------------------------------------------------
    def _parse_if_needed(self, flag):
        """Parse the command line (the last one parsed, else ``sys.argv``) if ``flag``
        has not been read from it yet: the first read, or a flag defined since."""
        if not flag.seen and not flag.assigned:
            argv = self._argv if self._argv is not None else sys.argv
            self._parse(argv, known_only=True, explicit=False)

    def __call__(self, argv, known_only=False):
        """Parse ``argv`` (its first item is the program) and return what is left."""
        if isinstance(argv, str):
            raise TypeError("FLAGS(argv): argv must be a list of strings, not a string")
        return self._parse(list(argv), known_only=known_only, explicit=True)

    def _parse(self, argv, known_only, explicit):
        argv = list(argv) if argv else [""]
        parser = _Parser(prog=argv[0] or None, add_help=False, allow_abbrev=False)
        unset = object()
        bools = {name for name, f in self._flags.items() if f.kind == "bool"}
        for name, flag in self._flags.items():
            if flag.kind == "bool":
                parser.add_argument(f"--{name}", f"-{name}", dest=name, action="store_const",
                                    const=True, default=unset)
                parser.add_argument(f"--no{name}", f"-no{name}", dest=name,
                                    action="store_const", const=False, default=unset)
            else:
                parser.add_argument(f"--{name}", f"-{name}", dest=name, default=unset)
        args = [self._bool_form(a, bools) for a in argv[1:]]
        namespace, rest = parser.parse_known_args(args)
        if not known_only:
            unknown = [a for a in rest if a.startswith("-") and a not in ("-", "--")]
            if unknown:
                raise UnrecognizedFlagError(f"unknown command line flag '{unknown[0]}'")
        for name, flag in self._flags.items():
            given = getattr(namespace, name)
            if flag.assigned and not explicit:
                continue
            flag.seen = True
            flag.present = given is not unset
            flag.value = flag.default if given is unset else \
                (given if flag.kind == "bool" else flag.convert(given))
            flag.assigned = False
        object.__setattr__(self, "_argv", argv)
        return argv[:1] + [a for a in rest if a != "--"]

    @staticmethod
    def _bool_form(arg, bools):
        """``--flag=false`` as ``--noflag``, ``-flag=true`` as ``--flag`` (booleans)."""
        if not arg.startswith("-") or "=" not in arg:
            return arg
        name, _, text = arg.lstrip("-").partition("=")
        if name not in bools:
            return arg
        try:
            return f"--{name}" if _parse_bool(text) else f"--no{name}"
        except ValueError:
            raise IllegalFlagValueError(f"flag --{name}: expected true/false, got "
                                        f"{text!r}") from None

    def help_text(self, program="") -> str:
        lines = [f"usage: {program} [flags]", "", "flags:"]
        for name, flag in sorted(self._flags.items()):
            lines.append(f"  --{name}: {flag.help}")
            lines.append(f"    (default: {flag.default!r})")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<FlagValues {sorted(self._flags)}>"


FLAGS = FlagValues()


def _definer(kind, parse, doc):
    def define(name, default, help=None, flag_values=FLAGS, **kwargs):  # noqa: A002
        lower, upper = kwargs.pop("lower_bound", None), kwargs.pop("upper_bound", None)

        def bounded(text):
            value = parse(text)
            if lower is not None and value < lower:
                raise ValueError(f"{value} is less than the lower bound {lower}")
            if upper is not None and value > upper:
                raise ValueError(f"{value} is greater than the upper bound {upper}")
            return value

        return flag_values._define(Flag(name, default, help or "", bounded, kind))

    define.__doc__ = doc
    define.__name__ = define.__qualname__ = f"DEFINE_{kind}"
    return define


def _parse_int(text):
    if isinstance(text, bool) or isinstance(text, float):
        raise ValueError(f"expected an integer, got {text!r}")
    return int(text, 0) if isinstance(text, str) else int(text)


DEFINE_string = _definer("string", str, "Define a string flag: ``--name=text``.")
DEFINE_integer = _definer("integer", _parse_int,
                          "Define an integer flag (``lower_bound``/``upper_bound`` optional).")
DEFINE_float = _definer("float", float,
                        "Define a float flag (``lower_bound``/``upper_bound`` optional).")
DEFINE_boolean = _definer("bool", _parse_bool,
                          "Define a boolean flag: ``--name``, ``--noname``, ``--name=false``.")
DEFINE_bool = DEFINE_boolean
DEFINE_list = _definer("list", _parse_list, "Define a comma-separated list flag.")


def DEFINE_enum(name, default, enum_values, help=None, flag_values=FLAGS):  # noqa: A002, N802
    """Define a string flag whose value must be one of ``enum_values``."""
    return flag_values._define(Flag(name, default, help or "", str, "enum",
                                    choices=list(enum_values)))


flags = types.ModuleType("gradflow.app.flags", "absl-style flags (TF1 ``tf.app.flags``).")
for _name, _value in (("FLAGS", FLAGS), ("FlagValues", FlagValues), ("Flag", Flag),
                      ("Error", Error), ("DuplicateFlagError", DuplicateFlagError),
                      ("IllegalFlagValueError", IllegalFlagValueError),
                      ("UnrecognizedFlagError", UnrecognizedFlagError),
                      ("DEFINE_string", DEFINE_string), ("DEFINE_integer", DEFINE_integer),
                      ("DEFINE_float", DEFINE_float), ("DEFINE_boolean", DEFINE_boolean),
                      ("DEFINE_bool", DEFINE_bool), ("DEFINE_list", DEFINE_list),
                      ("DEFINE_enum", DEFINE_enum)):
    setattr(flags, _name, _value)
sys.modules[flags.__name__] = flags  # so `import gradflow.app.flags` works too

_HELP = ("-h", "--help", "-help", "--helpfull", "-helpfull")


def run(main=None, argv=None):
    """Parse the flags from ``argv`` (default ``sys.argv``), call
    ``main(remaining argv)`` (default: the ``main`` of the ``__main__`` module) and
    exit with what it returns, as TF1's ``tf.app.run`` does. ``--help`` lists the
    flags; a bad flag value prints the error and exits with status 1."""
    argv = list(sys.argv if argv is None else argv)
    if any(arg in _HELP for arg in argv[1:]):
        print(FLAGS.help_text(argv[0] if argv else ""))
        sys.exit(0)
    try:
        remaining = FLAGS(argv, known_only=True)
    except Error as err:
        print(f"FATAL Flags parsing error: {err}", file=sys.stderr)
        sys.exit(1)
    if main is None:
        main = getattr(sys.modules["__main__"], "main", None)
        if main is None:
            raise ValueError("app.run: no main given, and the __main__ module has no main()")
    sys.exit(main(remaining))
