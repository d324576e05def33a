"""Training: optimizers, the global step (and, later, checkpoints)."""

from gradflow.train.optimizers import (
    AdagradOptimizer,
    AdamOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
    RMSPropOptimizer,
    create_global_step,
    get_global_step,
    get_or_create_global_step,
)

__all__ = [
    "AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer", "MomentumOptimizer",
    "Optimizer", "RMSPropOptimizer", "create_global_step", "get_global_step",
    "get_or_create_global_step",
]
