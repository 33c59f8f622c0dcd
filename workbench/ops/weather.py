"""Weather ops: rain, fog, sun flare, shadow, snow.

Each is Albumentations 2.0.8's transform of the same name, with its parameters under the same
names and in the same units (colours 0-255, positions in pixels, fractions of the image for
regions), so `Chain.from_albumentations` maps A.RandomRain(), A.RandomFog(), A.RandomSunFlare(),
A.RandomShadow() and A.RandomSnow() (default arguments included) one to one. Kornia runs the
workbench's own modules (runtime/kornia_modules/weather.py), which implement Albumentations'
algorithms in torch, batched; DALI runs the same algorithms as arithmetic over per-image
pixel-coordinate grids (the fog only in distribution: see _dali_fog). The positions (drops, fog
discs, flare circles, shadow polygons) are random and no collapsed range pins them, so parity
compares each backend with a reference rendered from that backend's own reported draws
(Parity.reference), or, for the fog, the change's statistics.
"""
import math

import numpy as np

from ..literals import Name, literal
from ..runtime.kornia_modules.weather import (WorkbenchRandomSunFlare, weather_drop_length, weather_polygon_mask,
                                               weather_rain_count, weather_rain_drops, weather_streak_mask)
from .dali_helpers import RandomOp, uniform
from .params import Choice, Floats, Number, Range
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, kernel_reach
from . import kornia_reading as kr

_ALB_UINT8 = ("Albumentations works on 8-bit levels and rounds after every blend (Kornia and DALI keep "
              "floats between the blends)")


def _pair(t, attribute: str) -> list[float]:
    return [float(v) for v in getattr(t, attribute)]


def _ints(values) -> tuple[int, ...]:
    return tuple(int(round(float(v))) for v in values)


def _colour(t, attribute: str) -> list[float]:
    colour = [float(v) for v in getattr(t, attribute)]
    if len(colour) != 3 or not all(0.0 <= v <= 255.0 for v in colour):
        raise ValueError(f"{attribute}={tuple(getattr(t, attribute))}: give three RGB levels in 0-255")
    return colour


def _torch_image(image):
    import torch

    return torch.from_numpy(np.asarray(image, dtype=np.float64) / 255.0).permute(2, 0, 1)[None]


def _hwc(tensor) -> np.ndarray:
    return tensor[0].permute(1, 2, 0).numpy()


def _values(row, key) -> np.ndarray:
    return np.atleast_1d(np.asarray(row[key], dtype=np.float64))


# --------------------------------------------------------------------------------------------
# DALI building blocks: the lowerings draw every random value with per-sample fn.random operators
# (the largest count where a count varies, masked) and call the functions of runtime/dali_ops/weather.py,
# which render with arithmetic over pixel-coordinate grids (DALI broadcasts them: xs is (1, W, 1), ys (H, 1, 1)).

def _uniforms(lo: float, hi: float, shape: tuple[int, ...]) -> RandomOp:
    """Independent uniform draws in [lo, hi) of `shape` per sample."""
    if lo == hi:
        return RandomOp("fn.random.uniform", {"values": [float(lo)], "shape": shape})
    return RandomOp("fn.random.uniform", {"range": (float(lo), float(hi)), "shape": shape})


def _whole(lo: float, hi: float) -> RandomOp:
    """A whole number uniform in [lo, hi] (both ends included), as a float."""
    return RandomOp("fn.random.uniform", {"values": [float(k) for k in range(int(lo), int(hi) + 1)]})


def _call(function: str, *args, **kwargs) -> str:
    """Source of a call of a runtime DALI function (runtime/dali_ops/weather.py): node arguments as
    the Names they are, plain values as literals."""
    return function + "(" + ", ".join([*map(literal, args), *(f"{k}={literal(v)}" for k, v in kwargs.items())]) + ")"


def _scale(c) -> float:
    """The images' units (255.0 for 0-255 levels, 1.0 after a Normalize), as the runtime functions take them."""
    return float(c.scale)


# --------------------------------------------------------------------------------------------
# RandomShadow

