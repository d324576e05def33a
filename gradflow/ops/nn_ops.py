"""Softmax and the losses (TF1 ``tf.nn``), over the primitives of ``gradflow.prim.nn``."""

from __future__ import annotations

from gradflow import dtypes
from gradflow.graph import user_source_line
from gradflow.ops import candidate_sampling_ops
from gradflow.ops.activation_ops import leaky_relu, softplus  # noqa: F401 - leaky_relu: tf.nn
from gradflow.ops.array_ops import (
    expand_dims,
    matmul,
    reduce_any,
    reduce_mean,
    reduce_sum,
    reshape,
)
from gradflow.ops.index_ops import concat, gather, one_hot
from gradflow.ops.math_ops import (
    add,
    cast,
    divide,
    equal,
    log,
    maximum,
    negative,
    ones_like,
    sqrt,
    square,
    subtract,
    where,
    zeros_like,
)
from gradflow.ops.state_ops import stop_gradient
from gradflow.prim import nn as _nn  # noqa: F401 - registers the primitives applied here
from gradflow.prim import rules
from gradflow.prim.registry import apply, convert_to_tensor


def _axis(logits, axis):
    return axis if logits.shape is None else rules.normalize_axis(axis, len(logits.shape))[0]


def _dim_alias(op_name, axis, dim):
    """``axis``, or TF1's deprecated ``dim=`` spelling of it; default -1."""
    if dim is not None:
        if axis is not None:
            raise ValueError(f"{op_name}: give axis= or dim=, not both")
        return dim
    return -1 if axis is None else axis


def softmax(logits, axis=None, name=None, dim=None):
    """``exp(logits) / sum(exp(logits))`` along ``axis`` (default -1), computed stably.

    ``dim=`` is TF1's deprecated name of ``axis``.
    """
    x = convert_to_tensor(logits)
    return apply("softmax", [x], name=name, axis=_axis(x, _dim_alias("softmax", axis, dim)))


def log_softmax(logits, axis=None, name=None, dim=None):
    """``logits - log(sum(exp(logits)))`` along ``axis`` (default -1), computed stably.

    ``dim=`` is TF1's deprecated name of ``axis``.
    """
    x = convert_to_tensor(logits)
    return apply("log_softmax", [x], name=name,
                 axis=_axis(x, _dim_alias("log_softmax", axis, dim)))


