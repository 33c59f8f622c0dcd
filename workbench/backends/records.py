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
    return deferred_params(chain, records, count, names_for)()


def deferred_params(chain, records: list[dict[str, np.ndarray]], count: int, names_for):
    """per_sample_params as a call that builds the rows when first made (RunResult.params makes it when read):
    the chain's plan and readable values are taken now, so that later edits of the chain change nothing.
    A batch's rows cost a tenth of a millisecond per sample, which a run whose params nobody reads need not
    spend (a twentieth of an 8-image run on a CPU, profiled).

    Example:
        >>> import workbench as wb
        >>> rows = deferred_params(wb.Chain().add("Invert"), [{"batch_prob": np.ones(1)}], 1, lambda spec: None)
        >>> rows()[0][0]["applied"]
        True
    """
    plan, readers = row_plan(chain.steps, names_for), _readers(chain.steps)

    def rows():
        out = sample_rows(plan, records, count)
        if readers:
            for sample in out:
                _readable(readers, sample)
        return out
    return rows


def _readers(steps) -> list:
    """(step position, its parameters' readable_draws with their values, its children's readers)
    for the steps that have any: looked up once per run, not once per sample."""
    readers = []
    for position, step in enumerate(steps):
        if step.is_group:
            children = _readers(step.steps)
            if children:
                readers.append((position, [], children))
        else:
            found = [(prm.readable_draws, step.params[prm.name]) for prm in step.spec.params
                     if hasattr(prm, "readable_draws")]
            if found:
                readers.append((position, found, []))
    return readers


def _readable(readers, rows) -> None:
    for position, found, children in readers:
        row = rows[position]
        if children:
            _readable(children, row["steps"])
        elif row["applied"]:
            for readable_draws, value in found:
                readable_draws(row, value)
