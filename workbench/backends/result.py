"""What running a chain returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..targets import Targets

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

    Targets given to `run` come back moved as the pixels were (None for a kind not given):
    `masks` (a list of H x W label maps, or an N x H x W stack when they were given stacked and
    the outputs share a size), `boxes` (per image (K, 4) float32 [x1, y1, x2, y2], clipped to
    the image; boxes below the chain's min_visibility dropped), `box_labels` (per image, those
    of the boxes kept; each box's index in its image when none were given), `keypoints` (per
    image (K, 2) float32 [x, y], every keypoint kept) and `keypoints_visible` (per image (K,)
    bool: False for a keypoint that left the image at some step, or was not visible given).
    """

    images: Any
    params: list[list[dict[str, Any]]]
    backend: str
    device: str
    seed: int
    inputs: list[np.ndarray] = field(repr=False, default_factory=list)
    labels: np.ndarray | None = field(repr=False, default=None)
    targets: Targets | None = field(repr=False, default=None)

    @property
    def masks(self):
        t = self.targets
        if t is None or t.masks is None:
            return None
        if t.stacked and len({m.shape for m in t.masks}) == 1:
            return np.stack(t.masks)
        return t.masks

    # The other kinds come back as moved, a list per image (None when not given).
    boxes = property(lambda self: _kind(self, "boxes"))
    box_labels = property(lambda self: _kind(self, "box_labels"))
    keypoints = property(lambda self: _kind(self, "keypoints"))
    keypoints_visible = property(lambda self: _kind(self, "keypoints_visible"))


def _params(result: RunResult):
    if callable(result._params):  # (rows deferred by the backend: built once, when first read)
        result._params = result._params()
    return result._params


def _set_params(result: RunResult, value) -> None:
    result._params = value


# `params` may be given as a call that makes the rows (backends/records.py's deferred_params): read, it is
# the rows. (Set on the class after the dataclass made __init__, which then assigns through it.)
RunResult.params = property(_params, _set_params)


def _kind(result: RunResult, kind: str):
    return None if result.targets is None else getattr(result.targets, kind)
