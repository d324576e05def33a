"""``DistributedOptimizer``: any gradflow optimizer, its gradients averaged across ranks."""

from __future__ import annotations

from gradflow.distributed import _context
from gradflow.distributed.compression import as_compressor
from gradflow.distributed.fusion import threshold_bytes
from gradflow.distributed.ops import AVERAGE, as_op, grouped
from gradflow.train.optimizers import Optimizer


class DistributedOptimizer(Optimizer):
    """Wrap ``optimizer`` so that ``compute_gradients`` returns gradients reduced over
    every rank (Horovod's ``hvd.DistributedOptimizer``).

    The reduction is one grouped allreduce node over all gradients: they are
    packed by dtype into fusion buffers of up to ``fusion_threshold_mb``
    megabytes (default: ``GRADFLOW_FUSION_THRESHOLD_MB``, else 64; 0 sends every
    tensor by itself), reduced in place and unpacked. ``op``: ``Average`` (the
    default) or ``Sum``. ``compression``: ``Compression.none`` or
    ``Compression.fp16`` (gradients travel as float16; with Average they are
    divided by the number of ranks first, so the sum stays in range).

    ``apply_gradients`` and everything else are the wrapped optimizer's: its
    slots, learning rate and update formulas are unchanged. In a job of one
    process the gradients are returned as they are.

    >>> opt = hvd.DistributedOptimizer(gf.train.AdamOptimizer(1e-3 * hvd.size()))
    >>> train_op = opt.minimize(loss)
    """

    def __init__(self, optimizer, name=None, use_locking=False, *, compression=None,
                 op=AVERAGE, fusion_threshold_mb=None):
        # Deliberately no Optimizer.__init__: every attribute not set here is the wrapped
        # optimizer's (see __getattr__), so its state stays in one place.
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"DistributedOptimizer wraps a gradflow optimizer "
                            f"(gf.train.AdamOptimizer(...), ...), not {optimizer!r}")
        if isinstance(optimizer, DistributedOptimizer):
            raise TypeError("this optimizer is already a DistributedOptimizer; wrapping it "
                            "twice would reduce the gradients twice")
        self._optimizer = optimizer
        self._distributed_name = name or f"Distributed{type(optimizer).__name__}"
        self._compression = as_compressor(compression)
        self._op = as_op(op)
        self._threshold_mb = fusion_threshold_mb
        threshold_bytes(fusion_threshold_mb)  # a bad value fails here, not at minimize
        del use_locking  # accepted for Horovod's signature; updates never race in a run

    def __getattr__(self, attr):
        if attr == "_optimizer":  # not set yet: __init__ has not run
            raise AttributeError(attr)
        return getattr(self._optimizer, attr)

    def compute_gradients(self, loss, var_list=None, **kwargs):
        """The wrapped optimizer's ``[(gradient, variable), ...]``, each gradient reduced
        over all ranks (``None`` gradients stay ``None``)."""
        ctx = _context.current("DistributedOptimizer.compute_gradients")
        pairs = self._optimizer.compute_gradients(loss, var_list=var_list, **kwargs)
        if ctx.host.size == 1:
            return pairs
        present = [(k, g, v) for k, (g, v) in enumerate(pairs) if g is not None]
        if not present:
            return pairs
        reduced = grouped("allreduce", [g for _, g, _ in present],
                          names=[v.name for _, _, v in present], op=self._op,
                          compression=self._compression,
                          fusion_threshold_mb=self._threshold_mb,
                          name=f"{self._distributed_name}/Allreduce")
        out = list(pairs)
        for (k, _, var), grad in zip(present, reduced):
            out[k] = (grad, var)
        return out

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """The wrapped optimizer's ``apply_gradients`` (the gradients are already reduced)."""
        return self._optimizer.apply_gradients(grads_and_vars, global_step=global_step,
                                               name=name)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        """``apply_gradients(compute_gradients(loss, var_list), global_step)``, with the
        gradients reduced over all ranks in between."""
        pairs = self.compute_gradients(loss, var_list=var_list, **kwargs)
        return self.apply_gradients(pairs, global_step=global_step, name=name)

    def get_slot_names(self) -> list:
        return self._optimizer.get_slot_names()

    def get_slot(self, var, name):
        return self._optimizer.get_slot(var, name)

    def variables(self) -> list:
        return self._optimizer.variables()

    def __repr__(self) -> str:
        return (f"DistributedOptimizer({self._optimizer!r}, op={self._op}, "
                f"compression={self._compression!r})")
