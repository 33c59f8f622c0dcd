"""runtime/rows.py: the per-sample rows built from whole-batch columns equal, value for value and
type for type, what converting one sample at a time gives (the definition kept in _to_python and
_undrawn), on every kind of draw the backends record."""
from __future__ import annotations

import numpy as np

from workbench.runtime import rows

COUNT = 7


def records():
    rng = np.random.default_rng(3)
    angle = rng.uniform(-30, 30, COUNT).astype(np.float32)
    angle[[1, 4]] = np.nan  # not drawn for those samples
    src = rng.uniform(0, 200, (COUNT, 4, 2)).astype(np.float32)
    src[2] = np.nan
    src[0, 1, 0] = 256 - 2.0 ** -16  # its +1 rounds in float32 (ulp 2^-15 past 256), not in float64
    partner = np.array([3, 0, 6, 1, 2, 5, 4], np.int64)
    colour = rng.uniform(0, 1, (COUNT, 3)).astype(np.float32)
    colour[5] = np.nan
    one = rng.uniform(0, 1, (COUNT, 1, 1)).astype(np.float64)
    size = np.tile(np.array([[224, 224]], np.int64), (COUNT, 1))
    prob = np.array([1, 0, 1, 1, 0.2, 0.9, 1], np.float32)
    return [{"batch_prob": prob, "angle": angle, "src": src, "partner": partner, "colour": colour,
             "one": one, "output_size": size, "order": np.array([2, 0, 1, 3], np.int64)}]


def one_at_a_time(record, names, n):
    row = {}
    for raw, name in names.items():
        value = record[raw][n]
        if not rows._undrawn(value):
            row[name] = rows._to_python(raw, value)
    return row


def test_batch_columns_equal_one_sample_at_a_time():
    record = records()[0]
    names = {"angle": "angle", "src": "crop", "partner": "partner", "colour": "colour", "one": "one",
             "output_size": "size"}
    plan = [{"op": "Anything", "enabled": True, "names": names}]
    got = rows.sample_rows(plan, [record], COUNT)
    for n in range(COUNT):
        row = got[n][0]
        assert row["applied"] is (float(record["batch_prob"][n]) > 0.5)
        expected = one_at_a_time(record, names, n)
        drawn = {k: v for k, v in row.items() if k not in ("step", "op", "enabled", "applied")}
        assert drawn == expected
        assert [type(v) for v in drawn.values()] == [type(v) for v in expected.values()]
        assert [type(x) for v in drawn.values() if isinstance(v, list) for x in v] == \
            [type(x) for v in expected.values() if isinstance(v, list) for x in v]
    assert "angle" not in got[1][0] and "crop" not in got[2][0] and "colour" not in got[5][0]
    assert got[0][0]["crop"][2] == float(record["src"][0][:, 0].max()) + 1.0  # +1 after widening to float64
    assert isinstance(got[0][0]["partner"], int)


def test_arrays_not_one_row_per_sample_are_read_one_sample_at_a_time():
    record = records()[0]
    plan = [{"op": "Anything", "enabled": True, "names": {"order": "order"}}]
    got = rows.sample_rows(plan, [record], 3)  # `order` (4 values) is no column of 3 samples
    assert [r[0]["order"] for r in got] == [2.0, 0.0, 1.0]
