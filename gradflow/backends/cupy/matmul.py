"""The CuPy backend's matmuls: planned nvmath-python products into the plan's buffers.

Matmuls of float32/float64 matrices, or batches of matrices of one batch shape
(attention's 4-D products), go through nvmath-python's planned ``Matmul``
(``gradflow.backends.cupy.nvmath_matmul``: cuBLASLt, which a CUDA graph capture accepts):
one plan per set of buffers, kept while the buffers are, and one with buffers of its
own for operands that move from run to run (``MatmulPlans``). Anything else (no
nvmath-python, other dtypes, batches that broadcast) goes through ``cupy.matmul``:
cuBLAS, which a capture refuses, so such a plan runs uncaptured.
"""

from __future__ import annotations

import threading

from gradflow.backends.capture import NotCapturable
from gradflow.backends.cupy.nvmath_matmul import PlannedMatmul, _mT
from gradflow.backends.cupy.nvmath_matmul import unavailable_reason as nvmath_missing

MAX_MATMUL_PLANS = 8  # per matmul node: more buffer sets than this means no steady state


def _op(x, transpose):
    """``x`` with its last two axes swapped where ``transpose`` (batched matrices too)."""
    return _mT(x) if transpose else x


def _alias(x):
    """A new array object over ``x``'s memory that does not refer to ``x``: a kept plan
    keeps the memory alive without counting as a holder of a variable's array (the
    executor updates a variable in place only where nothing else holds its array)."""
    import cupy

    return cupy.ndarray(x.shape, x.dtype, x.data, strides=x.strides)


