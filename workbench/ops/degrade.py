"""Degradation ops: box blur, downscaling.

Conventions as in filters.py: borders mirror without the edge pixel (reflect_101); values in
[0, 1] units on Kornia, 0-255 on DALI until a Normalize (`ctx.scale`). Resampling follows
OpenCV's cv2.resize (what Albumentations runs): nearest takes source pixel floor(i x scale),
linear samples (i + 0.5) x scale - 0.5, `scale` source pixels per output pixel.
"""
from ..codegen.literals import Name, literal
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

OPS = (BLUR, DOWNSCALE)
