"""The table of op specs that ``test_ops.py`` expands into checks on every backend.

One spec per op (and per interesting public composite): a builder over the
public API, seeded input generators, a NumPy reference, which inputs are
differentiable, the dtypes to check forward in and the tolerances. Inputs are
small (a dozen elements at most) so finite differences stay cheap, and their
values keep away from kinks, ties and poles.

Adding an op to the registry means adding a spec here (or an ``EXEMPT``
entry, for ops the executor evaluates itself).
"""

from __future__ import annotations

import importlib
import math
import pathlib
import zlib
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import numpy as np

import gradflow as gf
import gradflow.distributed as hvd
from gradflow.ops import math_ops, rnn_ops, state_ops
from gradflow.ops.array_ops import broadcast_like, reshape_like, unbroadcast
from gradflow.ops.index_ops import getitem_key
from gradflow.prim.registry import apply

# Registered ops the executor gives values itself (kind != "compute"), and the plan-only
# ops that only the graph compiler makes.
EXEMPT = {
    "placeholder": "kind 'placeholder': its value is the feed; every spec feeds its inputs "
                   "through placeholders",
    "constant": "kind 'constant': a host value moved to the backend once per session",
    "variable": "kind 'variable': its value lives in the session's store (see test_session)",
    "assign": "kind 'assign': a store write at the end of a run (see test_session)",
    "read_current": "kind 'read_current': a variable's value at commit, under the store "
                    "lock (test_threads.py, test_profiling.py)",
    "random": "kind 'random': drawn from the host generator, no forward function",
    "candidate_sampler": "kind 'random': classes drawn from the host generator for "
                         "nn.*_candidate_sampler, no gradient (test_sampled_losses.py)",
    "group": "kind 'group': an operation with no value",
    # control flow and debugging (gradflow/ops/control_flow_ops.py, debug_ops.py): the
    # specs at the end of this file run cond and while_loop through every check; the
    # rest of their behaviour is tested in tests/test_control_flow.py
    "cond": "kind 'call': holds two sub-graphs (specs cond_*; test_control_flow.py)",
    "while": "kind 'call': holds a loop's sub-graphs (spec while_loop; test_control_flow.py)",
    "while_grad": "kind 'call': the backward loop of while_loop (spec while_loop)",
    "while_loop_var": "kind 'call': a loop variable's stand-in in a while_loop body",
    "print": "kind 'call': tf.print, prints when run (test_control_flow.py)",
    "assert": "kind 'call': Assert and assert_*, raise when run (test_control_flow.py)",
    "py_func": "kind 'call': runs a Python function on the host (test_control_flow.py)",
    # input pipelines (gradflow/prim/dataset.py): values from the host pipeline that the
    # session's iterator state runs, no gradient (tests/test_data_pipeline.py)
    "iterator_get_next": "kind 'call': the next element of a gf.data iterator",
    "iterator_component": "kind 'call': one component of an iterator's element",
    "iterator_initialize": "kind 'call': starts a gf.data iterator on a data set",
    "dataset_function_arg": "kind 'call': an element's component in a traced map function",
    # queues (gradflow/ops/queue_ops.py): elements held by the session's queue state, taken
    # and given by threads of one Session, no gradient (tests/test_queues.py)
    "queue_enqueue": "kind 'call': adds elements to a queue of the session",
    "queue_dequeue": "kind 'call': takes elements from a queue of the session",
    "queue_close": "kind 'call': closes a queue of the session",
    "queue_size": "kind 'call': the number of elements in a queue of the session",
    "queue_is_closed": "kind 'call': whether a queue of the session is closed",
    "input_epochs": "kind 'call': an input producer's rows, per epoch, for num_epochs runs",
    # host ops of image input (gradflow/prim/image_io.py, tests/test_image_io.py)
    "read_file": "kind 'call': a file's bytes, read on the host",
    "decode_image": "kind 'call': image bytes decoded on the host by Pillow",
    "gather_strings": "kind 'call': gather of a string tensor, on the host where strings are",
    # readers (gradflow/ops/reader_ops.py, tests/test_readers.py)
    "reader_read": "kind 'call': the next records of the files a queue names",
    "reader_count": "kind 'call': how many records a reader gave in the session",
    "reader_reset": "kind 'call': forgets a reader's file and count",
    "decode_raw": "kind 'call': strings' bytes as numbers, on the host",
    "parse_example": "kind 'call': tf.train.Example records parsed on the host "
                     "(tests/test_tfrecord.py)",
    "decode_csv": "kind 'call': CSV lines parsed on the host (tests/test_readers.py)",
    # CTC (gradflow/ops/ctc_ops.py): the gradient op is checked by the ctc_loss specs' finite
    # differences; the decoder and edit_distance make and read value-sized sparse tensors
    # on the host (tests/test_ctc.py, against TensorFlow's outputs)
    "ctc_loss_grad": "kind 'call': the gradient of ctc_loss (specs ctc_loss*)",
    "ctc_greedy_paths": "kind 'call': best paths of nn.ctc_greedy_decoder (test_ctc.py)",
    "padded_sparse_part": "kind 'call': a part of the decoder's SparseTensor (test_ctc.py)",
    "edit_distance": "kind 'call': Levenshtein distances on the host (test_ctc.py)",
    # summaries (gradflow/summary/): their value is bytes, a serialized Summary protobuf
    "ScalarSummary": "kind 'call': summary.scalar, bytes on the host (test_summary.py)",
    "HistogramSummary": "kind 'call': summary.histogram, bytes on the host (test_summary.py)",
    "ImageSummary": "kind 'call': summary.image, bytes on the host (test_summary.py)",
    "TensorSummaryV2": "kind 'call': summary.text, bytes on the host (test_summary.py)",
    "MergeSummary": "kind 'call': summary.merge, bytes on the host (test_summary.py)",
    # collectives (gradflow/distributed/): their values come from other processes; in one
    # process they are the identity (spec dist_allreduce; test_distributed.py runs jobs)
    "dist_grouped_collective": "kind 'call': grouped allreduce/broadcast over fusion buffers",
    "dist_output": "kind 'call': picks one result of a grouped collective",
    "dist_broadcast": "kind 'call': hvd.broadcast, no gradient (test_distributed.py)",
    "dist_allgather": "kind 'call': hvd.allgather, no gradient (test_distributed.py)",
    # plan-only ops (OpDef.plan_only): made by the graph compiler in plans, never built by
    # apply in a user's graph; the specs of their member ops run through them
    "fused": "plan-only: a fused elementwise group (test_fusion.py: against the unfused "
             "graph, numba kernels and ufunc sequences)",
    "fused_output": "plan-only: one output of a fused group with several (test_fusion.py)",
    "lstm_step": "plan-only: one LSTM step forward, three outputs (test_lstm_kernels.py, "
                 "test_rnn.py)",
    "lstm_step_grad": "plan-only: one LSTM step backward, two outputs (test_lstm_kernels.py)",
    "lstm_step_rec": "plan-only: an LSTM step with its recurrent product, the CuPy "
                     "backend's kernel pass (test_cupy_emit_on_numpy.py, test_cuda_lstm.py)",
    "lstm_step_rec_grad": "plan-only: its backward step (test_cupy_emit_on_numpy.py, "
                          "test_cuda_lstm.py)",
    "gru_gates_step": "plan-only: a GRU step's gates and r * h in one node "
                      "(test_gru_fused.py, test_gru_kernels.py)",
    "gru_h_step": "plan-only: a GRU step's candidate sum and new state in one node "
                  "(test_gru_fused.py, test_gru_kernels.py)",
    "gru_gates_grad": "plan-only: a GRU step's gate gradient in one node (test_gru_fused.py, "
                      "test_gru_kernels.py)",
    "lstm_peep_step": "plan-only: a peephole LSTM step forward, three outputs "
                      "(test_lstm_peephole_fused.py, test_lstm_peephole_kernels.py, "
                      "test_cuda_lstm_peephole.py)",
    "lstm_peep_step_grad": "plan-only: its backward step, five outputs "
                           "(test_lstm_peephole_fused.py, test_lstm_peephole_kernels.py, "
                           "test_cuda_lstm_peephole.py)",
    "lstm_peep_c_grads": "plan-only: lstm_peep_c's four gradients in one node "
                         "(test_lstm_peephole_fused.py)",
    "lstm_peep_h_grads": "plan-only: lstm_peep_h's three gradients in one node "
                         "(test_lstm_peephole_fused.py)",
    "gru_rh_grads": "plan-only: gru_rh's two gradients in one node (test_gru_fused.py, "
                    "test_gru_kernels.py)",
    "gru_h_grads": "plan-only: gru_h's three gradients in one node (test_gru_fused.py, "
                   "test_gru_kernels.py)",
    "lstm_seq": "plan-only: a whole LSTM layer forward, cuDNN's RNN on CuPy "
                "(test_cudnn_rnn.py, test_cudnn_rnn_wiring.py)",
    "lstm_seq_grad": "plan-only: its backward, the gate gradients of every step "
                     "(test_cudnn_rnn.py, test_cudnn_rnn_wiring.py)",
    "transposed_copy": "plan-only: a row-major w^T for an RNN's backward products, the "
                       "NumPy backend's kernel pass (test_rnn_cells_fused.py)",
    **{form: "plan-only: an NCHW convolution pass between its layout copies, as one op "
             "(test_conv_layouts.py: against the copies and the NHWC op on every backend)"
       for form in ("nchw_conv2d", "nchw_conv2d_backprop_input", "nchw_conv2d_backprop_filter")},
}

FLOAT_DTYPES = ("float32", "float64")
# forward (rtol, atol) per result dtype; integer and bool results must match exactly
FORWARD_TOL = {"float32": (2e-5, 1e-6), "float64": (1e-9, 1e-12)}


def all_unknown(shapes):
    """Placeholder shapes for the unknown-shape run: every dimension ``None``."""
    return [(None,) * len(s) for s in shapes]


def keep(index, *axes):
    """Like ``all_unknown``, but input ``index`` keeps ``axes`` static."""
    def shapes_fn(shapes):
        out = all_unknown(shapes)
        kept = {a % len(shapes[index]) for a in axes}
        out[index] = tuple(d if i in kept else None for i, d in enumerate(shapes[index]))
        return out

    return shapes_fn


@dataclass(frozen=True)
class OpSpec:
    """One row of the table.

    ``make(rng)`` returns the inputs as NumPy arrays; float64 ones follow the
    dtype under test (except those listed in ``pinned``), others keep theirs,
    so for a spec without float inputs ``dtypes`` only names the test case.
    ``grad`` lists the inputs checked by finite differences (``None``: every
    float input, unless a result is not floating); ``()`` marks the spec as not
    differentiable. ``tol`` overrides ``FORWARD_TOL`` per result dtype;
    ``dynamic`` gives the placeholder shapes of the unknown-shape run
    (``None``: the spec needs static shapes); the unknown-rank run (placeholders
    without a shape) covers the specs whose ``dynamic`` is ``all_unknown``, except
    those that say in ``needs_rank`` why their op needs ranks when it is built.
    """

    id: str
    ops: tuple
    fn: Callable
    make: Callable
    ref: Callable
    grad: Optional[tuple] = None
    dtypes: tuple = FLOAT_DTYPES
    pinned: tuple = ()
    tol: dict = field(default_factory=dict)
    grad_tol: tuple = (1e-5, 1e-6)
    eps: float = 1e-6
    second_order: bool = True
    dynamic: Optional[Callable] = all_unknown
    needs_rank: str = ""  # why the spec's op needs ranks known when the graph is built
    no_grad: bool = False  # the op stops gradients: gf.gradients must give None
    value_shaped: bool = False  # the result's shape depends on an input's value, so the
    # static rule leaves those dims unknown even when every input shape is known

    @property
    def seed(self) -> int:
        return zlib.crc32(self.id.encode())

    def inputs(self, dtype):
        """The spec's inputs for one dtype under test, from its own seed."""
        arrays = self.make(np.random.default_rng(self.seed))
        return [a.astype(dtype) if a.dtype == np.float64 and i not in self.pinned else a
                for i, a in enumerate(arrays)]

    def grad_inputs(self):
        if self.grad is not None:
            return tuple(self.grad)
        arrays = self.inputs("float64")
        outputs = self.ref(*arrays)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        if any(np.asarray(r).dtype.kind != "f" for r in outputs):
            return ()  # integer or bool results have no gradient
        return tuple(i for i, a in enumerate(arrays) if a.dtype.kind == "f")

    def forward_tol(self, dtype_name):
        """(rtol, atol) for a result of this dtype; exact for integers and bools."""
        return self.tol.get(dtype_name, FORWARD_TOL.get(dtype_name, (0, 0)))

    @property
    def differentiable(self) -> bool:
        return bool(self.grad_inputs()) and not self.no_grad


# -- input generators: each takes a shape and returns ``rng -> array`` ----------------


def uniform(*shape, lo=-2.0, hi=2.0):
    return lambda rng: rng.uniform(lo, hi, shape)


def positive(*shape, lo=0.5, hi=2.0):
    return uniform(*shape, lo=lo, hi=hi)


def nonzero(*shape, lo=0.3, hi=2.0):
    """Magnitudes in ``[lo, hi]``, random signs: away from the kink of abs/relu at 0."""
    return lambda rng: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


def distinct(*shape, lo=-2.0, hi=2.0):
    """All values at least ``(hi - lo) / (2 n)`` apart: no ties for max/argmax."""
    def gen(rng):
        n = math.prod(shape)
        step = (hi - lo) / max(n, 1)
        values = lo + step * (rng.permutation(n) + 0.5 + rng.uniform(-0.25, 0.25, n))
        return values.reshape(shape)

    return gen


def grid(*shape, offset=0.0):
    """``k / 2 + offset`` with a little jitter: two grids with offsets 0 and 0.25 never tie."""
    return lambda rng: (rng.integers(-4, 4, shape) * 0.5 + offset
                        + rng.uniform(-0.05, 0.05, shape))


def integral(*shape, lo=-2, hi=3):
    """Integer-valued floats, so that comparisons see ties."""
    return lambda rng: rng.integers(lo, hi, shape).astype(np.float64)


def off_integer(*shape):
    """Away from integers and halves: floor, round and casts to int are not at a jump."""
    return lambda rng: (rng.integers(-3, 3, shape)
                        + rng.choice([0.25, 0.7], shape) + rng.uniform(-0.1, 0.1, shape))


def ints(*shape, lo=0, hi=5, dtype=np.int32):
    return lambda rng: rng.integers(lo, hi, shape).astype(dtype)


def bools(*shape):
    return lambda rng: rng.random(shape) < 0.5


def distribution(*shape):
    """Rows that sum to one (labels for softmax cross-entropy)."""
    def gen(rng):
        e = np.exp(rng.normal(size=shape))
        return e / e.sum(-1, keepdims=True)

    return gen


# -- NumPy references -------------------------------------------------------------


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    s = x - x.max(axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis, keepdims=True))


def np_unbroadcast(g, shape):
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1)
    return g.sum(axes, keepdims=True).reshape(shape)


def np_getitem_grad(g, x, key):
    out = np.zeros(x.shape, g.dtype)
    view = out[tuple(k for k in key if k is not None)]
    out[tuple(k for k in key if k is not None)] = g.reshape(view.shape)
    return out


def np_gather_grad(g, indices, params, axis):
    out = np.zeros(params.shape, g.dtype)
    moved = np.moveaxis(out, axis, 0)
    rows = np.moveaxis(g.reshape(params.shape[:axis] + (indices.size,) + params.shape[axis + 1:]),
                       axis, 0)
    np.add.at(moved, indices.reshape(-1), rows)
    return out


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_softplus(x):
    return np.logaddexp(0, x)


def np_matmul(a, b, ta=False, tb=False):
    return np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)


# -- the table -----------------------------------------------------------------------

SPECS: list = []


def spec(id, ops, fn, inputs, ref, **kw):
    """Add one spec; ``inputs`` is a list of generators or one ``rng -> list`` function."""
    make = inputs if callable(inputs) else (lambda rng, gens=tuple(inputs): [g(rng) for g in gens])
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    SPECS.append(OpSpec(id, ops, fn, make, ref, **kw))


def _unary(name, gen, ref, fn=None, **kw):
    spec(name, name, fn or getattr(gf, name), [gen(3, 4)], ref, **kw)


# elementwise unary
_unary("negative", uniform, np.negative)
_unary("exp", uniform, np.exp)
_unary("log", positive, np.log)
_unary("log1p", lambda *s: uniform(*s, lo=-0.5, hi=2.0), np.log1p)
_unary("sqrt", positive, np.sqrt)
_unary("square", uniform, np.square)
_unary("abs", nonzero, np.abs)
_unary("tanh", uniform, np.tanh)
# Piecewise constant: the gradient is zero (None), so there is no second order to check.
_flat = dict(second_order=False)
_unary("sign", nonzero, np.sign, **_flat)
_unary("floor", off_integer, np.floor, **_flat)
_unary("round", off_integer, np.round, **_flat)
_unary("sigmoid", lambda *s: uniform(*s, lo=-4.0, hi=4.0), np_sigmoid)
_unary("relu", nonzero, lambda x: np.maximum(x, 0), fn=gf.nn.relu)
spec("relu_int", "relu", gf.nn.relu, [ints(3, 4, lo=-5)], lambda x: np.maximum(x, 0),
     dtypes=("int32",))
spec("sigmoid_extreme", "sigmoid", gf.sigmoid,
     lambda rng: [np.array([-40.0, -12.0, -1.0, 0.5, 12.0, 40.0])], np_sigmoid)
spec("relu_grad", "relu_grad", lambda g, x: apply("relu_grad", [g, x]),
     [uniform(3, 4), nonzero(3, 4)], lambda g, x: np.where(x > 0, g, 0).astype(g.dtype))
spec("rsqrt", ("divide", "sqrt"), gf.rsqrt, [positive(3, 4)], lambda x: 1 / np.sqrt(x))
spec("reciprocal", "divide", gf.reciprocal, [nonzero(3, 4)], lambda x: 1 / x)
spec("softplus", ("softplus", "sigmoid"), gf.nn.softplus, [nonzero(3, 4, hi=4.0)], np_softplus)
spec("leaky_relu", ("leaky_relu", "leaky_relu_grad"), gf.nn.leaky_relu, [nonzero(3, 4)],
     lambda x: np.where(x > 0, x, 0.2 * x))
spec("operator_neg_abs", ("negative", "abs"), lambda x: -abs(x), [nonzero(3, 4)],
     lambda x: -np.abs(x))