def _shadow_reference(image, row, dimension: int):
    """The input with each reported polygon darkened by its intensity (even-odd fill)."""
    import torch

    vertices = _values(row, "vertices").reshape(-1, dimension, 2)
    intensity = _values(row, "intensity")
    # Albumentations reports only its polygons (NaN-padded to the batch's largest count).
    known = np.isfinite(intensity) & np.isfinite(vertices).all(axis=(1, 2))
    vertices, intensity = vertices[known], intensity[known]
    count = int(row.get("num_shadows", len(intensity)))
    x = _torch_image(image)
    masks = weather_polygon_mask(torch.from_numpy(vertices[:count]), *x.shape[-2:])
    darkness = torch.prod(1.0 - masks * torch.from_numpy(intensity[:count])[:, None, None], dim=0)
    return _hwc(x * darkness)


def _from_shadow(t):
    roi = [float(v) for v in t.shadow_roi]
    return {"shadow_roi": roi, "num_shadows_limit": _pair(t, "num_shadows_limit"),
            "shadow_dimension": int(t.shadow_dimension),
            "shadow_intensity_range": _pair(t, "shadow_intensity_range")}


def _roi(values) -> tuple[float, float, float, float]:
    """A region's corners as x_min, y_min, x_max, y_max (given in either order)."""
    x0, y0, x1, y1 = values
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def _shadow_args(a):
    return {"shadow_roi": _roi(a["shadow_roi"]), "num_shadows_limit": _ints(a["num_shadows_limit"]),
            "shadow_dimension": a["shadow_dimension"], "shadow_intensity_range": tuple(a["shadow_intensity_range"])}


def _dali_shadow_draws(a):
    most, dimension = _ints(a["num_shadows_limit"])[1], a["shadow_dimension"]
    return {"num_shadows": _whole(*_ints(a["num_shadows_limit"])), "_u": _uniforms(0.0, 1.0, (most, dimension)),
            "_v": _uniforms(0.0, 1.0, (most, dimension)),
            "intensity": _uniforms(*a["shadow_intensity_range"], (most,))}


def _dali_shadow(a, c, d):
    """Kornia's module in DALI (runtime/dali_ops/weather.py): every sample draws the largest count of
    polygons (vertices whole pixels in the ROI, as int(fraction x side) bounds them); each polygon's
    even-odd test at the pixel centres, edges included, runs edge by edge over the coordinate grids;
    polygons beyond the sample's count darken nothing."""
    roi = [float(v) for v in _roi(a["shadow_roi"])]
    most, dimension = _ints(a["num_shadows_limit"])[1], int(a["shadow_dimension"])
    vx, vy, vertices, dark = (c.var(n) for n in ("vx", "vy", "vertices", "dark"))
    return [
        f"{vx}, {vy}, {vertices} = " + _call("shadow_vertices", c.height, c.width, d["_u"], d["_v"], roi),
        f"{dark} = " + _call("shadow_darkness", c.x, c.height, c.width, vx, vy, d["intensity"], d["num_shadows"],
                             most=most, dimension=dimension),
        f"{c.x} = " + _call("shadow_darken", c.x, dark, _scale(c)),
    ]


_SHADOW_CASE = {"shadow_roi": [0.0, 0.3, 1.0, 1.0], "num_shadows_limit": [2.0, 2.0], "shadow_dimension": 5,
                "shadow_intensity_range": [0.6, 0.6]}

