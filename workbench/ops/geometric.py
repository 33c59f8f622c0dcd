"""Geometric ops: flips, rotations, affine warps, crops and resizes."""
import math

from ..codegen.literals import Name, call
from .dali_helpers import INTERP, assign, uniform
from .params import Choice, Flag, Floats, Range, Size
from .spec import DaliLowering, KorniaLowering, OpSpec, Parity

# Half-pixel centres (align_corners=False) everywhere: the convention PIL, OpenCV and DALI
# use, so previews agree across backends.
_INTERP = Choice("interpolation", "resampling filter", "bilinear", options=("bilinear", "nearest"))


def _resample(params):
    return params["interpolation"].upper()


HORIZONTAL_FLIP = OpSpec(
    name="HorizontalFlip", family="geometric", default_p=0.5, parity=Parity(border=0, mae=1e-6),
    doc="Mirror the image left to right.",
    kornia=KorniaLowering("RandomHorizontalFlip", lambda a: {}),
    dali=DaliLowering(gate="arg", apply=lambda a, c, d: [assign(c.x, "fn.flip", {"horizontal": c.applied})]),
)

VERTICAL_FLIP = OpSpec(
    name="VerticalFlip", family="geometric", default_p=0.5, parity=Parity(border=0, mae=1e-6),
    doc="Mirror the image top to bottom.",
    kornia=KorniaLowering("RandomVerticalFlip", lambda a: {}),
    dali=DaliLowering(gate="arg", apply=lambda a, c, d: [
        assign(c.x, "fn.flip", {"horizontal": 0, "vertical": c.applied})]),
)

ROTATE = OpSpec(
    name="Rotate", family="geometric", parity=Parity(params={"degrees": [17.0, 17.0]}),
    doc="Rotate about the centre by an angle drawn from degrees (counter-clockwise); corners filled with 0.",
    params=(Range("degrees", "angle range in degrees", (-15.0, 15.0), lo=-180.0, hi=180.0), _INTERP),
    kornia=KorniaLowering(
        "RandomRotation",
        lambda a: {"degrees": tuple(a["degrees"]), "resample": _resample(a), "align_corners": False},
        record={"degrees": "angle"},
    ),
    dali=DaliLowering(
        draws=lambda a: {"angle": uniform(*a["degrees"])},
        apply=lambda a, c, d: [assign(c.x, "fn.rotate", {
            "angle": d["angle"], "keep_size": True, "fill_value": 0.0, "interp_type": INTERP[a["interpolation"]]})],
    ),
)

AFFINE = OpSpec(
    name="Affine", family="geometric",
    parity=Parity(params={"degrees": [25.0, 25.0], "translate": [0.0, 0.0], "scale": [0.8, 0.8],
                          "shear": [15.0, 15.0]}),
    doc="Random rotation (clockwise, as torchvision's affine), translation, scale and shear in one warp; "
        "corners filled with 0.",
    params=(
        Range("degrees", "rotation range in degrees, clockwise", (-10.0, 10.0), lo=-180.0, hi=180.0),
        Floats("translate", "largest shift as a fraction of width and height", (0.1, 0.1), length=2, lo=0.0, hi=1.0),
        Range("scale", "zoom factor range", (0.9, 1.1), lo=0.05, hi=10.0),
        Range("shear", "horizontal shear range in degrees", (0.0, 0.0), lo=-80.0, hi=80.0),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "RandomAffine",
        lambda a: {
            "degrees": tuple(a["degrees"]), "translate": tuple(a["translate"]), "scale": tuple(a["scale"]),
            "shear": tuple(a["shear"]), "resample": _resample(a), "align_corners": False,
        },
        record={"angle": "angle", "translations": "translate_px", "scale": "scale", "shear_x": "shear"},
    ),
    dali=DaliLowering(
        needs_size=True, reports=("translate_px", "scale"),
        draws=lambda a: {"angle": uniform(*a["degrees"]), "shear": uniform(*a["shear"]), "_s": uniform(*a["scale"]),
                         "_tx": uniform(-a["translate"][0], a["translate"][0]),
                         "_ty": uniform(-a["translate"][1], a["translate"][1])},
        apply=lambda a, c, d: _dali_affine(a, c, d),
    ),
)

RANDOM_RESIZED_CROP = OpSpec(
    name="RandomResizedCrop", family="geometric", always_applies=True, fixes_size=True,
    # A full-image window (scale 1 at the photos' own aspect ratio): windows are drawn differently.
    parity=Parity(params={"size": [100, 140], "scale": [1.0, 1.0], "ratio": [4 / 3, 4 / 3]}),
    doc="Crop a random area (fraction `scale` of the image, aspect `ratio`) and resize it to `size`.",
    params=(
        Size("size", "output size", (224, 224)),
        Range("scale", "crop area as a fraction of the image", (0.08, 1.0), lo=0.001, hi=1.0),
        Range("ratio", "crop aspect ratio (width / height)", (0.75, 1.3333), lo=0.05, hi=20.0),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "RandomResizedCrop",
        lambda a: {
            "size": tuple(a["size"]), "scale": tuple(a["scale"]), "ratio": tuple(a["ratio"]),
            "resample": _resample(a), "align_corners": False,
        },
        record={"src": "crop_box"},
    ),
    dali=DaliLowering(
        reports=("crop_box",), apply=lambda a, c, d: _dali_resized_crop(a, c, d),
        note="the window comes from DALI's sampler (fn.random_crop_generator), Kornia's from its own: "
             "draws differ, the same window resamples alike",
    ),
)