# elementwise binary, with broadcasting and Python scalars
spec("add", "add", gf.add, [uniform(3, 1), uniform(4)], np.add)
spec("add_scalar_tensor", "add", lambda x, y: x + y, [uniform(), uniform(3, 4)], np.add)
spec("subtract", "subtract", gf.subtract, [uniform(2, 3), uniform(3)], np.subtract)
spec("multiply", "multiply", gf.multiply, [uniform(3, 1), uniform(1, 4)], np.multiply)
spec("divide", "divide", gf.divide, [uniform(3, 4), nonzero(4)], np.divide)
spec("pow", "pow", gf.pow, [positive(3, 1), uniform(4, lo=-1.5, hi=1.5)], np.power)
spec("maximum", "maximum", gf.maximum, [grid(3, 1), grid(4, offset=0.25)], np.maximum)
spec("minimum", "minimum", gf.minimum, [grid(3, 4), grid(4, offset=0.25)], np.minimum)
spec("floor_divide", "floor_divide", lambda x, y: x // y,
     lambda rng: (lambda y: [y * (rng.integers(-3, 3, (3, 4)) + rng.uniform(0.2, 0.8, (3, 4))),
                             y])(rng.choice([-1.5, -0.75, 1.25, 2.0], (4,))),
     np.floor_divide, **_flat)
spec("scalar_operators", ("multiply", "subtract", "divide", "pow"),
     lambda x: (2.0 * x - 1.0) / 3.0 + x ** 2 - 2.0 ** x, [uniform(3, 4)],
     lambda x: (2 * x - 1) / 3 + x ** 2 - np.power(2, x).astype(x.dtype))
spec("squared_difference", ("square", "subtract"), gf.squared_difference,
     [uniform(3, 1), uniform(4)], lambda x, y: np.square(x - y))
spec("clip_by_value", ("maximum", "minimum"), lambda x: gf.clip_by_value(x, -0.5, 0.5),
     [grid(3, 4, offset=0.25)], lambda x: np.clip(x, -0.5, 0.5))
spec("add_n", "add", lambda x, y, z: gf.add_n([x, y, z]),
     [uniform(3, 4), uniform(3, 4), uniform(4)], lambda x, y, z: x + y + z)

# integer arithmetic (forward only)
_ints = dict(dtypes=("int32",))
spec("negative_int", "negative", gf.negative, [ints(3, 4, lo=-5)], np.negative, **_ints)
spec("abs_int", "abs", gf.abs, [ints(3, 4, lo=-5)], np.abs, **_ints)
spec("square_int", "square", gf.square, [ints(3, 4, lo=-5)], np.square, **_ints)
spec("sign_int", "sign", gf.sign, [ints(3, 4, lo=-2, hi=3)], np.sign, **_ints)
spec("add_int", "add", lambda x, y: x + y * 2, [ints(3, 1), ints(4)],
     lambda x, y: x + y * 2, **_ints)
spec("floor_divide_int", "floor_divide", math_ops.floordiv,
     [ints(3, 4, lo=-9, hi=9), lambda rng: rng.choice([-3, -2, 2, 5], (4,)).astype(np.int32)],
     np.floor_divide, **_ints)
spec("maximum_int", ("maximum", "minimum"), lambda x, y: gf.minimum(gf.maximum(x, y), 3),
     [ints(3, 4, lo=-5), ints(4, lo=-5)], lambda x, y: np.minimum(np.maximum(x, y), 3), **_ints)

# comparisons and logic (bool results, forward only)
for _name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
    spec(_name, _name, getattr(gf, _name), [integral(3, 1), integral(4)], getattr(np, _name))
spec("equal_int", "equal", gf.equal, [ints(3, 4, dtype=np.int64), ints(3, 4, dtype=np.int64)],
     np.equal, dtypes=("int64",))
spec("comparison_operators", ("less", "greater_equal", "logical_and"),
     lambda x, y: (x < y) & (x >= -1.0), [integral(3, 4), integral(4)],
     lambda x, y: (x < y) & (x >= -1))
for _name in ("logical_and", "logical_or", "logical_xor"):
    spec(_name, _name, getattr(math_ops, _name), [bools(3, 4), bools(4)],
         getattr(np, _name), dtypes=("bool",))
spec("logical_not", "logical_not", lambda x: ~x, [bools(3, 4)], np.logical_not,
     dtypes=("bool",))

# where, cast, zeros_like, ones_like
spec("where", "where", gf.where, [bools(3, 1), uniform(3, 4), uniform(4)], np.where)
spec("where_coordinates", "where_coordinates", gf.where, [bools(3, 4)],
     lambda c: np.argwhere(c).astype(np.int64), dtypes=("bool",), value_shaped=True)
spec("where_coordinates_3d", "where_coordinates", lambda c: gf.where(gf.logical_not(c)),
     [bools(2, 3, 2)], lambda c: np.argwhere(~c).astype(np.int64), dtypes=("bool",),
     value_shaped=True)
spec("where_int", "where", gf.where, [bools(3, 4), ints(3, 4), ints(3, 1)], np.where,
     dtypes=("int32",))
spec("where_scalar", "where", gf.where, [bools(3, 4), uniform(3, 4), uniform()], np.where)
# A float32 end of a cast makes differences noisy: a large eps (exact for a linear op),
# a loose tolerance, and no second order (it is zero anyway).
_cast32 = dict(eps=1e-2, grad_tol=(1e-3, 1e-3), second_order=False)
spec("cast_to_float32", "cast", lambda x: gf.cast(x, gf.float32), [uniform(3, 4)],
     lambda x: x.astype(np.float32), dtypes=("float64",), pinned=(0,), **_cast32)
spec("cast_to_float64", "cast", lambda x: gf.cast(x, gf.float64) * 2.0,
     [lambda rng: rng.uniform(-2, 2, (3, 4)).astype(np.float32)],
     lambda x: x.astype(np.float64) * 2, dtypes=("float32",), **_cast32)
spec("cast_to_int", "cast", lambda x: gf.cast(x, gf.int32), [off_integer(3, 4)],
     lambda x: x.astype(np.int32))
spec("cast_from_int", "cast", lambda x: gf.cast(x, gf.float32), [ints(3, 4, lo=-5)],
     lambda x: x.astype(np.float32), dtypes=("int32",))
spec("cast_from_bool", "cast", lambda x: gf.cast(x, gf.float64), [bools(3, 4)],
     lambda x: x.astype(np.float64), dtypes=("bool",))
spec("cast_to_bool", "cast", lambda x: gf.cast(x, gf.bool), [integral(3, 4, lo=-1, hi=2)],
     lambda x: x.astype(bool))
spec("zeros_like", "zeros_like", gf.zeros_like, [uniform(3, 4)], np.zeros_like, **_flat)
spec("ones_like", "ones_like", gf.ones_like, [uniform(3, 4)], np.ones_like, **_flat)
spec("ones_like_int", ("ones_like", "cast"), lambda x: gf.ones_like(x, dtype=gf.float32),
     [ints(2, 3)], lambda x: np.ones(x.shape, np.float32), dtypes=("int32",))

# reductions
spec("reduce_sum", "reduce_sum", gf.reduce_sum, [uniform(3, 4)], np.sum)
spec("reduce_sum_axis", "reduce_sum", lambda x: gf.reduce_sum(x, 1), [uniform(3, 4)],
     lambda x: np.sum(x, 1))
spec("reduce_sum_axes_keepdims", "reduce_sum",
     lambda x: gf.reduce_sum(x, (0, -1), keepdims=True), [uniform(2, 3, 2)],
     lambda x: np.sum(x, (0, 2), keepdims=True))
spec("reduce_sum_int", "reduce_sum", lambda x: gf.reduce_sum(x, -1), [ints(3, 4, lo=-5)],
     lambda x: np.sum(x, -1, dtype=x.dtype), dtypes=("int32",))
spec("reduce_sum_scalar", "reduce_sum", gf.reduce_sum, [uniform()], np.sum)
spec("reduce_mean_scalar", "reduce_sum", gf.reduce_mean, [uniform()], np.mean)
spec("reduce_max", "reduce_max", lambda x: gf.reduce_max(x, 1), [distinct(3, 4)],
     lambda x: np.max(x, 1))
spec("reduce_max_all_keepdims", "reduce_max", lambda x: gf.reduce_max(x, keepdims=True),
     [distinct(3, 4)], lambda x: np.max(x, keepdims=True))
spec("reduce_max_int", "reduce_max", lambda x: gf.reduce_max(x, 0), [ints(3, 4, lo=-5)],
     lambda x: np.max(x, 0), dtypes=("int32",))
spec("reduce_min", "reduce_min", lambda x: gf.reduce_min(x, 0), [distinct(3, 4)],
     lambda x: np.min(x, 0))
spec("reduce_prod", "reduce_prod", lambda x: gf.reduce_prod(x, 1),
     [nonzero(3, 4, lo=0.5, hi=1.5)], lambda x: np.prod(x, 1))
spec("reduce_prod_all", "reduce_prod", gf.reduce_prod, [nonzero(2, 3, lo=0.5, hi=1.5)],
     np.prod)
spec("reduce_mean", ("reduce_sum", "divide"), gf.reduce_mean, [uniform(3, 4)], np.mean)
spec("reduce_mean_axes_keepdims", ("reduce_sum", "divide"),
     lambda x: gf.reduce_mean(x, (0, 1), keepdims=True), [uniform(2, 3, 2)],
     lambda x: np.mean(x, (0, 1), keepdims=True))
spec("reduced_count", "reduced_count", lambda x: apply("reduced_count", [x], axes=(0, 2)),
     [uniform(2, 3, 2)], lambda x: np.asarray(x.shape[0] * x.shape[2], x.dtype), grad=())
spec("reduced_count_all", "reduced_count", lambda x: apply("reduced_count", [x], axes=None),
     [uniform(3, 4)], lambda x: np.asarray(x.size, x.dtype), grad=())
spec("argmax", "argmax", lambda x: gf.argmax(x, 1), [distinct(3, 4)],
     lambda x: np.argmax(x, 1).astype(np.int64))
spec("argmax_default_axis_int32", ("argmax", "cast"),
     lambda x: gf.argmax(x, output_type=gf.int32), [distinct(3, 4)],
     lambda x: np.argmax(x, 0).astype(np.int32))
spec("argmin", "argmin", lambda x: gf.argmin(x, -1), [distinct(2, 3, 2)],
     lambda x: np.argmin(x, -1).astype(np.int64))
spec("argmax_int", "argmax", lambda x: gf.argmax(x, 1),
     [lambda rng: rng.permutation(12).reshape(3, 4).astype(np.int32)],
     lambda x: np.argmax(x, 1).astype(np.int64), dtypes=("int32",))

# the broadcasting helpers of the gradient walker
spec("unbroadcast", "unbroadcast", unbroadcast, [uniform(2, 3, 2), uniform(3, 1)],
     lambda g, x: np_unbroadcast(g, x.shape), grad=(0,))
spec("unbroadcast_same", "unbroadcast", unbroadcast, [uniform(3, 4), uniform(3, 4)],
     lambda g, x: g, grad=(0,))
spec("broadcast_like", "broadcast_like", broadcast_like, [uniform(3, 1), uniform(2, 3, 2)],
     lambda g, x: np.broadcast_to(g, x.shape), grad=(0,))
spec("reshape_like", "reshape_like", reshape_like, [uniform(12), uniform(3, 4)],
     lambda g, x: g.reshape(x.shape), grad=(0,))

# shapes
spec("reshape", "reshape", lambda x: gf.reshape(x, (2, 6)), [uniform(3, 4)],
     lambda x: x.reshape(2, 6))
spec("reshape_to_scalar", "reshape", lambda x: gf.reshape(x, ()), [uniform(1, 1)],
     lambda x: x.reshape(()))
spec("reshape_infer", "reshape", lambda x: gf.reshape(x, (-1, 2, 2)), [uniform(3, 4)],
     lambda x: x.reshape(-1, 2, 2))
spec("expand_dims", "expand_dims", lambda x: gf.expand_dims(x, 1), [uniform(3, 4)],
     lambda x: x[:, None])
spec("expand_dims_last", "expand_dims", lambda x: gf.expand_dims(x, -1), [uniform(3, 4)],
     lambda x: x[..., None])
spec("squeeze", "squeeze", lambda x: gf.squeeze(x, 1), [uniform(3, 1, 2)],
     lambda x: np.squeeze(x, 1))
spec("squeeze_all", "squeeze", gf.squeeze, [uniform(1, 3, 1, 2)], np.squeeze,
     dynamic=None)  # with unknown sizes the result's rank is unknown (test_bad_input.py)
spec("transpose", "transpose", gf.transpose, [uniform(3, 4)], np.transpose)
spec("transpose_perm", "transpose", lambda x: gf.transpose(x, (1, 2, 0)), [uniform(2, 3, 2)],
     lambda x: np.transpose(x, (1, 2, 0)))
spec("shape", "shape", gf.shape, [uniform(3, 4)], lambda x: np.array(x.shape, np.int32),
     grad=())
spec("shape_int64", "shape", lambda x: gf.shape(x, out_type=gf.int64), [ints(2, 3)],
     lambda x: np.array(x.shape, np.int64), dtypes=("int32",))

# matmul: plain, transposed, batched, broadcast batch, 1-D operands
_mm = [
    ("matmul", (2, 3), (3, 4), {}),
    ("matmul_transpose_a", (3, 2), (3, 4), dict(transpose_a=True)),
    ("matmul_transpose_b", (2, 3), (4, 3), dict(transpose_b=True)),
    ("matmul_transpose_ab", (3, 2), (4, 3), dict(transpose_a=True, transpose_b=True)),
    ("matmul_batched", (2, 2, 3), (2, 3, 2), {}),
    ("matmul_batched_transpose", (2, 3, 2), (2, 2, 3), dict(transpose_a=True,
                                                            transpose_b=True)),
    ("matmul_broadcast_batch_a", (2, 2, 3), (3, 2), {}),
    ("matmul_broadcast_batch_b", (2, 3), (2, 3, 2), {}),
    ("matmul_vector_matrix", (3,), (3, 4), {}),
    ("matmul_matrix_vector", (2, 3), (3,), {}),
    ("matmul_vector_vector", (3,), (3,), {}),
    ("matmul_batched_matrix_vector", (2, 2, 3), (3,), {}),
    ("matmul_vector_batched_matrix", (3,), (2, 3, 2), {}),
]
for _id, _sa, _sb, _kw in _mm:
    spec(_id, "matmul", lambda a, b, kw=_kw: gf.matmul(a, b, **kw),
         [uniform(*_sa), uniform(*_sb)],
         lambda a, b, kw=_kw: np_matmul(a, b, kw.get("transpose_a"), kw.get("transpose_b")))
spec("matmul_operator", "matmul", lambda a, b: a @ b, [uniform(3, 2), uniform(2, 4)],
     np.matmul)
spec("matmul_int", "matmul", gf.matmul, [ints(2, 3, lo=-3), ints(3, 2, lo=-3)], np.matmul,
     dtypes=("int32",))

# indexing with static keys
_keys = [
    ("getitem", (3, 4), (slice(1, None), None)),
    ("getitem_step", (4, 3), (slice(None, None, 2), slice(1, None))),
    ("getitem_ellipsis_int", (2, 3, 2), (Ellipsis, 0)),
    ("getitem_negative_int", (3, 4), -1),
    ("getitem_scalar", (3, 4), (1, 2)),
    ("getitem_reverse", (3, 4), (slice(None), slice(None, None, -1))),
    ("getitem_negative_step", (5, 2), (slice(4, 0, -2), None, 1)),
    ("getitem_empty", (3, 4), slice(2, 1)),
    ("getitem_newaxis_ellipsis", (3, 4), (None, Ellipsis, slice(1, 3))),
]
for _id, _shape, _key in _keys:
    spec(_id, "getitem", lambda x, k=_key: x[k], [uniform(*_shape)], lambda x, k=_key: x[k])


def _getitem_grad(g, x, key):
    return apply("getitem_grad", [g, x], key=getitem_key(key, x.shape))


spec("getitem_grad", "getitem_grad",
     lambda g, x: _getitem_grad(g, x, (slice(1, None), None)),
     [uniform(2, 1, 4), uniform(3, 4)],
     lambda g, x: np_getitem_grad(g, x, (slice(1, None), None)), grad=(0,))
spec("getitem_grad_int", "getitem_grad", lambda g, x: _getitem_grad(g, x, (Ellipsis, 1)),
     [uniform(2, 3), uniform(2, 3, 2)], lambda g, x: np_getitem_grad(g, x, (Ellipsis, 1)),
     grad=(0,))

# joining and splitting
spec("concat", "concat", lambda x, y: gf.concat([x, y], 0), [uniform(2, 3), uniform(1, 3)],
     lambda x, y: np.concatenate([x, y], 0))
spec("concat_three_last_axis", "concat", lambda x, y, z: gf.concat([x, y, z], -1),
     [uniform(2, 1), uniform(2, 3), uniform(2, 2)], lambda x, y, z: np.concatenate([x, y, z], -1))
spec("split_like", "split_like",
     lambda g, x, y: apply("split_like", [g, x, y], axis=1, index=1),
     [uniform(2, 5), uniform(2, 2), uniform(2, 3)],
     lambda g, x, y: g[:, x.shape[1]:x.shape[1] + y.shape[1]], grad=(0,))
spec("split_like_first", "split_like",
     lambda g, x, y, z: apply("split_like", [g, x, y, z], axis=0, index=0),
     [uniform(4, 2), uniform(1, 2), uniform(2, 2), uniform(1, 2)],
     lambda g, x, y, z: g[:x.shape[0]], grad=(0,))
spec("stack", ("expand_dims", "concat"), lambda x, y, z: gf.stack([x, y, z]),
     [uniform(2, 2)] * 3, lambda x, y, z: np.stack([x, y, z]))
spec("stack_axis1", ("expand_dims", "concat"), lambda x, y: gf.stack([x, y], axis=1),
     [uniform(2, 3)] * 2, lambda x, y: np.stack([x, y], 1))
spec("stack_scalars", ("expand_dims", "concat"), lambda x, y, z: gf.stack([x, y, z]),
     [uniform()] * 3, lambda x, y, z: np.stack([x, y, z]))
spec("concat_int", "concat", lambda x, y: gf.concat([x, y], 1), [ints(2, 1), ints(2, 3)],
     lambda x, y: np.concatenate([x, y], 1), dtypes=("int32",))
spec("unstack", "getitem", lambda x: gf.unstack(x, axis=1), [uniform(2, 3)],
     lambda x: list(np.moveaxis(x, 1, 0)), dynamic=keep(0, 1))
spec("split", "getitem", lambda x: gf.split(x, 3, axis=1), [uniform(2, 6)],
     lambda x: np.split(x, 3, axis=1), dynamic=keep(0, 1))
