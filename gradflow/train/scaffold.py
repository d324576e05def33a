"""TF1's ``tf.train.Scaffold``: the ops a monitored session needs (init, ready, local
init, summary) and its saver, taken from what the program gave, else from the graph's
collections (``INIT_OP``, ``READY_OP``, ``LOCAL_INIT_OP``, ``SUMMARY_OP``, ``SAVERS``),
else made and added there, so that hooks and sessions built later find the same ones.

>>> scaffold = gf.train.Scaffold(init_fn=lambda scaffold, sess: pretrained.restore(sess, path))
>>> with gf.train.MonitoredTrainingSession(scaffold=scaffold, checkpoint_dir="ckpt") as sess:
...     sess.run(train_op)
"""

from __future__ import annotations

from gradflow.graph import get_default_graph
from gradflow.lookup import tables_initializer
from gradflow.ops.state_ops import group
from gradflow.summary import merge_all
from gradflow.train.saver import Saver
from gradflow.train.session_manager import UNINITIALIZED_GLOBALS
from gradflow.variables import (
    GraphKeys,
    global_variables_initializer,
    local_variables_initializer,
)

__all__ = ["Scaffold", "get_saver_or_default"]


def _one_of_collection(key, arg_name):
    items = get_default_graph().get_collection(key)
    if len(items) > 1:
        raise RuntimeError(f'More than one item in the collection "{key}". Please indicate '
                           f"which one to use by passing it to the gf.train.Scaffold "
                           f"constructor as: gf.train.Scaffold({arg_name}=item to use)")
    return items[0] if items else None


def _first(*items):
    """The first item that is not None (tensors have no truth value)."""
    return next((item for item in items if item is not None), None)


def get_saver_or_default():
    """The saver of the graph's ``SAVERS`` collection, else a new ``Saver`` of every
    global variable (``allow_empty``), added there (TF1's default saver)."""
    saver = _one_of_collection(GraphKeys.SAVERS, "saver")
    if saver is None:
        saver = Saver(sharded=True, allow_empty=True)
        get_default_graph().add_to_collection(GraphKeys.SAVERS, saver)
    return saver


class Scaffold:
    """What a monitored session is made from (see the module docstring). ``init_fn``
    is called as ``init_fn(scaffold, session)`` after ``init_op`` when no checkpoint
    is restored. ``ready_op`` and ``ready_for_local_init_op`` default to the check
    that every global variable has a value in the session (made on the host:
    ``gradflow.train.session_manager.UNINITIALIZED_GLOBALS``)."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            base = copy_from_scaffold
            init_op = _first(init_op, base.init_op)
            init_feed_dict = _first(init_feed_dict, base._init_feed_dict)
            init_fn = _first(init_fn, base._user_init_fn)
            ready_op = _first(ready_op, base.ready_op)
            ready_for_local_init_op = _first(ready_for_local_init_op, base.ready_for_local_init_op)
            local_init_op = _first(local_init_op, base.local_init_op)
            summary_op = _first(summary_op, base.summary_op)
            saver = _first(saver, base.saver)
            local_init_feed_dict = _first(local_init_feed_dict, base.local_init_feed_dict)
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._user_init_fn = init_fn
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._local_init_feed_dict = local_init_op, local_init_feed_dict
        self._summary_op, self._saver = summary_op, saver

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The one item of ``collection_key``, else ``default_constructor()`` added there.

        >>> gf.train.Scaffold.get_or_default("init_op", gf.GraphKeys.INIT_OP, make_init)
        """
        item = _one_of_collection(collection_key, arg_name)
        if item is None:
            item = default_constructor()
            if item is not None:
                get_default_graph().add_to_collection(collection_key, item)
        return item

    @staticmethod
    def default_local_init_op():
        """The local variables' and the tables' initializers (TF1's default
        ``local_init_op``).

        >>> op = gf.train.Scaffold.default_local_init_op()
        """
        return group(local_variables_initializer(), tables_initializer())

    def finalize(self):
        """Fill in every op not given, then finalize the graph; returns ``self``.

        >>> scaffold = gf.train.Scaffold().finalize()
        """
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default("init_op", GraphKeys.INIT_OP,
                                                    global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = _first(_one_of_collection(GraphKeys.READY_OP, "ready_op"),
                                    UNINITIALIZED_GLOBALS)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _first(_one_of_collection(
                GraphKeys.READY_FOR_LOCAL_INIT_OP, "ready_for_local_init_op"),
                UNINITIALIZED_GLOBALS)
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", GraphKeys.LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", GraphKeys.SUMMARY_OP,
                                                       merge_all)
        if self._saver is None:
            self._saver = get_saver_or_default()
        get_default_graph().finalize()
        return self

    init_op = property(lambda self: self._init_op, doc="The op that initializes the model.")
    init_feed_dict = property(lambda self: self._init_feed_dict,
                              doc="The feeds of ``init_op``'s run.")
    init_fn = property(lambda self: None if self._user_init_fn is None else
                       (lambda sess: self._user_init_fn(self, sess)),
                       doc="``init_fn`` as a function of the session alone.")
    ready_op = property(lambda self: self._ready_op,
                        doc="What tells whether the model is ready.")
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op,
                                       doc="What tells whether local init may run.")
    local_init_op = property(lambda self: self._local_init_op,
                             doc="The op run in every new session.")
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict,
                                    doc="The feeds of ``local_init_op``'s run.")
    summary_op = property(lambda self: self._summary_op, doc="The merged summaries, or None.")
    saver = property(lambda self: self._saver, doc="The saver checkpoints are written with.")