RESIZE = OpSpec(
    name="Resize", family="geometric", always_applies=True, fixes_size=True,
    parity=Parity(params={"size": [150, 200], "antialias": False}),
    doc="Resize to exactly `size` (aspect ratio not kept).",
    params=(
        Size("size", "output size", (256, 256)),
        _INTERP,
        Flag("antialias", "low-pass filter before shrinking, against aliasing", True),
    ),
    kornia=KorniaLowering(
        "Resize",
        lambda a: {"size": tuple(a["size"]), "resample": _resample(a), "align_corners": False,
                   "antialias": a["antialias"]},
    ),
    dali=DaliLowering(
        apply=lambda a, c, d: [assign(c.x, "fn.resize", {
            "size": tuple(a["size"]), "interp_type": INTERP[a["interpolation"]], "antialias": a["antialias"]})],
        note="with antialias, DALI low-passes with a triangle filter and Kornia with a Gaussian: "
             "shrunk images differ slightly",
    ),
)

CENTER_CROP = OpSpec(
    name="CenterCrop", family="geometric", always_applies=True, fixes_size=True, input_at_least="size",
    parity=Parity(border=0, params={"size": [101, 153]}),
    doc="Cut the central `size` region (the image must be at least that large).",
    params=(Size("size", "output size", (224, 224)),),
    kornia=KorniaLowering("CenterCrop", lambda a: {"size": tuple(a["size"]), "align_corners": False}),
    # DALI's crop_pos rounds the offset; Kornia floors it. Slicing at the floored offset
    # makes odd margins agree.
    dali=DaliLowering(
        needs_size=True,
        apply=lambda a, c, d: [assign(c.x, "fn.slice", {
            "start": Name(f"fn.cast(fn.stack(dmath.floor(({c.height} - {float(a['size'][0])!r}) * 0.5), "
                          f"dmath.floor(({c.width} - {float(a['size'][1])!r}) * 0.5)), dtype=types.INT32)"),
            "shape": tuple(a["size"]), "axis_names": "HW"})],
    ),
)

def _dali_affine(a, c, d):
    """Kornia's forward map p' = A (p - c) + c + t with A = s R(angle) Shear_x, written in
    DALI's pixel-edge coordinates (there the centre c is (W/2, H/2))."""
    v = c.var
    deg = math.pi / 180.0
    return [
        f"{v('tx')} = {d['_tx']} * {c.width}",
        f"{v('ty')} = {d['_ty']} * {c.height}",
        f"{v('translate_px')} = fn.stack({v('tx')}, {v('ty')})",
        f"{v('scale')} = fn.stack({d['_s']}, {d['_s']})",
        f"{v('cos')} = dmath.cos({d['angle']} * {deg!r})",
        f"{v('sin')} = dmath.sin({d['angle']} * {deg!r})",
        f"{v('k')} = dmath.tan({d['shear']} * {deg!r})",
        f"{v('a')} = fn.stack({d['_s']} * {v('cos')}, {d['_s']} * (0.0 - {v('k')} * {v('cos')} - {v('sin')}), "
        f"{d['_s']} * {v('sin')}, {d['_s']} * ({v('cos')} - {v('k')} * {v('sin')}))",
        f"{v('cx')} = {c.width} * 0.5",
        f"{v('cy')} = {c.height} * 0.5",
        f"{v('matrix')} = fn.reshape(fn.stack("
        f"{v('a')}[0], {v('a')}[1], {v('cx')} + {v('tx')} - {v('a')}[0] * {v('cx')} - {v('a')}[1] * {v('cy')}, "
        f"{v('a')}[2], {v('a')}[3], {v('cy')} + {v('ty')} - {v('a')}[2] * {v('cx')} - {v('a')}[3] * {v('cy')}), "
        f"shape=[2, 3])",
        assign(c.x, "fn.warp_affine", {"matrix": v("matrix"), "inverse_map": False, "fill_value": 0.0,
                                       "interp_type": INTERP[a["interpolation"]]}),
    ]


def _dali_resized_crop(a, c, d):
    """DALI's own window sampler (the one inside fn.random_resized_crop), kept visible so
    the window can be reported, then a resize of that window."""
    anchor, shape, box = (c.var(n) for n in ("anchor", "shape", "crop_box"))
    return [
        f"{anchor}, {shape} = " + call("fn.random_crop_generator", {
            "__input__": Name(f"{c.x}.shape()"), "random_area": tuple(a["scale"]),
            "random_aspect_ratio": tuple(a["ratio"]), "seed": c.seed(90)}),
        f"{box} = fn.cast(fn.stack({anchor}[1], {anchor}[0], {anchor}[1] + {shape}[1], {anchor}[0] + {shape}[0]), "
        f"dtype=types.FLOAT)",
        assign(c.x, "fn.resize", {
            "size": tuple(a["size"]), "roi_start": Name(f"fn.cast({anchor}, dtype=types.FLOAT)"),
            "roi_end": Name(f"fn.cast({anchor} + {shape}, dtype=types.FLOAT)"), "roi_relative": False,
            "interp_type": INTERP[a["interpolation"]], "antialias": False}),
    ]


OPS = (HORIZONTAL_FLIP, VERTICAL_FLIP, ROTATE, AFFINE, RANDOM_RESIZED_CROP, RESIZE, CENTER_CROP)
