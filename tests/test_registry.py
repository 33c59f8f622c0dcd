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
        assert p.doc and p.ui in {"slider", "range_slider", "size", "floats", "dropdown", "checkbox", "op_ranges",
                                  "sides"}
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
    assert "ElasticTransform" in wb.list_ops(backend="kornia")
    assert "ElasticTransform" in wb.list_ops(backend="dali")  # on its GPU: supports("dali", "cpu") says no
    assert not get_op("ElasticTransform").supports("dali", "cpu") and get_op("ElasticTransform").supports("dali")
    assert wb.list_ops(backend="none") == []


def test_unknown_op_suggests_close_names():
    with pytest.raises(wb.ChainError, match=r"unknown op 'Rotat'.*did you mean Rotate"):
        get_op("Rotat")


def test_size_changing_ops_always_apply():
    for op in ("RandomResizedCrop", "Resize", "CenterCrop"):
        assert get_op(op).always_applies and get_op(op).fixes_size
    assert not get_op("Rotate").fixes_size


def test_random_parameters_fit_the_images_tests_run_on():
    """Random chains (the export and parity tests draw them) must run on 96x128 photos: a drawn
    pixel size stays near the images' (Number.sample_hi), never one that needs gigabytes (a
    SmallestMaxSize of 4976 px did) or more pixels than the images have (an op's min_input)."""
    from workbench.backends import check_sizes

    rng = np.random.default_rng(17)
    image = np.zeros((96, 128, 3), np.uint8)
    for op in wb.list_ops():
        spec = get_op(op)
        if spec.is_group or spec.square_input:
            continue
        for _ in range(30):
            params = {p.name: p.random(rng) for p in spec.params}
            chain = wb.Chain.from_dict({"steps": [{"op": op, "params": params}]})
            check_sizes(chain, [image])  # raises InputError when the draw does not fit
            for p in spec.params:
                if getattr(p, "sample_hi", None) is not None:  # (a Span's draw is a pair)
                    assert max(np.atleast_1d(params[p.name])) <= p.sample_hi
    assert get_op("SmallestMaxSize").param("max_size").hi == 8192  # users may still ask for big sizes


def test_no_dali_draw_takes_the_name_of_the_steps_input_size():
    """A step's DALI variables share one prefix: a draw named `_height` became the variable holding the
    input's height and silently moved RandomSizedCrop's windows (caught by parity). The exporter refuses
    such a name; no op has one."""
    from workbench.codegen.dali import SIZE_NAMES

    for name in wb.list_ops(backend="dali"):
        spec = get_op(name)
        if spec.dali.draws is None:
            continue
        drawn = spec.dali.draws(spec.validate_params("test", {}))
        assert not {key.lstrip("_") for key in drawn} & set(SIZE_NAMES), name
