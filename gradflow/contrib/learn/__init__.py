"""TF1's ``tf.contrib.learn``, for the part text programs use: ``preprocessing``
(``VocabularyProcessor``, ``CategoricalVocabulary``, ``tokenizer``)."""

from gradflow.contrib.learn import preprocessing

__all__ = ["preprocessing"]
