"""Example chains, shared by the docs, notebooks, tests and benchmarks.

Example:
    >>> from workbench.examples import example_chain
    >>> [s.op for s in example_chain().steps][:2]
    ['RandomResizedCrop', 'HorizontalFlip']
"""
from __future__ import annotations

import copy

from .chain import Chain

# The chain of DESIGN.md's contract: a typical ImageNet training chain.
IMAGENET_TRAIN = {"seed": 7, "steps": [
    {"op": "RandomResizedCrop", "params": {"size": [224, 224], "scale": [0.5, 1.0]}},
    {"op": "HorizontalFlip", "p": 0.5},
    {"op": "Rotate", "p": 1.0, "params": {"degrees": [-20, 20]}},
    {"op": "Brightness", "params": {"factor": [0.7, 1.3]}},
    {"op": "Normalize", "params": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}]}


def example_chain() -> Chain:
    """A fresh copy of the ImageNet-style example chain (seed 7)."""
    return Chain.from_dict(copy.deepcopy(IMAGENET_TRAIN))
