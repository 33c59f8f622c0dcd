"""Colour ops in the Albumentations recipes' dialect: brightness/contrast together, HSV shifts, RGB shifts, CLAHE.

Each op takes Albumentations' own parameters and units (ranges drawn per image on every
backend), so `Chain.from_albumentations` maps the transform with its default arguments and
the imported step runs on Kornia and DALI as well. Value regimes as in `color.py`: Kornia
computes on floats in [0, 1] (input clamped to [0, 1], output clamped), DALI computes in float
and rounds back to uint8 once before a Normalize (after one, it clamps to [0, 1] as Kornia
does), Albumentations works on uint8 with its own rounding (see each op's note).
"""
from __future__ import annotations

import math

import numpy as np

from .color import _uint8, dali_hsv_shift
from .dali_helpers import uniform
from .params import Flag, Number, Range, Span
from .spec import AlbumentationsLowering, DaliLowering, Inverse, KorniaLowering, OpSpec, Parity
from . import kornia_reading as kr


def _pair(values) -> list[float]:
    return [float(v) for v in values]


# ----- BrightnessContrast: A.RandomBrightnessContrast ----------------------------------------

def _dali_brightness_contrast(a, c, d):
    return [f"{c.x} = colour_brightness_contrast({c.x}, {d['brightness']}, {d['contrast']}, "
            f"by_max={bool(a['brightness_by_max'])}, uint8={_uint8(c)})"]


def _from_brightness_contrast(t):
    if t.ensure_safe_range:
        raise ValueError("ensure_safe_range=True narrows each draw to keep every value in range; BrightnessContrast "
                         "draws from the full ranges (use ensure_safe_range=False)")
    return {"brightness": _pair(t.brightness_limit), "contrast": _pair(t.contrast_limit),
            "brightness_by_max": bool(t.brightness_by_max)}


def _alb_brightness_contrast_record(raw):
    # alpha = 1 + contrast; beta = brightness * 255 on uint8 (times the image's mean, not 255, when
    # brightness_by_max is False: then this reports beta / 255).
    out = {}
    if "alpha" in raw:
        out["contrast"] = float(raw["alpha"]) - 1.0
    if "beta" in raw:
        out["brightness"] = float(raw["beta"]) / 255.0
    return out


BRIGHTNESS_CONTRAST = OpSpec(
    name="BrightnessContrast", family="color", default_p=0.5,
    # Measured on the 8 sample photos at brightness 0.1, contrast 0.25 (MAE vs Kornia): DALI 0.22/255
    # (rounds to a level), Albumentations 0.32/255 (truncates to a level); with brightness_by_max off
    # and brightness -0.3: 0.22/255 and 0.41/255.
    parity=Parity(border=0, mae=0.45 / 255, psnr=50.0, params={"brightness": [0.1, 0.1], "contrast": [0.25, 0.25]}),
    doc="Albumentations' RandomBrightnessContrast: x * (1 + c) + b in [0, 1] units, clamped, with c drawn from "
        "`contrast` and b from `brightness` per image (b times the image's mean value instead of the full range "
        "when `brightness_by_max` is off); contrast scales around 0, not around a mean.",
    params=(
        Range("brightness", "brightness shift range, in fractions of the full range (0 = unchanged)", (-0.2, 0.2),
              lo=-1.0, hi=1.0),
        Range("contrast", "contrast change range: the image is multiplied by 1 + c (0 = unchanged)", (-0.2, 0.2),
              lo=-1.0, hi=2.0),
        Flag("brightness_by_max", "brightness shifts by b times the full range (on) or the image's mean (off)", True),
    ),
    kornia=KorniaLowering(
        "RandomBrightnessContrast", local=True,
        from_module=kr.arguments("brightness", "contrast", brightness_by_max="by_max"),
        args=lambda a: {"brightness": tuple(a["brightness"]), "contrast": tuple(a["contrast"]),
                        "by_max": a["brightness_by_max"]},
        record={"brightness": "brightness", "contrast": "contrast"}),
    dali=DaliLowering(draws=lambda a: {"brightness": uniform(*a["brightness"]), "contrast": uniform(*a["contrast"])},
                      apply=_dali_brightness_contrast, mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "RandomBrightnessContrast",
        lambda a: {"brightness_limit": tuple(a["brightness"]), "contrast_limit": tuple(a["contrast"]),
                   "brightness_by_max": a["brightness_by_max"], "ensure_safe_range": False},
        record=_alb_brightness_contrast_record, from_transform=_from_brightness_contrast,
        note="on uint8 its lookup table truncates to a level (0.5/255 darker on average than Kornia's floats); "
             "with brightness_by_max off it reports the applied offset (b times the image's mean) as brightness"),
)


