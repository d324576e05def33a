"""Collectives as graph nodes.

A grouped collective is one node over many tensors: its value is the tuple of
results, which ``dist_output`` nodes pick apart. Because a plan runs its
nodes in a fixed order, every rank that runs the same graph issues the same
collectives in the same order; no thread has to negotiate which tensor is
ready. The node's callable is made when a plan is compiled (op kind
``"call"``) and keeps, for the life of that plan, its fusion layout and
buffers:

1. on the first run (and whenever the tensors' shapes change) it computes the
   layout and the ranks compare its digest; if they differ, every rank raises
   ``DistributedMismatchError`` naming the first difference, instead of
   entering collectives that would never match;
2. on every run it packs the tensors into the buffers, reduces (or
   broadcasts) each buffer in place, and unpacks new arrays from them.

Plans of one session that run concurrently in several threads must not
contain collectives: the ranks could interleave them differently.
"""

from __future__ import annotations

import time

from gradflow.distributed import _context
from gradflow.distributed.compression import as_compressor
from gradflow.distributed.fusion import (
    FusionBuffers,
    Layout,
    describe_line,
    first_difference,
    threshold_bytes,
)
from gradflow.errors import InvalidArgumentError
from gradflow.graph import Operation
from gradflow.ops.control_flow_ops import VARIANT
from gradflow.prim.registry import apply, convert_to_tensor, register

AVERAGE = "average"
SUM = "sum"

# Seconds spent by the allreduce nodes of this process, by phase (for benchmarks/; on a
# GPU the reduce phase times only the queuing of asynchronous NCCL calls).
STATS = {"runs": 0, "pack": 0.0, "reduce": 0.0, "unpack": 0.0}


def reset_stats() -> None:
    """Zero ``STATS``."""
    STATS.update(runs=0, pack=0.0, reduce=0.0, unpack=0.0)


class DistributedMismatchError(InvalidArgumentError):
    """The ranks built different collectives (graphs, optimizer settings or shapes differ).

    ``Session.run`` lets it through as it is: its message names the node and the first
    difference."""


def _agree(ctx, engine, layout, node) -> None:
    """Raise on every rank, naming the first difference, unless all ranks have ``layout``.

    A node's layout is compared once per process, not once per plan: ranks may fetch
    different things beside the training op (rank 0 its summaries, say), which gives
    them different plans holding the same node, and a comparison that only some ranks
    enter would itself hang."""
    digest = layout.digest()
    agreed = ctx.agreed.setdefault(node, set())
    if digest in agreed:
        return
    what = f"{node.describe()}, comparing the ranks' tensors"
    digests = engine.allgather_object(digest, what)
    if all(d == digests[0] for d in digests):
        agreed.add(digest)
        return
    described = engine.allgather_object(layout.describe(), what)
    rank = next(r for r, d in enumerate(digests) if d != digests[0])
    k, ours, theirs = first_difference(described[0], described[rank])
    others = [r for r, d in enumerate(digests) if d != digests[0]]
    also = f" (ranks {', '.join(map(str, others))} all differ from rank 0)" \
        if len(others) > 1 else ""
    raise DistributedMismatchError(
        f"the ranks disagree about the collective '{node.name}' (created at {node.source}): "
        f"at item {k}, rank 0 has {describe_line(ours)} but rank {rank} has "
        f"{describe_line(theirs)}{also}. Every rank must build the same graph (the same "
        "variables, in the same order, shapes and dtypes) with the same settings "
        "(op, compression, fusion threshold); otherwise the collectives would wait on each "
        "other forever or mix up values")


def _collective_impl(run_state, node):
    attrs = node.attrs
    ctx = _context.current(f"running the collective '{node.name}'")
    backend = run_state.backend
    engine = ctx.engine_for(backend)
    xp = backend.xp
    kind, op, root, single = attrs["kind"], attrs["op"], attrs["root"], attrs["single"]
    compressor, threshold, names = attrs["compression"], attrs["threshold"], attrs["names"]
    if compressor.name != "none" and not all(hasattr(xp, compressor.wire_dtype(t.dtype.name))
                                             for t in node.inputs):
        raise TypeError(f"{node.name}: the {backend.name} backend has no float16 (the Array "
                        f"API standard defines none), so Compression.{compressor.name} "
                        "cannot pack for it; use Compression.none")
    header = (kind, op or f"root {root}", f"compression {compressor.name}")
    in_dtypes = [t.dtype.name for t in node.inputs]
    scale = 1.0 / engine.size if op == AVERAGE and engine.size > 1 else None
    state = {"shapes": None, "buffers": None}
    what = node.describe()

    def prepare(arrays):
        shapes = tuple(tuple(int(d) for d in a.shape) for a in arrays)
        if shapes != state["shapes"]:
            specs = [(name, shape, dt, compressor.wire_dtype(dt))
                     for name, shape, dt in zip(names, shapes, in_dtypes)]
            layout = Layout(specs, threshold, header)
            if engine.size > 1:
                _agree(ctx, engine, layout, node)
            state["buffers"] = FusionBuffers(layout, xp, backend.copy)
            state["shapes"] = shapes
        return state["buffers"]

    def allreduce(*arrays):
        buffers = prepare(arrays)
        t0 = time.perf_counter()
        buffers.pack(arrays, scale)
        t1 = time.perf_counter()
        for array in buffers.arrays:
            engine.allreduce_(array, what)
        t2 = time.perf_counter()
        out = buffers.unpack(scale)
        STATS["runs"] += 1
        STATS["pack"] += t1 - t0
        STATS["reduce"] += t2 - t1
        STATS["unpack"] += time.perf_counter() - t2
        return out[0] if single else tuple(out)

    def broadcast(*arrays):
        buffers = prepare(arrays)
        buffers.pack(arrays)
        for array in buffers.arrays:
            engine.broadcast_(array, root, what)
        out = buffers.unpack()
        return out[0] if single else tuple(out)

    return allreduce if kind == "allreduce" else broadcast


