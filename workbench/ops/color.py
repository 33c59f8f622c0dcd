"""Colour ops. Factors are multiplicative with 1 = unchanged (torchvision's conventions):
brightness scales values, contrast blends with the image's mean grey, saturation blends
with the image's greyscale, hue rotates by a fraction of a full turn.

Value regimes: Kornia works on float images in [0, 1]; DALI and Albumentations on 0-255
uint8 until a Normalize and on float after it (DALI's `ctx.scale` says which). Every DALI
lowering below is written for both regimes: on uint8 the value maps compute in float and
round back once (`fn.cast` rounds half away from zero), so they differ from Kornia's
unrounded float output by at most half a level; after a Normalize they clamp to [0, 1]
first, as Kornia does.
"""
import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..literals import Name
from ..errors import ChainError, show
from .dali_helpers import RandomOp, uniform
from .params import Choice, Range, _number
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, Inverse
from . import kornia_reading as kr
from . import torchvision_reading as tv

# Kornia's ColorJitter follows torchvision's conventions (its RandomBrightness is additive).
# One-factor ops leave `order` unset: with the other factors neutral the order cannot matter,
# and Kornia's fixed-order path runs every branch (about 1.5x slower, measured).


@dataclass(frozen=True)
class IntRange(Range):
    """A [lo, hi] pair of integers; each sample draws one of lo..hi.

    Example:
        >>> IntRange("bits", "bits kept", (4, 8), lo=1, hi=8).validate("Posterize", [2, 3.0])
        [2, 3]
    """

    integer: bool = True

    def validate(self, where: str, value) -> list[int]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
            raise ChainError(f"{where}: parameter '{self.name}' must be a pair of integers [lo, hi] within "
                             f"[{self.lo}, {self.hi}], got {show(value)}")
        lo, hi = (_number(where, self.name, v, integer=True) for v in value)
        if lo > hi:
            raise ChainError(f"{where}: parameter '{self.name}' has lo > hi ({lo} > {hi}); write it as [{hi}, {lo}]")
        if lo < self.lo or hi > self.hi:
            raise ChainError(f"{where}: parameter '{self.name}' must lie within [{self.lo}, {self.hi}], "
                             f"got [{lo}, {hi}]")
        return [lo, hi]

    def random(self, rng: np.random.Generator) -> list[int]:
        lo, hi = sorted(int(v) for v in rng.integers(int(self.lo), int(self.hi) + 1, size=2))
        return [lo, hi]

    def describe(self) -> str:
        return f"{self.name}: {self.doc} (integer range [lo, hi] within [{int(self.lo)}, {int(self.hi)}])"


def _jitter(kind: str, param: str):
    return KorniaLowering("ColorJitter", lambda a: {kind: tuple(a[param])}, record={f"{kind}_factor": param})


_FACTOR = dict(lo=0.0, hi=10.0, slider=(0.0, 3.0))  # factors past 3 are typed
_KINDS = ("brightness", "contrast", "saturation", "hue")
_NEUTRAL = {"brightness": (1.0, 1.0), "contrast": (1.0, 1.0), "saturation": (1.0, 1.0), "hue": (0.0, 0.0)}


def _uint8(c) -> bool:
    """True while DALI's images are 0-255 uint8 (before a Normalize)."""
    return c.scale != 1.0


def dali_hsv_shift(c, hue: str, saturation: str | None = None, value: str | None = None) -> list[str]:
    """The DALI statement that rotates the hue of the images `c.x` by `hue` sextants (1 = 60 degrees;
    any DALI expression: a per-sample draw times a constant) and, when given, adds `saturation` and
    `value` (expressions in [0, 1] units) to HSV saturation and value, clamped to [0, 1]: Kornia's
    exact HSV shift (runtime/dali_ops/color.py's colour_hsv_shift).

    Example:
        >>> from types import SimpleNamespace
        >>> ctx = SimpleNamespace(x="images", scale=255.0, var=lambda n: f"s1_{n}")
        >>> dali_hsv_shift(ctx, "s1_shift * 6.0")
        ['images = colour_hsv_shift(images, s1_shift * 6.0, uint8=True)']
    """
    extra = "".join(f", {k}={v}" for k, v in (("saturation", saturation), ("value", value)) if v is not None)
    return [f"{c.x} = colour_hsv_shift({c.x}, {hue}, uint8={_uint8(c)}{extra})"]


def _dali_color(kind: str, c, draw) -> list[str]:
    """The DALI statement of one colour adjustment with the drawn factor `draw`. After a Normalize
    (float images) the input and the result are clamped to [0, 1], as Kornia clamps them."""
    if kind == "hue":
        # fn.hue is a linear colour-twist matrix, not the HSV rotation: measured 2.9/255 mean abs error from
        # Kornia at 0.03 turns, 8.3/255 at 0.1 on the sample photos; the exact shift is written out.
        return dali_hsv_shift(c, Name(f"{draw} * 6.0"))  # turns -> sextants
    # colour_brightness, colour_contrast or colour_saturation (runtime/dali_ops/color.py)
    return [f"{c.x} = colour_{kind}({c.x}, {draw}, uint8={_uint8(c)})"]