def _named_only(what, sentinel):
    """TF1's guard: before TF 1.0 these losses took ``(logits, labels)`` in that order, so
    a positional call from such a program would swap them silently."""
    if sentinel is not None:
        raise ValueError(f"Only call `{what}` with named arguments (labels=..., logits=..., "
                         "...): before TF 1.0 the order was (logits, labels)")


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, dim=None,
                                         name=None, axis=-1):
    """Cross-entropy between ``labels`` (a distribution) and ``softmax(logits)``, per row.
    Labels of another dtype are cast to the logits' (as TF1 does: ``input_data``'s one-hot
    labels are float64). Named arguments only, as in TF1."""
    _named_only("softmax_cross_entropy_with_logits_v2", _sentinel)
    if labels is None or logits is None:
        raise ValueError("softmax_cross_entropy_with_logits needs labels= and logits=")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, like=logits)
    if labels.dtype is not logits.dtype:
        labels = cast(labels, logits.dtype)
    axis = axis if dim is None else dim
    return negative(reduce_sum(labels * log_softmax(logits, axis), axis), name=name)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=None,
                                      name=None, axis=-1):
    """Cross-entropy between ``labels`` (a distribution) and ``softmax(logits)``, per row,
    differentiable in ``logits`` only (TF1's first version: no gradient reaches the labels;
    ``softmax_cross_entropy_with_logits_v2`` sends one to both)."""
    _named_only("softmax_cross_entropy_with_logits", _sentinel)
    if labels is not None:
        labels = stop_gradient(convert_to_tensor(labels))
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, dim=dim,
                                                name=name, axis=axis)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name=None):
    """Cross-entropy of integer class ``labels`` against ``softmax(logits)``, per row.
    Named arguments only, as in TF1."""
    _named_only("sparse_softmax_cross_entropy_with_logits", _sentinel)
    if labels is None or logits is None:
        raise ValueError("sparse_softmax_cross_entropy_with_logits needs labels= and logits=")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels)
    if not labels.dtype.is_integer:
        raise TypeError(f"labels '{labels.name}' must be int32 or int64, got {labels.dtype.name}")
    rules.known_rank(logits, "sparse_softmax_cross_entropy_with_logits",
                     ": the number of classes (its last axis) must be known")
    if logits.shape[-1] is None:
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: the number of classes "
                         f"(last axis of '{logits.name}') must be known; at "
                         f"{user_source_line()}")
    if labels.shape is not None and len(labels.shape) != len(logits.shape) - 1:
        raise ValueError(f"labels '{labels.name}' of shape {tuple(labels.shape)} must have "
                         f"rank {len(logits.shape) - 1} for logits of shape "
                         f"{tuple(logits.shape)}")
    depth = logits.shape[-1]
    message = (f"sparse_softmax_cross_entropy_with_logits: labels '{labels.name}' has the "
               f"value {{value}}, outside the valid range [0, {depth}) of the {depth} classes "
               f"of logits '{logits.name}'; the loss was created at {user_source_line()}")
    rows = (f"sparse_softmax_cross_entropy_with_logits: labels '{labels.name}' of shape "
            "{got} and logits '" + logits.name + "' of shape {want} must have the same "
            f"first dimensions; the loss was created at {user_source_line()}")
    labels = _same_rows(labels, logits, rows)
    checked = apply("check_label_range", [labels], depth=depth, message=message)
    # the label's log-probability picked, not multiplied out: 0 * log_softmax would be
    # NaN where another class's logit is -inf, while the loss is finite (TF1 too)
    hot = one_hot(checked, depth, on_value=True, off_value=False, dtype=dtypes.bool_)
    logp = log_softmax(logits)
    return negative(reduce_sum(where(hot, logp, zeros_like(logp)), -1), name=name)


