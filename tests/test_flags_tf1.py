"""``tf.flags`` / ``tf.app.flags`` and ``tf.app.run`` as TF1 programs use them.

The expected values are TensorFlow 2.21's: the same statements were run once with
``import tensorflow.compat.v1 as tf`` (TF 2.21.0 CPU, absl-py 2.5.1) and what they printed
is pasted here as literals; the help screens and exit statuses of ``tf.app.run`` were read
the same way from a script run with ``--help``, ``--helpfull``, ``--only_check_args``, a
flag without its value and a ``UsageError``. One difference is deliberate and marked: a flag
read before any parse parses ``sys.argv`` leaving undefined flags alone (TF 2.21 raises).
"""

from __future__ import annotations

import enum
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gradflow as tf

NAMES = Path(__file__).parent / "data" / "tf_compat_v1_names.txt"


class Color(enum.Enum):
    RED = 1
    BLUE = 2


def test_every_name_of_tf_flags_is_there():
    names = [line.strip()[len("flags."):] for line in NAMES.read_text().splitlines()
             if line.startswith("flags.")]
    names.remove("tf_decorator")  # TensorFlow's own helper, not a flags name
    assert len(names) == 66 and not [n for n in names if not hasattr(tf.flags, n)]
    assert tf.app.flags is tf.flags
    import absl.flags

    wrapped = {"FLAGS", "DEFINE_string", "DEFINE_integer", "DEFINE_float", "DEFINE_boolean",
               "DEFINE_bool"}
    assert all(getattr(tf.flags, n) is getattr(absl.flags, n) for n in set(names) - wrapped)
    assert tf.flags.FLAGS.__dict__["_wrapped"] is absl.flags.FLAGS


def test_flag_kinds_aliases_and_old_keywords(caplog):
    f, fv = tf.flags, tf.flags.FlagValues()
    f.DEFINE_multi_string("tag", ["a"], "tags", flag_values=fv)
    f.DEFINE_multi_integer("size", [1], "sizes", flag_values=fv, lower_bound=0)
    f.DEFINE_multi_float("rate", None, "rates", flag_values=fv)
    f.DEFINE_multi_enum("kind", ["x"], ["x", "y", "z"], "kinds", flag_values=fv)
    f.DEFINE_enum_class("color", "red", Color, "color", flag_values=fv)
    f.DEFINE_multi_enum_class("colors", ["RED"], Color, "colors", flag_values=fv)
    f.DEFINE_spaceseplist("words", "p q", "words", flag_values=fv)
    f.DEFINE_string("out", "o", "out", flag_values=fv)
    f.DEFINE_alias("o", "out", flag_values=fv)
    f.DEFINE_integer("steps", 5, "steps", flag_values=fv)
    with caplog.at_level(logging.WARNING):
        f.DEFINE_string(flag_name="old", default_value="d", docstring="old", flag_values=fv)
    assert "deprecated" in caplog.text
    holder = f.DEFINE_boolean("verbose", False, "v", flag_values=fv)
    rest = fv(["prog", "--tag=b", "--tag", "c", "--size=2", "--size=3", "--rate=0.5",
               "--kind=z", "--kind=y", "--color=BLUE", "--colors=blue", "--colors=red",
               "--words=u v  w", "-o", "file", "--verbose", "pos"])
    assert rest == ["prog", "pos"]
    assert (fv.tag, fv.size, fv.rate, fv.kind) == (["b", "c"], [2, 3], [0.5], ["z", "y"])
    assert fv.color is Color.BLUE and fv.colors == [Color.BLUE, Color.RED]
    assert fv.words == ["u", "v", "w"] and fv.out == "file" and fv.o == "file"
    assert fv.old == "d" and fv.verbose is True
    assert (holder.value, holder.name, holder.default) == (True, "verbose", False)
    assert isinstance(holder, f.FlagHolder)
    assert (fv["tag"].present, fv["steps"].present, fv["steps"].using_default_value) == (
        2, 0, True)
    assert fv["size"].serialize() == "--size=2\n--size=3"
    assert fv["words"].serialize() == "--words=u v w"
    assert fv["color"].serialize() == "--color=blue"
    assert list(f.flag_dict_to_args({"a": 1, "b": True, "c": False, "d": [1, 2], "e": None})
                ) == ["--a=1", "--b", "--noc", "--d=1,2", "--e"]
    for bad, message in ((["p", "--size=-1"], "flag --size=-1: -1 is not a non-negative integer"),
                         (["p", "--kind=w"], "flag --kind=w: value should be one of <x|y|z>"),
                         (["p", "--color=green"],
                          "flag --color=green: value should be one of <red|blue>")):
        with pytest.raises(f.IllegalFlagValueError) as info:
            fv(bad)
        assert str(info.value) == message
    with pytest.raises(TypeError, match="got multiple values for argument 'default'"):
        f.DEFINE_integer("n", 1, "n", default_value=2, flag_values=fv)
    with pytest.raises(TypeError, match="both default_value= and default="):
        f.DEFINE_integer(name="n", default=1, help="n", default_value=2, flag_values=fv)