def _collective_infer(shapes, in_dtypes, **attrs):
    if attrs["single"]:
        return shapes[0], in_dtypes[0]
    return None, VARIANT


def _allreduce_grad(node, g):
    # The sum (or mean) over ranks of x has, on every rank, the gradient summed (or averaged)
    # over ranks: the same collective applied to the incoming gradient.
    return [_build("allreduce", [g], [node.attrs["names"][0] + "/grad"], node.attrs["op"],
                   node.attrs["compression"], node.attrs["threshold"], 0, None, True)]


def _output_impl(run_state, node):
    index = node.attrs["index"]
    return lambda value: value[index]


def _output_infer(shapes, in_dtypes, index, shape, dtype):
    return shape, dtype


def _allgather_impl(run_state, node):
    ctx = _context.current(f"running the collective '{node.name}'")
    backend = run_state.backend
    engine = ctx.engine_for(backend)
    what = node.describe()
    return lambda array: engine.allgather(array, backend, what)


def _allgather_infer(shapes, in_dtypes):
    shape = shapes[0]
    if shape is None:
        return None, in_dtypes[0]
    return ((None,) + tuple(shape[1:]) if len(shape) else (None,)), in_dtypes[0]


register("dist_grouped_collective", _collective_impl, _collective_infer, grad=None,
         kind="call")
register("dist_allreduce", _collective_impl, _collective_infer, grad=_allreduce_grad,
         kind="call")
register("dist_broadcast", _collective_impl, _collective_infer, grad=None, kind="call")
register("dist_output", _output_impl, _output_infer, grad=None, kind="call")
register("dist_allgather", _allgather_impl, _allgather_infer, grad=None, kind="call")


# -- building the nodes ----------------------------------------------------------------


def as_op(op, average=None) -> str:
    """``AVERAGE`` or ``SUM`` from Horovod's ``op=`` (``Average``/``Sum``) and its older
    ``average=`` flag; the default is Average."""
    if average is not None and op is not None:
        raise ValueError("give op= or the older average=, not both")
    if op is None:
        return SUM if average is False else AVERAGE
    name = str(op).strip().lower()
    if name not in (AVERAGE, SUM):
        raise ValueError(f"op must be gradflow.distributed.Average or Sum, got {op!r}")
    return name


def _tensors(items, what):
    tensors = []
    for item in items:
        t = convert_to_tensor(item)
        if isinstance(t, Operation):
            raise TypeError(f"{what}: '{t.name}' is an operation, not a tensor")
        if t.dtype.name not in ("float16", "float32", "float64", "int8", "uint8", "int32",
                                "uint32", "int64", "uint64", "bool"):
            raise TypeError(f"{what}: '{t.name}' has dtype {t.dtype.name}, which the "
                            "collectives cannot move")
        tensors.append(t)
    return tensors


def _build(kind, tensors, names, op, compression, threshold, root, name, single):
    """The node of one (grouped) collective; ``kind`` is "allreduce" or "broadcast"."""
    if kind == "broadcast":
        op_name = "dist_broadcast" if single else "dist_grouped_collective"
    else:
        op_name = "dist_allreduce" if single else "dist_grouped_collective"
    what = f"{'Horovod' if single else 'Grouped'}{kind.capitalize()}"
    if op == AVERAGE:
        for t in tensors:
            if not t.dtype.is_floating:
                raise TypeError(f"{what}: op=Average needs floating-point tensors, and "
                                f"'{t.name}' is {t.dtype.name}; use op=Sum")
    return apply(op_name, tensors, name=name or what, kind=kind, op=op, root=int(root),
                 compression=compression, threshold=int(threshold), names=tuple(names),
                 single=single)


def grouped(kind, tensors, names=None, op=AVERAGE, compression=None, fusion_threshold_mb=None,
            root=0, name=None):
    """One collective node over ``tensors``; returns one result tensor per tensor."""
    what = f"grouped_{kind}"
    tensors = _tensors(tensors, what)
    if not tensors:
        return []
    names = [t.name for t in tensors] if names is None else [str(n) for n in names]
    if len(names) != len(tensors):
        raise ValueError(f"{what}: {len(names)} names for {len(tensors)} tensors")
    compressor = as_compressor(compression)
    node = _build(kind, tensors, names, op if kind == "allreduce" else None, compressor,
                  threshold_bytes(fusion_threshold_mb), root, name, False)
    return [apply("dist_output", [node], name=f"{node.name}/output_{k}", index=k,
                  shape=None if t.shape is None else tuple(t.shape), dtype=t.dtype)
            for k, t in enumerate(tensors)]


def single(kind, tensor, op=AVERAGE, compression=None, root=0, name=None):
    """One collective node over one tensor, whose result is the node itself."""
    (t,) = _tensors([tensor], kind)
    compressor = as_compressor(compression)
    return _build(kind, [t], [t.name], op if kind == "allreduce" else None, compressor,
                  threshold_bytes(None), root, name, True)


def allgather(tensor, name=None):
    """The node that concatenates ``tensor`` of every rank along axis 0."""
    (t,) = _tensors([tensor], "allgather")
    return apply("dist_allgather", [t], name=name or "HorovodAllgather")
