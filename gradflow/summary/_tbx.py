"""The one place that imports tensorboardX, on first use.

tensorboardX supplies the protobuf classes (``Summary``, ``Event``, ``GraphDef``...)
and the event-file writer; gradflow only imports it when a summary op is built
or a ``FileWriter`` is made, so ``import gradflow`` never needs it.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

_loaded: SimpleNamespace | None = None

INSTALL_HINT = "pip install tensorboardX crc32c"


def require() -> SimpleNamespace:
    """The tensorboardX classes gradflow uses; ImportError saying what to install."""
    global _loaded
    if _loaded is not None:
        return _loaded
    try:
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto import (
            attr_value_pb2,
            event_pb2,
            graph_pb2,
            node_def_pb2,
            plugin_text_pb2,
            summary_pb2,
            tensor_pb2,
            tensor_shape_pb2,
            versions_pb2,
        )
    except ImportError as err:
        raise ImportError(
            "gradflow.summary writes TensorBoard files with the tensorboardX package, which "
            f"cannot be imported here ({err}); install it with: {INSTALL_HINT}") from err
    from tensorboardX import crc32c

    if getattr(crc32c, "_crc32c_native", True) is None:
        logging.getLogger("gradflow.summary").warning(
            "the crc32c package is not installed: event files' checksums are computed in "
            "Python, a few milliseconds per summary written; install it with: %s",
            INSTALL_HINT)
    _loaded = SimpleNamespace(
        Summary=summary_pb2.Summary,
        SummaryMetadata=summary_pb2.SummaryMetadata,
        SummaryDescription=summary_pb2.SummaryDescription,
        HistogramProto=summary_pb2.HistogramProto,
        Event=event_pb2.Event,
        SessionLog=event_pb2.SessionLog,
        TaggedRunMetadata=event_pb2.TaggedRunMetadata,
        GraphDef=graph_pb2.GraphDef,
        NodeDef=node_def_pb2.NodeDef,
        AttrValue=attr_value_pb2.AttrValue,
        VersionDef=versions_pb2.VersionDef,
        TensorProto=tensor_pb2.TensorProto,
        TensorShapeProto=tensor_shape_pb2.TensorShapeProto,
        TextPluginData=plugin_text_pb2.TextPluginData,
        EventsWriter=EventsWriter,
    )
    return _loaded


def reset() -> None:
    """Forget the loaded module (tests use it to check the missing-package error)."""
    global _loaded
    _loaded = None
