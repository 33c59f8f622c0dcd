"""Parameter controls: each slider's span, step and precision come from the op's spec; drags leave no
float noise in the chain or the export; exact numbers can be typed, past the slider's span up to the
valid range; a refused value is named and the control shows what the step keeps."""
import pytest

import workbench as wb
from workbench.ops import REGISTRY
from workbench.ops.params import Number, Range
from workbench.ui.controls import control_for, decimals, nice_step, slider_span, step_of

from conftest import said


@pytest.fixture
def app(small_images):
    return wb.Workbench(images=small_images[:1], debounce_s=0, draws=1, cell=48)


def controls(app, index):
    return app.steps_box.children[index].step_controls


def test_spans_and_steps_fit_each_parameter():
    rotate = wb.get_op("Rotate").param("degrees")
    assert slider_span(rotate) == (-90.0, 90.0) and step_of(rotate) == 1.0  # typed values still reach +-180
    assert step_of(wb.get_op("RandomResizedCrop").param("scale")) == 0.005
    jitter = wb.get_op("ColorJitter").param("brightness")
    assert slider_span(jitter) == (0.0, 3.0) and step_of(jitter) == 0.02  # handles no longer crowd at the left
    assert step_of(wb.get_op("MedianBlur").param("kernel_size")) == 2.0  # odd sizes
    assert step_of(wb.get_op("Posterize").param("bits")) == 1.0


@pytest.mark.parametrize("op", sorted(REGISTRY))
def test_every_numeric_parameter_gets_a_sane_slider(op):
    spec = wb.get_op(op)
    for param in spec.params:
        if not isinstance(param, (Range, Number)):
            continue
        lo, hi = slider_span(param)
        step = step_of(param)
        assert param.lo <= lo < hi <= param.hi, f"{op}.{param.name}: slider {lo, hi} outside [{param.lo}, {param.hi}]"
        default = spec.defaults()[param.name]
        values = default if isinstance(default, list) else [default]
        assert all(lo <= v <= hi for v in values), f"{op}.{param.name}: default {default} outside the slider"
        assert 50 <= (hi - lo) / step <= 1000 or getattr(param, "integer", False), f"{op}.{param.name}: step {step}"
        row = control_for(param, default, lambda n, v: True)
        assert len(row.entries) == len(values) and [e.value for e in row.entries] == values


def test_a_drag_leaves_no_float_noise_in_the_chain_or_the_export(app):
    degrees = controls(app, 2)["degrees"]
    degrees.value = (-15.0, 66.00000000000003)  # float noise of a slider's arithmetic
    assert app.chain.steps[2].params["degrees"] == [-15.0, 66.0]
    assert [e.value for e in controls(app, 2)["entries"]["degrees"]] == [-15.0, 66.0]
    source = app.chain.export("kornia")
    assert "66.0" in source and "66.00000000000003" not in source
    scale = controls(app, 0)["scale"]
    scale.value = (0.30000000000000004, 0.9)
    assert app.chain.steps[0].params["scale"] == [0.3, 0.9]


def test_exact_numbers_are_typed_past_the_slider_up_to_the_valid_range(app):
    low, high = controls(app, 2)["entries"]["degrees"]
    slider = controls(app, 2)["degrees"]
    high.value = 135.0
    assert app.chain.steps[2].params["degrees"] == [-20.0, 135.0]
    assert slider.max == 135.0 and slider.value == (-20.0, 135.0)  # the slider widens to show it
    high.value = 500.0  # outside [-180, 180]: named, and the box shows what the step keeps
    assert "must lie within [-180.0, 180.0]" in said(app)
    assert app.chain.steps[2].params["degrees"] == [-20.0, 135.0] and high.value == 135.0
    low.value = 150.0  # lo > hi
    assert "has lo > hi" in said(app) and low.value == -20.0
    low.value = -0.123  # typed values are kept as typed, not rounded to the slider's step
    assert app.chain.steps[2].params["degrees"] == [-0.123, 135.0] and said(app) == ""


def test_single_numbers_and_whole_numbers(small_images):
    chain = wb.Chain(seed=1).add("ElasticTransform").add("MedianBlur")
    app = wb.Workbench(images=small_images[:1], chain=chain, debounce_s=0, draws=1, cell=48)
    alpha = controls(app, 0)["alpha"]
    assert (alpha.min, alpha.max, alpha.step, alpha.readout) == (0.0, 200.0, 1.0, False)
    controls(app, 0)["entries"]["alpha"][0].value = 600.0
    assert app.chain.steps[0].params["alpha"] == 600.0 and alpha.max == 600.0
    kernel = controls(app, 1)["kernel_size"]
    assert type(kernel).__name__ == "IntRangeSlider" and kernel.step == 2
    kernel.value = (3, 5)
    assert app.chain.steps[1].params["kernel_size"] == [3, 5]
    controls(app, 1)["entries"]["kernel_size"][1].value = 6  # even: refused with the reason
    assert "must be odd integers" in said(app) and app.chain.steps[1].params["kernel_size"] == [3, 5]


def test_nice_steps_and_their_decimals():
    assert [nice_step(s) for s in (360, 20, 2, 0.5)] == [2.0, 0.1, 0.01, 0.002]
    assert [decimals(s) for s in (2.0, 0.1, 0.01, 0.002)] == [0, 1, 2, 3]
    assert f"{round(0.1 + 0.2, decimals(0.01))}" == "0.3"
