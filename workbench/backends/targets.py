"""Moving a run's targets: the chain's plan for them, checked, and applied from the draws the
backend reported (workbench/runtime/targets.py does the geometry, for every backend alike)."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedOpError, WorkbenchError
from ..plans import target_plan, target_settings, unfollowed_op
from ..runtime.targets import move_batch
from ..targets import Targets

KINDS = ("masks", "boxes", "box_labels", "keypoints", "keypoints_visible")


def check_target_ops(chain, targets: Targets) -> None:
    """Refuse a chain whose ops cannot move the targets given, naming the step and the fix."""
    unfollowed = unfollowed_op(chain)
    if unfollowed is not None:
        raise UnsupportedOpError(f"{unfollowed.op} cannot move {', '.join(targets.kinds())}: "
                                 f"{unfollowed.spec.targets.unsupported}")
    for op in chain.enabled_ops():
        rule = op.spec.targets
        if (chain.targets.mark_erased is not None and targets.masks is not None and op.spec.family == "occlusion"
                and rule.erase is None):
            raise UnsupportedOpError(f"{op.op} cannot mark the pixels it erases in masks (its erased regions are not "
                                     "reported per sample); drop targets.mark_erased, or use Erase or CoarseDropout")


def move_targets(chain, params: list[list[dict]], images: list[np.ndarray], targets: Targets,
                 outputs=None) -> Targets:
    """The targets after the chain, given the rows the backend reported for each sample;
    `outputs` (the augmented images), when given, must have the sizes the targets reached.

    Example:
        >>> from workbench.model import ChainModel
        >>> from workbench.targets import check_targets
        >>> image = np.zeros((4, 6, 3), np.uint8)
        >>> given = check_targets([image], boxes=[[[0, 0, 2, 1]]])
        >>> rows = [[{"step": 1, "op": "HorizontalFlip", "enabled": True, "applied": True}]]
        >>> move_targets(ChainModel().add("HorizontalFlip"), rows, [image], given).boxes[0].tolist()
        [[4.0, 0.0, 6.0, 1.0]]
    """
    settings = target_settings(chain)
    given = {kind: getattr(targets, kind) for kind in KINDS}
    moved = move_batch(target_plan(chain.steps), params, [image.shape[:2] for image in images], given, settings)
    for n, size in enumerate(moved["sizes"]):
        if outputs is not None and tuple(size) != tuple(np.shape(outputs[n])[:2]):
            raise WorkbenchError(f"image {n + 1}'s targets reached {size} but the image is {np.shape(outputs[n])[:2]}: "
                                 "the draws reported do not give the output size; please report this with the chain")
    return Targets(stacked=targets.stacked, **{kind: moved.get(kind) for kind in KINDS})
