"""Geometric ops: flips, rotations, affine and perspective warps, crops, pads and resizes."""
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..runtime import targets
from ..runtime.kornia_modules.geometric import max_size_scale, pad_to_at_least
from ..literals import Name, literal
from .dali_helpers import INTERP, RandomOp, uniform
from .params import Choice, Flag, Floats, Number, Range, Sides, Size, Span
from .spec import AlbumentationsLowering, DaliLowering, KorniaLowering, OpSpec, Parity, TargetRule, Inverse
from . import kornia_reading as kr
from . import torchvision_reading as tv


@dataclass(frozen=True)
class SizedOpSpec(OpSpec):
    """An op whose output size depends on the input's (PadIfNeeded, LongestMaxSize):
    `size_rule(params, height, width)` gives it."""

    size_rule: Callable[[Mapping[str, Any], int, int], tuple[int, int]] | None = None

    def output_size(self, params: Mapping[str, Any], height: int, width: int) -> tuple[int, int]:
        return tuple(self.size_rule(params, height, width))

# Half-pixel centres (align_corners=False) everywhere: the convention PIL, OpenCV and DALI
# use, so previews agree across backends.
_INTERP = Choice("interpolation", "resampling filter", "bilinear", options=("bilinear", "nearest"))
# Resizes also resample bicubically (torchvision's ViT recipes do): PyTorch's kernel on every backend
# (a = -0.75; with antialias PIL's a = -0.5, stretched when shrinking, as torch's antialias=True).
_RESIZE_INTERP = Choice("interpolation", "resampling filter", "bilinear", options=("bilinear", "nearest", "bicubic"))

# OpenCV flags as plain ints, so the arguments also work when handed straight to a transform:
# cv2.INTER_LINEAR = 1, cv2.INTER_NEAREST = 0, cv2.INTER_CUBIC = 2 (resizes only).
_CV_INTERP = {"bilinear": 1, "nearest": 0, "bicubic": 2}
# cv2.BORDER_CONSTANT with 0: the zero fill Kornia and DALI use outside the image.
_ZERO_BORDER = {"border_mode": 0, "fill": 0.0}


def _resample(params):
    return params["interpolation"].upper()


def _axes(x, y) -> Name:
    """Albumentations' per-axis {'x': (lo, hi), 'y': (lo, hi)} as source text (`literal` writes
    no dicts; the values are validated numbers written by `literal`)."""
    return Name("{'x': %s, 'y': %s}" % (literal(tuple(float(v) for v in x)), literal(tuple(float(v) for v in y))))


# ----- Albumentations imports (`from_transform`): settings the ops cannot express raise -------------
def _interp_from(t, resize: bool = False) -> str:
    """The op's interpolation for an A transform's OpenCV flag; bicubic only for a `resize`."""
    names = {flag: name for name, flag in _CV_INTERP.items() if resize or name != "bicubic"}
    flag = int(getattr(t, "interpolation", 1))
    if flag not in names:
        raise ValueError(f"interpolation={flag} (an OpenCV flag) has no equivalent; the op offers "
                         "cv2.INTER_LINEAR (bilinear) and cv2.INTER_NEAREST (nearest)"
                         + (" and cv2.INTER_CUBIC (bicubic)" if resize else ""))
    return names[flag]


def _zero_border_from(t) -> None:
    if int(t.border_mode) != 0:
        raise ValueError(f"border_mode={t.border_mode}: the op fills outside the image with 0 on every backend "
                         "(cv2.BORDER_CONSTANT, fill=0)")
    if np.any(np.asarray(t.fill, dtype=float) != 0):
        raise ValueError(f"fill={t.fill}: the op fills outside the image with 0 on every backend")


def _pair(value) -> list[float]:
    return [float(value[0]), float(value[1])]


def _shift_scale_rotate(t) -> bool:
    """A.ShiftScaleRotate (an A.Affine in 2.0.8, its limits already turned into Affine's ranges:
    scale_limit + 1, shift_limit as translate_percent, rotate_limit as rotate)."""
    return type(t).__name__ == "ShiftScaleRotate"


def _affine_parts(t) -> dict:
    """An A.Affine's settings, refusing what no op here expresses (pixel shifts, fit_output)."""
    _zero_border_from(t)
    if t.fit_output:
        raise ValueError("fit_output=True changes the image size; the ops keep it")
    if getattr(t, "balanced_scale", False):
        raise ValueError("balanced_scale=True draws zooming in and out equally often; the ops draw the zoom "
                         "uniformly from the scale range")
    if t.translate_percent is None:
        if any(v != 0 for axis in t.translate_px.values() for v in axis):
            raise ValueError("translate_px shifts by pixels; the ops shift by a fraction of the size "
                             "(translate_percent)")
        shift = {"x": (0.0, 0.0), "y": (0.0, 0.0)}
    else:
        shift = t.translate_percent
    if t.scale["x"] != t.scale["y"]:
        raise ValueError(f"scale differs per axis ({t.scale['x']} and {t.scale['y']}); the ops draw both zooms "
                         "from one range")
    return {"rotate": _pair(t.rotate), "scale": _pair(t.scale["x"]), "shear_x": _pair(t.shear["x"]),
            "shear_y": _pair(t.shear["y"]), "translate_x": _pair(shift["x"]), "translate_y": _pair(shift["y"]),
            "interpolation": _interp_from(t), "keep_ratio": bool(t.keep_ratio)}


def _affine_from(t):
    """A.Affine or A.ShiftScaleRotate -> Affine (rotation negated: Albumentations turns
    counter-clockwise; keep_ratio=False, both transforms' default, draws the x and y zoom apart)."""
    parts = _affine_parts(t)
    tx, ty = parts["translate_x"], parts["translate_y"]
    if tx[0] != -tx[1] or ty[0] != -ty[1]:
        if _shift_scale_rotate(t):
            raise ValueError(f"shift_limit_x {tx} / shift_limit_y {ty} is not symmetric about 0: Affine shifts "
                             "within [-t, t] per axis; give shift_limit as one number or (-t, t)")
        raise ValueError(f"translate_percent {tx}, {ty} is not symmetric about 0 (Affine takes the largest shift); "
                         "see Translate")
    if parts["shear_y"] != [0.0, 0.0]:
        raise ValueError("Affine shears along x only; see Shear")
    lo, hi = parts["rotate"]
    return {"degrees": [0.0 - hi, 0.0 - lo], "translate": [abs(tx[1]), abs(ty[1])], "scale": parts["scale"],
            "shear": parts["shear_x"], "interpolation": parts["interpolation"], "keep_ratio": parts["keep_ratio"]}


def _translate_from(t):
    parts = _affine_parts(t)
    if parts["rotate"] != [0.0, 0.0] or parts["scale"] != [1.0, 1.0] or parts["shear_x"] != [0.0, 0.0] \
            or parts["shear_y"] != [0.0, 0.0]:
        return None
    return {"translate_x": parts["translate_x"], "translate_y": parts["translate_y"],
            "interpolation": parts["interpolation"]}


def _shear_from(t):
    parts = _affine_parts(t)
    if parts["rotate"] != [0.0, 0.0] or parts["scale"] != [1.0, 1.0] \
            or parts["translate_x"] != [0.0, 0.0] or parts["translate_y"] != [0.0, 0.0]:
        return None
    return {"shear_x": parts["shear_x"], "shear_y": parts["shear_y"], "interpolation": parts["interpolation"]}


def _rotate_from(t):
    _zero_border_from(t)
    if t.crop_border:
        raise ValueError("crop_border=True cuts the corners away and changes the size; Rotate keeps the size")
    return {"degrees": _pair(t.limit), "interpolation": _interp_from(t)}


def _no_pad_from(t) -> None:
    if t.pad_if_needed:
        raise ValueError("pad_if_needed=True pads small images; this crop needs an image at least as large")


# ----- Albumentations records: the transform's applied params -> the names Kornia reports ---------
def _matrix(raw) -> np.ndarray:
    return np.asarray(raw["matrix"], dtype=np.float64).reshape(3, 3)


def _rotation_record(raw) -> dict:
    """A.Rotate keeps only its matrix [[cos, sin, .], [-sin, cos, .]] (counter-clockwise)."""
    m = _matrix(raw)
    return {"angle": math.degrees(math.atan2(m[0, 1], m[0, 0]))}


def _affine_record(raw) -> dict:
    """A.Affine's matrix is C T Sh R S C^-1 about the pixel-centre centre C; its linear part
    Sh R S with R from `rotate` gives the scale (sqrt of the determinant) and the shear, its
    last column the shift."""
    m = _matrix(raw)
    lin = m[:2, :2]
    rad = math.radians(float(raw["rotate"]))
    rot = np.array([[math.cos(rad), math.sin(rad)], [-math.sin(rad), math.cos(rad)]])
    # An x shear leaves the second row of R S alone: [-sin sx, cos sy]; det(lin) = sx sy.
    det = float(np.linalg.det(lin))
    if abs(rot[1, 1]) >= abs(rot[1, 0]):
        sy = float(lin[1, 1] / rot[1, 1])
        sx = det / sy
    else:
        sx = float(lin[1, 0] / rot[1, 0])
        sy = det / sx
    shear = lin @ np.diag([1.0 / sx, 1.0 / sy]) @ rot.T
    h, w = (float(v) for v in np.asarray(raw["output_shape"]).reshape(-1)[:2])
    centre = np.array([w / 2 - 0.5, h / 2 - 0.5])
    shift = m[:2, 2] - centre + lin @ centre
    # The matrix too: Albumentations composes shear and rotation in its own order, which the targets
    # follow (runtime/targets.py's affine takes a reported matrix over the angles).
    return {"angle": -float(raw["rotate"]), "translate_px": [float(shift[0]), float(shift[1])],
            "scale": [sx, sy], "shear": -math.degrees(math.atan(shear[0, 1])), "matrix": m.tolist()}


def _translate_record(raw) -> dict:
    m = _matrix(raw)
    return {"dx": float(m[0, 2]), "dy": float(m[1, 2])}


def _shear_record(raw) -> dict:
    """Albumentations negates its shear draws: the matrix is [[1, -tan x], [-tan y, 1]]."""
    m = _matrix(raw)
    return {"shear_x": -math.degrees(math.atan(m[0, 1])), "shear_y": -math.degrees(math.atan(m[1, 0])),
            "matrix": m.tolist()}


# ----- DALI -----------------------------------------------------------------------------------
# The lowerings write calls of runtime/dali_ops/geometric.py's functions (an export copies those
# its steps call). The statements that change the images assign only `c.x`, and those computing
# reported values never do: a gate ("if") keeps the first kind to the samples a step applies to.
def _interp(a) -> str:
    """The op's filter as DALI's (types.INTERP_LINEAR, types.INTERP_NN), an argument of the calls."""
    return INTERP[a["interpolation"]]


def _dali_affine(a, c, d):
    """Kornia's RandomAffine: A = R(angle) diag(sx, sy) Shear_x, then the shift (sy = sx unless
    keep_ratio is off), a forward warp about the image centre."""
    v = c.var
    sy = d["_s"] if a["keep_ratio"] else d["_sy"]
    return [
        f"{v('translate_px')}, {v('scale')}, {v('matrix')} = affine_warp_matrix("
        f"{d['angle']}, {d['shear']}, {d['_s']}, {sy}, {d['_tx']}, {d['_ty']}, {c.height}, {c.width})",
        f"{c.x} = warp_affine_forward({c.x}, {v('matrix')}, {_interp(a)})",
    ]


def _dali_translate(a, c, d):
    v = c.var
    return [f"{v('dx')}, {v('dy')}, {v('matrix')} = translation_warp_matrix({d['_fx']}, {d['_fy']}, {c.height}, "
            f"{c.width})",
            f"{c.x} = warp_affine_forward({c.x}, {v('matrix')}, {_interp(a)})"]


def _dali_shear(a, c, d):
    """Kornia's shear matrix: x sheared first, then y, [[1, -tan x], [-tan y, 1 + tan x tan y]]."""
    return [f"{c.x} = shear_images({c.x}, {d['shear_x']}, {d['shear_y']}, {c.height}, {c.width}, {_interp(a)})"]


def _dali_perspective(a, c, d):
    """Kornia's RandomPerspective: every corner moves inwards by up to distortion * size / 2
    (corners at pixel centres 0 and W - 1); the homography taking the corners there is built in
    closed form (unit square -> quadrilateral, Heckbert 1989)."""
    v = c.var
    return [
        f"{v('start_points')}, {v('end_points')}, {v('matrix')} = perspective_corner_warp("
        f"{d['_r']}, {literal(float(a['distortion']))}, {c.height}, {c.width})",
        f"{c.x} = warp_perspective_forward({c.x}, {v('matrix')}, {_interp(a)})",
    ]


