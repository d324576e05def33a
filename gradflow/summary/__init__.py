"""TF1's ``tf.summary``: summaries as graph ops, and TensorBoard event files.

::

    loss_summary = gf.summary.scalar("loss", loss)
    gf.summary.histogram("weights", w)
    merged = gf.summary.merge_all()
    with gf.summary.FileWriter("logs/run1", sess.graph) as writer:
        summary, _ = sess.run([merged, train_op], feed)
        writer.add_summary(summary, global_step=step)

then ``tensorboard --logdir logs``. A summary op's value, as ``Session.run``
returns it, is a serialized ``Summary`` protobuf (``bytes``) on every backend.
Summary ops join ``GraphKeys.SUMMARIES`` unless ``collections`` says otherwise,
and their tags follow the name scopes. The protobufs and the event files come
from tensorboardX, imported only when a summary op or a ``FileWriter`` is made
(``pip install tensorboardX crc32c``). ``Summary``, ``Event`` and
``SessionLog`` (and ``HistogramProto``, ``SummaryMetadata``, ``TaggedRunMetadata``) are
its protobuf classes, for summaries written by hand:
``writer.add_summary(gf.summary.Summary(value=[gf.summary.Summary.Value(
tag="acc", simple_value=0.98)]), step)``.
"""

from gradflow.summary.more_summaries import audio, tensor_summary
from gradflow.summary.summary_ops import histogram, image, merge, merge_all, scalar, text
from gradflow.summary.writer import FileWriter, FileWriterCache

__all__ = ["scalar", "histogram", "image", "text", "merge", "merge_all", "FileWriter",
           "FileWriterCache", "Summary", "Event", "SessionLog", "SummaryDescription",
           "audio", "tensor_summary", "HistogramProto", "SummaryMetadata", "TaggedRunMetadata"]

_PROTOS = ("Summary", "Event", "SessionLog", "SummaryDescription", "HistogramProto",
           "SummaryMetadata", "TaggedRunMetadata")


def __getattr__(name):
    # the protobuf classes come from tensorboardX: import it only when one is asked for
    if name in _PROTOS:
        from gradflow.summary import _tbx

        return getattr(_tbx.require(), name)
    raise AttributeError(f"module 'gradflow.summary' has no attribute {name!r}")