def test_validators_required_and_exclusive_flags():
    f, fv = tf.flags, tf.flags.FlagValues()
    f.DEFINE_integer("lo", 0, "lo", flag_values=fv)
    f.DEFINE_integer("hi", 10, "hi", flag_values=fv)
    f.DEFINE_string("req", None, "required", flag_values=fv)
    f.DEFINE_bool("a", False, "a", flag_values=fv)
    f.DEFINE_bool("b", False, "b", flag_values=fv)
    f.register_validator("lo", lambda v: v >= 0, message="lo must be >= 0", flag_values=fv)

    @f.multi_flags_validator(["lo", "hi"], message="lo must be below hi", flag_values=fv)
    def _below(values):
        return values["lo"] < values["hi"]

    f.mark_flag_as_required("req", flag_values=fv)
    f.mark_bool_flags_as_mutual_exclusive(["a", "b"], flag_values=fv)
    assert fv(["p", "--req=r"]) == ["p"] and (fv.lo, fv.req) == (0, "r")
    assert fv(["p"]) == ["p"] and fv.req == "r"  # a later parse keeps what was set
    errors = {"--lo=-1": "flag --lo=-1: lo must be >= 0",
              "--lo=20": "flags lo=20, hi=10: lo must be below hi"}
    for arg, message in errors.items():
        with pytest.raises(f.IllegalFlagValueError) as info:
            fv(["p", "--req=r", arg])
        assert str(info.value) == message
    with pytest.raises(f.IllegalFlagValueError) as info:
        fv(["p", "--req=r", "--a", "--b"])
    assert str(info.value).replace("\n", " | ") == (
        "flags lo=20, hi=10: lo must be below hi | flags a=True, b=True: At most one of "
        "(a, b) must be True.")
    with pytest.raises(f.IllegalFlagValueError, match="flag --lo=-5: lo must be >= 0"):
        fv.lo = -5
    fresh = tf.flags.FlagValues()
    f.DEFINE_string("need", None, "required", flag_values=fresh)
    f.mark_flag_as_required("need", flag_values=fresh)
    with pytest.raises(f.IllegalFlagValueError, match="--need must have a value"):
        fresh(["p"])


def test_set_default_override_value_and_unparsed_access():
    f, fv = tf.flags, tf.flags.FlagValues()
    holder = f.DEFINE_integer("n", 1, "n", flag_values=fv)
    f.set_default(holder, 7)
    fv(["p"])
    assert (fv.n, holder.value, fv["n"].default) == (7, 7, 7)
    f.override_value(holder, 9)
    assert (fv.n, fv["n"].present) == (9, 0)
    unparsed = f.DEFINE_integer("x", 1, "x", flag_values=tf.flags.FlagValues())
    with pytest.raises(f.UnparsedFlagAccessError,
                       match="Trying to access flag --x before flags were parsed."):
        unparsed.value  # noqa: B018
    with pytest.raises(f.FlagNameConflictsWithMethodError):
        f.DEFINE_integer("is_parsed", 1, "x", flag_values=tf.flags.FlagValues())


def test_flag_files(tmp_path):
    path = tmp_path / "args.cfg"
    path.write_text("# comment\n--steps=42\n--out=fromfile\n")
    f, fv = tf.flags, tf.flags.FlagValues()
    f.DEFINE_integer("steps", 5, "steps", flag_values=fv)
    f.DEFINE_string("out", "o", "out", flag_values=fv)
    assert fv(["p", f"--flagfile={path}", "--out=cli"]) == ["p"]
    assert (fv.steps, fv.out) == (42, "cli")
    with pytest.raises(f.CantOpenFlagFileError):
        fv(["p", f"--flagfile={tmp_path / 'missing.cfg'}"])