# ----- HueSaturationValue: A.HueSaturationValue ----------------------------------------------

def _dali_hsv(a, c, d):
    """OpenCV's HSV in float, shifted (hue in OpenCV's units: 30 to a sextant; S and V in levels),
    back to RGB: the same arithmetic as the Kornia module's `shift_hsv` (see `dali_hsv_shift`)."""
    return dali_hsv_shift(c, f"{d['hue_shift']} / 30.0", saturation=f"{d['sat_shift']} / 255.0",
                          value=f"{d['val_shift']} / 255.0")


HUE_SATURATION_VALUE = OpSpec(
    name="HueSaturationValue", family="color", default_p=0.5,
    cost_hint="converts every pixel to HSV and back (about 40 elementwise operations per pixel on DALI)",
    # Measured on the 8 sample photos at hue 10, sat 20, val -15 (MAE vs Kornia): DALI 0.06/255 (the
    # same float arithmetic, rounded to a level), Albumentations 0.16/255 (OpenCV's 8-bit HSV: hue in
    # whole 2-degree steps, S and V rounded); at hue 60, sat -50, val 30: 0.05 and 0.13/255; at hue -95: 0.03 and 0.16.
    parity=Parity(border=0, mae=0.3 / 255, psnr=50.0,
                  params={"hue_shift": [10.0, 10.0], "sat_shift": [20.0, 20.0], "val_shift": [-15.0, -15.0]}),
    doc="Albumentations' HueSaturationValue in its 8-bit units: rotate hue by a shift drawn from `hue_shift` "
        "(OpenCV's hue units, 180 = a full turn, so 10 is 20 degrees), add shifts drawn from `sat_shift` and "
        "`val_shift` (levels of 255) to HSV saturation and value, clamped; grey pixels stay grey.",
    params=(
        Range("hue_shift", "hue shift range in OpenCV's units (180 = a full turn)", (-20.0, 20.0), lo=-180.0, hi=180.0,
              slider=(-90.0, 90.0)),
        Range("sat_shift", "saturation shift range in levels of 255", (-30.0, 30.0), lo=-255.0, hi=255.0,
              slider=(-100.0, 100.0)),
        Range("val_shift", "value (brightness) shift range in levels of 255", (-20.0, 20.0), lo=-255.0, hi=255.0,
              slider=(-100.0, 100.0)),
    ),
    kornia=KorniaLowering(
        "RandomHueSaturationValue", local=True,
        from_module=kr.arguments(hue_shift="hue", sat_shift="sat", val_shift="val"),
        args=lambda a: {"hue": tuple(a["hue_shift"]), "sat": tuple(a["sat_shift"]), "val": tuple(a["val_shift"])},
        record={"hue_shift": "hue_shift", "sat_shift": "sat_shift", "val_shift": "val_shift"}),
    dali=DaliLowering(draws=lambda a: {k: uniform(*a[k]) for k in ("hue_shift", "sat_shift", "val_shift")},
                      apply=_dali_hsv, mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "HueSaturationValue",
        lambda a: {"hue_shift_limit": tuple(a["hue_shift"]), "sat_shift_limit": tuple(a["sat_shift"]),
                   "val_shift_limit": tuple(a["val_shift"])},
        record={"hue_shift": "hue_shift", "sat_shift": "sat_shift", "val_shift": "val_shift"},
        from_transform=lambda t: {"hue_shift": _pair(t.hue_shift_limit), "sat_shift": _pair(t.sat_shift_limit),
                                  "val_shift": _pair(t.val_shift_limit)},
        note="on uint8 it works in OpenCV's 8-bit HSV: hue in whole 2-degree steps, saturation and value shifts "
             "truncated to whole levels, S and V rounded (0.16/255 mean abs error from Kornia on the sample photos); "
             "after a Normalize it shifts float HSV with the same numbers (hue then in degrees, S and V in [0, 1] "
             "units), which is not this op"),
)


