"""Moving a run's targets: the chain's plan for them, checked, and applied from the draws the
backend reported (workbench/runtime/targets.py does the geometry, for every backend alike)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedOpError
from ..runtime.targets import move_steps
from ..targets import Targets


def target_plan(steps) -> list[dict[str, Any]]:
    """One entry per step for runtime/targets.py's move_steps: what each op does to targets,
    read from its spec's TargetRule.

    Example:
        >>> from workbench.model import ChainModel
        >>> plan = target_plan(ChainModel().add("HorizontalFlip").add("Brightness").steps)
        >>> [entry["geometry"].__name__ if entry.get("geometry") else None for entry in plan]
        ['horizontal_flip', None]
    """
    plan = []
    for step in steps:
        entry: dict[str, Any] = {"enabled": step.enabled, "params": step.params}
        if step.is_group:
            entry["steps"] = target_plan(step.steps)
        else:
            rule = step.spec.targets
            entry.update(geometry=rule.geometry, erase=rule.erase, mix=rule.mix,
                         size=lambda params, h, w, spec=step.spec: spec.output_size(params, h, w))
        plan.append(entry)
    return plan


def check_target_ops(chain, targets: Targets) -> None:
    """Refuse a chain whose ops cannot move the targets given, naming the step and the fix."""
    for op in chain.enabled_ops():
        rule = op.spec.targets
        if rule.unsupported:
            raise UnsupportedOpError(f"{op.op} cannot move {', '.join(targets.kinds())}: {rule.unsupported}")
        if (chain.targets.mark_erased is not None and targets.masks is not None and op.spec.family == "occlusion"
                and rule.erase is None):
            raise UnsupportedOpError(f"{op.op} cannot mark the pixels it erases in masks (its erased regions are not "
                                     "reported per sample); drop targets.mark_erased, or use Erase or CoarseDropout")


def move_targets(chain, params: list[list[dict]], images: list[np.ndarray], targets: Targets) -> Targets:
    """The targets after the chain, given the rows the backend reported for each sample.

    Example:
        >>> from workbench.model import ChainModel
        >>> from workbench.targets import check_targets
        >>> image = np.zeros((4, 6, 3), np.uint8)
        >>> given = check_targets([image], boxes=[[[0, 0, 2, 1]]])
        >>> rows = [[{"step": 1, "op": "HorizontalFlip", "enabled": True, "applied": True}]]
        >>> move_targets(ChainModel().add("HorizontalFlip"), rows, [image], given).boxes[0].tolist()
        [[4.0, 0.0, 6.0, 1.0]]
    """
    settings = {"min_visibility": chain.targets.min_visibility, "mask_fill": chain.targets.mask_fill,
                "mark_erased": chain.targets.mark_erased, "flip_pairs": chain.targets.flip_pairs}
    samples = []
    for n, image in enumerate(images):
        sample: dict[str, Any] = {"size": image.shape[:2]}
        if targets.masks is not None:
            sample["mask"] = targets.masks[n].copy()
        if targets.boxes is not None:
            sample["boxes"], sample["labels"] = targets.boxes[n].copy(), targets.box_labels[n].copy()
        if targets.keypoints is not None:
            sample["keypoints"] = targets.keypoints[n].copy()
            sample["visible"] = targets.keypoints_visible[n].copy()
        samples.append(sample)
    move_steps(target_plan(chain.steps), params, samples, settings)
    out = Targets(stacked=targets.stacked)
    if targets.masks is not None:
        out.masks = [s["mask"] for s in samples]
    if targets.boxes is not None:
        out.boxes = [s["boxes"].astype(np.float32) for s in samples]
        out.box_labels = [s["labels"] for s in samples]
    if targets.keypoints is not None:
        out.keypoints = [s["keypoints"].astype(np.float32) for s in samples]
        out.keypoints_visible = [s["visible"] for s in samples]
    return out
