"""TF1's ``tf.summary.tensor_summary`` and ``tf.summary.audio``, as graph ops whose value
is a serialized ``Summary`` (written as TensorFlow writes them), and
``tf.train.summary_iterator``, the events of an event file.

>>> gf.summary.tensor_summary("weights", w)          # the tensor itself, as a TensorProto
>>> gf.summary.audio("voice", waves, sample_rate=16000, max_outputs=2)
>>> for event in gf.train.summary_iterator(path): print(event.step, event.summary)
"""

from __future__ import annotations

import numbers
import struct

import numpy as np

from gradflow import dtypes
from gradflow.errors import InvalidArgumentError
from gradflow.graph import user_source_line
from gradflow.prim.registry import convert_to_tensor, register
from gradflow.prim.serialize import DATATYPES, tensor_proto
from gradflow.summary import _tbx
from gradflow.summary.summary_ops import _build, _infer, _serialize, _value_tensor, summary_tag
from gradflow.tfrecord import tf_record_iterator

__all__ = ["audio", "summary_iterator", "tensor_summary"]


def _tensor_impl(run_state, node):
    tbx = _tbx.require()
    to_host, tag = run_state.backend.host_value, summary_tag(node)
    metadata = tbx.SummaryMetadata.FromString(node.attrs["metadata"])
    dtype = node.attrs["value_dtype"]

    def run(value):
        proto = tbx.TensorProto.FromString(tensor_proto(np.asarray(to_host(value)), dtype))
        return _serialize(tbx, [tbx.Summary.Value(tag=tag, tensor=proto, metadata=metadata)])

    return run


register("TensorSummary", _tensor_impl, _infer, grad=None, kind="call", takes_strings=True)


def tensor_summary(name, tensor, summary_description=None, collections=None,
                   summary_metadata=None, family=None, display_name=None):
    """A summary of the whole of ``tensor`` (any dtype TensorProto has, strings too), as
    a ``TensorProto`` in the ``Summary`` (TF1 ``tf.summary.tensor_summary``);
    ``summary_metadata`` (a ``SummaryMetadata``), with ``summary_description`` and
    ``display_name`` set in it, goes with it. Tag, result and ``collections`` as for
    ``summary.scalar``."""
    tbx = _tbx.require()
    t = convert_to_tensor(tensor)
    if t.dtype not in DATATYPES:
        raise TypeError(f"summary.tensor_summary('{name}'): '{t.name}' is {t.dtype.name}, "
                        "which has no TensorProto form here")
    metadata = tbx.SummaryMetadata()
    if summary_metadata is not None:
        metadata.CopyFrom(summary_metadata)
    if summary_description is not None:
        metadata.summary_description = summary_description
    if display_name is not None:
        metadata.display_name = display_name
    return _build("TensorSummary", "tensor_summary", name, [t], family, collections,
                  metadata=metadata.SerializeToString(), value_dtype=t.dtype)


def wav_bytes(samples, sample_rate):
    """16-bit PCM WAV bytes of ``samples`` (``[frames, channels]`` floats in [-1, 1]):
    each scaled by 32768, rounded and clamped, as TensorFlow's audio summaries do."""
    frames, channels = samples.shape
    pcm = np.clip(np.round(samples.astype(np.float32) * np.float32(32768.0)), -32768, 32767)
    data = pcm.astype("<i2").tobytes()
    rate = int(sample_rate)
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack(
        "<IHHIIHH", 16, 1, channels, rate, rate * channels * 2, channels * 2, 16)
    return header + b"data" + struct.pack("<I", len(data)) + data


def _audio_impl(run_state, node):
    tbx = _tbx.require()
    to_numpy, tag = run_state.backend.to_numpy, summary_tag(node)
    max_outputs = node.attrs["max_outputs"]

    def run(value, rate):
        batch, rate = to_numpy(value), float(to_numpy(rate))
        if batch.ndim == 2:
            batch = batch[:, :, None]
        if batch.ndim != 3:
            raise InvalidArgumentError(f"summary.audio '{tag}': the value must be [batch, "
                                       f"frames] or [batch, frames, channels], got shape "
                                       f"{tuple(batch.shape)}")
        if rate <= 0:
            raise InvalidArgumentError(f"summary.audio '{tag}': sample_rate must be "
                                       f"positive, got {rate}")
        values = []
        for i in range(min(max_outputs, batch.shape[0])):
            clip = tbx.Summary.Audio(sample_rate=rate, num_channels=batch.shape[2],
                                     length_frames=batch.shape[1], content_type="audio/wav",
                                     encoded_audio_string=wav_bytes(batch[i], rate))
            values.append(tbx.Summary.Value(
                tag=f"{tag}/audio" if max_outputs == 1 else f"{tag}/audio/{i}", audio=clip))
        return _serialize(tbx, values)

    return run


register("AudioSummaryV2", _audio_impl, _infer, grad=None, kind="call")


def audio(name, tensor, sample_rate, max_outputs=3, collections=None, family=None):
    """A summary of up to ``max_outputs`` sounds of ``tensor`` (float32 ``[batch, frames,
    channels]`` or ``[batch, frames]``, values in [-1, 1]) at ``sample_rate`` Hz, as
    16-bit WAV files, shown in TensorBoard's audio tab (TF1 ``tf.summary.audio``). Tags
    are ``<tag>/audio/0``, ``<tag>/audio/1``..., or ``<tag>/audio`` when ``max_outputs``
    is 1."""
    source = user_source_line()
    t = _value_tensor("audio", name, tensor, source)
    if t.dtype is not dtypes.float32:
        raise TypeError(f"summary.audio('{name}'): '{t.name}' must be float32, got "
                        f"{t.dtype.name}; at {source}")
    if t.shape is not None and len(t.shape) not in (2, 3):
        raise ValueError(f"summary.audio('{name}'): '{t.name}' must be [batch, frames] or "
                         f"[batch, frames, channels], got shape {tuple(t.shape)}; at {source}")
    if isinstance(max_outputs, bool) or int(max_outputs) != max_outputs or max_outputs < 1:
        raise ValueError(f"summary.audio('{name}'): max_outputs must be a positive integer, "
                         f"got {max_outputs!r}")
    if isinstance(sample_rate, numbers.Real):
        sample_rate = float(sample_rate)
    rate = convert_to_tensor(sample_rate, dtype=dtypes.float32)
    return _build("AudioSummaryV2", "audio", name, [t, rate], family, collections,
                  max_outputs=int(max_outputs))


def summary_iterator(path):
    """The ``Event`` protobufs of the event file ``path``, in order (TF1
    ``tf.train.summary_iterator``), as ``FileWriter`` (or TensorFlow) wrote them."""
    tbx = _tbx.require()
    for record in tf_record_iterator(path):
        yield tbx.Event.FromString(record)
