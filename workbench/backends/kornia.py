"""Kornia backend: runs the very module that `export("kornia")` writes."""
from __future__ import annotations

import os

import numpy as np
import torch

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")  # never block on an install prompt

from ..codegen import emit, load_module
from ..errors import WorkbenchError
from ..plans import kornia_names
from .records import deferred_params


def run_kornia(chain, images: list[np.ndarray], device: str, labels: np.ndarray | None = None,
               torch_compile: bool = False, boxes: list[np.ndarray] | None = None):
    """(images, per-sample params (deferred_params: made when read), mixed labels or None) from the generated
    module's `augment_images`; `labels` (soft targets) are handed to it when given, `torch_compile` when
    set (torch.compile of the fused runs of steps), and `boxes` (for the steps that read them)."""
    module = load_module(emit(chain, "kornia"), "kornia")
    extra = {"augmentation": built_augmentation(module, device)}
    if labels is not None:
        extra["labels"] = labels
    if torch_compile:
        extra["torch_compile"] = True
    if boxes is not None:
        extra["boxes"] = boxes
    try:
        out, records, *mixed = module.augment_images(images, seed=chain.seed, device=device, **extra)
    except (RuntimeError, ValueError) as exc:
        raise WorkbenchError(f"Kornia could not run the chain: {exc}") from exc
    params = deferred_params(chain, records, len(images), kornia_names)
    return out, params, (mixed[0] if mixed else None)


def built_augmentation(module, device: str):
    """The generated module's chain, built and placed on `device` once per module and device
    (its name is its source's hash): building Kornia's modules (their samplers, their checks)
    took a third of a 16-image run on a GPU, and they keep no state between runs (every run
    seeds torch's generator itself).

    Example:
        >>> import workbench as wb
        >>> module = load_module(emit(wb.Chain().add("HorizontalFlip"), "kornia"), "kornia")
        >>> built_augmentation(module, "cpu") is built_augmentation(module, "cpu")
        True
    """
    key = (module.__name__, str(torch.device(device)))
    if key not in BUILT:
        if len(BUILT) >= 16:  # a preview session builds many chains: keep the recent ones
            BUILT.pop(next(iter(BUILT)))
        BUILT[key] = module.place(module.build_augmentation(), device)
    return BUILT[key]


# Built chains by (generated module's name, device), oldest first.
BUILT: dict = {}


def levels_head(module, steps, device) -> int:
    """How many of `steps`, from the first, the exported `module` may run on a same-size uint8 batch's
    levels on `device` (its apply_steps with fuse): on a CPU, the first steps that its runs_on_levels or
    filter_on_levels takes, each on its own (in no fused run), the fused geometric runs among them
    (resample_levels takes most, by their draws), and a colour run that starts on levels (levels_plan: a
    step that keeps levels, or float tables), whole; the levels go on past a colour run whose steps all keep
    levels (a Normalize leaves floats). A state before or
    inside these could be floats where the chain's run has levels.

    Example:
        >>> import workbench as wb
        >>> chain = wb.Chain().add("Resize", size=[64, 64]).add("CenterCrop", size=[32, 32]).add("MotionBlur")
        >>> module = load_module(emit(chain, "kornia"), "kornia")
        >>> levels_head(module, module.build_augmentation(), "cpu")
        2
        >>> chain = wb.Chain().add("Rotate").add("HorizontalFlip").add("Brightness").add("Normalize").add("Invert")
        >>> module = load_module(emit(chain, "kornia"), "kornia")
        >>> levels_head(module, module.build_augmentation(), "cpu")
        5
    """
    levels = torch.empty((0, 3, 1, 1), dtype=torch.uint8, device=device)
    count = 0
    for kind, modules in module.fusion_segments(steps):
        if kind is None and (module.runs_on_levels(modules[0], levels) or module.filter_on_levels(modules[0], levels)):
            count += 1
            continue
        if kind == "geometry" and levels.device.type == "cpu":
            count += len(modules)
            continue
        kept, tabled = module.levels_plan(modules, levels) if kind == "colour" else (0, False)
        if kept or tabled:
            count += len(modules)
            if kept == len(modules):
                continue
        break
    return count


def fusion_bounds(module, steps) -> list[int]:
    """Where the exported `module`'s runs of `steps` end (indices into `steps`, the last being
    len(steps)): the points at which a fused run (its fusion_segments) can be paused and resumed
    with the same result, where the preview keeps its states.

    Example:
        >>> import workbench as wb
        >>> chain = wb.Chain().add("Rotate").add("HorizontalFlip").add("Brightness").add("Invert")
        >>> module = load_module(emit(chain, "kornia"), "kornia")
        >>> fusion_bounds(module, module.build_augmentation())
        [2, 4]
    """
    bounds, end = [], 0
    for _, modules in module.fusion_segments(steps):
        end += len(modules)
        bounds.append(end)
    return bounds
