"""Blur and noise ops.

Borders: the blurs mirror the image without repeating the edge pixel (Kornia's 'reflect',
DALI's 'reflect_101', OpenCV's BORDER_REFLECT_101). Noise values are in [0, 1] units, like
every value of the workbench (DALI scales them by `ctx.scale`).
"""
import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..literals import literal
from .dali_helpers import RandomOp, uniform
from .params import Choice, Flag, Number, Range, Span
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, Inverse, kernel_reach
from . import kornia_reading as kr
from . import torchvision_reading as tv


def _odd_choices(low: int, high: int) -> RandomOp:
    """A per-sample odd kernel size, uniform among the odd integers of [low, high] (as
    Albumentations' sample_odd_from_range), for DALI."""
    return RandomOp("fn.random.uniform", {"values": [float(k) for k in range(int(low), int(high) + 1, 2)]})


def _by_size(c, sizes, low: int, high: int, body) -> list[str]:
    """DALI statements that run `body(k, out)` (lines that set the variable `out` from `c.x`) for
    the samples whose drawn kernel size `sizes` is k, by conditional execution, then write `out`
    to the images: each sample pays only for its own size."""
    out = c.var("out")
    ks = list(range(int(low), int(high) + 1, 2))
    if len(ks) == 1:
        return [*body(ks[0], out), f"{c.x} = {out}"]
    lines = []
    for n, k in enumerate(ks):
        head = "else:" if n == len(ks) - 1 else f"{'if' if n == 0 else 'elif'} {sizes} == {literal(float(k))}:"
        lines += [head, *("    " + line for line in body(k, out))]
    return lines + [f"{c.x} = {out}"]

# Kornia's only draw for some ops is a per-pixel map (the noise itself): report none of it. An
# empty mapping would mean "every raw key" to the backends, so name a key Kornia never produces.
_NO_DRAWS = {"(per-pixel maps are not reported)": "none"}


def _nothing(raw):
    """Albumentations record for transforms whose draws are per-pixel maps or kernels only."""
    return {}


def _short(value: float) -> float:
    """10 significant digits: 360 - (360 - 0.1) reads 0.1 again, not 0.10000000000002274."""
    return float(f"{value:.10g}")


def _from_blur_limit(t, attribute: str = "blur_limit") -> list[int]:
    """An Albumentations blur_limit (odd sizes from 3, drawn per image) as a kernel_size range."""
    lo, hi = (int(v) for v in getattr(t, attribute))
    # Albumentations' sample_odd_from_range: below 3 reads 3, an even bound the odd one above.
    lo, hi = max(3, lo + (lo % 2 == 0)), max(3, hi + (hi % 2 == 0))
    return [lo, max(lo, hi)]


def _kernel_record(raw):
    """An Albumentations blur's drawn kernel: a size (`kernel`: an int) or the kernel itself."""
    kernel = np.asarray(raw.get("kernel", ()), dtype=np.float64)
    if kernel.ndim == 0:
        return {} if np.isnan(kernel) else {"kernel_size": float(kernel)}
    # The runner stacks kernels of the first image's shape and fills others with NaN: no size known.
    return {"kernel_size": float(kernel.shape[0])} if kernel.ndim == 2 and not np.isnan(kernel).any() else {}


# --------------------------------------------------------------------------------------------
# GaussianBlur

@dataclass(frozen=True)
class KernelSpan(Span):
    """A Span of kernel sizes for a parameter that was one number before: that single-number form
    (chains saved then) is checked, and its errors are worded, as the number was ("must be an odd
    integer, got 6"); it still reads as [v, v]."""

    def validate(self, where: str, value: Any) -> list:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            Number(self.name, self.doc, self.default, lo=self.lo, hi=self.hi, integer=self.integer,
                   odd=self.odd).validate(where, value)
        return super().validate(where, value)


