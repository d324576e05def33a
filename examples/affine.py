"""The first graph of the tutorials: the affine map ``y = A x + b``.

``A`` and ``b`` are Variables and ``x`` is a placeholder. The session runs
``y`` without running ``gf.global_variables_initializer()`` first: gradflow
gives each variable its initial value the first time a run needs it. With
``A = [[1, 0], [0, -1]]``, ``b = [1, 1]`` and ``x = [1, 2]`` it prints
``[ 2. -1.]``.

Run it with::

    python examples/affine.py                          # numpy (or $GRADFLOW_BACKEND)
    python examples/affine.py --backend torch
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import example_tools as tools  # noqa: E402

import gradflow as gf  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=None,
                        help="array backend (default: $GRADFLOW_BACKEND, else numpy)")
    parser.add_argument("--seed", type=int, default=0,
                        help="accepted like the other examples; nothing here is random")
    args = parser.parse_args(argv)
    tools.check_backend(parser, args.backend)  # one line, before anything is built
    return args


def main(argv=None):
    args = parse_args(argv)
    with gf.Graph().as_default():
        # Float literals: a list of Python ints would make an int32 variable,
        # and gradflow (like TF1 and the Array API) does not mix int and float.
        A = gf.Variable([[1.0, 0.0], [0.0, -1.0]], name="A")
        b = gf.Variable([1.0, 1.0], name="b")
        x = gf.placeholder(name="x")          # float32, any shape
        y = gf.add(gf.matmul(A, x), b, name="y")

        with gf.Session(backend=args.backend) as sess:  # no initializer on purpose
            result = sess.run(y, feed_dict={x: [1.0, 2.0]})
            backend = sess.backend.name

    print(result)
    return {"result": result, "backend": backend}


if __name__ == "__main__":
    main()
