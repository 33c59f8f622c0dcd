"""Groups: steps that hold steps and choose, per sample, which of them run.

A group is a step whose `steps` are its children. `OneOf` runs one child per sample, chosen
by `weights`; `SomeOf` runs `n` children per sample, chosen uniformly without replacement and
run in their order in the group (as Albumentations' SomeOf does); `Sequential` runs all of
them. The group's own `p` gates the whole group per sample, and a chosen child still honours
its own `p`. A child that changes the size (a crop, a resize, a pad) leaves the samples that ran
it at sizes of their own, as an op that draws each sample's size does (Step.draws_sizes): the chain
runs image by image from the group until a step fixes the size. Normalize, the policies and batch
mixing cannot be inside a group.

Example:
    >>> GROUPS["OneOf"].validate_params("step 1 (OneOf)", {"weights": [1, 3]}, children=2)
    {'weights': [1.0, 3.0]}
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..errors import ChainError, show
from .params import Number, Param
from .spec import BACKEND_NAMES, OpSpec

# Groups nest, but not without end: four levels cover every real pipeline seen.
MAX_DEPTH = 4


@dataclass(frozen=True)
class Weights(Param):
    """Relative weights, one per child of a group (an empty list means equal weights).

    Example:
        >>> Weights("weights", "how often each child is chosen", ()).validate("OneOf", [1, 2])
        [1.0, 2.0]
    """

    ui: str = field(default="weights", init=False)

    def validate(self, where: str, value: Any) -> list[float]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            raise ChainError(f"{where}: parameter '{self.name}' must be a list of numbers >= 0 (one per child), "
                             f"got {show(value)}")
        out = []
        for v in value:
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) or v < 0:
                raise ChainError(f"{where}: parameter '{self.name}' must hold finite numbers >= 0, got {show(v)}")
            out.append(float(v))
        if out and sum(out) <= 0:
            raise ChainError(f"{where}: parameter '{self.name}' must have a positive sum (a child must be choosable), "
                             f"got {show(value)}")
        return out

    def random(self, rng: np.random.Generator) -> list[float]:
        return []

    def describe(self) -> str:
        return f"{self.name}: {self.doc} (one number >= 0 per child; [] for equal weights)"


@dataclass(frozen=True)
class GroupSpec(OpSpec):
    """A group's spec: its parameters and how it chooses children (`kind`).

    Groups run on every backend that runs all their children."""

    kind: str = "one"

    def __post_init__(self) -> None:  # groups have their own family, outside the op palette
        if not self.name.isidentifier():
            raise ValueError(f"group name {self.name!r} must be a Python identifier")

    @property
    def is_group(self) -> bool:
        return True

    @property
    def backends(self) -> tuple[str, ...]:
        return BACKEND_NAMES

    def validate_params(self, where: str, params: Mapping[str, Any], children: int | None = None) -> dict[str, Any]:
        """Check `params` as OpSpec does, then against the number of children."""
        out = super().validate_params(where, params)
        if children is None:
            return out
        weights = out.get("weights")
        if weights and len(weights) != children:
            raise ChainError(f"{where}: 'weights' has {len(weights)} value(s) for {children} child step(s); give one "
                             "weight per child, or [] for equal weights")
        if "n" in out and out["n"] > children:
            raise ChainError(f"{where}: n={out['n']} but the group has {children} child step(s); n must be at most "
                             "the number of children")
        return out

    def chosen_share(self, params: Mapping[str, Any], children: int) -> list[float]:
        """Each child's chance of being chosen for a sample (before its own p and the group's).

        Example:
            >>> GROUPS["SomeOf"].chosen_share({"n": 1}, 4)
            [0.25, 0.25, 0.25, 0.25]
        """
        if self.kind == "one":
            weights = params.get("weights") or [1.0] * children
            return [w / sum(weights) for w in weights]
        if self.kind == "some":
            return [min(1.0, params["n"] / children)] * children
        return [1.0] * children


ONE_OF = GroupSpec(
    name="OneOf", family="groups", kind="one",
    doc="Run one of the child steps per sample, chosen by `weights` (equal when empty); the chosen step "
        "still applies with its own p.",
    params=(Weights("weights", "how often each child is chosen, relative to the others", ()),),
)

SOME_OF = GroupSpec(
    name="SomeOf", family="groups", kind="some",
    doc="Run `n` of the child steps per sample, chosen uniformly without replacement and run in their order "
        "in the group; each still applies with its own p.",
    params=(Number("n", "how many children run per sample", 1, lo=1, hi=64, integer=True),),
)

SEQUENTIAL = GroupSpec(
    name="Sequential", family="groups", kind="all",
    doc="Run all the child steps in order, gated together by the group's p (one coin per sample).",
)

GROUPS: dict[str, GroupSpec] = {spec.name: spec for spec in (ONE_OF, SOME_OF, SEQUENTIAL)}


def changes_size(spec: OpSpec) -> bool:
    """Whether an op changes the image's size (a crop, a resize, a pad; or draws each sample's):
    in a group, it leaves the samples that run it at sizes of their own.

    Example:
        >>> from workbench.ops import get_op
        >>> changes_size(get_op("Resize")), changes_size(get_op("Rotate")), changes_size(get_op("Normalize"))
        (True, False, False)
    """
    return spec.family == "geometric" and (spec.always_applies or spec.sizes_per_sample)


def why_not_in_group(spec: OpSpec) -> str:
    """Why an op cannot be a group's child ("" when it can). Ops that change the size can: the
    samples then leave the group at sizes of their own (Step.draws_sizes).

    Example:
        >>> from workbench.ops import get_op
        >>> why_not_in_group(get_op("Resize")), bool(why_not_in_group(get_op("MixUp")))
        ('', True)
    """
    if spec.mixes_batch:
        return f"{spec.name} blends samples of one batch, so it cannot run for some samples only"
    if spec.reads_boxes:
        return (f"{spec.name} draws from each image's boxes as they stand at its step, which the chain works out "
                "for its own steps only; put it in the chain itself")
    if spec.always_applies and not changes_size(spec):
        return f"{spec.name} must apply to every sample ({spec.always_applies_why})"
    return ""