def _gaussian_record(raw):
    """A.GaussianBlur reports only its 1-D kernel exp(-x^2 / 2 sigma^2) / sum (NaN-padded by the
    runner to the largest drawn): its length is the kernel size, sigma comes from two taps (none
    below about 0.03 pixels, where the outer taps underflow to 0)."""
    kernel = np.asarray(raw.get("kernel", ()), dtype=np.float64).ravel()
    kernel = kernel[~np.isnan(kernel)]
    if kernel.size < 3:
        return {}
    c = kernel.size // 2
    ratio = float(kernel[c + 1]) / float(kernel[c])
    out = {"kernel_size": float(kernel.size)}
    return {**out, "sigma": math.sqrt(-0.5 / math.log(ratio))} if 0.0 < ratio < 1.0 else out


def _from_gaussian_blur(t):
    sigma = [float(s) for s in t.sigma_limit]
    if sigma[0] <= 0.0:
        raise ValueError(f"sigma_limit={tuple(sigma)} starts at 0, which Albumentations cannot blur with; "
                         "GaussianBlur takes sigmas from 0.01")
    lo, hi = (int(v) for v in t.blur_limit)
    if (lo, hi) == (0, 0):
        # Albumentations then sizes each kernel from its sigma, int(3.5 sigma) * 2 + 1 (PIL's rule).
        # The size for the largest sigma gives smaller sigmas tails that Albumentations would cut
        # at 3.5 sigma: under 0.05% of the kernel's weight, at most one grey level (measured).
        size = max(3, int(sigma[1] * 3.5) * 2 + 1)
        if size > 99:
            raise ValueError(f"sigma {sigma[1]} needs a {size}x{size} kernel; GaussianBlur's is at most 99x99")
        return {"sigma": sigma, "kernel_size": [size, size]}
    if lo < 2:
        raise ValueError(f"blur_limit={(lo, hi)} draws a size of 0 (a kernel sized from sigma) or 1 (no blur) for "
                         "some images; GaussianBlur draws odd kernel sizes from 3: write blur_limit=(3, ...) or "
                         "(0, 0)")
    # A.GaussianBlur draws randint(lo, hi) and makes an even size odd by adding 1.
    lo, hi = lo + (lo % 2 == 0), hi + (hi % 2 == 0)
    if hi > 99:
        raise ValueError(f"blur_limit={tuple(t.blur_limit)}: GaussianBlur's kernel is at most 99x99")
    return {"sigma": sigma, "kernel_size": [lo, hi]}


def _albumentations_blur_limit(kernel_size) -> tuple[int, int]:
    """A.GaussianBlur's blur_limit for odd sizes drawn uniformly from [lo, hi]: it draws randint(lo - 1, hi)
    and adds 1 to even draws, so every odd size gets two of the integers (one size: (k, k) as before)."""
    lo, hi = (int(k) for k in kernel_size)
    return (lo, hi) if lo == hi else (lo - 1, hi)


def _dali_gaussian(a, c, d):
    lo, hi = a["kernel_size"]
    window = literal(lo) if lo == hi else d["kernel_size"]
    return [f"{c.x} = blur_gaussian({c.x}, {d['sigma']}, window_size={window})"]



def _tv_gaussian_blur(t, notes):
    k = [int(v) for v in t.kernel_size]
    if k[0] != k[1]:
        raise ValueError(f"kernel_size={tuple(k)} is not square; GaussianBlur takes one odd kernel_size")
    # torchvision pads by reflection without repeating the edge pixel, as the op does.
    return {"sigma": tv.pair(t.sigma), "kernel_size": k[0]}


def _k_gaussian_blur(m, notes):
    k = kr.size(kr.flag(m, "kernel_size"), "kernel_size")
    if k[0] != k[1]:
        raise ValueError(f"kernel_size={tuple(k)} is not square; GaussianBlur takes one odd kernel_size")
    kr.blur_border(m, "GaussianBlur", notes)
    return {"sigma": kr.pair_of(kr.gen(m).sigma, "sigma"), "kernel_size": k[0]}


