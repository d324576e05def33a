"""TF1's ``tf.app``: ``run(main)`` and the ``flags`` module (absl-py's flags, as TF1's).

>>> flags = gf.app.flags
>>> flags.DEFINE_integer("epochs", 10, "how many passes over the data")
>>> FLAGS = flags.FLAGS
>>> def main(argv):
...     print(FLAGS.epochs)        # from --epochs=N on the command line, else 10
>>> gf.app.run(main)               # parses the flags, calls main(remaining argv), exits

``run`` parses the command line as TF1's does (absl's flags; arguments that are not
defined flags are left for ``main``), with absl's ``--help``, ``--helpshort``,
``--helpfull``, ``--helpxml``, ``--only_check_args``, ``--flagfile``, ``--run_with_pdb``,
``--pdb_post_mortem`` and ``--run_with_profiling``/``--profile_file``. Unlike TF1's, it
leaves Python's logging as the program set it: TF1's ``run`` installs absl's log handler
on the root logger, which prints every ``tf.logging`` line a second time.
"""

from __future__ import annotations

import atexit
import cProfile
import pdb
import sys
import traceback

from absl import app as _absl_app

from gradflow import flags

__all__ = ["flags", "run"]

FLAGS = flags.FLAGS
sys.modules.setdefault("gradflow.app.flags", flags)  # `import gradflow.app.flags` works too


def _option(name):
    """The value of one of absl.app's own flags (defined on absl's global FLAGS)."""
    all_flags = flags._absl.FLAGS
    return all_flags[name].value if name in all_flags else None


def _parse(argv):
    """``FLAGS(argv)`` leaving undefined flags for ``main``; a bad value exits with 1."""
    try:
        return FLAGS(argv, known_only=True)
    except flags.Error as err:
        sys.stderr.write(f"FATAL Flags parsing error: {err}\n"
                         "Pass --helpshort or --helpfull to see help on flags.\n")
        sys.exit(1)


def _call_main(main, argv):
    """``main(argv)``, under pdb or a profiler when the command line asks for them."""
    if _option("run_with_pdb"):
        return pdb.runcall(main, argv)
    if _option("run_with_profiling") or _option("profile_file"):
        profiler = cProfile.Profile()
        if _option("profile_file"):
            atexit.register(profiler.dump_stats, _option("profile_file"))
        else:
            atexit.register(profiler.print_stats)
        return profiler.runcall(main, argv)
    return main(argv)


def run(main=None, argv=None):
    """Parse the flags from ``argv`` (default ``sys.argv``), call
    ``main(remaining argv)`` (default: the ``main`` of the ``__main__`` module) and
    exit with what it returns, as TF1's ``tf.app.run`` does. ``--help`` lists the main
    module's flags and ``--helpfull`` all of them (then exit with status 1, as absl
    does); a bad flag value prints the error and exits with status 1."""
    argv = list(sys.argv if argv is None else argv)
    if main is None:
        main = getattr(sys.modules["__main__"], "main", None)
        if main is None:
            raise ValueError("app.run: no main given, and the __main__ module has no main()")
    _absl_app.define_help_flags()
    remaining = _parse(argv)
    if _option("only_check_args"):
        sys.exit(0)
    try:
        sys.exit(_call_main(main, remaining))
    except _absl_app.UsageError as error:
        _absl_app.usage(shorthelp=True, detailed_error=error, exitcode=error.exitcode)
    except Exception:
        if _option("pdb_post_mortem") and sys.stdout.isatty():
            traceback.print_exc()
            pdb.post_mortem()
        raise
