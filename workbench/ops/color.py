"""Colour ops. Factors are multiplicative with 1 = unchanged (torchvision's conventions):
brightness scales values, contrast blends with the image's mean grey, saturation blends
with the image's greyscale, hue rotates by a fraction of a full turn.
"""
from .params import Range
from .spec import KorniaLowering, OpSpec

# Kornia's ColorJitter follows torchvision's conventions (its RandomBrightness is additive).
# One-factor ops leave `order` unset: with the other factors neutral the order cannot matter,
# and Kornia's fixed-order path runs every branch (about 1.5x slower, measured).


def _jitter(kind: str, param: str):
    return KorniaLowering("ColorJitter", lambda a: {kind: tuple(a[param])}, record={f"{kind}_factor": param})


_FACTOR = dict(lo=0.0, hi=10.0)

BRIGHTNESS = OpSpec(
    name="Brightness", family="color",
    doc="Multiply every value by a factor drawn from `factor` (1 = unchanged).",
    params=(Range("factor", "brightness factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("brightness", "factor"),
)

CONTRAST = OpSpec(
    name="Contrast", family="color",
    doc="Blend with the image's mean grey by a factor drawn from `factor` (1 = unchanged).",
    params=(Range("factor", "contrast factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("contrast", "factor"),
)

SATURATION = OpSpec(
    name="Saturation", family="color",
    doc="Blend with the image's greyscale by a factor drawn from `factor` (0 = grey, 1 = unchanged).",
    params=(Range("factor", "saturation factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("saturation", "factor"),
)

HUE = OpSpec(
    name="Hue", family="color",
    doc="Rotate hue by a shift drawn from `shift`, in fractions of a full turn (0 = unchanged).",
    params=(Range("shift", "hue shift range in turns", (-0.05, 0.05), lo=-0.5, hi=0.5),),
    kornia=_jitter("hue", "shift"),
)

COLOR_JITTER = OpSpec(
    name="ColorJitter", family="color",
    doc="Brightness, contrast, saturation and hue in that fixed order, each factor drawn per sample.",
    params=(
        Range("brightness", "brightness factor range", (0.8, 1.2), **_FACTOR),
        Range("contrast", "contrast factor range", (0.8, 1.2), **_FACTOR),
        Range("saturation", "saturation factor range", (0.8, 1.2), **_FACTOR),
        Range("hue", "hue shift range in turns", (-0.05, 0.05), lo=-0.5, hi=0.5),
    ),
    kornia=KorniaLowering(
        "ColorJitter",
        lambda a: {"brightness": tuple(a["brightness"]), "contrast": tuple(a["contrast"]),
                   "saturation": tuple(a["saturation"]), "hue": tuple(a["hue"]), "order": (0, 1, 2, 3)},
        record={"brightness_factor": "brightness", "contrast_factor": "contrast",
                "saturation_factor": "saturation", "hue_factor": "hue"},
    ),
)

GRAYSCALE = OpSpec(
    name="Grayscale", family="color", default_p=0.1,
    doc="Replace the image by its luma (ITU-R 601 weights), kept as three channels.",
    kornia=KorniaLowering("RandomGrayscale", lambda a: {}),
)

OPS = (BRIGHTNESS, CONTRAST, SATURATION, HUE, COLOR_JITTER, GRAYSCALE)
