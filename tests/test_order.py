"""Where a new op goes by default, and the orders that compute on normalized values."""
from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.order import insertion_point, order_warnings


def chain(*ops: str) -> wb.Chain:
    c = wb.Chain(seed=1)
    for op in ops:
        c.add(op)
    return c


@pytest.mark.parametrize("ops, new, at", [
    (("RandomResizedCrop", "HorizontalFlip", "Normalize"), "ColorJitter", 2),  # before Normalize
    (("Rotate", "Normalize", "MixUp"), "GaussianBlur", 1),
    (("Rotate", "MixUp"), "Brightness", 1),  # before batch mixing
    (("Rotate", "Normalize", "MixUp"), "Normalize", 2),  # a second Normalize: before the mixing
    (("Rotate", "Normalize", "MixUp"), "CutMix", 3),  # batch mixing closes the chain
    (("Rotate", "HorizontalFlip"), "Erase", 2),  # nothing closes it: at the end
    ((), "Rotate", 0),
])
def test_new_ops_go_before_normalize_and_batch_mixing(ops, new, at):
    assert insertion_point(chain(*ops).steps, new) == at


def test_a_pixel_value_op_after_normalize_is_named_with_the_fix():
    c = chain("Rotate", "Normalize", "ColorJitter", "HorizontalFlip", "MixUp")
    assert order_warnings(c.steps) == ["step 3 (ColorJitter) comes after Normalize (step 2): it expects pixel values "
                                       "in [0, 1] and gets normalized ones; move it before step 2"]
    assert order_warnings(chain("ColorJitter", "Normalize", "Rotate", "MixUp").steps) == []
    c.steps[2].enabled = False  # a disabled step computes nothing
    assert order_warnings(c.steps) == []
    grouped = chain("Normalize").add("OneOf", steps=[wb.Step.create("Rotate"), wb.Step.create("GaussianBlur")])
    assert order_warnings(grouped.steps)[0].startswith("step 2 (OneOf) comes after Normalize (step 1)")


def test_the_preview_undoes_the_last_normalize_even_before_batch_mixing():
    # MixUp after Normalize (where it belongs) keeps the normalized scale: the tile must show colours.
    c = wb.Chain(seed=1).add("Normalize", mean=[0.5] * 3, std=[0.25] * 3).add("MixUp", p=0.0)
    shown = wb.to_display(c, np.zeros((1, 1, 3), np.float32))
    assert shown[0, 0].tolist() == [128, 128, 128]
