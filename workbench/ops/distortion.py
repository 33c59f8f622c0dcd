"""Non-rigid distortions: elastic, grid and optical (lens) distortion.

Each is Albumentations 2.0.8's transform of the same name (A.ElasticTransform, A.GridDistortion,
A.OpticalDistortion), its parameters under the same names and in the same units, so
`Chain.from_albumentations` maps them one to one, default arguments included. Kornia runs the
workbench's own modules (runtime/kornia_modules/distortion.py), which build Albumentations'
cv2.remap maps in torch, per sample and batched, and resample them with the same pixel-centre
and zero-fill conventions.

DALI has no CPU operator that resamples through per-pixel maps (see _DALI_REMAP_GPU_ONLY), but the
grid distortion is separable (map_x depends on x alone, map_y on y alone, linear within each
cell), so it runs there as one fn.resize per cell and axis. OpticalDistortion runs on DALI's GPU
only: its maps are built per sample on the CPU and fn.experimental.remap resamples on the GPU
(OpSpec.gpu_only: a DALI CPU run, preview, script or estimate refuses it, saying so).
ElasticTransform runs on DALI's GPU only too: its field is built in the graph (the noise hash in
uint32 arithmetic, fn.gaussian_blur) and resampled by the same remap.

The draws are random fields that no collapsed range pins down: GridDistortion reports the
steps its grid uses, OpticalDistortion its coefficient k and ElasticTransform the seed of its
noise (every backend computes the noise from that seed with one counter-based hash,
runtime/targets.py's elastic_noise, with Albumentations' distributions; the Albumentations
export writes a subclass that draws the seed first), from which the image is determined, so
parity compares each backend with Albumentations' remap through the maps built from that
backend's reported draws (Parity.reference). The same draws rebuild the fields in
runtime/targets.py, which moves masks, boxes and keypoints through them.
"""
import math

import numpy as np

from ..runtime import targets
from ..runtime.targets import grid_axis, optical_maps
from .geometric import _CV_INTERP, _INTERP, _ZERO_BORDER, _interp_from, _zero_border_from
from ..literals import Name, literal
from .dali_helpers import INTERP, RandomOp, uniform
from .params import Choice, Flag, Number, Range
from .spec import AlbumentationsLowering, DaliLowering, Inverse, KorniaLowering, OpSpec, Parity, TargetRule
from . import kornia_reading as kr
from . import torchvision_reading as tv

# DALI's only operator that resamples through per-pixel maps is fn.experimental.remap, and DALI 2.4
# registers it for the GPU only ("Operator experimental__Remap not registered for cpu").
_DALI_REMAP_GPU_ONLY = ("remap runs on the GPU only in DALI: fn.experimental.remap, DALI's only resampler through "
                        "per-pixel maps, has no CPU operator in DALI 2.4")
_ALB_NOTE = "works on 8-bit levels: the resampled image is rounded (Kornia keeps floats)"


def _check_within(name: str, value, lo: float, hi: float) -> None:
    values = [float(v) for v in np.atleast_1d(np.asarray(value, dtype=np.float64))]
    if not all(lo <= v <= hi for v in values):
        raise ValueError(f"{name}={value!r} is outside [{lo:g}, {hi:g}], the range the op takes")


def _limit_from(t, lo: float = -1.0, hi: float = 1.0) -> list[float]:
    _check_within("distort_limit", t.distort_limit, lo, hi)
    return [float(t.distort_limit[0]), float(t.distort_limit[1])]