GAUSSIAN_BLUR = OpSpec(
    name="GaussianBlur", family="blur/noise",
    from_kornia=Inverse("RandomGaussianBlur", _k_gaussian_blur),
    from_torchvision=Inverse("GaussianBlur", _tv_gaussian_blur),
    min_input=kernel_reach("kernel_size"),
    cost_hint="its cost grows with kernel_size (two passes of kernel_size taps per pixel); a smaller "
              "kernel_size, about 6x the largest sigma rounded up to odd, gives nearly the same blur.",
    # Measured on the sample photos: Kornia vs DALI and vs Albumentations 0.25/255 mean abs error
    # (rounding of Kornia's floats), DALI vs Albumentations 0.00004/255. With a kernel_size range each
    # backend draws its own sizes: tests/test_ops_filters.py checks each image at its reported draws.
    parity=Parity(border=0, mae=0.3 / 255, psnr=55.0, params={"sigma": [1.3, 1.3], "kernel_size": [7, 7]}),
    doc="Gaussian blur with sigma drawn per sample from `sigma` and an odd kernel_size x kernel_size window drawn "
        "per sample from `kernel_size`, mirrored borders.",
    params=(
        Range("sigma", "standard deviation range in pixels", (0.1, 2.0), lo=0.01, hi=20.0, slider=(0.01, 5.0)),
        KernelSpan("kernel_size", "window side range in pixels (odd sizes, drawn per sample)", (5, 5), lo=3, hi=99,
                   integer=True, odd=True, slider=(3, 31)),
    ),
    kornia=KorniaLowering(
        # K.RandomGaussianBlur takes one kernel size: WbGaussianBlur (its subclass) draws one per sample
        # and blurs each size's samples with kornia.filters.gaussian_blur2d; at one size it is
        # K.RandomGaussianBlur itself, draw for draw. 'reflect' mirrors without repeating the edge pixel.
        "WbGaussianBlur", lambda a: {"kernel_size": tuple(a["kernel_size"]), "sigma": tuple(a["sigma"])},
        record={"sigma": "sigma", "kernel_size": "kernel_size"}, local=True,
        from_module=kr.arguments("sigma", "kernel_size"),
    ),
    # DALI's default border is reflect-101 too; window_size takes each sample's own size.
    dali=DaliLowering(
        mirror_invariant=True,  # the kernel is symmetric
        draws=lambda a: {"sigma": uniform(*a["sigma"]),
                         **({"kernel_size": _odd_choices(*a["kernel_size"])}
                            if a["kernel_size"][0] != a["kernel_size"][1] else {})},
        apply=_dali_gaussian,
    ),
    # A.GaussianBlur convolves with cv2.sepFilter2D, whose default border is BORDER_REFLECT_101.
    albumentations=AlbumentationsLowering(
        "GaussianBlur",
        lambda a: {"blur_limit": _albumentations_blur_limit(a["kernel_size"]), "sigma_limit": tuple(a["sigma"])},
        record=_gaussian_record, from_transform=_from_gaussian_blur,
        note="a blur_limit (lo, hi) imported with an odd lo draws lo half as often as the other sizes (Albumentations "
             "draws randint(lo, hi) and makes even draws odd); the workbench draws the odd sizes uniformly, and "
             "exports them as blur_limit=(lo - 1, hi), which Albumentations draws uniformly",
    ),
)


# --------------------------------------------------------------------------------------------
# GaussianNoise

def _from_gauss_noise(t):
    if tuple(t.mean_range) != (0.0, 0.0):
        raise ValueError(f"mean_range={tuple(t.mean_range)} shifts the image; GaussianNoise adds zero-mean noise")
    if not t.per_channel:
        raise ValueError("per_channel=False adds the same noise to every channel; GaussianNoise draws each "
                         "channel's noise independently")
    if t.noise_scale_factor != 1:
        raise ValueError(f"noise_scale_factor={t.noise_scale_factor} draws noise at a lower resolution; "
                         "GaussianNoise draws one value per pixel")
    return {"std": [float(v) for v in t.std_range]}


def _k_gaussian_noise(m, notes):
    g = kr.gen(m)
    if float(kr.plain(g.mean)) != 0.0:
        raise ValueError(f"mean={kr.plain(g.mean)} shifts the image; GaussianNoise adds zero-mean noise (mean=0.0)")
    std = float(kr.plain(g.std))
    return {"std": [std, std]}


