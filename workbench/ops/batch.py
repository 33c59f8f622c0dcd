"""Batch mixing ops (MixUp, CutMix): each output sample blends two samples of the batch, and
their labels with the same weights."""

OPS = ()
