"""Degradation and 3x3-kernel ops, the blur/noise family's second file (filters.py holds the
Gaussian blur and noise, JPEG, motion and median blur):

- Blur: box blur, its odd size drawn per image;
- Downscale: shrink by a per-image factor and enlarge back (a low-resolution look);
- ISONoise: Albumentations' camera sensor noise (Poisson lightness specks and hue noise in
  OpenCV's HLS), its colour shift and intensity drawn per image;
- Sharpen, Emboss: Albumentations' 3x3 kernels blended with the identity by a per-image alpha;
- UnsharpMask: Albumentations' unsharp mask (OpenCV's Gaussian blur, a thresholded soft mask);
- Defocus: Albumentations' defocus (a disk kernel, slightly blurred), its radius drawn per image.

Conventions as in filters.py: borders mirror without the edge pixel (reflect_101); values in
[0, 1] units on Kornia, 0-255 on DALI until a Normalize (`ctx.scale`). Resampling follows
OpenCV's cv2.resize (what Albumentations runs): nearest takes source pixel floor(i x scale),
linear samples (i + 0.5) x scale - 0.5, `scale` source pixels per output pixel.
"""
import numpy as np

from ..literals import Name, call, literal
from .dali_helpers import RandomOp, uniform
from .filters import _from_blur_limit, _kernel_record, _odd_choices
from .params import Choice, Number, Range, Span
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, kernel_reach

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
    min_input=kernel_reach("kernel_size"),
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


def _downscale_min_input(a) -> tuple[int, str]:
    # The small side is round(side x scale), ties to even (as Python and OpenCV round): it must not be 0.
    lo = a["scale"][0]
    side = int(0.5 / lo) + 1
    return side, f"at scale {lo:g} a side shorter than {side} pixels shrinks to nothing; raise the scale's low end"


