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
from typing import Any

from .errors import ChainError, WorkbenchError
from .import_report import Unmapped, finish_import, leaf_positions
from .model import ChainModel, Step
from .ops import REGISTRY, why_not_in_group

# Transforms that only change the container, not the pixels: every export already delivers
# tensors in its engine's layout.
_LAYOUT_ONLY = {"ToTensorV2": "layout conversion to a CHW tensor; every export delivers tensors already"}
# Containers whose children run in order: opened up into the chain when their p is 1.
_CONTAINERS = ("Compose", "Sequential")


def chain_from_albumentations(pipeline: Any, seed: int | None = None, strict: bool = False,
                              chain_type: type[ChainModel] = ChainModel) -> ChainModel:
    """The chain for an Albumentations `Compose` (or a list of transforms), see `Chain.from_albumentations`."""
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
    unmapped: list[Unmapped] = []
    chain = chain_type(seed=seed)
    chain.steps = _steps(transforms, "", unmapped, A)
    return finish_import(chain, unmapped, "from_albumentations", strict)


def leaf_transforms(pipeline: Any) -> list[str]:
    """Positions ("1", "8.2", ...) of the transforms in `pipeline` that an import maps one by
    one, numbered as `chain.unmapped` numbers them (containers opened up, layout-only
    transforms left out): what the import coverage counts.

    Example:
        >>> import albumentations as A
        >>> leaf_transforms(A.Compose([A.OneOf([A.Blur(), A.MedianBlur()]), A.HorizontalFlip()]))
        ['1.1', '1.2', '2']
    """
    import albumentations as A

    top = list(pipeline.transforms) if isinstance(pipeline, A.BaseCompose) else list(pipeline)
    return leaf_positions(top, lambda t: list(t.transforms) if isinstance(t, A.BaseCompose) else None,
                          lambda t: type(t).__name__ in _LAYOUT_ONLY)


def _steps(transforms, prefix: str, unmapped: list[Unmapped], A) -> list:
    """The steps for `transforms` (positions numbered from `prefix`); what cannot become a step
    goes to `unmapped` with the reason, and the rest is kept."""
    steps = []
    for k, transform in enumerate(transforms, start=1):
        steps += _convert(transform, f"{prefix}{k}", unmapped, A)
    return steps


def _convert(transform, position: str, unmapped: list[Unmapped], A) -> list:
    """The steps for one transform at `position`: none (layout only, or unmapped), one, or a
    container's opened up."""
    name = type(transform).__name__
    if name in _LAYOUT_ONLY:
        return []
    try:
        # Containers only: some transforms (ColorJitter) keep a list of functions in `.transforms`.
        if isinstance(transform, A.BaseCompose):
            if name in _CONTAINERS and float(getattr(transform, "p", 1.0)) == 1.0:
                return _steps(list(transform.transforms), position + ".", unmapped, A)
            group = _group(transform, position, unmapped, A)
            return [group] if group is not None else []
        op, params = _map(transform)
        return [Step.create(op, p=float(transform.p), **params)]
    except (ValueError, ChainError) as exc:
        unmapped.append(Unmapped(position, _describe(transform), str(exc)))
        return []


