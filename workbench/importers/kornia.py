"""Turn an existing Kornia pipeline into a chain: each `kornia.augmentation` module becomes the
op whose Kornia lowering builds that module with the same settings (the inverse of
`KorniaLowering.args`, one small function per Kornia class in `INVERSES`); what no op can
express is listed in `chain.unmapped` with the reason, rather than dropped silently.

Settings are read from the module instance: Kornia 0.9 keeps constructor ranges on its
`_param_generator` (as given, before they become float32 samplers) and the rest in `flags`.

Example:
    >>> import kornia.augmentation as K
    >>> import workbench as wb
    >>> chain = wb.Chain.from_kornia(K.AugmentationSequential(K.RandomHorizontalFlip(p=0.5),
    ...                                                     K.ColorJitter(brightness=0.2, p=0.8)))
    >>> [(s.op, s.p, s.params) for s in chain.steps]
    [('HorizontalFlip', 0.5, {}), ('Brightness', 0.8, {'factor': [0.8, 1.2]})]
"""
from __future__ import annotations

import math
import numbers
import os
from typing import Any, Callable

from ..errors import ChainError, WorkbenchError
from ..model import ChainModel, Step
from ..ops import REGISTRY, get_op
from ..ops.policies import POLICY_OP_BY_NAME
from .report import finish_import
from .walker import (Child, Imported, Library, child_step, every_child_mapped, group_dict, has_param,
                     leaf_positions, walk)

# A sequence container's children run in order; these are opened up (or become a group step).
_SEQUENCES = ("AugmentationSequential", "ImageSequential", "Sequential", "ModuleList")
_POLICIES = ("RandAugment", "TrivialAugment", "AutoAugment")
# Modules that only change the container or the dtype, not the pixels.
_LAYOUT_ONLY = {"Identity": "does nothing"}

# Kornia classes no op runs, with the nearest op and how it differs (quoted in the reason).
_NEAREST = {
    "ColorJiggle": "ColorJitter (K.ColorJitter: torchvision's multiplicative brightness; ColorJiggle adds "
                   "brightness - 1 and draws its order per batch)",
    "RandomBrightness": "Brightness (multiplies by the factor; K.RandomBrightness adds factor - 1)",
    "RandomContrast": "Contrast (K.ColorJitter's contrast about the grey mean; K.RandomContrast multiplies "
                      "without a centre)",
    "RandomSaturation": "Saturation (as K.ColorJitter(saturation=...))",
    "RandomHue": "Hue (as K.ColorJitter(hue=...))",
    "RandomBoxBlur": "GaussianBlur", "RandomPlanckianJitter": "ColorJitter",
    "RandomResizedCrop3D": "RandomResizedCrop", "PadTo": "Pad (pads to at least a size, at a random place)",
    "LongestMaxSize": "Resize", "SmallestMaxSize": "Resize", "RandomThinPlateSpline": "Perspective",
    "RandomElasticTransform": "Affine", "RandomFisheye": "Perspective", "Denormalize": "Normalize",
}


def chain_from_kornia(pipeline: Any, seed: int | None = None, strict: bool = False,
                      chain_type: type[ChainModel] = ChainModel) -> ChainModel:
    """The chain for a Kornia pipeline, see `Chain.from_kornia`."""
    imported = walk(_top(pipeline), LIBRARY)
    chain = chain_type(seed=0 if seed is None else seed)
    chain.steps = imported.steps
    return finish_import(chain, imported.unmapped, "from_kornia", strict, notes=imported.notes)


def leaf_transforms(pipeline: Any) -> list[str]:
    """Positions ("1", "2.1", ...) of the modules in `pipeline` that an import maps one by
    one, numbered as `chain.unmapped` numbers them: what the import coverage counts.

    Example:
        >>> import kornia.augmentation as K
        >>> leaf_transforms(K.AugmentationSequential(K.RandomHorizontalFlip(), K.RandomGrayscale()))
        ['1', '2']
    """
    return leaf_positions(_top(pipeline), LIBRARY)


def _top(pipeline: Any) -> list:
    """The pipeline's top-level modules; a sequence with random_apply is itself one group, at 1."""
    os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
    try:
        import torch.nn as nn
    except ImportError:  # pragma: no cover - kornia needs torch
        raise WorkbenchError("importing a Kornia pipeline needs torch and kornia: pip install kornia==0.9.0") from None
    if isinstance(pipeline, (list, tuple)):
        return list(pipeline)
    if _kind(pipeline) == "sequence":
        return _children(pipeline) if _random_apply(pipeline) is False else [pipeline]
    if isinstance(pipeline, nn.Module):
        return [pipeline]
    raise WorkbenchError(f"from_kornia takes a K.AugmentationSequential, an nn.Sequential, a list of "
                         f"modules or one module; got {type(pipeline).__name__}")


