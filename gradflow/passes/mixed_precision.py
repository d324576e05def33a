"""Mixed precision: run a plan's products in a low float dtype, the rest in float32.

The rewrite of TF1's grappler ``auto_mixed_precision``, over the plan graph, which
holds the forward and the gradient ops alike. Three lists decide (op names of
``gradflow.prim``):

- ``ALLOW``: the products (matmul, tensordot, the convolutions and their gradients).
  The fused attention pair (``gradflow.passes.attention``, run before this pass) is
  not among them: what its forward keeps for the backward depends on its dtype, so
  it stays as the attention pass built it (fused in float32; a graph built in a half
  dtype, e.g. through a float32-master ``custom_getter``, fuses in that dtype). Each
  float32 one runs in the low dtype:
  its float32 inputs are cast down (one cast per value, shared by its readers).
- ``INFER``: cheap elementwise and data-movement ops (add, multiply, bias adds,
  relu and its gradient, tanh, sigmoid, reshapes, transposes, slices, concats, pads,
  max pools...). One runs in the low dtype where one of its inputs already is (its
  other float32 inputs are cast down) and its value reaches a product through such
  ops only, so a chain matmul -> bias add -> relu -> matmul stays low between the
  products, forward and backward, while the gradient's unscaling and the optimizer's
  formulas after the last product, which feed no product, stay float32.
- everything else (``DENY`` names the ones that matter: softmax, exp, log, the
  reductions, losses and cross entropies, ``unbroadcast``'s sums; and every ``call``,
  assignment and variable update) runs in float32, as built: where it reads a low
  value, a cast back to float32 is put before it.

A fetched value keeps its dtype (a cast back where it was made low). Only float32
values are touched: float64 and integer graphs, and ops that take any other float
dtype, are left as they are. The low dtype is ``gf.float16`` or ``gf.bfloat16``
(``mixed_precision_pass(dtype)``); the casts the rewrite makes are plain ``cast``
nodes, which the fusion pass then fuses into the elementwise kernels around them.
"""

from __future__ import annotations

from gradflow import dtypes
from gradflow.passes.ir import PlanNode
from gradflow.prim.registry import REGISTRY, _infer

ALLOW = frozenset({
    "matmul", "tensordot", "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter",
    "conv2d_transpose", "nchw_conv2d", "nchw_conv2d_backprop_input",
    "nchw_conv2d_backprop_filter", "conv3d", "conv3d_backprop_input",
    "conv3d_backprop_filter",
})
INFER = frozenset({
    "add", "subtract", "multiply", "divide", "negative", "maximum", "minimum", "square",
    "relu", "relu_grad", "relu6", "relu6_grad", "elu", "elu_grad", "leaky_relu",
    "leaky_relu_grad", "sigmoid", "tanh", "swish", "swish_grad", "abs", "sign",
    "identity", "stop_gradient", "ensure_shape", "reshape", "reshape_like", "expand_dims",
    "squeeze", "transpose", "matrix_transpose", "image_layout", "concat", "split_like",
    "split_part", "getitem", "gather", "tile", "pad", "reverse", "broadcast_to",
    "broadcast_like", "where", "zeros_like", "ones_like", "max_pool", "max_pool_grad",
    "max_pool_select", "max_pool_relu_grad", "avg_pool", "avg_pool_grad",
})
DENY = frozenset({
    "softmax", "log_softmax", "exp", "expm1", "log", "log1p", "pow", "sqrt", "reduce_sum",
    "reduce_max", "reduce_min", "reduce_prod", "unbroadcast", "cumsum", "cumprod",
    "cumulative_logsumexp", "softplus", "erf", "erfc", "lgamma", "digamma", "ctc_loss",
    "cast",
})

LOW_DTYPE_NAMES = {"fp16": "float16", "float16": "float16", "half": "float16",
                   "bf16": "bfloat16", "bfloat16": "bfloat16"}


def low_dtype(value):
    """The low float dtype ``value`` names: ``"fp16"``/``"float16"``/``"half"``,
    ``"bf16"``/``"bfloat16"`` or the dtype itself."""
    name = LOW_DTYPE_NAMES.get(value) if isinstance(value, str) else getattr(value, "name", None)
    if name not in ("float16", "bfloat16"):
        raise ValueError(f"mixed precision runs in float16 or bfloat16 ('fp16', 'bf16'), "
                         f"got {value!r}")
    return dtypes.as_dtype(name)


def mixed_precision_pass(dtype):
    """The pass (``pass(graph) -> None``) that rewrites a plan graph to run in ``dtype``."""
    low = low_dtype(dtype)

    def mixed_precision(graph) -> None:
        rewrite_mixed_precision(graph, low)

    mixed_precision.__name__ = f"mixed_precision_{low.name}"
    return mixed_precision


