"""Colour ops. Factors are multiplicative with 1 = unchanged (torchvision's conventions):
brightness scales values, contrast blends with the image's mean grey, saturation blends
with the image's greyscale, hue rotates by a fraction of a full turn.
"""
from ..codegen.literals import Name
from .dali_helpers import assign, uniform
from .params import Range
from .spec import DaliLowering, KorniaLowering, OpSpec, Parity

# Kornia's ColorJitter follows torchvision's conventions (its RandomBrightness is additive).
# One-factor ops leave `order` unset: with the other factors neutral the order cannot matter,
# and Kornia's fixed-order path runs every branch (about 1.5x slower, measured).


def _jitter(kind: str, param: str):
    return KorniaLowering("ColorJitter", lambda a: {kind: tuple(a[param])}, record={f"{kind}_factor": param})


_FACTOR = dict(lo=0.0, hi=10.0)


def _dali_color(kind: str, c, draw) -> list[str]:
    """DALI statements for one colour adjustment with the drawn factor `draw`."""
    if kind == "brightness":
        return [assign(c.x, "fn.brightness", {"brightness": draw})]
    if kind == "contrast":
        # torchvision's contrast blends with the mean of the BT.601 grey image; that mean is
        # the weighted sum of the channel means (and works on uint8 and float alike).
        rgb, mean = c.var("rgb_mean"), c.var("mean")
        return [f"{rgb} = fn.reductions.mean({c.x}, axes=(0, 1))",
                f"{mean} = 0.299 * {rgb}[0] + 0.587 * {rgb}[1] + 0.114 * {rgb}[2]",
                assign(c.x, "fn.contrast", {"contrast": draw, "contrast_center": mean})]
    if kind == "saturation":
        return [assign(c.x, "fn.saturation", {"saturation": draw})]
    return [assign(c.x, "fn.hue", {"hue": Name(f"{draw} * 360.0")})]  # turns -> degrees


_HUE_NOTE = ("fn.hue is not the HSV hue shift of Kornia and torchvision: equal at 0, measured on "
             "the sample photos 2.6/255 mean abs error at 0.02 turns and about 10/255 at 0.1")


def _dali_single(kind: str, param: str, note: str = "") -> DaliLowering:
    return DaliLowering(draws=lambda a: {param: uniform(*a[param])},
                        apply=lambda a, c, d: _dali_color(kind, c, d[param]), note=note, mirror_invariant=True)

BRIGHTNESS = OpSpec(
    name="Brightness", family="color", parity=Parity(border=0, params={"factor": [1.3, 1.3]}),
    doc="Multiply every value by a factor drawn from `factor` (1 = unchanged).",
    params=(Range("factor", "brightness factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("brightness", "factor"),
    dali=_dali_single("brightness", "factor"),
)

CONTRAST = OpSpec(
    name="Contrast", family="color", parity=Parity(border=0, params={"factor": [0.6, 0.6]}),
    doc="Blend with the image's mean grey by a factor drawn from `factor` (1 = unchanged).",
    params=(Range("factor", "contrast factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("contrast", "factor"),
    dali=_dali_single("contrast", "factor"),
)

SATURATION = OpSpec(
    name="Saturation", family="color", parity=Parity(border=0, params={"factor": [1.4, 1.4]}),
    doc="Blend with the image's greyscale by a factor drawn from `factor` (0 = grey, 1 = unchanged).",
    params=(Range("factor", "saturation factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("saturation", "factor"),
    dali=_dali_single("saturation", "factor"),
)

HUE = OpSpec(
    name="Hue", family="color",
    # Not a tolerance to hide a bug: DALI only approximates hue shifts (see _HUE_NOTE).
    parity=Parity(border=0, mae=4 / 255, psnr=30.0, params={"shift": [0.02, 0.02]}),
    doc="Rotate hue by a shift drawn from `shift`, in fractions of a full turn (0 = unchanged).",
    params=(Range("shift", "hue shift range in turns", (-0.05, 0.05), lo=-0.5, hi=0.5),),
    kornia=_jitter("hue", "shift"),
    dali=_dali_single("hue", "shift", note=_HUE_NOTE),
)

COLOR_JITTER = OpSpec(
    name="ColorJitter", family="color",
    cost_hint="on Kornia it runs all four colour branches in a fixed order; when you need only some "
              "factors, the single-factor ops (Brightness, Contrast, Saturation, Hue) skip the rest.",
    parity=Parity(border=0, mae=4 / 255, psnr=30.0, params={"brightness": [1.2, 1.2], "contrast": [0.8, 0.8], "saturation": [1.3, 1.3], "hue": [0.01, 0.01]}),
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
    dali=DaliLowering(
        draws=lambda a: {k: uniform(*a[k]) for k in ("brightness", "contrast", "saturation", "hue")},
        apply=lambda a, c, d: [line for k in ("brightness", "contrast", "saturation", "hue")
                               for line in _dali_color(k, c, d[k])],
        note="hue as in Hue", mirror_invariant=True,
    ),
)

GRAYSCALE = OpSpec(
    name="Grayscale", family="color", default_p=0.1, parity=Parity(border=0),
    doc="Replace the image by its luma (ITU-R 601 weights), kept as three channels.",
    kornia=KorniaLowering("RandomGrayscale", lambda a: {}),
    # Saturation 0 is the BT.601 luma in all three channels; the coin switches it per sample.
    dali=DaliLowering(gate="arg", mirror_invariant=True, apply=lambda a, c, d: [
        assign(c.x, "fn.saturation", {"saturation": Name(f"1.0 - {c.applied}")})]),
)

OPS = (BRIGHTNESS, CONTRAST, SATURATION, HUE, COLOR_JITTER, GRAYSCALE)