# ----- walking the pipeline -------------------------------------------------------------
def _kind(module: Any) -> str:
    """"policy" (kornia.augmentation.auto), "sequence" (a container) or "module"."""
    cls = type(module)
    if cls.__name__ in _POLICIES and "kornia.augmentation.auto" in cls.__module__:
        return "policy"
    if cls.__name__ in _SEQUENCES or any(c.__name__ in ("ImageSequential", "ImageSequentialBase")
                                         for c in cls.__mro__):
        return "sequence"
    return "module"


def _children(module: Any) -> list:
    return list(module.children())


def _random_apply(module: Any):
    return getattr(module, "random_apply", False)


def _leaf(module: Any, notes: list[str]) -> Step:
    op, params, p = module_to_op(module, notes)
    return Step.create(op, p=p, **params)


def _group(module: Any, position: str, children: list[Child], imported: Imported):
    """A Kornia sequence with random_apply as a OneOf / SomeOf group step (ValueError: unmapped)."""
    lo, hi = module.random_apply  # Kornia keeps [lo, hi): the count is drawn in it per batch
    weights = [float(w) for w in module.random_apply_weights.tolist()]
    if hi - lo != 1:
        raise ValueError(f"random_apply draws how many of its {len(children)} modules run (between {lo} and "
                         f"{hi - 1}); a OneOf/SomeOf group applies a fixed number n: write random_apply=n")
    if not every_child_mapped(children):
        raise ValueError("random_apply picks among its modules, and not every one of them maps to an op (see the "
                         "entries under this position), so the choice cannot be kept")
    n, steps = lo, [child_step(child) for child in children]
    if n == 1:
        data = group_dict("OneOf", 1.0, {"weights": weights}, steps)
    else:
        nonzero = sum(1 for w in weights if w > 0)
        data = group_dict("SomeOf", 1.0, {"n": n, "replace": n > sum(weights) or n > nonzero, "weights": weights},
                          steps)
    imported.notes.append(f"{position} {describe(module)}: random_apply={n} picks its modules once per batch in "
                          f"Kornia (every image gets the same ones, in a random order); the {data['op']} group picks "
                          "per image")
    try:
        return Step.from_dict(data, index=int(position.split(".")[0]))
    except ChainError as exc:
        raise ValueError(f"random_apply picks among its modules per batch; it would be a {data['op']} group step, "
                         f"which this workbench cannot build ({exc})") from None


def describe(module: Any) -> str:
    """K.Name(p=...) (a module's full repr runs long)."""
    p = getattr(module, "p", None)
    if type(module).__name__ in ("RandomMixUpV2", "RandomCutMixV2"):
        p = getattr(module, "p_batch", p)
    if _kind(module) == "sequence" and getattr(module, "random_apply", False) is not False:
        return f"K.{type(module).__name__}(random_apply={module.random_apply[0]})"
    return f"K.{type(module).__name__}(p={p})" if p is not None else f"K.{type(module).__name__}()"


LIBRARY = Library(
    children=lambda m: _children(m) if _kind(m) == "sequence" else None,
    layout_only=lambda m: type(m).__name__ in _LAYOUT_ONLY,
    opened=lambda m: _random_apply(m) is False,
    group=_group, leaf=_leaf, describe=describe)


# ----- one module ---------------------------------------------------------------------------
def module_to_op(module: Any, notes: list[str] | None = None) -> tuple[str, dict, float]:
    """(op name, params, p) for one Kornia module; ValueError with the reason when no op
    expresses it.

    Example:
        >>> import kornia.augmentation as K
        >>> module_to_op(K.RandomRotation(degrees=20.0, p=0.3, align_corners=False))
        ('Rotate', {'degrees': [-20.0, 20.0], 'interpolation': 'bilinear'}, 0.3)
    """
    notes = [] if notes is None else notes
    name = type(module).__name__
    inverse = INVERSES.get(name)
    if inverse is None:
        local = [spec for spec in REGISTRY.values()
                 if spec.kornia is not None and spec.kornia.local and spec.kornia.module == name]
        if local:
            return _generic(module, local)
        hint = f"; the nearest op is {_NEAREST[name]}" if name in _NEAREST else ""
        raise ValueError(f"no workbench op runs K.{name}{hint}; see workbench.list_ops() and docs/ops.md")
    if name not in _POLICIES:
        # Resize, CenterCrop and Normalize draw nothing (Kornia sets same_on_batch on them itself).
        if getattr(module, "same_on_batch", False) and name not in ("Resize", "CenterCrop", "Normalize"):
            raise ValueError("same_on_batch=True draws one value for the whole batch; the workbench draws per "
                             "image: write same_on_batch=False")
        if name not in ("RandomMixUpV2", "RandomCutMixV2") and float(getattr(module, "p_batch", 1.0)) != 1.0:
            raise ValueError(f"p_batch={module.p_batch} skips whole batches; a step's p gates each image: write "
                             "p_batch=1.0")
    op, params = inverse(module, notes)
    if name in _POLICIES:
        p = 1.0
    elif name in ("RandomMixUpV2", "RandomCutMixV2"):
        p = float(module.p_batch)
    else:
        p = float(module.p)
    return op, params, p