def _same_rows(x, like, message):
    """``x``, checked when the graph runs to have the leading dimensions of ``like``
    (all of ``x``'s); refused at once where both are known and differ."""
    n = None if x.shape is None else len(x.shape)
    if n is None or like.shape is None:
        return x
    want, got = tuple(like.shape[:n]), tuple(x.shape)
    if all(a is not None and a == b for a, b in zip(got, want)):
        return x
    if any(a is not None and b is not None and a != b for a, b in zip(got, want)):
        raise ValueError(message.format(got=got, want=tuple(like.shape)))
    return apply("check_leading_dims", [x, like], message=message)


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """Elementwise logistic loss ``softplus(x) - x z`` (TF1's ``max(x, 0) - x z +
    log(1 + exp(-|x|))``, the same values), for logits ``x`` and labels ``z``.

    Through the ``softplus`` primitive the gradient is ``sigmoid(x) - z`` everywhere,
    including at ``x = 0``, where a zero-initialized last layer starts and where the
    kinks of ``max`` and ``|x|`` would give ``-z``. Named arguments only, as in TF1.
    """
    _named_only("sigmoid_cross_entropy_with_logits", _sentinel)
    if labels is None or logits is None:
        raise ValueError("sigmoid_cross_entropy_with_logits needs labels= and logits=")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, like=logits)
    return subtract(softplus(logits), logits * labels, name=name)


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """Logistic loss with the positive term weighted by ``pos_weight`` (TF1
    ``tf.nn.weighted_cross_entropy_with_logits``), elementwise:
    ``labels * -log(sigmoid(logits)) * pos_weight + (1 - labels) * -log(1 - sigmoid(logits))``.

    Computed as TF does, without overflow: with ``l = 1 + (pos_weight - 1) * labels``,
    ``(1 - labels) * logits + l * softplus(-logits)``. ``targets`` is TF1's deprecated
    name of ``labels``.
    """
    if targets is not None:
        if labels is not None:
            raise ValueError("weighted_cross_entropy_with_logits: give labels= or targets=, "
                             "not both")
        labels = targets
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("weighted_cross_entropy_with_logits needs labels=, logits= and "
                         "pos_weight=")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels, like=logits)
    pos_weight = convert_to_tensor(pos_weight, like=logits)
    if labels.shape is not None and logits.shape is not None and (
            len(labels.shape) != len(logits.shape) or
            any(a is not None and b is not None and a != b
                for a, b in zip(labels.shape, logits.shape))):
        raise ValueError(f"weighted_cross_entropy_with_logits: labels '{labels.name}' "
                         f"{tuple(labels.shape)} and logits '{logits.name}' "
                         f"{tuple(logits.shape)} must have the same shape")
    log_weight = (pos_weight - 1.0) * labels + 1.0
    return add((1.0 - labels) * logits, log_weight * softplus(negative(logits)), name=name)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))`` (TF1 ``tf.nn.l2_normalize``).

    ``axis`` (an int or a list) defaults to every axis; ``dim`` is TF1's deprecated
    name of it. ``epsilon`` bounds the norm below, so a zero vector stays zero.
    """
    if dim is not None:
        if axis is not None:
            raise ValueError("l2_normalize: give axis= or dim=, not both")
        axis = dim
    x = convert_to_tensor(x)
    if not x.dtype.is_floating:
        raise TypeError(f"l2_normalize: '{x.name}' must be floating, got {x.dtype.name}")
    square_sum = reduce_sum(square(x), axis, keepdims=True)
    return divide(x, sqrt(maximum(square_sum, epsilon)), name=name)


def l2_loss(t, name=None):
    """``sum(t ** 2) / 2``."""
    t = convert_to_tensor(t)
    return reduce_sum(t * t, name=name) * 0.5


def zero_fraction(value, name=None):
    """The fraction of ``value``'s entries that are 0, a float32 scalar (TF1's activation
    sparsity summaries)."""
    value = convert_to_tensor(value)
    return reduce_mean(cast(equal(value, 0), dtypes.float32), name=name or "zero_fraction")


def bias_add(value, bias, data_format=None, name=None):
    """``value + bias`` where ``bias`` is 1-D and matches the channel axis of ``value``:
    the last (``data_format`` None or ``"NHWC"``/``"N...C"``), or axis 1 (``"NCHW"``/
    ``"NC..."``, TF1's channels-first layouts; ``value`` of known rank).

    >>> y = gf.nn.bias_add(conv, b, data_format="NCHW")  # b has conv.shape[1] entries
    """
    value = convert_to_tensor(value)
    bias = convert_to_tensor(bias, like=value)
    if data_format not in (None, "NHWC", "N...C", "NCHW", "NC..."):
        raise ValueError(f"bias_add: data_format must be 'NHWC', 'N...C', 'NCHW' or 'NC...', "
                         f"got {data_format!r}")
    if bias.shape is not None and len(bias.shape) != 1:
        raise ValueError(f"bias_add: bias '{bias.name}' must be 1-D, got shape "
                         f"{tuple(bias.shape)}")
    first = data_format in ("NCHW", "NC...")
    if first and (value.shape is None or len(value.shape) < 2):
        raise ValueError(f"bias_add: with data_format {data_format!r}, '{value.name}' must "
                         f"have a known rank of 2 or more, got shape {value.shape}")
    axis = 1 if first else -1
    channels = None if value.shape is None else value.shape[axis]
    entries = None if bias.shape is None else bias.shape[0]
    if None not in (channels, entries) and channels != entries:
        where = "axis 1" if first else "the last axis"
        raise ValueError(f"bias_add: bias '{bias.name}' has {bias.shape[0]} entries, {where} "
                         f"of '{value.name}' has {channels}")
    if first:
        bias = reshape(bias, (-1,) + (1,) * (len(value.shape) - 2))
    return value + bias if name is None else add(value, bias, name=name)


def embedding_lookup(params, ids, partition_strategy="mod", name=None, validate_indices=True,
                     max_norm=None):
    """Rows of ``params`` at integer ``ids`` of any shape: ``ids.shape + params.shape[1:]``.

    TF1 ``tf.nn.embedding_lookup`` for one params tensor (or a list holding one).
    It is ``gather(params, ids)``: its gradient is a scatter-add of the rows. An id
    outside ``[0, len(params))`` fails the run with ``InvalidArgumentError`` naming
    it, its position and this line, on every backend; ``validate_indices=False``
    skips that check (see ``gf.gather``).

    >>> emb = gf.get_variable("emb", (vocab, dim))
    >>> vectors = gf.nn.embedding_lookup(emb, ids)   # [batch, time] -> [batch, time, dim]
    """
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError(
                f"embedding_lookup: sharded params (a list of {len(params)} tensors) are not "
                "supported; concatenate them with gf.concat(params, 0) first")
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup: max_norm is not supported")
    params = convert_to_tensor(params)
    ids = convert_to_tensor(ids)
    if not ids.dtype.is_integer:
        raise TypeError(f"embedding_lookup: ids '{ids.name}' must be int32 or int64, got "
                        f"{ids.dtype.name}")
    if params.shape is not None and len(params.shape) < 1:
        raise ValueError(f"embedding_lookup: params '{params.name}' must have rank 1 or more")
    return gather(params, ids, validate_indices=validate_indices, axis=0,
                  name=name or "embedding_lookup")


# -- sampled losses: nce_loss and sampled_softmax_loss (TF1 nn_impl) -------------------

_FLT_MAX = 3.4028234663852886e38  # TF1 adds -FLT_MAX to the logits of accidental hits


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes,
                            num_true, sampled_values, remove_accidental_hits, what,
                            seed=None):
    """TF1's ``_compute_sampled_logits``: ``[batch, num_true + num_sampled]`` logits,
    true classes first, each minus the log of its expected count, and their labels
    (``1 / num_true`` for the true classes, 0 for the sampled ones).

    Rows of ``weights`` and ``biases`` are gathered, so their gradients are the
    scatter-adds of gather; the samples and expected counts get no gradient.
    """
    if isinstance(weights, (list, tuple)):
        if len(weights) != 1:
            raise NotImplementedError(
                f"{what}: sharded weights (a list of {len(weights)} tensors) are not "
                "supported; concatenate them with gf.concat(weights, 0) first")
        weights = weights[0]
    num_true, num_sampled, num_classes = int(num_true), int(num_sampled), int(num_classes)
    inputs = convert_to_tensor(inputs)
    weights = convert_to_tensor(weights)
    biases = convert_to_tensor(biases)
    labels = convert_to_tensor(labels)
    if not inputs.dtype.is_floating:
        raise TypeError(f"{what}: inputs '{inputs.name}' must be floating, got "
                        f"{inputs.dtype.name}")
    if inputs.shape is not None and len(inputs.shape) != 2:
        raise ValueError(f"{what}: inputs '{inputs.name}' must have shape [batch, dim], got "
                         f"{tuple(inputs.shape)}")
    if weights.shape is not None and len(weights.shape) != 2:
        raise ValueError(f"{what}: weights '{weights.name}' must have shape "
                         f"[num_classes, dim], got {tuple(weights.shape)}")
    if biases.shape is not None and len(biases.shape) != 1:
        raise ValueError(f"{what}: biases '{biases.name}' must have shape [num_classes], "
                         f"got {tuple(biases.shape)}")
    if not labels.dtype.is_integer:
        raise TypeError(f"{what}: labels '{labels.name}' must be int64 (or int32), got "
                        f"{labels.dtype.name}")
    labels = reshape(cast(labels, "int64"), [-1, num_true])  # [batch, num_true]
    if sampled_values is None:
        sampled_values = candidate_sampling_ops.log_uniform_candidate_sampler(
            true_classes=labels, num_true=num_true, num_sampled=num_sampled, unique=True,
            range_max=num_classes, seed=seed)
    if len(sampled_values) != 3:
        raise ValueError(f"{what}: sampled_values must be (sampled_candidates, "
                         "true_expected_count, sampled_expected_count), as a sampler "
                         f"returns them; got {len(sampled_values)} values")
    sampled, true_count, sampled_count = (stop_gradient(convert_to_tensor(v))
                                          for v in sampled_values)
    if not sampled.dtype.is_integer:
        raise TypeError(f"{what}: the sampled candidates '{sampled.name}' must be integers, "
                        f"got {sampled.dtype.name}")
    sampled = cast(sampled, "int64")
    dtype = inputs.dtype
    weights = cast(weights, dtype)
    biases = cast(biases, dtype)
    true_count = cast(true_count, dtype)
    sampled_count = cast(sampled_count, dtype)

    true_w = gather(weights, labels)  # [batch, num_true, dim]
    true_logits = reduce_sum(expand_dims(inputs, 1) * true_w, -1) + gather(biases, labels)
    sampled_w = gather(weights, sampled)  # [num_sampled, dim]
    sampled_logits = matmul(inputs, sampled_w, transpose_b=True) + gather(biases, sampled)
    if remove_accidental_hits:
        # [batch, num_true, 1] == [num_sampled] -> any over the true classes: [batch, sampled]
        hits = reduce_any(equal(expand_dims(labels, 2), sampled), 1)
        # -FLT_MAX as TF1, or the most negative finite float16 (-inf * 0 would be nan)
        big = min(_FLT_MAX, dtype.max)
        sampled_logits = sampled_logits + cast(hits, dtype) * (-big)
    true_logits = true_logits - log(true_count)
    sampled_logits = sampled_logits - log(sampled_count)
    out_logits = concat([true_logits, sampled_logits], 1)
    out_labels = concat([ones_like(true_logits) / float(num_true),
                         zeros_like(sampled_logits)], 1)
    return out_logits, out_labels


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1,
             sampled_values=None, remove_accidental_hits=False, partition_strategy="mod",
             name="nce_loss"):
    """Noise-contrastive estimation loss per example, ``[batch]`` (TF1 ``tf.nn.nce_loss``).

    ``weights`` ``[num_classes, dim]``, ``biases`` ``[num_classes]``, ``labels`` int
    ``[batch, num_true]``, ``inputs`` ``[batch, dim]``. ``num_sampled`` negative classes
    are drawn per run by ``log_uniform_candidate_sampler(unique=True)`` unless
    ``sampled_values`` (a sampler's three results) is given. The loss is the sigmoid
    cross-entropy of each true class (label ``1 / num_true``) and each sampled class
    (label 0), summed per example, on logits ``x w + b - log(expected count)``.
    ``remove_accidental_hits`` subtracts FLT_MAX from the logits of sampled classes
    that equal a true class of the example.

    >>> loss = gf.reduce_mean(gf.nn.nce_loss(nce_w, nce_b, labels, embed, 64, vocab))
    """
    return _sampled_loss("nce_loss", weights, biases, labels, inputs, num_sampled,
                         num_classes, num_true, sampled_values, remove_accidental_hits,
                         partition_strategy, name)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes,
                         num_true=1, sampled_values=None, remove_accidental_hits=True,
                         partition_strategy="mod", name="sampled_softmax_loss", seed=None):
    """Sampled softmax cross-entropy per example, ``[batch]`` (TF1
    ``tf.nn.sampled_softmax_loss``): the softmax cross-entropy over the logits of the
    true classes (label ``1 / num_true`` each) and of ``num_sampled`` sampled classes,
    each minus the log of its expected count. Arguments as ``nce_loss``; ``seed`` seeds
    the default sampler. Accidental hits are removed by default, as in TF1.
    """
    return _sampled_loss("sampled_softmax_loss", weights, biases, labels, inputs,
                         num_sampled, num_classes, num_true, sampled_values,
                         remove_accidental_hits, partition_strategy, name, seed)


def _sampled_loss(what, weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                  sampled_values, remove_accidental_hits, partition_strategy, name,
                  seed=None):
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"{what}: partition_strategy must be 'mod' or 'div', got "
                         f"{partition_strategy!r}")
    graph = convert_to_tensor(inputs).graph
    with graph.name_scope(name or what):
        logits, targets = _compute_sampled_logits(
            weights, biases, labels, inputs, num_sampled, num_classes, num_true,
            sampled_values, remove_accidental_hits, what, seed)
        if what == "nce_loss":
            losses = sigmoid_cross_entropy_with_logits(labels=targets, logits=logits)
            return reduce_sum(losses, 1)  # the true and the sampled losses of each example
        return softmax_cross_entropy_with_logits(labels=stop_gradient(targets),
                                                 logits=logits)