def test_parsers_serializers_and_help_text():
    f = tf.flags
    assert f.get_help_width() > 0
    assert f.text_wrap("aaa bbb ccc", length=8, indent="  ") == "  aaa\n  bbb\n  ccc"
    assert f.doc_to_help("  First line.\n\n  More text here.\n") == "First line.\n\nMore text here."
    assert f.IntegerParser(lower_bound=0).parse("0x10") == 16
    assert f.FloatParser().parse("1e-2") == 0.01 and f.BooleanParser().parse("false") is False
    assert f.ListParser().parse("a, b,c") == ["a", "b", "c"]
    assert f.WhitespaceSeparatedListParser().parse("a  b\tc") == ["a", "b", "c"]
    assert f.EnumParser(["A", "b"], case_sensitive=False).parse("a") == "A"
    assert f.CsvListSerializer(",").serialize(["x", "y"]) == "x,y"
    assert f.ListSerializer(";").serialize([1, 2]) == "1;2"


def test_task_level_status_message_logs_an_error(caplog):
    with caplog.at_level(logging.ERROR, logger="gradflow"):
        tf.logging.TaskLevelStatusMessage("task 3 of 8 done")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("ERROR", "task 3 of 8 done")]


SCRIPT = '''
import gradflow as tf

tf.app.flags.DEFINE_string("name", "run", "a name")
FLAGS = tf.app.flags.FLAGS


def main(argv):
    print("argv", argv[1:], FLAGS.name)
    if "--usage" in argv:
        from absl import app
        raise app.UsageError("wrong use", exitcode=3)


if __name__ == "__main__":
    if "--no-run" in __import__("sys").argv:
        print("read", FLAGS.name)  # no app.run: the first read parses sys.argv
    else:
        tf.app.run()
'''


def test_app_run_help_screens_and_exit_statuses(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = dict(os.environ, GRADFLOW_BACKEND="numpy")

    def run(*args):
        done = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                              text=True, env=env, timeout=120)
        return done.returncode, done.stdout, done.stderr

    code, out, _ = run("--name=x", "extra", "--unknown")
    assert (code, out) == (0, "argv ['extra', '--unknown'] x\n")
    code, out, _ = run("--help")
    assert code == 1 and "prog.py:\n  --name: a name\n    (default: 'run')\n" in out
    assert out.rstrip().endswith("Try --helpfull to get a list of all flags.")
    code, out, _ = run("--helpfull")
    assert code == 1 and "prog.py:\n  --name: a name" in out
    assert "absl.app:\n  -?,--[no]help: show this help" in out and "--flagfile" in out
    assert run("--only_check_args", "--name=y") == (0, "", "")
    code, out, err = run("--name")
    assert (code, out) == (1, "") and "FATAL Flags parsing error: Missing value for flag " \
        "--name" in err
    code, out, err = run("--usage")
    assert code == 3 and "wrong use" in err and "prog.py:\n  --name: a name" in err
    # no app.run: the first read parses sys.argv, leaving undefined flags (--no-run) alone;
    # TF 2.21's parse there raises UnrecognizedFlagError for them (Jupyter's -f, say)
    assert run("--no-run", "--name=z")[:2] == (0, "read z\n")


def test_parse_flags_of_tf_1_4_before_reading_flags(monkeypatch):
    # programs written for TF <= 1.4 call FLAGS._parse_flags() themselves, then list
    # FLAGS.__flags (a gradflow addition: TF 1.5 and later, 2.21 too, have no _parse_flags)
    flags = tf.flags._FlagValuesWrapper(tf.flags.FlagValues())
    tf.flags.DEFINE_integer("batch_size", 64, "batch size", flag_values=flags)
    tf.flags.DEFINE_string("checkpoint_dir", "", "where the checkpoints are", flag_values=flags)
    tf.flags.DEFINE_boolean("eval_train", False, "evaluate on the training data",
                            flag_values=flags)
    monkeypatch.setattr(sys, "argv", ["eval.py", "--eval_train", "--checkpoint_dir=runs/1/",
                                      "--not_defined=1", "rest"])
    assert flags._parse_flags() == ["--not_defined=1", "rest"]
    assert flags.is_parsed() and flags.eval_train is True
    assert (flags.checkpoint_dir, flags.batch_size) == ("runs/1/", 64)
    assert sorted(flags.__flags) == ["batch_size", "checkpoint_dir", "eval_train"]
    assert flags._parse_flags(["--batch_size=8"]) == [] and flags.batch_size == 8
    with pytest.raises(tf.flags.IllegalFlagValueError):
        flags._parse_flags(["--batch_size=many"])