def _remap_reference(image, map_x, map_y):
    """cv2.remap of the image (as float, bilinear, 0 outside) in [0, 1] units."""
    import cv2

    out = cv2.remap(np.asarray(image, dtype=np.float32), np.asarray(map_x, np.float32), np.asarray(map_y, np.float32),
                    interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return out.astype(np.float64) / 255.0


def _maps_of(raw) -> tuple[np.ndarray, np.ndarray]:
    """A distortion's recorded map_x and map_y, cut to the image (the runner pads them with NaN to
    the largest image of the batch)."""
    map_x, map_y = np.asarray(raw["map_x"], np.float64), np.asarray(raw["map_y"], np.float64)
    height, width = int(np.isfinite(map_x[:, 0]).sum()), int(np.isfinite(map_x[0]).sum())
    return map_x[:height, :width], map_y[:height, :width]


# --------------------------------------------------------------------------------------------
# ElasticTransform

def _elastic_from(t):
    _zero_border_from(t)
    _check_within("alpha", t.alpha, 0.0, 1000.0)
    _check_within("sigma", t.sigma, 1.0, 200.0)
    return {"alpha": float(t.alpha), "sigma": float(t.sigma), "approximate": bool(t.approximate),
            "same_dxdy": bool(t.same_dxdy), "noise_distribution": str(t.noise_distribution),
            "interpolation": _interp_from(t)}


def _tv_elastic(t, notes):
    """v2.ElasticTransform: uniform noise in [-1, 1] per axis, blurred by a Gaussian of int(8 sigma + 1)
    taps (made odd), times alpha / width (x) and alpha / height (y) in grid units of half the image:
    alpha / 2 pixels on both axes, the op's field with noise_distribution='uniform' and alpha / 2."""
    alpha, sigma = [float(a) for a in t.alpha], [float(s) for s in t.sigma]
    if alpha[0] != alpha[1] or sigma[0] != sigma[1]:
        raise ValueError(f"alpha={alpha}, sigma={sigma}: ElasticTransform takes one alpha and one sigma for both "
                         "axes")
    tv.zero_fill(t, "ElasticTransform")
    _check_within("sigma", sigma[0], 1.0, 200.0)
    _check_within("alpha", alpha[0] / 2.0, 0.0, 1000.0)
    notes.append("v2.ElasticTransform: alpha is in half-image grid units; the op's alpha is in pixels (alpha / 2)")
    return {"alpha": alpha[0] / 2.0, "sigma": sigma[0], "approximate": False, "same_dxdy": False,
            "noise_distribution": "uniform", "interpolation": tv.interpolation(t, "ElasticTransform")}


_ELASTIC_PARITY = {"alpha": 60.0, "sigma": 6.0, "approximate": False, "same_dxdy": False,
                   "noise_distribution": "gaussian"}


def _elastic_taps(a) -> int:
    """The Gaussian's taps: 17 when approximate, else OpenCV's round(8 sigma + 1) made odd."""
    return 17 if a["approximate"] else len(targets.gaussian_kernel(float(a["sigma"]), 0))


def _dali_elastic(a, c, d):
    """The maps from the reported seed on the images' device (elastic_maps_dali: the field built in the
    graph), then the image resampled through them on the GPU (remap_distortion)."""
    frame, map_x, map_y = (c.var(n) for n in ("frame", "map_x", "map_y"))
    return [
        f"{frame} = remap_frame({c.height}, {c.width})",
        f"{map_x}, {map_y} = elastic_maps_dali({c.x}, {d['seed']}, {c.height}, {c.width}, {frame}, "
        f"alpha={literal(float(a['alpha']))}, sigma={literal(float(a['sigma']))}, taps={literal(_elastic_taps(a))}, "
        f"fields={literal(1 if a['same_dxdy'] else 2)}, distribution={literal(a['noise_distribution'])})",
        f"{c.x} = remap_distortion({c.x}, {map_x}, {map_y}, {c.height}, {c.width}, {frame}, "
        f"interp={INTERP[a['interpolation']]}, uint8={literal(c.scale == 255.0)})",
    ]


def _elastic_reference(image, row):
    """cv2.remap through the field rebuilt from the reported seed (at the parity parameters)."""
    height, width = np.shape(image)[:2]
    dx, dy = targets.elastic_field(_ELASTIC_PARITY, row["seed"], height, width)
    xs, ys = np.meshgrid(np.arange(width), np.arange(height))
    return _remap_reference(image, xs + dx, ys + dy)


ELASTIC_TRANSFORM = OpSpec(
    name="ElasticTransform", family="geometric", targets=TargetRule(field=targets.elastic_distortion),
    from_torchvision=Inverse("ElasticTransform", _tv_elastic),
    default_p=0.5,
    # Every backend computes each sample's noise from the reported seed (elastic_noise's hash; the seeds
    # differ): each is compared with Albumentations' remap of the field rebuilt from its own seed.
    # Measured on the 8 photos, seed 3: Kornia 0.000/255 and 130 dB, Albumentations 0.237/255 and 59.2 dB
    # (8-bit rounding); DALI runs on the GPU only (tests/test_ops_distortion.py compares it there).
    parity=Parity(mae=0.4 / 255, psnr=55.0, params=_ELASTIC_PARITY, reference=_elastic_reference),
    cost_hint="computes an image-sized noise field per sample (on the CPU for Kornia and Albumentations, in the "
              "graph on DALI's GPU) and blurs it with a Gaussian of 8 sigma + 1 taps (through the FFT when long); "
              "approximate=True blurs with 17 taps.",
    doc="Elastic deformation (A.ElasticTransform): per sample, random noise per pixel (Gaussian, divided by its "
        "largest magnitude, or uniform in [-1, 1]) for the x and y shifts, blurred together by a Gaussian of "
        "sigma pixels and times alpha, moves each pixel; outside filled with 0. The noise has Albumentations' "
        "distributions, computed from a seed drawn per sample by one hash on every backend; reported as that "
        "seed, from which the field (and the masks, boxes and keypoints moved through it) is rebuilt.",
    params=(
        Number("alpha", "scale of the shifts in pixels (about 1 / (3.5 sigma) of alpha with Gaussian noise)",
               1.0, lo=0.0, hi=1000.0, slider=(0.0, 200.0)),
        Number("sigma", "smoothness of the field: the blur's standard deviation in pixels", 50.0, lo=1.0, hi=200.0,
               slider=(1.0, 100.0)),
        Flag("approximate", "blur with a 17 x 17 kernel instead of one of 8 sigma + 1 taps", False),
        Flag("same_dxdy", "one field for both the x and the y shift", False),
        Choice("noise_distribution", "the noise before the blur", "gaussian", options=("gaussian", "uniform")),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "WbElasticTransform",
        lambda a: {"alpha": a["alpha"], "sigma": a["sigma"], "approximate": a["approximate"],
                   "same_dxdy": a["same_dxdy"], "noise_distribution": a["noise_distribution"],
                   "resample": a["interpolation"]},
        record={"seed": "seed"}, local=True,
        from_module=kr.arguments("alpha", "sigma", "approximate", "same_dxdy", "noise_distribution",
                                 interpolation="resample"),
    ),
    albumentations=AlbumentationsLowering(
        "ElasticTransform",
        lambda a: {"alpha": a["alpha"], "sigma": a["sigma"], "approximate": a["approximate"],
                   "same_dxdy": a["same_dxdy"], "noise_distribution": a["noise_distribution"],
                   "interpolation": _CV_INTERP[a["interpolation"]], **_ZERO_BORDER},
        record={"seed": "seed"}, from_transform=_elastic_from,
        note="the export writes WbElasticTransform, an A.ElasticTransform that draws a seed from its generator "
             "and its noise from that seed (A draws the noise from its generator directly), so that the field can "
             "be rebuilt; " + _ALB_NOTE,
    ),
    dali=DaliLowering(
        needs_size=True, apply=_dali_elastic,
        # Integer uniform draws are inclusive in DALI and overflow near 2^31: 24 bits of seed.
        draws=lambda a: {"seed": RandomOp("fn.random.uniform", {"range": (0, 16777215),
                                                                "dtype": Name("types.INT32")})},
        note="runs on the GPU only (fn.experimental.remap); the field is built on the GPU from the seed (the "
             "noise hash in uint32 arithmetic, fn.gaussian_blur), equal to the other backends' within 1e-5 "
             "pixels; seeds have 24 bits; images up to 32768 pixels a side",
    ),
    gpu_only={"dali": _DALI_REMAP_GPU_ONLY},
)


# --------------------------------------------------------------------------------------------
# GridDistortion

def _grid_reference(image, row):
    """Albumentations' generate_grid from the reported steps (cells that cover no pixel report
    NaN: they do not matter), then cv2.remap."""
    from albumentations.augmentations.geometric import functional as fgeometric

    steps_x = np.nan_to_num(np.asarray(row["steps_x"], np.float64).reshape(-1))
    steps_y = np.nan_to_num(np.asarray(row["steps_y"], np.float64).reshape(-1))
    map_x, map_y = fgeometric.generate_grid(np.shape(image)[:2], list(steps_x), list(steps_y), len(steps_x) - 1)
    return _remap_reference(image, map_x, map_y)


def _steps_from_axis(values: np.ndarray, num_steps: int) -> np.ndarray | None:
    """The steps of generate_grid that give `values` along one side if it has `num_steps` cells
    (NaN for a cell that shows no step: empty, or one pixel at the end)."""
    size = len(values)
    cell = size // num_steps
    if cell == 0:
        return None
    steps = np.full(num_steps + 1, np.nan)
    for i in range(num_steps + 1):
        start = i * cell
        end = min(start + cell, size)
        if start >= size:
            break
        if end - start >= 2:
            cur = values[end - 1]
        elif end < size and i < num_steps:
            cur = values[end]  # the next cell starts where this one ends
        else:
            break
        steps[i] = (cur - values[start]) / cell
    rebuilt = grid_axis(steps, size, num_steps)
    return steps if np.abs(rebuilt - values).max() <= 1e-3 + 1e-6 * size else None


def _grid_record(raw) -> dict:
    """A.GridDistortion keeps only its maps (map_x depends on x alone, map_y on y alone): the number
    of cells is the smallest that rebuilds both, the steps follow from the cells' ends."""
    map_x, map_y = _maps_of(raw)
    xs, ys = map_x[0], map_y[:, 0]
    for num_steps in range(1, min(64, len(xs), len(ys)) + 1):
        steps_x = _steps_from_axis(xs, num_steps)
        steps_y = _steps_from_axis(ys, num_steps) if steps_x is not None else None
        if steps_y is not None:
            return {"steps_x": steps_x, "steps_y": steps_y}
    return {}


def _dali_grid_draws(a):
    """num_steps + 1 uniform values of distort_limit per axis and sample."""
    lo, hi = (float(v) for v in a["distort_limit"])
    shape = (int(a["num_steps"]) + 1,)
    spread = {"values": [lo]} if lo == hi else {"range": (lo, hi)}
    return {"_ux": RandomOp("fn.random.uniform", {**spread, "shape": shape}),
            "_uy": RandomOp("fn.random.uniform", {**spread, "shape": shape})}


def _dali_grid(a, c, d):
    """The columns, then the rows, each resampled cell by cell with fn.resize (the grid is separable:
    map_x depends on x alone, map_y on y alone), on the image padded with 0 around it as far as the
    cells' windows reach (fn.resize must stay inside its input), so that sources past the edges are
    0 as cv2.remap's constant border makes them (grid_distortion_plan and grid_distortion_images,
    runtime/dali_ops/distortion.py). The plan (steps and cells) is computed for every sample: the
    steps are reported."""
    steps_x, steps_y, grid = c.var("steps_x"), c.var("steps_y"), c.var("grid")
    return [
        f"{steps_x}, {steps_y}, {grid} = grid_distortion_plan({d['_ux']}, {d['_uy']}, {c.height}, {c.width}, "
        f"num_steps={literal(int(a['num_steps']))}, normalized={literal(bool(a['normalized']))})",
        f"{c.x} = grid_distortion_images({c.x}, {grid}, {c.height}, {c.width}, uint8={literal(c.scale == 255.0)})",
    ]


def _grid_from(t):
    _zero_border_from(t)
    _check_within("num_steps", t.num_steps, 1, 64)
    return {"num_steps": int(t.num_steps), "distort_limit": _limit_from(t), "normalized": bool(t.normalized),
            "interpolation": _interp_from(t)}


GRID_DISTORTION = OpSpec(
    name="GridDistortion", family="geometric", targets=TargetRule(field=targets.grid_distortion), default_p=0.5,
    min_input=lambda a: (max(2, a["num_steps"]), f"each of its {a['num_steps']} grid cells per side needs "
                          "a pixel; lower num_steps"),
    # Steps are random per cell: each backend against Albumentations' grid at its own reported steps.
    # Measured on the 8 photos, seed 3: Kornia 0.000/255 and 131 dB (the same float resampling as the
    # reference's cv2.remap of a float image), DALI 0.237/255 and 59.2 dB, Albumentations 0.236/255 and 59.2 dB
    # (both round to 8-bit levels).
    parity=Parity(mae=0.4 / 255, psnr=55.0, params={"num_steps": 5, "distort_limit": [-0.3, 0.3], "normalized": True},
                  reference=_grid_reference),
    doc="Grid distortion (A.GridDistortion): the image is cut into num_steps cells per side (width // num_steps "
        "pixels, plus a last, shorter one) whose widths and heights are scaled by 1 + a value drawn from "
        "distort_limit per cell (per column of cells for x, per row for y) and sample; with normalized the "
        "scaled cells are stretched to span the image exactly. Reported as steps_x and steps_y, the num_steps + 1 "
        "scale factors the grid uses (after normalising). As in Albumentations, even zero distortion moves pixels "
        "by up to a pixel: each cell runs from its first to its last pixel at both ends.",
    params=(
        Number("num_steps", "cells per side", 5, lo=1, hi=64, integer=True),
        Range("distort_limit", "range of the per-cell change of size (0 = none)", (-0.3, 0.3), lo=-1.0, hi=1.0),
        Flag("normalized", "rescale the cells so that the grid spans the image exactly (nothing leaves it)", True),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "WbGridDistortion",
        lambda a: {"num_steps": a["num_steps"], "distort_limit": tuple(a["distort_limit"]),
                   "normalized": a["normalized"], "resample": a["interpolation"]},
        record={"steps_x": "steps_x", "steps_y": "steps_y"}, local=True,
        from_module=kr.arguments("num_steps", "distort_limit", "normalized", interpolation="resample"),
    ),
    albumentations=AlbumentationsLowering(
        "GridDistortion",
        lambda a: {"num_steps": a["num_steps"], "distort_limit": tuple(a["distort_limit"]),
                   "normalized": a["normalized"], "interpolation": _CV_INTERP[a["interpolation"]], **_ZERO_BORDER},
        record=_grid_record, from_transform=_grid_from, note=_ALB_NOTE,
    ),
    dali=DaliLowering(
        needs_size=True, reports=("steps_x", "steps_y"), draws=_dali_grid_draws, apply=_dali_grid,
        note="resamples cell by cell with fn.resize (bilinear, as cv2.remap); on images narrower (shorter) than "
             "num_steps x (num_steps + 1) pixels, where Albumentations maps the pixels past its last cell to "
             "column (row) 0, DALI fills them with 0",
    ),
)


# --------------------------------------------------------------------------------------------
# OpticalDistortion

def _optical_reference(mode: str):
    """Albumentations' maps for the reported k (camera or fisheye model), then cv2.remap."""
    def reference(image, row):
        from albumentations.augmentations.geometric import functional as fgeometric

        make = fgeometric.get_camera_matrix_distortion_maps if mode == "camera" else \
            fgeometric.get_fisheye_distortion_maps
        k = float(np.asarray(row["k"], np.float64).reshape(-1)[0])
        return _remap_reference(image, *make(np.shape(image)[:2], k))
    return reference


def _optical_record(raw) -> dict:
    """A.OpticalDistortion keeps only its maps: k from the top-left pixel's source under each
    model, the model whose maps (at that k) are the recorded ones."""
    map_x, map_y = _maps_of(raw)
    height, width = map_x.shape
    if height < 2 or width < 2:
        return {}
    x, y = -(width - 1) / 2.0 / width, -(height - 1) / 2.0 / height
    r2 = x * x + y * y
    candidates = {"camera": ((map_x[0, 0] - width / 2.0) / (width * x) - 1.0) / (r2 + r2 * r2),
                  # The corner is at the largest radius: r / r_max = 1 there.
                  "fisheye": (map_x[0, 0] - width / 2.0) / (-width / 2.0) - 1.0}
    best, error = math.nan, math.inf
    for mode, k in candidates.items():
        ys, xs = np.mgrid[0:height, 0:width]
        source = optical_maps(k, height, width, mode, np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float64))
        gap = max(np.abs(source[:, 0] - map_x.ravel()).max(), np.abs(source[:, 1] - map_y.ravel()).max())
        if gap < error:
            best, error = float(k), gap
    return {"k": best}


