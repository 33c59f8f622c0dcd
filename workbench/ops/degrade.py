"""Degradation and 3x3-kernel ops, the blur/noise family's second file (filters.py holds the
Gaussian blur and noise, JPEG, motion and median blur):

- Blur: box blur, its odd size drawn per image;
- Downscale: shrink by a per-image factor and enlarge back (a low-resolution look);
- ISONoise: Albumentations' camera sensor noise (Poisson lightness specks and hue noise in
  OpenCV's HLS), its colour shift and intensity drawn per image;
- Sharpen, Emboss: Albumentations' 3x3 kernels blended with the identity by a per-image alpha.

Conventions as in filters.py: borders mirror without the edge pixel (reflect_101); values in
[0, 1] units on Kornia, 0-255 on DALI until a Normalize (`ctx.scale`). Resampling follows
OpenCV's cv2.resize (what Albumentations runs): nearest takes source pixel floor(i x scale),
linear samples (i + 0.5) x scale - 0.5, `scale` source pixels per output pixel.
"""
import numpy as np

from ..codegen.literals import Name, call, literal
from .dali_helpers import uniform
from .filters import _from_blur_limit, _kernel_record, _odd_choices
from .params import Choice, Range, Span
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity

# --------------------------------------------------------------------------------------------
# Blur (box)