DOWNSCALE = OpSpec(
    name="Downscale", family="blur/noise", default_p=0.5,
    min_input=_downscale_min_input,
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
        f"({v['r']} - {v['g']})) * 60.0 / ({v['diff']} + 1.0 - {v['some']}) + {v['is_g']} * 120.0 "
        f"+ {v['is_b']} * 240.0",
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
    min_input=lambda a: (2, "its 3x3 kernel reaches 1 pixel past each border, which is reflected"),
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
    min_input=lambda a: (2, "its 3x3 kernel reaches 1 pixel past each border, which is reflected"),
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


# --------------------------------------------------------------------------------------------
# UnsharpMask, Defocus: OpenCV's Gaussian kernels built per sample (see wb_cv_gaussian_taps, the
# Kornia modules' twin of the DALI arithmetic below)

# cv2.getGaussianKernel's fixed kernels for sigma <= 0 at sizes 3 to 9.
_CV_SMALL = {
    3: (0.25, 0.5, 0.25),
    5: (0.0625, 0.25, 0.375, 0.25, 0.0625),
    7: (0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125),
    9: (0.015625, 0.05078125, 0.1171875, 0.19921875, 0.234375, 0.19921875, 0.1171875, 0.05078125, 0.015625),
}


def _constant(values, shape) -> str:
    return f"types.Constant(np.reshape(np.array({literal([float(v) for v in values])}, dtype=np.float32), {shape}))"


def _dali_cv_taps(c, size, sigma, width: int, tag: str, shape: str):
    """Lines setting c.var(tag) to each sample's OpenCV 1-D Gaussian kernel (cv2.getGaussianKernel)
    of odd size `size` and `sigma` (per-sample nodes) in the middle of `width` taps, zero outside its
    own size, shaped `shape` ((width, 1) or (1, width)); a sigma <= 0 is OpenCV's choice for the size
    (its fixed kernels at 3 to 9, sigma 0.3 ((size - 1) / 2 - 1) + 0.8 above)."""
    half = width // 2
    offsets = [float(i - half) for i in range(width)]
    x, inside, spread, pos, taps = (c.var(f"{tag}_{n}") for n in ("x", "inside", "spread", "pos", "taps"))
    lines = [
        f"{x} = {_constant([o * o for o in offsets], shape)}",
        f"{inside} = fn.cast({_constant([abs(o) for o in offsets], shape)} <= ({size} - 1.0) / 2.0, "
        f"dtype=types.FLOAT)",
        f"{pos} = fn.cast({sigma} > 0.0, dtype=types.FLOAT)",
        f"{spread} = {pos} * {sigma} + (1.0 - {pos}) * (0.3 * (({size} - 1.0) * 0.5 - 1.0) + 0.8)",
        # (a sigma of 0 reads 1 here; its taps are replaced by the fixed ones below)
        f"{taps} = dmath.exp(-{x} / (2.0 * dmath.max({spread}, 1e-3) * dmath.max({spread}, 1e-3))) * {inside}",
        f"{taps} = {taps} / fn.reductions.sum({taps})",
    ]
    for n, values in _CV_SMALL.items():
        if n <= width:
            fixed = [0.0] * (half - n // 2) + list(values) + [0.0] * (half - n // 2)
            use = c.var(f"{tag}_use{n}")
            lines += [f"{use} = (1.0 - {pos}) * fn.cast({size} == {literal(float(n))}, dtype=types.FLOAT)",
                      f"{taps} = {taps} * (1.0 - {use}) + {_constant(fixed, shape)} * {use}"]
    return lines


def _dali_unsharp(a, c, d):
    """A.UnsharpMask's arithmetic (fpixel.unsharp_mask) on each sample's own kernel: the blur is two
    fn.filter passes with the per-sample 1-D kernels in float; values stay 0-255 (the threshold is in
    grey levels), rounded to uint8 at the end as Albumentations rounds its float result."""
    width = a["kernel_size"][1]
    lines = [*_dali_cv_taps(c, d["kernel_size"], d["sigma"], width, "col", f"({width}, 1)"),
             *_dali_cv_taps(c, d["kernel_size"], d["sigma"], width, "row", f"(1, {width})")]
    col, row = c.var("col_taps"), c.var("row_taps")
    xf, residual, sharp, soft, out = (c.var(n) for n in ("xf", "residual", "sharp", "soft", "out"))

    def blur(source):
        return (f"fn.filter(fn.filter({source}, {col}, border='reflect_101', dtype=types.FLOAT), {row}, "
                f"border='reflect_101', dtype=types.FLOAT)")

    levels = literal(255.0 / c.scale)
    lines += [
        f"{xf} = fn.cast({c.x}, dtype=types.FLOAT)",
        f"{residual} = {xf} - {blur(c.x)}",
        f"{sharp} = dmath.clamp({xf} + {d['alpha']} * {residual}, 0.0, {literal(float(c.scale))})",
        f"{soft} = " + blur(f"fn.cast(dmath.abs({residual}) * {levels} > {literal(float(a['threshold']))}, "
                            f"dtype=types.FLOAT)"),
        f"{out} = {sharp} * {soft} + {xf} * (1.0 - {soft})",
    ]
    if c.scale == 255.0:
        return lines + [f"{c.x} = fn.cast(dmath.clamp(dmath.floor({out} + 0.5), 0.0, 255.0), dtype=types.UINT8)"]
    return lines + [f"{c.x} = {out}"]


def _from_unsharp_mask(t):
    lo, hi = (int(v) for v in t.blur_limit)
    if hi > _UNSHARP_MAX:
        raise ValueError(f"blur_limit={tuple(t.blur_limit)}: UnsharpMask takes kernel sizes up to {_UNSHARP_MAX}")
    sigma = [float(v) for v in t.sigma_limit]
    if sigma[1] > _SIGMA_MAX:
        raise ValueError(f"sigma_limit={tuple(t.sigma_limit)}: UnsharpMask takes sigmas up to {_SIGMA_MAX}")
    return {"kernel_size": [lo, hi], "sigma": sigma, "alpha": [float(v) for v in t.alpha],
            "threshold": int(t.threshold)}


_UNSHARP_MAX, _SIGMA_MAX = 31, 20.0

UNSHARP_MASK = OpSpec(
    name="UnsharpMask", family="blur/noise", default_p=0.5,
    min_input=kernel_reach("kernel_size"),
    # Measured on the sample photos at kernel_size 5, sigma 0 (OpenCV's fixed kernel), alpha 0.5,
    # threshold 10: Kornia vs DALI and vs Albumentations 0.12/255 mean abs error, 62.1 dB (Kornia's floats
    # unrounded), DALI vs Albumentations 0.000/255; at 9 / sigma 1.5 / alpha 0.8 / threshold 0 and at 11 /
    # sigma 0 (OpenCV's sigma rule) 0.24/255 and 0.18/255, DALI vs Albumentations 0.000/255 again.
    parity=Parity(border=0, mae=0.3 / 255, psnr=55.0,
                  params={"kernel_size": [5, 5], "sigma": [0.0, 0.0], "alpha": [0.5, 0.5], "threshold": 10}),
    cost_hint="two Gaussian blurs (the image and the mask) of kernel_size taps per pixel and pass, at the range's "
              "largest size for every sample; a smaller upper kernel size is cheaper.",
    doc="Albumentations' UnsharpMask: residual = image - Gaussian blur (odd kernel size and sigma drawn per sample; "
        "sigma 0 = OpenCV's choice for the size); sharp = clip(image + alpha x residual); where |residual| exceeds "
        "`threshold` grey levels a mask, blurred the same way, blends sharp over the image (noise stays unsharpened).",
    params=(
        Span("kernel_size", "Gaussian window range in pixels (odd sizes, drawn per sample)", (3, 7), lo=3,
             hi=_UNSHARP_MAX, integer=True, odd=True),
        Span("sigma", "Gaussian sigma range in pixels (0 = OpenCV's choice from the kernel size)", (0.0, 0.0),
             lo=0.0, hi=_SIGMA_MAX),
        Span("alpha", "sharpening strength range (0 = unchanged, 1 = the full residual added)", (0.2, 0.5), **_ALPHA),
        Number("threshold", "residuals up to this many grey levels (of 255) are not sharpened", 10, lo=0, hi=255,
               integer=True),
    ),
    kornia=KorniaLowering(
        "WbUnsharpMask", lambda a: {"kernel_size": tuple(a["kernel_size"]), "sigma": tuple(a["sigma"]),
                                    "alpha": tuple(a["alpha"]), "threshold": a["threshold"]},
        record={"kernel_size": "kernel_size", "sigma": "sigma", "alpha": "alpha"}, local=True),
    dali=DaliLowering(
        draws=lambda a: {"kernel_size": _odd_choices(*a["kernel_size"]), "sigma": uniform(*a["sigma"]),
                         "alpha": uniform(*a["alpha"])},
        apply=_dali_unsharp, mirror_invariant=True,
        note="OpenCV's Gaussian kernels built per sample with DALI arithmetic, two fn.filter passes each for the "
             "image and the mask",
    ),
    albumentations=AlbumentationsLowering(
        "UnsharpMask", lambda a: {"blur_limit": tuple(a["kernel_size"]), "sigma_limit": tuple(a["sigma"]),
                                  "alpha": tuple(a["alpha"]), "threshold": a["threshold"]},
        record={"ksize": "kernel_size", "sigma": "sigma", "alpha": "alpha"}, from_transform=_from_unsharp_mask,
    ),
)


def _dali_defocus(a, c, d):
    """Each sample's defocus kernel (wb_defocus_kernels) in DALI arithmetic on one grid of the
    range's largest size: the disk's blur by OpenCV's 3- or 5-tap Gaussian is the weighted sum of the
    disk moved by each tap, the moved coordinates mirrored at the sample's own grid edge g = max(8, r)
    (reflect-101); zero outside that grid; then one fn.filter, mirrored borders."""
    half = max(8, a["radius"][1])
    grid = [float(i - half) for i in range(2 * half + 1)]
    width = 2 * half + 1
    r2, g, big, pos, sig, e1, e2, w0, w1, w2, disk, kernel, count = (
        c.var(n) for n in ("r2", "edge", "big", "pos", "sig", "e1", "e2", "w0", "w1", "w2", "disk", "kernel", "count"))
    u, v = c.var("u"), c.var("v")
    lines = [
        f"{u} = types.Constant(np.tile(np.array({literal(grid)}, dtype=np.float32), ({width}, 1)))",
        f"{v} = types.Constant(np.tile(np.array({literal(grid)}, dtype=np.float32)[:, None], (1, {width})))",
        f"{r2} = {d['radius']} * {d['radius']}",
        f"{g} = dmath.max({d['radius']}, 8.0)",
        f"{big} = fn.cast({d['radius']} > 8.0, dtype=types.FLOAT)",
        f"{pos} = fn.cast({d['alias_blur']} > 0.0, dtype=types.FLOAT)",
        f"{sig} = dmath.max({d['alias_blur']}, 1e-3)",
        f"{e1} = dmath.exp(-1.0 / (2.0 * {sig} * {sig}))",
        f"{e2} = dmath.exp(-4.0 / (2.0 * {sig} * {sig})) * {big}",
        # Gaussian taps for sigma > 0; OpenCV's fixed (0.25, 0.5, 0.25) or (1, 4, 6, 4, 1) / 16 for 0.
        f"{w0} = {pos} / (1.0 + 2.0 * {e1} + 2.0 * {e2}) + (1.0 - {pos}) * (0.5 - 0.125 * {big})",
        f"{w1} = {pos} * {e1} / (1.0 + 2.0 * {e1} + 2.0 * {e2}) + (1.0 - {pos}) * 0.25",
        f"{w2} = {pos} * {e2} / (1.0 + 2.0 * {e1} + 2.0 * {e2}) + (1.0 - {pos}) * 0.0625 * {big}",
        f"{count} = fn.reductions.sum(fn.cast({u} * {u} + {v} * {v} <= {r2}, dtype=types.FLOAT))",
    ]
    weights = {0: w0, 1: w1, -1: w1, 2: w2, -2: w2}
    moved = {}
    for axis, base in (("y", v), ("x", u)):
        for k in range(-2, 3):
            m = c.var(f"{axis}{'m' if k < 0 else 'p'}{abs(k)}")
            t = f"({base} + {literal(float(k))})"
            lines.append(f"{m} = {t} - 2.0 * dmath.max({t} - {g}, 0.0) + 2.0 * dmath.max(-{g} - {t}, 0.0)")
            lines.append(f"{m} = {m} * {m}")
            moved[axis, k] = m
    terms = [f"{weights[i]} * {weights[j]} * fn.cast({moved['y', i]} + {moved['x', j]} <= {r2}, dtype=types.FLOAT)"
             for i in range(-2, 3) for j in range(-2, 3)]
    lines.append(f"{disk} = " + " + ".join(terms))
    lines += [
        f"{kernel} = {disk} * fn.cast((dmath.abs({u}) <= {g}) & (dmath.abs({v}) <= {g}), dtype=types.FLOAT) / {count}",
        f"{c.x} = fn.filter({c.x}, {kernel}, border='reflect_101')",
    ]
    return lines


def _from_defocus(t):
    lo, hi = (int(v) for v in t.radius)
    if hi > _RADIUS_MAX:
        raise ValueError(f"radius={tuple(t.radius)}: Defocus takes radii up to {_RADIUS_MAX}")
    alias = [float(v) for v in t.alias_blur]
    if alias[1] > _ALIAS_MAX:
        raise ValueError(f"alias_blur={tuple(t.alias_blur)}: Defocus takes alias_blur up to {_ALIAS_MAX}")
    return {"radius": [lo, hi], "alias_blur": alias}


_RADIUS_MAX, _ALIAS_MAX = 31, 5.0

DEFOCUS = OpSpec(
    name="Defocus", family="blur/noise", default_p=0.5,
    min_input=kernel_reach("radius", radius=lambda r: max(8, r)),
    # Measured on the sample photos at radius 6, alias_blur 0.3: Kornia vs DALI and vs Albumentations
    # 0.25/255 mean abs error, 59.0 dB (Kornia's floats unrounded), DALI vs Albumentations 0.000/255; the
    # same at radius 1, 8, 9 and 12 (the kernel's grid grows past 8) and at alias_blur 0 (OpenCV's fixed taps).
    parity=Parity(border=0, mae=0.3 / 255, psnr=55.0, params={"radius": [6, 6], "alias_blur": [0.3, 0.3]}),
    cost_hint="one (2 max(8, radius) + 1)^2 convolution per pixel (289 taps up to radius 8, at the range's largest "
              "radius for every sample); smaller radii above 8 are cheaper.",
    doc="Albumentations' Defocus: correlate with a disk of radius r (whole pixels, drawn per sample from `radius`), "
        "its edge softened by a small Gaussian of sigma `alias_blur` (drawn per sample), mirrored borders: an "
        "out-of-focus lens.",
    params=(
        Span("radius", "disk radius range in pixels (whole numbers, drawn per sample)", (3, 10), lo=1, hi=_RADIUS_MAX,
             integer=True),
        Span("alias_blur", "range of the sigma that softens the disk's edge", (0.1, 0.5), lo=0.0, hi=_ALIAS_MAX),
    ),
    kornia=KorniaLowering("WbDefocus", lambda a: {"radius": tuple(a["radius"]), "alias_blur": tuple(a["alias_blur"])},
                          record={"radius": "radius", "alias_blur": "alias_blur"}, local=True),
    dali=DaliLowering(
        draws=lambda a: {"radius": RandomOp("fn.random.uniform", {"values": [float(k) for k in range(
            int(a["radius"][0]), int(a["radius"][1]) + 1)]}), "alias_blur": uniform(*a["alias_blur"])},
        apply=_dali_defocus, mirror_invariant=True,
        note="the defocus kernel built per sample with DALI arithmetic, one fn.filter",
    ),
    albumentations=AlbumentationsLowering(
        "Defocus", lambda a: {"radius": tuple(a["radius"]), "alias_blur": tuple(a["alias_blur"])},
        record={"radius": "radius", "alias_blur": "alias_blur"}, from_transform=_from_defocus,
    ),
)

OPS = (BLUR, DOWNSCALE, ISO_NOISE, SHARPEN, EMBOSS, UNSHARP_MASK, DEFOCUS)