def _dali_optical_draws(a):
    """k per sample, uniform in distort_limit (reported, as the other backends report it)."""
    return {"k": uniform(*(float(v) for v in a["distort_limit"]))}


def _dali_optical(a, c, d):
    """The maps from k on the CPU (optical_distortion_maps), then the image resampled through them on
    the GPU (remap_distortion: fn.experimental.remap, the image padded with zeros as cv2.remap's border)."""
    frame, map_x, map_y = c.var("frame"), c.var("map_x"), c.var("map_y")
    return [
        f"{frame} = remap_frame({c.height}, {c.width})",
        f"{map_x}, {map_y} = optical_distortion_maps({d['k']}, {c.height}, {c.width}, "
        f"fisheye={literal(a['mode'] == 'fisheye')}, frame={frame})",
        f"{c.x} = remap_distortion({c.x}, {map_x}, {map_y}, {c.height}, {c.width}, {frame}, "
        f"interp={INTERP[a['interpolation']]}, uint8={literal(c.scale == 255.0)})",
    ]


def _optical_from(t):
    _zero_border_from(t)
    return {"distort_limit": _limit_from(t), "mode": str(t.mode), "interpolation": _interp_from(t)}


OPTICAL_DISTORTION = OpSpec(
    name="OpticalDistortion", family="geometric", targets=TargetRule(field=targets.optical_distortion),
    default_p=0.5,
    # k is drawn per sample: each backend against Albumentations' maps at its own reported k.
    # Measured on the 8 photos, seed 3: Kornia 0.000/255 and 119 dB, Albumentations 0.236/255 and 59.2 dB
    # (8-bit rounding).
    parity=Parity(mae=0.4 / 255, psnr=55.0, params={"distort_limit": [-0.2, 0.2], "mode": "camera"},
                  reference=_optical_reference("camera")),
    doc="Lens distortion (A.OpticalDistortion) with a coefficient k drawn per sample from distort_limit: k > 0 "
        "takes each pixel from further out (the picture shrinks towards the centre), k < 0 from further in. "
        "mode 'camera' is OpenCV's camera model (k1 = k2 = k, focal lengths the image's width and height; as in "
        "Albumentations, k = 0 still shifts the image by half a pixel), 'fisheye' scales the radius by "
        "1 + k (r / r_max)^2. Outside filled with 0. Reported as k.",
    params=(
        Range("distort_limit", "range of the distortion coefficient k (about +-0.05 for 'camera', +-0.3 for "
              "'fisheye')", (-0.05, 0.05), lo=-1.0, hi=1.0),
        Choice("mode", "distortion model", "camera", options=("camera", "fisheye")),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "WbOpticalDistortion",
        lambda a: {"distort_limit": tuple(a["distort_limit"]), "mode": a["mode"], "resample": a["interpolation"]},
        record={"k": "k"}, local=True,
        from_module=kr.arguments("distort_limit", "mode", interpolation="resample"),
    ),
    albumentations=AlbumentationsLowering(
        "OpticalDistortion",
        lambda a: {"distort_limit": tuple(a["distort_limit"]), "mode": a["mode"],
                   "interpolation": _CV_INTERP[a["interpolation"]], **_ZERO_BORDER},
        record=_optical_record, from_transform=_optical_from, note=_ALB_NOTE,
    ),
    dali=DaliLowering(
        needs_size=True, draws=_dali_optical_draws, apply=_dali_optical,
        note="runs on the GPU only (fn.experimental.remap); the maps are built on the CPU, per sample, in float32; "
             "images up to 32768 pixels a side",
    ),
    gpu_only={"dali": _DALI_REMAP_GPU_ONLY},
)

OPS = (ELASTIC_TRANSFORM, GRID_DISTORTION, OPTICAL_DISTORTION)