# ----- RGBShift: A.RGBShift ----------------------------------------------------------------

_SHIFTS = ("r_shift", "g_shift", "b_shift")


def _dali_rgb_shift(a, c, d):
    return [f"{c.x} = colour_rgb_shift({c.x}, {', '.join(str(d[k]) for k in _SHIFTS)}, uint8={_uint8(c)})"]


def _from_rgb_shift(t):
    # RGBShift keeps its ranges as fractions of the range (limits within [-1, 1] are taken as
    # fractions already, larger ones as levels and divided by 255): back to levels of 255.
    ranges = t.noise_params["ranges"]
    if len(ranges) != 3:
        raise ValueError(f"RGBShift needs one shift range per channel (3), got {len(ranges)}")
    return {k: [float(f"{v * 255.0:.10g}") for v in rng] for k, rng in zip(_SHIFTS, ranges)}


def _alb_shift_limit(levels) -> tuple[float, float]:
    """A.RGBShift reads a limit pair with a value beyond [-1, 1] as levels of 255 and one within it
    as fractions of the range: levels as they are where it reads them so, else as fractions."""
    if max(abs(v) for v in levels) > 1.0:
        return (float(levels[0]), float(levels[1]))
    return (levels[0] / 255.0, levels[1] / 255.0)


def _alb_rgb_shift_record(raw):
    # Its noise_map holds the three shifts (in levels of 255 on uint8, in [0, 1] units after a Normalize).
    if "noise_map" not in raw:
        return {}
    values = [float(v) for v in np.asarray(raw["noise_map"]).reshape(-1)[:3]]
    return dict(zip(_SHIFTS, values))


def _k_rgb_shift(m, notes):
    """K.RandomRGBShift: shifts in [0, 1] units (clamped before and after, as the op): times 255."""
    return {k: [round(float(v) * 255.0, 4) for v in kr.sampler(m, k)] for k in _SHIFTS}


RGB_SHIFT = OpSpec(
    name="RGBShift", family="color", default_p=0.5,
    from_kornia=Inverse("RandomRGBShift", _k_rgb_shift),
    # Measured on the 8 sample photos at shifts 12, -7, 20 (MAE vs Kornia): DALI 0.000/255 and
    # Albumentations 0.000/255 (whole-level shifts add exactly; only the clamping at 0 and 255 acts).
    parity=Parity(border=0, mae=0.05 / 255, psnr=60.0,
                  params={"r_shift": [12.0, 12.0], "g_shift": [-7.0, -7.0], "b_shift": [20.0, 20.0]}),
    doc="Albumentations' RGBShift: add a shift drawn per image from `r_shift`, `g_shift` and `b_shift` (levels of "
        "255) to the red, green and blue channels, clamped.",
    params=tuple(Range(k, f"{name} shift range in levels of 255", (-20.0, 20.0), lo=-255.0, hi=255.0,
                        slider=(-100.0, 100.0))
                 for k, name in zip(_SHIFTS, ("red", "green", "blue"))),
    kornia=KorniaLowering(
        "RandomChannelShift", local=True,
        from_module=kr.arguments(r_shift="r", g_shift="g", b_shift="b"),
        args=lambda a: {"r": tuple(a["r_shift"]), "g": tuple(a["g_shift"]), "b": tuple(a["b_shift"])},
        record={k: k for k in _SHIFTS}),
    dali=DaliLowering(draws=lambda a: {k: uniform(*a[k]) for k in _SHIFTS}, apply=_dali_rgb_shift,
                      mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "RGBShift", lambda a: {f"{k}_limit": _alb_shift_limit(a[k]) for k in _SHIFTS},
        record=_alb_rgb_shift_record, from_transform=_from_rgb_shift,
        note="on uint8 it truncates each shift toward zero to a whole level (Kornia and DALI add the drawn value; "
             "DALI rounds the result to a level)"),
)