spec("split_sizes", "getitem", lambda x: gf.split(x, [1, 3], axis=-1), [uniform(3, 4)],
     lambda x: np.split(x, [1], axis=-1))

# gather and one_hot
spec("gather", "gather", gf.gather,
     [uniform(5, 2), lambda rng: np.array([3, 0, 3, 1], np.int32)],
     lambda p, i: np.take(p, i, 0))
spec("gather_axis1", "gather", lambda p, i: gf.gather(p, i, axis=1),
     [uniform(2, 5), ints(2, 2, hi=5, dtype=np.int64)], lambda p, i: np.take(p, i, 1))
spec("gather_scalar_index", "gather", gf.gather,
     [uniform(4, 3), lambda rng: np.array(2, np.int64)], lambda p, i: np.take(p, i, 0))
spec("gather_grad", "gather_grad",
     lambda g, i, p: apply("gather_grad", [g, i, p], axis=0),
     [uniform(4, 2), lambda rng: np.array([3, 0, 3, 1], np.int32), uniform(5, 2)],
     lambda g, i, p: np_gather_grad(g, i, p, 0), grad=(0,))
spec("gather_grad_axis1", "gather_grad",
     lambda g, i, p: apply("gather_grad", [g, i, p], axis=1),
     [uniform(2, 2, 2), lambda rng: np.array([[1, 1], [0, 2]], np.int64), uniform(2, 3)],
     lambda g, i, p: np_gather_grad(g, i, p, 1), grad=(0,))
spec("gather_int_params", "gather", gf.gather,
     [ints(4, 2, hi=9, dtype=np.int64), ints(3, hi=4)], lambda p, i: np.take(p, i, 0),
     dtypes=("int64",))
def np_one_hot(indices, depth, dtype=np.float32):
    """TF1's one_hot: an index outside ``[0, depth)`` gives a row of zeros (not numpy's
    wrap-around of -1)."""
    return (indices[..., None] == np.arange(depth)).astype(dtype)


spec("one_hot", "one_hot", lambda i: gf.one_hot(i, 3), [ints(4, hi=3)],
     lambda i: np_one_hot(i, 3), dtypes=("int32",))
spec("one_hot_out_of_range", "one_hot", lambda i: gf.one_hot(i, 3), [ints(2, 3, lo=-4, hi=7)],
     lambda i: np_one_hot(i, 3), dtypes=("int32",))
spec("one_hot_uint8_deep", "one_hot", lambda i: gf.one_hot(i, 300),
     [lambda rng: np.array([0, 44, 255], np.uint8)], lambda i: np_one_hot(i, 300),
     dtypes=("uint8",))
spec("one_hot_values", "one_hot",
     lambda i: gf.one_hot(i, 4, on_value=2.0, off_value=-1.0, dtype=gf.float64),
     [ints(2, 2, hi=4, dtype=np.int64)], lambda i: np_one_hot(i, 4, np.float64) * 3 - 1,
     dtypes=("int64",))

# softmax and the losses
spec("softmax", "softmax", gf.nn.softmax, [uniform(3, 4)], np_softmax)
spec("softmax_vector", "softmax", gf.nn.softmax, [uniform(5)], np_softmax)
spec("softmax_axis0", "softmax", lambda x: gf.nn.softmax(x, axis=0), [uniform(3, 4)],
     lambda x: np_softmax(x, 0))
spec("softmax_large_logits", "softmax", gf.nn.softmax,
     [lambda rng: rng.uniform(-2, 2, (2, 3)) + np.array([[1000.0], [-1000.0]])], np_softmax)
spec("log_softmax", "log_softmax", gf.nn.log_softmax, [uniform(3, 4)], np_log_softmax)
spec("log_softmax_axis0", "log_softmax", lambda x: gf.nn.log_softmax(x, 0), [uniform(3, 4)],
     lambda x: np_log_softmax(x, 0))
spec("log_softmax_large_logits", "log_softmax", gf.nn.log_softmax,
     [lambda rng: rng.uniform(-2, 2, (2, 3)) + np.array([[1000.0], [-1000.0]])],
     np_log_softmax)
spec("softmax_cross_entropy_with_logits", ("log_softmax", "multiply", "reduce_sum"),
     lambda y, x: gf.nn.softmax_cross_entropy_with_logits(labels=y, logits=x),
     [distribution(3, 4), uniform(3, 4)], lambda y, x: -np.sum(y * np_log_softmax(x), -1),
     grad=(1,))  # TF1's first version: no gradient reaches the labels
spec("softmax_cross_entropy_with_logits_v2", ("log_softmax", "multiply", "reduce_sum"),
     lambda y, x: gf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x),
     [distribution(3, 4), uniform(3, 4)], lambda y, x: -np.sum(y * np_log_softmax(x), -1))
spec("sparse_softmax_cross_entropy_with_logits", ("one_hot", "log_softmax"),
     lambda y, x: gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
     [ints(3, hi=4, dtype=np.int64), uniform(3, 4)],
     lambda y, x: -np_log_softmax(x)[np.arange(3), y], dynamic=keep(1, -1))
spec("sparse_softmax_cross_entropy_int32_large", ("one_hot", "log_softmax"),
     lambda y, x: gf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
     [lambda rng: np.array([0, 2], np.int32),
      lambda rng: rng.uniform(-2, 2, (2, 3)) * 300.0],
     lambda y, x: -np_log_softmax(x)[np.arange(2), y], dynamic=keep(1, -1))
spec("sigmoid_cross_entropy_with_logits", ("softplus", "multiply", "subtract"),
     lambda z, x: gf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
     [uniform(3, 4, lo=0.0, hi=1.0), nonzero(3, 4, hi=5.0)],
     lambda z, x: np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x))))
spec("l2_loss", ("multiply", "reduce_sum"), gf.nn.l2_loss, [uniform(3, 4)],
     lambda x: np.sum(x * x) / 2)
spec("bias_add", "add", gf.nn.bias_add, [uniform(3, 4), uniform(4)], np.add)
spec("global_norm_clip", ("sqrt", "maximum", "multiply"),
     lambda x, y: [*gf.clip_by_global_norm([x, y], 1.5)[0], gf.global_norm([x, y])],
     [uniform(3, 2), uniform(4)],
     lambda x, y: (lambda n: [x * 1.5 / n, y * 1.5 / n, n])(np.sqrt(np.sum(x * x) + np.sum(y * y))))
spec("clip_by_norm", ("sqrt", "reduce_sum", "maximum"), lambda x: gf.clip_by_norm(x, 1.0, 1),
     [lambda rng: rng.uniform(-1, 1, (3, 4)) * np.array([[0.2], [1.0], [3.0]])],
     lambda x: x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0))

# identity-like ops
spec("identity", "identity", gf.identity, [uniform(3, 4)], lambda x: x)
spec("placeholder_with_default", "placeholder_with_default",
     lambda x: gf.placeholder_with_default(x, x.shape), [uniform(3, 4)], lambda x: x)
spec("stop_gradient", "stop_gradient", gf.stop_gradient, [uniform(3, 4)], lambda x: x,
     no_grad=True)
spec("ensure_shape", "ensure_shape", lambda x: gf.ensure_shape(x, (3, None)), [uniform(3, 4)],
     lambda x: x)
spec("ensure_shape_copy", "ensure_shape",
     lambda x: apply("ensure_shape", [x], shape=(None, 4), message="{actual}", copy=True),
     [uniform(3, 4)], lambda x: x)
# the conversion of a placeholder made without a dtype (checked: whole numbers in range)
spec("weak_cast_int", "weak_cast", lambda x: state_ops.weak_cast(x, gf.int32),
     [integral(3, 4, lo=-9, hi=9)], lambda x: x.astype(np.int32))
spec("weak_cast_uint8", "weak_cast", lambda x: state_ops.weak_cast(x, gf.uint8),
     [integral(2, 3, lo=0, hi=256)], lambda x: x.astype(np.uint8))
spec("weak_cast_float64", "weak_cast", lambda x: state_ops.weak_cast(x, gf.float64),
     [uniform(3, 4)], lambda x: x.astype(np.float64))
spec("check_divisor", "check_divisor",
     lambda y: apply("check_divisor", [y], message="zero"),
     [ints(2, 3, lo=1, hi=4, dtype=np.int64)], lambda y: y, dtypes=("int64",))
spec("check_leading_dims", "check_leading_dims",
     lambda y, z: apply("check_leading_dims", [y, z], message="{got} {want}"),
     [ints(2, 3, hi=4, dtype=np.int64), uniform(2, 3, 5)], lambda y, z: y, dtypes=("int64",))
spec("check_label_range", "check_label_range",
     lambda y: apply("check_label_range", [y], depth=4, message="{value}"),
     [ints(2, 3, hi=4, dtype=np.int64)], lambda y: y, dtypes=("int64",))

# convolution and pooling (NHWC), references written with plain loops


def np_window(size, k, s, padding):
    if padding == "VALID":
        return (size - k) // s + 1, 0
    out = -(-size // s)
    return out, max((out - 1) * s + k - size, 0) // 2


def np_windows(x, kh, kw, s, padding):
    """Yield (n, i, j, [(r, c) real cells of the window]) for every output position."""
    oh, pt = np_window(x.shape[1], kh, s, padding)
    ow, pl = np_window(x.shape[2], kw, s, padding)
    for i in range(oh):
        for j in range(ow):
            cells = [(i * s + a - pt, j * s + b - pl, a, b) for a in range(kh) for b in range(kw)]
            yield i, j, [c for c in cells if 0 <= c[0] < x.shape[1] and 0 <= c[1] < x.shape[2]]


def np_conv2d(x, w, s, padding):
    oh, _ = np_window(x.shape[1], w.shape[0], s, padding)
    ow, _ = np_window(x.shape[2], w.shape[1], s, padding)
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]), x.dtype)
    for i, j, cells in np_windows(x, w.shape[0], w.shape[1], s, padding):
        for r, c, a, b in cells:
            out[:, i, j, :] += x[:, r, c, :] @ w[a, b]
    return out


def np_pool(x, k, s, padding, kind):
    oh, _ = np_window(x.shape[1], k, s, padding)
    ow, _ = np_window(x.shape[2], k, s, padding)
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    for i, j, cells in np_windows(x, k, k, s, padding):
        vals = np.stack([x[:, r, c, :] for r, c, _, _ in cells])
        out[:, i, j, :] = vals.max(0) if kind == "max" else vals.mean(0)
    return out


# fused LSTM step (gates in TF1's order i, j, f, o) and run-time-batch zeros
def np_lstm_gates(z, forget_bias=1.0):
    i, j, f, o = np.split(z, 4, axis=-1)
    return np.concatenate([np_sigmoid(i), np.tanh(j), np_sigmoid(f + forget_bias),
                           np_sigmoid(o)], -1)


def np_lstm_c(a, c):
    i, j, f, _ = np.split(a, 4, axis=-1)
    return f * c + i * j


def np_lstm_h(a, c):
    return np.split(a, 4, axis=-1)[3] * np.tanh(c)


spec("lstm_gates", ("lstm_gates", "lstm_gates_grad"), rnn_ops.lstm_gates, [uniform(2, 8)],
     np_lstm_gates, dynamic=keep(0, 1))
spec("lstm_gates_forget_bias", ("lstm_gates", "lstm_gates_grad"),
     lambda z: rnn_ops.lstm_gates(z, -0.5), [uniform(3, 4)],
     lambda z: np_lstm_gates(z, -0.5), dynamic=keep(0, 1))
spec("lstm_c", ("lstm_c", "lstm_c_grad"), rnn_ops.lstm_c,
     [uniform(2, 8), uniform(2, 2)], np_lstm_c)
spec("lstm_h", ("lstm_h", "lstm_h_grad"), rnn_ops.lstm_h,
     [uniform(2, 8), uniform(2, 2)], np_lstm_h)


def np_lstm_cell_grad(dc, dh, a, c, c_prev):
    i, j, f, o = np.split(a, 4, axis=-1)
    return np.concatenate([dc * j * i * (1 - i), dc * i * (1 - j * j),
                           dc * c_prev * f * (1 - f), dh * np.tanh(c) * o * (1 - o)], -1)


# made only by the graph compiler's rewrites (tests/test_passes.py), never differentiated
spec("lstm_gates_sum", "lstm_gates_sum",
     lambda x, y, row: apply("lstm_gates_sum", [x, y, row], forget_bias=1.0),
     [uniform(3, 8), uniform(3, 8), uniform(8)], lambda x, y, row: np_lstm_gates(x + y + row),
     grad=())
spec("lstm_gates_sum_of_two", "lstm_gates_sum",
     lambda x, row: apply("lstm_gates_sum", [x, row], forget_bias=-0.5),
     [uniform(3, 8), uniform(8)], lambda x, row: np_lstm_gates(x + row, -0.5), grad=())
spec("lstm_cell_grad", "lstm_cell_grad",
     lambda dc, dh, a, c, c_prev: apply("lstm_cell_grad", [dc, dh, a, c, c_prev]),
     [uniform(3, 4), uniform(3, 4), uniform(3, 16, lo=-0.95, hi=0.95), uniform(3, 4),
      uniform(3, 4)], np_lstm_cell_grad, grad=())
# the GRU step's fused nodes (gradflow/prim/gru.py; gates r, u)
def np_gru_rh(gates, h):
    return np.split(gates, 2, axis=-1)[0] * h


def np_gru_h(gates, zc, h):
    u = np.split(gates, 2, axis=-1)[1]
    return u * h + (1 - u) * np.tanh(zc)


spec("gru_rh", ("gru_rh", "gru_rh_grad"), lambda g, h: apply("gru_rh", [g, h]),
     [uniform(2, 6, lo=0.05, hi=0.95), uniform(2, 3)], np_gru_rh)
spec("gru_rh_batch_known", ("gru_rh", "gru_rh_grad"), lambda g, h: apply("gru_rh", [g, h]),
     [uniform(3, 4, lo=0.05, hi=0.95), uniform(3, 2)], np_gru_rh, dynamic=keep(1, 0, 1))
spec("gru_h", ("gru_h", "gru_h_grad"), lambda g, zc, h: apply("gru_h", [g, zc, h]),
     [uniform(2, 6, lo=0.05, hi=0.95), uniform(2, 3), uniform(2, 3)], np_gru_h)
spec("gru_h_units_known", ("gru_h", "gru_h_grad"), lambda g, zc, h: apply("gru_h", [g, zc, h]),
     [uniform(3, 4, lo=0.05, hi=0.95), uniform(3, 2), uniform(3, 2)], np_gru_h,
     dynamic=keep(0, 1))

# LSTMCell's peephole/clipped cell (gradflow/prim/lstm_peephole.py; gates i, j, f, o)
def np_peep_c(z, c_prev, w_i=None, w_f=None, forget_bias=1.0, cell_clip=None):
    i, j, f, _ = np.split(z, 4, axis=-1)
    if w_i is not None:
        i, f = i + w_i * c_prev, f + forget_bias + w_f * c_prev
    else:
        f = f + forget_bias
    c = np_sigmoid(f) * c_prev + np_sigmoid(i) * np.tanh(j)
    return c if cell_clip is None else np.clip(c, -cell_clip, cell_clip)


def np_peep_h(z, c, w_o=None):
    o = np.split(z, 4, axis=-1)[3]
    return np_sigmoid(o if w_o is None else o + w_o * c) * np.tanh(c)


def _peep_c(*inputs, forget_bias=1.0, cell_clip=None):
    return apply("lstm_peep_c", list(inputs), forget_bias=forget_bias, cell_clip=cell_clip)


spec("lstm_peep_c", ("lstm_peep_c", "lstm_peep_c_grad"), _peep_c,
     [uniform(2, 8), uniform(2, 2), uniform(2), uniform(2)], np_peep_c)
spec("lstm_peep_c_units_known", ("lstm_peep_c", "lstm_peep_c_grad"),
     lambda z, c, wi, wf: _peep_c(z, c, wi, wf, forget_bias=-0.5),
     [uniform(3, 12), uniform(3, 3), uniform(3), uniform(3)],
     lambda z, c, wi, wf: np_peep_c(z, c, wi, wf, forget_bias=-0.5), dynamic=keep(0, 1))
# the clipped cells' values keep away from the clip's kinks (|c| near 0.6 is avoided:
# the inputs give |c| below 0.45 or above 0.75)
spec("lstm_peep_c_clipped", ("lstm_peep_c", "lstm_peep_c_grad"),
     lambda z, c, wi, wf: _peep_c(z, c, wi, wf, cell_clip=0.6),
     lambda rng: [np.array([[0.3, -0.2, 2.0, 1.5, 0.4, -0.3, 1.0, 0.2],
                            [-1.0, 0.5, 1.5, -2.0, 0.8, 1.2, -0.5, 0.7]]),
                  np.array([[1.5, -0.1], [0.2, -1.4]]), np.array([0.3, -0.2]),
                  np.array([0.1, 0.4])],
     lambda z, c, wi, wf: np_peep_c(z, c, wi, wf, cell_clip=0.6))
spec("lstm_peep_c_clip_only", ("lstm_peep_c", "lstm_peep_c_grad"),
     lambda z, c: _peep_c(z, c, cell_clip=0.6),
     lambda rng: [np.array([[0.3, -0.2, 2.0, 1.5, 0.4, -0.3, 1.0, 0.2],
                            [-1.0, 0.5, 1.5, -2.0, 0.8, 1.2, -0.5, 0.7]]),
                  np.array([[1.5, -0.1], [0.2, -1.4]])],
     lambda z, c: np_peep_c(z, c, cell_clip=0.6))
spec("lstm_peep_h", ("lstm_peep_h", "lstm_peep_h_grad"),
     lambda z, c, w: apply("lstm_peep_h", [z, c, w]),
     [uniform(2, 8), uniform(2, 2), uniform(2)], np_peep_h)
spec("lstm_peep_h_no_peephole", ("lstm_peep_h", "lstm_peep_h_grad"),
     lambda z, c: apply("lstm_peep_h", [z, c]), [uniform(3, 8), uniform(3, 2)], np_peep_h,
     dynamic=keep(1, 0, 1))


spec("batch_zeros", "batch_zeros", lambda b: rnn_ops.batch_zeros(b, (2, 3), gf.float64),
     [lambda rng: np.array(3, np.int32)], lambda b: np.zeros((3, 2, 3)), dtypes=("int32",),
     grad=(), value_shaped=True)

spec("max_pool_relu_grad", "max_pool_relu_grad",
     lambda g, x: apply("max_pool_relu_grad", [g, x], ksize=(2, 2), strides=(2, 2),
                        padding="VALID"),
     [uniform(2, 2, 2, 3), distinct(2, 5, 4, 3)],
     lambda g, x: np_max_pool_relu_grad(g, x), grad=())


