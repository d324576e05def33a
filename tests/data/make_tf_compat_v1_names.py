"""Writes ``tf_compat_v1_names.txt`` beside this file: every public name of TensorFlow's
``tf.compat.v1`` and of its API submodules, one dotted name a line, as TensorFlow 2.21
lists them. Run once, where TensorFlow is installed (never in CI)::

    /tmp/bench/bin/python tests/data/make_tf_compat_v1_names.py

The file holds every name; ``tests/test_tf1_coverage.py`` leaves out what does not belong
to TF1's graph API (its rules are written and argued there), so the rules can change
without TensorFlow.

Two namespaces TensorFlow 2.21 forwards to the ``tf_keras`` package, which is not
installed beside it: ``tf.compat.v1.layers`` and ``tf.compat.v1.nn.rnn_cell``. The names
of ``nn.rnn_cell`` are read from TensorFlow's generated API file (its ``import`` lines);
for ``layers`` that file lists only ``InputSpec``, so the names are TF 1.15's documented
``tf.compat.v1.layers`` (the legacy layers and their functions), listed below.
"""

from __future__ import annotations

import inspect
import os
import re

import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
API = "tensorflow._api.v2.compat.v1."

LAYERS = """AveragePooling1D AveragePooling2D AveragePooling3D BatchNormalization Conv1D Conv2D
Conv2DTranspose Conv3D Conv3DTranspose Dense Dropout Flatten InputSpec Layer MaxPooling1D
MaxPooling2D MaxPooling3D SeparableConv1D SeparableConv2D average_pooling1d
average_pooling2d average_pooling3d batch_normalization conv1d conv2d conv2d_transpose
conv3d conv3d_transpose dense dropout flatten max_pooling1d max_pooling2d max_pooling3d
separable_conv1d separable_conv2d""".split()


def walk(module, prefix, out):
    """Every public name under ``module``; API submodules are walked (not ``compat.v1``
    and ``compat.v2``, the namespaces again), other modules (``flags`` is absl's,
    ``keras`` a package of its own) are listed as one name and, for ``flags``, their
    public names."""
    try:
        names = sorted(dir(module))
    except Exception:  # a namespace forwarded to a package that is not installed
        return
    for name in names:
        if name.startswith("_"):
            continue
        try:
            obj = getattr(module, name)
        except Exception:
            continue
        dotted = prefix + name
        out.add(dotted)
        if (inspect.ismodule(obj) and getattr(obj, "__name__", "").startswith(API)
                and dotted not in ("compat.v1", "compat.v2")):  # the namespace itself
            walk(obj, dotted + ".", out)
        elif dotted == "flags":
            out.update(f"flags.{n}" for n in dir(obj) if not n.startswith("_"))


def rnn_cell_names():
    """The names TensorFlow's generated ``nn/rnn_cell/__init__.py`` imports."""
    path = os.path.join(os.path.dirname(tf.__file__), "_api", "v2", "compat", "v1", "nn",
                        "rnn_cell", "__init__.py")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^from tensorflow\.python\.keras\S* import (\w+)", text, re.M)


def main():
    out = set()
    walk(tf.compat.v1, "", out)
    out.update(f"nn.rnn_cell.{n}" for n in rnn_cell_names())
    out.update(f"layers.{n}" for n in LAYERS)
    with open(os.path.join(HERE, "tf_compat_v1_names.txt"), "w", encoding="utf-8") as f:
        f.write(f"# public names of tf.compat.v1, TensorFlow {tf.__version__}: "
                "tests/data/make_tf_compat_v1_names.py\n")
        f.writelines(n + "\n" for n in sorted(out))
    print(len(out), "names")


if __name__ == "__main__":
    main()
