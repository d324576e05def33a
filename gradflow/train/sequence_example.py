"""``tf.train.SequenceExample`` and its parts: a record of per-example ``context``
features (a ``Features``) and ``feature_lists``, a map from names to ``FeatureList``
(a list of ``Feature``, one per time step). Written and read in TensorFlow's wire format
(``SequenceExample {Features context = 1; FeatureLists feature_lists = 2}``,
``FeatureLists {map<string, FeatureList> feature_list = 1}``,
``FeatureList {repeated Feature feature = 1}``), with protobuf's Python API:

>>> seq = gf.train.SequenceExample()
>>> seq.context.feature["length"].int64_list.value.append(2)
>>> tokens = seq.feature_lists.feature_list["tokens"]
>>> tokens.feature.add().int64_list.value.append(7)
>>> gf.train.SequenceExample.FromString(seq.SerializeToString()) == seq
True
"""

from __future__ import annotations

import collections

from gradflow import protowire
from gradflow.errors import DataLossError
from gradflow.example import Feature, Features, _Message

__all__ = ["FeatureList", "FeatureLists", "SequenceExample"]


class _RepeatedFeatures(list):
    """A repeated ``Feature`` field: a list with protobuf's ``add``."""

    def add(self, **fields):
        """Append a new ``Feature`` (made from ``fields``) and return it."""
        feature = Feature(**fields)
        self.append(feature)
        return feature


class FeatureList(_Message):
    """A list of ``Feature`` (``feature``), one per step of a sequence."""

    def __init__(self, feature=()):
        self.feature = _RepeatedFeatures(feature)

    def _write(self, out):
        for feature in self.feature:
            protowire.write_bytes_field(out, 1, feature.SerializeToString())

    def _read(self, data):
        self.feature = _RepeatedFeatures(Feature.FromString(v) for n, kind, v in
                                         protowire.fields(data, DataLossError)
                                         if n == 1 and kind == 2)

    def __repr__(self):
        return f"FeatureList(feature={list(self.feature)!r})"


class FeatureLists(_Message):
    """A map from names to ``FeatureList`` (``feature_list``); a name looked up that is
    not there yet is added, as in protobuf."""

    def __init__(self, feature_list=None):
        self.feature_list = collections.defaultdict(FeatureList, feature_list or {})

    def _write(self, out):
        for name, value in self.feature_list.items():
            entry = bytearray()
            protowire.write_bytes_field(entry, 1, name.encode())
            protowire.write_bytes_field(entry, 2, value.SerializeToString())
            protowire.write_bytes_field(out, 1, bytes(entry))

    def _read(self, data):
        for n, kind, entry in protowire.fields(data, DataLossError):
            if n != 1 or kind != 2:
                continue
            name, value = "", FeatureList()
            for m, kind_, v in protowire.fields(entry, DataLossError):
                if m == 1 and kind_ == 2:
                    name = bytes(v).decode("utf-8", "replace")
                elif m == 2 and kind_ == 2:
                    value = FeatureList.FromString(v)
            self.feature_list[name] = value

    def __repr__(self):
        return f"FeatureLists(feature_list={dict(self.feature_list)!r})"


class SequenceExample(_Message):
    """A record of ``context`` features and per-step ``feature_lists``."""

    def __init__(self, context=None, feature_lists=None):
        self.context = context if context is not None else Features()
        self.feature_lists = feature_lists if feature_lists is not None else FeatureLists()

    def _write(self, out):
        if self.context.feature:
            protowire.write_bytes_field(out, 1, self.context.SerializeToString())
        if self.feature_lists.feature_list:
            protowire.write_bytes_field(out, 2, self.feature_lists.SerializeToString())

    def _read(self, data):
        for n, kind, v in protowire.fields(data, DataLossError):
            if n == 1 and kind == 2:
                self.context = Features.FromString(v)
            elif n == 2 and kind == 2:
                self.feature_lists = FeatureLists.FromString(v)

    def __repr__(self):
        return (f"SequenceExample(context={self.context!r}, "
                f"feature_lists={self.feature_lists!r})")