def _dali_single(kind: str, param: str, note: str = "") -> DaliLowering:
    return DaliLowering(draws=lambda a: {param: uniform(*a[param])},
                        apply=lambda a, c, d: _dali_color(kind, c, d[param]), note=note, mirror_invariant=True)


def _jitter_ranges(t) -> dict[str, tuple[float, float]]:
    return {k: tuple(float(v) for v in getattr(t, k)) for k in _KINDS}


def _moved(ranges) -> list[str]:
    """The factors of an A.ColorJitter that are not neutral."""
    return [k for k in _KINDS if ranges[k] != _NEUTRAL[k]]


def _from_jitter_single(kind: str, param: str):
    """A.ColorJitter with only `kind` moved is this single-factor op; anything else is not."""
    def inverse(t):
        ranges = _jitter_ranges(t)
        return {param: list(ranges[kind])} if _moved(ranges) == [kind] else None
    return inverse


def _from_jitter_all(t):
    """ColorJitter takes every A.ColorJitter that the single-factor ops do not, in a random order per
    image as A applies them."""
    ranges = _jitter_ranges(t)
    return None if len(_moved(ranges)) == 1 else {**{k: list(ranges[k]) for k in _KINDS}, "order": "random"}


def _wb_jitter(built, notes):
    """The export's WbColorJitter (ColorJitter with order 'random'), from its arguments."""
    return {**{kind: [float(v) for v in kr.as_list(kr.plain(built[kind]))] for kind in _KINDS}, "order": "random"}


def _dali_jitter(a, c, d):
    """The four adjustments in the fixed order, or in each sample's drawn order (runtime/dali_ops/
    color.py's jitter_order and colour_jitter_in_order), which it reports."""
    if a["order"] == "fixed":
        return [line for k in _KINDS for line in _dali_color(k, c, d[k])]
    v = c.var
    keys = ", ".join(str(d[f"_key{kind}"]) for kind in range(4))
    return [f"{v('ranks')}, {v('order')} = jitter_order([{keys}])",
            f"{c.x} = colour_jitter_in_order({c.x}, {d['brightness']}, {d['contrast']}, {d['saturation']}, "
            f"{d['hue']}, {v('ranks')}, uint8={_uint8(c)})"]


_ALB_JITTER_NOTE = ("on uint8, A.ColorJitter rounds down to a level after each adjustment (at most 1/255 from "
                    "Kornia's floats, 0.4/255 on average) and takes the contrast centre from OpenCV's rounded grey")
_ALB_HUE_NOTE = ("on uint8, A.ColorJitter shifts hue in OpenCV's 8-bit HSV: in whole 2-degree steps rounded down "
                 "(0.02 turns moves 6 degrees, not 7.2), saturation and value rounded; measured on the sample "
                 "photos 0.37/255 mean abs error from Kornia at 0.01 turns, 0.24/255 at 0.03, 0.16/255 at 0.1")


def _alb_single(kind: str, param: str, note: str = _ALB_JITTER_NOTE) -> AlbumentationsLowering:
    # The other three factors neutral: A.ColorJitter returns the image unchanged for those, so its
    # random order of the four adjustments cannot matter.
    return AlbumentationsLowering("ColorJitter", lambda a: {**_NEUTRAL, kind: tuple(a[param])}, record={kind: param},
                                  from_transform=_from_jitter_single(kind, param), note=note)



def _tv_jitter_alone(kind: str):
    """v2.ColorJitter with only `kind` given is that kind's op (Brightness, Contrast, ...)."""
    def read(t, notes):
        ranges, moved = tv.jitter_ranges(t)
        _, param, _ = tv.JITTER_KINDS[kind]
        return {param: ranges[kind]} if moved == [kind] else None

    return read


def _tv_jitter_all(t, notes):
    """v2.ColorJitter with several kinds (or none) given: in a random order per image, as torchvision."""
    ranges, moved = tv.jitter_ranges(t)
    if len(moved) == 1:
        return None
    return {**ranges, "order": "random"}


# K.ColorJitter's kinds: (kind, the op it is alone, its parameter, the range centre, the lowest bound).
_K_JITTER = (("brightness", "Brightness", "factor", 1.0, 0.0), ("contrast", "Contrast", "factor", 1.0, 0.0),
             ("saturation", "Saturation", "factor", 1.0, 0.0), ("hue", "Hue", "shift", 0.0, -0.5))