# ----- reading values ------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """Tensors, tuples and numbers as plain Python floats / lists of floats."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def _decimal(value: Any, scale: float = 1.0) -> float:
    """`value * scale` with the fewest digits that give `value` back (Kornia keeps some ranges as
    float32 tensors: 0.1 comes back as 0.10000000149, written here as 0.1 again)."""
    import numpy as np

    is32 = getattr(value, "dtype", None) is not None and "float32" in str(value.dtype)
    v = float(value.item() if hasattr(value, "item") else value)
    for digits in range(1, 18):
        d = float(f"{v * scale:.{digits}g}")
        if (np.float32(d / scale) == np.float32(v)) if is32 else math.isclose(d / scale, v, rel_tol=1e-13,
                                                                               abs_tol=1e-15):
            return d
    return v * scale


def _bound(value: Any, center: float, low: float = 0.0) -> list[float]:
    """Kornia's `_range_bound`: a number f is [max(center - f, low), center + f], a pair is itself."""
    value = _plain(value)
    if isinstance(value, list):
        if len(value) != 2:
            raise ValueError(f"expected a number or a (min, max) pair, got {value}")
        return [float(value[0]), float(value[1])]
    return [max(center - value, low), center + value]


def _flag(module: Any, key: str, default: Any = None) -> Any:
    return getattr(module, "flags", {}).get(key, default)


def _gen(module: Any) -> Any:
    return module._param_generator


def _sampler(module: Any, key: str) -> Any:
    """The value given for `key` to a PlainUniformGenerator-based module, as Kornia reads it."""
    for value, name, center, bounds in _gen(module).samplers:
        if name == key:
            if isinstance(_plain(value), list):
                return _plain(value)
            return _bound(value, center, bounds[0] if bounds else -math.inf)
    raise KeyError(key)


def _interpolation(module: Any, op: str) -> str:
    resample = _flag(module, "resample")
    name = getattr(resample, "name", str(resample)).lower()
    if name not in ("bilinear", "nearest"):
        raise ValueError(f"resample={name.upper()}: {op} takes interpolation 'bilinear' or 'nearest'")
    return name


def _align(module: Any, op: str, notes: list[str]) -> None:
    if _flag(module, "align_corners") is True:
        notes.append(f"K.{type(module).__name__}: align_corners=True samples on corner-aligned pixel grids; {op} "
                     "uses align_corners=False (pixel centres, as the other backends): a sub-pixel difference")


def _zeros_padding(module: Any, op: str) -> None:
    mode = _flag(module, "padding_mode")
    name = getattr(mode, "name", str(mode)).lower()
    if mode is not None and name != "zeros":
        raise ValueError(f"padding_mode={name!r} fills the uncovered corners from the image; {op} fills them with "
                         "zeros (padding_mode='zeros')")
    fill = _flag(module, "fill_value")
    if fill is not None and any(v != 0.0 for v in _as_list(_plain(fill))):
        raise ValueError(f"fill_value={_plain(fill)}: {op} fills the uncovered corners with 0")


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def _pair_of(value: Any, what: str) -> list[float]:
    value = _plain(value)
    if isinstance(value, list) and len(value) == 2:
        return value
    raise ValueError(f"{what} must be a (min, max) pair, got {value}")


def _size(value: Any, what: str = "size") -> list[int]:
    value = _plain(value)
    if isinstance(value, list) and len(value) == 2:
        return [int(v) for v in value]
    if isinstance(value, float):
        return [int(value), int(value)]
    raise ValueError(f"{what} must be (height, width), got {value}")