def np_max_pool_relu_grad(g, x):
    """``g`` of each 2x2 window (stride 2, VALID) at its first maximum, where that
    maximum is above zero."""
    out = np.zeros_like(x)
    for i, j, cells in np_windows(x, 2, 2, 2, "VALID"):
        vals = np.stack([x[:, r, c, :] for r, c, _, _ in cells])
        first = vals.argmax(0)
        for k, (r, c, _, _) in enumerate(cells):
            take = (first == k) & (vals[k] > 0)
            out[:, r, c, :] += np.where(take, g[:, i, j, :], 0)
    return out

def np_max_select(h, x, k, s, padding):
    """``h`` at the first maximum of ``x`` in each window."""
    out = np.zeros(np_pool(x, k, s, padding, "max").shape, h.dtype)
    for i, j, cells in np_windows(x, k, k, s, padding):
        vals = np.stack([x[:, r, c, :] for r, c, _, _ in cells])
        hs = np.stack([h[:, r, c, :] for r, c, _, _ in cells])
        out[:, i, j, :] = np.take_along_axis(hs, vals.argmax(0)[None], 0)[0]
    return out


_CONV = [("conv2d_same", (1, 5, 5, 2), 1, "SAME"), ("conv2d_valid", (1, 5, 5, 2), 1, "VALID"),
         ("conv2d_same_stride2", (2, 5, 4, 2), 2, "SAME"),
         ("conv2d_valid_stride2", (1, 6, 5, 2), 2, "VALID")]
for _id, _shape, _s, _pad in _CONV:
    spec(_id, ("conv2d", "conv2d_backprop_input", "conv2d_backprop_filter"),
         lambda x, w, s=_s, p=_pad: gf.nn.conv2d(x, w, [1, s, s, 1], p),
         [uniform(*_shape), uniform(3, 3, 2, 2)],
         lambda x, w, s=_s, p=_pad: np_conv2d(x, w, s, p), dynamic=keep(1, 0, 1, 2, 3),
         tol={"float32": (1e-4, 1e-5)})
for _kind, _op in (("max", "max_pool"), ("avg", "avg_pool")):
    for _shape, _k, _s, _pad in [((1, 5, 5, 2), 2, 2, "SAME"), ((1, 5, 5, 2), 3, 2, "VALID"),
                                  ((2, 4, 3, 1), 3, 1, "SAME"),
                                  ((1, 5, 4, 2), 2, 2, "VALID")]:  # the last row is in no window
        spec(f"{_op}_{_pad.lower()}_k{_k}_s{_s}", (_op, f"{_op}_grad"),
             lambda x, o=_op, k=_k, s=_s, p=_pad: getattr(gf.nn, o)(x, k, s, p),
             [distinct(*_shape)], lambda x, t=_kind, k=_k, s=_s, p=_pad: np_pool(x, k, s, p, t))


def nchw(ref):
    """The NHWC reference ``ref`` of an op applied to NCHW arrays (its first argument)."""
    return lambda x, *rest: ref(x.transpose(0, 2, 3, 1), *rest).transpose(0, 3, 1, 2)


# data_format="NCHW": the same windows, strides and ksize in NCHW order
for _id, _shape, _s, _pad in _CONV:
    spec(f"{_id}_nchw", ("conv2d", "conv2d_backprop_input", "conv2d_backprop_filter",
                         "image_layout"),
         lambda x, w, s=_s, p=_pad: gf.nn.conv2d(x, w, [1, 1, s, s], p, data_format="NCHW"),
         [uniform(*(_shape[i] for i in (0, 3, 1, 2))), uniform(3, 3, 2, 2)],
         nchw(lambda x, w, s=_s, p=_pad: np_conv2d(x, w, s, p)), dynamic=keep(1, 0, 1, 2, 3),
         tol={"float32": (1e-4, 1e-5)})
for _kind, _op in (("max", "max_pool"), ("avg", "avg_pool")):
    for _shape, _k, _s, _pad in [((1, 2, 5, 5), 2, 2, "SAME"), ((1, 2, 5, 5), 3, 2, "VALID"),
                                  ((2, 1, 4, 3), 3, 1, "SAME"), ((1, 2, 5, 4), 2, 2, "VALID")]:
        spec(f"{_op}_nchw_{_pad.lower()}_k{_k}_s{_s}", (_op, f"{_op}_grad", "image_layout"),
             lambda x, o=_op, k=_k, s=_s, p=_pad: getattr(gf.nn, o)(
                 x, [1, 1, k, k], [1, 1, s, s], p, data_format="NCHW"),
             [distinct(*_shape)],
             nchw(lambda x, t=_kind, k=_k, s=_s, p=_pad: np_pool(x, k, s, p, t)))
spec("bias_add_nchw", ("add", "reshape"), lambda x, b: gf.nn.bias_add(x, b, data_format="NCHW"),
     [uniform(2, 3, 2, 2), uniform(3)], lambda x, b: x + b[:, None, None],
     dynamic=keep(0, 1))
spec("bias_add_nc_rank3", ("add", "reshape"), lambda x, b: gf.nn.bias_add(x, b, "NC..."),
     [uniform(2, 3, 4), uniform(3)], lambda x, b: x + b[:, None], dynamic=keep(0, 1))
spec("max_pool_select", ("max_pool_select", "max_pool_grad"),
     lambda h, x: apply("max_pool_select", [h, x], ksize=(2, 2), strides=(2, 2), padding="SAME"),
     [uniform(1, 5, 5, 2), distinct(1, 5, 5, 2)],
     lambda h, x: np_max_select(h, x, 2, 2, "SAME"), grad=(0,))


# -- TF1 array ops: range, fill, eye, tile, pad, slices, reverse, size, rank -------------


def _scalars(*values, dtype=np.float64):
    return lambda rng: [np.array(v, dtype) for v in values]


spec("range_int", "range", gf.range, _scalars(1, 10, 3, dtype=np.int32),
     lambda s, e, d: np.arange(s, e, d, dtype=s.dtype), dtypes=("int32",), value_shaped=True)
spec("range_negative_delta", "range", gf.range, _scalars(5, -2, -2, dtype=np.int64),
     lambda s, e, d: np.arange(s, e, d, dtype=s.dtype), dtypes=("int64",), value_shaped=True)
spec("range_limit_only", ("range", "cast"), lambda n: gf.range(n, dtype=gf.float32),
     _scalars(4, dtype=np.int32), lambda n: np.arange(n, dtype=np.float32),
     dtypes=("int32",), value_shaped=True)
spec("range_float", "range", gf.range, _scalars(1.5, 4.0, 0.5),
     lambda s, e, d: np.arange(s, e, d, dtype=s.dtype), no_grad=True, value_shaped=True)
spec("fill", "fill", lambda v: gf.fill([2, 3], v), [uniform()], lambda v: np.full((2, 3), v))
spec("fill_dims_tensor", ("fill", "shape"), lambda v, x: gf.fill(gf.shape(x), v),
     [uniform(), uniform(3, 2)], lambda v, x: np.full(x.shape, v), grad=(0,))
spec("fill_int", "fill", lambda v: gf.fill([3], v), _scalars(7, dtype=np.int32),
     lambda v: np.full((3,), v, np.int32), dtypes=("int32",))
spec("eye", ("constant", "add"), lambda x: x + gf.eye(3, 4, dtype=x.dtype), [uniform(3, 4)],
     lambda x: x + np.eye(3, 4, dtype=x.dtype))
spec("eye_batch", ("constant", "multiply"),
     lambda x: x * gf.eye(2, batch_shape=[3], dtype=x.dtype), [uniform(3, 2, 2)],
     lambda x: x * np.eye(2, dtype=x.dtype))
spec("eye_dynamic", ("range", "equal", "cast"), lambda n: gf.eye(n, dtype=gf.float64),
     _scalars(3, dtype=np.int32), lambda n: np.eye(int(n)), dtypes=("int32",),
     value_shaped=True)
spec("tile", ("tile", "tile_grad"), lambda x: gf.tile(x, [2, 3]), [uniform(2, 2)],
     lambda x: np.tile(x, (2, 3)))
spec("tile_rank3", ("tile", "tile_grad"), lambda x: gf.tile(x, [1, 2, 2]), [uniform(2, 1, 2)],
     lambda x: np.tile(x, (1, 2, 2)))
spec("tile_multiples_tensor", ("tile", "tile_grad", "shape"),
     lambda x, y: gf.tile(x, gf.shape(y)), [uniform(2, 2), uniform(2, 3)],
     lambda x, y: np.tile(x, y.shape), grad=(0,), value_shaped=True)
spec("tile_int", "tile", lambda x: gf.tile(x, [3, 1]), [ints(1, 3)], lambda x: np.tile(x, (3, 1)),
     dtypes=("int32",))
spec("pad", ("pad", "pad_grad"), lambda x: gf.pad(x, [[1, 0], [2, 1]]), [uniform(2, 3)],
     lambda x: np.pad(x, [(1, 0), (2, 1)]))
spec("pad_constant_values", ("pad", "pad_grad"),
     lambda x: gf.pad(x, [[0, 2], [1, 1], [0, 0]], constant_values=1.5), [uniform(2, 2, 2)],
     lambda x: np.pad(x, [(0, 2), (1, 1), (0, 0)], constant_values=1.5))
spec("pad_int", "pad", lambda x: gf.pad(x, [[1, 1]], constant_values=-7), [ints(3)],
     lambda x: np.pad(x, [(1, 1)], constant_values=-7), dtypes=("int32",))
spec("pad_reflect", ("pad", "pad_grad"), lambda x: gf.pad(x, [[1, 2], [2, 1]], "REFLECT"),
     [uniform(4, 3)], lambda x: np.pad(x, [(1, 2), (2, 1)], mode="reflect"))
spec("pad_symmetric", ("pad", "pad_grad"), lambda x: gf.pad(x, [[2, 1], [0, 3]], "symmetric"),
     [uniform(3, 3)], lambda x: np.pad(x, [(2, 1), (0, 3)], mode="symmetric"))
spec("slice", "getitem", lambda x: gf.slice(x, [1, 0], [2, -1]), [uniform(3, 4)],
     lambda x: x[1:3, 0:])
spec("slice_rank3", "getitem", lambda x: gf.slice(x, [0, 1, 1], [-1, 1, 2]), [uniform(2, 3, 3)],
     lambda x: x[:, 1:2, 1:3])
spec("strided_slice", "getitem",
     lambda x: gf.strided_slice(x, [1, 0, 0], [3, 0, 2], shrink_axis_mask=2), [uniform(3, 2, 4)],
     lambda x: x[1:3, 0, 0:2])
spec("strided_slice_masks", "getitem",
     lambda x: gf.strided_slice(x, [0, 0, 3], [0, 0, 0], [1, 1, -2], ellipsis_mask=1,
                                new_axis_mask=2, end_mask=4), [uniform(2, 2, 4)],
     lambda x: x[..., None, 3::-2])
spec("strided_slice_begin_end_masks", "getitem",
     lambda x: gf.strided_slice(x, [5, 1], [4, 3], [2, 1], begin_mask=1, end_mask=2),
     [uniform(5, 3)], lambda x: x[:4:2, 1:])
spec("reverse", "reverse", lambda x: gf.reverse(x, [1]), [uniform(3, 4)], lambda x: x[:, ::-1])
spec("reverse_v2_axes", "reverse", lambda x: gf.reverse_v2(x, [0, -1]), [uniform(2, 3, 2)],
     lambda x: x[::-1, :, ::-1])
spec("reverse_int", "reverse", lambda x: gf.reverse(x, 0), [ints(3, 2)], lambda x: x[::-1],
     dtypes=("int32",))
spec("size", "size", gf.size, [uniform(3, 4)], lambda x: np.array(x.size, np.int32), grad=())
spec("size_int64", "size", lambda x: gf.size(x, out_type=gf.int64), [ints(2, 0, 3)],
     lambda x: np.array(0, np.int64), dtypes=("int32",))
spec("rank", "rank", gf.rank, [uniform(3, 1, 2)], lambda x: np.array(3, np.int32), grad=())

# -- gather_nd and boolean_mask ------------------------------------------------------------


def _index_array(*rows, dtype=np.int32):
    return lambda rng: np.array(rows, dtype)


spec("gather_nd", ("gather", "merge_axes", "linear_index"), gf.gather_nd,
     [uniform(3, 4), _index_array([0, 1], [2, 3], [0, 1])], lambda p, i: p[tuple(i.T)],
     dynamic=keep(1, -1))
spec("gather_nd_slices", ("gather", "linear_index"), gf.gather_nd,
     [uniform(3, 2, 2), _index_array([1], [0], [1], dtype=np.int64)], lambda p, i: p[i[:, 0]],
     dynamic=keep(1, -1))
spec("gather_nd_nested_indices", ("gather", "merge_axes", "linear_index"), gf.gather_nd,
     [uniform(3, 4, 2), _index_array([[0, 1], [2, 3]], [[1, 1], [0, 0]])],
     lambda p, i: p[i[..., 0], i[..., 1]], dynamic=keep(1, -1))
spec("gather_nd_int", ("gather", "linear_index"), gf.gather_nd,
     [ints(3, 2, hi=9), _index_array([2, 1], [0, 0])], lambda p, i: p[tuple(i.T)],
     dtypes=("int32",), dynamic=keep(1, -1))
spec("boolean_mask", ("gather", "mask_indices"), gf.boolean_mask,
     [uniform(4, 3), lambda rng: np.array([True, False, True, True])], lambda t, m: t[m],
     value_shaped=True)
spec("boolean_mask_2d", ("merge_axes", "mask_indices", "gather"), gf.boolean_mask,
     [uniform(2, 3, 2), lambda rng: np.array([[True, False, True], [False, False, True]])],
     lambda t, m: t[m], value_shaped=True)
spec("boolean_mask_axis1", ("mask_indices", "gather"),
     lambda t, m: gf.boolean_mask(t, m, axis=1),
     [uniform(2, 3, 2), lambda rng: np.array([False, True, True])], lambda t, m: t[:, m],
     value_shaped=True)
spec("boolean_mask_none", ("mask_indices", "gather"), gf.boolean_mask,
     [uniform(3), lambda rng: np.zeros(3, bool)], lambda t, m: t[m], value_shaped=True)

# -- split of an axis of unknown size -----------------------------------------------------


def _part(x, num, index, sizes=None, squeeze=False, axis=0):
    return apply("split_part", [x], axis=axis, num=num, sizes=sizes, index=index,
                 squeeze=squeeze, tensor=x.name)


spec("split_part", "split_part", lambda x: _part(x, 3, 1), [uniform(6, 2)], lambda x: x[2:4])
spec("split_part_sizes", "split_part", lambda x: _part(x, 3, 1, (1, -1, 1), axis=1),
     [uniform(2, 5)], lambda x: x[:, 1:4])
spec("split_part_squeeze", "split_part", lambda x: _part(x, 3, 2, squeeze=True, axis=1),
     [uniform(2, 3)], lambda x: x[:, 2])
spec("split_part_grad", "split_part_grad",
     lambda g, x: apply("split_part_grad", [g, x], axis=1, num=2, sizes=None, index=1,
                        squeeze=False, tensor="x"),
     [uniform(2, 2), uniform(2, 4)],
     lambda g, x: np.concatenate([np.zeros_like(g), g], 1), grad=(0,))
spec("split_unknown_axis", "getitem", lambda x: gf.split(x, 2, 0), [uniform(4, 3)],
     lambda x: np.split(x, 2, 0))
spec("split_sizes_unknown_axis", "getitem", lambda x: gf.split(x, [2, -1], 1), [uniform(2, 5)],
     lambda x: np.split(x, [2], 1))
spec("unstack_num_unknown_axis", "getitem", lambda x: gf.unstack(x, num=3, axis=1),
     [uniform(2, 3)], lambda x: list(np.moveaxis(x, 1, 0)))

# -- reductions over bools, deprecated argument names -------------------------------------------

spec("reduce_any", "reduce_any", lambda x: gf.reduce_any(x, 1), [bools(3, 4)],
     lambda x: np.any(x, 1), dtypes=("bool",))
spec("reduce_all", "reduce_all", gf.reduce_all, [bools(2, 2)], np.all, dtypes=("bool",))
spec("reduce_all_deprecated_args", "reduce_all",
     lambda x: gf.reduce_all(x, reduction_indices=[0], keep_dims=True),
     [lambda rng: np.array([[True, False, True], [True, True, True]])],
     lambda x: np.all(x, 0, keepdims=True), dtypes=("bool",))
spec("reduce_sum_reduction_indices", "reduce_sum",
     lambda x: gf.reduce_sum(x, reduction_indices=1, keep_dims=True), [uniform(3, 4)],
     lambda x: np.sum(x, 1, keepdims=True))
spec("reduce_mean_reduction_indices", ("reduce_sum", "divide"),
     lambda x: gf.reduce_mean(x, reduction_indices=[0]), [uniform(3, 4)],
     lambda x: np.mean(x, 0))
spec("arg_max", "argmax", lambda x: gf.arg_max(x, 1), [distinct(3, 4)],
     lambda x: np.argmax(x, 1).astype(np.int64))
spec("arg_min_dimension", "argmin", lambda x: gf.argmin(x, dimension=0), [distinct(3, 4)],
     lambda x: np.argmin(x, 0).astype(np.int64))
spec("to_float", "cast", gf.to_float, [ints(3, 4, lo=-5)], lambda x: x.astype(np.float32),
     dtypes=("int32",))
spec("to_int64", "cast", gf.to_int64, [off_integer(3, 4)], lambda x: x.astype(np.int64))

# -- floor division and modulo ---------------------------------------------------------------


def _away_from_jumps(rng):
    """``x = y (k + f)`` with ``f`` in [0.2, 0.8]: floor(x / y) is not at a jump."""
    y = rng.choice([-1.5, -0.75, 1.25, 2.0], (4,))
    return [y * (rng.integers(-3, 3, (3, 4)) + rng.uniform(0.2, 0.8, (3, 4))), y]


spec("floormod", "floor_mod", gf.floormod, _away_from_jumps, np.mod)
spec("mod_int", "floor_mod", gf.mod,
     [ints(3, 4, lo=-9, hi=9), lambda rng: rng.choice([-3, -2, 2, 5], (4,)).astype(np.int32)],
     np.mod, dtypes=("int32",))
spec("floor_div_alias", "floor_divide", gf.floor_div,
     [ints(3, 4, lo=-9, hi=9, dtype=np.int64),
      lambda rng: rng.choice([-3, 2], (4,)).astype(np.int64)],
     np.floor_divide, dtypes=("int64",))

