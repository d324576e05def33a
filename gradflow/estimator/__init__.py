"""TF1's ``tf.estimator``: a model as a ``model_fn``, trained, evaluated and asked for
predictions through checkpoints in its ``model_dir``.

Each call builds a new graph from ``input_fn`` and ``model_fn``: ``train`` runs a
``MonitoredTrainingSession`` (initialize or resume from the newest checkpoint, save
checkpoints, stop after ``steps`` more steps, at ``max_steps`` or at the end of the
input); ``evaluate`` and ``predict`` restore the newest checkpoint and run to the end
of their input. ``model_fn(features, labels, mode[, params][, config])`` returns an
:class:`EstimatorSpec`.

>>> def model_fn(features, labels, mode):
...     logits = gf.layers.dense(features["x"], 10)
...     loss = gf.losses.sparse_softmax_cross_entropy(labels, logits)
...     train = gf.train.AdamOptimizer().minimize(loss, gf.train.get_global_step())
...     return gf.estimator.EstimatorSpec(mode, predictions=gf.argmax(logits, 1),
...                                       loss=loss, train_op=train)
>>> est = gf.estimator.Estimator(model_fn)
>>> est.train(gf.estimator.inputs.numpy_input_fn({"x": x}, y, shuffle=True), steps=100)
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import tempfile

from gradflow.estimator import inputs
from gradflow.estimator.spec import EstimatorSpec, ModeKeys, RunConfig

__all__ = ["Estimator", "EstimatorSpec", "ModeKeys", "RunConfig", "inputs"]

_log = logging.getLogger("gradflow.estimator")


class Estimator:
    """TF1's ``tf.estimator.Estimator`` (see the module docstring). ``model_dir=None``
    takes a new temporary folder; ``config`` is a :class:`RunConfig`; ``params`` is
    passed to a ``model_fn`` that takes it. ``warm_start_from`` (a checkpoint or its
    folder) gives every trainable variable of the first training graph that the
    checkpoint holds the checkpoint's value, as TF1's default ``WarmStartSettings``
    (the global step and the optimizer's slots start afresh)."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        if not callable(model_fn):
            raise TypeError(f"Estimator: model_fn must be callable, got {model_fn!r}")
        config = config if config is not None else RunConfig()
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="gradflow_estimator_")
            _log.warning("Using temporary folder as model directory: %s", model_dir)
        self._model_fn, self._params, self._warm_start = model_fn, params or {}, warm_start_from
        self._config = config.replace(model_dir=str(model_dir))
        self._takes = set(inspect.signature(model_fn).parameters)

    model_dir = property(lambda self: self._config.model_dir,
                         doc="The folder of the model's checkpoints.")
    config = property(lambda self: self._config, doc="The :class:`RunConfig`.")
    params = property(lambda self: dict(self._params), doc="A copy of ``params``.")

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Train from the newest checkpoint of ``model_dir`` (or from the initial values)
        for ``steps`` more steps, or up to global step ``max_steps``, or to the end of
        the input; save a checkpoint at the end. Returns the Estimator."""
        from gradflow import train as gf_train
        from gradflow.graph import Graph

        if steps is not None and max_steps is not None:
            raise ValueError("Estimator.train: give steps or max_steps, not both")
        for value, what in ((steps, "steps"), (max_steps, "max_steps")):
            if value is not None and value <= 0:
                raise ValueError(f"Estimator.train: {what} must be positive, got {value}")
        if saving_listeners:
            raise NotImplementedError("Estimator.train: saving_listeners are not supported")
        if max_steps is not None:
            done = self._global_step()
            if done is not None and done >= max_steps:
                _log.info("Skipping training since max_steps has already saved.")
                return self
        with Graph().as_default() as graph:
            self._seed(graph)
            step = gf_train.get_or_create_global_step()
            spec = self._call_model_fn(input_fn, ModeKeys.TRAIN)
            if self._warm_start is not None and self.latest_checkpoint() is None:
                self._warm_start_variables()
            stop = gf_train.StopAtStepHook(num_steps=steps, last_step=max_steps) \
                if steps is not None or max_steps is not None else None
            all_hooks = list(hooks or ()) + list(spec.training_hooks) \
                + list(spec.training_chief_hooks) + ([stop] if stop else [])
            config = self._config
            saver = gf_train.Saver(
                max_to_keep=config.keep_checkpoint_max,
                keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours)
            all_hooks.append(gf_train.CheckpointSaverHook(
                config.model_dir, save_secs=config.save_checkpoints_secs,
                save_steps=config.save_checkpoints_steps, saver=saver))
            loss = None
            with gf_train.MonitoredTrainingSession(
                    checkpoint_dir=config.model_dir, hooks=all_hooks,
                    save_checkpoint_steps=None, save_checkpoint_secs=None,
                    save_summaries_steps=config.save_summary_steps,
                    config=config.session_config) as sess:
                while not sess.should_stop():
                    _, loss, at = sess.run([spec.train_op, spec.loss, step])
                    if config.log_step_count_steps and at % config.log_step_count_steps == 0:
                        _log.info("loss = %s, step = %s", loss, at)
            if loss is not None:
                _log.info("Loss for final step: %s.", loss)
        return self

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """The metrics of ``EstimatorSpec.eval_metric_ops`` and the mean ``loss`` over
        the input (or its first ``steps`` batches), from the newest checkpoint (or
        ``checkpoint_path``), with the checkpoint's ``global_step``. ``name`` is
        accepted; no evaluation summaries are written."""
        from gradflow import metrics

        _no_hooks("evaluate", hooks)
        with self._restored(input_fn, ModeKeys.EVAL, checkpoint_path) as (sess, spec, step):
            mean_loss, update_loss = metrics.mean(spec.loss)
            ops = dict(spec.eval_metric_ops)
            ops.setdefault("loss", (mean_loss, update_loss))
            updates = [update for _, update in ops.values()]
            sess.run(_local_initializer())
            done = 0
            while steps is None or done < steps:
                if not self._run_to_end(sess, updates):
                    break
                done += 1
            results = sess.run({key: value for key, (value, _) in ops.items()})
            results["global_step"] = sess.run(step)
        _log.info("Saving dict for global step %s: %s", results["global_step"], results)
        return results

    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yield the predictions of ``EstimatorSpec.predictions`` for the whole input,
        from the newest checkpoint (or ``checkpoint_path``): one example at a time (a
        dict of arrays for dict predictions), or one batch at a time."""
        _no_hooks("predict", hooks)
        with self._restored(input_fn, ModeKeys.PREDICT, checkpoint_path) as (sess, spec, _):
            predictions = spec.predictions
            if isinstance(predictions, dict) and predict_keys is not None:
                missing = [k for k in predict_keys if k not in predictions]
                if missing:
                    raise ValueError(f"Estimator.predict: predict_keys {missing} are not in "
                                     f"the predictions {sorted(predictions)}")
                predictions = {k: predictions[k] for k in predict_keys}
            while True:
                batch = self._run_to_end(sess, predictions)
                if batch is False:
                    return
                if not yield_single_examples:
                    yield batch
                elif isinstance(batch, dict):
                    count = len(next(iter(batch.values())))
                    for k in range(count):
                        yield {key: value[k] for key, value in batch.items()}
                else:
                    yield from batch

    def latest_checkpoint(self):
        """The newest checkpoint of ``model_dir``, or None."""
        from gradflow.train import latest_checkpoint

        return latest_checkpoint(self.model_dir)

    def get_variable_names(self):
        """The names of the variables in the newest checkpoint."""
        from gradflow.train import list_variables

        return [name for name, _ in list_variables(self._checkpoint("get_variable_names"))]

    def get_variable_value(self, name):
        """The value of variable ``name`` in the newest checkpoint."""
        from gradflow.train import load_variable

        return load_variable(self._checkpoint("get_variable_value"), name)

    # -- helpers -------------------------------------------------------------------

    def _checkpoint(self, where):
        found = self.latest_checkpoint()
        if found is None:
            raise ValueError(f"Estimator.{where}: no checkpoint in {self.model_dir}; train "
                             "the model first")
        return found

    def _global_step(self):
        from gradflow.train import load_checkpoint

        found = self.latest_checkpoint()
        if found is None:
            return None
        reader = load_checkpoint(found)
        return int(reader.get_tensor("global_step")) if reader.has_tensor("global_step") \
            else None

    def _seed(self, graph):
        if self._config.tf_random_seed is not None:
            graph.seed = self._config.tf_random_seed

    def _call_model_fn(self, input_fn, mode):
        features, labels = _features_and_labels(input_fn())
        kwargs = {}
        if "labels" in self._takes:
            kwargs["labels"] = labels
        elif labels is not None:
            raise ValueError("Estimator: input_fn gives labels, but model_fn takes no labels")
        if "mode" in self._takes:
            kwargs["mode"] = mode
        if "params" in self._takes:
            kwargs["params"] = dict(self._params)
        if "config" in self._takes:
            kwargs["config"] = self._config
        spec = self._model_fn(features=features, **kwargs)
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"Estimator: model_fn must return an EstimatorSpec, got "
                             f"{type(spec).__name__}")
        return spec

    def _warm_start_variables(self):
        from gradflow.train import init_from_checkpoint, load_checkpoint
        from gradflow.variables import trainable_variables

        reader = load_checkpoint(self._warm_start)
        held = {v.op.name: v for v in trainable_variables() if reader.has_tensor(v.op.name)}
        if held:
            init_from_checkpoint(reader.path, {name: v for name, v in held.items()})

    def _restored(self, input_fn, mode, checkpoint_path):
        return _restored_session(self, input_fn, mode, checkpoint_path)

    @staticmethod
    def _run_to_end(sess, fetches):
        """``sess.run(fetches)``, or False at the end of the input."""
        from gradflow import errors

        try:
            return sess.run(fetches)
        except errors.OutOfRangeError:
            return False


