"""Training: optimizers, learning-rate schedules, the global step and checkpoints."""

from gradflow.graph_io import write_graph
from gradflow.train.checkpoint_reader import (
    CheckpointReader,
    NewCheckpointReader,
    init_from_checkpoint,
    list_variables,
    load_checkpoint,
    load_variable,
)
from gradflow.train.learning_rate import (
    cosine_decay,
    cosine_decay_restarts,
    exponential_decay,
    inverse_time_decay,
    linear_cosine_decay,
    natural_exp_decay,
    piecewise_constant,
    piecewise_constant_decay,
    polynomial_decay,
)
from gradflow.train.moving_averages import ExponentialMovingAverage
from gradflow.train.optimizers import (
    AdadeltaOptimizer,
    AdagradOptimizer,
    AdamOptimizer,
    FtrlOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
    ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer,
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
    "ExponentialMovingAverage",
    "AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "FtrlOptimizer",
    "GradientDescentOptimizer", "MomentumOptimizer", "Optimizer", "ProximalAdagradOptimizer",
    "ProximalGradientDescentOptimizer", "RMSPropOptimizer", "create_global_step",
    "get_global_step", "get_or_create_global_step", "global_step",
    "cosine_decay", "cosine_decay_restarts", "exponential_decay", "inverse_time_decay",
    "linear_cosine_decay", "natural_exp_decay", "piecewise_constant",
    "piecewise_constant_decay", "polynomial_decay",
    "Saver", "CheckpointError", "latest_checkpoint", "CheckpointState", "checkpoint_exists",
    "get_checkpoint_state", "write_graph", "CheckpointReader", "NewCheckpointReader",
    "list_variables", "load_checkpoint", "load_variable", "init_from_checkpoint",
]

from gradflow.train.coordinator import Coordinator, start_queue_runners  # noqa: E402
from gradflow.train.input import (  # noqa: E402
    batch,
    input_producer,
    limit_epochs,
    range_input_producer,
    shuffle_batch,
    slice_input_producer,
    string_input_producer,
)
from gradflow.train.queue_runner import QueueRunner, add_queue_runner  # noqa: E402

__all__ += ["Coordinator", "start_queue_runners", "QueueRunner", "add_queue_runner", "batch",
            "input_producer", "limit_epochs", "range_input_producer", "shuffle_batch",
            "slice_input_producer", "string_input_producer"]
from gradflow.train.monitored_session import (  # noqa: E402
    MonitoredSession,
    MonitoredTrainingSession,
)
from gradflow.train.session_run_hook import (  # noqa: E402
    CheckpointSaverHook,
    SessionRunArgs,
    SessionRunContext,
    SessionRunHook,
    SessionRunValues,
    StopAtStepHook,
    SummarySaverHook,
)

__all__ += ["CheckpointSaverHook", "MonitoredSession", "MonitoredTrainingSession",
            "SessionRunArgs", "SessionRunContext", "SessionRunHook", "SessionRunValues",
            "StopAtStepHook", "SummarySaverHook"]

from gradflow.summary.legacy import SummaryWriter  # noqa: E402 - tf.train.SummaryWriter, before TF 1.0

__all__ += ["SummaryWriter"]

from gradflow.example import (  # noqa: E402 - tf.train.Example and its parts
    BytesList,
    Example,
    Feature,
    Features,
    FloatList,
    Int64List,
)

__all__ += ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List"]