RANDOM_SHADOW = OpSpec(
    name="RandomShadow", family="weather", default_p=0.5,
    # Each backend against its own polygons, darkened (on the photos of mixed sizes: Albumentations'
    # polygons come NaN-padded to the batch's largest count). On the photos, seed 3: Albumentations
    # 0.32/255 / 35.0 dB, DALI 0.04/255 / 66.7 dB. Measured earlier on the same-size set, seed 3: Kornia
    # 0.00/255 (the reference is its code), Albumentations 0.89/255 / 30.0 dB (cv2.fillPoly also
    # fills the outline's pixels, which the even-odd test at pixel centres leaves out or in, and
    # it truncates each darkened level to a whole one); DALI 0.03-0.05/255 / 66 dB (seeds 1, 3, 7:
    # float32 edge tests and one rounding to a level).
    parity=Parity(border=0, mae=1.2 / 255, psnr=28.0, params=_SHADOW_CASE,
                  reference=lambda image, row: _shadow_reference(image, row, _SHADOW_CASE["shadow_dimension"])),
    doc="Darken random polygons (shadows): num_shadows_limit polygons of shadow_dimension vertices inside "
        "shadow_roi, each multiplying the pixels it covers by 1 - intensity (A.RandomShadow).",
    params=(
        Floats("shadow_roi", "region the vertices lie in: x_min, y_min, x_max, y_max as fractions of the image "
               "(corners in either order)",
               (0.0, 0.5, 1.0, 1.0), length=4, lo=0.0, hi=1.0),
        Range("num_shadows_limit", "number of shadows per image (whole numbers, both ends included)", (1.0, 2.0),
              lo=1.0, hi=10.0),
        Number("shadow_dimension", "vertices per shadow polygon", 5, lo=3, hi=20, integer=True),
        Range("shadow_intensity_range", "darkening per shadow (0 = none, 1 = black)", (0.5, 0.5), lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering("WorkbenchRandomShadow", _shadow_args, local=True,
                          from_module=kr.arguments("shadow_roi", "num_shadows_limit", "shadow_dimension",
                                                   "shadow_intensity_range"),
                          record={"num_shadows": "num_shadows", "vertices": "vertices", "intensity": "intensity"}),
    albumentations=AlbumentationsLowering(
        "RandomShadow", _shadow_args, record={"vertices_list": "vertices", "intensities": "intensity"},
        from_transform=_from_shadow,
        note="darkened levels are cut down to whole levels; " + _ALB_UINT8),
    dali=DaliLowering(needs_size=True, apply=_dali_shadow, draws=_dali_shadow_draws, reports=("vertices",),
                      note="draws the range's largest number of polygons for every sample (reported; those "
                           "beyond num_shadows darken nothing); edge tests in float32, exact below 4096 pixels"),
)


# --------------------------------------------------------------------------------------------
# RandomRain

_RAIN_TYPES = ("default", "drizzle", "heavy", "torrential")


def _rain_reference(image, row, params):
    """The input with the reported drops (or those the reported seed places) drawn, blurred,
    added and darkened, in floats."""
    import kornia
    import torch

    x = _torch_image(image)
    height, width = x.shape[-2:]
    length = weather_drop_length(height, params["drop_length"])
    if "drops" in row:
        drops = _values(row, "drops").reshape(-1, 2)
        drops = torch.from_numpy(drops[np.isfinite(drops).all(axis=1)])  # NaN-padded to the batch's largest count
    elif "drop_hash" in row:
        drops = torch.from_numpy(_hash_drops(row["drop_hash"], height, width, params["rain_type"],
                                             params["drop_length"]))
    else:
        drops = weather_rain_drops(int(row["seed"]), height, width, params["rain_type"], params["drop_length"])
    mask = weather_streak_mask(drops, float(row["slant"]), length, height, width)
    layer = mask[None, None] * torch.tensor(params["drop_color"], dtype=torch.float64).view(1, 3, 1, 1) / 255.0
    blur = params["blur_value"]
    if blur > 1:
        layer = kornia.filters.box_blur(layer, (blur, blur), border_type="reflect")
    return _hwc(torch.clamp(x + layer, 0.0, 1.0) * params["brightness_coefficient"])


# DALI places the drops with a counter-based hash of (drop index, the sample's drawn `drop_hash`),
# since their count follows each image's height and a per-sample random operator's output could not
# be reported for a batch of mixed sizes: `_hash_drops` lists the same drops in numpy. DALI's copy of the
# multipliers is RAIN_HASH_MULTIPLIERS in runtime/dali_ops/weather.py (this module imports no DALI).
_HASH_MULTIPLIERS = (0x9E3779B9, 0x7FEB352D, 0x846CA68B, 0x68E31DA4)


def _hash32(h):
    """lowbias32 on uint32 arrays (shifts written as divisions, as DALI's arithmetic has no shift)."""
    h = h ^ (h // np.uint32(65536))
    h = h * np.uint32(_HASH_MULTIPLIERS[1])
    h = h ^ (h // np.uint32(32768))
    h = h * np.uint32(_HASH_MULTIPLIERS[2])
    return h ^ (h // np.uint32(65536))


def _hash_drops(drop_hash, height, width, rain_type, drop_length) -> np.ndarray:
    """(count, 2) start points (x, y) of the drops DALI places for a sample's `drop_hash`."""
    count = weather_rain_count(height, rain_type)
    span = max(height - weather_drop_length(height, drop_length), 1)
    with np.errstate(over="ignore"):
        h = _hash32(np.arange(count, dtype=np.uint32) * np.uint32(_HASH_MULTIPLIERS[0]) + np.uint32(int(drop_hash)))
        g = _hash32(h + np.uint32(_HASH_MULTIPLIERS[3]))
    return np.stack([h % np.uint32(width), g % np.uint32(span)], axis=1).astype(np.int64)


def _dali_rain(a, c, d):
    """Kornia's rain in DALI (random_rain, runtime/dali_ops/weather.py): the drops from the hash (see
    _hash_drops), each streak written as its vertical runs erased to drop_color on a blank layer,
    box-blurred with mirrored borders, added, darkened. Every drop gets as many runs as the widest
    slant of slant_range needs."""
    lo, hi = a["slant_range"]
    widest = int(max(math.floor(hi), -math.floor(lo), 0))
    count = {"drizzle": 4.0, "heavy": 1.0, "torrential": 0.5}.get(a["rain_type"], 3.0)
    return [f"{c.x} = " + _call("random_rain", c.x, c.height, c.width, d["slant"], d["drop_hash"], count=count,
                                drop_length=float(a["drop_length"]), widest=widest,
                                drop_color=[float(x) for x in a["drop_color"]], blur_value=int(a["blur_value"]),
                                brightness_coefficient=float(a["brightness_coefficient"]), scale=_scale(c))]


def _from_rain(t):
    if int(t.drop_width) != 1:
        raise ValueError(f"drop_width={t.drop_width}: RandomRain draws streaks one pixel wide (drop_width=1)")
    return {"slant_range": _pair(t, "slant_range"), "drop_length": 0 if t.drop_length is None else int(t.drop_length),
            "drop_color": _colour(t, "drop_color"), "blur_value": int(t.blur_value),
            "brightness_coefficient": float(t.brightness_coefficient), "rain_type": str(t.rain_type)}


def _rain_args(a):
    return {"slant_range": tuple(a["slant_range"]), "drop_length": a["drop_length"],
            "drop_color": tuple(a["drop_color"]), "blur_value": a["blur_value"],
            "brightness_coefficient": a["brightness_coefficient"], "rain_type": a["rain_type"]}


def _alb_rain_args(a):
    return {"slant_range": tuple(a["slant_range"]), "drop_length": a["drop_length"] or None, "drop_width": 1,
            "drop_color": _ints(a["drop_color"]), "blur_value": a["blur_value"],
            "brightness_coefficient": a["brightness_coefficient"], "rain_type": a["rain_type"]}


_RAIN_CASE = {"slant_range": [6.5, 6.5], "drop_length": 0, "drop_color": [200.0, 200.0, 200.0], "blur_value": 7,
              "brightness_coefficient": 0.7, "rain_type": "heavy"}

RANDOM_RAIN = OpSpec(
    name="RandomRain", family="weather", default_p=0.5,
    min_input=kernel_reach("blur_value"),
    # Each backend against the streaks of its own drops (Kornia reports a seed that places them).
    # Measured on the same-size set, seed 3: Kornia 0.00/255, Albumentations 2.14/255 / 38.1 dB
    # (OpenCV's 4-connected line raster steps sideways at other rows than the workbench's, and it
    # rounds after the blur and after the darkening); DALI 0.26/255 / 58.5 dB (seeds 1, 3, 7: the
    # same streaks, measured pixel-exact on black images; one rounding to a level at the end).
    # On the photos of mixed sizes (Albumentations' drops come NaN-padded), seeds 1, 3, 7:
    # Albumentations 2.21-2.23/255 / 36.4 dB, DALI 0.26/255 / 58.6 dB.
    parity=Parity(border=0, mae=2.6 / 255, psnr=35.5, params=_RAIN_CASE,
                  reference=lambda image, row: _rain_reference(image, row, _RAIN_CASE)),
    doc="Rain (A.RandomRain): streaks of drop_color from random points, drop_length long and slanted by a "
        "number of pixels drawn from slant_range, box-blurred, added to the image, which is then darkened by "
        "brightness_coefficient; rain_type sets the number of drops.",
    params=(
        Range("slant_range", "horizontal shift of a streak's end, in pixels (Albumentations' 'slant')",
              (-10.0, 10.0), lo=-20.0, hi=20.0),
        Number("drop_length", "streak length in pixels, below the image height; 0 = height // 8 (Albumentations' "
               "None)", 0, lo=0, hi=64, integer=True),
        Floats("drop_color", "streak colour, RGB levels 0-255", (200.0, 200.0, 200.0), length=3, lo=0.0, hi=255.0),
        Number("blur_value", "box blur side in pixels (1 = none)", 7, lo=1, hi=31, integer=True),
        Number("brightness_coefficient", "factor the rainy image is darkened by", 0.7, lo=0.01, hi=1.0),
        Choice("rain_type", "drops per image: default height // 3, drizzle height // 4, heavy height, "
               "torrential 2 x height", "default", options=_RAIN_TYPES),
    ),
    kornia=KorniaLowering("WorkbenchRandomRain", _rain_args, local=True,
                          from_module=kr.arguments("slant_range", "drop_length", "drop_color", "blur_value",
                                                   "brightness_coefficient", "rain_type"),
                          record={"slant": "slant", "seed": "seed"}),
    albumentations=AlbumentationsLowering(
        "RandomRain", _alb_rain_args, record={"slant": "slant", "rain_drops": "drops"}, from_transform=_from_rain,
        note="fails on images no taller than drop_length; draws its streaks with OpenCV's 4-connected line "
             "raster (a pixel here and there differs from the workbench's); " + _ALB_UINT8),
    dali=DaliLowering(
        needs_size=True, apply=_dali_rain,
        draws=lambda a: {"slant": uniform(*a["slant_range"]),
                         "drop_hash": RandomOp("fn.random.uniform",
                                               {"range": (0, 2 ** 24), "dtype": Name("types.INT32")})},
        note="places the drops with a hash of the drop's index and a drawn per-sample drop_hash (Kornia seeds "
             "torch's generator): the same streaks for the drops it reports"),
)


# --------------------------------------------------------------------------------------------
# RandomFog

def _from_fog(t):
    return {"fog_coef_range": _pair(t, "fog_coef_range"), "alpha_coef": float(t.alpha_coef)}


def _dali_fog(a, c, d):
    """A.RandomFog without placing discs (DALI has no scatter-add): each pixel gets the fog's expected
    transmission over the discs' placements, times a log-normal texture of the spread they give
    (random_fog, runtime/dali_ops/weather.py, says how)."""
    return [f"{c.x} = " + _call("random_fog", c.x, c.height, c.width, d["intensity"],
                                alpha_coef=float(a["alpha_coef"]), noise_seed=c.seed(1), scale=_scale(c))]


RANDOM_FOG = OpSpec(
    name="RandomFog", family="weather", default_p=0.5,
    min_input=lambda a: (2, "its closing blur (3x3 on small images) reaches 1 pixel past each border, "
                                "which is reflected"),
    # No per-pixel reference: Albumentations rounds to a whole level after each of its ~1,000
    # disc blends, which stalls where a blend would move a level by less than half (about 20
    # levels below white at intensity 0.5): compare the change's per-channel mean and spread.
    # Measured on the same-size set, seed 3: per-channel mean of the change Kornia 4.94/6.01/6.56,
    # Albumentations 4.85/5.90/6.45; spread 9.52/10.22/10.62 vs 9.75/10.44/10.86 (largest gap 0.24/255).
    # DALI (no discs: the fog's mean and per-pixel spread, see _dali_fog), same set, seed 3: mean
    # 4.78/5.83/6.35, spread 9.67/10.42/10.79: largest gap 0.21/255 vs Kornia, 0.10/255 vs
    # Albumentations. Seeds 0-4, largest gaps: same-size set DALI-Kornia 0.20-0.32/255,
    # DALI-Albumentations 0.10-0.42/255 (Kornia-Albumentations 0.10-0.40/255); the 8 sample photos
    # at their sizes DALI-Kornia 0.13-0.39/255, DALI-Albumentations 0.11-0.38/255
    # (Kornia-Albumentations 0.12-0.53/255). A smooth field without the texture falls ~1.7/255 short.
    parity=Parity(statistics=True, mae=1.0 / 255, same_size=True,
                  params={"fog_coef_range": [0.5, 0.5], "alpha_coef": 0.08}),
    cost_hint="Kornia counts, per pixel, the fog discs (about a thousand per image) that cover it, then blurs "
              "(a lower fog_coef_range means more, smaller discs); DALI computes ten rounds of per-pixel "
              "arithmetic and two blurs, whatever the number of discs.",
    doc="Fog (A.RandomFog): white discs around the image centre, each blended over the image with weight "
        "alpha_coef x intensity (intensity drawn from fog_coef_range), then a light Gaussian blur.",
    params=(
        Range("fog_coef_range", "fog intensity (more, larger discs and a stronger blend)", (0.3, 1.0),
              lo=0.0, hi=1.0),
        Number("alpha_coef", "blend weight of one disc at intensity 1", 0.08, lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering("WorkbenchRandomFog", lambda a: {"fog_coef_range": tuple(a["fog_coef_range"]),
                                                           "alpha_coef": a["alpha_coef"]},
                          local=True,
                          from_module=kr.arguments("fog_coef_range", "alpha_coef"),
                          record={"intensity": "intensity", "seed": "seed"}),
    albumentations=AlbumentationsLowering(
        "RandomFog", lambda a: {"fog_coef_range": tuple(a["fog_coef_range"]), "alpha_coef": a["alpha_coef"]},
        record={"intensity": "intensity"}, from_transform=_from_fog,
        note="rounds to a whole level after each disc's blend, so bright areas stop short of white; "
             + _ALB_UINT8),
    dali=DaliLowering(
        needs_size=True, apply=_dali_fog, draws=lambda a: {"intensity": uniform(*a["fog_coef_range"])},
        note="places no discs (DALI has no scatter-add): each pixel gets the fog Albumentations' discs give it "
             "on average (their counts, regions, centre and radii as Albumentations computes them: centre "
             "int(W / 2 - 0.5), where Kornia's module takes int(W / 2), a pixel further right (and down) on even "
             "sides; a disc's footprint taken as a square of the mean disc area, so the fog's edge is slightly "
             "softer), times a log-normal texture of the per-pixel spread the discs give, in blobs about a disc "
             "wide (blurred Gaussian noise); the fog's mean and spread match (statistics parity), but its blobs "
             "are not round discs and the intensity is the only draw reported"),
)


# --------------------------------------------------------------------------------------------
# RandomSunFlare

def _flare_reference(image, row, params):
    import torch

    module = WorkbenchRandomSunFlare(**_flare_args(params), p=1.0)
    keys = ("flare_x", "flare_y", "num_circles", "circle_alpha", "circle_x", "circle_y", "circle_radius")
    drawn = {k: torch.from_numpy(_values(row, k))[None] for k in keys}
    drawn["circle_color"] = torch.from_numpy(_values(row, "circle_color").reshape(1, -1, 3))
    drawn["flare_x"], drawn["flare_y"], drawn["num_circles"] = (drawn[k][:, 0] for k in
                                                               ("flare_x", "flare_y", "num_circles"))
    return _hwc(module.apply_transform(_torch_image(image), drawn, {}))


def _from_flare(t):
    if t.method != "overlay":
        raise ValueError(f"method={t.method!r}: RandomSunFlare blends the flare as method='overlay' does")
    return {"flare_roi": [float(v) for v in t.flare_roi], "angle_range": _pair(t, "angle_range"),
            "num_flare_circles_range": _pair(t, "num_flare_circles_range"), "src_radius": int(t.src_radius),
            "src_color": _colour(t, "src_color")}


def _flare_args(a):
    return {"flare_roi": _roi(a["flare_roi"]), "angle_range": tuple(a["angle_range"]),
            "num_flare_circles_range": _ints(a["num_flare_circles_range"]), "src_radius": a["src_radius"],
            "src_color": tuple(a["src_color"])}


def _alb_flare_args(a):
    return {**_flare_args(a), "src_color": _ints(a["src_color"]), "method": "overlay"}


def _alb_flare_record(raw):
    """A.RandomSunFlare's draws: flare_center, and its circles (alpha, (x, y), radius, (r, g, b))
    as rows of 7 numbers where the recorder flattens them (see the note)."""
    centre = np.asarray(raw.get("flare_center", (np.nan, np.nan)), dtype=np.float64).reshape(-1)
    out = {"flare_x": float(centre[0]), "flare_y": float(centre[1])}
    if "circles" in raw:
        circles = np.asarray(raw["circles"], dtype=np.float64).reshape(-1, 7)
        out.update(num_circles=float(len(circles)), circle_alpha=circles[:, 0], circle_x=circles[:, 1],
                   circle_y=circles[:, 2], circle_radius=circles[:, 3], circle_color=circles[:, 4:])
    return out


def _dali_flare_draws(a):
    x0, y0, x1, y1 = _roi(a["flare_roi"])
    most = _ints(a["num_flare_circles_range"])[1]
    return {"_angle": uniform(*a["angle_range"]), "_fx": uniform(x0, x1), "_fy": uniform(y0, y1),
            "num_circles": _whole(*_ints(a["num_flare_circles_range"])), "_alpha": _uniforms(0.05, 0.2, (most,)),
            "_t": _uniforms(0.0, 1.0, (most,)), "_r": _uniforms(0.0, 1.0, (most,)),
            "_c": _uniforms(0.0, 1.0, (most, 3))}


def _dali_flare(a, c, d):
    """Kornia's module in DALI (runtime/dali_ops/weather.py): the same draws (the largest count of
    circles, those beyond the sample's count with alpha 0) placed as it places them (flare_circles),
    then each circle and each of the sun's src_radius // 10 discs blended over the image as a mask of
    the coordinate grids, in the images' units (flare_overlay)."""
    most = _ints(a["num_flare_circles_range"])[1]
    colour = [float(v) for v in a["src_color"]]
    v = {n: c.var(n) for n in ("flare_x", "flare_y", "circle_alpha", "circle_x", "circle_y", "circle_radius",
                               "circle_color", "strength", "out")}
    circles = [v[n] for n in ("flare_x", "flare_y", "circle_alpha", "circle_x", "circle_y", "circle_radius",
                              "circle_color")]
    return [
        ", ".join([*circles, v["strength"]]) + " = " + _call(
            "flare_circles", c.height, c.width, d["_angle"], d["_fx"], d["_fy"], d["num_circles"], d["_alpha"],
            d["_t"], d["_r"], d["_c"], most=most, src_color=colour),
        f"{v['out']} = " + _call("flare_overlay", c.x, c.height, c.width, *circles, v["strength"], most=most,
                                 src_radius=int(a["src_radius"]), src_color=colour, scale=_scale(c)),
        f"{c.x} = " + _call("weather_to_images", v["out"], _scale(c)),
    ]


_FLARE_CASE = {"flare_roi": [0.2, 0.1, 0.8, 0.5], "angle_range": [0.0, 1.0], "num_flare_circles_range": [8.0, 8.0],
               "src_radius": 60, "src_color": [255.0, 240.0, 200.0]}

RANDOM_SUN_FLARE = OpSpec(
    name="RandomSunFlare", family="weather", default_p=0.5,
    # Each backend against the flare rendered from its own reported circles. Kornia 0.00/255 (the
    # reference is its code); A.RandomSunFlare's output at its own draws is 0.14-0.16/255 from the
    # workbench's rendering of them (measured on three same-size photos; it rounds after each blend);
    # DALI 0.10-0.12/255 / 62 dB (seeds 1, 3, 7: float32 blends, one rounding to a level).
    # The change's statistics are no test here: the sun's place moves them by 5/255 between seeds.
    parity=Parity(border=0, mae=0.5 / 255, psnr=40.0, same_size=True, params=_FLARE_CASE,
                  reference=lambda image, row: _flare_reference(image, row, _FLARE_CASE)),
    doc="Sun flare (A.RandomSunFlare, method 'overlay'): circles of colours near src_color along a line "
        "through the sun, then the sun as src_radius // 10 concentric discs of src_color blended with rising "
        "weight.",
    params=(
        Floats("flare_roi", "region of the sun's centre: x_min, y_min, x_max, y_max as fractions of the image "
               "(corners in either order)",
               (0.0, 0.0, 1.0, 0.5), length=4, lo=0.0, hi=1.0),
        Range("angle_range", "direction of the flare line, in turns (1 = 360 degrees)", (0.0, 1.0), lo=0.0, hi=1.0),
        Range("num_flare_circles_range", "number of flare circles (whole numbers, both ends included)", (6.0, 10.0),
              lo=1.0, hi=50.0),
        Number("src_radius", "sun radius in pixels", 400, lo=2, hi=4000, integer=True, sample_hi=64,
               slider=(2, 800)),
        Floats("src_color", "sun colour, RGB levels 0-255", (255.0, 255.0, 255.0), length=3, lo=0.0, hi=255.0),
    ),
    cost_hint="the sun is src_radius // 10 full-image blends; a smaller src_radius is cheaper.",
    kornia=KorniaLowering("WorkbenchRandomSunFlare", _flare_args, local=True,
                          from_module=kr.arguments("flare_roi", "angle_range", "num_flare_circles_range", "src_radius",
                                                   "src_color"), record={
        k: k for k in ("flare_x", "flare_y", "num_circles", "circle_alpha", "circle_x", "circle_y", "circle_radius",
                       "circle_color")}),
    albumentations=AlbumentationsLowering(
        "RandomSunFlare", _alb_flare_args, record=_alb_flare_record, from_transform=_from_flare,
        note=_ALB_UINT8),
    dali=DaliLowering(needs_size=True, apply=_dali_flare, draws=_dali_flare_draws,
                      reports=("flare_x", "flare_y", "circle_alpha", "circle_x", "circle_y", "circle_radius",
                               "circle_color"),
                      note="draws the range's largest number of circles for every sample (reported; those beyond "
                           "num_circles have alpha 0); blends in float32 and rounds once to a level"),
)


# --------------------------------------------------------------------------------------------
# RandomSnow

def _dali_snow(a, c, d):
    """Kornia's weather_snow_bleach in DALI (random_snow, runtime/dali_ops/weather.py): each pixel's
    HLS lightness lifted below the threshold, the channels moved with it."""
    return [f"{c.x} = " + _call("random_snow", c.x, d["snow_point"], float(a["brightness_coeff"]), _scale(c))]


def _from_snow(t):
    if t.method != "bleach":
        raise ValueError(f"method={t.method!r}: RandomSnow bleaches (method='bleach'); the 'texture' method's "
                         "per-pixel noise and sparkles are not lowered")
    return {"snow_point_range": _pair(t, "snow_point_range"), "brightness_coeff": float(t.brightness_coeff)}


def _snow_args(a):
    return {"snow_point_range": tuple(a["snow_point_range"]), "brightness_coeff": a["brightness_coeff"]}


RANDOM_SNOW = OpSpec(
    name="RandomSnow", family="weather", default_p=0.5,
    # Direct comparison on the photos, seed 3: DALI 0.08/255 / 62.6 dB from Kornia (float32, one rounding);
    # Albumentations 0.24/255 / 53.1 dB (8-bit HLS round trip: hue in 2-degree steps).
    parity=Parity(border=0, mae=0.4 / 255, psnr=48.0, params={"snow_point_range": [0.3, 0.3], "brightness_coeff": 2.5}),
    doc="Snow (A.RandomSnow, method 'bleach'): pixels whose HLS lightness is below snow_point / 2 + 1/3 "
        "(snow_point drawn from snow_point_range) get that lightness multiplied by brightness_coeff (at most "
        "white), hue and saturation kept.",
    params=(
        Range("snow_point_range", "snow amount: a higher snow_point lifts brighter pixels too", (0.1, 0.3),
              lo=0.0, hi=1.0),
        Number("brightness_coeff", "factor the lightness of the snowed pixels is multiplied by", 2.5, lo=0.01,
               hi=10.0, slider=(0.5, 5.0)),
    ),
    kornia=KorniaLowering("WorkbenchRandomSnow", _snow_args, local=True,
                          from_module=kr.arguments("snow_point_range", "brightness_coeff"),
                          record={"snow_point": "snow_point"}),
    dali=DaliLowering(apply=_dali_snow, draws=lambda a: {"snow_point": uniform(*a["snow_point_range"])},
                      mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "RandomSnow", lambda a: {**_snow_args(a), "method": "bleach"}, record={"snow_point": "snow_point"},
        from_transform=_from_snow,
        note="converts to 8-bit HLS and back (hue in 2-degree steps, lightness and saturation in whole levels), "
             "which moves every pixel a little, snowed or not"),
)

OPS = (RANDOM_RAIN, RANDOM_FOG, RANDOM_SUN_FLARE, RANDOM_SHADOW, RANDOM_SNOW)
