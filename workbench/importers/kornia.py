"""Turn an existing Kornia pipeline into a chain: each `kornia.augmentation` module becomes the
op whose Kornia lowering builds that module with the same settings, read by the inverse on the
op's spec (`OpSpec.from_kornia`, helpers in `ops/kornia_reading.py`); what no op can express is
listed in `chain.unmapped` with the reason, rather than dropped silently. This module says how
Kornia's containers read (sequences, random_apply groups, policies) and the rules every module
shares (same_on_batch, p_batch, where p comes from).

Example:
    >>> import kornia.augmentation as K
    >>> import workbench as wb
    >>> chain = wb.Chain.from_kornia(K.AugmentationSequential(K.RandomHorizontalFlip(p=0.5),
    ...                                                     K.ColorJitter(brightness=0.2, p=0.8)))
    >>> [(s.op, s.p, s.params) for s in chain.steps]
    [('HorizontalFlip', 0.5, {}), ('Brightness', 0.8, {'factor': [0.8, 1.2]})]
"""
from __future__ import annotations

import os
from typing import Any

from ..errors import ChainError, WorkbenchError
from ..model import ChainModel, Step
from ..ops import REGISTRY
from .walker import (Child, Imported, Library, child_step, every_child_mapped, group_dict, import_chain,
                     leaf_positions, read_as_op)

# A sequence container's children run in order; these are opened up (or become a group step).
_SEQUENCES = ("AugmentationSequential", "ImageSequential", "Sequential", "ModuleList")
_POLICIES = ("RandAugment", "TrivialAugment", "AutoAugment")
# Batch transforms (the modules of the ops that mix the batch): their p_batch gates the batch, as the
# step's p does.
_BATCH_GATED = {name for spec in REGISTRY.values() if spec.mixes_batch and spec.kornia is not None
                for name in (spec.kornia.module, *spec.kornia.local_modules())}
# Modules that only change the container or the dtype, not the pixels.
_LAYOUT_ONLY = {"Identity": "does nothing"}

# Kornia classes no op runs, with the nearest op and how it differs (quoted in the reason).
_NEAREST = {
    "ColorJiggle": "ColorJitter (K.ColorJitter: torchvision's multiplicative brightness; ColorJiggle adds "
                   "brightness - 1 and draws its order per batch)",
    "RandomBrightness": "Brightness (multiplies by the factor; K.RandomBrightness adds factor - 1)",
    "RandomContrast": "Contrast (K.ColorJitter's contrast about the grey mean; K.RandomContrast multiplies "
                      "without a centre)",
    "RandomSaturation": "Saturation (as K.ColorJitter(saturation=...))",
    "RandomHue": "Hue (as K.ColorJitter(hue=...))",
    "RandomBoxBlur": "GaussianBlur", "RandomPlanckianJitter": "ColorJitter",
    "RandomResizedCrop3D": "RandomResizedCrop", "PadTo": "Pad (pads to at least a size, at a random place)",
    "LongestMaxSize": "Resize", "SmallestMaxSize": "Resize", "RandomThinPlateSpline": "Perspective",
    "RandomElasticTransform": "Affine", "RandomFisheye": "Perspective", "Denormalize": "Normalize",
    "RandomClahe": "CLAHE (OpenCV's clip limit, Albumentations' settings; Kornia's clip_limit is scaled otherwise)",
    "RandomRotation90": "RandomRotate90 (whole quarter turns, no resampling; Kornia's warps by a drawn angle)",
    "RandomRain": "RandomRain (Albumentations' drops and blur; Kornia's draws single-pixel streaks)",
    "RandomSnow": "RandomSnow (Albumentations' brightened areas; Kornia's whitens by a threshold)",
    "RandomChannelDropout": "ChannelShuffle (no op zeroes a channel)",
    "RandomGaussianIllumination": "BrightnessContrast (one brightness for the whole image)",
    "RandomLinearIllumination": "BrightnessContrast (one brightness for the whole image)",
    "RandomLinearCornerIllumination": "BrightnessContrast (one brightness for the whole image)",
    "RandomPlasmaBrightness": "Brightness (one factor for the whole image)",
    "RandomPlasmaContrast": "Contrast (one factor for the whole image)", "RandomPlasmaShadow": "RandomShadow",
    "RandomDissolving": "GaussianBlur (no op runs a diffusion model)", "RandomJigsaw": "GridDistortion",
    "RandomMosaic": "CutMix (one pasted box; no op tiles four images)", "PatchMix": "CutMix",
    "RandomTransplantation": "CutMix (a box, not a masked region)",
    "PatchSequential": "AugmentationSequential (the chain augments whole images, not patches)",
    "VideoSequential": "AugmentationSequential (the chain augments images, not video clips)",
    "ManyToManyAugmentationDispather": "AugmentationSequential (one pipeline per import)",
    "ManyToOneAugmentationDispather": "AugmentationSequential (one pipeline per import)",
}
# Kornia's 3D (volume) modules: the workbench augments 2D images.
_VOLUMES = "a 3D (volume) augmentation; the workbench augments 2D images; the nearest op is its 2D namesake"