def _tv_gaussian_noise(t, notes):
    if float(t.mean) != 0.0:
        raise ValueError(f"mean={t.mean}: GaussianNoise adds zero-mean noise (a shift is Brightness's)")
    if not 0.0 <= float(t.sigma) <= 1.0:
        raise ValueError(f"sigma={t.sigma}: GaussianNoise takes a standard deviation in 0-1")
    if t.clip:
        notes.append("v2.GaussianNoise: clip=True keeps values in [0, 1]; the op's Kornia backend leaves them "
                     "unclipped (DALI and Albumentations saturate as torchvision does)")
    return {"std": [float(t.sigma), float(t.sigma)]}


GAUSSIAN_NOISE = OpSpec(
    name="GaussianNoise", family="blur/noise", default_p=0.5,
    from_kornia=Inverse("RandomGaussianNoise", _k_gaussian_noise),
    from_torchvision=Inverse("GaussianNoise", _tv_gaussian_noise),
    # Per-channel mean/std of the change at std 0.1: Kornia 0.000 / 0.100, DALI 0.001-0.004 /
    # 0.096-0.097, Albumentations 0.001-0.003 / 0.095-0.096 on the sample photos (largest gap
    # 1.45/255, Kornia vs Albumentations, seeds 0-4); up to 1.86/255 on the same-size set. The gap
    # is saturation, see the notes. Same-size images: Kornia's runtime cannot yet stack the
    # per-pixel noise maps it records for images of different sizes.
    parity=Parity(statistics=True, mae=2.0 / 255, same_size=True, params={"std": [0.1, 0.1]}),
    doc="Add zero-mean Gaussian noise whose standard deviation (in [0, 1] units) is drawn per sample from "
        "`std`, one value per pixel and channel.",
    params=(Span("std", "noise standard deviation range, in [0, 1] units (0.1 is about 25 grey levels)",
                 (0.02, 0.1), lo=0.0, hi=1.0),),
    kornia=KorniaLowering("WbGaussianNoise", lambda a: {"std": tuple(a["std"])}, record={"std": "std"}, local=True,
                          from_module=kr.arguments("std")),
    dali=DaliLowering(
        draws=lambda a: {"std": uniform(*a["std"])},
        apply=lambda a, c, d: [f"{c.x} = noise_gaussian({c.x}, {d['std']}, {literal(c.scale)}, {c.seed(9)})"],
        note="on 0-255 values the noisy image is rounded and saturates at 0 and 255; Kornia's is neither "
             "(values leave [0, 1]), so the change's std is about 3% smaller at std 0.1 on the sample photos",
    ),
    albumentations=AlbumentationsLowering(
        "GaussNoise",
        lambda a: {"std_range": tuple(a["std"]), "mean_range": (0.0, 0.0), "per_channel": True,
                   "noise_scale_factor": 1.0},
        record=_nothing, from_transform=_from_gauss_noise,
        note="on uint8 each noise value is cut towards 0 to a whole level (measured: the change is trunc(noise)) "
             "and the image saturates at 0 and 255: the change's std is about 1.5% smaller than Kornia's on a "
             "mid-grey image and 4% on the sample photos at std 0.1; it reports only its noise map (no std)",
    ),
)


# --------------------------------------------------------------------------------------------
# SaltAndPepper

def _k_salt_and_pepper(m, notes):
    g = kr.gen(m)
    return {"amount": kr.bound(g.amount, 0.0), "salt_vs_pepper": kr.bound(g.salt_and_pepper, 0.0)}


