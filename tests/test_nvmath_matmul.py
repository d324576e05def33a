"""gradflow.backends.cupy.nvmath_matmul on the CPU: the planned matmul's whole life (fixed
buffers, planned once, executed with new contents, transposes, bias) against np.matmul,
run through nvmath-python's generic Matmul with MKL in a subprocess
(tests/nvmath_matmul_cpu_check.py), so this process never loads MKL's OpenMP; and the
adapter's errors for buffers it cannot use, which it raises before importing nvmath."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from gradflow.backends.cupy.nvmath_matmul import PlannedMatmul, result_shape

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


@pytest.mark.skipif(importlib.util.find_spec("nvmath") is None,
                    reason="nvmath-python is not installed (pip install 'nvmath-python[cpu]')")
def test_planned_matmul_life_on_the_cpu_matches_numpy():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, os.path.join(HERE, "nvmath_matmul_cpu_check.py")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    lines = done.stdout.splitlines()
    # 2 dtypes x 4 transpose pairs x bias or not x 2 shapes, 2 x 4 batched, 3 edge
    # shapes, free
    assert len(lines) == 2 * 4 * 2 * 2 + 2 * 4 + 3 + 1 \
        and all(x.startswith("ok ") for x in lines)


@pytest.mark.parametrize("a, b, out, bias, kwargs, message", [
    ((2, 3), (3, 4), (2, 4), None, {"transpose_b": True}, "inner dimensions differ"),
    ((2, 3), (3, 4), (4, 2), None, {}, "out has shape (4, 2), the product has (2, 4)"),
    ((2, 3), (3, 4), (2, 4), (2,), {}, "bias has shape (2,)"),
    ((2, 3, 1), (3, 4), (2, 4), None, {}, "a has shape (2, 3, 1)"),
    ((2, 2, 3), (3, 2, 4), (2, 2, 4), None, {}, "b has shape (3, 2, 4)"),  # other batch
    ((2, 2, 3), (2, 3, 4), (2, 2, 4), (4,), {}, "a has shape (2, 2, 3)"),  # batch and bias
])
def test_buffers_that_do_not_fit_are_refused_by_name(a, b, out, bias, kwargs, message):
    arrays = [np.zeros(s, np.float32) if s else None for s in (a, b, out, bias)]
    with pytest.raises(ValueError) as err:
        PlannedMatmul(*arrays[:3], bias=arrays[3], **kwargs)
    assert message in str(err.value)


def test_dtypes_must_agree_and_be_floating():
    f32, f64 = np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float64)
    with pytest.raises(TypeError, match="b is float64; all arrays must share one dtype"):
        PlannedMatmul(f32, f64, f32)
    ints = np.zeros((2, 2), np.int32)
    with pytest.raises(TypeError, match="a is int32.*float32, float64"):
        PlannedMatmul(ints, ints, ints)
    with pytest.raises(ValueError, match="C-contiguous"):
        PlannedMatmul(f32, f32, np.zeros((2, 2), np.float32, order="F"))


def test_result_shape_follows_tf1_transposes():
    assert result_shape((3, 2), (4, 3), transpose_a=True, transpose_b=True) == (2, 4)
    assert result_shape((2, 3), (3, 4)) == (2, 4)
