"""The draws every backend reports, turned into one list of step rows per sample."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..runtime.rows import sample_rows


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


def per_sample_params(chain, records: list[dict[str, np.ndarray]], count: int,
                      names_for) -> list[list[dict[str, Any]]]:
    """Turn per-step arrays (sample index first) into one list of step dicts per sample
    (runtime/rows.py's sample_rows, see there), then let parameters that name what was drawn (a
    policy's ops) make those draws readable. `names_for(spec)` gives the backend's
    {raw key: reported name} map for an op, or None when the records already use the reported names.
    """
    rows = sample_rows(row_plan(chain.steps, names_for), records, count)
    for sample in rows:
        _readable(chain.steps, sample)
    return rows


def _readable(steps, rows) -> None:
    for step, row in zip(steps, rows):
        if step.is_group:
            _readable(step.steps, row["steps"])
        elif row["applied"]:
            for prm in step.spec.params:
                if hasattr(prm, "readable_draws"):
                    prm.readable_draws(row, step.params[prm.name])
