"""What running a chain returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

BACKENDS = ("kornia", "dali", "albumentations")


@dataclass
class RunResult:
    """Output of `Chain.run`.

    `images`: NxHxWxC array in the backend's output dtype (a list of arrays when the
    chain leaves images of different sizes). `params`: per sample, per step of the chain,
    a dict with `op`, `enabled`, `applied` and the values drawn for that sample (a mixing
    step's `partner` index and `weight`). `labels`: N x classes float32 soft targets, the
    one-hot labels given to `run` (default: each image's index) mixed by the mixing steps
    (MixUp, CutMix) as the images were; one-hot as given when no step mixes.
    """

    images: Any
    params: list[list[dict[str, Any]]]
    backend: str
    device: str
    seed: int
    inputs: list[np.ndarray] = field(repr=False, default_factory=list)
    labels: np.ndarray | None = field(repr=False, default=None)