SALT_AND_PEPPER = OpSpec(
    name="SaltAndPepper", family="blur/noise", default_p=0.5,
    from_kornia=Inverse("RandomSaltAndPepperNoise", _k_salt_and_pepper),
    # Per-channel mean/std of the change at amount 0.05, seeds 0-4: the three backends within
    # 0.22/255 of each other on the sample photos, 0.89/255 on the same-size set (fewer pixels).
    # Same-size images for the reason given at GaussianNoise.
    parity=Parity(statistics=True, mae=1.0 / 255, same_size=True,
                  params={"amount": [0.05, 0.05], "salt_vs_pepper": [0.5, 0.5]}),
    doc="Set a fraction `amount` of the pixels (all channels of each) to white (salt) or black (pepper); "
        "`salt_vs_pepper` is the salt share.",
    params=(
        Range("amount", "fraction of pixels replaced", (0.01, 0.06), lo=0.0, hi=1.0),
        Range("salt_vs_pepper", "share of the replaced pixels that turn white", (0.4, 0.6), lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering(
        "RandomSaltAndPepperNoise",
        lambda a: {"amount": tuple(a["amount"]), "salt_vs_pepper": tuple(a["salt_vs_pepper"])},
        record={"amount_factor": "amount", "salt_and_pepper_factor": "salt_vs_pepper"},
    ),
    # Kornia writes the literals 1.0 and 0.0 whatever the value range; so do these (x scale).
    dali=DaliLowering(
        draws=lambda a: {"amount": uniform(*a["amount"]), "salt_vs_pepper": uniform(*a["salt_vs_pepper"])},
        apply=lambda a, c, d: [f"{c.x} = noise_salt_and_pepper({c.x}, {d['amount']}, {d['salt_vs_pepper']}, "
                               f"{literal(c.scale)}, {c.seed(3)})"],
    ),
    albumentations=AlbumentationsLowering(
        "SaltAndPepper",
        lambda a: {"amount": tuple(a["amount"]), "salt_vs_pepper": tuple(a["salt_vs_pepper"])},
        record=_nothing,
        from_transform=lambda t: {"amount": [float(v) for v in t.amount],
                                  "salt_vs_pepper": [float(v) for v in t.salt_vs_pepper]},
        note="replaces exactly int(amount x pixels) pixels, int(that x salt_vs_pepper) of them salt, where Kornia "
             "and DALI replace each pixel with probability amount; it reports only its masks",
    ),
)


# --------------------------------------------------------------------------------------------
# JpegCompression

def _dali_jpeg(a, c, d):
    """DALI codes 8-bit images with an integer quality: the draw rounded to the nearest one (reported,
    so assigned outside the step's gate). After a Normalize, values are coded as Kornia does: clamped
    to [0, 1], in 8 bits."""
    q = c.var("quality")
    return [f"{q} = jpeg_quality({d['_quality']})",
            f"{c.x} = jpeg_compress({c.x}, {q}, uint8={c.scale == 255.0})"]


def _from_image_compression(t):
    if t.compression_type != "jpeg":
        raise ValueError(f"compression_type={t.compression_type!r}: JpegCompression codes JPEG only")
    return {"quality": [float(q) for q in t.quality_range]}


def _k_jpeg(m, notes):
    return {"quality": kr.bound(kr.gen(m).jpeg_quality, 50.0, 1.0)}


def _tv_jpeg(t, notes):
    """v2.JPEG codes with libjpeg's defaults: the libjpeg codec gives its pixels on every backend."""
    return {"quality": [float(t.quality[0]), float(t.quality[1])], "codec": "libjpeg"}


def _wb_libjpeg(built, notes):
    """The export's WbLibjpegJPEG (the libjpeg codec), from its arguments."""
    low, high = kr.pair_of(built["jpeg_quality"], "jpeg_quality")
    return {"quality": [low, high], "codec": "libjpeg"}


def _libjpeg(a) -> bool:
    return a["codec"] == "libjpeg"


JPEG_COMPRESSION = OpSpec(
    name="JpegCompression", family="blur/noise", default_p=0.5,
    from_kornia=Inverse("RandomJPEG", _k_jpeg),
    from_torchvision=Inverse("JPEG", _tv_jpeg),
    # Three different encoders (see the notes). Measured at quality 50 on the sample photos, mean abs
    # error / PSNR: Kornia vs DALI 1.07/255 / 44.9 dB, Kornia vs Albumentations 1.34/255 / 42.4 dB,
    # DALI vs Albumentations 0.76/255 / 43.3 dB (each 4.4-4.8/255 from the original).
    parity=Parity(border=0, mae=1.5 / 255, psnr=42.0, params={"quality": [50.0, 50.0]}),
    cost_hint="a full JPEG encode and decode per image; on the CPU it is one of the slower ops.",
    doc="Encode and decode as JPEG at a quality drawn from `quality` (1 = worst, 100 = best), "
        "adding blocking and ringing artefacts.",
    params=(Range("quality", "JPEG quality range (1-100)", (50.0, 95.0), lo=1.0, hi=100.0),
            Choice("codec", "whose coder: each backend's own (native: Kornia's differentiable approximation, "
                            "OpenCV's for Albumentations, DALI's libjpeg-turbo), or libjpeg's with its defaults on "
                            "every backend (libjpeg: torchvision's v2.JPEG and PIL's pixels; not differentiable)",
                   "native", options=("native", "libjpeg"))),
    kornia=KorniaLowering("RandomJPEG", lambda a: {"jpeg_quality": tuple(a["quality"])},
                          record={"jpeg_quality": "quality"}, local_variant="WbLibjpegJPEG", local_when=_libjpeg,
                          from_module=_wb_libjpeg),
    dali=DaliLowering(
        draws=lambda a: {"_quality": uniform(*a["quality"])}, reports=("quality",), apply=_dali_jpeg,
        note="fn.jpeg_compression_distortion codes with libjpeg's defaults at whole-number qualities, the libjpeg "
             "codec's pixels exactly (PIL's and torchvision's), whichever codec is chosen; Kornia's native codec is a "
             "differentiable approximation with continuous qualities: 1.1/255 mean abs error from it at quality 50 "
             "on the sample photos, about a quarter of what the coding itself changes",
    ),
    albumentations=AlbumentationsLowering(
        "ImageCompression",
        lambda a: {"compression_type": "jpeg",
                   "quality_range": (int(math.floor(a["quality"][0] + 0.5)), int(math.floor(a["quality"][1] + 0.5)))},
        record={"quality": "quality"}, from_transform=_from_image_compression,
        local_variant="WbLibjpegCompression", local_when=_libjpeg,
        note="the native codec is A.ImageCompression's (OpenCV's coder) at whole-number qualities: 1.3/255 mean abs "
             "error from Kornia and 0.8/255 from DALI at quality 50 on the sample photos; the libjpeg codec writes "
             "the workbench's WbLibjpegCompression (the same draws, libjpeg's coding)",
    ),
)


# --------------------------------------------------------------------------------------------
# MotionBlur

def _dali_motion(a, c, d):
    """Kornia's motion kernel (get_motion_kernel2d with nearest resampling), built per sample in the
    middle of one grid of the range's largest size and correlated with the image with mirrored
    borders (blur_motion); with `allow_shifted`, moved by whole pixels as fn.filter's anchor."""
    shifts = f", shift_x={d['shift_x']}, shift_y={d['shift_y']}" if a["allow_shifted"] else ""
    return [f"{c.x} = blur_motion({c.x}, {d['kernel_size']}, {d['angle']}, {d['direction']}, "
            f"{literal(int(a['kernel_size'][1]))}{shifts})"]


def _from_motion_blur(t):
    lo, hi = (float(v) for v in t.angle_range)
    dlo, dhi = (float(v) for v in t.direction_range)
    return {"kernel_size": _from_blur_limit(t), "angle": [_short(360.0 - hi), _short(360.0 - lo)],
            "direction": [-dhi, -dlo], "allow_shifted": bool(t.allow_shifted)}


def _k_motion_blur(m, notes):
    g = kr.gen(m)
    kernel = kr.plain(g.kernel_size)
    kernel = [int(k) for k in kernel] if isinstance(kernel, list) else [int(kernel), int(kernel)]
    resample = getattr(kr.flag(m, "resample"), "name", "").lower()
    if resample != "nearest":
        raise ValueError(f"resample={resample.upper()}: MotionBlur rotates its kernel with nearest sampling "
                         "(resample='nearest')")
    kr.blur_border(m, "MotionBlur", notes)
    angle, direction = kr.bound(g.angle, 0.0, -math.inf), kr.bound(g.direction, 0.0, -math.inf)
    if isinstance(angle, list) and angle[0] < 0.0 <= angle[0] + 180.0 and angle[1] + 180.0 <= 360.0:
        # A line blurs alike at angle a and a + 180 when its direction (the weight's slope along the
        # line) is reversed: K.RandomMotionBlur(angle=35) draws in [-35, 35], here in [145, 215].
        angle = [angle[0] + 180.0, angle[1] + 180.0]
        direction = [-direction[1], -direction[0]] if isinstance(direction, list) else direction
        notes.append(f"MotionBlur: angle {[a - 180.0 for a in angle]} read as {angle} with the direction reversed "
                     "(the same kernels)")
    return {"kernel_size": kernel, "angle": angle,
            "direction": direction}


MOTION_BLUR = OpSpec(
    name="MotionBlur", family="blur/noise", default_p=0.5,
    from_kornia=Inverse("RandomMotionBlur", _k_motion_blur),
    min_input=kernel_reach("kernel_size"),
    # Kornia and DALI build the same kernel (0.25/255 mean abs error: Kornia's floats rounded);
    # Albumentations draws its line differently except at direction 0 on angles like 45 degrees.
    parity=Parity(border=0, mae=0.3 / 255, psnr=55.0,
                  params={"kernel_size": [7, 7], "angle": [45.0, 45.0], "direction": [0.0, 0.0]}),
    cost_hint="a kernel_size x kernel_size convolution per pixel (on DALI at the range's largest size for every "
              "sample); a smaller kernel_size is cheaper.",
    doc="Blur along a line of kernel_size pixels (an odd size drawn per sample) turned counter-clockwise by "
        "`angle` degrees; `direction` in [-1, 1] weighs one end of the line more (0 = even), mirrored borders.",
    params=(
        Span("kernel_size", "length range of the blur line in pixels (odd sizes, drawn per sample)", (3, 7), lo=3,
             hi=31, integer=True, odd=True),
        # Within one turn from 0: Albumentations takes angles in [0, 360] only, and a range across 0
        # could not be turned into one of its ranges.
        Range("angle", "angle range of the line in degrees, counter-clockwise", (0.0, 360.0), lo=0.0, hi=360.0),
        Range("direction", "weighting range along the line (-1, 0 = even, 1)", (-1.0, 1.0), lo=-1.0, hi=1.0),
        Flag("allow_shifted", "move each sample's kernel off centre by up to (kernel_size // 2) / 2 pixels along x "
                              "and y (Albumentations' default; reported as shift_x, shift_y in [-1, 1])", False),
    ),
    kornia=KorniaLowering(
        "WbMotionBlur",
        # Kornia's RandomMotionBlur draws one size per batch: WbMotionBlur draws it per sample and runs
        # kornia.filters.motion_blur (mirrored borders, nearest kernel resampling) per size.
        # allow_shifted is written only when set: chains without it export as before.
        lambda a: {"kernel_size": tuple(a["kernel_size"]), "angle": tuple(a["angle"]),
                   "direction": tuple(a["direction"]), **({"allow_shifted": True} if a["allow_shifted"] else {})},
        record={"kernel_size": "kernel_size", "angle": "angle", "direction": "direction", "shift_x": "shift_x",
                "shift_y": "shift_y"}, local=True,
        from_module=kr.arguments("kernel_size", "angle", "direction", "allow_shifted"),
    ),
    dali=DaliLowering(
        draws=lambda a: {"kernel_size": _odd_choices(*a["kernel_size"]), "angle": uniform(*a["angle"]),
                         "direction": uniform(*a["direction"]),
                         **({"shift_x": uniform(-1.0, 1.0), "shift_y": uniform(-1.0, 1.0)} if a["allow_shifted"]
                            else {})},
        apply=_dali_motion,
        note="DALI has no motion blur operator: the exported code builds Kornia's kernel per sample with DALI "
             "arithmetic and convolves with fn.filter (the same image as Kornia's up to rounding)",
    ),
    albumentations=AlbumentationsLowering(
        "MotionBlur",
        # Albumentations turns its line clockwise as displayed (angle -a, written 360 - a as it
        # takes [0, 360]) and puts positive directions on the other end (negated).
        lambda a: {"blur_limit": tuple(a["kernel_size"]),
                   "angle_range": (360.0 - a["angle"][1], 360.0 - a["angle"][0]),
                   "direction_range": (-a["direction"][1], -a["direction"][0]),
                   "allow_shifted": a["allow_shifted"]},
        record=_kernel_record, from_transform=_from_motion_blur,
        note="draws kernel_size points along the line rounded to the grid, with equal weights, and a direction "
             "shortens the line towards one end where Kornia and DALI weight it linearly: the same kernel at "
             "direction 0 on multiples of 45 degrees; elsewhere 0.9-1.9/255 mean abs error from Kornia at "
             "direction 0 and 1-3/255 with a direction (kernel 7, sample photos); it reports only its kernel "
             "(its size is reported); with allow_shifted it moves the line's points before rounding them and "
             "clips those that leave the kernel window onto its edge (shortening the line), where Kornia and DALI "
             "move the whole kernel by whole pixels",
    ),
)


# --------------------------------------------------------------------------------------------
# MedianBlur

def _dali_median(a, c, d):
    """The median of each pixel's kernel_size^2 neighbours (mirrored borders, as Kornia's): the
    shifted copies come from one-tap fn.filter kernels (rows, then columns), then a sorting
    network of dmath.min/max pairs. Exact on uint8 and float alike; DALI drops the min or
    max that no later pair uses. Each sample runs the network of the size it drew."""
    return _by_size(c, d["kernel_size"], *a["kernel_size"], lambda k, out: [f"{out} = blur_median({c.x}, {k})"])


def _k_median_blur(m, notes):
    k = kr.size(kr.flag(m, "kernel_size"), "kernel_size")
    if k[0] != k[1]:
        raise ValueError(f"kernel_size={tuple(k)} is not square; MedianBlur takes one odd kernel_size")
    return {"kernel_size": [k[0], k[0]]}


MEDIAN_BLUR = OpSpec(
    name="MedianBlur", family="blur/noise", default_p=0.5,
    from_kornia=Inverse("RandomMedianBlur", _k_median_blur),
    min_input=kernel_reach("kernel_size"),
    # Kornia and DALI agree exactly (measured 0 on the sample photos at 3, 5, 7 and [3, 7]);
    # Albumentations (OpenCV) repeats the edge pixel instead of mirroring: compared away from a
    # border of kernel_size // 2 (measured 0 there).
    parity=Parity(border=2, mae=0.01 / 255, psnr=99.0, params={"kernel_size": [5, 5]}),
    cost_hint="on DALI it sorts kernel_size^2 shifted copies per pixel (25 copies and 113 min/max pairs at 5); "
              "kernel_size 3 is about five times cheaper, so a range drawing mostly small sizes is cheaper.",
    doc="Replace each value by the median of its kernel_size x kernel_size neighbourhood (per channel), "
        "the odd size drawn per sample from `kernel_size`, mirrored borders.",
    params=(Span("kernel_size", "window side range in pixels (odd sizes, drawn per sample)", (3, 7), lo=3, hi=7,
                 integer=True, odd=True),),
    kornia=KorniaLowering("WbMedianBlur", lambda a: {"kernel_size": tuple(a["kernel_size"])},
                          record={"kernel_size": "kernel_size"}, local=True,
                          from_module=kr.arguments("kernel_size")),
    dali=DaliLowering(
        apply=_dali_median, mirror_invariant=True,
        draws=lambda a: {"kernel_size": _odd_choices(*a["kernel_size"])},
        note="fn.experimental.median_blur runs on the GPU only, so the exported code computes the median with "
             "a sorting network that runs on both (exactly Kornia's result), per drawn size by conditional "
             "execution",
    ),
    albumentations=AlbumentationsLowering(
        "MedianBlur", lambda a: {"blur_limit": tuple(a["kernel_size"])}, record=_kernel_record,
        from_transform=lambda t: {"kernel_size": _from_blur_limit(t)},
        note="cv2.medianBlur repeats the edge pixel where Kornia and DALI mirror: the outer kernel_size // 2 "
             "pixels differ",
    ),
)

OPS = (GAUSSIAN_BLUR, GAUSSIAN_NOISE, SALT_AND_PEPPER, JPEG_COMPRESSION, MOTION_BLUR, MEDIAN_BLUR)
