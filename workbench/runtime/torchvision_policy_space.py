"""torchvision's augmentation spaces for its policies (v2.RandAugment, v2.TrivialAugmentWide,
v2.AutoAugment): which ops each draws from, and the magnitude each op gets at a bin, in the units
the workbench reports (ops/policies_torchvision.py, the backends' runs and the exports all read
them here, so that every backend draws what torchvision draws).

torchvision tabulates an op's magnitudes as `torch.linspace(0, top, bins)` in float32 (posterize as
8 - round(bin / ((bins - 1) / 4)), 6 for TrivialAugmentWide), draws the sign of a signed op at a coin
flip, and hands the value to the op: a shear factor m becomes an angle atan(m), a translation is cut
to whole pixels with int(), and brightness, color, contrast and sharpness use the factor 1 + m. The
reported magnitude is what the op receives: shears in degrees, translations in pixels, factors,
posterize bits, the solarize threshold as a fraction of the maximum, NaN for the ops without one.

Example (RandAugment's default magnitude 9 of 31 bins on a 224-pixel-wide image):
    >>> tv_space_reported("rand", "translate_x", 9, 31, 224, 224, negate=True)
    -30.0
    >>> round(tv_space_reported("rand", "shear_x", 9, 31, 224, 224), 4)
    5.1428
    >>> tv_space_reported("rand", "posterize", 9, 31, 1, 1)
    7.0
"""
import math

import numpy as np

# The ops of RandAugment and TrivialAugmentWide, in torchvision's order (they are drawn by position).
TV_SPACE_OPS = ("identity", "shear_x", "shear_y", "translate_x", "translate_y", "rotate", "brightness", "color",
                "contrast", "sharpness", "posterize", "solarize", "auto_contrast", "equalize")
# Ops drawn with a random sign.
TV_SPACE_SIGNED = ("shear_x", "shear_y", "translate_x", "translate_y", "rotate", "brightness", "color", "contrast",
                   "sharpness")
# Each op's largest magnitude: "rand" is RandAugment's and AutoAugment's space, "wide" TrivialAugmentWide's.
# A translation's top is a share of the image's width (translate_x) or height, or whole pixels ("wide").
TV_SPACE_TOPS = {
    "rand": {"shear_x": 0.3, "shear_y": 0.3, "translate_x": 150.0 / 331.0, "translate_y": 150.0 / 331.0,
             "rotate": 30.0, "brightness": 0.9, "color": 0.9, "contrast": 0.9, "sharpness": 0.9},
    "wide": {"shear_x": 0.99, "shear_y": 0.99, "translate_x": 32.0, "translate_y": 32.0, "rotate": 135.0,
             "brightness": 0.99, "color": 0.99, "contrast": 0.99, "sharpness": 0.99},
}
# Posterize keeps 8 - round(bin / ((bins - 1) / span)) bits.
TV_SPACE_POSTERIZE_SPAN = {"rand": 4.0, "wide": 6.0}
TV_SPACE_FACTORS = ("brightness", "color", "contrast", "sharpness")


def tv_space_linspace_at(start, end, steps, index):
    """torch.linspace(start, end, steps)[index] in float32 as torch's scalar loop computes it on the CPU:
    the float32 step (end - start) / (steps - 1), times the index added to start in the first half, and
    times the steps left taken from end in the second, each in one fused multiply-add (one rounding).
    (tests/test_torchvision_policies.py compares it with torch.linspace.) It matters where int() cuts a
    translation: torchvision's TrivialAugmentWide shifts by int(15.999999) = 15 pixels at bin 15, not 16.

    Example:
        >>> float(tv_space_linspace_at(0.0, 0.9, 31, 9)), float(tv_space_linspace_at(0.0, 32.0, 31, 15))
        (0.26999998092651367, 15.999999046325684)
    """
    start, end = np.float32(start), np.float32(end)
    if steps == 1:
        return start
    step = np.float64(np.float32((end - start) / np.float32(steps - 1)))
    # float64 holds the float32 step times a whole index exactly: one rounding, as a fused multiply-add.
    if index < steps // 2:
        return np.float32(np.float64(start) + step * index)
    return np.float32(np.float64(end) - step * (steps - index - 1))


def tv_space_value(space, name, index, bins, height, width):
    """The unsigned magnitude torchvision tabulates for op `name` at bin `index` of `bins` in `space`
    ("rand" or "wide") on an image of height x width, as a Python float in torchvision's own units
    (shear factor, pixels before int(), factor - 1, bits, threshold); None for ops without one."""
    if name == "posterize":
        return float(8 - round(float(np.float32(index / ((bins - 1) / TV_SPACE_POSTERIZE_SPAN[space])))))
    if name == "solarize":
        return float(tv_space_linspace_at(1.0, 0.0, bins, index))
    top = TV_SPACE_TOPS[space].get(name)
    if top is None:
        return None
    if space == "rand" and name == "translate_x":
        top = top * width
    elif space == "rand" and name == "translate_y":
        top = top * height
    return float(tv_space_linspace_at(0.0, top, bins, index))


def tv_space_reported(space, name, index, bins, height, width, negate=False):
    """The magnitude op `name` receives at bin `index` (see tv_space_value), negated where `negate` and
    the op is signed, in the reported units: shears in degrees (atan of the factor), translations in
    whole pixels (int(), toward zero), 1 + m for the factors, bits, the threshold; NaN without one."""
    value = tv_space_value(space, name, index, bins, height, width)
    if value is None:
        return math.nan
    if negate and name in TV_SPACE_SIGNED:
        value = -value
    if name in ("shear_x", "shear_y"):
        return math.degrees(math.atan(value))
    if name in ("translate_x", "translate_y"):
        return float(int(value))
    if name in TV_SPACE_FACTORS:
        return 1.0 + value
    return value


def tv_space_sub_policies(sub_policies):
    """AutoAugment's sub-policies as plain tuples of (op name, probability, bin or None) stages.

    Example:
        >>> tv_space_sub_policies([[["rotate", 0.6, 9], ["equalize", 1, None]]])
        ((('rotate', 0.6, 9), ('equalize', 1.0, None)),)
    """
    return tuple(tuple((str(name), float(prob), None if b is None else int(b)) for name, prob, b in sub)
                 for sub in sub_policies)
