"""What a ``model_fn`` returns (:class:`EstimatorSpec`), the modes it is called in
(:class:`ModeKeys`) and an Estimator's settings (:class:`RunConfig`), as in TF1."""

from __future__ import annotations

import collections


class ModeKeys:
    """The ``mode`` a ``model_fn`` is called with."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


class EstimatorSpec(collections.namedtuple("EstimatorSpec", [
        "mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
        "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
        "prediction_hooks"])):
    """A ``model_fn``'s graph for one mode: ``TRAIN`` needs ``loss`` and ``train_op``,
    ``EVAL`` needs ``loss`` (``eval_metric_ops``: ``{name: (value, update_op)}``, as
    ``gf.metrics`` returns them), ``PREDICT`` needs ``predictions`` (a tensor or a dict
    of them)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT):
            raise ValueError(f"EstimatorSpec: mode must be one of ModeKeys, got {mode!r}")
        needs = {ModeKeys.TRAIN: ("loss", "train_op"), ModeKeys.EVAL: ("loss",),
                 ModeKeys.PREDICT: ("predictions",)}[mode]
        given = {"loss": loss, "train_op": train_op, "predictions": predictions}
        missing = [n for n in needs if given[n] is None]
        if missing:
            raise ValueError(f"EstimatorSpec: mode {mode!r} needs {' and '.join(missing)}")
        if scaffold is not None:
            raise NotImplementedError("EstimatorSpec: scaffold is not supported")
        for name, value in (("eval_metric_ops", eval_metric_ops),):
            if value is not None and not isinstance(value, dict):
                raise TypeError(f"EstimatorSpec: {name} must be a dict, got {value!r}")
        return super().__new__(cls, mode, predictions, loss, train_op,
                               dict(eval_metric_ops or {}), export_outputs,
                               tuple(training_chief_hooks or ()), tuple(training_hooks or ()),
                               scaffold, tuple(evaluation_hooks or ()),
                               tuple(prediction_hooks or ()))


class RunConfig:
    """An Estimator's settings: where it keeps its checkpoints (``model_dir``), the
    graph seed (``tf_random_seed``), how often it saves checkpoints (every
    ``save_checkpoints_steps`` steps, else every ``save_checkpoints_secs`` seconds:
    600 when neither is given) and summaries, how many checkpoints it keeps, how often
    it logs the loss, and the Session's ``session_config``."""

    def __init__(self, model_dir=None, tf_random_seed=None, save_summary_steps=100,
                 save_checkpoints_steps=None, save_checkpoints_secs=None,
                 session_config=None, keep_checkpoint_max=5,
                 keep_checkpoint_every_n_hours=10000, log_step_count_steps=100):
        if save_checkpoints_steps is not None and save_checkpoints_secs is not None:
            raise ValueError("RunConfig: give save_checkpoints_steps or save_checkpoints_secs, "
                             "not both")
        if save_checkpoints_steps is None and save_checkpoints_secs is None:
            save_checkpoints_secs = 600
        self.model_dir = None if model_dir is None else str(model_dir)
        self.tf_random_seed = tf_random_seed
        self.save_summary_steps = save_summary_steps
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.session_config = session_config
        self.keep_checkpoint_max = keep_checkpoint_max
        self.keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self.log_step_count_steps = log_step_count_steps

    def replace(self, **changes):
        """A copy with ``changes``."""
        fields = dict(vars(self))
        unknown = sorted(set(changes) - set(fields))
        if unknown:
            raise ValueError(f"RunConfig.replace: unknown settings {unknown}")
        if "save_checkpoints_steps" in changes and "save_checkpoints_secs" not in changes:
            fields["save_checkpoints_secs"] = None  # the one given replaces the other
        elif "save_checkpoints_secs" in changes and "save_checkpoints_steps" not in changes:
            fields["save_checkpoints_steps"] = None
        fields.update(changes)
        return RunConfig(**fields)
