"""Training: optimizers, the global step and checkpoints."""

from gradflow.train.learning_rate import exponential_decay
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
    global_step,
)
from gradflow.train.saver import (
    CheckpointError,
    CheckpointState,
    Saver,
    checkpoint_exists,
    get_checkpoint_state,
    latest_checkpoint,
)

__all__ = [
    "AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer", "MomentumOptimizer",
    "Optimizer", "RMSPropOptimizer", "create_global_step", "get_global_step",
    "get_or_create_global_step", "global_step", "exponential_decay", "Saver", "CheckpointError",
    "latest_checkpoint", "CheckpointState", "checkpoint_exists", "get_checkpoint_state",
]