def _dali_center_crop(a, c) -> list[str]:
    """DALI's crop_pos rounds the offset; Kornia (and Albumentations) floor it. Slicing at the
    floored offset makes odd margins agree."""
    v = c.var
    x0, y0 = v("x0"), v("y0")
    size = literal(tuple(float(s) for s in a["size"]))
    return [f"{x0}, {y0}, {v('crop_box')} = center_crop_window({size}, {c.height}, {c.width})", *_cut(a, c, x0, y0)]


def _cut(a, c, x0, y0) -> list[str]:
    """The statements cutting the `size` window at (x0, y0): a slice of the images, or, while
    the input is still encoded, decoding only that window (after a pending Resize: only the
    part of the file it is resampled from)."""
    if c.encoded is not None and c.resized is not None:
        return _decode_resized_window(c, x0, y0, a["size"])
    if c.encoded is not None:
        start = c.var("start")
        return [f"{start} = window_start({x0}, {y0})", c.decode_window(start, literal(tuple(a["size"])))]
    return [f"{c.x} = slice_window({c.x}, {x0}, {y0}, {literal(tuple(a['size']))})"]


def _decode_resized_window(c, x0, y0, size) -> list[str]:
    """Resize-then-crop from the encoded file: the window of the resized image comes from a region
    of the file's pixels; that region, with a margin wide enough for the resize's filter, is
    decoded alone and resized with the window as region of interest, which samples exactly where
    resizing the whole file and cutting the window would (see resized_window_source)."""
    v, resize = c.var, c.resized
    resized = literal(tuple(float(s) for s in resize["size"]))
    first, extent, start, end = (v(n) for n in ("src_first", "src_extent", "roi_start", "roi_end"))
    return [
        f"{first}, {extent}, {start}, {end} = resized_window_source({c.encoded}, {x0}, {y0}, {resized}, "
        f"{literal(tuple(float(s) for s in size))})",
        c.decode_window(first, extent),
        f"{c.x} = resize_region({c.x}, {literal(tuple(size))}, {start}, {end}, "
        f"{INTERP[resize['interpolation']]}, {literal(_antialias(resize))})",
    ]


def _dali_window(a, c, d, pad: bool) -> list[str]:
    """Kornia's RandomCrop window: start = floor(u * (room + 1)) on each axis. With `pad`
    (pad_if_needed) a side shorter than `size` is first padded by the shortfall on both ends,
    as Kornia does; the window is reported in that padded canvas, the padding as [left, right,
    top, bottom]. A whole-pixel shift onto a `size` canvas (nearest neighbour, so exact) then
    cuts it from the image with the fill around it, where a slice would need its "pad" policy."""
    v = c.var
    size = literal(tuple(float(s) for s in a["size"]))
    if not pad:
        x0, y0 = v("x0"), v("y0")
        return [f"{x0}, {y0}, {v('crop_box')} = random_crop_window({d['_u']}, {d['_v']}, {size}, {c.height}, "
                f"{c.width})", *_cut(a, c, x0, y0)]
    # DALI truncates a fill between two 8-bit levels: the nearest level is closest to Kornia's exact value.
    fill = float(round(a["fill"] * c.scale)) if c.scale == 255.0 else float(a["fill"]) * c.scale
    window = (f"{v('padding')}, {v('crop_box')}, {v('shift')} = padded_random_window({d['_u']}, {d['_v']}, {size}, "
              f"{c.height}, {c.width}, {literal(float(a['padding']))})")
    if a["padding_mode"] != "constant":  # the window cut from the image, its border made by fn.slice
        return [window, f"{v('start')} = padded_window_start({v('padding')}, {v('crop_box')})",
                f"{c.x} = slice_with_border({c.x}, {v('start')}, {literal(tuple(int(s) for s in a['size']))}, "
                f"{literal(_SLICE_BORDERS[a['padding_mode']])})"]
    return [window, f"{c.x} = shift_onto_canvas({c.x}, {v('shift')}, {size}, {literal(fill)})"]


# torchvision's padding modes as fn.slice's out-of-bounds policies (OpenCV's borders).
_SLICE_BORDERS = {"edge": "edge", "reflect": "reflect_101", "symmetric": "reflect_1001"}
_PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def _dali_resized_crop(a, c, d):
    """DALI's own window sampler (the one inside fn.random_resized_crop), kept visible so
    the window can be reported, then a resize of that window."""
    anchor, shape, box = (c.var(n) for n in ("anchor", "shape", "crop_box"))
    size = literal(tuple(a["size"]))
    lines = [f"{anchor}, {shape}, {box} = random_area_window({c.shape()}, {literal(tuple(a['scale']))}, "
             f"{literal(tuple(a['ratio']))}, {c.seed(90)})"]
    if c.encoded is not None:  # the same window, drawn from the file's header, decoded alone
        return lines + [c.decode_window(anchor, shape),
                        f"{c.x} = resize_exactly({c.x}, {size}, {_interp(a)}, {literal(_antialias(a))})"]
    return lines + [f"{c.x} = resize_anchored_window({c.x}, {anchor}, {shape}, {size}, {_interp(a)}, "
                    f"{literal(_antialias(a))})"]


# ----- parity references: the expected output from a sample's reported draws ------------------
def _reference_window(image, row):
    """The reported window [x0, y0, x1, y1) of the image, in [0, 1] units."""
    x0, y0, x1, y1 = (int(round(b)) for b in row["crop_box"])
    return np.asarray(image, dtype=np.float64)[y0:y1, x0:x1] / 255.0


def _reference_pad(fill):
    """The reported window of the image padded by the reported [left, right, top, bottom]."""
    def reference(image, row):
        x = np.asarray(image, dtype=np.float64) / 255.0
        left, right, top, bottom = (int(round(p)) for p in row["padding"])
        x = np.pad(x, ((top, bottom), (left, right), (0, 0)), constant_values=fill)
        x0, y0, x1, y1 = (int(round(b)) for b in row["crop_box"])
        return x[y0:y1, x0:x1]
    return reference


def _corners_record(raw) -> dict:
    """WbPerspective's start and end corners, flat [x0, y0, x1, y1, ...] as Kornia reports them."""
    return {"start_points": np.asarray(raw["start_points"], np.float64).reshape(-1).tolist(),
            "end_points": np.asarray(raw["end_points"], np.float64).reshape(-1).tolist()}