def _blur_border(module: Any, op: str, notes: list[str]) -> None:
    border = _flag(module, "border_type")
    name = getattr(border, "name", str(border)).lower()
    if border is not None and name != "reflect":
        notes.append(f"K.{type(module).__name__}: border_type={name!r}; {op} mirrors the border (border_type="
                     "'reflect', as OpenCV and DALI): only pixels within the kernel's reach of the edge differ")


# ----- the inverses, one per Kornia class ---------------------------------------------------
def _flip(op: str) -> Callable:
    return lambda m, notes: (op, {})


def _rotation(m, notes):
    _align(m, "Rotate", notes)
    return "Rotate", {"degrees": _sampler(m, "degrees"), "interpolation": _interpolation(m, "Rotate")}


def _affine(m, notes):
    g = _gen(m)
    _zeros_padding(m, "Affine")
    _align(m, "Affine", notes)
    degrees = _bound(g.degrees, 0.0, -math.inf)
    translate = [0.0, 0.0] if g.translate is None else _pair_of(g.translate, "translate")
    scale = [1.0, 1.0] if g.scale is None else _plain(g.scale)
    keep_ratio = len(scale) == 2  # a (min, max) pair draws one zoom for both axes
    if len(scale) == 4:
        if scale[2:] != scale[:2]:
            raise ValueError(f"scale={scale} draws the x and y zoom from different ranges; Affine draws both from one "
                             "range")
        scale = scale[:2]
    shear = [0.0, 0.0] if g.shear is None else _plain(g.shear)
    if not isinstance(shear, list):
        shear = [-shear, shear]
    if len(shear) == 4:
        if shear[2:] != [0.0, 0.0]:
            raise ValueError(f"shear={shear} shears along y too; Affine shears along x only (the Shear op takes "
                             "shear_x and shear_y)")
        shear = shear[:2]
    params = {"degrees": degrees, "translate": translate, "scale": scale, "shear": shear,
              "interpolation": _interpolation(m, "Affine")}
    if has_param("Affine", "keep_ratio"):
        params["keep_ratio"] = keep_ratio
    elif not keep_ratio:
        raise ValueError(f"scale={_plain(g.scale)} draws the x and y zoom apart; Affine draws one zoom for both")
    return "Affine", params


def _shaped(op: str, param: str, lo: float, hi: float) -> Any:
    """[lo, hi] when the op's `param` is a range, else the one value (which needs lo == hi)."""
    prm = get_op(op).param(param)
    if hasattr(prm, "lo") and type(prm).__name__ in ("Number",):
        if lo != hi:
            raise ValueError(f"{param}=({lo:g}, {hi:g}) is a range; {op} takes one {param}")
        return lo
    return [lo, hi]


def _resized_crop(m, notes):
    g = _gen(m)
    _align(m, "RandomResizedCrop", notes)
    return "RandomResizedCrop", {"size": _size(_flag(m, "size")), "scale": _pair_of(g.scale, "scale"),
                                 "ratio": _pair_of(g.ratio, "ratio"),
                                 "interpolation": _interpolation(m, "RandomResizedCrop")}


def _resize(m, notes):
    size = _plain(_flag(m, "size"))
    if not isinstance(size, list):
        raise ValueError(f"size={int(size)} resizes the {_flag(m, 'side')} side keeping the aspect ratio; Resize takes "
                         "an output size (height, width)")
    _align(m, "Resize", notes)
    return "Resize", {"size": _size(size), "interpolation": _interpolation(m, "Resize"),
                      "antialias": bool(_flag(m, "antialias"))}


def _center_crop(m, notes):
    if _flag(m, "cropping_mode") != "slice":
        _align(m, "CenterCrop", notes)
    return "CenterCrop", {"size": _size(_flag(m, "size"))}


def _random_crop(m, notes):
    padding = _flag(m, "padding")
    if padding is not None:
        raise ValueError(f"padding={_plain(padding)} pads every image by a margin before cropping; RandomCrop has no "
                         "padding and Pad pads to a fixed size (at a random place): crop without padding=")
    size = _size(_flag(m, "size"))
    if not _flag(m, "pad_if_needed"):
        return "RandomCrop", {"size": size}
    if _flag(m, "padding_mode") != "constant":
        raise ValueError(f"padding_mode={_flag(m, 'padding_mode')!r}: Pad (RandomCrop with pad_if_needed) fills with a "
                         "constant (padding_mode='constant')")
    fill = _as_list(_plain(_flag(m, "fill")))
    if len(set(fill)) != 1:
        raise ValueError(f"fill={fill} fills each channel with its own value; Pad fills all channels with one value")
    return "Pad", {"size": size, "fill": float(fill[0])}