# -- cumsum ------------------------------------------------------------------------------------

def np_exclusive_cumsum(x, axis):
    """The sums of the elements before each one (not ``cumsum - x``, which a NaN or an
    infinity at that element would spoil)."""
    shifted = np.moveaxis(x, axis, 0)[:-1]
    zero = np.zeros((1,) + shifted.shape[1:], x.dtype)
    return np.moveaxis(np.concatenate([zero, np.cumsum(shifted, 0)]), 0, axis)


spec("cumsum", "cumsum", gf.cumsum, [uniform(3, 4)], lambda x: np.cumsum(x, 0))
spec("cumsum_exclusive_reverse", "cumsum",
     lambda x: gf.cumsum(x, axis=-1, exclusive=True, reverse=True), [uniform(2, 4)],
     lambda x: np.flip(np_exclusive_cumsum(np.flip(x, -1), -1), -1))
spec("cumsum_exclusive", "cumsum", lambda x: gf.cumsum(x, 1, exclusive=True), [uniform(2, 3, 2)],
     lambda x: np_exclusive_cumsum(x, 1))
spec("cumsum_reverse_int", "cumsum", lambda x: gf.cumsum(x, reverse=True), [ints(4, lo=-5)],
     lambda x: np.flip(np.cumsum(np.flip(x))).astype(np.int32), dtypes=("int32",))

# -- cumprod (math_ops.py): its gradient is exact at zeros, so the zero specs check it there ------


def np_cumprod(x, axis, exclusive=False, reverse=False):
    """TF1's cumprod: the products up to (``exclusive``: before) each element."""
    x = np.moveaxis(x, axis, 0)
    x = np.flip(x, 0) if reverse else x
    if exclusive:
        x = np.concatenate([np.ones((1,) + x.shape[1:], x.dtype), x])[:-1]
    out = np.cumprod(x, 0)
    return np.moveaxis(np.flip(out, 0) if reverse else out, 0, axis)


def with_zeros(*shape):
    """Values in [0.5, 1.5] with random signs, and exact zeros: one or two per row."""
    def gen(rng):
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        x[..., 1] = 0.0
        x[::2, ..., -2] = 0.0
        return x

    return gen


spec("cumprod", "cumprod", gf.cumprod, [nonzero(3, 4, lo=0.5, hi=1.5)],
     lambda x: np_cumprod(x, 0))
spec("cumprod_exclusive_reverse", "cumprod",
     lambda x: gf.math.cumprod(x, axis=1, exclusive=True, reverse=True),
     [nonzero(2, 4, lo=0.5, hi=1.5)], lambda x: np_cumprod(x, 1, True, True))
spec("cumprod_zeros", "cumprod", lambda x: gf.cumprod(x, axis=1), [with_zeros(3, 5)],
     lambda x: np_cumprod(x, 1))
spec("cumprod_zeros_exclusive_reverse", "cumprod",
     lambda x: gf.cumprod(x, axis=1, exclusive=True, reverse=True), [with_zeros(3, 5)],
     lambda x: np_cumprod(x, 1, True, True))
spec("cumprod_zeros_reverse_3d", "cumprod", lambda x: gf.cumprod(x, axis=1, reverse=True),
     [lambda rng: np.moveaxis(with_zeros(2, 2, 4)(rng), 2, 1)],
     lambda x: np_cumprod(x, 1, False, True))
spec("cumprod_int", "cumprod", lambda x: gf.cumprod(x, exclusive=True), [ints(4, lo=-3)],
     lambda x: np_cumprod(x, 0, True).astype(np.int32), dtypes=("int32",))

# -- tensordot, einsum, norm ----------------------------------------------------------------------

spec("tensordot", "tensordot", lambda a, b: gf.tensordot(a, b, 1), [uniform(2, 3), uniform(3, 4)],
     lambda a, b: np.tensordot(a, b, 1))
spec("tensordot_axis_pairs", "tensordot", lambda a, b: gf.tensordot(a, b, [[1, 2], [2, 0]]),
     [uniform(2, 3, 4), uniform(4, 2, 3)], lambda a, b: np.tensordot(a, b, [[1, 2], [2, 0]]))
spec("tensordot_scalar_axes", "tensordot", lambda a, b: gf.tensordot(a, b, [0, -1]),
     [uniform(3, 2), uniform(2, 3)], lambda a, b: np.tensordot(a, b, [[0], [1]]))
spec("tensordot_outer", "tensordot", lambda a, b: gf.tensordot(a, b, 0),
     [uniform(2), uniform(3)], np.multiply.outer)
spec("tensordot_int", "tensordot", lambda a, b: gf.tensordot(a, b, 2),
     [ints(2, 3, lo=-3), ints(2, 3, lo=-3)], lambda a, b: np.tensordot(a, b, 2),
     dtypes=("int32",))

_EINSUM = [
    ("matmul", "ij,jk->ik", [(2, 3), (3, 4)], "tensordot"),
    ("batch_matmul", "bij,bjk->bik", [(2, 2, 3), (2, 3, 2)], "matmul"),
    ("dot", "i,i->", [(3,), (3,)], "tensordot"),
    ("transpose", "ij->ji", [(2, 3)], "transpose"),
    ("sum", "ij->j", [(2, 3)], "reduce_sum"),
    ("outer", "i,j->ij", [(2,), (3,)], "multiply"),
    ("batch_dot", "bi,bi->b", [(2, 3), (2, 3)], ("matmul", "squeeze")),
    ("attention", "bhqd,bhkd->bhqk", [(1, 2, 3, 2), (1, 2, 2, 2)], ("matmul", "transpose")),
    ("implicit", "ij,jk", [(2, 3), (3, 2)], "tensordot"),
    ("ellipsis", "...ij,...jk->...ik", [(2, 2, 3), (2, 3, 2)], "matmul"),
    ("chain", "ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)], "tensordot"),
    ("broadcast_sum", "bij,bkj->bik", [(2, 2, 2), (2, 3, 2)], "matmul"),
    ("elementwise", "ij,ij->ij", [(2, 3), (2, 3)], "multiply"),
    ("batch_two_free", "bij,bkl->bijkl", [(2, 1, 2), (2, 2, 1)], "multiply"),
    ("contract_two", "bijk,bjk->bi", [(2, 2, 2, 3), (2, 2, 3)], ("multiply", "reduce_sum")),
]
for _id, _eq, _shapes, _ops in _EINSUM:
    spec(f"einsum_{_id}", _ops, lambda *xs, eq=_eq: gf.einsum(eq, *xs),
         [uniform(*s) for s in _shapes], lambda *xs, eq=_eq: np.einsum(eq, *xs))


def _signed_distinct(*shape):
    """Distinct magnitudes with random signs: no ties in |x| for max norms."""
    gen = distinct(*shape, lo=0.3, hi=2.0)
    return lambda rng: gen(rng) * rng.choice([-1.0, 1.0], shape)


spec("norm", ("square", "reduce_sum", "sqrt"), gf.norm, [uniform(3, 4)],
     lambda x: np.linalg.norm(x.reshape(-1)))
spec("norm_axis_keepdims", ("square", "reduce_sum", "sqrt"),
     lambda x: gf.norm(x, axis=1, keepdims=True), [uniform(3, 4)],
     lambda x: np.linalg.norm(x, axis=1, keepdims=True))
spec("norm_ord1", ("abs", "reduce_sum"), lambda x: gf.norm(x, ord=1, axis=0), [nonzero(3, 4)],
     lambda x: np.linalg.norm(x, 1, axis=0))
spec("norm_inf", ("abs", "reduce_max"), lambda x: gf.norm(x, ord=np.inf, axis=-1),
     [_signed_distinct(3, 4)], lambda x: np.linalg.norm(x, np.inf, axis=-1))
spec("norm_p3", ("abs", "pow", "reduce_sum"), lambda x: gf.norm(x, ord=3, axis=1),
     [nonzero(2, 3)], lambda x: np.linalg.norm(x, 3, axis=1))
spec("norm_fro", ("square", "reduce_sum", "sqrt"), lambda x: gf.norm(x, "fro", axis=(1, 2)),
     [uniform(2, 3, 2)], lambda x: np.linalg.norm(x, "fro", axis=(1, 2)))
spec("norm_matrix_ord1", ("abs", "reduce_sum", "reduce_max"),
     lambda x: gf.norm(x, 1, axis=[0, 1]), [_signed_distinct(3, 4)],
     lambda x: np.linalg.norm(x, 1, axis=(0, 1)))
spec("norm_matrix_inf", ("abs", "reduce_sum", "reduce_max"),
     lambda x: gf.norm(x, np.inf, axis=(-2, -1), keep_dims=True), [_signed_distinct(2, 3, 3)],
     lambda x: np.linalg.norm(x, np.inf, axis=(-2, -1), keepdims=True))


# control flow (gradflow/ops/control_flow_ops.py): each branch and the loop body read tensors
# from outside, so gradients reach them through the cond/while node; more in
# test_control_flow.py
def _cond_spec(positive):
    def fn(x, y):
        pred = gf.reduce_sum(x * x) >= 0.0 if positive else gf.reduce_sum(x * x) < 0.0
        return gf.cond(pred, lambda: gf.exp(x) * y, lambda: gf.tanh(x) * y * y)

    return fn


spec("cond_true", ("cond", "tuple_get"), _cond_spec(True), [uniform(2, 3), uniform(3)],
     lambda x, y: np.exp(x) * y)
spec("cond_false", ("cond", "tuple_get"), _cond_spec(False), [uniform(2, 3), uniform(3)],
     lambda x, y: np.tanh(x) * y * y)
spec("cond_two_outputs", ("cond", "tuple_get"),
     lambda x, y: gf.cond(gf.reduce_sum(y) > 100.0, lambda: (x, y),
                          lambda: [gf.square(x) * y, gf.exp(y) + gf.reduce_sum(x)]),
     [uniform(2, 3), uniform(3)],
     lambda x, y: [np.square(x) * y, np.exp(y) + x.sum()])


def _loop(x, w):
    _, out = gf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, gf.tanh(v * w) + x), (0, x))
    return out


def _np_loop(x, w):
    v = x
    for _ in range(3):
        v = np.tanh(v * w) + x
    return v


# the gradient of the backward loop is not supported: no second order
spec("while_loop", ("while", "while_grad", "while_loop_var", "tuple_get"), _loop,
     [uniform(2, 3), uniform(3, lo=-1.0, hi=1.0)], _np_loop, second_order=False)
spec("check_numerics", "check_numerics", lambda x: gf.check_numerics(x, "spec"),
     [uniform(3, 4)], lambda x: x)
spec("Print", "Print", lambda x, y: gf.Print(x, [x, y], "op_specs Print: ", first_n=1),
     [uniform(2, 3), uniform(2)], lambda x, y: x)


def _allreduce_alone(x):
    hvd.init(engine="local")  # a job of this one process (does nothing if init() ran)
    return hvd.allreduce(x * x)


# hvd.allreduce in a job of one process is the identity, and so is its gradient
spec("dist_allreduce", "dist_allreduce", _allreduce_alone, [uniform(2, 3)],
     lambda x: x * x)

# -- TF1 core extras: trigonometry, tests of floats, logsumexp, shape builders, case and
# the higher-order functions (gradflow/ops/math_ops.py, array_ops.py, shape_ops.py,
# control_flow_ops.py, functional_ops.py)
_unary("sin", uniform, np.sin)
_unary("cos", uniform, np.cos)
_unary("expm1", lambda *s: uniform(*s, lo=-2.0, hi=1.0), np.expm1)
_unary("ceil", off_integer, np.ceil, **_flat)
for _test, _ref in (("is_finite", np.isfinite), ("is_nan", np.isnan), ("is_inf", np.isinf)):
    spec(_test, _test, getattr(gf, _test),
         lambda rng: [np.array([[1.5, np.inf, -np.inf], [np.nan, -0.25, 3.0]])], _ref)
spec("reduce_logsumexp", ("reduce_max", "reduce_sum", "exp", "log", "is_finite", "where"),
     lambda x: gf.reduce_logsumexp(x, axis=1),
     [distinct(3, 4)], lambda x: np.log(np.exp(x).sum(1)))
spec("reduce_logsumexp_large_keepdims", ("reduce_max", "reduce_sum", "exp", "log"),
     lambda x: gf.reduce_logsumexp(x * 100.0, axis=0, keepdims=True),
     [distinct(3, 2)],
     lambda x: (lambda y: np.log(np.exp(y - y.max(0)).sum(0, keepdims=True)) + y.max(0))(
         x * 100.0), grad_tol=(1e-4, 1e-5))
spec("count_nonzero", ("not_equal", "cast", "reduce_sum"),
     lambda x: gf.count_nonzero(x, axis=1), [integral(3, 4, lo=-1, hi=2)],
     lambda x: np.count_nonzero(x, axis=1).astype(np.int64))
spec("linspace", ("subtract", "multiply", "add"),
     lambda a, b: gf.linspace(a, b, 5), [uniform(), uniform()],
     lambda a, b: a + (b - a) * np.linspace(0.0, 1.0, 5).astype(a.dtype))
spec("meshgrid", ("reshape", "zeros_like", "add"),
     lambda x, y: [a * 1.0 for a in gf.meshgrid(x, y)], [uniform(3), uniform(2)],
     lambda x, y: list(np.meshgrid(x, y)))
spec("meshgrid_ij", ("reshape", "zeros_like", "add"),
     lambda x, y: gf.meshgrid(x, y, indexing="ij"), [uniform(3), uniform(2)],
     lambda x, y: list(np.meshgrid(x, y, indexing="ij")))
spec("sequence_mask", ("range", "less", "expand_dims", "reduce_max"),
     lambda n: gf.sequence_mask(n), [ints(2, 3, lo=0, hi=5)],
     lambda n: np.arange(n.max()) < n[..., None], dtypes=("int32",), value_shaped=True)
spec("case", ("cond", "tuple_get", "assert"),
     lambda x, y: gf.case([(gf.reduce_sum(y) > 100.0, lambda: x * 2.0),
                           (gf.reduce_sum(y) > -100.0, lambda: gf.exp(x) * y)],
                          default=lambda: x, exclusive=True),
     [uniform(2, 3), uniform(3)], lambda x, y: np.exp(x) * y)
spec("map_fn", ("getitem", "concat", "matmul"),
     lambda x, w: gf.map_fn(lambda row: gf.tanh(gf.matmul(row[None, :], w))[0], x),
     [uniform(3, 2), uniform(2, 4)], lambda x, w: np.tanh(x @ w), dynamic=keep(0, 0))
spec("scan_and_foldr", ("getitem", "concat", "multiply", "add"),
     lambda x: [gf.scan(lambda acc, e: acc * 0.5 + e, x),
                gf.foldr(lambda acc, e: acc * e, x, initializer=gf.ones_like(x[0]))],
     [uniform(4, 2)],
     lambda x: [np.stack([sum(x[j] * 0.5 ** (i - j) for j in range(i + 1))
                          for i in range(4)]), np.prod(x, 0)], dynamic=keep(0, 0))


# -- tf.nn activations, l2_normalize, weighted cross-entropy, top_k, in_top_k, conv1d and
# conv2d_transpose (gradflow/prim/activation.py, nn.py, sort.py, conv.py) --

_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _away_from(*kinks, lo=-2.0, hi=8.0):
    """Uniform values at least 0.2 from every kink (relu6's 0 and 6)."""
    def make(*shape):
        def gen(rng):
            x = rng.uniform(lo, hi, shape)
            for k in kinks:
                near = np.abs(x - k) < 0.2
                x = np.where(near, k + np.sign(x - k + 1e-9) * 0.4, x)
            return x

        return gen

    return make


def _extremes(*values):
    return lambda rng: [np.array(values)]


def np_elu(x, alpha=1.0, scale=1.0):
    return scale * np.where(x > 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1))


def np_swish(x, beta=1.0):
    return x * np.exp(-np.logaddexp(0, -beta * x))  # sigmoid without overflow


_relu6_inputs = _away_from(0.0, 6.0)
spec("relu6", ("relu6", "relu6_grad"), gf.nn.relu6, [_relu6_inputs(3, 4)],
     lambda x: np.minimum(np.maximum(x, 0), 6))
spec("relu6_int", "relu6", gf.nn.relu6, [ints(3, 4, lo=-3, hi=10)],
     lambda x: np.clip(x, 0, 6), dtypes=("int32",))
spec("relu6_grad", "relu6_grad", lambda g, x: apply("relu6_grad", [g, x]),
     [uniform(3, 4), _relu6_inputs(3, 4)],
     lambda g, x: np.where((x > 0) & (x < 6), g, 0).astype(g.dtype), grad=(0,))
spec("elu", ("elu", "elu_grad"), gf.nn.elu, [nonzero(3, 4, hi=3.0)], np_elu)
spec("elu_extreme", ("elu", "elu_grad"), gf.nn.elu, _extremes(-800.0, -40.0, -1.0, 0.5, 800.0),
     np_elu)
spec("selu", ("elu", "elu_grad"), gf.nn.selu, [nonzero(3, 4, hi=3.0)],
     lambda x: np_elu(x, _SELU_ALPHA, _SELU_SCALE))
spec("selu_extreme", ("elu", "elu_grad"), gf.nn.selu, _extremes(-900.0, -30.0, -0.5, 2.0, 900.0),
     lambda x: np_elu(x, _SELU_ALPHA, _SELU_SCALE))
spec("softsign", ("softsign", "abs", "square", "divide"), gf.nn.softsign,
     [nonzero(3, 4, hi=4.0)], lambda x: x / (1 + np.abs(x)))
spec("softsign_extreme", "softsign", gf.nn.softsign, _extremes(-1e6, -3.0, 0.0, 2.0, 1e6),
     lambda x: x / (1 + np.abs(x)))
spec("swish", ("swish", "swish_grad", "sigmoid"), gf.nn.swish,
     [uniform(3, 4, lo=-4.0, hi=4.0)], np_swish)
spec("swish_extreme", ("swish", "swish_grad"), gf.nn.swish,
     _extremes(-800.0, -30.0, -1.0, 0.0, 2.0, 800.0), np_swish)
spec("silu_beta", ("swish", "swish_grad"), lambda x: gf.nn.silu(x, beta=1.5),
     [uniform(3, 4, lo=-4.0, hi=4.0)], lambda x: np_swish(x, 1.5))
spec("swish_beta_tensor", ("sigmoid", "multiply"), lambda x, b: gf.nn.swish(x, beta=b),
     [uniform(3, 4), positive()], lambda x, b: np_swish(x, b))
