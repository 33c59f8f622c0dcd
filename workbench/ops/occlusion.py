"""Occlusion ops: cut regions out of the image.

Rectangles are reported per sample as `x`, `y` (top-left pixel) and `width`, `height` in
pixels: one number each, or one list entry per rectangle where an op cuts several.
"""
import numpy as np

from ..literals import literal
from ..runtime import targets
from .dali_helpers import RandomOp, uniform
from .params import Span
from .params import Flag, Number, Range
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, TargetRule, Inverse
from . import kornia_reading as kr
from . import torchvision_reading as tv


def _call(function: str, *args, **kwargs) -> str:
    """Source of a call of a runtime DALI function (runtime/dali_ops/occlusion.py): node arguments as
    the Names they are, plain values as literals."""
    return function + "(" + ", ".join([*map(literal, args), *(f"{k}={literal(v)}" for k, v in kwargs.items())]) + ")"


def _short(value: float) -> float:
    """10 significant digits: 1 / (1 / 0.3) reads 0.3, not 0.30000000000000004."""
    return float(f"{value:.10g}")


def _holes(raw):
    """Albumentations' `holes` ([x_min, y_min, x_max, y_max] rows) as the workbench reports
    rectangles: one number per name for one hole, a list for several (as the other backends)."""
    holes = np.asarray(raw.get("holes", ()), dtype=np.float64).reshape(-1, 4)
    if not len(holes):
        return {}
    values = {"x": holes[:, 0], "y": holes[:, 1], "width": holes[:, 2] - holes[:, 0],
              "height": holes[:, 3] - holes[:, 1]}
    return {k: float(v[0]) if len(v) == 1 else [float(e) for e in v] for k, v in values.items()}


def _fill(t) -> float:
    """An Albumentations `fill` (0-255 on uint8) as this workbench's value in [0, 1]."""
    fill = t.fill
    if isinstance(fill, str):
        raise ValueError(f"fill={fill!r} has no equivalent: the workbench fills a constant value")
    values = {float(v) for v in np.atleast_1d(np.asarray(fill, dtype=np.float64))}
    if len(values) != 1:
        raise ValueError(f"fill={fill!r} differs per channel; the workbench fills one value in every channel")
    value = values.pop() / 255.0
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"fill={fill!r} is outside 0-255")
    return _short(value)


# --------------------------------------------------------------------------------------------
# Erase

def _dali_erase(a, c, d):
    """Kornia's rectangle formula: sides from area and ratio (height / width), rounded
    (erase_rectangle, runtime/dali_ops/occlusion.py)."""
    h, w, x, y = (c.var(n) for n in ("height", "width", "x", "y"))
    return [
        f"{h}, {w}, {x}, {y} = " + _call("erase_rectangle", d["_area"], d["_ratio"], d["_u"], d["_v"], c.height,
                                         c.width),
        f"{c.x} = " + _call("erase_one", c.x, y, x, h, w, float(a["value"]) * c.scale),
    ]


def _from_erasing(t):
    lo, hi = (float(r) for r in t.ratio)
    return {"scale": [float(s) for s in t.scale], "ratio": [_short(1.0 / hi), _short(1.0 / lo)], "value": _fill(t)}


_ALB_FILL_NOTE = "the fill is given in 0-255 (uint8) levels: after a Normalize it would not be the value asked for"


def _tv_erasing(t, notes):
    if t.value is None:
        raise ValueError("value='random' fills with noise; Erase fills with one value")
    if len(set(t.value)) != 1:
        raise ValueError(f"value={t.value} fills each channel with its own value; Erase fills with one value")
    return {"scale": tv.pair(t.scale), "ratio": tv.pair(t.ratio), "value": float(t.value[0])}


def _k_erasing(m, notes):
    g = kr.gen(m)
    return {"scale": kr.pair_of(g.scale, "scale"), "ratio": kr.pair_of(g.ratio, "ratio"),
            "value": float(kr.plain(g.value))}