def chain_from_kornia(pipeline: Any, seed: int | None = None, strict: bool = False,
                      chain_type: type[ChainModel] = ChainModel) -> ChainModel:
    """The chain for a Kornia pipeline, see `Chain.from_kornia`."""
    return import_chain(_top(pipeline), LIBRARY, chain_type(seed=0 if seed is None else seed), "from_kornia", strict)


def leaf_transforms(pipeline: Any) -> list[str]:
    """Positions ("1", "2.1", ...) of the modules in `pipeline` that an import maps one by
    one, numbered as `chain.unmapped` numbers them: what the import coverage counts.

    Example:
        >>> import kornia.augmentation as K
        >>> leaf_transforms(K.AugmentationSequential(K.RandomHorizontalFlip(), K.RandomGrayscale()))
        ['1', '2']
    """
    return leaf_positions(_top(pipeline), LIBRARY)


def _top(pipeline: Any) -> list:
    """The pipeline's top-level modules; a sequence with random_apply is itself one group, at 1."""
    os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
    try:
        import torch.nn as nn
    except ImportError:  # pragma: no cover - kornia needs torch
        raise WorkbenchError("importing a Kornia pipeline needs torch and kornia: pip install kornia==0.9.0") from None
    if isinstance(pipeline, (list, tuple)):
        return list(pipeline)
    if _kind(pipeline) == "sequence":
        return _children(pipeline) if _random_apply(pipeline) is False else [pipeline]
    if isinstance(pipeline, nn.Module):
        return [pipeline]
    raise WorkbenchError(f"from_kornia takes a K.AugmentationSequential, an nn.Sequential, a list of "
                         f"modules or one module; got {type(pipeline).__name__}")


# ----- walking the pipeline -------------------------------------------------------------
def _kind(module: Any) -> str:
    """"policy" (kornia.augmentation.auto), "sequence" (a container) or "module"."""
    cls = type(module)
    if cls.__name__ in _POLICIES and "kornia.augmentation.auto" in cls.__module__:
        return "policy"
    if cls.__name__ in _SEQUENCES or any(c.__name__ in ("ImageSequential", "ImageSequentialBase")
                                         for c in cls.__mro__):
        return "sequence"
    return "module"


def _children(module: Any) -> list:
    return list(module.children())


def _random_apply(module: Any):
    return getattr(module, "random_apply", False)


def _leaf(module: Any, notes: list[str]) -> Step:
    op, params, p = module_to_op(module, notes)
    return Step.create(op, p=p, **params)


def _group(module: Any, position: str, children: list[Child], imported: Imported):
    """A Kornia sequence with random_apply as a OneOf / SomeOf group step (ValueError: unmapped)."""
    lo, hi = module.random_apply  # Kornia keeps [lo, hi): the count is drawn in it per batch
    weights = [float(w) for w in module.random_apply_weights.tolist()]
    if hi - lo != 1:
        raise ValueError(f"random_apply draws how many of its {len(children)} modules run (between {lo} and "
                         f"{hi - 1}); a OneOf/SomeOf group applies a fixed number n: write random_apply=n")
    if not every_child_mapped(children):
        raise ValueError("random_apply picks among its modules, and not every one of them maps to an op (see the "
                         "entries under this position), so the choice cannot be kept")
    n, steps = lo, [child_step(child) for child in children]
    if n == 1:
        data = group_dict("OneOf", 1.0, {"weights": weights}, steps)
    else:
        nonzero = sum(1 for w in weights if w > 0)
        data = group_dict("SomeOf", 1.0, {"n": n, "replace": n > sum(weights) or n > nonzero, "weights": weights},
                          steps)
    imported.notes.append(f"{position} {describe(module)}: random_apply={n} picks its modules once per batch in "
                          f"Kornia (every image gets the same ones, in a random order); the {data['op']} group picks "
                          "per image")
    try:
        return Step.from_dict(data, index=int(position.split(".")[0]))
    except ChainError as exc:
        raise ValueError(f"random_apply picks among its modules per batch; it would be a {data['op']} group step, "
                         f"which this workbench cannot build ({exc})") from None


