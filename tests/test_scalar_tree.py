"""The scalar expressions read as trees (gradflow.prim.scalar_tree), and what the CUDA C
printer (gradflow.backends.cuda.scalar) and the ONNX export (gradflow.onnx) make of
them; the numbers of whole kernels are tests/test_cuda_kernels.py's and
tests/test_one_record_op.py's."""

from __future__ import annotations

import numpy as np
import pytest

import gradflow as gf
from gradflow.backends.cuda.scalar import cuda_expression
from gradflow.passes import PlanGraph
from gradflow.prim.registry import REGISTRY, apply, register
from gradflow.prim.scalar_tree import parse


def _ops(tree):
    return [tree.op] + [op for a in tree.args for op in _ops(a)]


_UNARY = {"negative", "exp", "log", "log1p", "sqrt", "square", "abs", "tanh", "floor", "ceil",
          "sin", "cos", "expm1", "sigmoid", "relu", "cast", "zeros_like", "ones_like",
          "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
          "gelu_tanh"}
# the attributes an op's expression reads (GELU's constants and order of operations)
_ATTRS = {"gelu_tanh": {"c": 0.7978845608028654, "k": 0.044715, "form": "gpt2"},
          "gelu_tanh_grad": {"c": 0.7978845608028654, "k": 0.044715, "form": "bert"}}
_BOOL_RESULT = {"greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
                "logical_and", "logical_or", "logical_not"}


class _Node:
    """What a scalar expression reads of a node: its op, dtype and inputs' dtypes."""

    def __init__(self, opdef, in_dtypes, dtype):
        self.opdef, self.dtype = opdef, dtype
        self.attrs = _ATTRS.get(getattr(opdef, "name", None), {})
        self.inputs = [_Node(None, (), d) for d in in_dtypes] if opdef is not None else []


def test_every_scalar_expression_of_the_registry_is_read_whole():
    """Each op's float32 expression is in the subset: no op loses its CUDA or ONNX form."""
    for name, op in REGISTRY.items():
        if op.scalar is None:
            continue
        nodes = {"where": (gf.bool, gf.float32, gf.float32),
                 "logical_and": (gf.bool,) * 2, "logical_or": (gf.bool,) * 2,
                 "logical_not": (gf.bool,)}
        dtypes = nodes.get(name) or (gf.float32,) * (1 if name in _UNARY else 2)
        node = _Node(op, dtypes, gf.bool if name in _BOOL_RESULT else gf.float32)
        args = [f"a{i}" for i in range(len(dtypes))]
        text = op.scalar(args, node)
        assert text is not None, name
        tree = parse(text, args, [d.name for d in dtypes])
        assert tree is not None and tree.dtype == node.dtype.name, (name, text)


@pytest.mark.parametrize("text,dtypes,ops,dtype", [
    ("(a0 * 2)", ["float16"], ["multiply", "arg", "const"], "float16"),  # NumPy 2's weak 2
    ("(a0 + a1)", ["float16", "float32"], ["add", "arg", "arg"], "float32"),
    ("np.maximum(a0, np.float64(1))", ["float32"], ["maximum", "arg", "const"], "float64"),
    ("(a0 if a1 < a0 < 2.5 else -a0)", ["float32", "float32"],
     ["where", "logical_and", "less", "arg", "arg", "less", "arg", "const", "arg",
      "negative", "arg"], "float32"),
    ("(not (a0 and a1))", ["bool", "bool"], ["logical_not", "logical_and", "arg", "arg"],
     "bool"),
    ("np.float32(a0)", ["bool"], ["cast", "arg"], "float32"),
])
def test_the_subset_is_read_with_numpys_dtypes(text, dtypes, ops, dtype):
    tree = parse(text, [f"a{i}" for i in range(len(dtypes))], dtypes)
    assert _ops(tree) == ops and tree.dtype == dtype


