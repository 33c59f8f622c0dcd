"""The draws every backend reports, turned into one list of step rows per sample."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..plans import row_plan
from ..runtime.rows import sample_rows


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