def _group(container, position: str, unmapped: list[Unmapped], A):
    """The group step for an Albumentations container (OneOf, SomeOf, Sequential with p < 1),
    its children imported as steps; None when none of its children could be."""
    name = type(container).__name__
    if name == "SomeOf" and container.replace:
        raise ValueError("SomeOf(replace=True) may run a transform twice on one image; the SomeOf group "
                         "chooses without replacement: use replace=False")
    if name not in ("OneOf", "SomeOf", "Sequential"):
        raise ValueError(f"{name} has no group equivalent (groups: OneOf, SomeOf, Sequential); "
                         + ("it applies its transforms in a random order" if name == "RandomOrder" else
                            "pick the transforms you want as steps, or put them in a OneOf"))
    kept, weights = [], []
    for k, child in enumerate(container.transforms, start=1):
        steps = _convert(child, f"{position}.{k}", unmapped, A)
        if not steps:
            continue
        step = steps[0] if len(steps) == 1 else Step.create("Sequential", steps=steps)
        outside = [op for op in step.ops() if why_not_in_group(op.spec)]
        if outside:
            unmapped.append(Unmapped(f"{position}.{k}", _describe(child), why_not_in_group(outside[0].spec)
                                     + f"; a group's children keep the image size, so {name} runs without it"))
            continue
        if name == "OneOf":
            # A.OneOf takes its children's p as their weights and then forces the chosen one: the
            # group's weights are those p, and the children apply with p = 1.
            weights.append(float(getattr(child, "p", 1.0)))
            step = Step.from_dict({**step.to_dict(), "p": 1.0})
        kept.append(step)
    if not kept:
        return None
    params = {}
    if name == "OneOf":
        if sum(weights) <= 0:
            raise ValueError("every child of this OneOf has p=0, so it never picks one")
        params["weights"] = weights if len(set(weights)) > 1 else []
    if name == "SomeOf":
        params["n"] = min(int(container.n), len(kept))
    return Step.create(name, p=float(container.p), steps=kept, **params)


def _map(transform) -> tuple[str, dict]:
    """(op name, params) of the first op whose lowering can express `transform`."""
    name = type(transform).__name__
    candidates = [spec for spec in REGISTRY.values()
                  if spec.albumentations is not None and spec.albumentations.from_transform is not None
                  and name in (spec.albumentations.transform, *spec.albumentations.also_imports)]
    if not candidates:
        raise ValueError(f"no workbench op runs A.{name}; {_nearest(name)}")
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


# Albumentations transforms no op runs, with the nearest op and how it differs.
_NEAREST = {
    "FancyPCA": "ColorJitter (random brightness/contrast/saturation/hue, not PCA-based lighting noise)",
    "PlanckianJitter": "ColorJitter (no black-body colour temperatures)",
    "RandomToneCurve": "Gamma (one power curve, not a random S-curve)",
    "ChannelDropout": "ChannelShuffle (permutes channels, never zeroes one)",
    "RingingOvershoot": "Sharpness (a sharpening kernel, not a sinc filter's ringing)",
    "ZoomBlur": "MotionBlur (a linear kernel, not a radial zoom)",
    "GlassBlur": "GaussianBlur (no local pixel shuffling)",
    "RandomSizedCrop": "RandomResizedCrop (its window is drawn by area and aspect ratio, not by height in pixels)",
    "SafeRotate": "Rotate (keeps the size and cuts the corners, no rescaling to fit)",
    "RandomScale": "Affine (scale about the centre, keeping the image size)",
    "CropAndPad": "Pad or CenterCrop",
    "Superpixels": "Posterize (fewer levels, not superpixels)",
    "ToSepia": "Grayscale (grey, without the sepia tint)",
    "PixelDropout": "SaltAndPepper (sets pixels to black or white, not to a drop value)",
    "MultiplicativeNoise": "GaussianNoise (additive, not multiplicative)",
    "AdditiveNoise": "GaussianNoise (Gaussian only)",
    "RandomGravel": "SaltAndPepper",
    "Illumination": "BrightnessContrast (uniform, not a light pattern)",
}


def _nearest(name: str) -> str:
    """Which op comes nearest to the Albumentations transform `name`, for the unmapped report."""
    import difflib

    if name in _NEAREST:
        return f"the nearest op is {_NEAREST[name]}"
    known = {spec.albumentations.transform: spec.name for spec in REGISTRY.values() if spec.albumentations}
    known.update({spec.name: spec.name for spec in REGISTRY.values()})
    close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.75)
    if close:
        return "nearest op(s): " + ", ".join(dict.fromkeys(known[c] for c in close)) + " (see docs/ops.md)"
    return "see workbench.list_ops() and docs/ops.md for the ops there are"


def _describe(transform) -> str:
    """A.Name(p=...) (the full repr of a transform runs over many lines)."""
    return f"A.{type(transform).__name__}(p={getattr(transform, 'p', '?')})"