# ----- CLAHE: A.CLAHE -----------------------------------------------------------------------

def clahe_levels(lo: float, hi: float) -> list[float]:
    """The clip limits DALI's CLAHE can apply for a range [lo, hi] (fn.clahe takes one clip limit per
    operator, not per sample): lo, the multiples of a step inside the range, hi. The step is 1/8
    (exact in binary, so every level gives the same histogram limit in float32 and float64), doubled
    until the range holds at most 32 steps (34 levels at most)."""
    if hi <= lo:
        return [float(lo)]
    step = max(0.125, 2.0 ** math.ceil(math.log2((hi - lo) / 32.0)))
    inner = [k * step for k in range(math.floor(lo / step) + 1, math.ceil(hi / step))]
    return [float(lo)] + [float(v) for v in inner if lo < v < hi] + [float(hi)]


def _dali_clahe(a, c, d):
    """OpenCV's CLAHE on OpenCV's 8-bit Lab L by fn.clahe (OpenCV's algorithm: measured equal to
    cv2.createCLAHE bit for bit on the sample photos), the image rebuilt from the equalised L and
    Kornia's a, b (runtime/dali_ops/clahe.py). The clip limit: fn.clahe takes one number, so the
    draw is rounded to the nearest of `clahe_levels` and each level is one fn.clahe under DALI's
    conditional execution (every sample goes through exactly one)."""
    v = c.var
    levels = clahe_levels(*a["clip_limit"])
    tiles, uint8 = f"tiles_x={int(a['tiles_x'])}, tiles_y={int(a['tiles_y'])}", _uint8(c)
    index, lightness, equalised, at = v("clip_index"), v("lightness"), v("equalised"), v("levels")
    padded = v("whole_tiles")
    body = [f"{lightness} = opencv_lightness({c.x}, uint8={uint8})",
            f"{padded} = on_whole_tiles({lightness}, {c.height}, {c.width}, {tiles})",
            f"{equalised} = clahe_at_level({padded}, {levels[0]!r}, {tiles})" if len(levels) == 1 else
            f"{equalised} = clahe_at_levels({padded}, {index}, {at}, {tiles})",
            f"{c.x} = with_lab_lightness({c.x}, cut_to_size({equalised}, {c.height}, {c.width}), uint8={uint8})"]
    lines = [f"{at} = {levels!r}", f"{index}, {v('clip_limit')} = clahe_clip({d['_clip']}, {at})"]
    if c.applied == "1":
        return lines + body
    return lines + [f"if {c.applied}:"] + ["    " + line for line in body]


def _from_clahe(t):
    lo, hi = (float(v) for v in t.clip_limit)
    if hi > 40.0:
        raise ValueError(f"clip_limit must lie within [1, 40], got ({lo:g}, {hi:g})")
    tiles = tuple(int(v) for v in t.tile_grid_size)
    if not all(1 <= v <= 64 for v in tiles):
        raise ValueError(f"tile_grid_size must be two tile counts within [1, 64], got {tuple(t.tile_grid_size)}")
    # OpenCV reads tileGridSize as (tiles across, tiles down); Albumentations passes it on as it is.
    return {"clip_limit": [lo, hi], "tiles_x": tiles[0], "tiles_y": tiles[1]}