@pytest.mark.parametrize("text,dtypes", [
    ("np.arctan2(a0, a0)", ["float32"]),  # a function outside FUNCTIONS
    ("math.exp(a0)", ["float32"]),
    ("(a0 % 2)", ["float32"]),
    ("(a0 + a1)", ["bool", "bool"]),  # bool arithmetic
    ("(a0 + 1)", ["int32"]),  # integers
    ("(a0 + b)", ["float32"]),  # a name that is no input
    ("(1.0 + 2.0)", []),  # no typed value
    ("np.float16(1e6)", []),  # not finite in its dtype
    ("a0 +", ["float32"]),
])
def test_what_leaves_the_subset_is_none(text, dtypes):
    assert parse(text, [f"a{i}" for i in range(len(dtypes))], dtypes) is None


def test_float16_operations_are_rounded_one_by_one_in_cuda_c():
    x = gf.placeholder(gf.float16, (4,))
    graph = PlanGraph([gf.nn.sigmoid(x), gf.where(x > 0, x, -x)], [x])
    printed = {n.opdef.name: cuda_expression(n, [f"a{i}" for i in range(len(n.inputs))])
               for n in graph.nodes() if n.opdef.scalar is not None}
    # NumPy rounds after each float16 op; the member's own result is rounded by the kernel
    assert printed["sigmoid"] == ("(GF_ROUND_HALF((0.5f * GF_ROUND_HALF(tanhf("
                                  "GF_ROUND_HALF((0.5f * a0)))))) + 0.5f)")
    assert printed["where"] == "(a0 ? a1 : a2)"  # a choice between halves: no rounding


@pytest.fixture
def leaky_op():
    """An op whose expression casts, promotes and chooses: ``x if x > 0 else 0.1 x``
    computed in float64 and cast back."""
    name = "test_only_leaky"

    def scalar(args, node):
        x = args[0]
        return (f"np.float32({x} if {x} > np.float32(0) else np.float64(0.1) * "
                f"np.float64({x}))") if node.dtype == gf.float32 else None

    register(name, lambda xp, x: xp.where(x > 0, x, xp.astype(0.1 * xp.astype(x, xp.float64),
                                                                x.dtype)),
             lambda s, d: (s[0], d[0]), grad=None, scalar=scalar)
    try:
        yield lambda x: apply(name, [x])
    finally:
        del REGISTRY[name]


def test_casts_and_promotions_print_and_export(leaky_op, tmp_path):
    x = gf.placeholder(gf.float32, (None, 5), "x")
    y = leaky_op(x)
    node = PlanGraph([y], [x]).outputs[0]
    assert cuda_expression(node, ["a0"]) == (
        "((float)(((a0 > 0.0f) ? a0 : (0.1 * ((double)(a0))))))")
    pytest.importorskip("onnx", reason="ONNX export needs the onnx package")
    xv = np.linspace(-3, 3, 20, dtype=np.float32).reshape(4, 5)
    with gf.Session(backend="numpy") as sess:
        model = gf.onnx.export(sess, {"x": x}, {"y": y}, str(tmp_path / "leaky.onnx"))
        want = sess.run(y, {x: xv})
    ops = [n.op_type for n in model.graph.node]
    assert {"Where", "Greater", "Cast", "Mul"} <= set(ops)
    ort = pytest.importorskip("onnxruntime", reason="the check runs the model in ONNX Runtime")
    (got,) = ort.InferenceSession(str(tmp_path / "leaky.onnx"),
                                  providers=["CPUExecutionProvider"]).run(["y"], {"x": xv})
    np.testing.assert_array_equal(got, want)


def test_an_expression_without_an_onnx_form_is_still_an_error(tmp_path):
    pytest.importorskip("onnx", reason="ONNX export needs the onnx package")
    x = gf.placeholder(gf.float32, (None, 4), name="x")
    with gf.Session(backend="numpy") as sess:  # np.expm1 has no ONNX op of its meaning
        with pytest.raises(gf.onnx.ExportError, match=r"expm1 'expm1' \(created at .*"
                                                       r"has no ONNX mapping"):
            gf.onnx.export(sess, {"x": x}, {"y": gf.expm1(x)}, str(tmp_path / "e.onnx"))