def _dali_box(a, c, d):
    """Each sample's k x k box (weights 1 / k^2) in the middle of one grid of the range's largest
    size, zero outside: one fn.filter with per-sample kernels, mirrored borders."""
    k = a["kernel_size"][1]
    half = float(k // 2)
    grid, u, v, r, kernel = (c.var(n) for n in ("grid", "u", "v", "half", "kernel"))
    return [
        f"{grid} = np.abs(np.arange({literal(float(k))}, dtype=np.float32) - {literal(half)})",
        f"{u} = types.Constant(np.tile({grid}, ({k}, 1)))",
        f"{v} = types.Constant(np.tile({grid}[:, None], (1, {k})))",
        f"{r} = dmath.floor({d['kernel_size']} / 2.0)",
        f"{kernel} = fn.cast(({u} <= {r}) & ({v} <= {r}), dtype=types.FLOAT) / ({d['kernel_size']} * "
        f"{d['kernel_size']})",
        f"{c.x} = fn.filter({c.x}, {kernel}, border='reflect_101')",
    ]


BLUR = OpSpec(
    name="Blur", family="blur/noise", default_p=0.5,
    # Kornia vs DALI 0.25/255 mean abs error (DALI rounds to whole levels), vs Albumentations
    # (cv2.blur, integer sums rounded) 0.25/255; DALI vs Albumentations 0.000/255 (measured on
    # the sample photos at 5).
    parity=Parity(border=0, mae=0.3 / 255, psnr=55.0, params={"kernel_size": [5, 5]}),
    cost_hint="on DALI a kernel_size^2 convolution at the range's largest size for every sample (Kornia and "
              "Albumentations filter separably); a smaller upper kernel size is cheaper.",
    doc="Box blur: the mean of each kernel_size x kernel_size window, the odd size drawn per sample from "
        "`kernel_size`, mirrored borders.",
    params=(Span("kernel_size", "window side range in pixels (odd sizes, drawn per sample)", (3, 7), lo=3, hi=31,
                 integer=True, odd=True),),
    kornia=KorniaLowering(
        # K.RandomBoxBlur takes one kernel size for every sample: WbBoxBlur draws it per sample and
        # runs kornia.filters.box_blur (mirrored borders) once per drawn size.
        "WbBoxBlur", lambda a: {"kernel_size": tuple(a["kernel_size"])}, record={"kernel_size": "kernel_size"},
        local=True),
    dali=DaliLowering(
        draws=lambda a: {"kernel_size": _odd_choices(*a["kernel_size"])}, apply=_dali_box, mirror_invariant=True,
        note="DALI has no box filter: fn.filter with each sample's box kernel (zero-padded to the range's largest "
             "size)",
    ),
    albumentations=AlbumentationsLowering(
        "Blur", lambda a: {"blur_limit": tuple(a["kernel_size"])}, record=_kernel_record,
        from_transform=lambda t: {"kernel_size": _from_blur_limit(t)},
    ),
)


# --------------------------------------------------------------------------------------------
# Downscale

_INTERPOLATIONS = ("nearest", "bilinear")
# OpenCV's codes for them (cv2.INTER_NEAREST, cv2.INTER_LINEAR).
_CV2 = {"nearest": 0, "bilinear": 1}


def _dali_downscale(a, c, d):
    """cv2.resize's conventions on fn.resize: the small size is round(side x scale) (ties to
    even, as cvRound), and each pass maps output pixel i to source coordinate (i + 0.5) x s
    (nearest: the pixel containing i x s) through a region of interest; no antialiasing."""
    hs, ws, small = c.var("small_h"), c.var("small_w"), c.var("small")
    scale = d["scale"]

    def rnd(t):  # to the nearest integer, ties to even
        return (f"(dmath.floor({t} + 0.5) - fn.cast(dmath.floor({t} + 0.5) - ({t}) == 0.5, dtype=types.FLOAT) "
                f"* (dmath.floor({t} + 0.5) - 2.0 * dmath.floor(dmath.floor({t} + 0.5) * 0.5)))")

    def resize(source, out_h, out_w, step_h, step_w, interp):
        # Output pixel i samples source coordinate start + (i + 0.5) x step (DALI's pixel centres);
        # nearest picks floor(i x step), the pixel containing (i + 0.5) x step - 0.5 x step.
        # (plus 1/1000 of a pixel: a float32 i x step just below a whole number picks as exact arithmetic does).
        shift = 0.5 if interp == "nearest" else 0.0
        nudge = 0.001 if interp == "nearest" else 0.0
        start = f"fn.stack({nudge} - {shift} * {step_h}, {nudge} - {shift} * {step_w})"
        end = (f"fn.stack({out_h} * {step_h} - {shift} * {step_h} + {nudge}, "
               f"{out_w} * {step_w} - {shift} * {step_w} + {nudge})")
        return (f"fn.resize({source}, size=fn.stack({out_h}, {out_w}), roi_start={start}, roi_end={end}, "
                f"roi_relative=False, antialias=False, interp_type={_DALI_INTERP[interp]})")

    inverse = Name(f"(1.0 / {scale})")
    return [
        f"{hs} = dmath.max({rnd(f'{c.height} * {scale}')}, 1.0)",
        f"{ws} = dmath.max({rnd(f'{c.width} * {scale}')}, 1.0)",
        f"{small} = " + resize(c.x, hs, ws, inverse, inverse, a["down"]),
        f"{c.x} = " + resize(small, c.height, c.width, Name(f"({hs} / {c.height})"), Name(f"({ws} / {c.width})"),
                             a["up"]),
    ]


_DALI_INTERP = {"nearest": "types.INTERP_NN", "bilinear": "types.INTERP_LINEAR"}


def _from_downscale(t):
    pair = dict(t.interpolation_pair)
    names = {code: name for name, code in _CV2.items()}
    out = {}
    for key in ("downscale", "upscale"):
        if pair[key] not in names:
            raise ValueError(f"interpolation_pair[{key!r}]={pair[key]}: Downscale resamples with cv2.INTER_NEAREST "
                             f"(0) or cv2.INTER_LINEAR (1)")
        out["down" if key == "downscale" else "up"] = names[pair[key]]
    return {"scale": [float(v) for v in t.scale_range], **out}


DOWNSCALE = OpSpec(
    name="Downscale", family="blur/noise", default_p=0.5,
    # Measured on the sample photos: nearest both ways at 0.25, 0.3, 0.37 equal on all three
    # backends (0/255); bilinear both ways at 0.37: Kornia vs DALI 0.28/255, vs Albumentations
    # (OpenCV's 11-bit fixed-point weights) 0.35/255, DALI vs Albumentations 0.24/255.
    parity=Parity(border=0, mae=0.5 / 255, psnr=45.0,
                  params={"scale": [0.37, 0.37], "down": "bilinear", "up": "bilinear"}),
    doc="Shrink the image by a factor drawn per sample from `scale` (to round(side x scale) pixels), then "
        "resize it back to its size: the detail of a low-resolution picture.",
    params=(
        Range("scale", "shrink factor range, drawn per sample (0.25 keeps a quarter of each side)", (0.25, 0.25),
              lo=0.01, hi=1.0),
        Choice("down", "resampling when shrinking", "nearest", options=_INTERPOLATIONS),
        Choice("up", "resampling when enlarging back", "nearest", options=_INTERPOLATIONS),
    ),
    kornia=KorniaLowering("WbDownscale", lambda a: {"scale": tuple(a["scale"]), "down": a["down"], "up": a["up"]},
                          record={"scale": "scale"}, local=True),
    dali=DaliLowering(draws=lambda a: {"scale": uniform(*a["scale"])}, apply=_dali_downscale, needs_size=True),
    albumentations=AlbumentationsLowering(
        "Downscale",
        lambda a: {"scale_range": tuple(a["scale"]),
                   # A dict: written as source text (literal() writes no dicts), ast.literal_eval reads it.
                   "interpolation_pair": Name(f"{{{literal('downscale')}: {literal(_CV2[a['down']])}, "
                                              f"{literal('upscale')}: {literal(_CV2[a['up']])}}}")},
        record={"scale": "scale"}, from_transform=_from_downscale,
        note="OpenCV's linear resampling of uint8 uses 11-bit fixed-point weights",
    ),
)


# --------------------------------------------------------------------------------------------
# ISONoise


def _dali_iso_noise(a, c, d):
    """OpenCV's HLS in DALI arithmetic (see wb_rgb_to_hls / wb_hls_to_rgb, the Kornia module's):
    Poisson counts from fn.noise.shot on a map of the per-sample mean (so the image's own
    statistic never becomes a named argument, which a GPU node cannot be), the hue's normal
    draws from fn.random.normal shaped like the lightness map."""
    v = {n: c.var(n) for n in ("xf", "r", "g", "b", "high", "low", "light", "diff", "some", "lower", "den", "sat",
                               "is_r", "is_g", "is_b", "hue", "rate", "counts", "hue_noise", "a", "rgb")}
    lines = [
        f"{v['xf']} = dmath.clamp(fn.cast({c.x}, dtype=types.FLOAT) / {literal(float(c.scale))}, 0.0, 1.0)",
        *(f"{v[ch]} = {v['xf']}[:, :, {n}]" for n, ch in enumerate("rgb")),
        f"{v['high']} = dmath.max(dmath.max({v['r']}, {v['g']}), {v['b']})",
        f"{v['low']} = dmath.min(dmath.min({v['r']}, {v['g']}), {v['b']})",
        f"{v['light']} = ({v['high']} + {v['low']}) * 0.5",
        f"{v['diff']} = {v['high']} - {v['low']}",
        # OpenCV leaves hue and saturation 0 where max - min is below FLT_EPSILON.
        f"{v['some']} = fn.cast({v['diff']} > 1.1920929e-07, dtype=types.FLOAT)",
        f"{v['lower']} = fn.cast({v['light']} < 0.5, dtype=types.FLOAT)",
        f"{v['den']} = {v['lower']} * ({v['high']} + {v['low']}) + (1.0 - {v['lower']}) * (2.0 - {v['high']} - "
        f"{v['low']}) + (1.0 - {v['some']})",
        f"{v['sat']} = {v['some']} * {v['diff']} / {v['den']}",
        f"{v['is_r']} = fn.cast({v['high']} == {v['r']}, dtype=types.FLOAT)",
        f"{v['is_g']} = fn.cast({v['high']} == {v['g']}, dtype=types.FLOAT) * (1.0 - {v['is_r']})",
        f"{v['is_b']} = 1.0 - {v['is_r']} - {v['is_g']}",
        f"{v['hue']} = ({v['is_r']} * ({v['g']} - {v['b']}) + {v['is_g']} * ({v['b']} - {v['r']}) + {v['is_b']} * "
        f"({v['r']} - {v['g']})) * 60.0 / ({v['diff']} + 1.0 - {v['some']}) + {v['is_g']} * 120.0 + {v['is_b']} * 240.0",
        f"{v['hue']} = {v['some']} * ({v['hue']} + 360.0 * fn.cast({v['hue']} < 0.0, dtype=types.FLOAT))",
        f"{v['rate']} = fn.reductions.std_dev({v['light']}, fn.reductions.mean({v['light']})) * {d['intensity']}",
        f"{v['counts']} = " + call("fn.noise.shot", {"__input__": Name(f"{v['light']} * 0.0 + {v['rate']}"),
                                                      "factor": 1.0, "seed": c.seed(11)}),
        f"{v['hue_noise']} = " + call("fn.random.normal", {"__input__": v["light"],
                                                            "stddev": Name(f"{d['color_shift']} * {d['intensity']}"),
                                                            "seed": c.seed(12)}),
        f"{v['light']} = dmath.clamp({v['light']} + {v['counts']} * {d['intensity']} * (1.0 - {v['light']}), 0.0, 1.0)",
        f"{v['hue']} = {v['hue']} + {v['hue_noise']}",
        f"{v['a']} = {v['sat']} * dmath.min({v['light']}, 1.0 - {v['light']})",
    ]
    channels = []
    for n in (0.0, 8.0, 4.0):
        k = f"({literal(n)} + {v['hue']} / 30.0)"
        k = f"({k} - 12.0 * dmath.floor({k} / 12.0))"
        channels.append(f"({v['light']} - {v['a']} * dmath.clamp(dmath.min({k} - 3.0, 9.0 - {k}), -1.0, 1.0))")
    lines.append(f"{v['rgb']} = dmath.clamp(fn.reshape(fn.stack({', '.join(channels)}, axis=2), layout='HWC'), "
                 f"0.0, 1.0)")
    if c.scale == 255.0:
        return lines + [f"{c.x} = fn.cast({v['rgb']} * 255.0, dtype=types.UINT8)"]
    return lines + [f"{c.x} = {v['rgb']}"]


def _from_iso_noise(t):
    lo, hi = (float(v) for v in t.intensity)
    if hi > _ISO_MAX:
        raise ValueError(f"intensity={tuple(t.intensity)}: ISONoise takes intensities up to {_ISO_MAX}")
    return {"color_shift": [float(v) for v in t.color_shift], "intensity": [lo, hi]}


_ISO_MAX = 5.0

ISO_NOISE = OpSpec(
    name="ISONoise", family="blur/noise", default_p=0.5,
    # Per-channel mean/std of the change at color_shift 0.05, intensity 0.5 on the same-size sample
    # photos (96x128), seeds 0-4: largest gap 0.33-0.90/255 among the three backends; 0.07-0.13/255 on
    # the six 512x512 photos (the sparse specks need many pixels to average out). Same-size images: the
    # per-pixel draws are recorded as maps (see GaussianNoise).
    parity=Parity(statistics=True, mae=1.5 / 255, same_size=True,
                  params={"color_shift": [0.05, 0.05], "intensity": [0.5, 0.5]}),
    doc="Camera sensor noise (Albumentations' ISONoise): in OpenCV's HLS, each pixel's lightness L grows by "
        "n x intensity x (1 - L), n Poisson-distributed with mean intensity x (the image's standard deviation of "
        "L), and its hue moves by a normal draw of standard deviation color_shift x intensity degrees (hue is in "
        "degrees there, so the colour shift is tiny); `color_shift` and `intensity` are drawn per sample.",
    params=(
        Span("color_shift", "hue noise range (x intensity = its standard deviation in degrees)", (0.01, 0.05),
             lo=0.0, hi=1.0),
        Span("intensity", "noise strength range (scales both the number and the size of the bright specks)",
             (0.1, 0.5), lo=0.0, hi=_ISO_MAX),
    ),
    kornia=KorniaLowering("WbISONoise", lambda a: {"color_shift": tuple(a["color_shift"]),
                                                   "intensity": tuple(a["intensity"])},
                          record={"color_shift": "color_shift", "intensity": "intensity"}, local=True),
    dali=DaliLowering(
        draws=lambda a: {"color_shift": uniform(*a["color_shift"]), "intensity": uniform(*a["intensity"])},
        apply=_dali_iso_noise,
        note="the HLS conversion in DALI arithmetic; Poisson counts from fn.noise.shot (its own random stream)",
    ),
    albumentations=AlbumentationsLowering(
        "ISONoise", lambda a: {"color_shift": tuple(a["color_shift"]), "intensity": tuple(a["intensity"])},
        record={"color_shift": "color_shift", "intensity": "intensity"}, from_transform=_from_iso_noise,
    ),
)

# --------------------------------------------------------------------------------------------
# Sharpen, Emboss: Albumentations' 3x3 kernels blended with the identity by a per-image alpha

_IDENTITY3 = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


def _constant3(rows) -> str:
    return f"types.Constant(np.array({literal(rows)}, dtype=np.float32))"


def _dali_kernel3(c, kernel_expression: str) -> list[str]:
    """Correlate with each sample's 3x3 kernel (mirrored borders); clipped to the value range as
    OpenCV's filter2D into uint8 saturates (fn.filter rounds and saturates on uint8 itself)."""
    kernel = c.var("kernel")
    lines = [f"{kernel} = {kernel_expression}"]
    if c.scale == 255.0:
        return lines + [f"{c.x} = fn.filter({c.x}, {kernel}, border='reflect_101')"]
    return lines + [f"{c.x} = dmath.clamp(fn.filter({c.x}, {kernel}, border='reflect_101'), 0.0, 1.0)"]


def _dali_sharpen(a, c, d):
    effect = [[-1.0, -1.0, -1.0], [-1.0, 8.0, -1.0], [-1.0, -1.0, -1.0]]
    centre = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    return _dali_kernel3(c, f"{_constant3(_IDENTITY3)} * (1.0 - {d['alpha']}) + ({_constant3(effect)} + "
                            f"{_constant3(centre)} * {d['lightness']}) * {d['alpha']}")


def _dali_emboss(a, c, d):
    base = [[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    ramp = [[-1.0, -1.0, 0.0], [-1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    return _dali_kernel3(c, f"{_constant3(_IDENTITY3)} * (1.0 - {d['alpha']}) + ({_constant3(base)} + "
                            f"{_constant3(ramp)} * {d['strength']}) * {d['alpha']}")


def _sharpen_record(raw):
    """A.Sharpen reports alpha and its kernel, whose centre is (1 - alpha) + alpha (8 + lightness)."""
    out = {"alpha": float(raw["alpha"])} if "alpha" in raw else {}
    matrix = np.asarray(raw.get("sharpening_matrix", ()), dtype=np.float64)
    if out and out["alpha"] > 0.0 and matrix.shape == (3, 3):
        out["lightness"] = (matrix[1, 1] - 1.0 + out["alpha"]) / out["alpha"] - 8.0
    return out


def _emboss_record(raw):
    """A.Emboss reports only its kernel: alpha x s is its [1, 2] entry and -alpha (1 + s) its [0, 0]."""
    matrix = np.asarray(raw.get("emboss_matrix", ()), dtype=np.float64)
    if matrix.shape != (3, 3):
        return {}
    alpha = -matrix[0, 0] - matrix[1, 2]
    return {"alpha": alpha, "strength": matrix[1, 2] / alpha} if alpha > 0.0 else {"alpha": alpha}


def _from_sharpen(t):
    if t.method != "kernel":
        raise ValueError(f"method={t.method!r} sharpens with a Gaussian unsharp mask; Sharpen takes method='kernel' "
                         "(its 3x3 kernel)")
    lightness = [float(v) for v in t.lightness]
    if lightness[1] > _LIGHTNESS_MAX:
        raise ValueError(f"lightness={tuple(t.lightness)}: Sharpen takes lightness up to {_LIGHTNESS_MAX}")
    return {"alpha": [float(v) for v in t.alpha], "lightness": lightness}


def _from_emboss(t):
    strength = [float(v) for v in t.strength]
    if strength[1] > _STRENGTH_MAX:
        raise ValueError(f"strength={tuple(t.strength)}: Emboss takes strengths up to {_STRENGTH_MAX}")
    return {"alpha": [float(v) for v in t.alpha], "strength": strength}


_LIGHTNESS_MAX = _STRENGTH_MAX = 10.0
_ALPHA = dict(lo=0.0, hi=1.0)

SHARPEN = OpSpec(
    name="Sharpen", family="blur/noise", default_p=0.5,
    # Measured on the sample photos at alpha 0.5, lightness 1: Kornia vs DALI and vs Albumentations
    # 0.22/255 mean abs error, 57.7 dB (Kornia's floats unrounded), DALI vs Albumentations 0 (equal).
    parity=Parity(border=0, mae=0.3 / 255, psnr=55.0, params={"alpha": [0.5, 0.5], "lightness": [1.0, 1.0]}),
    doc="Albumentations' Sharpen: correlate with (1 - alpha) x identity + alpha x [[-1, -1, -1], [-1, 8 + "
        "lightness, -1], [-1, -1, -1]] (mirrored borders, clipped), alpha and lightness drawn per sample; "
        "lightness 1 keeps the brightness, below 1 darkens.",
    params=(
        Span("alpha", "blend range of the sharpening kernel (0 = unchanged, 1 = fully sharpened)", (0.2, 0.5),
             **_ALPHA),
        Span("lightness", "centre weight range (1 keeps the mean brightness)", (0.5, 1.0), lo=0.0,
             hi=_LIGHTNESS_MAX),
    ),
    kornia=KorniaLowering("WbSharpen", lambda a: {"alpha": tuple(a["alpha"]), "lightness": tuple(a["lightness"])},
                          record={"alpha": "alpha", "lightness": "lightness"}, local=True),
    dali=DaliLowering(draws=lambda a: {"alpha": uniform(*a["alpha"]), "lightness": uniform(*a["lightness"])},
                      apply=_dali_sharpen, mirror_invariant=True),
    albumentations=AlbumentationsLowering(
        "Sharpen", lambda a: {"alpha": tuple(a["alpha"]), "lightness": tuple(a["lightness"]), "method": "kernel"},
        record=_sharpen_record, from_transform=_from_sharpen,
    ),
)

EMBOSS = OpSpec(
    name="Emboss", family="blur/noise", default_p=0.5,
    # Measured on the sample photos at alpha 0.5, strength 0.5: Kornia vs DALI and vs
    # Albumentations 0.23/255 mean abs error, 58.8 dB (Kornia's floats unrounded), DALI vs
    # Albumentations 0 (equal).
    parity=Parity(border=0, mae=0.3 / 255, psnr=55.0, params={"alpha": [0.5, 0.5], "strength": [0.5, 0.5]}),
    doc="Albumentations' Emboss: correlate with (1 - alpha) x identity + alpha x [[-1 - s, -s, 0], [-s, 1, s], "
        "[0, s, 1 + s]] (a relief lit from the top left; mirrored borders, clipped), alpha and the strength s "
        "drawn per sample.",
    params=(
        Span("alpha", "blend range of the embossing kernel (0 = unchanged, 1 = full relief)", (0.2, 0.5), **_ALPHA),
        Span("strength", "relief strength range", (0.2, 0.7), lo=0.0, hi=_STRENGTH_MAX),
    ),
    kornia=KorniaLowering("WbEmboss", lambda a: {"alpha": tuple(a["alpha"]), "strength": tuple(a["strength"])},
                          record={"alpha": "alpha", "strength": "strength"}, local=True),
    dali=DaliLowering(draws=lambda a: {"alpha": uniform(*a["alpha"]), "strength": uniform(*a["strength"])},
                      apply=_dali_emboss),
    albumentations=AlbumentationsLowering(
        "Emboss", lambda a: {"alpha": tuple(a["alpha"]), "strength": tuple(a["strength"])},
        record=_emboss_record, from_transform=_from_emboss,
    ),
)

OPS = (BLUR, DOWNSCALE, ISO_NOISE, SHARPEN, EMBOSS)