spec("leaky_relu_alpha_above_one", ("leaky_relu", "leaky_relu_grad"),
     lambda x: gf.nn.leaky_relu(x, alpha=1.5), [nonzero(3, 4)],
     lambda x: np.where(x > 0, x, 1.5 * x))
spec("leaky_relu_int", ("cast", "leaky_relu"), gf.nn.leaky_relu, [ints(3, 4, lo=-5)],
     lambda x: np.where(x > 0, x, 0.2 * x).astype(np.float32), dtypes=("int32",))
spec("leaky_relu_alpha_tensor", ("where", "multiply"), lambda x, a: gf.nn.leaky_relu(x, a),
     [nonzero(3, 4), positive(lo=0.1, hi=0.5)], lambda x, a: np.where(x > 0, x, a * x))
spec("softplus_extreme", ("softplus", "sigmoid"), gf.nn.softplus,
     _extremes(-800.0, -40.0, 0.0, 1.5, 40.0, 800.0), np_softplus)
spec("crelu", ("relu", "negative", "concat"), gf.nn.crelu, [nonzero(3, 2)],
     lambda x: np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], -1))
spec("crelu_axis0", ("relu", "negative", "concat"), lambda x: gf.nn.crelu(x, axis=0),
     [nonzero(2, 3)], lambda x: np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], 0))

_l2n = ("square", "reduce_sum", "maximum", "sqrt", "divide")
spec("l2_normalize", _l2n, gf.nn.l2_normalize, [uniform(3, 4)],
     lambda x: x / np.sqrt(np.sum(x * x)))
spec("l2_normalize_axis", _l2n, lambda x: gf.nn.l2_normalize(x, axis=1), [uniform(3, 4)],
     lambda x: x / np.linalg.norm(x, axis=1, keepdims=True))
spec("l2_normalize_dim_list", _l2n, lambda x: gf.nn.l2_normalize(x, dim=[0, 2]),
     [uniform(2, 3, 2)], lambda x: x / np.sqrt(np.sum(x * x, axis=(0, 2), keepdims=True)))
spec("l2_normalize_epsilon", _l2n, lambda x: gf.nn.l2_normalize(x, -1, epsilon=4.0),
     [uniform(3, 4, lo=-0.5, hi=0.5)], lambda x: x / 2.0)  # every row's sum of squares < 4


def np_weighted_ce(z, x, q):
    # the definition: q z (-log sigmoid x) + (1 - z) (-log(1 - sigmoid x))
    return q * z * np.logaddexp(0, -x) + (1 - z) * np.logaddexp(0, x)


_wce = ("softplus", "negative", "multiply", "add", "subtract")
spec("weighted_cross_entropy_with_logits", _wce,
     lambda z, x, q: gf.nn.weighted_cross_entropy_with_logits(labels=z, logits=x, pos_weight=q),
     [uniform(3, 4, lo=0.0, hi=1.0), nonzero(3, 4, hi=5.0), positive(4, lo=0.5, hi=3.0)],
     np_weighted_ce)
spec("weighted_cross_entropy_targets_scalar_weight", _wce,
     lambda z, x: gf.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=2.5),
     lambda rng: [np.array([0.0, 1.0, 1.0, 0.0, 0.3, 1.0]),
                  np.array([-900.0, -900.0, 0.0, 0.0, 30.0, 900.0])],
     lambda z, x: np_weighted_ce(z, x, 2.5))


def np_top_k(x, k):
    key = -x.astype(np.int64) if x.dtype.kind in "iu" else -x  # -(-2**31) wraps in int32
    order = np.argsort(key, axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, order, -1), order.astype(np.int32)


_topk = ("top_k", "top_k_flat_index", "reshape", "gather", "gather_grad")
spec("top_k", _topk, lambda x: gf.nn.top_k(x, 3).values, [distinct(3, 5)],
     lambda x: np_top_k(x, 3)[0])
spec("top_k_default_k_rank1", _topk, lambda x: gf.nn.top_k(x).values, [distinct(5)],
     lambda x: np_top_k(x, 1)[0])
spec("top_k_rank3_all", _topk, lambda x: gf.nn.top_k(x, k=3).values, [distinct(2, 2, 3)],
     lambda x: np_top_k(x, 3)[0])
spec("top_k_indices_ties", ("top_k",), lambda x: list(gf.nn.top_k(x, 3)),
     [integral(4, 6, lo=-1, hi=2)], lambda x: list(np_top_k(x, 3)))
spec("top_k_int", ("top_k", "gather"), lambda x: list(gf.nn.top_k(x, 2)), [ints(3, 4, hi=3)],
     lambda x: list(np_top_k(x, 2)), dtypes=("int32",))


def np_in_top_k(p, t, k):
    out = np.zeros(len(t), bool)
    for b, target in enumerate(t):
        if 0 <= target < p.shape[1] and np.all(np.isfinite(p[b])):
            out[b] = np.sum(p[b] > p[b, target]) < k
    return out


def _in_top_k_inputs(rng):
    p = rng.integers(-2, 3, (6, 5)).astype(np.float64)  # ties
    p[4, 2] = np.inf
    return [p, np.array([0, 1, 2, 4, 3, 5], np.int32)]  # 5 is out of range


spec("in_top_k", "in_top_k", lambda p, t: gf.nn.in_top_k(p, t, 2), _in_top_k_inputs,
     lambda p, t: np_in_top_k(p, t, 2))
spec("in_top_k_k_tensor", "in_top_k", gf.nn.in_top_k,
     lambda rng: _in_top_k_inputs(rng) + [np.array(1, np.int64)], np_in_top_k)


def np_conv1d(x, w, s, padding):
    return np_conv2d(x[:, None], w[None], s, padding)[:, 0]


def np_conv2d_transpose(g, w, out_shape, s, padding):
    """Each value scatters ``value * filter`` onto the output window it would come from."""
    n, h, wd, co = g.shape
    kh, kw, c, _ = w.shape
    _, oh, ow, _ = out_shape
    pads = []
    for size, k, got in ((oh, kh, h), (ow, kw, wd)):
        total = 0 if padding == "VALID" else max((got - 1) * s + k - size, 0)
        pads.append(total // 2)
    out = np.zeros((n, oh + kh + s * h, ow + kw + s * wd, c), g.dtype)
    for i in range(h):
        for j in range(wd):
            for a in range(kh):
                for b in range(kw):
                    r, q = i * s + a, j * s + b
                    out[:, r, q, :] += g[:, i, j, :] @ w[a, b].T
    return out[:, pads[0]:pads[0] + oh, pads[1]:pads[1] + ow, :]


_conv = ("conv2d", "conv2d_backprop_input", "conv2d_backprop_filter")
for _id, _shape, _k, _s, _pad in [("conv1d_same_stride2", (2, 7, 3), 3, 2, "SAME"),
                                  ("conv1d_valid", (1, 6, 2), 2, 1, "VALID")]:
    spec(_id, _conv + ("expand_dims", "squeeze"),
         lambda x, w, s=_s, p=_pad: gf.nn.conv1d(x, w, s, p),
         [uniform(*_shape), uniform(_k, _shape[2], 2)],
         lambda x, w, s=_s, p=_pad: np_conv1d(x, w, s, p), dynamic=keep(1, 0, 1, 2))
spec("conv1d_input_alias_stride_list", _conv + ("expand_dims", "squeeze"),
     lambda x, w: gf.nn.conv1d(input=x, filters=w, stride=[1, 1, 1], padding="SAME"),
     [uniform(1, 4, 2), uniform(3, 2, 2)], lambda x, w: np_conv1d(x, w, 1, "SAME"),
     dynamic=keep(1, 0, 1, 2))

_convt = ("conv2d_transpose", "conv2d", "conv2d_backprop_filter")
_CONVT = [("conv2d_transpose_same_stride2", (2, 3, 3, 2), (3, 3), (2, 6, 6, 1), 2, "SAME"),
          ("conv2d_transpose_same_odd", (1, 3, 2, 2), (3, 2), (1, 5, 3, 2), 2, "SAME"),
          ("conv2d_transpose_valid_stride2", (1, 3, 2, 2), (3, 3), (1, 7, 5, 1), 2, "VALID"),
          ("conv2d_transpose_same_stride1", (1, 3, 3, 1), (2, 2), (1, 3, 3, 2), 1, "SAME")]
for _id, _vshape, _ks, _oshape, _s, _pad in _CONVT:
    spec(_id, _convt,
         lambda g, w, o=_oshape, s=_s, p=_pad: gf.nn.conv2d_transpose(g, w, o, [1, s, s, 1], p),
         [uniform(*_vshape), uniform(*_ks, _oshape[3], _vshape[3])],
         lambda g, w, o=_oshape, s=_s, p=_pad: np_conv2d_transpose(g, w, o, s, p),
         dynamic=keep(1, 0, 1, 2, 3))
for _id, _vshape, _ks, _oshape, _s, _pad in _CONVT[:3]:
    spec(f"{_id}_nchw", _convt + ("image_layout",),
         lambda g, w, o=_oshape, s=_s, p=_pad: gf.nn.conv2d_transpose(
             g, w, [o[i] for i in (0, 3, 1, 2)], [1, 1, s, s], p, data_format="NCHW"),
         [uniform(*(_vshape[i] for i in (0, 3, 1, 2))), uniform(*_ks, _oshape[3], _vshape[3])],
         nchw(lambda g, w, o=_oshape, s=_s, p=_pad: np_conv2d_transpose(g, w, o, s, p)),
         dynamic=keep(1, 0, 1, 2, 3))
spec("conv2d_transpose_nchw_shape_list", _convt + ("image_layout", "expand_dims", "concat"),
     lambda g, w: gf.nn.conv2d_transpose(g, w, [gf.shape(g)[0], 1, 6, 5], 2, "SAME",
                                         data_format="NCHW"),
     [uniform(2, 2, 3, 3), uniform(2, 3, 1, 2)],
     nchw(lambda g, w: np_conv2d_transpose(g, w, (2, 6, 5, 1), 2, "SAME")),
     dynamic=keep(1, 0, 1, 2, 3))
spec("conv2d_transpose_nchw_shape_tensor", _convt + ("image_layout", "gather"),
     lambda g, w: gf.nn.conv2d_transpose(g, w, gf.shape(g) * [1, 1, 2, 2], 2, "SAME",
                                         data_format="NCHW"),
     [uniform(2, 2, 3, 3), uniform(2, 3, 2, 2)],
     nchw(lambda g, w: np_conv2d_transpose(g, w, (2, 6, 6, 2), 2, "SAME")),
     dynamic=keep(1, 0, 1, 2, 3), value_shaped=True)
spec("conv2d_transpose_shape_tensor", _convt + ("expand_dims", "concat"),
     lambda g, w: gf.nn.conv2d_transpose(g, w, [gf.shape(g)[0], 6, 5, 1], 2, "SAME"),
     [uniform(2, 3, 3, 2), uniform(2, 3, 1, 2)],
     lambda g, w: np_conv2d_transpose(g, w, (2, 6, 5, 1), 2, "SAME"), dynamic=keep(1, 0, 1, 2, 3))

# -- normalization and tf.losses (gradflow/ops/normalization_ops.py, gradflow/losses.py):
# composites, so these check their gradients through the statistics and the reductions;
# more in tests/test_batch_norm.py and tests/test_losses_metrics.py


def np_moments(x, axes, keepdims=False):
    return [x.mean(axes, keepdims=keepdims), x.var(axes, keepdims=keepdims)]


def np_bn(x, mean, var, offset, scale, eps):
    return (x - mean) / np.sqrt(var + eps) * (1.0 if scale is None else scale) + \
        (0.0 if offset is None else offset)


def np_fused_train(x, scale, offset, eps=0.001):
    mean, var = np_moments(x, (0, 1, 2))
    n = x.size / x.shape[-1]
    return [np_bn(x, mean, var, offset, scale, eps), mean, var * n / (n - 1)]


spec("bn_moments", ("reduce_sum", "divide", "squeeze"), lambda x: gf.nn.moments(x, [0]),
     [uniform(4, 3)], lambda x: np_moments(x, 0))
spec("bn_moments_keep_dims", ("reduce_sum", "divide"),
     lambda x: gf.nn.moments(x, [0, 1, 2], keep_dims=True), [uniform(2, 2, 2, 2)],
     lambda x: np_moments(x, (0, 1, 2), True))
spec("bn_batch_normalization", ("divide", "sqrt", "multiply", "add"),
     lambda x, m, v, o, s: gf.nn.batch_normalization(x, m, v, o, s, 1e-3),
     [uniform(4, 3), uniform(3), positive(3), uniform(3), uniform(3)],
     lambda x, m, v, o, s: np_bn(x, m, v, o, s, 1e-3))
spec("bn_batch_normalization_no_affine", ("divide", "sqrt", "multiply"),
     lambda x, m, v: gf.nn.batch_normalization(x, m, v, None, None, 0.01),
     [uniform(4, 3), uniform(3), positive(3)],
     lambda x, m, v: np_bn(x, m, v, None, None, 0.01))
spec("bn_fused_batch_norm_training", ("reduce_sum", "divide", "sqrt"),
     lambda x, s, o: gf.nn.fused_batch_norm(x, s, o),
     [uniform(2, 2, 2, 3), uniform(3), uniform(3)], np_fused_train)
spec("bn_fused_batch_norm_inference", ("divide", "sqrt"),
     lambda x, s, o, m, v: gf.nn.fused_batch_norm(x, s, o, m, v, epsilon=1e-6,
                                                  is_training=False)[0],
     [uniform(2, 2, 1, 3), uniform(3), uniform(3), uniform(3), positive(3)],
     lambda x, s, o, m, v: np_bn(x, m, v, o, s, 1.001e-5))
spec("bn_fused_batch_norm_nchw", ("reduce_sum", "reshape"),
     lambda x, s, o: gf.nn.fused_batch_norm(x, s, o, data_format="NCHW")[0],
     [uniform(2, 3, 2, 2), uniform(3), uniform(3)],
     lambda x, s, o: np.moveaxis(np_fused_train(np.moveaxis(x, 1, -1), s, o)[0], -1, 1))
spec("bn_layer_training", ("reduce_sum", "divide", "sqrt"),
     lambda x: gf.layers.batch_normalization(x, training=True),
     [uniform(4, 3)], lambda x: np_bn(x, *np_moments(x, 0), None, None, 1e-3),
     dynamic=keep(0, -1))
spec("bn_layer_conv_cond_true", ("cond", "tuple_get", "reduce_sum"),
     lambda x, t: gf.layers.batch_normalization(x, training=t, axis=3),
     lambda rng: [rng.uniform(-2, 2, (2, 2, 2, 2)), np.array(True)],
     lambda x, t: np_bn(x, *np_moments(x, (0, 1, 2)), None, None, 1e-3),
     dynamic=keep(0, -1))
spec("bn_layer_cond_false", ("cond", "tuple_get"),
     lambda x, t: gf.layers.batch_normalization(x, training=t),
     lambda rng: [rng.uniform(-2, 2, (4, 3)), np.array(False)],
     lambda x, t: (x / np.sqrt(1.0 + 1e-3)).astype(x.dtype), dynamic=keep(0, -1))
spec("bn_contrib_batch_norm", ("reduce_sum", "divide", "sqrt"),
     lambda x: gf.contrib.layers.batch_norm(x, scale=True, is_training=True),
     [uniform(2, 2, 2, 2)], lambda x: np_bn(x, *np_moments(x, (0, 1, 2)), None, None, 1e-3),
     dynamic=keep(0, -1))


def np_weighted(losses, weights, reduction):
    weighted = losses * weights
    if reduction == "none":
        return weighted
    total = weighted.sum()
    if reduction == "sum":
        return total
    if reduction == "mean":
        return total / (np.ones_like(losses) * weights).sum()
    if reduction == "batch":
        return total / losses.size
    count = np.count_nonzero(np.broadcast_to(weights, losses.shape))
    return (total / count).astype(losses.dtype)


_R = gf.losses.Reduction
for _rid, _red, _nref in (("none", _R.NONE, "none"), ("sum", _R.SUM, "sum"),
                          ("mean", _R.MEAN, "mean"),
                          ("over_batch", _R.SUM_OVER_BATCH_SIZE, "batch"),
                          ("nonzero", _R.SUM_BY_NONZERO_WEIGHTS, "nonzero")):
    spec(f"loss_compute_weighted_{_rid}", ("multiply", "reduce_sum"),
         lambda x, w, r=_red: gf.losses.compute_weighted_loss(x, w, reduction=r),
         lambda rng: [rng.uniform(-2, 2, (3, 4)),
                      rng.uniform(0.5, 2, (3, 1)) * np.array([[1.0], [0.0], [1.0]])],
         lambda x, w, r=_nref: np_weighted(x, w, r),
         # the count of nonzero weights jumps where a weight is 0: no derivative there
         grad=(0,) if _rid == "nonzero" else None)
spec("loss_mean_squared_error", ("square", "subtract", "reduce_sum"),
     lambda y, p: gf.losses.mean_squared_error(y, p, weights=[[1.0], [2.0], [0.0]]),
     [uniform(3, 2), uniform(3, 2)],
     lambda y, p: np_weighted((p - y) ** 2, np.array([[1.0], [2.0], [0.0]]), "nonzero"))
spec("loss_absolute_difference", ("abs", "subtract"),
     lambda y, p: gf.losses.absolute_difference(y, p, reduction=_R.SUM),
     lambda rng: (lambda y: [y, y + rng.uniform(0.3, 1, (3, 2)) * rng.choice([-1, 1], (3, 2))])(
         rng.uniform(-2, 2, (3, 2))),
     lambda y, p: np.abs(p - y).sum())
spec("loss_huber", ("abs", "minimum", "subtract"),
     lambda y, p: gf.losses.huber_loss(y, p, delta=1.0),
     lambda rng: [np.zeros((2, 3)), np.array([[0.3, -0.6, 1.5], [-2.0, 0.8, -1.3]])
                  + rng.uniform(-0.05, 0.05, (2, 3))],
     lambda y, p: np.mean(np.where(np.abs(p - y) <= 1, 0.5 * (p - y) ** 2,
                                   np.abs(p - y) - 0.5)), grad=(1,))
spec("loss_log_loss", ("log", "add"),
     lambda y, p: gf.losses.log_loss(y, p),
     [uniform(3, 2, lo=0.0, hi=1.0), uniform(3, 2, lo=0.1, hi=0.9)],
     lambda y, p: np.mean(-y * np.log(p + 1e-7) - (1 - y) * np.log(1 - p + 1e-7)))
spec("loss_hinge", ("relu", "multiply"),
     lambda y, x: gf.losses.hinge_loss(y, x),
     lambda rng: [rng.integers(0, 2, (3, 2)).astype(np.float64),
                  rng.choice([-1.5, -0.4, 0.5, 1.6], (3, 2)) + rng.uniform(-0.05, 0.05, (3, 2))],
     lambda y, x: np.mean(np.maximum(0, 1 - (2 * y - 1) * x)), grad=(1,))
spec("loss_cosine_distance", ("multiply", "reduce_sum"),
     lambda y, p: gf.losses.cosine_distance(y, p, axis=1, reduction=_R.SUM_OVER_BATCH_SIZE),
     [uniform(3, 2), uniform(3, 2)], lambda y, p: np.mean(1 - (y * p).sum(1, keepdims=True)))
spec("loss_sigmoid_cross_entropy_smoothing", ("softplus", "multiply", "subtract"),
     lambda y, x: gf.losses.sigmoid_cross_entropy(y, x, label_smoothing=0.2),
     [bools(3, 2), uniform(3, 2)],
     lambda y, x: (lambda z: np.mean(np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))))(
         (y * 0.8 + 0.1).astype(x.dtype)), grad=(1,))
