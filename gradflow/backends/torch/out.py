"""PyTorch lowerings that write into the plan's buffers (``out=``), so that the torch
backend runs the schedule's arena as NumPy does: the elementwise ops of a training
step (including inside fused groups, called in turn), ``relu_grad`` and ``matmul``.

Each takes PyTorch's own function with ``out=`` when every input is a tensor of the
result's dtype (a plan's values always are) and otherwise computes the op's own
result and copies it into ``out``. Called without ``out`` they are the op's own
implementation.
"""

from __future__ import annotations

from gradflow.prim.registry import REGISTRY

# gradflow op -> torch function taking out=, for elementwise ops on floating tensors
ELEMENTWISE = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
    "maximum": "maximum", "minimum": "minimum", "exp": "exp", "log": "log",
    "tanh": "tanh", "sqrt": "sqrt", "negative": "neg", "square": "square", "abs": "abs",
    "sigmoid": "sigmoid", "log1p": "log1p", "expm1": "expm1", "sin": "sin", "cos": "cos",
}


def _lower(name, call):
    """The lowering of op ``name``: ``call(torch, *inputs, out=out)`` into ``out``."""
    def lower(xp, **attrs):
        import torch

        own = REGISTRY[name].bind(xp, attrs)

        def run(*inputs, out=None):
            if out is None:
                return own(*inputs)
            if out.dtype.is_floating_point and all(
                    isinstance(a, torch.Tensor) and a.dtype == out.dtype for a in inputs):
                return call(torch, *inputs, out=out, **attrs)
            out.copy_(own(*inputs))
            return out

        run.accepts_out = True
        run.elementwise_out = name != "matmul"  # out may be one of its inputs
        run.reads_whole_inputs = name == "matmul"
        return run

    return lower


def _elementwise(fn_name):
    return lambda torch, *inputs, out: getattr(torch, fn_name)(*inputs, out=out)


def _relu_grad(torch, g, x, out):
    return torch.mul(g, x > 0, out=out)


def _matmul(torch, a, b, out, transpose_a, transpose_b):
    return torch.matmul(a.mT if transpose_a else a, b.mT if transpose_b else b, out=out)


LOWERINGS = {name: _lower(name, _elementwise(fn)) for name, fn in ELEMENTWISE.items()}
LOWERINGS.update(relu_grad=_lower("relu_grad", _relu_grad), matmul=_lower("matmul", _matmul))
