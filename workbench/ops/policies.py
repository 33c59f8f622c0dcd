"""Augmentation policies (RandAugment, TrivialAugment, AutoAugment) as chain steps."""

OPS = ()
