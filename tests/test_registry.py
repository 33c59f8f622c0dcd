"""The op registry is complete, consistent, and its defaults are valid."""
import numpy as np
import pytest

import workbench as wb
from workbench.ops import FAMILIES, REGISTRY, get_op

REQUIRED = ["HorizontalFlip", "VerticalFlip", "Rotate", "Affine", "RandomResizedCrop", "Resize", "CenterCrop",
            "Brightness", "Contrast", "Saturation", "Hue", "ColorJitter", "Grayscale", "GaussianBlur", "Erase",
            "Normalize"]


def test_required_ops_registered_in_catalog_order():
    assert set(REQUIRED) <= set(wb.list_ops())
    assert wb.list_ops() == list(REGISTRY)


def test_design_md_parameter_names():
    assert [p.name for p in get_op("Rotate").params][:1] == ["degrees"]
    assert {"size", "scale", "ratio"} <= {p.name for p in get_op("RandomResizedCrop").params}
    for op in ("Brightness", "Contrast", "Saturation"):
        assert [p.name for p in get_op(op).params] == ["factor"]
    assert [p.name for p in get_op("GaussianBlur").params][0] == "sigma"
    assert [p.name for p in get_op("Normalize").params] == ["mean", "std"]
    assert [p.name for p in get_op("Resize").params][0] == "size"
    assert [p.name for p in get_op("CenterCrop").params] == ["size"]


@pytest.mark.parametrize("op", list(REGISTRY))
def test_spec_is_complete(op):
    spec = get_op(op)
    assert spec.family in FAMILIES
    assert spec.doc and spec.doc.endswith(".")
    assert len(spec.backends) >= 2 and all(spec.supports(b) for b in spec.backends) and not spec.supports("nope")
    assert 0.0 <= spec.default_p <= 1.0
    for p in spec.params:
        assert p.doc and p.ui in {"slider", "range_slider", "size", "floats", "dropdown", "checkbox", "op_ranges"}
    # Defaults validate, and validation returns them unchanged.
    defaults = spec.defaults()
    assert spec.validate_params("t", defaults) == defaults
    # Random values validate too (property used by the round-trip test).
    rng = np.random.default_rng(0)
    for _ in range(20):
        values = {p.name: p.random(rng) for p in spec.params}
        assert spec.validate_params("t", values) == values


def test_list_ops_filters():
    assert wb.list_ops(family="normalize") == ["Normalize"]
    assert set(wb.list_ops(family="geometric")) >= {"Rotate", "Resize", "HorizontalFlip"}
    assert wb.list_ops(backend="kornia") == [n for n in wb.list_ops() if get_op(n).kornia is not None]
    assert "GridMask" in wb.list_ops(backend="dali") and "GridMask" not in wb.list_ops(backend="kornia")
    assert wb.list_ops(backend="none") == []


def test_unknown_op_suggests_close_names():
    with pytest.raises(wb.ChainError, match=r"unknown op 'Rotat'.*did you mean Rotate"):
        get_op("Rotat")


def test_size_changing_ops_always_apply():
    for op in ("RandomResizedCrop", "Resize", "CenterCrop"):
        assert get_op(op).always_applies and get_op(op).fixes_size
    assert not get_op("Rotate").fixes_size