def _translate(m, notes):
    g = _gen(m)
    _zeros_padding(m, "Translate")
    _align(m, "Translate", notes)
    tx = [0.0, 0.0] if g.translate_x is None else _bound(g.translate_x, 0.0, -math.inf)
    ty = [0.0, 0.0] if g.translate_y is None else _bound(g.translate_y, 0.0, -math.inf)
    return "Translate", {"translate_x": tx, "translate_y": ty, "interpolation": _interpolation(m, "Translate")}


def _shear(m, notes):
    _zeros_padding(m, "Shear")
    _align(m, "Shear", notes)
    shear = _plain(_gen(m).shear)
    if not isinstance(shear, list):
        shear = [-shear, shear, 0.0, 0.0]
    elif len(shear) == 2:
        shear = [*shear, 0.0, 0.0]
    if len(shear) != 4:
        raise ValueError(f"shear={shear} must be a number, (x_min, x_max) or (x_min, x_max, y_min, y_max)")
    return "Shear", {"shear_x": shear[:2], "shear_y": shear[2:], "interpolation": _interpolation(m, "Shear")}


def _perspective(m, notes):
    g = _gen(m)
    if g.sampling_method != "basic":
        raise ValueError(f"sampling_method={g.sampling_method!r}: Perspective moves the corners as Kornia's 'basic'")
    _align(m, "Perspective", notes)
    return "Perspective", {"distortion": float(_plain(g.distortion_scale)),
                           "interpolation": _interpolation(m, "Perspective")}


_JITTER = (("brightness", "Brightness", "factor", 1.0, 0.0), ("contrast", "Contrast", "factor", 1.0, 0.0),
           ("saturation", "Saturation", "factor", 1.0, 0.0), ("hue", "Hue", "shift", 0.0, -0.5))


def _color_jitter(m, notes):
    g = _gen(m)
    ranges = {kind: _bound(getattr(g, kind), center, low) for kind, _, _, center, low in _JITTER}
    # A kind is given when it was passed (the constructor's default is the number 0).
    given = [kind for kind, *_ in _JITTER if not (isinstance(getattr(g, kind), numbers.Real)
                                                  and float(getattr(g, kind)) == 0.0)]
    order = getattr(m, "_fixed_order", None)
    if len(given) == 1 and order is None:
        kind, op, param = next((k, o, p) for k, o, p, *_ in _JITTER if k == given[0])
        return op, {param: ranges[kind]}
    if order not in (None, (0, 1, 2, 3)):
        raise ValueError(f"order={order}: ColorJitter applies brightness, contrast, saturation, hue in that order "
                         "(order=(0, 1, 2, 3))")
    if order is None and len(given) > 1:
        notes.append("K.ColorJitter: draws the order of its adjustments at random per batch; ColorJitter applies "
                     "brightness, contrast, saturation, hue in that order")
    return "ColorJitter", ranges


def _grayscale(m, notes):
    weights = getattr(m, "rgb_weights", None)
    if weights is not None and [round(w, 3) for w in _plain(weights)] != [0.299, 0.587, 0.114]:
        raise ValueError(f"rgb_weights={_plain(weights)}: Grayscale uses the BT.601 weights (0.299, 0.587, 0.114)")
    return "Grayscale", {}


def _invert(m, notes):
    if _plain(_flag(m, "max_val")) != 1.0:
        raise ValueError(f"max_val={_plain(_flag(m, 'max_val'))}: Invert computes 1 - x (max_val=1.0)")
    return "Invert", {}


def _solarize(m, notes):
    additions = _sampler(m, "additions")
    if additions != [0.0, 0.0]:
        raise ValueError(f"additions={additions} shifts the values before solarizing (Kornia's default 0.1 does); "
                         "Solarize takes additions=0.0")
    return "Solarize", {"threshold": _sampler(m, "thresholds")}


def _posterize(m, notes):
    bits = _plain(_gen(m).bits_factor)
    lo, hi = (bits, 8.0) if not isinstance(bits, list) else bits
    # Posterize draws whole bits in [lo, hi]: its lowering is bits=(lo - 0.49, min(hi + 0.49, 8)).
    b_lo, b_hi = lo + 0.49, 8.0 if hi == 8.0 else hi - 0.49
    if abs(b_lo - round(b_lo)) > 1e-6 or abs(b_hi - round(b_hi)) > 1e-6:
        raise ValueError(f"bits=({lo:g}, {hi:g}) draws a real number of bits; Posterize draws whole bits in [lo, hi] "
                         "(as K.RandomPosterize(bits=(lo - 0.49, min(hi + 0.49, 8))))")
    return "Posterize", {"bits": [int(round(b_lo)), int(round(b_hi))]}


