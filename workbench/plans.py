"""The chain as plain-data plans that runtime/ code reads (the workbench and the exported files
alike): how each step's records are named in its rows, and what each step does to targets.

Example:
    >>> from workbench.model import ChainModel
    >>> [entry["size"] for entry in target_plan(ChainModel().add("Resize", size=[8, 8]).steps)]
    ['fixed']
"""
from __future__ import annotations

from typing import Any


def kornia_names(spec):
    """Kornia's {raw key: reported name} for an op; None (show Kornia's own keys) when its spec
    names none."""
    return dict(spec.kornia.record) or None


def albumentations_names(spec):
    """Albumentations' names for an op: a {raw key: name} map (only those are reported) or a
    function of the raw values (see AlbumentationsLowering.record)."""
    mapping = spec.albumentations.record
    return mapping if callable(mapping) else dict(mapping)


def row_plan(steps, names_for) -> list[dict[str, Any]]:
    """The chain's steps as runtime/rows.py's plan: op, enabled, the backend's names
    (`names_for(spec)`: {raw key: reported name}, or None) and a group's children.

    Example:
        >>> from workbench.model import ChainModel
        >>> row_plan(ChainModel().add("Rotate").steps, lambda spec: spec.kornia.record)
        [{'op': 'Rotate', 'enabled': True, 'names': {'degrees': 'angle'}}]
    """
    return [{"op": s.op, "enabled": s.enabled, "steps": row_plan(s.steps, names_for)} if s.is_group else
            {"op": s.op, "enabled": s.enabled, "names": names_for(s.spec)} for s in steps]


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
            if rule.plan_params is not None:
                entry["params"] = {**step.params, **rule.plan_params(step.params)}
            entry.update(geometry=rule.geometry, size=rule.size, keep_centres=rule.keep_centres, field=rule.field,
                         erase=rule.erase, mix=rule.mix)
        plan.append(entry)
    return plan


def unfollowed_op(chain):
    """The first enabled op (groups opened up) whose targets cannot follow its pixels (its
    TargetRule says why), or None: a run, an export's loaders and the estimate refuse targets then.

    Example:
        >>> from workbench.model import ChainModel
        >>> unfollowed_op(ChainModel().add("Rotate").add("GridDistortion")) is None
        True
    """
    return next((op for op in chain.enabled_ops() if op.spec.targets.unsupported), None)


def box_reading_op(chain) -> str | None:
    """The first enabled step whose op draws from the images' boxes (OpSpec.reads_boxes: RandomIoUCrop), or
    None: a run needs boxes then, the preview runs it uncached with them, the estimate refuses it.

    Example:
        >>> from workbench.model import ChainModel
        >>> box_reading_op(ChainModel().add("Rotate").add("RandomIoUCrop")), box_reading_op(ChainModel())
        ('RandomIoUCrop', None)
    """
    return next((step.op for _, step in chain.enabled_steps() if step.spec.reads_boxes), None)


def target_settings(chain) -> dict[str, Any]:
    """The chain's target settings as runtime/targets.py reads them.

    Example:
        >>> from workbench.model import ChainModel
        >>> target_settings(ChainModel())["min_visibility"]
        0.0
    """
    return {key: getattr(chain.targets, key) for key in
            ("min_visibility", "mask_fill", "mark_erased", "flip_pairs", "keypoints_per_instance")}
