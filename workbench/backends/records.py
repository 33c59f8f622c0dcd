"""The draws every backend reports, turned into one list of step rows per sample."""
from __future__ import annotations

from typing import Any

import numpy as np


def per_sample_params(chain, records: list[dict[str, np.ndarray]], count: int,
                      names_for) -> list[list[dict[str, Any]]]:
    """Turn per-step arrays (sample index first) into one list of step dicts per sample.

    `records` has one dict per enabled step; a group's holds its coin (`batch_prob`), which
    children each sample chose (`selected`, one column per enabled child) and `steps`, its
    enabled children's records. A group's row reports `chosen` (the children's 1-based
    positions in the group) and `steps`, its children's rows ("step" numbered 3.1, 3.2, ...).
    `names_for(spec)` gives the backend's {raw key: reported name} map for an op, or None
    when the records already use the reported names.
    """
    return [_rows(chain.steps, records, n, names_for, "") for n in range(count)]


def _rows(steps, records, n: int, names_for, prefix: str) -> list[dict[str, Any]]:
    enabled = [i for i, s in enumerate(steps) if s.enabled]
    by_index = dict(zip(enabled, records))
    rows = []
    for i, step in enumerate(steps):
        row: dict[str, Any] = {"step": f"{prefix}.{i + 1}" if prefix else i + 1, "op": step.op,
                               "enabled": step.enabled}
        rec = by_index.get(i)
        row["applied"] = bool(rec is not None and float(rec["batch_prob"][n]) > 0.5)
        if step.is_group:
            children = [k for k, child in enumerate(step.steps) if child.enabled]
            if row["applied"]:
                row["chosen"] = [k + 1 for col, k in enumerate(children) if float(rec["selected"][n][col]) > 0.5]
            row["steps"] = _rows(step.steps, rec["steps"] if rec is not None else [], n, names_for, str(row["step"]))
        elif rec is not None and (row["applied"] or not prefix):
            # (Inside a group, a child that did not run shows no draws, whatever the backend drew.)
            names = names_for(step.spec)
            for raw, name in (names or {k: k for k in rec if k != "batch_prob"}).items():
                if raw in rec and not _undrawn(rec[raw][n]):
                    row[name] = _to_python(raw, rec[raw][n])
            for prm in step.spec.params:  # parameters that name what was drawn (a policy's ops)
                if hasattr(prm, "readable_draws"):
                    prm.readable_draws(row, step.params[prm.name])
        rows.append(row)
    return rows


def _undrawn(value) -> bool:
    """NaN marks a value the backend did not draw for that sample (a step that did not apply)."""
    value = np.asarray(value)
    return value.dtype.kind == "f" and value.size > 0 and bool(np.isnan(value).all())


def _to_python(raw: str, value: np.ndarray) -> Any:
    value = np.asarray(value)
    if raw == "partner":  # a batch index
        return int(value.reshape(-1)[0])
    if raw == "src":  # Kornia's inclusive corner pixels -> [x0, y0, x1, y1) in pixel edges, like DALI's
        return [float(value[:, 0].min()), float(value[:, 1].min()),
                float(value[:, 0].max()) + 1.0, float(value[:, 1].max()) + 1.0]
    if value.ndim == 0:
        return float(value)
    if value.size == 1:
        return float(value.reshape(-1)[0])
    return [float(v) for v in value.reshape(-1)]