def _auto_contrast(m, notes):
    if getattr(m, "clip_output", True) is not True:
        raise ValueError("clip_output=False: AutoContrast clips its output to [0, 1]")
    return "AutoContrast", {}


def _gamma(m, notes):
    gain = _sampler(m, "gain_factor")
    if gain != [1.0, 1.0]:
        raise ValueError(f"gain={gain} scales the result; Gamma takes gain=(1.0, 1.0)")
    return "Gamma", {"gamma": _sampler(m, "gamma_factor")}


def _gaussian_blur(m, notes):
    k = _size(_flag(m, "kernel_size"), "kernel_size")
    if k[0] != k[1]:
        raise ValueError(f"kernel_size={tuple(k)} is not square; GaussianBlur takes one odd kernel_size")
    _blur_border(m, "GaussianBlur", notes)
    return "GaussianBlur", {"sigma": _pair_of(_gen(m).sigma, "sigma"), "kernel_size": k[0]}


def _gaussian_noise(m, notes):
    g = _gen(m)
    if float(_plain(g.mean)) != 0.0:
        raise ValueError(f"mean={_plain(g.mean)} shifts the image; GaussianNoise adds zero-mean noise (mean=0.0)")
    std = float(_plain(g.std))
    return "GaussianNoise", {"std": _shaped("GaussianNoise", "std", std, std)}


def _salt_and_pepper(m, notes):
    g = _gen(m)
    return "SaltAndPepper", {"amount": _bound(g.amount, 0.0), "salt_vs_pepper": _bound(g.salt_and_pepper, 0.0)}


def _jpeg(m, notes):
    return "JpegCompression", {"quality": _bound(_gen(m).jpeg_quality, 50.0, 1.0)}


def _motion_blur(m, notes):
    g = _gen(m)
    kernel = _plain(g.kernel_size)
    kernel = [int(k) for k in kernel] if isinstance(kernel, list) else [int(kernel), int(kernel)]
    resample = getattr(_flag(m, "resample"), "name", "").lower()
    if resample != "nearest":
        raise ValueError(f"resample={resample.upper()}: MotionBlur rotates its kernel with nearest sampling "
                         "(resample='nearest')")
    _blur_border(m, "MotionBlur", notes)
    angle, direction = _bound(g.angle, 0.0, -math.inf), _bound(g.direction, 0.0, -math.inf)
    if isinstance(angle, list) and angle[0] < 0.0 <= angle[0] + 180.0 and angle[1] + 180.0 <= 360.0:
        # A line blurs alike at angle a and a + 180 when its direction (the weight's slope along the
        # line) is reversed: K.RandomMotionBlur(angle=35) draws in [-35, 35], here in [145, 215].
        angle = [angle[0] + 180.0, angle[1] + 180.0]
        direction = [-direction[1], -direction[0]] if isinstance(direction, list) else direction
        notes.append(f"MotionBlur: angle {[a - 180.0 for a in angle]} read as {angle} with the direction reversed "
                     "(the same kernels)")
    return "MotionBlur", {"kernel_size": _shaped("MotionBlur", "kernel_size", *kernel), "angle": angle,
                          "direction": direction}


def _median_blur(m, notes):
    k = _size(_flag(m, "kernel_size"), "kernel_size")
    if k[0] != k[1]:
        raise ValueError(f"kernel_size={tuple(k)} is not square; MedianBlur takes one odd kernel_size")
    return "MedianBlur", {"kernel_size": _shaped("MedianBlur", "kernel_size", k[0], k[0])}


def _erasing(m, notes):
    g = _gen(m)
    return "Erase", {"scale": _pair_of(g.scale, "scale"), "ratio": _pair_of(g.ratio, "ratio"),
                     "value": float(_plain(g.value))}


def _mixup(m, notes):
    g = _gen(m)
    return "MixUp", {"weight": [0.0, 1.0] if g.lambda_val is None else _pair_of(g.lambda_val, "lambda_val")}


