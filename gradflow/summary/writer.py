"""``FileWriter``: summaries and the graph into TensorBoard event files.

Records are written by tensorboardX's ``EventsWriter`` (the event-file format,
CRCs and the ``brain.Event:2`` header are its work). This module only adds
TF1's behaviour around it: a bounded queue drained by a background thread, so
that ``add_summary`` returns at once, a flush every ``flush_secs``, a ``flush()``
that returns once every queued event is on disk, and ``add_graph`` for
gradflow graphs.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
import warnings
import weakref

import numpy as np

from gradflow.graph import Graph, get_default_graph
from gradflow.summary import _tbx
from gradflow.summary.graph_def import graph_def as _graph_def

_file_ids = itertools.count()
_STOP = object()


class _Worker(threading.Thread):
    """Writes the events of ``events_queue`` and flushes every ``flush_secs``."""

    def __init__(self, events_queue, events, flush_secs):
        super().__init__(name="gradflow-summary-writer", daemon=True)
        self.queue = events_queue
        self.events = events
        self.flush_secs = flush_secs
        self.error = None  # the first write that failed, raised by flush() and close()

    def run(self):
        next_flush = time.monotonic() + self.flush_secs
        pending = False
        while True:
            try:
                item = self.queue.get(timeout=max(0.0, next_flush - time.monotonic()))
            except queue.Empty:
                item = None
            if item is _STOP:
                self.queue.task_done()
                return
            if item is not None:
                try:
                    if self.error is None:
                        self.events.write_event(item)
                        pending = True
                except Exception as err:  # noqa: BLE001 - kept for the caller of flush()
                    self.error = err
                finally:
                    self.queue.task_done()
            if time.monotonic() >= next_flush:
                if pending and self.error is None:
                    try:
                        self.events.flush()
                    except Exception as err:  # noqa: BLE001
                        self.error = err
                    pending = False
                next_flush = time.monotonic() + self.flush_secs


class FileWriter:
    """Writes summaries, the graph and other events to an event file in ``logdir``
    for TensorBoard (TF1 ``tf.summary.FileWriter``).

    ``graph`` (a gradflow Graph, e.g. ``sess.graph``) is written at once with
    ``add_graph``; ``graph_def`` may give a GraphDef protobuf instead. Events are
    queued and written by a background thread; ``add_*`` block while ``max_queue``
    events wait. The file is flushed every ``flush_secs`` seconds, by ``flush()``
    and by ``close()``; an open writer is also closed when it is garbage collected or
    the program exits. Each
    writer (and each ``reopen``) writes a new file,
    ``events.out.tfevents.<time>.<host>.<pid>.<n, six digits><filename_suffix>``. Use it as a
    context manager to close it at the end of a block.

    >>> with gf.summary.FileWriter("logs/run1", sess.graph) as writer:
    ...     writer.add_summary(sess.run(merged, feed), global_step=step)
    """

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None):
        self._tbx = _tbx.require()
        if logdir is None or str(logdir) == "":
            raise ValueError("FileWriter: logdir must name a folder, got "
                             f"{logdir!r}")
        self._logdir = str(logdir)
        if os.path.exists(self._logdir) and not os.path.isdir(self._logdir):
            raise NotADirectoryError(f"FileWriter: logdir {self._logdir!r} exists and is not "
                                     "a folder")
        self._max_queue = max(1, int(max_queue))
        self._flush_secs = float(flush_secs)
        self._suffix = "" if filename_suffix is None else str(filename_suffix)
        self._seen_tags: set = set()
        self._lock = threading.Lock()
        self._closed = True
        self._warned = False
        self._open()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def _open(self):
        os.makedirs(self._logdir, exist_ok=True)
        # six digits: TensorBoard reads a folder's files in name order, and ".10" would
        # sort before ".9" (a reopened writer's file read before the first one)
        suffix = f".{os.getpid()}.{next(_file_ids):06d}{self._suffix}"
        self._events = self._tbx.EventsWriter(os.path.join(self._logdir, "events"), suffix)
        self._queue = queue.Queue(maxsize=self._max_queue)
        self._worker = _Worker(self._queue, self._events, self._flush_secs)
        self._worker.start()
        self._closed = False
        # closes the file when close() runs, when the writer is garbage collected, or
        # at exit, whichever comes first; it holds no reference to the writer itself
        self._finish = weakref.finalize(self, _finish, self._queue, self._worker, self._events)

    # -- TF1's API --------------------------------------------------------------------
    def get_logdir(self) -> str:
        """The folder this writer writes into."""
        return self._logdir

    @property
    def path(self) -> str:
        """The path of the event file being written."""
        return self._events._file_name

    def add_event(self, event):
        """Queue the ``Event`` protobuf ``event`` for the file."""
        if self._closed:
            if not self._warned:
                warnings.warn(f"FileWriter for {self._logdir!r} is closed: events added now "
                              "are dropped (as in TF1); call reopen() to write again",
                              RuntimeWarning, stacklevel=3)
                self._warned = True
            return
        if not isinstance(event, self._tbx.Event):
            event = self._tbx.Event.FromString(_serialized(event, "add_event", "an Event"))
        if not event.wall_time:
            event.wall_time = time.time()
        self._queue.put(event)

    def add_summary(self, summary, global_step=None):
        """Add a summary at ``global_step``: the ``bytes`` that ``Session.run`` returns
        for a summary op, or a ``Summary`` protobuf (``gf.summary.Summary(...)``).

        As in TF1, the plugin metadata of a tag is written with its first value only.
        """
        tbx = self._tbx
        if isinstance(summary, tbx.Summary):
            summary_proto = tbx.Summary()
            summary_proto.CopyFrom(summary)
        else:
            data = _serialized(summary, "add_summary",
                               "a summary (the bytes Session.run returns for a summary op, "
                               "or a Summary protobuf)")
            try:
                summary_proto = tbx.Summary.FromString(data)
            except Exception as err:  # noqa: BLE001 - protobuf's DecodeError and kin
                raise ValueError(f"add_summary: the {len(data)} bytes given are not a "
                                 f"serialized Summary protobuf ({err})") from None
        with self._lock:
            for value in summary_proto.value:
                if value.HasField("metadata") and value.tag in self._seen_tags:
                    value.ClearField("metadata")
                self._seen_tags.add(value.tag)
        self.add_event(tbx.Event(summary=summary_proto, step=_step(global_step)))

    def add_graph(self, graph, global_step=None, graph_def=None):
        """Add the graph for TensorBoard's graph tab: a gradflow ``Graph`` (each node
        with its name, op type, inputs, dtype and static shape), or ``graph_def``,
        a ``GraphDef`` protobuf."""
        tbx = self._tbx
        if graph is not None and graph_def is not None:
            raise ValueError("add_graph: give graph or graph_def, not both")
        if graph_def is None:
            if isinstance(graph, Graph):
                graph_def = _graph_def(graph)
            elif hasattr(graph, "SerializeToString") and hasattr(graph, "node"):
                graph_def = graph
            else:
                raise TypeError(f"add_graph: expected a gf.Graph (e.g. sess.graph) or a "
                                f"GraphDef protobuf, got {type(graph).__name__}")
        self.add_event(tbx.Event(graph_def=graph_def.SerializeToString(),
                                 step=_step(global_step)))

    def add_run_metadata(self, run_metadata, tag, global_step=None):
        """Add a traced run's ``RunMetadata`` (``Session.run(options=RunOptions(
        trace_level=FULL_TRACE), run_metadata=...)``) under ``tag``: TensorBoard's
        graph tab then shows each op's compute time for that run (TF1's)."""
        if not hasattr(run_metadata, "SerializeToString"):
            raise TypeError(f"add_run_metadata: expected a RunMetadata, got "
                            f"{type(run_metadata).__name__}")
        tagged = self._tbx.TaggedRunMetadata(tag=str(tag),
                                             run_metadata=run_metadata.SerializeToString())
        self.add_event(self._tbx.Event(tagged_run_metadata=tagged, step=_step(global_step)))

    def add_session_log(self, session_log, global_step=None):
        """Add a ``SessionLog`` protobuf (TF1), e.g. ``SessionLog(status=SessionLog.START)``."""
        tbx = self._tbx
        if not isinstance(session_log, tbx.SessionLog):
            session_log = tbx.SessionLog.FromString(
                _serialized(session_log, "add_session_log", "a SessionLog"))
        self.add_event(tbx.Event(session_log=session_log, step=_step(global_step)))

    def flush(self):
        """Write every event added so far to disk."""
        if self._closed:
            return
        self._queue.join()
        self._raise_worker_error()
        self._events.flush()

    def close(self):
        """Flush and close the file; ``reopen()`` starts a new one."""
        if self._closed:
            return
        self._closed = True
        self._finish()
        self._raise_worker_error()

    def reopen(self):
        """After ``close()``: write on, into a new event file in the same folder."""
        if self._closed:
            self._warned = False
            self._open()

    def _raise_worker_error(self):
        if self._worker.error is not None:
            err, self._worker.error = self._worker.error, None
            raise OSError(f"FileWriter could not write {self.path!r}: {err}") from err

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<gf.summary.FileWriter {self._logdir!r} ({state})>"


def _finish(events_queue, worker, events):
    """Write what is queued, stop the writer thread and close the file."""
    events_queue.put(_STOP)
    worker.join()
    events.close()


def _step(global_step):
    if global_step is None:
        return None
    try:
        return int(np.asarray(global_step).item())
    except (TypeError, ValueError):
        raise TypeError(f"global_step must be an integer (a Python int, a NumPy integer or "
                        f"a fetched global step), got {global_step!r}") from None


def _serialized(value, method, what) -> bytes:
    """The bytes of ``value``: bytes as they are, a protobuf serialized."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and \
            isinstance(value.item(), (bytes, bytearray)):
        return bytes(value.item())
    if hasattr(value, "SerializeToString"):
        return value.SerializeToString()
    raise TypeError(f"{method}: expected {what}, got {type(value).__name__}")


class FileWriterCache:
    """One ``FileWriter`` per folder, shared (TF1 ``tf.summary.FileWriterCache``)."""

    _writers: dict = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir) -> FileWriter:
        """The writer of ``logdir``, made (with the default graph) the first time."""
        key = os.path.abspath(str(logdir))
        with FileWriterCache._lock:
            writer = FileWriterCache._writers.get(key)
            if writer is None:
                writer = FileWriterCache._writers[key] = FileWriter(
                    logdir, graph=get_default_graph())
            return writer

    @staticmethod
    def clear() -> None:
        """Close every cached writer and forget them."""
        with FileWriterCache._lock:
            writers = list(FileWriterCache._writers.values())
            FileWriterCache._writers.clear()
        for writer in writers:
            writer.close()