class _Casts:
    """The cast nodes one rewrite makes, one per (value, dtype)."""

    def __init__(self, low, feed_shapes):
        self.low = low
        self.feed_shapes = feed_shapes  # a fed value's shape, where the plan specializes
        self.made: dict = {}
        self.lowered: set = set()  # the plan nodes the rewrite made run in the low dtype

    def to(self, node, dtype):
        key = (node, dtype)
        if key not in self.made:
            # a new value, standing for no user node (a leaf has no plan copy to stand for)
            self.made[key] = PlanNode(
                REGISTRY["cast"], [node], {"dtype": dtype},
                self.feed_shapes.get(node, node.shape), dtype,
                f"{node.name}/mixed_precision_cast_{dtype.name}", node.source,
                graph=node.graph)
        return self.made[key]


def rewrite_mixed_precision(graph, low) -> None:
    """Apply the rule of the module docstring over ``graph`` (a PlanGraph), in ``low``."""
    casts = _Casts(low, graph.feed_shapes)
    order = list(graph.nodes())
    feeding = _feeding_products(order, graph.consumers())
    for node in order:
        if not isinstance(node, PlanNode):
            continue  # the user's own leaves: placeholders, variables, constants
        role = _role(node)
        if node.opdef.kind == "compute" and role != "deny" and _float32_op(node):
            if role == "allow" and _lower(node, casts):
                continue
            if role == "infer" and node in feeding \
                    and any(i in casts.lowered for i in _data_inputs(node)) \
                    and _lower(node, casts):
                continue
        if any(i in casts.lowered for i in node.inputs):
            node.inputs = tuple(casts.to(i, dtypes.float32) if i in casts.lowered else i
                                for i in node.inputs)
    graph.outputs = [casts.to(o, dtypes.float32) if o in casts.lowered else o
                     for o in graph.outputs]


def _feeding_products(order, readers) -> set:
    """The nodes whose value reaches an ``ALLOW`` op through ``INFER`` ops only: where an
    ``INFER`` op may run low (between two products, as TF's rewrite paints its infer
    list), and not in a chain that ends in float32 anyway (a loss, a variable update)."""
    feeding: set = set()
    for node in reversed(order):
        for reader in readers.get(node, ()):
            role = _role(reader)
            if role == "allow" or (role == "infer" and reader in feeding):
                feeding.add(node)
                break
    return feeding


def _role(node) -> str:
    """``"allow"``, ``"infer"`` or ``"deny"``: the list ``node`` is on. A shape op that
    does nothing at the node's static shapes (the gradient code's ``unbroadcast`` to the
    same shape, where the plan has not dropped it) is an ``INFER`` op whatever its list."""
    name = node.opdef.name
    if name in ALLOW:
        return "allow"
    if name in INFER or (node.opdef.shape_noop and _same_known_shape(node)):
        return "infer"
    return "deny"


def _same_known_shape(node) -> bool:
    source = node.inputs[0] if node.inputs else None
    return source is not None and node.shape is not None and source.shape is not None \
        and None not in tuple(node.shape) and tuple(node.shape) == tuple(source.shape)


def _float32_op(node) -> bool:
    """Whether ``node`` makes a float32 value from float32 (or already low) floats."""
    if node.dtype != dtypes.float32:
        return False
    return all(not i.dtype.is_floating or i.dtype == dtypes.float32 or i.dtype.bits == 16
               for i in node.inputs)


def _data_inputs(node):
    """The inputs whose values ``node`` reads (not those it reads the shape of only)."""
    shape_only = node.opdef.shape_only_inputs
    return [i for k, i in enumerate(node.inputs) if k not in shape_only]


def _lower(node, casts) -> bool:
    """Make ``node`` run in the low dtype, casting its float32 data inputs down; False
    (and ``node`` unchanged) where its shape/dtype rule refuses the low dtype."""
    shape_only = node.opdef.shape_only_inputs
    inputs = [casts.to(i, casts.low) if k not in shape_only and i.dtype == dtypes.float32
              and i not in casts.lowered else i for k, i in enumerate(node.inputs)]
    try:
        _, dtype = _infer(node.opdef, inputs, node.attrs)
    except Exception:  # noqa: BLE001 - an op the low dtype does not fit stays float32
        return False
    if dtype != casts.low:
        return False
    # its low inputs are read as they are; float32 ones through their (shared) cast down
    node.inputs = tuple(inputs)
    node.dtype = casts.low
    casts.lowered.add(node)
    return True