def _cutmix(m, notes):
    g = _gen(m)
    if g.num_mix != 1:
        raise ValueError(f"num_mix={g.num_mix} pastes several boxes; CutMix pastes one (num_mix=1)")
    if g.beta is not None and float(_plain(g.beta)) != 1.0:
        raise ValueError(f"beta={_plain(g.beta)} draws the mixing weight from a Beta distribution; CutMix draws it "
                         "uniformly (beta=None)")
    lo, hi = [0.0, 1.0] if g.cut_size is None else _pair_of(g.cut_size, "cut_size")
    if not m.use_correct_lambda:
        notes.append("K.RandomCutMixV2: use_correct_lambda=False mixes the labels by Kornia's old weight; CutMix "
                     "mixes them by the pasted area")
    return "CutMix", {"area": [_decimal(1.0 - hi), _decimal(1.0 - lo)]}


def _normalize(m, notes):
    def three(key):
        raw = _flag(m, key)
        values = [_decimal(v) for v in raw.reshape(-1)] if hasattr(raw, "reshape") else _as_list(_plain(raw))
        if len(values) == 1:
            values = values * 3
        if len(values) != 3:
            raise ValueError(f"{key}={values}: Normalize takes one value per RGB channel")
        return values

    return "Normalize", {"mean": three("mean"), "std": three("std")}


# The policies (kornia.augmentation.auto): their candidate op modules and magnitude ranges.
_POLICY_OP_NAMES = {"Rotate": "rotate", "ShearX": "shear_x", "ShearY": "shear_y", "TranslateX": "translate_x",
                    "TranslateY": "translate_y", "Brightness": "brightness", "Contrast": "contrast",
                    "Saturate": "color", "Sharpness": "sharpness", "Posterize": "posterize", "Solarize": "solarize",
                    "Equalize": "equalize", "AutoContrast": "auto_contrast", "Invert": "invert"}


def _policy_ops(m) -> dict[str, list[float]]:
    """{op name: [lo, hi]} of a RandAugment / TrivialAugment's candidates (one op each)."""
    out: dict[str, list[float]] = {}
    for position, sub in enumerate(m.children(), start=1):
        ops = list(sub.children())
        if len(ops) != 1:
            raise ValueError(f"candidate {position} holds {len(ops)} ops; each candidate holds one op")
        kind = type(ops[0]).__name__
        if kind not in _POLICY_OP_NAMES:
            raise ValueError(f"policy= holds {kind} (candidate {position}), which the workbench's op set leaves out "
                             f"(known: {', '.join(_POLICY_OP_NAMES.values())}); Kornia's default policy includes "
                             "solarize_add: pass a policy without it")
        name = _POLICY_OP_NAMES[kind]
        if name in out:
            raise ValueError(f"policy= names {name} twice; the op set holds each op once")
        if not POLICY_OP_BY_NAME[name].has_magnitude:
            out[name] = []
            continue
        lo, hi = ops[0].magnitude_range
        scale = 180.0 if name.startswith("shear") else 1.0  # Kornia's shear magnitude is degrees / 180
        lo, hi = _decimal(lo, scale), _decimal(hi, scale)
        out[name] = [-hi, hi] if ops[0].symmetric_megnitude else [lo, hi]
    return out


def _rand_augment(m, notes):
    notes.append("K.auto.RandAugment picks its ops once per batch; RandAugment on DALI picks per image")
    ops = _policy_ops(m)
    return "RandAugment", {"n": int(m.n), "magnitude": int(m.m), "ops": ops}


def _trivial_augment(m, notes):
    return "TrivialAugment", {"ops": _policy_ops(m)}


def _auto_augment(m, notes):
    import kornia.augmentation.auto as auto

    mine = _policy_signature(m)
    for name in ("imagenet", "cifar10", "svhn"):
        if _policy_signature(auto.AutoAugment(policy=name)) == mine:
            return "AutoAugment", {"policy": name}
    raise ValueError("policy= is a custom sub-policy list; AutoAugment runs the papers' 'imagenet', 'cifar10' or "
                     "'svhn' policies")


def _policy_signature(m) -> list:
    rows = []
    for sub in m.children():
        rows.append([(type(op).__name__, _plain(getattr(op, "magnitude_range", None)),
                      _plain(getattr(getattr(op, "op", None), "p", None))) for op in sub.children()])
    return rows


