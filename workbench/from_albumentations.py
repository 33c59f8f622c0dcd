"""Turn an existing Albumentations pipeline into a chain: each transform becomes the op whose
Albumentations lowering can express it (the lowering's `from_transform`, its inverse); what
no op can express is listed, with the reason, rather than dropped silently.

Example:
    >>> import albumentations as A
    >>> import workbench as wb
    >>> chain = wb.Chain.from_albumentations(A.Compose([A.HorizontalFlip(p=0.5)], seed=3))
    >>> [(s.op, s.p) for s in chain.steps], chain.seed, chain.unmapped
    ([('HorizontalFlip', 0.5)], 3, [])
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any

from .errors import ChainError, WorkbenchError

# Transforms that only change the container, not the pixels: every export already delivers
# tensors in its engine's layout.
_LAYOUT_ONLY = {"ToTensorV2": "layout conversion to a CHW tensor; every export delivers tensors already"}
_CONTAINERS = ("Compose", "Sequential")


@dataclass(frozen=True)
class Unmapped:
    """A transform the import could not turn into a step: where it was, what, and why."""

    position: str
    transform: str
    reason: str

    def __str__(self) -> str:
        return f"{self.position} {self.transform}: {self.reason}"


def chain_from_albumentations(pipeline: Any, seed: int | None = None, strict: bool = False):
    """The chain for an Albumentations `Compose` (or a list of transforms), see `Chain.from_albumentations`."""
    from .chain import Chain, Step

    os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # no PyPI version check on import
    try:
        import albumentations as A
    except ImportError:
        raise WorkbenchError("importing an Albumentations pipeline needs Albumentations: "
                             "pip install albumentations==2.0.8") from None
    if isinstance(pipeline, (list, tuple)):
        transforms, pipeline_seed = list(pipeline), None
    elif isinstance(pipeline, A.BaseCompose) or type(pipeline).__name__ in _CONTAINERS:
        transforms, pipeline_seed = list(pipeline.transforms), getattr(pipeline, "seed", None)
    elif isinstance(pipeline, A.BasicTransform):
        transforms, pipeline_seed = [pipeline], None
    else:
        raise WorkbenchError(f"from_albumentations takes an albumentations Compose, a transform or a list of "
                             f"transforms; got {type(pipeline).__name__}")
    if seed is None:
        seed = pipeline_seed if isinstance(pipeline_seed, int) and pipeline_seed >= 0 else 0
    chain = Chain(seed=seed)
    unmapped: list[Unmapped] = []
    for position, transform in _flatten(transforms, "", unmapped):
        name = type(transform).__name__
        if name in _LAYOUT_ONLY:
            continue
        try:
            op, params = _map(transform)
            chain.steps.append(Step.create(op, p=float(transform.p), **params))
        except (ValueError, ChainError) as exc:
            unmapped.append(Unmapped(position, _describe(transform), str(exc)))
    chain.unmapped = unmapped
    if unmapped:
        listing = "\n".join(f"  {u}" for u in unmapped)
        if strict:
            raise WorkbenchError(f"{len(unmapped)} transform(s) could not be mapped:\n{listing}")
        warnings.warn(f"from_albumentations: {len(unmapped)} transform(s) left out (see chain.unmapped):\n{listing}",
                      stacklevel=3)
    return chain


def _flatten(transforms, prefix: str, unmapped: list[Unmapped]):
    """(position, transform) for every transform, nested Sequential/Compose with p = 1 opened up."""
    import albumentations as A

    for k, transform in enumerate(transforms, start=1):
        position = f"{prefix}{k}"
        name = type(transform).__name__
        # Containers only: some transforms (ColorJitter) keep a list of functions in `.transforms`.
        if isinstance(transform, A.BaseCompose):
            if name in _CONTAINERS and float(getattr(transform, "p", 1.0)) == 1.0:
                yield from _flatten(list(transform.transforms), position + ".", unmapped)
            else:
                unmapped.append(Unmapped(position, _describe(transform), _container_reason(transform)))
            continue
        yield position, transform


def _container_reason(transform) -> str:
    name = type(transform).__name__
    if name in ("OneOf", "SomeOf", "OneOrOther", "SelectiveChannelTransform", "RandomOrder"):
        return (f"{name} picks among its transforms per image; a chain applies its steps in order. Pick the "
                "transforms you want as steps, or use a policy step (RandAugment, TrivialAugment) for random choice")
    return f"a {name} applied with p={getattr(transform, 'p', '?')} as a whole has no chain equivalent"


def _map(transform) -> tuple[str, dict]:
    """(op name, params) of the first op whose lowering can express `transform`."""
    from .ops import REGISTRY

    name = type(transform).__name__
    candidates = [spec for spec in REGISTRY.values()
                  if spec.albumentations is not None and spec.albumentations.transform == name
                  and spec.albumentations.from_transform is not None]
    if not candidates:
        raise ValueError(f"no workbench op runs A.{name}; see workbench.list_ops() and docs/ops.md")
    reasons = []
    for spec in candidates:
        try:
            params = spec.albumentations.from_transform(transform)
        except ValueError as exc:
            reasons.append(f"{spec.name}: {exc}")
            continue
        if params is not None:
            return spec.name, params
    raise ValueError("; ".join(reasons) or f"its settings match no op ({', '.join(s.name for s in candidates)})")


def _describe(transform) -> str:
    """A.Name(p=...) (the full repr of a transform runs over many lines)."""
    return f"A.{type(transform).__name__}(p={getattr(transform, 'p', '?')})"