CLAHE = OpSpec(
    name="CLAHE", family="color", default_p=0.5,
    cost_hint="per-tile 256-bin histograms and a Lab round trip per image (about 60 elementwise operations per "
              "pixel on DALI, plus one fn.clahe per clip level under conditional execution); a narrower clip "
              "range means fewer DALI levels",
    # Measured on the 8 sample photos at clip 2, 8 x 8 tiles (MAE vs Kornia's floats): DALI 0.26/255, 58.5 dB
    # (the same equalised L levels; rounding the result to uint8 is nearly all of it: it equals Kornia's
    # rounded output but for 4 pixels in a million), Albumentations 0.35/255, 55.0 dB (OpenCV's 8-bit Lab:
    # the same L levels, a and b rounded to whole levels); clip 4: 0.26 and 0.34/255; clip 1 on 3 x 5
    # tiles: 0.27 and 0.36/255; clip 10 on 16 x 4 tiles: 0.25 and 0.33/255.
    parity=Parity(border=0, mae=0.45 / 255, psnr=52.0,
                  params={"clip_limit": [2.0, 2.0], "tiles_x": 8, "tiles_y": 8}),
    doc="Albumentations' CLAHE: OpenCV's contrast-limited adaptive histogram equalisation of the L channel "
        "of Lab (8-bit L as OpenCV computes it), on a grid of `tiles_x` by `tiles_y` tiles, with a clip limit "
        "drawn per image from `clip_limit` (each tile's histogram is clipped at clip x pixels / 256 counts); "
        "colour (a, b) is kept.",
    params=(
        Span("clip_limit", "clip limit range: histogram counts are clipped at clip x tile pixels / 256 "
                           "(1 = strongest limiting, higher = more contrast)", (1.0, 4.0),
             lo=1.0, hi=40.0, slider=(1.0, 16.0)),
        Number("tiles_x", "number of tiles across (columns)", 8, lo=1, hi=64, integer=True),
        Number("tiles_y", "number of tiles down (rows)", 8, lo=1, hi=64, integer=True),
    ),
    kornia=KorniaLowering(
        "RandomCLAHE", local=True,
        from_module=kr.arguments("clip_limit", "tiles_x", "tiles_y"),
        args=lambda a: {"clip_limit": tuple(a["clip_limit"]), "tiles_x": a["tiles_x"], "tiles_y": a["tiles_y"]},
        record={"clip_limit": "clip_limit"}),
    dali=DaliLowering(draws=lambda a: {"_clip": uniform(*a["clip_limit"])}, apply=_dali_clahe, gate="arg",
                      needs_size=True,
                      reports=("clip_limit",),
                      note="fn.clahe takes one clip limit per operator, so each image's draw is rounded to the "
                           "nearest of a set of levels (the range's ends and the multiples of 1/8 between them, "
                           "coarser steps for ranges wider than 4) and reported as applied; at a level the "
                           "result is OpenCV's CLAHE exactly"),
    albumentations=AlbumentationsLowering(
        "CLAHE", lambda a: {"clip_limit": tuple(a["clip_limit"]), "tile_grid_size": (a["tiles_x"], a["tiles_y"])},
        record={"clip_limit": "clip_limit"}, from_transform=_from_clahe,
        note="on uint8 it runs through OpenCV's 8-bit Lab: the same equalised L levels, but a and b rounded to "
             "whole levels and the result rounded (0.35/255 mean abs error from Kornia on the sample photos); "
             "tile_grid_size is (tiles across, tiles down) as OpenCV reads it"),
)


OPS = (BRIGHTNESS_CONTRAST, HUE_SATURATION_VALUE, RGB_SHIFT, CLAHE)