INVERSES: dict[str, Callable[[Any, list], tuple[str, dict]]] = {
    "RandomHorizontalFlip": _flip("HorizontalFlip"),
    "RandomVerticalFlip": _flip("VerticalFlip"),
    "RandomRotation": _rotation,
    "RandomAffine": _affine,
    "RandomResizedCrop": _resized_crop,
    "Resize": _resize,
    "CenterCrop": _center_crop,
    "RandomCrop": _random_crop,
    "RandomTranslate": _translate,
    "RandomShear": _shear,
    "RandomPerspective": _perspective,
    "ColorJitter": _color_jitter,
    "RandomGrayscale": _grayscale,
    "RandomInvert": _invert,
    "RandomSolarize": _solarize,
    "RandomPosterize": _posterize,
    "RandomEqualize": _flip("Equalize"),
    "RandomAutoContrast": _auto_contrast,
    "RandomSharpness": lambda m, notes: ("Sharpness", {"factor": _sampler(m, "sharpness")}),
    "RandomGamma": _gamma,
    "RandomChannelShuffle": _flip("ChannelShuffle"),
    "RandomGaussianBlur": _gaussian_blur,
    "RandomGaussianNoise": _gaussian_noise,
    "RandomSaltAndPepperNoise": _salt_and_pepper,
    "RandomJPEG": _jpeg,
    "RandomMotionBlur": _motion_blur,
    "RandomMedianBlur": _median_blur,
    "RandomErasing": _erasing,
    "RandomMixUpV2": _mixup,
    "RandomCutMixV2": _cutmix,
    "Normalize": _normalize,
    "RandAugment": _rand_augment,
    "TrivialAugment": _trivial_augment,
    "AutoAugment": _auto_augment,
}


# ----- modules of workbench/runtime/kornia_modules (no entry in INVERSES) --------------------
def _generic(module: Any, specs: list) -> tuple[str, dict, float]:
    """For the workbench's own Kornia modules: find each op parameter's value on the instance
    (under the name of the parameter or of the constructor argument it feeds, or that name with
    `_range`, or in a `ranges` table of (name, range) pairs), then check the guess by building the
    module again from the op's lowering and comparing the two modules' settings."""
    generator = getattr(module, "_param_generator", None)
    sources: list[dict] = [getattr(module, key) for key in ("wb_args", "init_args", "kornia_args")
                           if isinstance(getattr(module, key, None), dict)]
    sources += [getattr(module, "flags", {}) or {}, vars(module), vars(generator) if hasattr(generator, "__dict__")
                else {}]
    ranges = getattr(module, "ranges", None)
    if isinstance(ranges, (list, tuple)) and all(isinstance(r, (list, tuple)) and len(r) == 2 for r in ranges):
        sources.append({str(name): value for name, value in ranges})
    reasons = []
    for spec in specs:
        feeds = _argument_names(spec)
        params = {}
        for prm in spec.params:
            arg = feeds.get(prm.name, prm.name)
            for key in (prm.name, arg, f"{prm.name}_range", f"{arg}_range", arg.replace("_size", "_range")):
                hit = next((src[key] for src in sources if key in src), None)
                if hit is not None:
                    params[prm.name] = _plain(hit)
                    break
        try:
            step = Step.create(spec.name, p=float(getattr(module, "p", 1.0)), **params)
            rebuilt = type(module)(**spec.kornia.args(step.params), p=step.p)
        except (ChainError, ValueError, TypeError) as exc:
            reasons.append(f"{spec.name}: {exc}")
            continue
        if _settings(rebuilt) == _settings(module):
            return spec.name, step.params, step.p
        reasons.append(f"{spec.name}: its settings could not all be read back from the module (found "
                       f"{sorted(params)})")
    raise ValueError("; ".join(reasons))


def _argument_names(spec) -> dict[str, str]:
    """op parameter -> the lowering's keyword argument it passes through unchanged, found by
    changing one parameter at a time from the defaults."""
    import numpy as np

    base = spec.defaults()
    before = spec.kornia.args(base)
    out = {}
    rng = np.random.default_rng(0)
    for prm in spec.params:
        for _ in range(8):
            value = prm.validate(spec.name, prm.random(rng))
            if value != base[prm.name]:
                break
        else:
            continue
        try:
            after = spec.kornia.args({**base, prm.name: value})
        except Exception:  # noqa: BLE001 - a combination the lowering refuses tells nothing
            continue
        changed = [k for k in after if _plain(after[k]) != _plain(before.get(k))]
        if len(changed) == 1:
            out[prm.name] = changed[0]
    return out


def _settings(module: Any) -> dict:
    """A module's configuration: its flags and plain attributes (torch's own state left out)."""
    import torch

    torch_own = set(vars(torch.nn.Module()))
    state = {}
    for source in (vars(module), getattr(module, "flags", {}) or {}):
        for key, value in source.items():
            if key in torch_own or key in ("device", "dtype") or isinstance(value, torch.nn.Module) or callable(value):
                continue
            state[key] = _plain(value)
    return state
