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

import difflib
import os
from typing import Any

from ..errors import WorkbenchError
from ..model import ChainModel, Step
from ..ops import REGISTRY, why_not_in_group
from .report import Unmapped
from .walker import Child, Imported, Library, child_step, import_chain, leaf_positions, read_as_op

# Transforms that only change the container, not the pixels: every export already delivers
# tensors in its engine's layout.
_LAYOUT_ONLY = {"ToTensorV2": "layout conversion to a CHW tensor; every export delivers tensors already"}
# Containers whose children run in order: opened up into the chain when their p is 1.
_CONTAINERS = ("Compose", "Sequential")


def _albumentations():
    os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # no PyPI version check on import
    try:
        import albumentations as A
    except ImportError:
        raise WorkbenchError("importing an Albumentations pipeline needs Albumentations: "
                             "pip install albumentations==2.0.8") from None
    return A


def chain_from_albumentations(pipeline: Any, seed: int | None = None, strict: bool = False,
                              chain_type: type[ChainModel] = ChainModel) -> ChainModel:
    """The chain for an Albumentations `Compose` (or a list of transforms), see `Chain.from_albumentations`."""
    A = _albumentations()
    transforms = _top(pipeline, A)
    pipeline_seed = getattr(pipeline, "seed", None) if isinstance(pipeline, A.BaseCompose) else None
    if seed is None:
        seed = pipeline_seed if isinstance(pipeline_seed, int) and pipeline_seed >= 0 else 0
    return import_chain(transforms, _library(A), chain_type(seed=seed), "from_albumentations", strict)


def leaf_transforms(pipeline: Any) -> list[str]:
    """Positions ("1", "8.2", ...) of the transforms in `pipeline` that an import maps one by
    one, numbered as `chain.unmapped` numbers them (containers opened up, layout-only
    transforms left out): what the import coverage counts.

    Example:
        >>> import albumentations as A
        >>> leaf_transforms(A.Compose([A.OneOf([A.Blur(), A.MedianBlur()]), A.HorizontalFlip()]))
        ['1.1', '1.2', '2']
    """
    A = _albumentations()
    return leaf_positions(_top(pipeline, A), _library(A))


def _top(pipeline: Any, A) -> list:
    if isinstance(pipeline, (list, tuple)):
        return list(pipeline)
    if isinstance(pipeline, A.BaseCompose) or type(pipeline).__name__ in _CONTAINERS:
        return list(pipeline.transforms)
    if isinstance(pipeline, A.BasicTransform):
        return [pipeline]
    raise WorkbenchError(f"from_albumentations takes an albumentations Compose, a transform or a list of "
                         f"transforms; got {type(pipeline).__name__}")


def _library(A) -> Library:
    # Containers only: some transforms (ColorJitter) keep a list of functions in `.transforms`.
    return Library(
        children=lambda t: list(t.transforms) if isinstance(t, A.BaseCompose) else None,
        layout_only=lambda t: type(t).__name__ in _LAYOUT_ONLY,
        opened=lambda t: type(t).__name__ in _CONTAINERS and float(getattr(t, "p", 1.0)) == 1.0,
        group=_group,
        leaf=_leaf,
        describe=_describe)


def _leaf(transform, notes: list[str]) -> Step:
    op, params = _map(transform)
    return Step.create(op, p=float(transform.p), **params)


def _group(container, position: str, children: list[Child], imported: Imported):
    """The group step for an Albumentations container (OneOf, SomeOf, Sequential with p < 1),
    with the children that could be imported; None when none of them could."""
    name = type(container).__name__
    if name == "SomeOf" and container.replace:
        raise ValueError("SomeOf(replace=True) may run a transform twice on one image; the SomeOf group "
                         "chooses without replacement: use replace=False")
    if name not in ("OneOf", "SomeOf", "Sequential"):
        raise ValueError(f"{name} has no group equivalent (groups: OneOf, SomeOf, Sequential); "
                         + ("it applies its transforms in a random order" if name == "RandomOrder" else
                            "pick the transforms you want as steps, or put them in a OneOf"))
    kept, weights = [], []
    for child in children:
        if not child.steps:
            continue
        step = child_step(child)
        outside = [op for op in step.ops() if why_not_in_group(op.spec)]
        if outside:
            imported.unmapped.append(Unmapped(child.position, _describe(child.transform),
                                              why_not_in_group(outside[0].spec) + f", so {name} runs without it"))
            continue
        if name == "OneOf":
            # A.OneOf takes its children's p as their weights and then forces the chosen one: the
            # group's weights are those p, and the children apply with p = 1.
            weights.append(float(getattr(child.transform, "p", 1.0)))
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
    candidates = [(spec.name, lambda t, notes, read=spec.albumentations.from_transform: read(t))
                  for spec in REGISTRY.values()
                  if spec.albumentations is not None and spec.albumentations.from_transform is not None
                  and name in (spec.albumentations.transform, *spec.albumentations.also_imports)]
    if not candidates:
        raise ValueError(f"no workbench op runs A.{name}; {_nearest(name)}")
    return read_as_op(transform, candidates, [])


# Albumentations transforms no op runs, with the nearest op and how it differs.
_NEAREST = {
    "FancyPCA": "ColorJitter (random brightness/contrast/saturation/hue, not PCA-based lighting noise)",
    "PlanckianJitter": "ColorJitter (no black-body colour temperatures)",
    "RandomToneCurve": "Gamma (one power curve, not a random S-curve)",
    "ChannelDropout": "ChannelShuffle (permutes channels, never zeroes one)",
    "RingingOvershoot": "Sharpness (a sharpening kernel, not a sinc filter's ringing)",
    "ZoomBlur": "MotionBlur (a linear kernel, not a radial zoom)",
    "GlassBlur": "GaussianBlur (no local pixel shuffling)",
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
