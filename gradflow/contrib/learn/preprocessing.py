"""TF1's ``tf.contrib.learn.preprocessing``: documents to fixed-length rows of word ids.

>>> vp = VocabularyProcessor(4)
>>> [row.tolist() for row in vp.fit_transform(["a cat sat", "a dog"])]
[[1, 2, 3, 0], [1, 4, 0, 0]]

Ids are given in the order words are first seen (0 is the unknown word and the
padding); ``min_frequency`` renumbers by descending count, ties alphabetically, as
TF1 does. ``save``/``restore`` write and read a JSON file (TF1 pickles the
processor; gradflow does not unpickle files, so a vocabulary TF1 saved is not read).
"""

from __future__ import annotations

import json
import re

import numpy as np

from gradflow import gfile

__all__ = ["CategoricalVocabulary", "VocabularyProcessor", "tokenizer"]

# TF1's word pattern: runs of capitals (acronyms), a capitalised word before
# another capital, or a run of word characters, apostrophes and hyphens.
_WORDS = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z][a-z]+(?=[A-Z])|['\w\-]+", re.UNICODE)


def tokenizer(iterator):
    """Yield the list of words of each document of ``iterator`` (TF1's default tokenizer)."""
    for document in iterator:
        yield _WORDS.findall(document)


class CategoricalVocabulary:
    """Ids of categories, 0 for the unknown one; grows until ``freeze()``."""

    def __init__(self, unknown_token="<UNK>", support_reverse=True):
        self._unknown_token = unknown_token
        self._mapping = {unknown_token: 0}
        self._support_reverse = support_reverse
        self._reverse_mapping = [unknown_token] if support_reverse else None
        self._freq = {}
        self._freeze = False

    def __len__(self):
        return len(self._mapping)

    def freeze(self, freeze=True):
        """Stop (or, with ``False``, resume) adding unseen categories."""
        self._freeze = freeze

    def get(self, category):
        """The id of ``category``: a new one while not frozen, else 0 when unseen."""
        if category not in self._mapping:
            if self._freeze:
                return 0
            self._mapping[category] = len(self._mapping)
            if self._support_reverse:
                self._reverse_mapping.append(category)
        return self._mapping[category]

    def add(self, category, count=1):
        """Count ``count`` more sightings of ``category`` (given an id if new)."""
        if self.get(category) <= 0:
            return
        self._freq[category] = self._freq.get(category, 0) + count

    def trim(self, min_frequency, max_frequency=-1):
        """Keep the categories seen more than ``min_frequency`` times (and fewer than
        ``max_frequency`` when positive), renumbered by descending count."""
        ranked = sorted(self._freq.items(), key=lambda kv: (-kv[1], str(kv[0])))
        kept = [(c, n) for c, n in ranked
                if n > min_frequency and not (max_frequency > 0 and n >= max_frequency)]
        self._mapping = {self._unknown_token: 0}
        self._reverse_mapping = [self._unknown_token] if self._support_reverse else None
        for category, _ in kept:
            self._mapping[category] = len(self._mapping)
            if self._support_reverse:
                self._reverse_mapping.append(category)
        self._freq = dict(kept)

    def reverse(self, class_id):
        """The category of id ``class_id``."""
        if not self._support_reverse:
            raise ValueError("This vocabulary was built with support_reverse=False")
        return self._reverse_mapping[class_id]


class VocabularyProcessor:
    """Maps each document to ``max_document_length`` word ids, padded with 0."""

    def __init__(self, max_document_length, min_frequency=0, vocabulary=None,
                 tokenizer_fn=None):
        self.max_document_length = int(max_document_length)
        self.min_frequency = min_frequency
        self.vocabulary_ = vocabulary if vocabulary is not None else CategoricalVocabulary()
        self._tokenizer = tokenizer_fn if tokenizer_fn is not None else tokenizer

    def fit(self, raw_documents, unused_y=None):
        """Learn the vocabulary of ``raw_documents`` (then frozen); returns self."""
        for words in self._tokenizer(raw_documents):
            for word in words:
                self.vocabulary_.add(word)
        if self.min_frequency > 0:
            self.vocabulary_.trim(self.min_frequency)
        self.vocabulary_.freeze()
        return self

    def fit_transform(self, raw_documents, unused_y=None):
        """``fit`` then ``transform``: an iterator of int64 rows."""
        documents = list(raw_documents)
        self.fit(documents)
        return self.transform(documents)

    def transform(self, raw_documents):
        """Yield, per document, its first ``max_document_length`` word ids (int64)."""
        for words in self._tokenizer(raw_documents):
            row = np.zeros(self.max_document_length, np.int64)
            for i, word in enumerate(words[:self.max_document_length]):
                row[i] = self.vocabulary_.get(word)
            yield row

    def reverse(self, documents):
        """Yield each row of ids back as words joined by spaces."""
        for row in documents:
            yield " ".join(self.vocabulary_.reverse(int(i)) for i in row)

    def save(self, filename):
        """Write the processor (length, min_frequency, vocabulary) to ``filename`` as JSON."""
        vocab = self.vocabulary_
        state = {"max_document_length": self.max_document_length,
                 "min_frequency": self.min_frequency,
                 "unknown_token": vocab._unknown_token,
                 "support_reverse": vocab._support_reverse,
                 "frozen": vocab._freeze,
                 "mapping": sorted(vocab._mapping.items(), key=lambda kv: kv[1]),
                 "freq": list(vocab._freq.items())}
        with gfile.GFile(filename, "w") as f:
            f.write(json.dumps(state))

    @classmethod
    def restore(cls, filename):
        """The processor ``save`` wrote to ``filename``."""
        with gfile.GFile(filename, "r") as f:
            state = json.loads(f.read())
        vocab = CategoricalVocabulary(state["unknown_token"], state["support_reverse"])
        vocab._mapping = {c: i for c, i in state["mapping"]}
        if vocab._support_reverse:
            vocab._reverse_mapping = [c for c, _ in state["mapping"]]
        vocab._freq = {c: n for c, n in state["freq"]}
        vocab._freeze = state["frozen"]
        return cls(state["max_document_length"], state["min_frequency"], vocab)