ERASE = OpSpec(
    name="Erase", family="occlusion", targets=TargetRule(erase=targets.erased_rectangles), default_p=0.5,
    from_kornia=Inverse("RandomErasing", _k_erasing),
    from_torchvision=Inverse("RandomErasing", _tv_erasing),
    # The whole image (area 1 at ratio height/width = 3/4): rectangles are placed at random.
    # Measured: Kornia fills 0.5, DALI and Albumentations 127 of 255 (0.5/255 everywhere).
    parity=Parity(border=0, mae=0.6 / 255, psnr=54.0,
                  params={"scale": [1.0, 1.0], "ratio": [0.75, 0.75], "value": 0.5}),
    doc="Fill one random rectangle (area fraction `scale`, aspect `ratio`) with `value` (random erasing).",
    params=(
        Range("scale", "erased area as a fraction of the image", (0.02, 0.33), lo=0.001, hi=1.0),
        Range("ratio", "rectangle aspect ratio (height / width)", (0.3, 3.3), lo=0.05, hi=20.0, slider=(0.1, 10.0)),
        Number("value", "fill value (0 = black, 1 = white)", 0.0, lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering(
        "RandomErasing",
        lambda a: {"scale": tuple(a["scale"]), "ratio": tuple(a["ratio"]), "value": a["value"]},
        record={"xs": "x", "ys": "y", "widths": "width", "heights": "height"},
    ),
    dali=DaliLowering(
        needs_size=True, reports=("x", "y", "width", "height"),
        draws=lambda a: {"_area": uniform(*a["scale"]), "_ratio": uniform(*a["ratio"]),
                         "_u": uniform(0.0, 1.0), "_v": uniform(0.0, 1.0)},
        apply=_dali_erase,
        note="the aspect ratio is drawn uniformly; Kornia splits ranges that straddle 1 into two halves",
    ),
    # A.Erasing's ratio is width / height: the reciprocals, swapped.
    albumentations=AlbumentationsLowering(
        "Erasing",
        lambda a: {"scale": tuple(a["scale"]), "ratio": (1.0 / a["ratio"][1], 1.0 / a["ratio"][0]),
                   "fill": a["value"] * 255.0},
        record=_holes, from_transform=_from_erasing,
        note="draws the area within what the aspect-ratio range allows; where no rectangle of that area and "
             "aspect fits the image, Albumentations 2.0.8 fails (BaseDropout.apply() missing 'seed') where Kornia "
             "and DALI clamp the sides; the fill is rounded down to a level (0.5 gives 127); " + _ALB_FILL_NOTE,
    ),
)


# --------------------------------------------------------------------------------------------
# GridMask

def _dali_grid(a, c, d):
    """The grid's offset in whole pixels (the paper's random shift of the whole grid), then
    fn.grid_mask: a square of side ratio x tile at the top-left of every tile is zeroed."""
    x, y = c.var("x"), c.var("y")
    return [
        f"{x}, {y} = " + _call("grid_mask_offset", d["_u"], d["_v"], a["tile"]),
        f"{c.x} = " + _call("grid_mask_images", c.x, a["tile"], a["ratio"], x, y),
    ]


def _from_grid_dropout(t):
    if t.holes_number_xy is not None or t.unit_size_range is None:
        raise ValueError("the grid is sized from the image (holes_number_xy, or neither set); GridMask takes a tile "
                         "in pixels: give unit_size_range=(tile, tile + 1)")
    lo, hi = (int(v) for v in t.unit_size_range)
    if hi != lo + 1:
        raise ValueError(f"unit_size_range={(lo, hi)} draws the tile per image from [{lo}, {hi}); GridMask takes "
                         f"one tile: give ({lo}, {lo + 1})")
    if _fill(t) != 0.0:
        raise ValueError(f"fill={t.fill!r}: GridMask zeroes its squares")
    if not t.random_offset and tuple(t.shift_xy) != (0, 0):
        raise ValueError(f"shift_xy={tuple(t.shift_xy)}: GridMask's grid starts at the top-left corner or at a "
                         "random offset")
    return {"tile": lo, "ratio": float(t.ratio), "random_offset": bool(t.random_offset)}


GRID_MASK = OpSpec(
    name="GridMask", family="occlusion", default_p=0.5,
    min_input=lambda a: (a["tile"] + 1, f"Albumentations' grid needs its {a['tile']}-pixel tile to fit "
                          "inside the shorter side; lower tile"),
    # Tiles that divide the image sides (96x128 with tile 32): DALI and Albumentations zero the
    # same squares, exactly (measured 0).
    parity=Parity(border=0, mae=0.01 / 255, psnr=99.0, same_size=True,
                  params={"tile": 32, "ratio": 0.5, "random_offset": False}),
    doc="Zero a square of side `ratio` x `tile` at the top-left of every `tile` x `tile` cell of an "
        "axis-aligned grid (GridMask), the grid shifted by a random offset per sample if `random_offset`.",
    params=(
        Number("tile", "grid cell side in pixels", 64, lo=4, hi=1024, integer=True, sample_hi=16, slider=(4, 256)),
        Number("ratio", "side of each zeroed square as a fraction of the cell side", 0.5, lo=0.05, hi=0.95),
        Flag("random_offset", "shift the grid by a random offset (in [0, tile) pixels) per sample", True),
    ),
    kornia=KorniaLowering("WbGridMask", lambda a: {"tile": a["tile"], "ratio": a["ratio"],
                                                   "random_offset": a["random_offset"]},
                          record={"x": "x", "y": "y"}, local=True,
                          from_module=kr.arguments("tile", "ratio", "random_offset")),
    dali=DaliLowering(
        draws=lambda a: {"_u": uniform(0.0, 1.0 if a["random_offset"] else 0.0),
                         "_v": uniform(0.0, 1.0 if a["random_offset"] else 0.0)},
        reports=("x", "y"), apply=_dali_grid,
        note="zeroes (after a Normalize too, where 0 is the mean colour); the grid is not rotated (fn.grid_mask "
             "could, Albumentations cannot)",
    ),
    # unit_size_range is drawn with numpy's integers(lo, hi): hi is exclusive.
    albumentations=AlbumentationsLowering(
        "GridDropout",
        lambda a: {"ratio": a["ratio"], "unit_size_range": (a["tile"], a["tile"] + 1),
                   "random_offset": a["random_offset"], "shift_xy": (0, 0), "fill": 0},
        record=lambda raw: {}, from_transform=_from_grid_dropout,
        note="spreads image_side // tile cells over the whole image, so its grid is DALI's only where tile "
             "divides the image sides; its squares are floor(ratio x tile) pixels (DALI's ceil); random_offset "
             "moves each square within its cell instead of shifting the grid (no x, y reported); it refuses a "
             "tile of the image's shorter side or more ('Grid size limits must be within the shortest image "
             "edge')",
    ),
)


# --------------------------------------------------------------------------------------------
# CoarseDropout

def _uniform_each(lo: float, hi: float, n: int) -> RandomOp:
    """n independent uniform draws per sample (one per hole)."""
    if lo == hi:
        return RandomOp("fn.random.uniform", {"values": [float(lo)], "shape": (n,)})
    return RandomOp("fn.random.uniform", {"range": (float(lo), float(hi)), "shape": (n,)})


def _dali_coarse(a, c, d):
    """Each hole as Albumentations draws it: sides floor(fraction x image side), top-left
    corner uniform over the whole pixels where the hole fits; fn.erase takes them all. Every
    sample draws the range's largest count of holes; those beyond its own count get sides 0
    (coarse_holes, runtime/dali_ops/occlusion.py)."""
    h, w, x, y = (c.var(n) for n in ("height", "width", "x", "y"))
    return [
        f"{h}, {w}, {y}, {x} = " + _call("coarse_holes", d["holes"], d["_height_fraction"], d["_width_fraction"],
                                         d["_u"], d["_v"], c.height, c.width, most=a["holes"][1]),
        f"{c.x} = " + _call("erase_many", c.x, y, x, h, w, float(a["value"]) * c.scale),
    ]


def _from_coarse_dropout(t):
    holes = [int(v) for v in t.num_holes_range]
    ranges = {}
    for name, attribute in (("height", "hole_height_range"), ("width", "hole_width_range")):
        lo, hi = (float(v) for v in getattr(t, attribute))
        if hi >= 1.0:
            raise ValueError(f"{attribute}={(lo, hi)} is in pixels; CoarseDropout takes fractions of the image "
                             "side (below 1)")
        ranges[name] = [lo, hi]
    return {"holes": holes, **ranges, "value": _fill(t)}


_COARSE_FILL = 0.5


def _coarse_reference(image, row):
    """The input with each reported hole filled with the parity case's value."""
    out = np.asarray(image, dtype=np.float64) / 255.0
    sides = [np.atleast_1d(np.asarray(row[k], dtype=np.float64)) for k in ("x", "y", "width", "height")]
    for x, y, w, h in zip(*sides, strict=True):
        out[int(y):int(y + h), int(x):int(x + w)] = _COARSE_FILL
    return out


def _coarse_holes(raw):
    """Albumentations' holes (see _holes) and their count."""
    if np.isnan(np.asarray(raw.get("holes", ()), dtype=np.float64)).any():
        return {}  # the runner NaN-fills an image whose count of holes differs from the first image's
    out = _holes(raw)
    return {**out, "holes": float(len(np.atleast_1d(out["x"])))} if out else out


def _holes_drawn(lo: float, hi: float) -> RandomOp:
    """The per-sample count of holes, uniform among the integers of [lo, hi] (Albumentations' randint)."""
    return RandomOp("fn.random.uniform", {"values": [float(k) for k in range(int(lo), int(hi) + 1)]})


COARSE_DROPOUT = OpSpec(
    name="CoarseDropout", family="occlusion", targets=TargetRule(erase=targets.erased_rectangles), default_p=0.5,
    # Holes land at random: each backend is compared with its own reported holes, filled. DALI and
    # Albumentations fill 127 of 255 for 0.5: 0.5/255 inside the holes (Kornia fills 0.5 exactly),
    # which cover up to about half the image here (measured 0.11/255 and 61 dB; the bounds allow
    # for more hole area).
    parity=Parity(border=0, mae=0.3 / 255, psnr=56.0, reference=_coarse_reference,
                  params={"holes": [6, 6], "height": [0.1, 0.3], "width": [0.1, 0.3], "value": _COARSE_FILL}),
    doc="Fill a number of rectangles drawn per sample from `holes` with `value`, each with sides drawn as "
        "fractions of the image's (`height`, `width`) and placed at random (Cutout with several holes); they "
        "may overlap.",
    params=(
        Span("holes", "range of the number of rectangles, drawn per sample", (1, 4), lo=1, hi=64, integer=True),
        Range("height", "rectangle height range as a fraction of the image height", (0.05, 0.2), lo=0.01, hi=0.99),
        Range("width", "rectangle width range as a fraction of the image width", (0.05, 0.2), lo=0.01, hi=0.99),
        Number("value", "fill value (0 = black, 1 = white)", 0.0, lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering(
        "WbCoarseDropout",
        lambda a: {"holes": tuple(a["holes"]), "height": tuple(a["height"]), "width": tuple(a["width"]),
                   "value": a["value"]},
        record={"holes": "holes", "x": "x", "y": "y", "width": "width", "height": "height"}, local=True,
        from_module=kr.arguments("holes", "height", "width", "value"),
    ),
    dali=DaliLowering(
        needs_size=True, reports=("x", "y", "width", "height"),
        draws=lambda a: {"holes": _holes_drawn(*a["holes"]),
                         "_height_fraction": _uniform_each(*a["height"], a["holes"][1]),
                         "_width_fraction": _uniform_each(*a["width"], a["holes"][1]),
                         "_u": _uniform_each(0.0, 1.0, a["holes"][1]), "_v": _uniform_each(0.0, 1.0, a["holes"][1])},
        apply=_dali_coarse,
        note="draws the range's largest number of holes for every sample and gives those beyond the sample's "
             "count sides 0 (they are reported, with width and height 0)",
    ),
    albumentations=AlbumentationsLowering(
        "CoarseDropout",
        lambda a: {"num_holes_range": tuple(a["holes"]), "hole_height_range": tuple(a["height"]),
                   "hole_width_range": tuple(a["width"]), "fill": a["value"] * 255.0},
        record=_coarse_holes, from_transform=_from_coarse_dropout,
        note="the fill is rounded down to a level (0.5 gives 127); " + _ALB_FILL_NOTE,
    ),
)

OPS = (ERASE, GRID_MASK, COARSE_DROPOUT)