def _reference_perspective(image, row):
    """OpenCV's warp taking the reported start corners to the end corners (pixel centres at
    integers, bilinear, 0 outside)."""
    import cv2

    src = np.asarray(row["start_points"], dtype=np.float32).reshape(4, 2)
    dst = np.asarray(row["end_points"], dtype=np.float32).reshape(4, 2)
    h, w = image.shape[:2]
    out = cv2.warpPerspective(np.asarray(image, dtype=np.float32), cv2.getPerspectiveTransform(src, dst), (w, h),
                              flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return out.astype(np.float64) / 255.0


# ----- the ops ----------------------------------------------------------------------------------
HORIZONTAL_FLIP = OpSpec(
    name="HorizontalFlip", family="geometric", default_p=0.5, parity=Parity(border=0, mae=1e-6),
    from_kornia=Inverse("RandomHorizontalFlip", lambda m, notes: {}),
    from_torchvision=Inverse("RandomHorizontalFlip", lambda t, notes: {}),
    targets=TargetRule(geometry=targets.horizontal_flip),
    doc="Mirror the image left to right.",
    kornia=KorniaLowering("RandomHorizontalFlip", lambda a: {}),
    dali=DaliLowering(gate="arg", apply=lambda a, c, d: [f"{c.x} = flip_left_right({c.x}, {c.applied})"]),
    albumentations=AlbumentationsLowering("HorizontalFlip", lambda a: {}, from_transform=lambda t: {}),
)

VERTICAL_FLIP = OpSpec(
    name="VerticalFlip", family="geometric", default_p=0.5, parity=Parity(border=0, mae=1e-6),
    from_kornia=Inverse("RandomVerticalFlip", lambda m, notes: {}),
    from_torchvision=Inverse("RandomVerticalFlip", lambda t, notes: {}),
    targets=TargetRule(geometry=targets.vertical_flip),
    doc="Mirror the image top to bottom.",
    kornia=KorniaLowering("RandomVerticalFlip", lambda a: {}),
    dali=DaliLowering(gate="arg", apply=lambda a, c, d: [f"{c.x} = flip_top_bottom({c.x}, {c.applied})"]),
    albumentations=AlbumentationsLowering("VerticalFlip", lambda a: {}, from_transform=lambda t: {}),
)


def _tv_rotation(t, notes):
    if t.expand:
        raise ValueError("expand=True grows the canvas to hold the whole rotated image; Rotate keeps the size")
    tv.no_center(t, "Rotate")
    tv.zero_fill(t, "Rotate")
    return {"degrees": tv.pair(t.degrees), "interpolation": tv.interpolation(t, "Rotate")}


def _k_rotation(m, notes):
    kr.align(m, "Rotate", notes)
    return {"degrees": kr.sampler(m, "degrees"), "interpolation": kr.interpolation(m, "Rotate")}


ROTATE = OpSpec(
    name="Rotate", family="geometric", targets=TargetRule(geometry=targets.rotation),
    from_kornia=Inverse("RandomRotation", _k_rotation),
    from_torchvision=Inverse("RandomRotation", _tv_rotation),
    # Measured on the 8 photos: 0.22/255 mean, 59.6 dB for both pairs (interpolation rounding).
    parity=Parity(mae=0.4 / 255, psnr=55.0, params={"degrees": [17.0, 17.0]}),
    doc="Rotate about the centre by an angle drawn from degrees (counter-clockwise); corners filled with 0.",
    params=(Range("degrees", "angle range in degrees", (-15.0, 15.0), lo=-180.0, hi=180.0, slider=(-90.0, 90.0)),
            _INTERP),
    kornia=KorniaLowering(
        "RandomRotation",
        lambda a: {"degrees": tuple(a["degrees"]), "resample": _resample(a), "align_corners": False},
        record={"degrees": "angle"},
    ),
    dali=DaliLowering(
        draws=lambda a: {"angle": uniform(*a["degrees"])},
        apply=lambda a, c, d: [f"{c.x} = rotate_in_frame({c.x}, {d['angle']}, {_interp(a)})"],
    ),
    albumentations=AlbumentationsLowering(
        "Rotate",
        lambda a: {"limit": tuple(a["degrees"]), "interpolation": _CV_INTERP[a["interpolation"]], **_ZERO_BORDER},
        record=_rotation_record, from_transform=_rotate_from,
    ),
)


def _tv_affine(t, notes):
    tv.no_center(t, "Affine")
    tv.zero_fill(t, "Affine")
    shear = [0.0, 0.0] if t.shear is None else [float(v) for v in t.shear]
    if len(shear) == 4:
        if shear[2:] != [0.0, 0.0]:
            raise ValueError(f"shear={shear} shears along y too; Affine shears along x only (the Shear op takes "
                             "shear_x and shear_y)")
        shear = shear[:2]
    # torchvision draws one zoom for both axes: keep_ratio.
    return {"degrees": tv.pair(t.degrees), "translate": [0.0, 0.0] if t.translate is None else tv.pair(t.translate),
            "scale": [1.0, 1.0] if t.scale is None else tv.pair(t.scale), "shear": shear,
            "interpolation": tv.interpolation(t, "Affine"), "keep_ratio": True}


def _k_affine(m, notes):
    g = kr.gen(m)
    kr.zeros_padding(m, "Affine")
    kr.align(m, "Affine", notes)
    degrees = kr.bound(g.degrees, 0.0, -math.inf)
    translate = [0.0, 0.0] if g.translate is None else kr.pair_of(g.translate, "translate")
    scale = [1.0, 1.0] if g.scale is None else kr.plain(g.scale)
    keep_ratio = len(scale) == 2  # a (min, max) pair draws one zoom for both axes
    if len(scale) == 4:
        if scale[2:] != scale[:2]:
            raise ValueError(f"scale={scale} draws the x and y zoom from different ranges; Affine draws both from one "
                             "range")
        scale = scale[:2]
    shear = [0.0, 0.0] if g.shear is None else kr.plain(g.shear)
    if not isinstance(shear, list):
        shear = [-shear, shear]
    if len(shear) == 4:
        if shear[2:] != [0.0, 0.0]:
            raise ValueError(f"shear={shear} shears along y too; Affine shears along x only (the Shear op takes "
                             "shear_x and shear_y)")
        shear = shear[:2]
    params = {"degrees": degrees, "translate": translate, "scale": scale, "shear": shear,
              "interpolation": kr.interpolation(m, "Affine")}
    params["keep_ratio"] = keep_ratio
    return params


AFFINE = OpSpec(
    name="Affine", family="geometric", targets=TargetRule(geometry=targets.affine),
    from_kornia=Inverse("RandomAffine", _k_affine),
    from_torchvision=Inverse("RandomAffine", _tv_affine),
    # No shear here: Albumentations composes shear and rotation in the other order (see its note);
    # tests/test_ops_geometric.py checks Kornia against DALI with both.
    # Measured: 0.16/255 mean, 61.0 dB for both pairs.
    parity=Parity(mae=0.3 / 255, psnr=56.0,
                  params={"degrees": [25.0, 25.0], "translate": [0.0, 0.0], "scale": [0.8, 0.8], "shear": [0.0, 0.0]}),
    doc="Random rotation (clockwise, as torchvision's affine), translation, scale and shear in one warp; "
        "corners filled with 0.",
    params=(
        Range("degrees", "rotation range in degrees, clockwise", (-10.0, 10.0), lo=-180.0, hi=180.0,
              slider=(-90.0, 90.0)),
        Floats("translate", "largest shift as a fraction of width and height", (0.1, 0.1), length=2, lo=0.0, hi=1.0),
        Range("scale", "zoom factor range", (0.9, 1.1), lo=0.05, hi=10.0, slider=(0.25, 4.0)),
        Range("shear", "horizontal shear range in degrees", (0.0, 0.0), lo=-80.0, hi=80.0, slider=(-45.0, 45.0)),
        _INTERP,
        Flag("keep_ratio", "one zoom for both axes (off: the x and y zoom are drawn apart from `scale`, as "
                           "A.Affine and A.ShiftScaleRotate do by default)", True),
    ),
    kornia=KorniaLowering(
        "RandomAffine",
        lambda a: {
            "degrees": tuple(a["degrees"]), "translate": tuple(a["translate"]),
            "scale": tuple(a["scale"]) if a["keep_ratio"] else (*a["scale"], *a["scale"]),
            "shear": tuple(a["shear"]), "resample": _resample(a), "align_corners": False,
        },
        record={"angle": "angle", "translations": "translate_px", "scale": "scale", "shear_x": "shear"},
    ),
    dali=DaliLowering(
        needs_size=True, reports=("translate_px", "scale"),
        draws=lambda a: {"angle": uniform(*a["degrees"]), "shear": uniform(*a["shear"]), "_s": uniform(*a["scale"]),
                         "_tx": uniform(-a["translate"][0], a["translate"][0]),
                         "_ty": uniform(-a["translate"][1], a["translate"][1]),
                         **({} if a["keep_ratio"] else {"_sy": uniform(*a["scale"])})},
        apply=lambda a, c, d: _dali_affine(a, c, d),
    ),
    albumentations=AlbumentationsLowering(
        "Affine",
        # Albumentations turns counter-clockwise: the clockwise range is negated.
        lambda a: {"rotate": (-a["degrees"][1], -a["degrees"][0]), "scale": tuple(a["scale"]),
                   "keep_ratio": a["keep_ratio"],
                   "translate_percent": _axes((-a["translate"][0], a["translate"][0]),
                                              (-a["translate"][1], a["translate"][1])),
                   "shear": _axes(a["shear"], (0.0, 0.0)), "interpolation": _CV_INTERP[a["interpolation"]],
                   **_ZERO_BORDER},
        record=_affine_record, from_transform=_affine_from, also_imports=("ShiftScaleRotate",),
        note="shears after rotating where Kornia and DALI shear first: with both a rotation and a shear the "
             "warps differ; shifts are whole pixels (fraction * size truncated). A.ShiftScaleRotate imports "
             "here too (shift_limit, scale_limit + 1, rotate_limit negated: Albumentations turns "
             "counter-clockwise)",
    ),
)


def _antialias(a) -> bool:
    """Whether the resize low-passes when shrinking: bilinear and bicubic do (DALI's nearest cannot)."""
    return bool(a["antialias"]) and a["interpolation"] != "nearest"


def _own_resize(a) -> bool:
    """Whether a RandomResizedCrop needs the workbench's resize of its window (WbRandomResizedCrop):
    Kornia's samples it bilinearly or nearest, without a filter."""
    return bool(a["antialias"]) or a["interpolation"] == "bicubic"


def _tv_resized_crop(t, notes):
    return {"size": tv.size(t.size), "scale": tv.pair(t.scale), "ratio": tv.pair(t.ratio),
            "interpolation": tv.interpolation(t, "RandomResizedCrop", resize=True), "antialias": bool(t.antialias)}


def _k_resized_crop(m, notes):
    g = kr.gen(m)
    kr.align(m, "RandomResizedCrop", notes)
    return {"size": kr.size(kr.flag(m, "size")), "scale": kr.pair_of(g.scale, "scale"),
            "ratio": kr.pair_of(g.ratio, "ratio"),
            "interpolation": kr.interpolation(m, "RandomResizedCrop"), "antialias": False}


def _wb_resized_crop(built, notes):
    """The export's WbRandomResizedCrop (RandomResizedCrop with antialias), from its arguments."""
    return {"size": [float(v) for v in built["size"]], "scale": kr.plain(built["scale"]),
            "ratio": kr.plain(built["ratio"]), "interpolation": str(built["resample"]).lower(),
            "antialias": bool(built["antialias"])}


RANDOM_RESIZED_CROP = OpSpec(
    name="RandomResizedCrop", family="geometric", always_applies=True, fixes_size=True,
    from_kornia=Inverse("RandomResizedCrop", _k_resized_crop),
    from_torchvision=Inverse("RandomResizedCrop", _tv_resized_crop),
    targets=TargetRule(geometry=targets.window, size="fixed"),
    # A full-image window (scale 1 at the photos' own aspect ratio): windows are drawn differently.
    # Measured: 0.23/255 (DALI) and 0.25/255 (Albumentations) mean, 58.3 dB at worst.
    parity=Parity(mae=0.4 / 255, psnr=55.0, params={"size": [100, 140], "scale": [1.0, 1.0], "ratio": [4 / 3, 4 / 3]}),
    doc="Crop a random area (fraction `scale` of the image, aspect `ratio`) and resize it to `size`. With "
        "`antialias` (torchvision's default), a window shrunk bilinearly is low-passed first, as Resize does.",
    params=(
        Size("size", "output size", (224, 224)),
        Range("scale", "crop area as a fraction of the image", (0.08, 1.0), lo=0.001, hi=1.0),
        Range("ratio", "crop aspect ratio (width / height)", (0.75, 1.3333), lo=0.05, hi=20.0, slider=(0.25, 4.0)),
        _RESIZE_INTERP,
        # Off by default: Kornia's and Albumentations' own RandomResizedCrop do not filter, and the
        # unfiltered window fuses with the steps around it into one resampling.
        Flag("antialias", "low-pass filter a window before shrinking it (the triangle filter, as Resize)", False),
    ),
    kornia=KorniaLowering(
        "RandomResizedCrop",
        lambda a: {
            "size": tuple(a["size"]), "scale": tuple(a["scale"]), "ratio": tuple(a["ratio"]),
            "resample": _resample(a), "align_corners": False,
            **({"antialias": bool(a["antialias"])} if _own_resize(a) else {}),
        },
        record={"src": "crop_box"},
        local_variant="WbRandomResizedCrop", local_when=_own_resize, from_module=_wb_resized_crop,
    ),
    dali=DaliLowering(
        reports=("crop_box",), apply=lambda a, c, d: _dali_resized_crop(a, c, d), decodes_region=True,
        note="the window comes from DALI's sampler (fn.random_crop_generator), Kornia's from its own: "
             "draws differ, the same window resamples alike",
    ),
    albumentations=AlbumentationsLowering(
        "RandomResizedCrop",
        lambda a: {"size": tuple(a["size"]), "scale": tuple(a["scale"]), "ratio": tuple(a["ratio"]),
                   "interpolation": _CV_INTERP[a["interpolation"]],
                   **({"area_for_downscale": "image"} if a["antialias"] else {})},
        record={"crop_coords": "crop_box"}, from_transform=lambda t: _resized_crop_from(t),
        note="the window comes from Albumentations' own sampler: draws differ, the same window resamples alike; "
             "the export writes WbRandomResizedCrop, whose area_for_downscale (antialias) is the triangle filter",
    ),
)


def _resized_crop_from(t):
    return {"size": [int(t.size[0]), int(t.size[1])], "scale": _pair(t.scale), "ratio": _pair(t.ratio),
            "antialias": t.area_for_downscale is not None,
            "interpolation": _interp_from(t, resize=True)}


# The export writes WbResize, WbLongestMaxSize, WbSmallestMaxSize (runtime/albumentations_transforms.py)
# in place of A's class: OpenCV has no triangle filter.
_ALB_RESIZE_NOTE = ("the export writes Wb{name}, an A.{name} whose area_for_downscale (antialias) shrinks with "
                    "PIL's BILINEAR, the triangle filter Kornia and DALI use (rounded to a level in PIL's fixed "
                    "point), not OpenCV's area filter; with nearest it does not filter")



def _tv_resize(t, notes):
    size = t.size
    if size is None or len(size) == 1:
        return None  # one side keeping the aspect ratio: LongestMaxSize or SmallestMaxSize
    if t.max_size is not None:
        raise ValueError(f"max_size={t.max_size} bounds the long side of a resize to (height, width); Resize takes "
                         "an output size")
    if not t.antialias:
        notes.append("v2.Resize: antialias=False; imported with antialias off")
    return {"size": tv.size(size), "interpolation": tv.interpolation(t, "Resize", resize=True),
            "antialias": bool(t.antialias)}


def _k_resize(m, notes):
    size = kr.plain(kr.flag(m, "size"))
    if not isinstance(size, list):
        raise ValueError(f"size={int(size)} resizes the {kr.flag(m, 'side')} side keeping the aspect ratio; Resize "
                         "takes an output size (height, width)")
    kr.align(m, "Resize", notes)
    return {"size": kr.size(size), "interpolation": kr.interpolation(m, "Resize"),
            "antialias": bool(kr.flag(m, "antialias"))}


RESIZE = OpSpec(
    name="Resize", family="geometric", always_applies=True, fixes_size=True,
    from_kornia=Inverse("Resize", _k_resize),
    from_torchvision=Inverse("Resize", _tv_resize),
    targets=TargetRule(geometry=targets.resize, size="fixed"),
    # One antialias filter on every backend (the triangle). Measured from Kornia on the sample photos
    # and on 500x375 crops shrunk 1.25 to 6.25 times (tests/test_parity.py): DALI 0.24-0.25/255, 58.9 dB
    # at worst; Albumentations (PIL's 8-bit rounding) 0.26-0.28/255, 57.3 dB; without antialias and
    # enlarging 0.23 and 0.25/255. Before (Kornia's Gaussian, DALI's triangle, OpenCV's area filter):
    # 0.6-2.0/255 (DALI) and 0.6-2.1/255 (Albumentations).
    parity=Parity(mae=0.35 / 255, psnr=56.0, params={"size": [150, 200], "antialias": True}),
    doc="Resize to exactly `size` (aspect ratio not kept). With `antialias`, bilinear shrinking low-passes with a "
        "triangle filter as wide as the shrink factor (PIL's BILINEAR) on every backend; nearest never filters.",
    params=(
        Size("size", "output size", (256, 256)),
        _RESIZE_INTERP,
        Flag("antialias", "low-pass filter before shrinking, against aliasing", True),
    ),
    kornia=KorniaLowering(
        "WbResize", lambda a: {"size": tuple(a["size"]), "resample": a["interpolation"], "antialias": a["antialias"]},
        local=True,
        from_module=kr.arguments("size", "antialias", interpolation="resample"),
    ),
    dali=DaliLowering(
        apply=lambda a, c, d: [
            f"{c.x} = resize_exactly({c.x}, {literal(tuple(a['size']))}, {_interp(a)}, {literal(_antialias(a))})"],
        defers_to_crop=True,
    ),
    albumentations=AlbumentationsLowering(
        "Resize",
        lambda a: {"height": a["size"][0], "width": a["size"][1], "interpolation": _CV_INTERP[a["interpolation"]],
                   **({"area_for_downscale": "image"} if a["antialias"] else {})},
        from_transform=lambda t: {"size": [int(t.height), int(t.width)], "interpolation": _interp_from(t, resize=True),
                                  "antialias": t.area_for_downscale is not None},
        note=_ALB_RESIZE_NOTE.format(name="Resize"),
    ),
)

def _k_center_crop(m, notes):
    if kr.flag(m, "cropping_mode") != "slice":
        kr.align(m, "CenterCrop", notes)
    return {"size": kr.size(kr.flag(m, "size"))}


CENTER_CROP = OpSpec(
    name="CenterCrop", family="geometric", always_applies=True, fixes_size=True, input_at_least="size",
    from_kornia=Inverse("CenterCrop", _k_center_crop),
    from_torchvision=Inverse("CenterCrop", lambda t, notes: {"size": tv.size(t.size)}),
    targets=TargetRule(geometry=targets.window, size="fixed"),
    parity=Parity(border=0, mae=1e-6, params={"size": [101, 153]}),
    doc="Cut the central `size` region (the image must be at least that large).",
    params=(Size("size", "output size", (224, 224)),),
    kornia=KorniaLowering("CenterCrop", lambda a: {"size": tuple(a["size"]), "align_corners": False},
                          record={"src": "crop_box"}),
    dali=DaliLowering(needs_size=True, reports=("crop_box",), apply=lambda a, c, d: _dali_center_crop(a, c),
                      decodes_region=True, follows_resize=True),
    albumentations=AlbumentationsLowering(
        "CenterCrop", lambda a: {"height": a["size"][0], "width": a["size"][1]}, record={"crop_coords": "crop_box"},
        from_transform=lambda t: _no_pad_from(t) or {"size": [int(t.height), int(t.width)]},
    ),
)


def _tv_margin(t) -> int:
    """v2.RandomCrop's padding as one margin on every side (0 without padding)."""
    if t.padding is None:
        return 0
    sides = {int(v) for v in t.padding}
    if len(sides) != 1:
        raise ValueError(f"padding={t.padding} differs per side; Pad adds one margin on every side (padding=N)")
    return sides.pop()


def _tv_random_crop(t, notes):
    """v2.RandomCrop without padding or pad_if_needed (with either, it is Pad)."""
    return None if t.pad_if_needed or _tv_margin(t) else {"size": tv.size(t.size)}


def _k_no_margin(m) -> None:
    padding = kr.flag(m, "padding")
    if padding is not None:
        raise ValueError(f"padding={kr.plain(padding)} pads every image by a margin before cropping; RandomCrop has no "
                         "padding and Pad pads to a fixed size (at a random place): crop without padding=")


def _k_random_crop(m, notes):
    """K.RandomCrop without pad_if_needed (with it, it is Pad)."""
    _k_no_margin(m)
    return None if kr.flag(m, "pad_if_needed") else {"size": kr.size(kr.flag(m, "size"))}


RANDOM_CROP = OpSpec(
    name="RandomCrop", family="geometric", always_applies=True, fixes_size=True, input_at_least="size",
    from_kornia=Inverse("RandomCrop", _k_random_crop),
    from_torchvision=Inverse("RandomCrop", _tv_random_crop),
    targets=TargetRule(geometry=targets.window, size="fixed"),
    # Windows are placed at random: each backend is checked against its own reported window.
    parity=Parity(border=0, mae=1e-6, params={"size": [200, 250]}, reference=_reference_window),
    doc="Cut a `size` window at a random position, every position equally likely (the image must be at least "
        "that large); the window is reported as crop_box [x0, y0, x1, y1) in pixels.",
    params=(Size("size", "output size", (224, 224)),),
    kornia=KorniaLowering("RandomCrop", lambda a: {"size": tuple(a["size"]), "cropping_mode": "slice"},
                          record={"src": "crop_box"}),
    dali=DaliLowering(
        needs_size=True, reports=("crop_box",),
        draws=lambda a: {"_u": uniform(0.0, 1.0), "_v": uniform(0.0, 1.0)},
        apply=lambda a, c, d: _dali_window(a, c, d, pad=False), decodes_region=True, follows_resize=True,
    ),
    albumentations=AlbumentationsLowering(
        "RandomCrop", lambda a: {"height": a["size"][0], "width": a["size"][1]},
        record={"crop_coords": "crop_box"},
        from_transform=lambda t: _no_pad_from(t) or {"size": [int(t.height), int(t.width)]},
    ),
)

_PAD_PARITY_FILL = 0.2  # 51 / 255: an 8-bit level, which every backend stores exactly


def _tv_pad(t, notes):
    """v2.RandomCrop with padding (margins) or pad_if_needed: pads, then cuts a window at random."""
    margin = _tv_margin(t)
    if not t.pad_if_needed and not margin:
        return None
    if t.padding_mode not in _PAD_MODES:
        raise ValueError(f"padding_mode={t.padding_mode!r}: Pad takes {', '.join(_PAD_MODES)}")
    if not t.pad_if_needed:
        notes.append("v2.RandomCrop(padding=N) without pad_if_needed stops on an image smaller than the size after "
                     "the padding; Pad pads such an image up to the size")
    fill = t.fill if isinstance(t.fill, (list, tuple)) else [t.fill]
    if isinstance(t.fill, dict) or len(set(fill)) != 1:
        raise ValueError(f"fill={t.fill!r}: Pad fills all channels with one value")
    return {"size": tv.size(t.size), "fill": _fill_level(fill[0]), "padding": margin,
            "padding_mode": str(t.padding_mode)}


def _padded_window_record(raw) -> dict:
    """WbPad's padding [left, right, top, bottom] and window [x0, y0, x1, y1) in the padded image."""
    return {"padding": [float(v) for v in raw["padding"]], "crop_box": [float(v) for v in raw["crop_box"]]}


def _fill_level(value) -> float:
    """torchvision's fill as the op's: a uint8 level above 1 read as a level (fill=128 on uint8 images)."""
    value = float(value)
    return round(value / 255.0, 6) if value > 1.0 else value


def _wb_padded_crop(built, notes):
    """The export's WbPaddedCrop (Pad with a margin), from its arguments."""
    return {"size": [float(v) for v in built["size"]], "fill": float(built["fill"]), "padding": int(built["padding"]),
            "padding_mode": str(built["padding_mode"])}


def _k_pad(m, notes):
    """K.RandomCrop(pad_if_needed=True): pads to at least the size at a random place, then crops."""
    _k_no_margin(m)
    if not kr.flag(m, "pad_if_needed"):
        return None
    if kr.flag(m, "padding_mode") != "constant":
        raise ValueError(f"padding_mode={kr.flag(m, 'padding_mode')!r}: Pad (RandomCrop with pad_if_needed) fills with "
                         "a constant (padding_mode='constant')")
    fill = kr.as_list(kr.plain(kr.flag(m, "fill")))
    if len(set(fill)) != 1:
        raise ValueError(f"fill={fill} fills each channel with its own value; Pad fills all channels with one value")
    return {"size": kr.size(kr.flag(m, "size")), "fill": float(fill[0]), "padding": 0, "padding_mode": "constant"}


PAD = OpSpec(
    name="Pad", family="geometric", always_applies=True, fixes_size=True,
    from_kornia=Inverse("RandomCrop", _k_pad),
    from_torchvision=Inverse("RandomCrop", _tv_pad),
    targets=TargetRule(geometry=targets.padded_window, size="fixed"),
    # Photos of several sizes: some sides are padded, some cropped; offsets are drawn at random.
    parity=Parity(border=0, mae=1e-6, params={"size": [480, 560], "fill": _PAD_PARITY_FILL},
                  reference=_reference_pad(_PAD_PARITY_FILL)),
    doc="Pad to `size` with `fill`, the image at a random offset (torchvision's RandomCrop with padding and "
        "pad_if_needed): `padding` pixels are added on every side, then a side still short by d pixels is padded "
        "by d on both ends, and a `size` window is cut at random; reported as padding [left, right, top, bottom] "
        "and crop_box in the padded image. CIFAR's RandomCrop(32, padding=4) is size 32, padding 4.",
    params=(
        Size("size", "output size", (256, 256)),
        Number("fill", "fill value (0 = black, 1 = white)", 0.0, lo=0.0, hi=1.0),
        Number("padding", "margin added on every side before the window is cut, in pixels", 0, lo=0, hi=4096,
               integer=True, sample_hi=16, slider=(0, 64)),
        Choice("padding_mode", "what fills the padding: `fill` (constant), or the image's edge pixels, its mirror "
               "about them (reflect) or including them (symmetric), as torchvision's", "constant", options=_PAD_MODES),
    ),
    kornia=KorniaLowering(
        "RandomCrop",
        lambda a: {"size": tuple(a["size"]), "pad_if_needed": True, "fill": a["fill"],
                   "padding_mode": a["padding_mode"], "cropping_mode": "slice",
                   **({"padding": a["padding"]} if a["padding"] else {})},
        record={"src": "crop_box", "padding_size": "padding"},
        # Kornia's RandomCrop pads a short side by max(shortfall, margin), torchvision by the margin
        # and then the shortfall left: WbPaddedCrop pads as torchvision does.
        local_variant="WbPaddedCrop", local_when=lambda a: a["padding"] > 0 or a["padding_mode"] != "constant",
        from_module=_wb_padded_crop,
    ),
    dali=DaliLowering(
        needs_size=True, reports=("padding", "crop_box"),
        draws=lambda a: {"_u": uniform(0.0, 1.0), "_v": uniform(0.0, 1.0)},
        apply=lambda a, c, d: _dali_window(a, c, d, pad=True),
        note="a fill between two 8-bit levels becomes the nearest level (Kornia keeps it exact)",
    ),
    albumentations=AlbumentationsLowering(
        "WbPad", lambda a: {"height": a["size"][0], "width": a["size"][1], "padding": a["padding"],
                            "fill": a["fill"] * 255.0, "padding_mode": a["padding_mode"]},
        record=_padded_window_record,
        note="the export writes WbPad, the workbench's own transform (A.RandomCrop with pad_if_needed reports no "
             "offset); fills with fill * 255 (the uint8 scale)",
    ),
)

def _k_translate(m, notes):
    g = kr.gen(m)
    kr.zeros_padding(m, "Translate")
    kr.align(m, "Translate", notes)
    tx = [0.0, 0.0] if g.translate_x is None else kr.bound(g.translate_x, 0.0, -math.inf)
    ty = [0.0, 0.0] if g.translate_y is None else kr.bound(g.translate_y, 0.0, -math.inf)
    return {"translate_x": tx, "translate_y": ty, "interpolation": kr.interpolation(m, "Translate")}


TRANSLATE = OpSpec(
    name="Translate", family="geometric", targets=TargetRule(geometry=targets.shift),
    from_kornia=Inverse("RandomTranslate", _k_translate),
    # Whole-pixel shifts on the 96x128 images (16 and -6 pixels): Albumentations shifts by whole pixels.
    parity=Parity(same_size=True, mae=1e-5, psnr=100.0,
                  params={"translate_x": [0.125, 0.125], "translate_y": [-0.0625, -0.0625]}),
    doc="Shift by a fraction of the width (right for positive) and of the height (down for positive) drawn "
        "from translate_x and translate_y; uncovered pixels filled with 0; reported as dx, dy in pixels.",
    params=(
        Range("translate_x", "horizontal shift range as a fraction of the width", (-0.1, 0.1), lo=-1.0, hi=1.0),
        Range("translate_y", "vertical shift range as a fraction of the height", (-0.1, 0.1), lo=-1.0, hi=1.0),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "RandomTranslate",
        lambda a: {"translate_x": tuple(a["translate_x"]), "translate_y": tuple(a["translate_y"]),
                   "resample": _resample(a), "align_corners": False, "padding_mode": "zeros"},
        record={"translate_x": "dx", "translate_y": "dy"},
    ),
    dali=DaliLowering(
        needs_size=True, reports=("dx", "dy"),
        draws=lambda a: {"_fx": uniform(*a["translate_x"]), "_fy": uniform(*a["translate_y"])},
        apply=_dali_translate,
    ),
    albumentations=AlbumentationsLowering(
        "Affine",
        lambda a: {"translate_percent": _axes(a["translate_x"], a["translate_y"]),
                   "interpolation": _CV_INTERP[a["interpolation"]], **_ZERO_BORDER},
        record=_translate_record, from_transform=_translate_from,
        note="shifts by whole pixels: Albumentations truncates fraction * size towards 0",
    ),
)

def _k_shear(m, notes):
    kr.zeros_padding(m, "Shear")
    kr.align(m, "Shear", notes)
    shear = kr.plain(kr.gen(m).shear)
    if not isinstance(shear, list):
        shear = [-shear, shear, 0.0, 0.0]
    elif len(shear) == 2:
        shear = [*shear, 0.0, 0.0]
    if len(shear) != 4:
        raise ValueError(f"shear={shear} must be a number, (x_min, x_max) or (x_min, x_max, y_min, y_max)")
    return {"shear_x": shear[:2], "shear_y": shear[2:], "interpolation": kr.interpolation(m, "Shear")}


SHEAR = OpSpec(
    name="Shear", family="geometric", targets=TargetRule(geometry=targets.shear),
    from_kornia=Inverse("RandomShear", _k_shear),
    # x only: Albumentations shears both axes at once (see its note); tests/test_ops_geometric.py
    # checks Kornia against DALI with both.
    # Measured: 0.21/255 mean, 59.8 dB for both pairs.
    parity=Parity(mae=0.3 / 255, psnr=56.0, params={"shear_x": [12.0, 12.0], "shear_y": [0.0, 0.0]}),
    doc="Shear about the centre by angles drawn from shear_x (rows below the centre move left for positive "
        "angles) and then shear_y (columns right of the centre move up), as Kornia's RandomShear; corners "
        "filled with 0.",
    params=(
        Range("shear_x", "horizontal shear angle range in degrees", (-10.0, 10.0), lo=-80.0, hi=80.0,
              slider=(-45.0, 45.0)),
        Range("shear_y", "vertical shear angle range in degrees", (0.0, 0.0), lo=-80.0, hi=80.0,
              slider=(-45.0, 45.0)),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "RandomShear",
        lambda a: {"shear": (*a["shear_x"], *a["shear_y"]), "resample": _resample(a), "align_corners": False,
                   "padding_mode": "zeros"},
        record={"shear_x": "shear_x", "shear_y": "shear_y"},
    ),
    dali=DaliLowering(
        needs_size=True,
        draws=lambda a: {"shear_x": uniform(*a["shear_x"]), "shear_y": uniform(*a["shear_y"])},
        apply=_dali_shear,
    ),
    albumentations=AlbumentationsLowering(
        "Affine",
        lambda a: {"shear": _axes(a["shear_x"], a["shear_y"]), "interpolation": _CV_INTERP[a["interpolation"]],
                   **_ZERO_BORDER},
        record=_shear_record, from_transform=_shear_from,
        note="shears both axes at once ([[1, -tan x], [-tan y, 1]]) where Kornia and DALI shear x, then y "
             "(1 + tan x tan y on the diagonal): with both angles non-zero the images differ",
    ),
)


def _tv_perspective(t, notes):
    tv.zero_fill(t, "Perspective")
    return {"distortion": float(t.distortion_scale), "interpolation": tv.interpolation(t, "Perspective")}


def _k_perspective(m, notes):
    g = kr.gen(m)
    if g.sampling_method != "basic":
        raise ValueError(f"sampling_method={g.sampling_method!r}: Perspective moves the corners as Kornia's 'basic'")
    kr.align(m, "Perspective", notes)
    return {"distortion": float(kr.plain(g.distortion_scale)),
            "interpolation": kr.interpolation(m, "Perspective")}


PERSPECTIVE = OpSpec(
    name="Perspective", family="geometric", targets=TargetRule(geometry=targets.corner_perspective), default_p=0.5,
    from_kornia=Inverse("RandomPerspective", _k_perspective),
    from_torchvision=Inverse("RandomPerspective", _tv_perspective),
    # Corners move at random: each backend is checked against OpenCV at its own reported corners.
    # Measured against OpenCV: Kornia 0.0002/255 mean, DALI 0.14/255 and 61.6 dB.
    parity=Parity(mae=0.25 / 255, psnr=57.0, params={"distortion": 0.5}, reference=_reference_perspective),
    doc="Move each corner inwards by a random amount up to `distortion` times half the width and height and "
        "warp the image to match (Kornia's RandomPerspective); uncovered pixels filled with 0; reported as "
        "start_points (the corners) and end_points, 4 x [x, y] with pixel centres at integers.",
    params=(
        Number("distortion", "largest corner shift as a fraction of half the image size", 0.5, lo=0.0, hi=1.0),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "RandomPerspective",
        lambda a: {"distortion_scale": a["distortion"], "resample": _resample(a), "align_corners": False,
                   "sampling_method": "basic"},
        record={"start_points": "start_points", "end_points": "end_points"},
    ),
    dali=DaliLowering(
        needs_size=True, reports=("start_points", "end_points"),
        draws=lambda a: {"_r": RandomOp("fn.random.uniform", {"range": (0.0, 1.0), "shape": (4, 2)})},
        apply=_dali_perspective,
        note="the corner shifts come from DALI's generator, Kornia's from its own: draws differ, the same "
             "corners warp alike",
    ),
    albumentations=AlbumentationsLowering(
        "WbPerspective", lambda a: {"distortion": a["distortion"], "interpolation": _CV_INTERP[a["interpolation"]]},
        record=_corners_record,
        note="the export writes WbPerspective, the workbench's own transform: A.Perspective zooms into a random "
             "inner quadrilateral of corners pushed outwards (PerspectiveZoom is that op)",
    ),
)

# ----- size-dependent pads and resizes (A.PadIfNeeded, A.LongestMaxSize, A.SmallestMaxSize) -------
_POSITIONS = ("center", "top_left", "top_right", "bottom_left", "bottom_right")


def _fill_from(t) -> float:
    """An Albumentations `fill` (0-255 on uint8 images) as a value in [0, 1], one for every channel."""
    if isinstance(t.fill, str):
        raise ValueError(f"fill={t.fill!r}: the op fills a constant value")
    values = {float(v) for v in np.atleast_1d(np.asarray(t.fill, dtype=np.float64))}
    if len(values) != 1:
        raise ValueError(f"fill={t.fill!r} differs per channel; the op fills one value in every channel")
    value = values.pop()
    if not 0.0 <= value <= 255.0:
        raise ValueError(f"fill={t.fill!r} is outside 0-255")
    return round(value / 255.0, 6)


def _pad_placement_from(t) -> dict:
    """A.PadIfNeeded's size and placement, refusing what the pad ops cannot express."""
    if t.pad_height_divisor is not None or t.pad_width_divisor is not None:
        raise ValueError("pad_height_divisor/pad_width_divisor pad to a multiple of a number; the op pads to "
                         "min_height x min_width")
    if t.min_height is None or t.min_width is None:
        raise ValueError("min_height and min_width must both be given (the op pads to at least that size)")
    if t.position not in _POSITIONS:
        raise ValueError(f"position={t.position!r}: the op places the image at one of {', '.join(_POSITIONS)} "
                         "(a random place: see Pad)")
    return {"min_size": [int(t.min_height), int(t.min_width)], "position": str(t.position)}


def _pad_if_needed_from(t):
    if int(t.border_mode) != 0:
        return None  # a border made from the image: PadBorderIfNeeded
    return {**_pad_placement_from(t), "fill": _fill_from(t)}


def _dali_padding(a, c, function: str, outputs: tuple[str, str]) -> str:
    """The statement computing the per-sample padding of kornia_modules.pad_to_at_least from the
    image's size by the runtime function `function`: the reported padding [left, right, top,
    bottom] and the two `outputs` that place the image (see padding_with_fill, padding_from_image)."""
    v = c.var
    min_size = literal(tuple(float(s) for s in a["min_size"]))
    position = a["position"]
    # The share of the padding before the image (top, left): half at the centre, else none or all.
    placement = (0.5, 0.5) if position == "center" else (float(position.startswith("bottom")),
                                                          float(position.endswith("right")))
    return (f"{v('padding')}, {v(outputs[0])}, {v(outputs[1])} = {function}({min_size}, {literal(placement)}, "
            f"{c.height}, {c.width})")


def _dali_pad_if_needed(a, c, d):
    """The padding as in kornia_modules.pad_to_at_least, then the image shifted by it onto the
    padded canvas with the fill (a whole-pixel shift, nearest neighbour: exact; DALI truncates a
    fill between two 8-bit levels, so the nearest level is used while values are 0-255)."""
    v = c.var
    fill = float(round(a["fill"] * c.scale)) if c.scale == 255.0 else float(a["fill"]) * c.scale
    return [_dali_padding(a, c, "padding_with_fill", ("shift", "canvas")),
            f"{c.x} = shift_onto_canvas({c.x}, {v('shift')}, {v('canvas')}, {literal(fill)})"]


def _pad_record(raw) -> dict:
    return {"padding": [float(raw["pad_left"]), float(raw["pad_right"]), float(raw["pad_top"]),
                        float(raw["pad_bottom"])]}


def _reference_pad_if_needed(fill):
    """The image padded by the reported [left, right, top, bottom] with `fill`."""
    def reference(image, row):
        left, right, top, bottom = (int(round(p)) for p in row["padding"])
        return np.pad(np.asarray(image, dtype=np.float64) / 255.0, ((top, bottom), (left, right), (0, 0)),
                      constant_values=fill)
    return reference


def _pad_size(a, height, width):
    left, right, top, bottom = pad_to_at_least(height, width, *a["min_size"], a["position"])
    return height + top + bottom, width + left + right


PAD_IF_NEEDED = SizedOpSpec(
    name="PadIfNeeded", family="geometric", always_applies=True, size_rule=_pad_size,
    targets=TargetRule(geometry=targets.padding, size="padding"),
    # Photos of several sizes: some are padded on one axis, some on both, some not at all.
    # Measured: identical on all three backends (0/255).
    parity=Parity(border=0, mae=1e-6, params={"min_size": [480, 560], "position": "center", "fill": _PAD_PARITY_FILL},
                  reference=_reference_pad_if_needed(_PAD_PARITY_FILL)),
    doc="Pad with `fill` up to at least `min_size` [height, width] (A.PadIfNeeded): a side shorter by d pixels "
        "gets d pixels of fill, split evenly (the odd pixel after the image) when centred, all on the far side "
        "when the image sits at a corner; longer sides are kept. The output size depends on the input's. "
        "Reported as padding [left, right, top, bottom].",
    params=(
        Size("min_size", "pad up to at least this size", (256, 256)),
        Choice("position", "where the image sits in the padded canvas", "center", options=_POSITIONS),
        Number("fill", "fill value (0 = black, 1 = white)", 0.0, lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering(
        "PadToAtLeast", lambda a: {"min_size": tuple(a["min_size"]), "position": a["position"], "fill": a["fill"]},
        record={"padding": "padding"}, local=True,
        from_module=kr.arguments("min_size", "position", "fill"),
    ),
    dali=DaliLowering(needs_size=True, reports=("padding",), apply=_dali_pad_if_needed,
                      note="a fill between two 8-bit levels becomes the nearest level (Kornia keeps it exact)"),
    albumentations=AlbumentationsLowering(
        "PadIfNeeded",
        lambda a: {"min_height": a["min_size"][0], "min_width": a["min_size"][1], "position": a["position"],
                   "border_mode": 0, "fill": a["fill"] * 255.0},
        record=_pad_record, from_transform=_pad_if_needed_from,
        note="fills with fill * 255 (the uint8 scale): after a Normalize the fill is not rescaled",
    ),
)


def _max_size_from(longest: bool):
    def from_transform(t):
        name = "LongestMaxSize" if longest else "SmallestMaxSize"
        if t.max_size_hw is not None:
            raise ValueError(f"max_size_hw={t.max_size_hw}: the op scales to one max_size (A.{name}(max_size=N))")
        if not isinstance(t.max_size, (int, np.integer)):
            raise ValueError(f"max_size={t.max_size!r} picks a size per image from a list; the op takes one size")
        return {"max_size": int(t.max_size), "interpolation": _interp_from(t, resize=True),
                "antialias": t.area_for_downscale is not None,
                # A's own rounds to the nearest; the export's WbSmallestMaxSize may round down.
                "rounding": getattr(t, "rounding", "nearest")}
    return from_transform


def _dali_max_size(a, c, d, longest: bool):
    """A.LongestMaxSize's sizes in float64, as Python computes them: scale = max_size / side,
    round(side * scale) half to even, at least 1; then a resize to exactly that size."""
    v = c.var
    return [f"{v('scale')}, {v('size')} = side_scale({literal(float(a['max_size']))}, {literal(longest)}, {c.height}, "
            f"{c.width}, {literal(a['rounding'] == 'down')})",
            f"{c.x} = resize_exactly({c.x}, {v('size')}, {_interp(a)}, {literal(_antialias(a))})"]


def _tv_side_resize(longest: bool):
    """v2.Resize(N) as SmallestMaxSize (the short side becomes N, the other rounded down), and
    v2.Resize(None, max_size=N) as LongestMaxSize; a bound on the long side of Resize(N, max_size=M)
    is refused."""
    def read(t, notes):
        size = t.size
        if size is not None and len(size) != 1:
            return None  # (height, width): Resize
        if longest != (size is None):
            return None  # the other side op's
        if size is not None and t.max_size is not None:
            raise ValueError(f"size={size[0]}, max_size={t.max_size}: SmallestMaxSize has no bound on the long side "
                             "(the shorter side becomes size; give a size no image's long side exceeds the bound "
                             "with, or a fixed (height, width))")
        if not t.antialias:
            notes.append("v2.Resize: antialias=False; imported with antialias off")
        return {"max_size": int(t.max_size if size is None else size[0]),
                "interpolation": tv.interpolation(t, "LongestMaxSize" if longest else "SmallestMaxSize", resize=True),
                "antialias": bool(t.antialias),
                "rounding": "down"}
    return read


def _max_size_spec(longest: bool) -> SizedOpSpec:
    name, side = ("LongestMaxSize", "longest") if longest else ("SmallestMaxSize", "shortest")
    return SizedOpSpec(
        name=name, family="geometric", targets=TargetRule(geometry=targets.resize, size="scale"), always_applies=True,
        from_torchvision=Inverse("Resize", _tv_side_resize(longest)),
        size_rule=lambda a, h, w: max_size_scale(h, w, a["max_size"], longest, a["rounding"])[1:],
        # Photos of several sizes and aspect ratios, shrunk with the triangle filter (as Resize). Measured
        # (both ops alike, max_size 97 to 331): DALI 0.25/255, 58.9 dB at worst; Albumentations 0.26-0.28/255,
        # 57.3 dB; without antialias 0.24 and 0.26/255.
        parity=Parity(mae=0.35 / 255, psnr=56.0, params={"max_size": 331 if longest else 211, "antialias": True}),
        doc=f"Resize keeping the aspect ratio so that the {side} side becomes `max_size` (A.{name}); the other "
            "side is round(side * scale), half to even (or rounded down, as torchvision's Resize, with rounding "
            "'down'), and `antialias` filters as Resize's does. The output size depends on the input's. Reported "
            "as scale.",
        params=(
            Number("max_size", f"{side} side after resizing, in pixels", 256, lo=1, hi=8192, integer=True,
                   sample_hi=96, slider=(32, 1024)),
            _RESIZE_INTERP,
            Flag("antialias", "low-pass filter before shrinking, against aliasing (A's area_for_downscale; the "
                 "triangle filter, as Resize)", False),
            Choice("rounding", "the other side: nearest (Albumentations) or down (torchvision's Resize)", "nearest",
                   options=("nearest", "down")),
        ),
        kornia=KorniaLowering(
            "ResizeSideTo", lambda a: {"max_size": a["max_size"], "longest": longest,
                                       "resample": a["interpolation"], "antialias": a["antialias"],
                                       "rounding": a["rounding"]},
            record={"scale": "scale"}, local=True,
            from_module=kr.arguments("max_size", "antialias", "rounding", interpolation="resample",
                                     when={"longest": longest}),
        ),
        dali=DaliLowering(needs_size=True, reports=("scale",), apply=lambda a, c, d: _dali_max_size(a, c, d, longest)),
        albumentations=AlbumentationsLowering(
            name, lambda a: {"max_size": a["max_size"], "interpolation": _CV_INTERP[a["interpolation"]],
                             **({"area_for_downscale": "image"} if a["antialias"] else {}),
                             **({"rounding": "down"} if a["rounding"] == "down" else {})},
            record={"scale": "scale"}, from_transform=_max_size_from(longest),
            note=_ALB_RESIZE_NOTE.format(name=name),
        ),
    )


LONGEST_MAX_SIZE = _max_size_spec(longest=True)
SMALLEST_MAX_SIZE = _max_size_spec(longest=False)



# ----- quarter turns and the transpose (A.RandomRotate90, A.Transpose): square images only -------
def _dali_quarter_turns(a, c, d):
    """np.rot90 by the drawn k as one exact whole-pixel gather: the output pixel (x, y) (DALI's
    pixel-edge coordinates, side N) reads the input at T^s F(x, y), with F the flips h (x -> N - x)
    and v (y -> N - y) and T the transpose where s = 1. k = 1: s = 1, v = 1; k = 2: h = v = 1;
    k = 3: s = 1, h = 1 (so s = k mod 2, h = floor(k / 2), v = s xor h). Entries 0, +-1 and N map
    pixel centres onto pixel centres, so nearest-neighbour sampling copies pixels exactly."""
    return [f"{c.x} = quarter_turn_images({c.x}, {d['k']}, {c.width})"]


def _dali_d4(a, c, d):
    """A.D4's element e (its index in A's order) as k quarter turns then a transpose where t = 1:
    t = floor(e / 4), k = e, or 7 - e where t = 1 (see kornia_modules.wb_d4_parts); the gather of
    `_dali_quarter_turns` with the matrix's first two columns swapped where t = 1 (the output pixel
    (x, y) reads what the turned image has at (y, x)): still exact."""
    return [f"{c.x} = square_symmetry_images({c.x}, {d['element']}, {c.width})"]


def _reference_d4(image, row):
    """The image turned by np.rot90 and transposed as the reported element says (A.D4's order)."""
    element = int(round(float(row["element"])))
    turns, transposed = (element, 0) if element < 4 else (7 - element, 1)
    out = np.rot90(np.asarray(image, dtype=np.float64) / 255.0, turns)
    return out.transpose(1, 0, 2) if transposed else out


def _reference_rotate90(image, row):
    """The image turned by the reported k quarter turns, counter-clockwise (np.rot90)."""
    return np.rot90(np.asarray(image, dtype=np.float64) / 255.0, int(round(float(row["k"]))))


def _no_settings_from(name):
    def from_transform(t):
        return {}
    from_transform.__doc__ = f"A.{name} takes only p: the op's parameters are the defaults."
    return from_transform


RANDOM_ROTATE90 = OpSpec(
    name="RandomRotate90", family="geometric", targets=TargetRule(geometry=targets.quarter_turns), square_input=True,
    # k is drawn per sample: each backend is checked against np.rot90 at its own reported k.
    # Measured: exact on all three backends (0/255).
    parity=Parity(border=0, mae=1e-6, reference=_reference_rotate90),
    doc="Turn each image by k quarter turns counter-clockwise (np.rot90, A.RandomRotate90), k drawn uniformly "
        "from 0, 1, 2, 3 per image (so k = 0 leaves a quarter of the images as they are even with p = 1). "
        "The images must be square at this step (odd turns swap height and width). Reported as k.",
    kornia=KorniaLowering("WbRandomRotate90", lambda a: {}, record={"k": "k"}, local=True,
                          from_module=kr.arguments()),
    dali=DaliLowering(
        needs_size=True,
        draws=lambda a: {"k": RandomOp("fn.random.uniform", {"values": [0.0, 1.0, 2.0, 3.0]})},
        apply=_dali_quarter_turns,
    ),
    albumentations=AlbumentationsLowering("RandomRotate90", lambda a: {}, record={"factor": "k"},
                                          from_transform=_no_settings_from("RandomRotate90")),
)

TRANSPOSE = OpSpec(
    name="Transpose", family="geometric", default_p=0.5, square_input=True,
    targets=TargetRule(geometry=targets.transposition),
    # Measured: identical on all three backends (0/255).
    parity=Parity(border=0, mae=1e-6),
    doc="Swap rows and columns: mirror the image over its main diagonal (A.Transpose). The images must be "
        "square at this step (height and width swap for the images it applies to).",
    kornia=KorniaLowering("WbTranspose", lambda a: {}, local=True,
                          from_module=kr.arguments()),
    dali=DaliLowering(apply=lambda a, c, d: [f"{c.x} = swap_rows_and_columns({c.x})"]),
    albumentations=AlbumentationsLowering("Transpose", lambda a: {}, from_transform=_no_settings_from("Transpose")),
)


D4 = OpSpec(
    name="D4", family="geometric", targets=TargetRule(geometry=targets.dihedral), square_input=True,
    # The element is drawn per sample: each backend is checked against np.rot90 / transpose at its own
    # reported element. Measured: exact on all three backends (0/255).
    parity=Parity(border=0, mae=1e-6, reference=_reference_d4),
    doc="One of the 8 symmetries of the square per image, drawn uniformly (A.D4, A.SquareSymmetry): the "
        "identity, quarter turns counter-clockwise, and the mirrors over the middle lines and the diagonals "
        "(so p = 1 still leaves an eighth of the images as they are). The images must be square at this step. "
        "Reported as element, its index in A.D4's order: 0 e (identity), 1 r90, 2 r180, 3 r270 (np.rot90 "
        "turns), 4 v (top to bottom), 5 hvt (anti-diagonal), 6 h (left to right), 7 t (main diagonal).",
    kornia=KorniaLowering("WbD4", lambda a: {}, record={"element": "element"}, local=True,
                          from_module=kr.arguments()),
    dali=DaliLowering(
        needs_size=True,
        draws=lambda a: {"element": RandomOp("fn.random.uniform", {"values": [float(e) for e in range(8)]})},
        apply=_dali_d4,
    ),
    albumentations=AlbumentationsLowering("D4", lambda a: {}, record={"group_element": "element"},
                                          from_transform=_no_settings_from("D4"), also_imports=("SquareSymmetry",)),
)


# ----- A.Perspective: zoom into a random inner quadrilateral --------------------------------------
def _dali_perspective_zoom(a, c, d):
    """A.Perspective (keep_size=True) as WbPerspectiveZoom draws it: corner jitter |z * sigma| mod
    0.32 (z standard normal), the corners tl, tr, br, bl inwards from the frame's, max_width /
    max_height the longer opposite sides floored. The warp's output-to-input map is the unit-square
    map Q onto those corners (Heckbert's closed form) after diag(max_w / W^2, max_h / H^2) (the
    frame to the unit square, undoing the stretch), in pixel centres at integers, then moved to
    DALI's pixel-edge coordinates. The reported `matrix` (corners -> frame, as A's) is
    diag(W, H, 1) adj(Q), scaled so that its last entry is 1."""
    v = c.var
    return [f"{v('matrix')}, {v('max_size')}, {v('inverse')} = perspective_zoom_warp({d['_z']}, {d['_sigma']}, "
            f"{c.height}, {c.width})",
            f"{c.x} = warp_perspective_inverse({c.x}, {v('inverse')}, {_interp(a)})"]


def _perspective_zoom_record(raw) -> dict:
    return {"matrix": np.asarray(raw["matrix"], dtype=np.float64).reshape(3, 3).tolist(),
            "max_size": [float(raw["max_height"]), float(raw["max_width"])]}


def _reference_perspective_zoom(image, row):
    """A.Perspective's warp (OpenCV, pixel centres at integers, 0 outside) at the reported corner
    homography and sizes: diag(W / max_width, H / max_height, 1) matrix."""
    import cv2

    h, w = image.shape[:2]
    max_h, max_w = (float(s) for s in row["max_size"])
    matrix = np.diag([w / max_w, h / max_h, 1.0]) @ np.asarray(row["matrix"], dtype=np.float64).reshape(3, 3)
    out = cv2.warpPerspective(np.asarray(image, dtype=np.float32), matrix, (w, h), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return out.astype(np.float64) / 255.0


def _perspective_zoom_from(t):
    _zero_border_from(t)
    if not t.keep_size:
        raise ValueError("keep_size=False returns an image of the quadrilateral's own size; the op keeps the size "
                         "(keep_size=True)")
    if t.fit_output:
        raise ValueError("fit_output=True grows the canvas to hold the whole warped image; the op zooms into the "
                         "inner quadrilateral (fit_output=False)")
    return {"scale": _pair(t.scale), "interpolation": _interp_from(t)}


PERSPECTIVE_ZOOM = OpSpec(
    name="PerspectiveZoom", family="geometric", targets=TargetRule(geometry=targets.zoom_perspective), default_p=0.5,
    # Corners are drawn at random: each backend is checked against OpenCV at its own reported matrix.
    # Measured against OpenCV on the 8 photos (scale 0.08): Kornia 0.0004/255 mean, DALI 0.24/255 and 59.1 dB,
    # Albumentations 0.24/255 and 59.1 dB (DALI and Albumentations round to 8 bits).
    parity=Parity(mae=0.3 / 255, psnr=55.0, params={"scale": [0.08, 0.08]}, reference=_reference_perspective_zoom),
    doc="A.Perspective (keep_size=True): per image, sigma is drawn from `scale`, each corner moves inwards by "
        "|N(0, sigma)| (mod 0.32) of the width and height, and the quadrilateral they span is warped onto the "
        "whole frame, stretched by width / max_width and height / max_height (its longer opposite sides, whole "
        "pixels) as Albumentations does. Reported as matrix (the 3 x 3 homography corners -> frame, row by row, "
        "pixel centres at integers) "
        "and max_size [max_height, max_width].",
    params=(
        Range("scale", "range of sigma, the corner jitter's standard deviation as a fraction of the size",
              (0.05, 0.1), lo=0.0, hi=1.0),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "WbPerspectiveZoom", lambda a: {"scale": tuple(a["scale"]), "resample": a["interpolation"]},
        record={"matrix": "matrix", "max_size": "max_size"}, local=True,
        from_module=kr.arguments("scale", interpolation="resample"),
    ),
    dali=DaliLowering(
        needs_size=True, reports=("matrix", "max_size"),
        draws=lambda a: {"_sigma": uniform(*a["scale"]), "_z": RandomOp("fn.random.normal", {"shape": (4, 2)})},
        apply=_dali_perspective_zoom,
        note="corners come from DALI's generator: draws differ from the other backends', the same corners warp "
             "alike; images under 6 pixels a side differ (A nudges corners closer than 2 pixels apart)",
    ),
    albumentations=AlbumentationsLowering(
        "Perspective",
        lambda a: {"scale": tuple(a["scale"]), "keep_size": True, "fit_output": False,
                   "interpolation": _CV_INTERP[a["interpolation"]], **_ZERO_BORDER},
        record=_perspective_zoom_record, from_transform=_perspective_zoom_from,
    ),
)


# ----- PadIfNeeded with a border made from the image (A.PadIfNeeded's other border modes) ---------
_BORDERS = {"replicate": 1, "reflect": 2, "wrap": 3, "reflect_101": 4}  # OpenCV's BORDER_* flags


def _pad_border_from(t):
    if int(t.border_mode) == 0:
        return None  # a constant fill: PadIfNeeded
    names = {flag: name for name, flag in _BORDERS.items()}
    if int(t.border_mode) not in names:
        raise ValueError(f"border_mode={t.border_mode}: the op pads with one of cv2.BORDER_REFLECT_101, "
                         "BORDER_REFLECT, BORDER_REPLICATE, BORDER_WRAP")
    return {**_pad_placement_from(t), "border_mode": names[int(t.border_mode)]}


def _reference_pad_border(image, row, mode="reflect_101"):
    """The image padded by the reported [left, right, top, bottom] with OpenCV's border."""
    import cv2

    left, right, top, bottom = (int(round(p)) for p in row["padding"])
    out = cv2.copyMakeBorder(np.ascontiguousarray(image), top, bottom, left, right, _BORDERS[mode])
    return out.astype(np.float64) / 255.0


# DALI's slice names for OpenCV's borders: its out-of-bounds policies read outside the image as
# OpenCV's borderInterpolate does, however far outside (several reflections, tiles).
_DALI_BORDERS = {"reflect_101": "reflect_101", "reflect": "reflect_1001", "replicate": "edge", "wrap": "wrap"}


def _dali_pad_border(a, c, d):
    """The padding as PadIfNeeded's, then one slice of the padded window [-top, H + pad_h - top) x
    [-left, W + pad_w - left): fn.slice's out_of_bounds_policy makes the pixels outside the image
    (reflect_101, reflect_1001, edge or wrap), exactly, for a pad of any width (a 1-pixel side
    included)."""
    v = c.var
    return [_dali_padding(a, c, "padding_from_image", ("start", "shape")),
            f"{c.x} = slice_with_border({c.x}, {v('start')}, {v('shape')}, "
            f"{literal(_DALI_BORDERS[a['border_mode']])})"]


PAD_BORDER_IF_NEEDED = SizedOpSpec(
    name="PadBorderIfNeeded", family="geometric", always_applies=True, size_rule=_pad_size,
    targets=TargetRule(geometry=targets.padding, size="padding"),
    # Photos of several sizes, some padded by more than a reflection of their side can give.
    # Measured (each border mode, the 12 photos): identical on Kornia, DALI and Albumentations and to OpenCV's
    # copyMakeBorder (0/255; largest difference 3e-8, Kornia's float division by 255).
    parity=Parity(border=0, mae=1e-6, params={"min_size": [480, 700], "position": "center",
                                              "border_mode": "reflect_101"},
                  reference=_reference_pad_border),
    doc="Pad up to at least `min_size` [height, width] as PadIfNeeded does (same sizes and placement), the "
        "border made from the image itself (A.PadIfNeeded with border_mode cv2.BORDER_REFLECT_101, "
        "BORDER_REFLECT, BORDER_REPLICATE or BORDER_WRAP): reflect_101 mirrors without repeating the edge "
        "pixel, reflect repeats it, replicate repeats the edge, wrap tiles. Reported as padding "
        "[left, right, top, bottom].",
    params=(
        Size("min_size", "pad up to at least this size", (256, 256)),
        Choice("position", "where the image sits in the padded canvas", "center", options=_POSITIONS),
        Choice("border_mode", "how the border is made from the image", "reflect_101", options=tuple(_BORDERS)),
    ),
    kornia=KorniaLowering(
        "WbPadBorderToAtLeast",
        lambda a: {"min_size": tuple(a["min_size"]), "position": a["position"], "border_mode": a["border_mode"]},
        record={"padding": "padding"}, local=True,
        from_module=kr.arguments("min_size", "position", "border_mode"),
    ),
    albumentations=AlbumentationsLowering(
        "PadIfNeeded",
        lambda a: {"min_height": a["min_size"][0], "min_width": a["min_size"][1], "position": a["position"],
                   "border_mode": _BORDERS[a["border_mode"]]},
        record=_pad_record, from_transform=_pad_border_from,
    ),
    dali=DaliLowering(needs_size=True, reports=("padding",), apply=_dali_pad_border),
)

# ----- A.RandomSizedCrop: a window drawn by its height in pixels -------------------------------------
def _sized_crop_from(t):
    if t.area_for_downscale is not None:
        raise ValueError(f"area_for_downscale={t.area_for_downscale!r}: RandomSizedCrop resizes its window without a "
                         "low-pass (OpenCV's own)")
    return {"height": [int(t.min_max_height[0]), int(t.min_max_height[1])], "size": [int(t.size[0]), int(t.size[1])],
            "w2h_ratio": float(t.w2h_ratio), "interpolation": _interp_from(t)}


def _dali_sized_crop(a, c, d):
    """A.RandomSizedCrop's window (sized_window), then a resize of it to `size`, unfiltered."""
    start, end, box = (c.var(n) for n in ("start", "end", "crop_box"))
    return [f"{start}, {end}, {box} = sized_window({d['_drawn_height']}, {d['_u']}, {d['_v']}, "
            f"{literal(float(a['w2h_ratio']))}, {c.height}, {c.width})",
            f"{c.x} = resize_region({c.x}, {literal(tuple(a['size']))}, {start}, {end}, {_interp(a)}, False)"]


def _reference_sized_crop(size):
    """The reported window [x0, y0, x1, y1) resized to `size` by OpenCV (bilinear, in float)."""
    def reference(image, row):
        import cv2

        x0, y0, x1, y1 = (int(round(b)) for b in row["crop_box"])
        window = np.asarray(image, dtype=np.float32)[y0:y1, x0:x1] / 255.0
        return cv2.resize(window, (size[1], size[0]), interpolation=cv2.INTER_LINEAR).astype(np.float64)
    return reference


_SIZED_CROP_PARITY = {"height": [220, 300], "size": [120, 100], "w2h_ratio": 0.8}

RANDOM_SIZED_CROP = OpSpec(
    name="RandomSizedCrop", family="geometric", always_applies=True, fixes_size=True,
    targets=TargetRule(geometry=targets.window, size="fixed"),
    # Windows are drawn per backend: each is checked against OpenCV's resize of its own reported window.
    parity=Parity(mae=0.4 / 255, psnr=55.0, params=_SIZED_CROP_PARITY,
                  reference=_reference_sized_crop(_SIZED_CROP_PARITY["size"])),
    doc="Crop a window whose height is drawn among the whole numbers of `height` and whose width is "
        "int(height x w2h_ratio), both cut to the image, at a uniformly drawn place, and resize it to `size` "
        "(A.RandomSizedCrop; unfiltered, as OpenCV resizes). Reported as crop_box [x0, y0, x1, y1).",
    params=(
        Span("height", "window height range in pixels (whole numbers)", (128, 256), lo=1, hi=8192, integer=True),
        Size("size", "output size", (224, 224)),
        Number("w2h_ratio", "window width / height", 1.0, lo=0.05, hi=20.0, slider=(0.25, 4.0)),
        _INTERP,
    ),
    kornia=KorniaLowering(
        "WbRandomSizedCrop", lambda a: {"height": tuple(a["height"]), "size": tuple(a["size"]),
                                        "w2h_ratio": a["w2h_ratio"], "resample": a["interpolation"]},
        record={"crop_box": "crop_box"}, local=True,
        from_module=kr.arguments("height", "size", "w2h_ratio", interpolation="resample"),
    ),
    dali=DaliLowering(
        needs_size=True, reports=("crop_box",),
        draws=lambda a: {"_drawn_height": uniform(float(a["height"][0]), float(a["height"][1]) + 1.0),
                         "_u": uniform(0.0, 1.0), "_v": uniform(0.0, 1.0)},
        apply=_dali_sized_crop,
        note="the window comes from DALI's generator, Kornia's from its own: draws differ, the same window "
             "resamples alike",
    ),
    albumentations=AlbumentationsLowering(
        "RandomSizedCrop",
        lambda a: {"min_max_height": tuple(a["height"]), "size": tuple(a["size"]), "w2h_ratio": a["w2h_ratio"],
                   "interpolation": _CV_INTERP[a["interpolation"]]},
        record={"crop_coords": "crop_box"}, from_transform=_sized_crop_from,
    ),
)

# ----- sizes drawn per sample (torchvision's RandomShortestSize, RandomResize, ScaleJitter) ----------
@dataclass(frozen=True)
class DrawnSizeOpSpec(OpSpec):
    """An op that draws each sample's output size (`rule` of runtime/targets.py's drawn_sides);
    `output_size` is the largest it can draw, `size_bounds` the smallest and the largest."""

    rule: str = "shortest"
    sizes_per_sample: bool = True

    def _drawn(self, params: Mapping[str, Any], value: float, height: int, width: int) -> tuple[int, int]:
        return targets.drawn_sides(self.rule, value, height, width, *_drawn_settings(self.rule, params))

    def size_bounds(self, params: Mapping[str, Any], height: int, width: int) -> tuple[tuple[int, int], ...]:
        values = params["sizes"] if self.rule == "shortest" else params[_DRAWN_SPAN[self.rule]]
        return self._drawn(params, min(values), height, width), self._drawn(params, max(values), height, width)

    def output_size(self, params: Mapping[str, Any], height: int, width: int) -> tuple[int, int]:
        return self.size_bounds(params, height, width)[1]


# Each rule's parameter drawn uniformly (RandomShortestSize draws among its `sizes`).
_DRAWN_SPAN = {"resize": "size", "jitter": "scale"}


def _drawn_settings(rule: str, a) -> tuple[int, tuple[int, int]]:
    """(bound, target) of drawn_sides for the op's params."""
    return (int(a["max_size"]) if rule == "shortest" else 0,
            tuple(int(v) for v in a["target_size"]) if rule == "jitter" else (0, 0))


def _drawn_module_args(rule: str):
    """WbRandomSize's arguments (Kornia's and Albumentations' alike, but the filter's name)."""
    def args(a, interpolation):
        bound, target = _drawn_settings(rule, a)
        span = tuple(float(v) for v in a[_DRAWN_SPAN[rule]]) if rule in _DRAWN_SPAN else (0.0, 0.0)
        return {"rule": rule, "sizes": tuple(a.get("sizes", ())), "span": span, "bound": bound, "target": target,
                **interpolation, "antialias": _antialias(a)}
    return args


def _dali_drawn_size(rule: str):
    def apply(a, c, d):
        bound, target = _drawn_settings(rule, a)
        size = c.var("out_size")
        return [f"{size} = drawn_size({literal(rule)}, {d['_value']}, {c.height}, {c.width}, {literal(bound)}, "
                f"{literal(target)})",
                f"{c.x} = resize_exactly({c.x}, {size}, {_interp(a)}, {literal(_antialias(a))})"]
    return apply


def _dali_drawn_value(rule: str):
    def draws(a):
        if rule == "shortest":
            return {"_value": RandomOp("fn.random.uniform", {"values": [float(v) for v in a["sizes"]]})}
        lo, hi = (float(v) for v in a[_DRAWN_SPAN[rule]])
        # RandomResize's whole numbers lo..hi: uniform in [lo, hi + 1), floored (drawn_size).
        return {"_value": uniform(lo, hi + 1.0 if rule == "resize" else hi)}
    return draws


def _reference_drawn_size(image, row):
    """The image resized to the reported out_size by PIL's BILINEAR (the triangle filter, torch's
    antialias=True, stretched when shrinking)."""
    from PIL import Image

    height, width = (int(round(float(v))) for v in row["out_size"])
    return np.asarray(Image.fromarray(np.asarray(image)).resize((width, height), Image.BILINEAR),
                      dtype=np.float64) / 255.0


def _drawn_from_module(rule: str):
    """The inverse of _drawn_module_args for Chain.from_kornia: a WbRandomSize of this rule as the op."""
    def read(built, notes):
        if built.get("rule") != rule:
            return None
        a = {"interpolation": str(built["resample"]), "antialias": bool(built["antialias"])}
        if rule == "shortest":
            a.update(sizes=[int(v) for v in built["sizes"]], max_size=int(built["bound"]))
        elif rule == "resize":
            a.update(size=[int(v) for v in built["span"]])
        else:
            a.update(target_size=[int(v) for v in built["target"]], scale=[float(v) for v in built["span"]])
        return a
    return read


def _tv_drawn_size(rule: str):
    """torchvision's transform of `rule` as the op; its interpolation and antialias as Resize's."""
    def read(t, notes):
        name = {"shortest": "RandomShortestSize", "resize": "RandomResize", "jitter": "ScaleJitter"}[rule]
        a = {"interpolation": tv.interpolation(t, name, resize=True), "antialias": bool(t.antialias)}
        if rule == "shortest":
            a.update(sizes=[int(v) for v in t.min_size], max_size=int(t.max_size or 0))
        elif rule == "resize":
            if int(t.max_size) - 1 < int(t.min_size):
                raise ValueError(f"min_size={t.min_size}, max_size={t.max_size}: torchvision draws from "
                                 "[min_size, max_size), which is empty")
            a.update(size=[int(t.min_size), int(t.max_size) - 1])  # torch.randint's high is excluded
        else:
            # torchvision reads target_size[1] against the height and target_size[0] against the width.
            a.update(target_size=[int(t.target_size[1]), int(t.target_size[0])],
                     scale=[float(t.scale_range[0]), float(t.scale_range[1])])
        return a
    return read


def _drawn_size_spec(rule: str, name: str, doc: str, params: tuple, parity_params: dict) -> DrawnSizeOpSpec:
    args = _drawn_module_args(rule)
    return DrawnSizeOpSpec(
        name=name, family="geometric", always_applies=True, rule=rule,
        targets=TargetRule(geometry=targets.resize, size="drawn"),
        from_torchvision=Inverse(name, _tv_drawn_size(rule)),
        # Each backend draws its own sizes: each is checked against PIL's resize to its reported out_size.
        parity=Parity(mae=0.5 / 255, psnr=52.0, params=parity_params, reference=_reference_drawn_size),
        doc=doc + " Each sample of a batch leaves at its own size: the chain runs image by image from this "
                  "step until one fixes the size. `antialias` filters when shrinking, as Resize's. Reported as "
                  "out_size [height, width].",
        params=params + (_RESIZE_INTERP, Flag("antialias", "low-pass filter before shrinking, against aliasing "
                                              "(torchvision's default)", True)),
        kornia=KorniaLowering("WbRandomSize", lambda a: args(a, {"resample": a["interpolation"]}),
                              record={"out_size": "out_size"}, local=True, from_module=_drawn_from_module(rule)),
        dali=DaliLowering(needs_size=True, reports=("out_size",), draws=_dali_drawn_value(rule),
                          apply=_dali_drawn_size(rule),
                          note="sizes come from DALI's generator, Kornia's from its own: draws differ, the same "
                               "size resamples alike"),
        albumentations=AlbumentationsLowering(
            "WbRandomSize", lambda a: args(a, {"interpolation": _CV_INTERP[a["interpolation"]]}),
            record={"out_size": "out_size"}),
    )


RANDOM_SHORTEST_SIZE = _drawn_size_spec(
    "shortest", "RandomShortestSize",
    "Resize keeping the aspect ratio so that the shorter side becomes one of `sizes`, drawn per sample, and "
    "the longer at most `max_size` (0: no bound), as torchvision's RandomShortestSize (its detection "
    "references' multi-scale training): r = size / shorter side, min(r, max_size / longer side), each side "
    "int(side x r).",
    (Sides("sizes", "the shorter side after resizing, one drawn per sample", (480, 512, 544, 576, 608)),
     Number("max_size", "bound on the longer side (0: none)", 0, lo=0, hi=8192, integer=True, sample_hi=96,
            slider=(0, 2048))),
    {"sizes": [90, 150, 211], "max_size": 0})

RANDOM_RESIZE = _drawn_size_spec(
    "resize", "RandomResize",
    "Resize keeping the aspect ratio so that the shorter side becomes a whole number drawn uniformly in `size` "
    "[lo, hi], the other int(size x side / shorter side), as torchvision's RandomResize (its segmentation "
    "references; torchvision's max_size excluded, this hi included).",
    (Span("size", "the shorter side after resizing, drawn per sample", (256, 512), lo=1, hi=8192, integer=True,
           sample_hi=96, slider=(32, 2048)),),
    {"size": [90, 211]})

SCALE_JITTER = _drawn_size_spec(
    "jitter", "ScaleJitter",
    "Resize keeping the aspect ratio by r = min(target height / height, target width / width) x a scale "
    "drawn uniformly in `scale`, each side int(side x r) (float32), as torchvision's ScaleJitter (large scale "
    "jitter, LSJ).",
    (Size("target_size", "the size the image fits into at scale 1", (1024, 1024)),
     Span("scale", "scale range, drawn per sample", (0.1, 2.0), lo=0.01, hi=10.0, sample_hi=2.0,
          slider=(0.05, 4.0))),
    {"target_size": [256, 256], "scale": [0.3, 1.2]})

def _tv_zoom_out(t, notes):
    """v2.RandomZoomOut: its fill (one value, or one per channel; uint8 levels above 1 read as levels)."""
    fill = t.fill
    if isinstance(fill, dict):  # torchvision's per-type fills: the images' own
        fill = next((value for kind, value in fill.items() if "Image" in getattr(kind, "__name__", str(kind))),
                    fill.get(None, 0))
    values = list(fill) if isinstance(fill, (list, tuple)) else [fill] * 3
    if len(values) == 1:
        values = values * 3
    if len(values) != 3:
        raise ValueError(f"fill={t.fill!r}: RandomZoomOut fills with one value or one per RGB channel")
    return {"side_range": [float(v) for v in t.side_range], "fill": [_fill_level(v) for v in values]}


def _wb_zoom_out(built, notes):
    """The export's WbRandomZoomOut, from its arguments."""
    return {"side_range": [float(v) for v in built["side_range"]], "fill": [float(v) for v in built["fill"]]}


def _dali_zoom_out(a, c, d):
    """The canvas as a window of the image (zoom_out_window), its outside filled by fn.slice's pad
    policy with the fill at the step's value scale (the nearest 8-bit level while values are 0-255)."""
    v = c.var
    fill = [float(round(x * c.scale)) if c.scale == 255.0 else float(x) * c.scale for x in a["fill"]]
    return [f"{v('padding')}, {v('start')}, {v('shape')} = zoom_out_window({d['_ratio']}, {d['_u']}, {d['_v']}, "
            f"{c.height}, {c.width})",
            f"{c.x} = slice_with_fill({c.x}, {v('start')}, {v('shape')}, {literal(fill)})"]


def _reference_zoom_out(fill):
    """The image padded by the reported [left, right, top, bottom] with the per-channel `fill`."""
    def reference(image, row):
        left, right, top, bottom = (int(round(p)) for p in row["padding"])
        x = np.asarray(image, dtype=np.float64) / 255.0
        out = np.empty((x.shape[0] + top + bottom, x.shape[1] + left + right, x.shape[2]))
        out[:] = np.asarray(fill, np.float64)
        out[top:top + x.shape[0], left:left + x.shape[1]] = x
        return out
    return reference


@dataclass(frozen=True)
class ZoomOutSpec(OpSpec):
    """RandomZoomOut's spec: each sample's canvas is drawn (sizes_per_sample), from the image as it is
    (ratio 1, or a sample the op skips) to the largest canvas of `side_range`."""

    sizes_per_sample: bool = True

    def size_bounds(self, params: Mapping[str, Any], height: int, width: int) -> tuple[tuple[int, int], ...]:
        left, right, top, bottom = targets.zoom_out_padding(params["side_range"][1], 0.0, 0.0, height, width)
        return (height, width), (height + top + bottom, width + left + right)

    def output_size(self, params: Mapping[str, Any], height: int, width: int) -> tuple[int, int]:
        return self.size_bounds(params, height, width)[1]


_ZOOM_OUT_PARITY_FILL = [0.2, 0.4, 0.6]  # 8-bit levels (51, 102, 153), which every backend stores exactly

RANDOM_ZOOM_OUT = ZoomOutSpec(
    name="RandomZoomOut", family="geometric", default_p=0.5,
    targets=TargetRule(geometry=targets.padding, size="padding"),
    from_torchvision=Inverse("RandomZoomOut", _tv_zoom_out),
    # Each backend draws its own canvases: each is checked against numpy's padding at its reported padding.
    parity=Parity(border=0, mae=1e-6, params={"side_range": [1.2, 2.0], "fill": _ZOOM_OUT_PARITY_FILL},
                  reference=_reference_zoom_out(_ZOOM_OUT_PARITY_FILL)),
    doc="Place the image on a canvas `ratio` times its size, ratio drawn uniformly in `side_range` (>= 1), at a "
        "uniformly drawn place, the rest filled with `fill` (one value per channel), as torchvision's RandomZoomOut "
        "(SSD's zoom out): canvas sides int(side x ratio), the image int(room x u) from the left and top (float32). "
        "A sample the op skips (p) keeps its size, and each other leaves at its own: the chain runs image by image "
        "from this step until one fixes the size. Reported as padding [left, right, top, bottom].",
    params=(
        Range("side_range", "canvas size as a multiple of the image's, drawn per sample", (1.0, 4.0), lo=1.0,
              hi=16.0, sample_hi=2.5, slider=(1.0, 8.0)),
        Floats("fill", "fill per channel (0 = black, 1 = white)", (0.0, 0.0, 0.0), lo=0.0, hi=1.0),
    ),
    kornia=KorniaLowering("WbRandomZoomOut", lambda a: {"side_range": tuple(a["side_range"]),
                                                        "fill": tuple(a["fill"])},
                          record={"padding": "padding"}, local=True, from_module=_wb_zoom_out),
    dali=DaliLowering(
        needs_size=True, reports=("padding",),
        draws=lambda a: {"_ratio": uniform(float(a["side_range"][0]), float(a["side_range"][1])),
                         "_u": uniform(0.0, 1.0), "_v": uniform(0.0, 1.0)},
        apply=_dali_zoom_out,
        note="canvases come from DALI's generator, Kornia's from its own: draws differ, the same padding pads alike; "
             "a fill between two 8-bit levels becomes the nearest level (Kornia keeps it exact)"),
    albumentations=AlbumentationsLowering(
        "WbRandomZoomOut",
        lambda a: {"side_range": tuple(a["side_range"]), "fill": tuple(v * 255.0 for v in a["fill"])},
        record={"padding": "padding"},
        note="fills with fill * 255 (the uint8 scale): after a Normalize the fill is not rescaled"),
)

OPS = (HORIZONTAL_FLIP, VERTICAL_FLIP, ROTATE, AFFINE, RANDOM_RESIZED_CROP, RESIZE, CENTER_CROP,
       RANDOM_CROP, PAD, TRANSLATE, SHEAR, PERSPECTIVE, PAD_IF_NEEDED, LONGEST_MAX_SIZE, SMALLEST_MAX_SIZE,
       RANDOM_ROTATE90, TRANSPOSE, D4, PERSPECTIVE_ZOOM, PAD_BORDER_IF_NEEDED, RANDOM_SIZED_CROP,
       RANDOM_SHORTEST_SIZE, RANDOM_RESIZE, SCALE_JITTER, RANDOM_ZOOM_OUT)