spec("loss_softmax_cross_entropy_smoothing", ("log_softmax", "stop_gradient"),
     lambda y, x, w: gf.losses.softmax_cross_entropy(y, x, weights=w, label_smoothing=0.1),
     [distribution(3, 4), uniform(3, 4), positive(3)],
     lambda y, x, w: np_weighted(-((y * 0.9 + 0.025) * np_log_softmax(x)).sum(-1), w,
                                 "nonzero"), grad=(1, 2))
spec("loss_sparse_softmax_cross_entropy", ("log_softmax", "one_hot"),
     lambda y, x: gf.losses.sparse_softmax_cross_entropy(y, x, weights=2.0),
     [ints(3, 1, hi=4), uniform(3, 4)],
     lambda y, x: np.mean(-2.0 * np_log_softmax(x)[np.arange(3), y[:, 0]]),
     dynamic=keep(1, -1))


# -- CTC and sparse tensors (gradflow/ops/ctc_ops.py, sparse_ops.py) ------------------

_CTC_INDICES = np.array([[0, 0], [0, 1], [0, 2], [1, 0]], np.int64)
_CTC_VALUES = np.array([0, 1, 1, 1], np.int32)  # a repeat: a blank must come between


def np_ctc_loss(x, indices, values, lengths):
    """-log p(labels | x), summed over every path of C^T classes that collapses (repeats
    merged, blanks dropped) to the labels: independent of the op's recursions."""
    import itertools

    steps, batch, classes = x.shape
    out = []
    for b in range(batch):
        label = tuple(int(v) for (row, _), v in zip(indices, values) if row == b)
        n = int(lengths[b])
        logp = x[:n, b] - np.log(np.sum(np.exp(x[:n, b]), axis=1, keepdims=True))
        total = -np.inf
        for path in itertools.product(range(classes), repeat=n):
            merged = [k for i, k in enumerate(path) if i == 0 or path[i - 1] != k]
            if tuple(k for k in merged if k != classes - 1) == label:
                total = np.logaddexp(total, sum(logp[t, k] for t, k in enumerate(path)))
        out.append(-total)
    return np.array(out)


spec("ctc_loss", "ctc_loss",
     lambda x, i, v, n: gf.nn.ctc_loss(gf.SparseTensor(i, v, [2, 3]), x, n),
     [uniform(5, 2, 3), lambda rng: _CTC_INDICES, lambda rng: _CTC_VALUES,
      lambda rng: np.array([5, 3], np.int32)],
     np_ctc_loss, grad=(0,), second_order=False)
spec("ctc_loss_batch_major", "ctc_loss",
     lambda x, i, v, n: gf.nn.ctc_loss(gf.SparseTensor(i, v, [2, 3]), x, n,
                                       time_major=False),
     [uniform(2, 4, 3), lambda rng: _CTC_INDICES, lambda rng: _CTC_VALUES,
      lambda rng: np.array([4, 2], np.int32)],
     lambda x, i, v, n: np_ctc_loss(x.transpose(1, 0, 2), i, v, n), grad=(0,),
     second_order=False)


def np_sparse_to_dense(indices, values, shape, default=0):
    out = np.full(shape, default, values.dtype)
    for row, v in zip(indices, values):
        out[tuple(row)] = v
    return out


spec("sparse_tensor_to_dense", ("sparse_linear_index", "gather_grad"),
     lambda i, v: gf.sparse_tensor_to_dense(gf.SparseTensor(i, v, [3, 4])),
     [lambda rng: np.array([[0, 1], [2, 3], [1, 0]], np.int64), uniform(3)],
     lambda i, v: np_sparse_to_dense(i, v, (3, 4)), grad=(1,))
_SPMM_INDICES = np.array([[0, 1], [2, 3], [0, 1], [1, 0]], np.int64)  # an entry twice: adds


def np_spmm(i, v, b, shape, adjoint_a=False, adjoint_b=False):
    a = np.zeros(shape, v.dtype)
    np.add.at(a, (i[:, 0], i[:, 1]), v)
    return (a.T if adjoint_a else a) @ (b.T if adjoint_b else b)


spec("sparse_tensor_dense_matmul", ("gather", "gather_grad", "multiply"),
     lambda i, v, b: gf.sparse_tensor_dense_matmul(gf.SparseTensor(i, v, [3, 4]), b),
     [lambda rng: _SPMM_INDICES, uniform(4), uniform(4, 2)],
     lambda i, v, b: np_spmm(i, v, b, (3, 4)), grad=(1, 2))
spec("sparse_tensor_dense_matmul_adjoint", ("gather", "gather_grad", "multiply"),
     lambda i, v, b: gf.sparse.sparse_dense_matmul(gf.SparseTensor(i, v, [3, 4]), b,
                                                   adjoint_a=True, adjoint_b=True),
     [lambda rng: _SPMM_INDICES, uniform(4), uniform(2, 3)],
     lambda i, v, b: np_spmm(i, v, b, (3, 4), True, True), grad=(1, 2))
spec("sparse_tensor_to_dense_default", ("sparse_linear_index", "gather_grad", "where"),
     lambda i, v: gf.sparse.to_dense(gf.SparseTensor(i, v, [2, 3]), default_value=-1.5),
     [lambda rng: np.array([[1, 2], [0, 0]], np.int64), uniform(2)],
     lambda i, v: np_sparse_to_dense(i, v, (2, 3), -1.5), grad=(1,))


# -- sort, unique, scatter (gradflow/ops/sort_ops.py, scatter_ops.py) ------------------


def np_unique(x):
    """TF1's unique: values in order of first appearance, and each element's position."""
    _, first = np.unique(x, return_index=True)
    y = x[np.sort(first)]
    return [y, np.array([list(y).index(v) for v in x], np.int32)]


def np_last_occurrence(i):
    return np.array([v not in i[k + 1:] for k, v in enumerate(i)], dtype=bool)


def np_scatter_nd(i, u, shape):
    out = np.zeros(shape, u.dtype)
    np.add.at(out, tuple(i[..., k] for k in range(i.shape[-1])), u)
    return out


def np_sequence_loss(x, y, w):
    rows = -np_log_softmax(x.reshape(-1, x.shape[-1]))[np.arange(y.size), y.reshape(-1)]
    return (rows * w.reshape(-1)).sum() / w.sum()


spec("sort", ("argsort", "top_k_flat_index", "gather"), lambda x: gf.sort(x),
     [distinct(3, 4)], lambda x: np.sort(x, -1))
spec("sort_descending_axis0", ("argsort", "transpose"),
     lambda x: gf.sort(x, 0, direction="DESCENDING"), [distinct(3, 2)],
     lambda x: -np.sort(-x, 0), needs_rank="sort along another axis than the last "
                                          "transposes, which needs the rank")
spec("argsort_ties", "argsort", lambda x: gf.argsort(x), [integral(3, 5)],
     lambda x: np.argsort(x, -1, kind="stable").astype(np.int32))
spec("argsort_descending_ties", "argsort",
     lambda x: gf.argsort(x, axis=0, direction="DESCENDING"), [integral(5, 2)],
     lambda x: np.argsort(-x, 0, kind="stable").astype(np.int32))
spec("unique", ("unique", "unique_index"), lambda x: list(gf.unique(x)), [ints(9, hi=4)],
     np_unique, dtypes=("int32",), value_shaped=True)
spec("unique_float_int64", ("unique", "unique_index"),
     lambda x: [gf.unique(x, out_idx=gf.int64).y, gf.unique(x, out_idx=gf.int64).idx],
     [integral(7)], lambda x: [np_unique(x)[0], np_unique(x)[1].astype(np.int64)],
     value_shaped=True)
spec("last_occurrence", "last_occurrence", lambda i: apply("last_occurrence", [i]),
     [ints(2, 4, hi=3)], lambda i: np_last_occurrence(i.reshape(-1)).reshape(i.shape),
     dtypes=("int32",))
spec("scatter_nd", ("linear_index", "merge_axes", "gather_grad"),
     lambda i, u: gf.scatter_nd(i, u, [3, 4]),
     lambda rng: [np.array([[0, 1], [2, 3], [0, 1], [1, 0]], np.int32), rng.uniform(-2, 2, 4)],
     lambda i, u: np_scatter_nd(i, u, (3, 4)), grad=(1,), dynamic=keep(0, -1))
spec("scatter_nd_rows", ("linear_index", "gather_grad"),
     lambda i, u: gf.scatter_nd(i, u, [4, 2]),
     lambda rng: [np.array([[3], [1], [3]], np.int64), rng.uniform(-2, 2, (3, 2))],
     lambda i, u: np_scatter_nd(i, u, (4, 2)), grad=(1,), dynamic=keep(0, -1))


def np_tensor_scatter(t, i, u, how):
    """TF1's tensor_scatter_nd_*: the slices at the index tuples in turn (the last of
    repeated ones wins an update)."""
    out, depth = t.copy(), i.shape[-1]
    rows = u.reshape((-1,) + t.shape[depth:])
    for k, key in enumerate(i.reshape(-1, depth)):
        key = tuple(key)
        out[key] = rows[k] if how == "update" else out[key] + rows[k] if how == "add" \
            else out[key] - rows[k]
    return out


_TUPLES = np.array([[[0, 1], [1, 2]], [[1, 0], [1, 2]]], np.int64)  # [1, 2] twice
spec("tensor_scatter_nd_update", ("linear_index", "last_occurrence", "where_coordinates",
                                  "gather", "gather_grad", "where"),
     lambda t, i, u: gf.tensor_scatter_nd_update(t, i, u),
     lambda rng: [rng.uniform(-2, 2, (4, 2)), np.array([[1], [3], [1]], np.int32),
                  rng.uniform(-2, 2, (3, 2))],
     lambda t, i, u: np_tensor_scatter(t, i, u, "update"), dynamic=keep(1, -1),
     value_shaped=True)  # (the winners among repeated indices: a value-sized gather)
spec("tensor_scatter_nd_update_tuples", ("merge_axes", "reshape_like", "last_occurrence"),
     lambda t, i, u: gf.tensor_scatter_update(t, i, u),
     lambda rng: [rng.uniform(-2, 2, (2, 3, 2)), _TUPLES, rng.uniform(-2, 2, (2, 2, 2))],
     lambda t, i, u: np_tensor_scatter(t, i, u, "update"), dynamic=keep(1, -1),
     value_shaped=True)  # (the winners among repeated indices: a value-sized gather)
spec("tensor_scatter_nd_update_int", ("last_occurrence", "gather_grad", "where"),
     lambda t, i, u: gf.tensor_scatter_nd_update(t, i, u),
     [ints(5, lo=-5), lambda rng: np.array([[4], [0], [4]], np.int64), ints(3, lo=-5)],
     lambda t, i, u: np_tensor_scatter(t, i, u, "update"), dtypes=("int32",),
     dynamic=keep(1, -1), value_shaped=True)
spec("tensor_scatter_nd_add", ("linear_index", "merge_axes", "gather_grad", "add"),
     lambda t, i, u: gf.tensor_scatter_nd_add(t, i, u),
     lambda rng: [rng.uniform(-2, 2, (3, 4)),
                  np.array([[0, 1], [2, 3], [0, 1], [1, 0]], np.int32), rng.uniform(-2, 2, 4)],
     lambda t, i, u: np_tensor_scatter(t, i, u, "add"), dynamic=keep(1, -1))
spec("tensor_scatter_nd_sub_rows", ("linear_index", "gather_grad", "subtract"),
     lambda t, i, u: gf.tensor_scatter_sub(t, i, u),
     lambda rng: [rng.uniform(-2, 2, (4, 2)), np.array([[3], [1], [3]], np.int64),
                  rng.uniform(-2, 2, (3, 2))],
     lambda t, i, u: np_tensor_scatter(t, i, u, "sub"), dynamic=keep(1, -1))
spec("check_scatter_updates", "check_scatter_updates",
     lambda u, i, t: apply("check_scatter_updates", [u, i, t], what="w", label="u"),
     lambda rng: [rng.uniform(-2, 2, (2, 3)), np.array([[0], [2]], np.int32),
                  rng.uniform(-2, 2, (4, 3))], lambda u, i, t: u, grad=(0,))
spec("broadcast_to", ("broadcast_to", "unbroadcast"), lambda x: gf.broadcast_to(x, [2, 3, 4]),
     [uniform(3, 1)], lambda x: np.broadcast_to(x, (2, 3, 4)).copy())
spec("broadcast_to_shape_of", ("broadcast_to", "shape"),
     lambda x, y: gf.broadcast_to(x, gf.shape(y)), [uniform(1, 3), uniform(2, 4, 3)],
     lambda x, y: np.broadcast_to(x, y.shape).copy(), grad=(0,))


def np_bincount(a, w=None, minlength=0, maxlength=None, dtype=np.int32):
    size = max(int(a.max()) + 1 if a.size else 0, minlength)
    size = size if maxlength is None else min(size, maxlength)
    kept = a.reshape(-1) < size
    w = np.ones(a.shape, dtype) if w is None else w
    return np.bincount(a.reshape(-1)[kept], w.reshape(-1)[kept], size).astype(w.dtype)


spec("bincount", ("bincount_size", "mask_indices", "fill", "gather_grad"),
     lambda a: gf.bincount(a, minlength=3), [ints(2, 3, hi=6)],
     lambda a: np_bincount(a, minlength=3), dtypes=("int32",), value_shaped=True)
spec("bincount_weights_maxlength", ("bincount_size", "gather_grad"),
     lambda a, w: gf.math.bincount(a, w, maxlength=4), [ints(7, hi=6), uniform(7)],
     lambda a, w: np_bincount(a, w, maxlength=4), value_shaped=True, no_grad=True)

spec("seq2seq_sequence_loss", ("log_softmax", "one_hot"),
     lambda x, y, w: gf.contrib.seq2seq.sequence_loss(x, y, w),
     lambda rng: [rng.uniform(-2, 2, (2, 3, 4)), rng.integers(0, 4, (2, 3)).astype(np.int32),
                  np.array([[1.0, 1.0, 0.0], [1.0, 0.5, 0.0]])],
     np_sequence_loss, grad=(0, 2), dynamic=keep(0, -1))
spec("seq2seq_sequence_loss_per_step", ("log_softmax", "one_hot"),
     lambda x, y, w: gf.contrib.seq2seq.sequence_loss(x, y, w, average_across_timesteps=False),
     lambda rng: [rng.uniform(-2, 2, (2, 3, 4)), rng.integers(0, 4, (2, 3)).astype(np.int32),
                  np.array([[1.0, 1.0, 0.0], [1.0, 0.5, 0.0]])],
     lambda x, y, w: np.array([np_sequence_loss(x[:, t:t + 1], y[:, t:t + 1], w[:, t:t + 1])
                               if w[:, t].sum() else 0.0 for t in range(3)], x.dtype),
     grad=(0,), dynamic=keep(0, -1))


# -- convolutions built from conv2d (gradflow/ops/conv_variants.py) -------------------


def np_depthwise(x, w, stride=1):
    kh, kw, cin, mult = w.shape
    rows = (x.shape[1] - kh) // stride + 1
    cols = (x.shape[2] - kw) // stride + 1
    out = np.zeros((x.shape[0], rows, cols, cin * mult), x.dtype)
    for i in range(rows):
        for j in range(cols):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, i, j] = np.einsum("bhwc,hwcm->bcm", patch, w).reshape(x.shape[0], -1)
    return out


def np_atrous_same(x, w, rate):
    k = (w.shape[0] - 1) * rate + 1
    lo = (k - 1) // 2
    xp = np.pad(x, ((0, 0), (lo, k - 1 - lo), (lo, k - 1 - lo), (0, 0)))
    out = np.zeros(x.shape[:3] + (w.shape[-1],), x.dtype)
    for i in range(x.shape[1]):
        for j in range(x.shape[2]):
            out[:, i, j] = np.einsum("bhwc,hwco->bo", xp[:, i:i + k:rate, j:j + k:rate], w)
    return out


def np_lrn(x, r, bias, alpha, beta):
    sq = np.pad(x ** 2, ((0, 0),) * 3 + ((r, r),))
    total = sum(sq[..., k:k + x.shape[-1]] for k in range(2 * r + 1))
    return x / (bias + alpha * total) ** beta


spec("depthwise_conv2d", ("conv2d", "multiply"),
     lambda x, w: gf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID"),
     [uniform(1, 4, 4, 2), uniform(2, 2, 2, 2)], np_depthwise, dynamic=keep(1, 0, 1, 2, 3))
spec("depthwise_conv2d_stride2", ("conv2d", "multiply"),
     lambda x, w: gf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "VALID"),
     [uniform(1, 5, 5, 1), uniform(3, 3, 1, 2)], lambda x, w: np_depthwise(x, w, 2),
     dynamic=keep(1, 0, 1, 2, 3))
spec("separable_conv2d", ("conv2d", "multiply"),
     lambda x, w, p: gf.nn.separable_conv2d(x, w, p, [1, 1, 1, 1], "VALID"),
     [uniform(1, 3, 3, 2), uniform(2, 2, 2, 1), uniform(1, 1, 2, 2)],
     lambda x, w, p: np_depthwise(x, w) @ p[0, 0],
     dynamic=lambda shapes: all_unknown(shapes[:1]) + list(shapes[1:]))  # filters static
spec("atrous_conv2d", ("conv2d", "pad", "getitem"),
     lambda x, w: gf.nn.atrous_conv2d(x, w, 2, "SAME"),
     [uniform(1, 4, 4, 1), uniform(2, 2, 1, 2)], lambda x, w: np_atrous_same(x, w, 2),
     dynamic=keep(1, 0, 1, 2, 3))
