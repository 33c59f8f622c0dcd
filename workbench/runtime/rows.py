"""A run's per-step records turned into one list of step rows per sample (RunResult.params).

Shared with the exported files, which build the same rows from their own records to move
targets (see targets.py): `plan` describes the chain's steps as plain data, so that no
workbench object is needed.
"""
import numpy as np


def sample_rows(plan, records, count):
    """One list of step dicts per sample from per-step arrays (sample index first).

    `plan`: one entry per step of the chain: {"op", "enabled", "names"} and, for a group, "steps"
    (its children's entries); `names` maps the backend's raw record keys to the reported names
    (None: the records already use them), or is a function of one sample's raw values giving
    {name: value} (an angle from Albumentations' matrix), called where the step applied.
    `records`: one dict per enabled step; a group's holds its coin (`batch_prob`), which children
    each sample chose (`selected`, one column per enabled child) and `steps`, its enabled
    children's records. A group's row reports `chosen` (the
    children's 1-based positions) and `steps`, its children's rows (numbered 3.1, 3.2, ...).

    Example:
        >>> plan = [{"op": "Rotate", "enabled": True, "names": {"degrees": "angle"}}]
        >>> sample_rows(plan, [{"batch_prob": np.ones(1), "degrees": np.array([7.0])}], 1)
        [[{'step': 1, 'op': 'Rotate', 'enabled': True, 'applied': True, 'angle': 7.0}]]
    """
    columns = _Columns(count)
    return [_rows(plan, records, n, "", columns) for n in range(count)]


def _rows(plan, records, n, prefix, columns):
    enabled = [i for i, entry in enumerate(plan) if entry["enabled"]]
    by_index = dict(zip(enabled, records))
    rows = []
    for i, entry in enumerate(plan):
        row = {"step": f"{prefix}.{i + 1}" if prefix else i + 1, "op": entry["op"], "enabled": entry["enabled"]}
        rec = by_index.get(i)
        row["applied"] = bool(rec is not None and columns.applied(rec, n))
        if entry.get("steps") is not None:
            children = [k for k, child in enumerate(entry["steps"]) if child["enabled"]]
            if row["applied"]:
                row["chosen"] = [k + 1 for col, k in enumerate(children) if float(rec["selected"][n][col]) > 0.5]
            row["steps"] = _rows(entry["steps"], rec["steps"] if rec is not None else [], n, str(row["step"]), columns)
        elif rec is not None and callable(entry["names"]):
            if row["applied"]:
                named = entry["names"]({k: v[n] for k, v in rec.items() if k != "batch_prob"})
                row.update({k: _to_python(k, v) for k, v in named.items() if not _undrawn(v)})
        elif rec is not None and (row["applied"] or not prefix):
            # (Inside a group, a child that did not run shows no draws, whatever the backend drew.)
            names = entry["names"] if entry["names"] is not None else {k: k for k in rec if k != "batch_prob"}
            for raw, name in names.items():
                if raw in rec:
                    undrawn, value = columns.value(rec, raw, n)
                    if not undrawn:
                        row[name] = value
        rows.append(row)
    return rows


class _Columns:
    """Each record's arrays turned into per-sample Python values once per run, not once per
    sample (a batch of 256 made that a sixth of a GPU run's time); the values are exactly those
    _undrawn and _to_python give one sample at a time, which arrays of another shape still use."""

    def __init__(self, count):
        self.count, self.done = count, {}

    def applied(self, rec, n):
        key = (id(rec), "batch_prob")
        if key not in self.done:
            prob = np.asarray(rec["batch_prob"])
            self.done[key] = (prob.reshape(-1).astype(np.float64) > 0.5).tolist() \
                if prob.ndim == 1 and prob.shape[0] == self.count else None
        column = self.done[key]
        return column[n] if column is not None else float(rec["batch_prob"][n]) > 0.5

    def value(self, rec, raw, n):
        """(undrawn, the reported value) of sample n's `raw` draw."""
        key = (id(rec), raw)
        if key not in self.done:
            self.done[key] = _column(raw, np.asarray(rec[raw]), self.count)
        column = self.done[key]
        if column is None:
            value = rec[raw][n]
            return (True, None) if _undrawn(value) else (False, _to_python(raw, value))
        return column[0][n], column[1][n]


def _column(raw, array, count):
    """([undrawn], [value]) for every sample of `array` (sample index first), or None where
    the array is not one row per sample."""
    if array.ndim == 0 or array.shape[0] != count or (raw == "src" and array.shape[1:] != (4, 2)):
        return None
    flat = array.reshape(count, -1)
    if array.dtype.kind == "f" and flat.shape[1] > 0:
        undrawn = np.isnan(flat).all(axis=1).tolist()
    else:
        undrawn = [False] * count
    wide = flat.astype(np.float64)
    if raw == "partner":
        values = np.nan_to_num(wide[:, 0]).astype(np.int64).tolist()
    elif raw == "src":
        x, y = wide[:, 0::2], wide[:, 1::2]
        values = np.stack([x.min(1), y.min(1), x.max(1) + 1.0, y.max(1) + 1.0], axis=1).tolist()
    elif flat.shape[1] == 1:
        values = wide[:, 0].tolist()
    else:
        values = wide.tolist()
    return undrawn, values


def _undrawn(value):
    """NaN marks a value the backend did not draw for that sample (a step that did not apply)."""
    value = np.asarray(value)
    return value.dtype.kind == "f" and value.size > 0 and bool(np.isnan(value).all())


def _to_python(raw, value):
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


def records_from_draws(plan, draws, count, label=""):
    """DALI's draws ({"stepN_Op.name": per-sample array}) regrouped into one record per enabled
    step, as sample_rows reads them (a group's record holds its children's, whose draws are
    named "stepN.K_Op.name").

    Example:
        >>> plan = [{"op": "Rotate", "enabled": True, "names": None}]
        >>> records_from_draws(plan, {"step1_Rotate.angle": np.array([3.0])}, 1)[0]["angle"].tolist()
        [3.0]
    """
    records = []
    for i, entry in enumerate(plan):
        if not entry["enabled"]:
            continue
        step = f"{label}.{i + 1}" if label else f"step{i + 1}"
        prefix = f"{step}_{entry['op']}."
        record = {name[len(prefix):]: value for name, value in draws.items() if name.startswith(prefix)}
        record["batch_prob"] = np.asarray(record.pop("applied", np.ones(count))).reshape(count)
        if entry.get("steps") is not None:
            record["selected"] = np.asarray(record["selected"]).reshape(count, -1)
            record["steps"] = records_from_draws(entry["steps"], draws, count, step)
        records.append(record)
    return records
