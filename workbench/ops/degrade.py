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

from ..literals import Name, literal
from .dali_helpers import INTERP, RandomOp, uniform
from .filters import _from_blur_limit, _kernel_record, _odd_choices
from .params import Choice, Number, Range, Span
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, kernel_reach
from . import kornia_reading as kr

# --------------------------------------------------------------------------------------------
# Blur (box)


def _dali_box(a, c, d):
    """Each sample's k x k box (weights 1 / k^2) in the middle of one grid of the range's largest
    size, zero outside: one fn.filter with per-sample kernels, mirrored borders (degrade_box_blur)."""
    return [f"{c.x} = degrade_box_blur({c.x}, {d['kernel_size']}, {literal(int(a['kernel_size'][1]))})"]


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
        local=True,
        from_module=kr.arguments("kernel_size")),
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
    """cv2.resize's conventions on fn.resize (degrade_downscale): the small size is round(side x
    scale) (ties to even, as cvRound), each pass through a region of interest; no antialiasing."""
    return [f"{c.x} = degrade_downscale({c.x}, {d['scale']}, {c.height}, {c.width}, down={INTERP[a['down']]}, "
            f"up={INTERP[a['up']]})"]


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
                          record={"scale": "scale"}, local=True,
                          from_module=kr.arguments("scale", "down", "up")),
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
    """OpenCV's HLS in DALI arithmetic (degrade_iso_noise; see wb_rgb_to_hls / wb_hls_to_rgb, the
    Kornia module's), with Poisson counts from fn.noise.shot and the hue's normal draws from
    fn.random.normal, each seeded as the step's own random operators."""
    return [f"{c.x} = degrade_iso_noise({c.x}, {d['color_shift']}, {d['intensity']}, {literal(float(c.scale))}, "
            f"shot_seed={c.seed(11)}, hue_seed={c.seed(12)})"]


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
                          record={"color_shift": "color_shift", "intensity": "intensity"}, local=True,
                          from_module=kr.arguments("color_shift", "intensity")),
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

def _dali_sharpen(a, c, d):
    return [f"{c.x} = degrade_sharpen({c.x}, {d['alpha']}, {d['lightness']}, uint8={c.scale == 255.0})"]


def _dali_emboss(a, c, d):
    return [f"{c.x} = degrade_emboss({c.x}, {d['alpha']}, {d['strength']}, uint8={c.scale == 255.0})"]


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
                          record={"alpha": "alpha", "lightness": "lightness"}, local=True,
                          from_module=kr.arguments("alpha", "lightness")),
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
                          record={"alpha": "alpha", "strength": "strength"}, local=True,
                          from_module=kr.arguments("alpha", "strength")),
    dali=DaliLowering(draws=lambda a: {"alpha": uniform(*a["alpha"]), "strength": uniform(*a["strength"])},
                      apply=_dali_emboss),
    albumentations=AlbumentationsLowering(
        "Emboss", lambda a: {"alpha": tuple(a["alpha"]), "strength": tuple(a["strength"])},
        record=_emboss_record, from_transform=_from_emboss,
    ),
)


# --------------------------------------------------------------------------------------------
# UnsharpMask, Defocus: OpenCV's Gaussian kernels built per sample (see wb_cv_gaussian_taps, the
# Kornia modules' twin of the DALI arithmetic in runtime/dali_ops/degrade.py)

def _dali_unsharp(a, c, d):
    """A.UnsharpMask's arithmetic (fpixel.unsharp_mask) on each sample's own kernel (degrade_unsharp_mask):
    values stay 0-255 (the threshold is in grey levels), rounded to uint8 at the end as Albumentations
    rounds its float result."""
    return [f"{c.x} = degrade_unsharp_mask({c.x}, {d['kernel_size']}, {d['sigma']}, {d['alpha']}, "
            f"{literal(int(a['kernel_size'][1]))}, {literal(int(a['threshold']))}, {literal(float(c.scale))})"]


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
        record={"kernel_size": "kernel_size", "sigma": "sigma", "alpha": "alpha"}, local=True,
        from_module=kr.arguments("kernel_size", "sigma", "alpha", "threshold")),
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
    range's largest size (degrade_defocus), then one fn.filter, mirrored borders."""
    return [f"{c.x} = degrade_defocus({c.x}, {d['radius']}, {d['alias_blur']}, "
            f"{literal(int(max(8, a['radius'][1])))})"]


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
                          record={"radius": "radius", "alias_blur": "alias_blur"}, local=True,
                          from_module=kr.arguments("radius", "alias_blur")),
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