def describe(module: Any) -> str:
    """K.Name(p=...) (a module's full repr runs long)."""
    p = getattr(module, "p", None)
    if type(module).__name__ in _BATCH_GATED:
        p = getattr(module, "p_batch", p)
    if _kind(module) == "sequence" and getattr(module, "random_apply", False) is not False:
        return f"K.{type(module).__name__}(random_apply={module.random_apply[0]})"
    return f"K.{type(module).__name__}(p={p})" if p is not None else f"K.{type(module).__name__}()"


LIBRARY = Library(
    children=lambda m: _children(m) if _kind(m) == "sequence" else None,
    layout_only=lambda m: type(m).__name__ in _LAYOUT_ONLY,
    opened=lambda m: _random_apply(m) is False,
    group=_group, leaf=_leaf, describe=describe)


# ----- one module ---------------------------------------------------------------------------
def module_to_op(module: Any, notes: list[str] | None = None) -> tuple[str, dict, float]:
    """(op name, params, p) for one Kornia module, read by the inverse on the op's spec
    (`OpSpec.from_kornia`); ValueError with the reason when no op expresses it.

    Example:
        >>> import kornia.augmentation as K
        >>> module_to_op(K.RandomRotation(degrees=20.0, p=0.3, align_corners=False))
        ('Rotate', {'degrees': [-20.0, 20.0], 'interpolation': 'bilinear'}, 0.3)
    """
    notes = [] if notes is None else notes
    name = type(module).__name__
    candidates = [(spec.name, spec.from_kornia.read) for spec in REGISTRY.values()
                  if spec.from_kornia is not None
                  and name in (spec.from_kornia.transform, *spec.from_kornia.also_imports)]
    # The workbench's own modules: the inverse of each lowering, from the arguments the module was built with.
    candidates += [(spec.name, lambda m, notes, read=spec.kornia.from_module: read(m.built_with, notes))
                   for spec in REGISTRY.values() if spec.kornia is not None
                   and name in spec.kornia.local_modules() and hasattr(module, "built_with")]
    if not candidates and any(spec.kornia is not None and name in spec.kornia.local_modules()
                              for spec in REGISTRY.values()):
        raise ValueError(f"this K.{name} does not keep the arguments it was built with (it comes from an older "
                         "workbench export): build the pipeline with this workbench's export, or add the step by hand")
    if not candidates:
        hint = f"; the nearest op is {_NEAREST[name]}" if name in _NEAREST else f"; {_VOLUMES}" \
            if name.endswith("3D") else ""
        raise ValueError(f"no workbench op runs K.{name}{hint}; see workbench.list_ops() and docs/ops.md")
    if name not in _POLICIES:
        # Resize, CenterCrop and Normalize draw nothing (Kornia sets same_on_batch on them itself).
        if getattr(module, "same_on_batch", False) and name not in ("Resize", "CenterCrop", "Normalize"):
            raise ValueError("same_on_batch=True draws one value for the whole batch; the workbench draws per "
                             "image: write same_on_batch=False")
        if name not in _BATCH_GATED and float(getattr(module, "p_batch", 1.0)) != 1.0:
            raise ValueError(f"p_batch={module.p_batch} skips whole batches; a step's p gates each image: write "
                             "p_batch=1.0")
    op, params = read_as_op(module, candidates, notes)
    if name in _POLICIES:
        p = 1.0
    elif name in _BATCH_GATED:
        p = float(module.p_batch)  # a batch transform: its p_batch gates the batch, as the step's p does
    else:
        p = float(module.p)
    return op, params, p