def _k_jitter(m) -> tuple[dict, list[str], Any]:
    """(each kind's range, the kinds given, the fixed order or None) of a K.ColorJitter."""
    g = kr.gen(m)
    ranges = {kind: kr.bound(getattr(g, kind), center, low) for kind, _, _, center, low in _K_JITTER}
    # A kind is given when it was passed (the constructor's default is the number 0).
    given = [kind for kind, *_ in _K_JITTER if not (isinstance(getattr(g, kind), numbers.Real)
                                                    and float(getattr(g, kind)) == 0.0)]
    return ranges, given, getattr(m, "_fixed_order", None)


def _k_jitter_alone(kind: str):
    """K.ColorJitter with only `kind` given (and no fixed order) is that kind's op."""
    def read(m, notes):
        ranges, given, order = _k_jitter(m)
        param = next(p for k, _, p, *_ in _K_JITTER if k == kind)
        return {param: ranges[kind]} if given == [kind] and order is None else None

    return read


def _k_jitter_all(m, notes):
    """K.ColorJitter with several kinds (or none) given, or a fixed order."""
    ranges, given, order = _k_jitter(m)
    if len(given) == 1 and order is None:
        return None
    if order not in (None, (0, 1, 2, 3)):
        raise ValueError(f"order={order}: ColorJitter applies brightness, contrast, saturation, hue in that order "
                         "(order=(0, 1, 2, 3))")
    if order is None and len(given) > 1:
        notes.append("K.ColorJitter: draws one order of its adjustments per batch; ColorJitter with order 'random' "
                     "draws one per sample")
        return {**ranges, "order": "random"}
    return ranges


