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
from gradflow.train.monitored_session import MonitoredTrainingSession  # noqa: E402
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

from gradflow.train.meta_graph import (  # noqa: E402 - TF1's meta graph files
    export_meta_graph,
    import_meta_graph,
)

__all__ += ["export_meta_graph", "import_meta_graph"]  # MetaGraphDef is tf.MetaGraphDef

from gradflow.train.basic_hooks import (  # noqa: E402 - TF1's other session hooks
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    ProfilerHook,
    SecondOrStepTimer,
    StepCounterHook,
)
from gradflow.train.scaffold import Scaffold  # noqa: E402
from gradflow.train.session_manager import SessionManager  # noqa: E402
from gradflow.train.session_run_hook import CheckpointSaverListener  # noqa: E402
from gradflow.train.supervisor import Supervisor  # noqa: E402

__all__ += ["CheckpointSaverListener", "FeedFnHook", "FinalOpsHook", "GlobalStepWaiterHook",
            "LoggingTensorHook", "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook",
            "Scaffold", "SecondOrStepTimer", "SessionManager", "StepCounterHook", "Supervisor"]

from gradflow.example import (  # noqa: E402 - tf.train.Example and its parts
    BytesList,
    Example,
    Feature,
    Features,
    FloatList,
    Int64List,
)

__all__ += ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List"]

from gradflow.train.checkpoint_management import (  # noqa: E402 - TF1's checkpoint helpers
    checkpoints_iterator,
    generate_checkpoint_state_proto,
    get_checkpoint_mtimes,
    remove_checkpoint,
    update_checkpoint_state,
)
from gradflow.train.cluster import (  # noqa: E402 - a cluster as data, no runtime
    ClusterDef,
    ClusterSpec,
    JobDef,
    replica_device_setter,
)
from gradflow.train.input_join import (  # noqa: E402
    batch_join,
    maybe_batch,
    maybe_batch_join,
    maybe_shuffle_batch,
    maybe_shuffle_batch_join,
    shuffle_batch_join,
)
from gradflow.train.loops import (  # noqa: E402
    LooperThread,
    assert_global_step,
    basic_train_loop,
)
from gradflow.train.sequence_example import (  # noqa: E402
    FeatureList,
    FeatureLists,
    SequenceExample,
)
from gradflow.train.session_creators import (  # noqa: E402 - MonitoredSession with session_creator=
    ChiefSessionCreator,
    MonitoredSession,
    SessionCreator,
    SingularMonitoredSession,
    WorkerSessionCreator,
)

__all__ += ["checkpoints_iterator", "generate_checkpoint_state_proto", "get_checkpoint_mtimes",
            "remove_checkpoint", "update_checkpoint_state", "ClusterDef", "ClusterSpec",
            "JobDef", "replica_device_setter", "batch_join", "maybe_batch", "maybe_batch_join",
            "maybe_shuffle_batch", "maybe_shuffle_batch_join", "shuffle_batch_join",
            "LooperThread", "assert_global_step", "basic_train_loop", "FeatureList",
            "FeatureLists", "SequenceExample", "ChiefSessionCreator", "SessionCreator",
            "SingularMonitoredSession", "WorkerSessionCreator"]

from gradflow.ops.io_ops import match_filenames_once  # noqa: E402 - tf.train.match_filenames_once
from gradflow.summary.more_summaries import summary_iterator  # noqa: E402 - reads event files
from gradflow.train.adagrad_da import AdagradDAOptimizer  # noqa: E402
from gradflow.train.noisy_decay import noisy_linear_cosine_decay  # noqa: E402
from gradflow.train.warm_starting import VocabInfo, warm_start  # noqa: E402

__all__ += ["match_filenames_once", "noisy_linear_cosine_decay", "summary_iterator",
            "AdagradDAOptimizer", "VocabInfo", "warm_start"]

from gradflow.train import experimental  # noqa: E402 - tf.train.experimental: loss scaling

__all__ += ["experimental"]