@contextlib.contextmanager
def _restored_session(est, input_fn, mode, checkpoint_path):
    """A new graph of ``mode`` and a Session with the checkpoint restored, as
    ``(session, spec, global step tensor)``."""
    from gradflow import train as gf_train
    from gradflow.graph import Graph
    from gradflow.session import Session

    path = checkpoint_path or est.latest_checkpoint()
    if path is None:
        raise ValueError(f"Could not find trained model in model_dir: {est.model_dir}")
    with Graph().as_default() as graph:
        est._seed(graph)
        step = gf_train.get_or_create_global_step()
        spec = est._call_model_fn(input_fn, mode)
        with Session(graph=graph, config=est.config.session_config) as sess:
            gf_train.Saver().restore(sess, path)
            sess.run(_tables_initializer())  # as TF1's Scaffold: vocabulary tables
            yield sess, spec, step


def _no_hooks(where, hooks):
    if hooks:
        raise NotImplementedError(f"Estimator.{where}: hooks are not supported (train takes "
                                  "them)")


def _local_initializer():
    from gradflow.lookup import tables_initializer
    from gradflow.ops.state_ops import group
    from gradflow.variables import local_variables_initializer

    return group(local_variables_initializer(), tables_initializer())


def _tables_initializer():
    from gradflow.lookup import tables_initializer

    return tables_initializer()


def _features_and_labels(result):
    """What an ``input_fn`` returned, as ``(features, labels)``: a ``(features,
    labels)`` pair, features alone, or a dataset whose elements are either."""
    from gradflow.data import Dataset

    if isinstance(result, Dataset):
        result = result.make_one_shot_iterator().get_next()
    if isinstance(result, tuple) and len(result) == 2:
        return result
    if isinstance(result, (tuple, list)):
        raise ValueError(f"Estimator: input_fn returned {len(result)} values; expected "
                         "features, or (features, labels)")
    return result, None