BRIGHTNESS = OpSpec(
    name="Brightness", family="color", parity=Parity(border=0, mae=0.5 / 255, psnr=50.0, params={"factor": [1.3, 1.3]}),
    from_kornia=Inverse("ColorJitter", _k_jitter_alone("brightness")),
    from_torchvision=Inverse("ColorJitter", _tv_jitter_alone("brightness")),
    doc="Multiply every value by a factor drawn from `factor` (1 = unchanged).",
    params=(Range("factor", "brightness factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("brightness", "factor"),
    dali=_dali_single("brightness", "factor"),
    albumentations=_alb_single("brightness", "factor"),
)

CONTRAST = OpSpec(
    name="Contrast", family="color", parity=Parity(border=0, mae=0.55 / 255, psnr=50.0, params={"factor": [0.6, 0.6]}),
    from_kornia=Inverse("ColorJitter", _k_jitter_alone("contrast")),
    from_torchvision=Inverse("ColorJitter", _tv_jitter_alone("contrast")),
    doc="Blend with the image's mean grey by a factor drawn from `factor` (1 = unchanged).",
    params=(Range("factor", "contrast factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("contrast", "factor"),
    dali=_dali_single("contrast", "factor"),
    albumentations=_alb_single("contrast", "factor"),
)

SATURATION = OpSpec(
    name="Saturation", family="color",
    from_kornia=Inverse("ColorJitter", _k_jitter_alone("saturation")),
    from_torchvision=Inverse("ColorJitter", _tv_jitter_alone("saturation")),
    parity=Parity(border=0, mae=0.15 / 255, psnr=60.0, params={"factor": [1.4, 1.4]}),
    doc="Blend with the image's greyscale by a factor drawn from `factor` (0 = grey, 1 = unchanged).",
    params=(Range("factor", "saturation factor range", (0.8, 1.2), **_FACTOR),),
    kornia=_jitter("saturation", "factor"),
    dali=_dali_single("saturation", "factor"),
    albumentations=_alb_single("saturation", "factor"),
)

HUE = OpSpec(
    name="Hue", family="color",
    from_kornia=Inverse("ColorJitter", _k_jitter_alone("hue")),
    from_torchvision=Inverse("ColorJitter", _tv_jitter_alone("hue")),
    # DALI writes out Kornia's HSV shift (dali_hsv_shift): measured 0.03/255 on the sample photos at
    # 0.01 to 0.5 turns (0.00 after a Normalize), 68 dB; before (fn.hue) 1.0/255 at 0.01, 2.9 at 0.03,
    # 8.3 at 0.1. Albumentations shifts hue in 8-bit HSV (see _ALB_HUE_NOTE): 0.37/255 at 0.01 turns,
    # 47.4 dB, down to 0.16/255 at 0.1 and -0.2 (tests/test_parity.py checks several shifts).
    parity=Parity(border=0, mae=0.45 / 255, psnr=46.0, params={"shift": [0.03, 0.03]}),
    doc="Rotate hue by a shift drawn from `shift`, in fractions of a full turn (0 = unchanged).",
    params=(Range("shift", "hue shift range in turns", (-0.05, 0.05), lo=-0.5, hi=0.5),),
    kornia=_jitter("hue", "shift"),
    dali=_dali_single("hue", "shift"),
    albumentations=_alb_single("hue", "shift", note=_ALB_HUE_NOTE),
)

COLOR_JITTER = OpSpec(
    name="ColorJitter", family="color",
    from_kornia=Inverse("ColorJitter", _k_jitter_all),
    from_torchvision=Inverse("ColorJitter", _tv_jitter_all),
    cost_hint="on Kornia it runs all four colour branches; when you need only some factors, the single-factor "
              "ops (Brightness, Contrast, Saturation, Hue) skip the rest. Order 'random' runs unfused on Kornia and "
              "four times the work on DALI.",
    # Albumentations' random order (measured 1.5 to 1.9/255 over seeds); DALI 0.36/255 (a level's rounding
    # after each factor; its hue was fn.hue before, 3.8/255 at 0.03 turns).
    parity=Parity(border=0, mae=2.2 / 255, psnr=36.0, params={"brightness": [1.2, 1.2], "contrast": [0.8, 0.8],
                                                             "saturation": [1.3, 1.3], "hue": [0.01, 0.01]}),
    doc="Brightness, contrast, saturation and hue, each factor drawn per sample, in that fixed order or (order "
        "'random', as torchvision's and Albumentations' ColorJitter) in an order drawn per sample, which is "
        "reported as order (the kinds by position: 0 brightness, 1 contrast, 2 saturation, 3 hue).",
    params=(
        Range("brightness", "brightness factor range", (0.8, 1.2), **_FACTOR),
        Range("contrast", "contrast factor range", (0.8, 1.2), **_FACTOR),
        Range("saturation", "saturation factor range", (0.8, 1.2), **_FACTOR),
        Range("hue", "hue shift range in turns", (-0.05, 0.05), lo=-0.5, hi=0.5),
        Choice("order", "the order of the four adjustments: fixed, or drawn per sample", "fixed",
               options=("fixed", "random")),
    ),
    kornia=KorniaLowering(
        "ColorJitter",
        lambda a: {"brightness": tuple(a["brightness"]), "contrast": tuple(a["contrast"]),
                   "saturation": tuple(a["saturation"]), "hue": tuple(a["hue"]),
                   **({"order": (0, 1, 2, 3)} if a["order"] == "fixed" else {})},
        record={"brightness_factor": "brightness", "contrast_factor": "contrast",
                "saturation_factor": "saturation", "hue_factor": "hue", "sample_order": "order"},
        local_variant="WbColorJitter", local_when=lambda a: a["order"] == "random", from_module=_wb_jitter,
    ),
    dali=DaliLowering(
        draws=lambda a: {**{k: uniform(*a[k]) for k in _KINDS},
                         **({f"_key{kind}": uniform(0.0, 1.0) for kind in range(4)} if a["order"] == "random" else {})},
        apply=_dali_jitter, reports=lambda a: ("order",) if a["order"] == "random" else (),
        mirror_invariant=True,
        note="order 'random' computes every adjustment at every position and keeps each sample's (four times "
             "the work of the fixed order)",
    ),
    albumentations=AlbumentationsLowering(
        "ColorJitter", lambda a: {k: tuple(a[k]) for k in _KINDS}, record={k: k for k in _KINDS},
        from_transform=_from_jitter_all,
        note="A.ColorJitter applies the four adjustments in a random order per image (order 'random'; no argument "
             "fixes it for order 'fixed'), rounding down after each; hue as in Hue. Measured on the sample photos "
             "with the parity factors: 1.5/255 mean abs error from Kornia in the fixed order, 1.5 to 3.3/255 per "
             "image across the 24 orders; A does not report the order it drew",
    ),
)

_GREY_METHODS = ("weighted_average", "average", "max", "desaturation")


def _dali_grayscale(a, c, d):
    """Grey by `method`, kept as three channels; the coin (`gate="arg"`) picks grey or the input."""
    if a["method"] == "weighted_average":
        # Saturation 0 is the BT.601 luma in all three channels; the coin switches it per sample.
        return [f"{c.x} = colour_luma_grey({c.x}, {c.applied})"]
    grey = {"average": "colour_grey_average", "max": "colour_grey_max",
            "desaturation": "colour_grey_desaturation"}[a["method"]]
    return [f"{c.x} = {grey}({c.x}, {c.applied}, uint8={_uint8(c)})"]


def _tv_grayscale(t, notes):
    """v2.RandomGrayscale and v2.Grayscale (p = 1): BT.601 luma, torchvision's weights."""
    if int(getattr(t, "num_output_channels", 3)) == 1:
        notes.append("v2.Grayscale(num_output_channels=1): the chain keeps three equal channels (the grey in each)")
    return {}


def _k_grayscale(m, notes):
    weights = getattr(m, "rgb_weights", None)
    if weights is not None and [round(w, 3) for w in kr.plain(weights)] != [0.299, 0.587, 0.114]:
        raise ValueError(f"rgb_weights={kr.plain(weights)}: Grayscale uses the BT.601 weights (0.299, 0.587, 0.114)")
    return {}


GRAYSCALE = OpSpec(
    name="Grayscale", family="color", default_p=0.1,
    from_kornia=Inverse("RandomGrayscale", _k_grayscale),
    from_torchvision=Inverse("RandomGrayscale", _tv_grayscale, also_imports=("Grayscale",)),
    # Measured on the 8 sample photos (MAE vs Kornia): weighted_average DALI 0.11/255, Albumentations
    # 0.06/255; average 0.08 and 0.13/255; max 0.00 and 0.00; desaturation 0.09 and 0.09/255
    # (Albumentations truncates the mean and the mid-range to a level, DALI rounds).
    parity=Parity(border=0, mae=0.15 / 255, psnr=57.0),
    doc="Replace the image by its grey, kept as three channels: by `method` the ITU-R 601 luma "
        "(weighted_average), the channel mean (average), the largest channel (max) or the mid-range (max + min) / 2 "
        "(desaturation).",
    params=(Choice("method", "how the grey is computed (Albumentations' ToGray methods)", "weighted_average",
                   options=_GREY_METHODS),),
    kornia=KorniaLowering("RandomGrayscaleMethod", lambda a: {"method": a["method"]}, local=True,
                          from_module=kr.arguments("method")),
    dali=DaliLowering(gate="arg", mirror_invariant=True, apply=_dali_grayscale),
    # OpenCV's RGB2GRAY: the same BT.601 weights, in fixed point, rounded; average and desaturation
    # are truncated to a level.
    albumentations=AlbumentationsLowering(
        "ToGray", lambda a: {"num_output_channels": 3, "method": a["method"]},
        from_transform=lambda t: _from_to_gray(t),
        note="methods 'average' and 'desaturation' truncate to a level where DALI rounds (measured 0.13 and "
             "0.09/255 mean abs error from Kornia's floats on the sample photos)"),
)


def _from_to_gray(t):
    if t.method not in _GREY_METHODS:
        raise ValueError(f"method={t.method!r} has no Kornia and DALI counterpart; Grayscale takes method "
                         f"{', '.join(repr(m) for m in _GREY_METHODS)}")
    if int(t.num_output_channels) != 3:
        raise ValueError(f"num_output_channels={t.num_output_channels} (Grayscale keeps 3 channels)")
    return {"method": str(t.method)}


# ----- value maps: invert, solarize, posterize, gamma -----------------------------------

def _dali_invert(a, c, d):
    return [f"{c.x} = colour_invert({c.x}, uint8={_uint8(c)})"]


def _k_invert(m, notes):
    if kr.plain(kr.flag(m, "max_val")) != 1.0:
        raise ValueError(f"max_val={kr.plain(kr.flag(m, 'max_val'))}: Invert computes 1 - x (max_val=1.0)")
    return {}


INVERT = OpSpec(
    name="Invert", family="color", default_p=0.5, parity=Parity(border=0, mae=1e-6, psnr=99.0),
    from_kornia=Inverse("RandomInvert", _k_invert),
    from_torchvision=Inverse("RandomInvert", lambda t, notes: {}),
    doc="Replace every value v by 1 - v in [0, 1] units (255 - v on 8-bit images); not clamped after a Normalize.",
    kornia=KorniaLowering("RandomInvert", lambda a: {"max_val": 1.0}),
    dali=DaliLowering(apply=_dali_invert, mirror_invariant=True),
    albumentations=AlbumentationsLowering("InvertImg", lambda a: {}, from_transform=lambda t: {}),
)


def _dali_solarize(a, c, d):
    return [f"{c.x} = colour_solarize({c.x}, {d['threshold']}, uint8={_uint8(c)})"]



def _tv_solarize(t, notes):
    # torchvision's threshold is in the image's own range: above 1 it is a uint8 level.
    threshold = float(t.threshold)
    if threshold > 1.0:
        notes.append(f"v2.RandomSolarize: threshold={threshold:g} is a uint8 level; imported as {threshold:g}/255 "
                     "for images in [0, 1]")
        threshold /= 255.0
    return {"threshold": [threshold, threshold]}


def _k_solarize(m, notes):
    additions = kr.sampler(m, "additions")
    if additions != [0.0, 0.0]:
        raise ValueError(f"additions={additions} shifts the values before solarizing (Kornia's default 0.1 does); "
                         "Solarize takes additions=0.0")
    return {"threshold": kr.sampler(m, "thresholds")}


SOLARIZE = OpSpec(
    name="Solarize", family="color", default_p=0.5,
    from_kornia=Inverse("RandomSolarize", _k_solarize),
    from_torchvision=Inverse("RandomSolarize", _tv_solarize),
    parity=Parity(border=0, mae=1e-6, psnr=99.0, params={"threshold": [0.5, 0.5]}),
    doc="Invert (v -> 1 - v) every value at or above a threshold drawn from `threshold`, in [0, 1] units "
        "(1 = unchanged); Kornia and DALI clamp to [0, 1] first.",
    params=(Range("threshold", "threshold range in [0, 1] units", (0.5, 0.5), lo=0.0, hi=1.0),),
    kornia=KorniaLowering("RandomSolarize", lambda a: {"thresholds": tuple(a["threshold"]), "additions": (0.0, 0.0)},
                          record={"thresholds": "threshold"}),
    dali=DaliLowering(draws=lambda a: {"threshold": uniform(*a["threshold"])}, apply=_dali_solarize,
                      mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "Solarize", lambda a: {"threshold_range": tuple(a["threshold"])}, record={"threshold": "threshold"},
        from_transform=lambda t: {"threshold": [float(v) for v in t.threshold_range]},
        note="after a Normalize it inverts without clamping to [0, 1] first"),
)


def _posterize_draw(a) -> RandomOp:
    """One of lo..hi, each as likely (Albumentations' randint)."""
    return RandomOp("fn.random.uniform", {"values": [float(b) for b in range(a["bits"][0], a["bits"][1] + 1)]})


def _dali_posterize(a, c, d):
    return [f"{c.x} = colour_posterize({c.x}, {d['bits']}, uint8={_uint8(c)})"]


def _k_posterize(m, notes):
    bits = kr.plain(kr.gen(m).bits_factor)
    lo, hi = (bits, 8.0) if not isinstance(bits, list) else bits
    # Posterize draws whole bits in [lo, hi]: its lowering is bits=(lo - 0.49, min(hi + 0.49, 8)).
    b_lo, b_hi = lo + 0.49, 8.0 if hi == 8.0 else hi - 0.49
    if abs(b_lo - round(b_lo)) > 1e-6 or abs(b_hi - round(b_hi)) > 1e-6:
        raise ValueError(f"bits=({lo:g}, {hi:g}) draws a real number of bits; Posterize draws whole bits in [lo, hi] "
                         "(as K.RandomPosterize(bits=(lo - 0.49, min(hi + 0.49, 8))))")
    return {"bits": [int(round(b_lo)), int(round(b_hi))]}


POSTERIZE = OpSpec(
    name="Posterize", family="color", default_p=0.5,
    from_kornia=Inverse("RandomPosterize", _k_posterize),
    from_torchvision=Inverse("RandomPosterize", lambda t, notes: {"bits": [int(t.bits), int(t.bits)]}),
    parity=Parity(border=0, mae=1e-6, psnr=99.0, params={"bits": [3, 3]}),
    doc="Keep the top b bits of each 8-bit value (at most 2**b levels per channel), b drawn from the integers "
        "in `bits` (8 = unchanged).",
    params=(IntRange("bits", "bits kept per channel", (4, 8), lo=1, hi=8),),
    # Kornia rounds a uniform draw (half to even): widening the range by 0.49 each side gives every
    # integer the same chance and cannot round past lo or hi; 8 gets half a chance, Kornia's bound.
    kornia=KorniaLowering("RandomPosterize",
                          lambda a: {"bits": (a["bits"][0] - 0.49, min(a["bits"][1] + 0.49, 8.0))},
                          record={"bits_factor": "bits"}),
    dali=DaliLowering(draws=lambda a: {"bits": _posterize_draw(a)}, apply=_dali_posterize, mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "Posterize", lambda a: {"num_bits": tuple(a["bits"])}, record={"num_bits": "bits"},
        from_transform=lambda t: _from_posterize(t),
        note="after a Normalize it rounds to 8-bit levels where Kornia and DALI truncate"),
)


def _from_posterize(t):
    bits = t.num_bits
    if isinstance(bits, list):
        raise ValueError("per-channel num_bits have no Posterize equivalent (one b for all channels)")
    return {"bits": [int(bits[0]), int(bits[1])]}


def _dali_gamma(a, c, d):
    return [f"{c.x} = colour_gamma({c.x}, {d['gamma']}, uint8={_uint8(c)})"]


def _k_gamma(m, notes):
    gain = kr.sampler(m, "gain_factor")
    if gain != [1.0, 1.0]:
        raise ValueError(f"gain={gain} scales the result; Gamma takes gain=(1.0, 1.0)")
    return {"gamma": kr.sampler(m, "gamma_factor")}


GAMMA = OpSpec(
    name="Gamma", family="color",
    from_kornia=Inverse("RandomGamma", _k_gamma),
    # Albumentations' 8-bit table truncates where Kornia keeps floats: 0.5/255 mean abs error.
    parity=Parity(border=0, mae=0.55 / 255, psnr=51.0, params={"gamma": [0.6, 0.6]}),
    doc="Raise values in [0, 1] units to a power drawn from `gamma` (1 = unchanged, < 1 brightens shadows).",
    params=(Range("gamma", "gamma range", (0.8, 1.25), lo=0.05, hi=5.0, slider=(0.2, 3.0)),),
    kornia=KorniaLowering("RandomGamma", lambda a: {"gamma": tuple(a["gamma"]), "gain": (1.0, 1.0)},
                          record={"gamma_factor": "gamma"}),
    dali=DaliLowering(draws=lambda a: {"gamma": uniform(*a["gamma"])}, apply=_dali_gamma, mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        # gamma_limit is in percent; 10 significant digits keep 0.7 * 100 at 70.0.
        "RandomGamma", lambda a: {"gamma_limit": tuple(float(f"{g * 100.0:.10g}") for g in a["gamma"])},
        record={"gamma": "gamma"},
        from_transform=lambda t: {"gamma": [float(f"{g / 100.0:.10g}") for g in t.gamma_limit]},
        note="on uint8 its lookup table truncates (0.5/255 darker on average than Kornia's floats); after a "
             "Normalize it raises negative values to the power too (NaN) where Kornia and DALI clamp to [0, 1]"),
)


# ----- histogram ops: equalize, autocontrast ---------------------------------------------

def _dali_equalize(a, c, d):
    # After a Normalize, mode pil takes Kornia's 8-bit levels (x * 255 truncated), mode cv rounded ones.
    return [f"{c.x} = colour_equalize({c.x}, uint8={_uint8(c)}, rounded={a['mode'] == 'cv'})"]


EQUALIZE = OpSpec(
    name="Equalize", family="color", default_p=0.5,
    from_kornia=Inverse("RandomEqualize", lambda m, notes: {}),
    from_torchvision=Inverse("RandomEqualize", lambda t, notes: {}),
    # mode "pil": three algorithms, see the notes: Kornia is PIL's exactly, DALI OpenCV's, Albumentations
    # PIL's off by one bin; measured 3.7/255 (DALI) and 2.6/255 (Albumentations) from Kornia.
    # mode "cv" (all three OpenCV's equalizeHist): measured 0.00/255 on both (tests/test_ops_color.py).
    parity=Parity(border=0, mae=4 / 255, psnr=31.0),
    doc="Equalize the histogram of each channel of each image (on 8-bit levels) by `mode`: PIL's algorithm (pil) "
        "or OpenCV's equalizeHist (cv).",
    params=(Choice("mode", "the equalisation algorithm: PIL's (pil) or OpenCV's (cv)", "pil", options=("pil", "cv")),),
    kornia=KorniaLowering("RandomEqualizeMode", lambda a: {"mode": a["mode"]}, local=True,
                          from_module=kr.arguments("mode")),
    dali=DaliLowering(apply=_dali_equalize, mirror_invariant=True,
                      note="fn.equalize is OpenCV's equalisation (mode 'cv', exact), not PIL's: for mode 'pil' the "
                           "lookup tables differ by a few levels, measured 3.7/255 mean abs error from Kornia on the "
                           "sample photos (12/255 on the one with a peaked histogram)"),
    albumentations=AlbumentationsLowering(
        "Equalize", lambda a: {"mode": a["mode"], "by_channels": True}, from_transform=lambda t: _from_equalize(t),
        note="mode='pil' maps each level by the cumulative count including its own bin where PIL (and Kornia) "
             "stop before it: measured 2.6/255 mean abs error from Kornia on the sample photos; mode='cv' is "
             "OpenCV's on all three backends"),
)


def _from_equalize(t):
    if not t.by_channels:
        raise ValueError("by_channels=False equalizes the luma (YCrCb's Y) only; Equalize works on each channel "
                         "(by_channels=True)")
    if t.mask is not None:
        raise ValueError("a mask restricts the histogram; Equalize uses the whole image")
    if t.mode not in ("pil", "cv"):
        raise ValueError(f"mode={t.mode!r}; Equalize takes mode 'pil' or 'cv'")
    return {"mode": str(t.mode)}


def _dali_autocontrast(a, c, d):
    return [f"{c.x} = colour_auto_contrast({c.x}, uint8={_uint8(c)})"]


def _k_auto_contrast(m, notes):
    if getattr(m, "clip_output", True) is not True:
        raise ValueError("clip_output=False: AutoContrast clips its output to [0, 1]")
    return {}


AUTO_CONTRAST = OpSpec(
    name="AutoContrast", family="color", default_p=0.5,
    from_kornia=Inverse("RandomAutoContrast", _k_auto_contrast),
    from_torchvision=Inverse("RandomAutocontrast", lambda t, notes: {}),
    parity=Parity(border=0, mae=0.4 / 255, psnr=52.0),
    doc="Stretch each channel linearly so that its minimum becomes 0 and its maximum 1 (255 on 8-bit images).",
    kornia=KorniaLowering("RandomAutoContrast", lambda a: {}),
    dali=DaliLowering(apply=_dali_autocontrast, mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "AutoContrast", lambda a: {"cutoff": 0.0, "method": "pil"}, from_transform=lambda t: _from_autocontrast(t),
        note="a constant channel is left as it is (Kornia and DALI make it 0); rounds half to even"),
)


def _from_autocontrast(t):
    if t.method != "pil":
        raise ValueError(f"method={t.method!r} stretches by the histogram's CDF; AutoContrast is method='pil'")
    if t.cutoff or t.ignore is not None:
        raise ValueError("cutoff and ignore clip the histogram; AutoContrast uses the plain minimum and maximum")
    return {}


# ----- sharpness, channel shuffle ----------------------------------------------------------

def _dali_sharpness(a, c, d):
    """torchvision's sharpness: blend with the 3x3-smoothed image by the factor; the one-pixel
    border keeps its values."""
    return [f"{c.x} = colour_sharpness({c.x}, {d['factor']}, {c.height}, {c.width}, uint8={_uint8(c)})"]


SHARPNESS = OpSpec(
    name="Sharpness", family="color", default_p=0.5,
    from_kornia=Inverse("RandomSharpness", lambda m, notes: {"factor": kr.sampler(m, "sharpness")}),
    from_torchvision=Inverse("RandomAdjustSharpness",
                                  lambda t, notes: {"factor": [float(t.sharpness_factor)] * 2}),
    # torchvision's rule, which Kornia enforces: the 3x3 smoothing only sees whole windows.
    min_input=lambda a: (3, "its 3x3 smoothing keeps a one-pixel border and needs a whole window inside it"),
    parity=Parity(border=0, mae=0.3 / 255, psnr=57.0, params={"factor": [2.0, 2.0]}),
    doc="Blend with the 3x3-smoothed image by a factor drawn from `factor` (torchvision's sharpness: 0 = smoothed, "
        "1 = unchanged, 2 = sharper); the one-pixel border is kept.",
    params=(Range("factor", "sharpness factor range", (0.5, 2.0), **_FACTOR),),
    kornia=KorniaLowering("RandomSharpness", lambda a: {"sharpness": tuple(a["factor"])},
                          record={"sharpness": "factor"}),
    dali=DaliLowering(draws=lambda a: {"factor": uniform(*a["factor"])}, apply=_dali_sharpness, needs_size=True,
                      mirror_invariant=True),
    # A.Sharpen(alpha=(f - 1) / 13, lightness=1) is this map for factors 1 to 14 (with reflected
    # borders), but its alpha cannot go below 0: the export carries its own transform instead.
    albumentations=AlbumentationsLowering(
        "WbSharpness", lambda a: {"factor": tuple(a["factor"])}, record={"factor": "factor"},
        note="the export writes WbSharpness, the workbench's own transform (A.Sharpen cannot blur: its alpha is "
             "at least 0); computed in float, rounded to the image's levels",
    ),
)

def _dali_channel_shuffle(a, c, d):
    # A draw of 0..5 picks one of the six orders of three channels (reported as the permutation).
    # The permutation is reported, so it is computed for every sample (outside the step's `if`).
    perm = c.var("permutation")
    return [f"{perm} = colour_permutation({d['_k']})", f"{c.x} = colour_channel_shuffle({c.x}, {perm})"]


def _shuffled_reference(image, row):
    """Output channel c is input channel permutation[c] (all three backends report it so)."""
    return np.asarray(image)[..., [int(k) for k in row["permutation"]]] / 255.0


CHANNEL_SHUFFLE = OpSpec(
    name="ChannelShuffle", family="color", default_p=0.5,
    from_kornia=Inverse("RandomChannelShuffle", lambda m, notes: {}),
    # A random permutation on every call, the identity among them, as ChannelShuffle at p = 1.
    from_torchvision=Inverse("RandomChannelPermutation", lambda t, notes: {}),
    parity=Parity(border=0, mae=1e-6, psnr=99.0, reference=_shuffled_reference),
    doc="Reorder the three channels by a random permutation (reported: output channel c is input channel "
        "permutation[c]).",
    kornia=KorniaLowering("RandomChannelShuffle", lambda a: {}, record={"channels": "permutation"}),
    dali=DaliLowering(draws=lambda a: {"_k": RandomOp("fn.random.choice", {"__input__": 6})},
                      apply=_dali_channel_shuffle, reports=("permutation",), mirror_invariant=True),
    albumentations=AlbumentationsLowering("ChannelShuffle", lambda a: {}, record={"channels_shuffled": "permutation"},
                                          from_transform=lambda t: {}),
)

OPS = (BRIGHTNESS, CONTRAST, SATURATION, HUE, COLOR_JITTER, GRAYSCALE, INVERT, SOLARIZE, POSTERIZE, EQUALIZE,
       AUTO_CONTRAST, SHARPNESS, GAMMA, CHANNEL_SHUFFLE)