spec("local_response_normalization", ("pad", "pow"),
     lambda x: gf.nn.local_response_normalization(x, 1, 1.0, 0.5, 0.75),
     [uniform(1, 2, 2, 3)], lambda x: np_lrn(x, 1, 1.0, 0.5, 0.75), dynamic=keep(0, -1))


# -- segment reductions, dynamic_partition, dynamic_stitch (ops/segment_ops.py, partition_ops.py)


def np_segment(reduce, data, ids, num=None, sorted_op=False):
    """TF1's segment reductions: empty segments 0 (sum, mean, the sorted max/min), 1
    (prod), the dtype's lowest/highest (unsorted max/min); negative ids dropped."""
    rows = data.reshape((-1,) + data.shape[ids.ndim:])
    flat = ids.reshape(-1)
    num = (int(flat[-1]) + 1 if flat.size else 0) if num is None else int(num)
    info = np.finfo(data.dtype) if data.dtype.kind == "f" else np.iinfo(data.dtype)
    empty = {"sum": 0, "mean": 0, "prod": 1, "max": 0 if sorted_op else info.min,
             "min": 0 if sorted_op else info.max}[reduce]
    out = np.full((num,) + rows.shape[1:], empty, data.dtype)
    for k in range(num):
        part = rows[flat == k]
        if len(part) == 0:
            continue
        if reduce == "mean" and data.dtype.kind != "f":  # integer means truncate, after
            total = part.sum(0, dtype=data.dtype)  # a sum that wraps around as TF1's
            out[k] = np.sign(total) * (np.abs(total) // len(part))
        else:
            out[k] = getattr(np, {"sum": "sum", "mean": "mean", "prod": "prod",
                                  "max": "max", "min": "min"}[reduce])(part, 0)
    return out


def _segment_ids(*ids, dtype=np.int32):
    return lambda rng: np.array(ids, dtype)


# Fed ids that set a result's size are int8: the fuzzer's extreme ids (the dtype's max)
# then ask for 128 rows, not 2**31 (gigabytes).
_small_ids = dict(dtype=np.int8)


_SORTED_IDS = (0, 0, 1, 3, 3, 3)  # segment 2 empty
for _reduce in ("sum", "mean", "max", "min", "prod"):
    _fn = getattr(gf, f"segment_{_reduce}")
    _data = nonzero(6, 2, lo=0.5, hi=1.5) if _reduce == "prod" else distinct(6, 2)
    spec(f"segment_{_reduce}", ("segment_reduce", "segment_gather"), _fn,
         [_data, _segment_ids(*_SORTED_IDS, **_small_ids)],
         lambda d, i, r=_reduce: np_segment(r, d, i, sorted_op=True), grad=(0,),
         value_shaped=True)
    spec(f"segment_{_reduce}_int", "segment_reduce", _fn,
         [ints(6, 2, lo=-7, hi=8), _segment_ids(*_SORTED_IDS, **_small_ids)],
         lambda d, i, r=_reduce: np_segment(r, d, i, sorted_op=True), dtypes=("int32",),
         value_shaped=True)
    _ufn = getattr(gf, f"unsorted_segment_{_reduce}")
    # an empty segment's max is the dtype's lowest value: the weighted sum of the gradient
    # check would overflow, so every segment of the max/min specs has a row
    _ids, _num = ((3, 0, -1, 2, 1, 0), 4) if _reduce in ("max", "min") else \
        ((3, 0, -1, 3, 1, 0), 5)
    spec(f"unsorted_segment_{_reduce}", ("unsorted_segment_reduce", "segment_gather"),
         lambda d, i, f=_ufn, n=_num: f(d, i, n), [_data, _segment_ids(*_ids)],
         lambda d, i, r=_reduce, n=_num: np_segment(r, d, i, n), grad=(0,))
    spec(f"unsorted_segment_{_reduce}_int", ("unsorted_segment_reduce",) + (
         ("segment_counts", "cast", "divide") if _reduce == "mean" else ()),
         lambda d, i, f=_ufn: f(d, i, 4), [ints(3, 2, 2, lo=-7, hi=8),
                                           lambda rng: np.array([[2, 0], [-1, 2], [0, 0]])],
         (lambda d, i: np_segment("sum", d, i, 4) / np.maximum(
             np_segment("sum", np.ones_like(i), i, 4), 1)[:, None])
         if _reduce == "mean" else lambda d, i, r=_reduce: np_segment(r, d, i, 4),
         dtypes=("int32",))
spec("unsorted_segment_sum_2d_ids", ("unsorted_segment_reduce", "segment_gather"),
     lambda d, i, n: gf.unsorted_segment_sum(d, i, n),
     [uniform(2, 3, 2), lambda rng: np.array([[1, -1, 3], [3, 0, 1]], np.int64),
      lambda rng: np.array(4, np.int8)],
     lambda d, i, n: np_segment("sum", d, i, n), grad=(0,), value_shaped=True)
spec("unsorted_segment_max_ties", ("unsorted_segment_reduce", "segment_gather"),
     lambda d, i: gf.unsorted_segment_max(d, i, 1),  # pairs of ties: differences give 1/2
     [lambda rng: np.array([[1.0, 2.0], [1.0, 3.0], [0.5, 3.0], [0.0, 0.0]]),
      _segment_ids(0, 0, 0, -1)],
     lambda d, i: np_segment("max", d, i, 1), grad=(0,), second_order=False, eps=1e-3)
spec("unsorted_segment_min_empty", "unsorted_segment_reduce",
     lambda d, i: [gf.unsorted_segment_min(d, i, 4), gf.unsorted_segment_max(d, i, 4)],
     [uniform(3, 2), _segment_ids(2, -1, 2)],
     lambda d, i: [np_segment("min", d, i, 4), np_segment("max", d, i, 4)], grad=())
spec("segment_prod_zeros", ("segment_reduce", "segment_gather"), gf.segment_prod,
     [lambda rng: np.array([[0.0, 1.5], [2.0, 0.0], [0.5, 0.0], [-1.5, 0.0], [1.2, 0.7]]),
      _segment_ids(0, 0, 0, 1, 1, **_small_ids)],
     lambda d, i: np_segment("prod", d, i), grad=(0,), second_order=False,
     value_shaped=True)
spec("unsorted_segment_prod_zeros", ("unsorted_segment_reduce", "segment_gather"),
     lambda d, i: gf.unsorted_segment_prod(d, i, 2),
     [lambda rng: np.array([0.0, 2.0, 1.5, 0.0, 0.0, -0.5]), _segment_ids(0, 1, 0, -1, 1, 1)],
     lambda d, i: np_segment("prod", d, i, 2), grad=(0,), second_order=False)
spec("unsorted_segment_sqrt_n", ("unsorted_segment_reduce", "segment_counts", "sqrt"),
     lambda d, i: gf.unsorted_segment_sqrt_n(d, i, 4),
     [uniform(5, 3), _segment_ids(1, 3, 1, -1, 1)],
     lambda d, i: np_segment("sum", d, i, 4) / np.sqrt(np.maximum(
         np_segment("sum", np.ones(5, d.dtype), i, 4), 1))[:, None])
spec("segment_gather", "segment_gather", lambda g, i: apply("segment_gather", [g, i]),
     [uniform(4, 3), _segment_ids(3, -1, 0, 3, 2)],
     lambda g, i: np.where((i >= 0)[:, None], g[np.maximum(i, 0)], 0))
spec("segment_counts", "segment_counts", lambda i, x: apply("segment_counts", [i, x]),
     [_segment_ids(0, 2, 2, -1), uniform(4, 3, 2)],
     lambda i, x: np.maximum(np.bincount(i[i >= 0], minlength=4), 1).astype(x.dtype)
     .reshape(4, 1, 1), grad=())


def np_dynamic_partition(data, partitions, num):
    return [data[partitions == k] for k in range(num)]


def np_dynamic_stitch(indices, data):
    flat = np.concatenate([i.reshape(-1) for i in indices])
    tail = data[0].shape[indices[0].ndim:]
    rows = np.concatenate([d.reshape((-1,) + tail) for d in data])
    out = np.zeros((flat.max() + 1,) + tail, data[0].dtype)
    for k, row in zip(flat, rows):
        out[k] = row
    return out


spec("dynamic_partition", ("partition_positions", "gather"),
     lambda d, p: gf.dynamic_partition(d, p, 3),
     [uniform(5, 2), _segment_ids(2, 0, 2, 2, 0)],
     lambda d, p: np_dynamic_partition(d, p, 3), value_shaped=True)
spec("dynamic_partition_2d", ("partition_positions", "merge_axes", "gather"),
     lambda d, p: gf.dynamic_partition(d, p, 2),
     [uniform(2, 3), lambda rng: np.array([[1, 0, 1], [1, 1, 0]], np.int32)],
     lambda d, p: np_dynamic_partition(d, p, 2), value_shaped=True)
spec("dynamic_partition_int", ("partition_positions", "gather"),
     lambda d, p: gf.dynamic_partition(d, p, 2), [ints(4, 2), _segment_ids(1, 1, 0, 1)],
     lambda d, p: np_dynamic_partition(d, p, 2), dtypes=("int32",), value_shaped=True)
spec("dynamic_stitch", ("dynamic_stitch", "gather"),
     lambda i0, i1, d0, d1: gf.dynamic_stitch([i0, i1], [d0, d1]),
     [_segment_ids(0, 4, 2, **_small_ids), lambda rng: np.array([[5], [1]], np.int8),
      uniform(3, 2),
      uniform(2, 1, 2)],
     lambda i0, i1, d0, d1: np_dynamic_stitch([i0, i1], [d0, d1]), grad=(2, 3),
     value_shaped=True)
spec("dynamic_stitch_int", "dynamic_stitch",
     lambda i0, i1, d0, d1: gf.dynamic_stitch([i0, i1], [d0, d1]),
     [_segment_ids(0, 2, 2, **_small_ids), _segment_ids(1, 0, **_small_ids), ints(3), ints(2)],
     lambda i0, i1, d0, d1: np_dynamic_stitch([i0, i1], [d0, d1]), dtypes=("int32",),
     value_shaped=True)
# -- special functions (gradflow/ops/special_ops.py): references from Python's math module
# and plain sums; inputs keep away from the poles of lgamma/digamma; more, against
# TensorFlow's values and scipy, in tests/test_special_tf1.py ----------------------------


def _np_elementwise(fn):
    """A NumPy reference from a function of one Python float, in the input's dtype."""
    return lambda x: np.vectorize(fn, otypes=[np.float64])(x).astype(x.dtype)


def _np_polygamma(n, x):
    """psi^(n)(x) for integer n >= 1 and x > 0: (-1)^(n+1) n! sum_k (x + k)^-(n+1), 4000
    terms summed, the rest by the first Euler-Maclaurin terms."""
    n, x = np.broadcast_arrays(n.astype(np.float64), x.astype(np.float64))
    w = x + 4000.0
    s = n + 1.0
    head = (x[..., None] + np.arange(4000.0)) ** -s[..., None]
    zeta = head.sum(-1) + w ** -n / n + 0.5 * w ** -s + s * w ** (-s - 1.0) / 12.0
    fact = np.vectorize(math.factorial, otypes=[np.float64])(n.astype(np.int64))
    return (-1.0) ** (n + 1.0) * fact * zeta


def _np_digamma(x):
    """psi(x) for x > 0 from the recurrence to 30 and more, then A&S 6.3.18."""
    x = np.asarray(x, np.float64)
    shift = np.maximum(np.ceil(30.0 - x), 0.0)
    total = sum(np.where(k < shift, 1.0 / (x + k), 0.0) for k in range(31))
    w = x + shift
    t = 1.0 / (w * w)
    series = t * (1 / 12 - t * (1 / 120 - t * (1 / 252 - t * (1 / 240 - t / 132))))
    return np.log(w) - 0.5 / w - series - total


def _np_reflected_digamma(x):
    """psi below 0 too, in the dtype of ``x``: psi(x) = psi(1 - x) - pi cot(pi x)."""
    x64 = np.asarray(x, np.float64)
    pos = _np_digamma(np.where(x64 > 0, x64, 1.0 - x64))
    return np.where(x64 > 0, pos, pos - np.pi / np.tan(np.pi * x64)).astype(x.dtype)


def _off_poles(*shape, lo=-3.0, hi=5.0):
    """Values in [lo, hi) at least 0.15 away from the integers at and below 0."""
    def gen(rng):
        x = rng.uniform(lo, hi, shape)
        frac = x - np.floor(x)
        near = (x < 0.5) & ((frac < 0.15) | (frac > 0.85))
        return np.where(near, np.floor(x) + 0.5, x)

    return gen


spec("erf", "erf", gf.erf, [uniform(3, 4, lo=-3.0, hi=3.0)], _np_elementwise(math.erf))
spec("erf_wide", "erf", gf.math.erf,
     lambda rng: [np.array([-6.0, -2.5, -0.46875, -1e-3, 0.0, 1e-20, 0.3, 0.5, 1.0, 4.0, 4.5,
                            30.0])], _np_elementwise(math.erf))
spec("erfc", "erfc", gf.erfc, [uniform(3, 4, lo=-3.0, hi=3.0)], _np_elementwise(math.erfc))
spec("erfc_tail", "erfc", gf.math.erfc,
     lambda rng: [np.array([-6.0, -0.4, 0.2, 0.47, 2.0, 3.9, 4.1, 6.0, 10.0, 15.0])],
     _np_elementwise(math.erfc), tol={"float32": (2e-5, 1e-30), "float64": (1e-13, 1e-300)})
spec("lgamma", "lgamma", gf.lgamma, [_off_poles(3, 4)], _np_elementwise(math.lgamma))
spec("lgamma_wide", "lgamma", gf.math.lgamma,
     lambda rng: [np.array([0.05, 0.25, 0.9, 1.0, 1.1, 1.9, 2.0, 2.6, 9.5, 10.6, 30.0, 1e5,
                            -0.5, -1.3, -7.6])], _np_elementwise(math.lgamma),
     tol={"float64": (1e-13, 1e-300)})
spec("digamma", "digamma", gf.digamma, [_off_poles(3, 4, lo=-2.5)], _np_reflected_digamma)
spec("digamma_positive", "digamma", gf.math.digamma,
     [uniform(3, 4, lo=0.2, hi=12.0)], lambda x: _np_digamma(x).astype(x.dtype),
     tol={"float64": (1e-12, 1e-14)})
spec("polygamma", "polygamma", gf.polygamma,
     [lambda rng: np.array([[1.0], [2.0], [3.0]]), uniform(4, lo=0.3, hi=6.0)],
     lambda n, x: _np_polygamma(n, x).astype(x.dtype), grad=(1,))
spec("polygamma_scalar_order", "polygamma", lambda x: gf.math.polygamma(1.0, x),
     [uniform(3, 4, lo=0.3, hi=20.0)],
     lambda x: _np_polygamma(np.ones_like(x), x).astype(x.dtype))
spec("xlogy", ("where", "log", "equal"), gf.math.xlogy,
     [nonzero(3, 4), positive(4, lo=0.3, hi=3.0)], lambda x, y: x * np.log(y))
spec("xdivy", ("where", "divide", "equal"), gf.math.xdivy,
     [nonzero(3, 1), nonzero(4, lo=0.5)], lambda x, y: x / y)
# zeros in x: 0 whatever y (TF1's rule, even at y = 0); only y is differentiated, since
# TF's gradient for x is 0 there, not the derivative of x log y
spec("xlogy_zeros", ("where", "log", "equal"), gf.math.xlogy,
     lambda rng: [np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 0.5]]), np.array([0.7, 2.0, 1.3])],
     lambda x, y: np.where(x == 0, 0.0, x * np.log(y)).astype(x.dtype), grad=(1,))
spec("xdivy_zeros", ("where", "divide", "equal"), gf.math.xdivy,
     lambda rng: [np.array([[0.0, 1.5, 0.0], [-2.0, 0.0, 0.5]]), np.array([0.7, -2.0, 1.3])],
     lambda x, y: np.where(x == 0, 0.0, x / y).astype(x.dtype), grad=(1,))


# -- specs whose op resolves axes, keys or operand kinds against ranks at build time ------
# (the unknown-rank run skips them, with this reason; their unknown-dims run still checks
# every dim unknown at a known rank)

_REASONS = {
    "a 1-D operand (gradflow's extension: TF1's matmul needs rank >= 2) takes the vector "
    "form of the gradient, chosen when the graph is built":
        "matmul_vector_matrix matmul_matrix_vector matmul_vector_vector "
        "matmul_batched_matrix_vector matmul_vector_batched_matrix",
    "a negative axis needs the rank (non-negative ones do not)":
        "concat_three_last_axis reverse_v2_axes cumsum_exclusive_reverse crelu",
    "the size of the split axis is read when the graph is built":
        "split_sizes split_unknown_axis split_sizes_unknown_axis unstack_num_unknown_axis",
    "boolean_mask needs the ranks of the tensor and the mask (as TF1)":
        "boolean_mask boolean_mask_2d boolean_mask_axis1 boolean_mask_none",
    "tensordot pairs the contracted axes when the graph is built":
        "tensordot tensordot_axis_pairs tensordot_scalar_axes tensordot_outer tensordot_int",
    "einsum matches its subscripts to the ranks when the graph is built":
        "einsum_matmul einsum_batch_matmul einsum_dot einsum_transpose einsum_sum "
        "einsum_outer einsum_batch_dot einsum_attention einsum_implicit einsum_ellipsis "
        "einsum_chain einsum_broadcast_sum einsum_elementwise einsum_batch_two_free "
        "einsum_contract_two",
    "a matrix norm resolves its pair of axes against the rank":
        "norm_fro norm_matrix_ord1 norm_matrix_inf",
    "fused_batch_norm needs 4-D inputs, checked when the graph is built":
        "bn_fused_batch_norm_training bn_fused_batch_norm_inference bn_fused_batch_norm_nchw",
    "dynamic_partition makes one result per partition over the partitions' leading axes, "
    "so their rank must be known (TF1 needs it for the results' shapes too)":
        "dynamic_partition dynamic_partition_2d dynamic_partition_int",
}
NEEDS_RANK = {spec_id: reason for reason, ids in _REASONS.items() for spec_id in ids.split()}

# the specs of op families kept in files of their own (tests/op_specs_<family>.py), each
# adding to SPECS with ``spec`` (and ``needs_rank=`` where a spec needs it) when imported
for _path in sorted(pathlib.Path(__file__).parent.glob("op_specs_*.py")):
    importlib.import_module(_path.stem)


SPECS[:] = [replace(s, needs_rank=NEEDS_RANK[s.id]) if s.id in NEEDS_RANK else s
            for s in SPECS]
