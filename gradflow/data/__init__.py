"""Data sets and batching: MNIST (IDX files) and aligned mini-batches."""

from gradflow.data import mnist
from gradflow.data.batching import batches

__all__ = ["batches", "mnist"]