def blas_layout(x):
    """Whether ``x`` is a matrix (or a batch of them) cuBLASLt takes as it is: one of the
    last two axes of unit stride, the other's stride covering a whole row or column (so
    not a broadcast view, whose zero strides nvmath refuses as an "Unsupported
    layout"), and batch axes that step over whole matrices and merge into one strided
    axis."""
    rows, columns = x.shape[-2:]
    strides = [s // x.itemsize for s in x.strides]
    row_stride, column_stride = strides[-2:]
    matrix = (column_stride == 1 and row_stride >= max(columns, 1)) \
        or (row_stride == 1 and column_stride >= max(rows, 1))
    extent, step = max(rows * row_stride, columns * column_stride, 1), None
    for axis in range(x.ndim - 3, -1, -1):  # innermost batch axis first
        if x.shape[axis] == 1:
            continue
        if strides[axis] < extent if step is None else strides[axis] != step:
            return False  # matrices that overlap, or batch axes that do not merge
        step = strides[axis] * x.shape[axis]
    return matrix


class MatmulPlans:
    """``plans(a, b, out, transpose_a, transpose_b)``: the product of matrices (or batches
    of one batch shape) into
    ``out`` through plans made by ``make(a, b, out, transpose_a, transpose_b)`` (objects
    with ``execute()``, ``captured`` and ``free()``), one per set of buffers, kept while
    they are: a steady or captured run reuses them.

    An operand that is not in the plan's arena (a copy that a reshape of a strided
    value made, say) lives somewhere new on every run, and the first plan holds its
    first home (``alias``). So where a second run meets the same shapes at other
    addresses, a *staged* plan is made: the operands whose address moved are copied
    into buffers of its own (``empty``) before the product, and its result copied out,
    so that the next run, and a capture, find a plan. An operand cuBLASLt cannot take
    as it is (a broadcast view: ``blas_layout``) is staged from the first run. A plan
    is made outside a capture only (``capturing()``): meeting new buffers while
    capturing raises ``NotCapturable`` (planning may allocate and synchronize)."""

    def __init__(self, make, capturing, alias, pointer, empty):
        self.make, self.capturing, self.alias = make, capturing, alias
        self.pointer, self.empty = pointer, empty
        self.exact = {}  # (geometry, addresses) -> plan
        self.first = {}  # geometry -> the addresses of its first plan
        self.staged = {}  # geometry -> _StagedMatmul
        self.lock = threading.Lock()

    def __call__(self, a, b, out, transpose_a, transpose_b):
        geometry = (a.shape, a.strides, b.shape, b.strides, out.shape, out.strides,
                    str(a.dtype), transpose_a, transpose_b)
        addresses = (self.pointer(a), self.pointer(b), self.pointer(out))
        plan = self.exact.get((geometry, addresses))
        if plan is not None:
            return plan.execute()
        staged = self.staged.get(geometry)
        if staged is not None and staged.takes(addresses):
            return staged.run(a, b, out)
        if self.capturing():
            raise NotCapturable("a matmul met buffers it has no plan for while capturing")
        with self.lock:
            if len(self.exact) + len(self.staged) >= MAX_MATMUL_PLANS:
                self._forget()
            first = self.first.setdefault(geometry, addresses)
            fixed = tuple(p == q and blas_layout(x)
                          for p, q, x in zip(addresses, first, (a, b, out)))
            if all(fixed):
                plan = self.exact[(geometry, addresses)] = self.make(
                    self.alias(a), self.alias(b), self.alias(out), transpose_a, transpose_b)
                return plan.execute()
            staged = self.staged[geometry] = _StagedMatmul(
                self, (a, b, out), fixed, transpose_a, transpose_b)
        return staged.run(a, b, out)

    def _forget(self):
        plans = list(self.exact.values()) + [s.plan for s in self.staged.values()]
        for plan in plans:
            if not plan.captured:  # a captured graph still runs it
                plan.free()
        self.exact.clear()
        self.first.clear()
        self.staged.clear()


class _StagedMatmul:
    """A plan over the operands that stayed put (``fixed``) and buffers of its own for
    the ones that moved (see ``MatmulPlans``)."""

    def __init__(self, plans, operands, fixed, transpose_a, transpose_b):
        self.fixed = fixed
        self.addresses = tuple(plans.pointer(x) for x in operands)
        self.own = [None if keep else plans.empty(tuple(x.shape), x.dtype)
                    for x, keep in zip(operands, fixed)]
        self.plan = plans.make(*(plans.alias(x) if own is None else own
                                 for x, own in zip(operands, self.own)),
                               transpose_a, transpose_b)
        self.lock = plans.lock

    def takes(self, addresses):
        return all(p == q for p, q, keep in zip(addresses, self.addresses, self.fixed) if keep)

    def run(self, a, b, out):
        with self.lock:  # one thread at a time in the buffers of its own
            for x, own in zip((a, b), self.own):
                if own is not None:
                    own[...] = x
            result = self.plan.execute()
            if self.own[2] is not None:
                out[...] = result
        return out


def planned_matmul(backend):
    """``mm(a, b, out, transpose_a, transpose_b)``: the product of CuPy matrices, or of
    batches of one batch shape (attention's 4-D products), into ``out`` through planned
    nvmath ``Matmul``s (``MatmulPlans``), else through ``cupy.matmul`` (no nvmath-python,
    other dtypes, broadcast batches: cuBLAS, which a capture refuses)."""
    import cupy

    missing = nvmath_missing()

    def make(a, b, out, transpose_a, transpose_b):
        return PlannedMatmul(a, b, out, transpose_a=transpose_a, transpose_b=transpose_b,
                             allow_tf32=backend.allow_tf32,
                             stream=cupy.cuda.get_current_stream())

    plans = MatmulPlans(make, lambda: cupy.cuda.get_current_stream().is_capturing(),
                        _alias, lambda x: x.data.ptr, backend.empty)

    def mm(a, b, out, transpose_a, transpose_b):
        if missing is not None or a.ndim < 2 or a.ndim != b.ndim or out.ndim != a.ndim \
                or a.shape[:-2] != b.shape[:-2] or str(a.dtype) not in ("float32", "float64") \
                or a.dtype != b.dtype or out.dtype != a.dtype:
            return cupy.matmul(_op(a, transpose_a), _op(b, transpose_b), out=out)
        return plans(a, b, out, transpose_a, transpose_b)

    return mm


def lower_matmul(backend):
    """``matmul`` on CuPy: planned nvmath products into ``out`` (``planned_matmul``)."""
    def lower(xp, transpose_a, transpose_b):
        import cupy

        mm = planned_matmul(backend)

        def matmul(a, b, out=None):
            if out is None:  # through the plans too: cuBLAS refuses to be captured
                if a.ndim < 2 or a.ndim != b.ndim or a.shape[:-2] != b.shape[:-2]:
                    return cupy.matmul(_op(a, transpose_a), _op(b, transpose_b))
                rows = a.shape[-1] if transpose_a else a.shape[-2]
                columns = b.shape[-2] if transpose_b else b.shape[-1]
                out = cupy.empty(a.shape[:-2] + (rows, columns), cupy.result_type(a, b))
            return mm(a, b, out, transpose_a, transpose_b)

        matmul.accepts_out = True
        matmul.reads_whole_inputs = True
        return matmul

    return lower
