"""Turn a torchvision `transforms.v2` pipeline into a chain: each transform becomes the op that
expresses it with the same settings (read from the instance, torchvision 0.26's attributes);
containers become group steps; what no op can express is listed in `chain.unmapped` with the
reason. torchvision is imported only when a pipeline is imported.

Value conventions: the workbench works on images in [0, 1] (after ToImage/ToDtype(float,
scale=True)); torchvision's RandomSolarize threshold is in the image's own range, so a threshold
above 1 is read as a uint8 level (divided by 255, noted).

Example:
    >>> from torchvision.transforms import v2  # doctest: +SKIP
    >>> import workbench as wb  # doctest: +SKIP
    >>> pipeline = v2.Compose([v2.RandomHorizontalFlip(), v2.ColorJitter(0.4)])  # doctest: +SKIP
    >>> chain = wb.Chain.from_torchvision(pipeline)  # doctest: +SKIP
    >>> [(s.op, s.params) for s in chain.steps]  # doctest: +SKIP
    [('HorizontalFlip', {}), ('Brightness', {'factor': [0.6, 1.4]})]
"""
from __future__ import annotations

import numbers
from typing import Any, Callable

from ..errors import ChainError, WorkbenchError
from ..model import ChainModel, Step
from ..ops.policies import RAND_AUGMENT_OPS
from .report import finish_import
from .walker import Child, Imported, Library, child_step, every_child_mapped, group_dict, has_param, leaf_positions, \
    walk

# Transforms that only change the container, the dtype or the layout: every export already
# delivers float tensors in [0, 1] in its engine's layout.
LAYOUT_ONLY = {
    "ToImage": "wraps the input as an image tensor", "ToTensor": "converts to a CHW float tensor",
    "PILToTensor": "converts to a CHW tensor", "ToDtype": "converts the dtype (the chain works in [0, 1] floats)",
    "ConvertImageDtype": "converts the dtype", "ToPureTensor": "unwraps the tv_tensor", "Identity": "does nothing",
    "ToPILImage": "converts to PIL",
}
CONTAINERS = ("Compose", "RandomApply", "RandomChoice", "RandomOrder")

_NEAREST = {
    "RandomZoomOut": "Pad (pads to a fixed size) and Resize", "ScaleJitter": "RandomResizedCrop",
    "RandomShortestSize": "Resize (takes an output size)", "RandomIoUCrop": "RandomResizedCrop",
    "ElasticTransform": "Affine", "AugMix": "RandAugment", "Grayscale": "Grayscale (p=1)",
    "RandomChannelPermutation": "ChannelShuffle", "RandomPhotometricDistort": "ColorJitter and ChannelShuffle",
    "MixUp": "MixUp (a batch transform)", "CutMix": "CutMix (a batch transform)",
    "Pad": "Pad (pads to a fixed size at a random place; v2.Pad adds fixed margins)",
    "FiveCrop": "CenterCrop", "TenCrop": "CenterCrop", "LinearTransformation": "Normalize",
    "GaussianNoise": "GaussianNoise", "JPEG": "JpegCompression",
}


def chain_from_torchvision(pipeline: Any, seed: int | None = None, strict: bool = False,
                           chain_type: type[ChainModel] = ChainModel) -> ChainModel:
    """The chain for a torchvision v2 pipeline, see `Chain.from_torchvision`."""
    imported = walk(_top(pipeline), LIBRARY)
    chain = chain_type(seed=0 if seed is None else seed)
    chain.steps = imported.steps
    return finish_import(chain, imported.unmapped, "from_torchvision", strict, notes=imported.notes)


def leaf_transforms(pipeline: Any) -> list[str]:
    """Positions ("1", "2.1", ...) of the transforms in `pipeline` that an import maps one by
    one, numbered as `chain.unmapped` numbers them: what the import coverage counts.

    Example:
        >>> from torchvision.transforms import v2  # doctest: +SKIP
        >>> choice = v2.RandomChoice([v2.RandomHorizontalFlip(), v2.RandomInvert()])  # doctest: +SKIP
        >>> leaf_transforms(v2.Compose([choice]))  # doctest: +SKIP
        ['1.1', '1.2']
    """
    return leaf_positions(_top(pipeline), LIBRARY)


def _top(pipeline: Any) -> list:
    try:
        import torch.nn as nn
        from torchvision.transforms import v2  # noqa: F401 - imported here only, as the docstring says
    except ImportError as exc:
        raise WorkbenchError(f"importing a torchvision pipeline needs torchvision (pip install torchvision): {exc}") \
            from None
    name = type(pipeline).__name__
    if isinstance(pipeline, (list, tuple)):
        return list(pipeline)
    if name == "Compose":
        return list(pipeline.transforms)
    if isinstance(pipeline, nn.Module) or callable(pipeline):
        return [pipeline]
    raise WorkbenchError(f"from_torchvision takes a v2.Compose, a list of transforms or one transform; got {name}")


def describe(transform: Any) -> str:
    p = getattr(transform, "p", None)
    if isinstance(p, numbers.Real) and not isinstance(p, bool):
        return f"v2.{type(transform).__name__}(p={float(p):g})"
    return f"v2.{type(transform).__name__}()"


def _leaf(transform: Any, notes: list[str]) -> Step:
    op, params, p = transform_to_op(transform, notes)
    return Step.create(op, p=p, **params)


def _container(transform: Any, position: str, children: list[Child], imported: Imported):
    """RandomApply -> Sequential group (gated together), RandomChoice -> OneOf, RandomOrder ->
    SomeOf(n = all, no replacement); ValueError when a child does not map (then listed)."""
    name = type(transform).__name__
    if not every_child_mapped(children):
        raise ValueError(f"{name} holds transforms that do not map (see the entries under this position), so the "
                         "group cannot be kept")
    steps = [child_step(child) for child in children]
    if name == "RandomApply":
        p = float(transform.p)
        if len(steps) == 1 and steps[0].p == 1.0:  # one transform: its own p says it
            data = steps[0].to_dict()
            data["p"] = p
            return Step.from_dict(data)
        data = group_dict("Sequential", p, {}, steps)
    elif name == "RandomChoice":
        data = group_dict("OneOf", 1.0, {"weights": [float(w) for w in transform.p]}, steps)
    else:
        data = group_dict("SomeOf", 1.0, {"n": len(steps), "replace": False, "weights": [1.0] * len(steps)}, steps)
        imported.notes.append(f"{position} v2.RandomOrder: applies all its transforms in a random order per call; "
                              "the SomeOf group draws the order per image")
    try:
        return Step.from_dict(data, index=int(position.split(".")[0]))
    except ChainError as exc:
        raise ValueError(f"{name} would be a {data['op']} group step, which this workbench cannot build ({exc})") \
            from None


LIBRARY = Library(
    children=lambda t: list(t.transforms) if type(t).__name__ in CONTAINERS else None,
    layout_only=lambda t: type(t).__name__ in LAYOUT_ONLY,
    opened=lambda t: type(t).__name__ == "Compose",
    group=_container, leaf=_leaf, describe=describe)


# ----- one transform --------------------------------------------------------------------
def transform_to_op(transform: Any, notes: list[str] | None = None) -> tuple[str, dict, float]:
    """(op name, params, p) for one torchvision v2 transform; ValueError with the reason when no
    op expresses it."""
    notes = [] if notes is None else notes
    name = type(transform).__name__
    inverse = INVERSES.get(name)
    if inverse is None:
        hint = f"; the nearest op is {_NEAREST[name]}" if name in _NEAREST else ""
        raise ValueError(f"no workbench op runs v2.{name}{hint}; see workbench.list_ops() and docs/ops.md")
    op, params, p = inverse(transform, notes)
    return op, params, float(p)


def _interpolation(t: Any, op: str) -> str:
    mode = getattr(t, "interpolation", None)
    name = str(getattr(mode, "value", mode)).lower()
    if name not in ("bilinear", "nearest"):
        raise ValueError(f"interpolation={name.upper()}: {op} takes interpolation 'bilinear' or 'nearest'")
    return name


def _zero_fill(t: Any, op: str) -> None:
    fill = getattr(t, "fill", 0)
    values = fill if isinstance(fill, (list, tuple)) else [fill]
    if isinstance(fill, dict) or any(v not in (0, 0.0, None) for v in values):
        raise ValueError(f"fill={fill!r}: {op} fills the uncovered area with 0")


def _no_center(t: Any, op: str) -> None:
    if getattr(t, "center", None) is not None:
        raise ValueError(f"center={t.center}: {op} turns about the image centre")


def _pair(value: Any) -> list[float]:
    return [float(value[0]), float(value[1])]


def _size(value: Any, op: str) -> list[int]:
    if isinstance(value, numbers.Integral):
        return [int(value), int(value)]
    value = list(value)
    if len(value) == 1:
        return [int(value[0]), int(value[0])]
    return [int(value[0]), int(value[1])]


def _resized_crop(t, notes):
    if not t.antialias:
        notes.append("v2.RandomResizedCrop: antialias=False; the workbench's RandomResizedCrop resamples as Kornia")
    return "RandomResizedCrop", {"size": _size(t.size, "RandomResizedCrop"), "scale": _pair(t.scale),
                                 "ratio": _pair(t.ratio),
                                 "interpolation": _interpolation(t, "RandomResizedCrop")}, 1.0


def _rotation(t, notes):
    if t.expand:
        raise ValueError("expand=True grows the canvas to hold the whole rotated image; Rotate keeps the size")
    _no_center(t, "Rotate")
    _zero_fill(t, "Rotate")
    return "Rotate", {"degrees": _pair(t.degrees), "interpolation": _interpolation(t, "Rotate")}, 1.0


def _affine(t, notes):
    _no_center(t, "Affine")
    _zero_fill(t, "Affine")
    shear = [0.0, 0.0] if t.shear is None else [float(v) for v in t.shear]
    if len(shear) == 4:
        if shear[2:] != [0.0, 0.0]:
            raise ValueError(f"shear={shear} shears along y too; Affine shears along x only (the Shear op takes "
                             "shear_x and shear_y)")
        shear = shear[:2]
    params = {"degrees": _pair(t.degrees), "translate": [0.0, 0.0] if t.translate is None else _pair(t.translate),
              "scale": [1.0, 1.0] if t.scale is None else _pair(t.scale), "shear": shear,
              "interpolation": _interpolation(t, "Affine")}
    if has_param("Affine", "keep_ratio"):
        params["keep_ratio"] = True  # torchvision draws one zoom for both axes
    return "Affine", params, 1.0


def _color_jitter(t, notes):
    kinds = {"brightness": ("Brightness", "factor", [1.0, 1.0]), "contrast": ("Contrast", "factor", [1.0, 1.0]),
             "saturation": ("Saturation", "factor", [1.0, 1.0]), "hue": ("Hue", "shift", [0.0, 0.0])}
    # torchvision keeps None for a factor left out (or 0), else the (min, max) range it draws from.
    ranges = {k: (neutral if getattr(t, k) is None else _pair(getattr(t, k))) for k, (_, _, neutral) in kinds.items()}
    moved = [k for k, (_, _, neutral) in kinds.items() if ranges[k] != neutral]
    if len(moved) == 1:
        op, param, _ = kinds[moved[0]]
        return op, {param: ranges[moved[0]]}, 1.0
    if len(moved) > 1:
        notes.append("v2.ColorJitter: applies its adjustments in a random order per call; ColorJitter applies "
                     "brightness, contrast, saturation, hue in that order")
    return "ColorJitter", ranges, 1.0


def _gaussian_blur(t, notes):
    k = [int(v) for v in t.kernel_size]
    if k[0] != k[1]:
        raise ValueError(f"kernel_size={tuple(k)} is not square; GaussianBlur takes one odd kernel_size")
    # torchvision pads by reflection without repeating the edge pixel, as the op does.
    return "GaussianBlur", {"sigma": _pair(t.sigma), "kernel_size": k[0]}, 1.0


def _erasing(t, notes):
    if t.value is None:
        raise ValueError("value='random' fills with noise; Erase fills with one value")
    if len(set(t.value)) != 1:
        raise ValueError(f"value={t.value} fills each channel with its own value; Erase fills with one value")
    return "Erase", {"scale": _pair(t.scale), "ratio": _pair(t.ratio), "value": float(t.value[0])}, t.p


def _normalize(t, notes):
    def three(values):
        values = [float(v) for v in values]
        return values * 3 if len(values) == 1 else values

    return "Normalize", {"mean": three(t.mean), "std": three(t.std)}, 1.0


def _resize(t, notes):
    size = t.size
    if size is None or len(size) == 1:
        raise ValueError(f"size={size if size is None else size[0]} resizes the short side keeping the aspect ratio "
                         "(max_size bounds the long side); Resize takes an output size (height, width)")
    if not t.antialias:
        notes.append("v2.Resize: antialias=False; imported with antialias off")
    return "Resize", {"size": _size(size, "Resize"), "interpolation": _interpolation(t, "Resize"),
                      "antialias": bool(t.antialias)}, 1.0


def _random_crop(t, notes):
    if t.padding is not None:
        raise ValueError(f"padding={t.padding} pads every image by a margin before cropping; RandomCrop has no "
                         "padding and Pad pads to a fixed size (at a random place)")
    size = _size(t.size, "RandomCrop")
    if not t.pad_if_needed:
        return "RandomCrop", {"size": size}, 1.0
    if t.padding_mode != "constant":
        raise ValueError(f"padding_mode={t.padding_mode!r}: Pad fills with a constant")
    fill = t.fill if isinstance(t.fill, (list, tuple)) else [t.fill]
    if isinstance(t.fill, dict) or len(set(fill)) != 1:
        raise ValueError(f"fill={t.fill!r}: Pad fills all channels with one value")
    return "Pad", {"size": size, "fill": float(fill[0])}, 1.0


def _perspective(t, notes):
    _zero_fill(t, "Perspective")
    return "Perspective", {"distortion": float(t.distortion_scale),
                           "interpolation": _interpolation(t, "Perspective")}, t.p


def _solarize(t, notes):
    threshold = float(t.threshold)
    if threshold > 1.0:
        notes.append(f"v2.RandomSolarize: threshold={threshold:g} is a uint8 level; imported as {threshold:g}/255 "
                     "for images in [0, 1]")
        threshold /= 255.0
    return "Solarize", {"threshold": [threshold, threshold]}, t.p


def _posterize(t, notes):
    return "Posterize", {"bits": [int(t.bits), int(t.bits)]}, t.p


def _sharpness(t, notes):
    f = float(t.sharpness_factor)
    return "Sharpness", {"factor": [f, f]}, t.p


_POLICY_NOTE = ("torchvision picks a policy's ops per image, Kornia (the workbench's reference) per batch, DALI per "
                "image; torchvision's op set also holds Identity, draws magnitudes from {bins} bins and applies "
                "brightness, color, contrast and sharpness as 1 +/- the magnitude")


def _policy_check(t, op: str) -> None:
    mode = str(getattr(t.interpolation, "value", t.interpolation)).lower()
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"interpolation={mode.upper()}: {op} resamples bilinearly")
    if t.fill is not None and any(v not in (0, 0.0, None) for v in (t.fill if isinstance(t.fill, (list, tuple))
                                                                      else [t.fill])):
        raise ValueError(f"fill={t.fill!r}: {op} fills the uncovered area with 0")


def _rand_augment(t, notes):
    _policy_check(t, "RandAugment")
    if t.num_magnitude_bins != 31:
        raise ValueError(f"num_magnitude_bins={t.num_magnitude_bins}: RandAugment's magnitude m means m/30 of each "
                         "range, torchvision's default num_magnitude_bins=31")
    if not 1 <= t.magnitude <= 29:
        raise ValueError(f"magnitude={t.magnitude}: RandAugment takes a magnitude in 1..29")
    # torchvision's op set: Kornia's without invert; translation up to 150/331 of the size.
    ops = {k: v for k, v in RAND_AUGMENT_OPS.items() if k != "invert"}
    ops["translate_x"] = ops["translate_y"] = [-0.4532, 0.4532]
    notes.append("v2.RandAugment: " + _POLICY_NOTE.format(bins=t.num_magnitude_bins) + "; it draws its num_ops ops "
                 "with replacement, RandAugment without")
    return "RandAugment", {"n": int(t.num_ops), "magnitude": int(t.magnitude), "ops": ops}, 1.0


def _trivial_augment(t, notes):
    _policy_check(t, "TrivialAugment")
    # TrivialAugment-wide's ranges: shear 0.99 (44.7 degrees), rotate 135, enhancements 0.99, posterize 2..8;
    # translation is 32 pixels in torchvision, written here as 32/224 of the size (ImageNet crops).
    ops = {"rotate": [-135.0, 135.0], "shear_x": [-44.71, 44.71], "shear_y": [-44.71, 44.71],
           "translate_x": [-0.1429, 0.1429], "translate_y": [-0.1429, 0.1429], "brightness": [0.01, 1.99],
           "contrast": [0.01, 1.99], "color": [0.01, 1.99], "sharpness": [0.01, 1.99], "posterize": [2.0, 8.0],
           "solarize": [0.0, 1.0], "equalize": [], "auto_contrast": []}
    notes.append("v2.TrivialAugmentWide: " + _POLICY_NOTE.format(bins=t.num_magnitude_bins) + "; it translates by up "
                 "to 32 pixels, imported as 32/224 of the size")
    return "TrivialAugment", {"ops": ops}, 1.0


def _auto_augment(t, notes):
    _policy_check(t, "AutoAugment")
    policy = str(getattr(t.policy, "value", t.policy)).lower()
    if policy not in ("imagenet", "cifar10", "svhn"):
        raise ValueError(f"policy={policy!r}: AutoAugment runs 'imagenet', 'cifar10' or 'svhn'")
    notes.append("v2.AutoAugment: picks a sub-policy per image; Kornia's AutoAugment (the workbench's reference) "
                 "per batch, DALI per image; magnitudes are Kornia's tabulation of the same paper policies")
    return "AutoAugment", {"policy": policy}, 1.0


def _p(op: str) -> Callable:
    return lambda t, notes: (op, {}, t.p)


INVERSES: dict[str, Callable[[Any, list], tuple[str, dict, float]]] = {
    "RandomResizedCrop": _resized_crop,
    "RandomHorizontalFlip": _p("HorizontalFlip"),
    "RandomVerticalFlip": _p("VerticalFlip"),
    "RandomRotation": _rotation,
    "RandomAffine": _affine,
    "ColorJitter": _color_jitter,
    "RandomGrayscale": _p("Grayscale"),
    "GaussianBlur": _gaussian_blur,
    "RandomErasing": _erasing,
    "Normalize": _normalize,
    "Resize": _resize,
    "CenterCrop": lambda t, notes: ("CenterCrop", {"size": _size(t.size, "CenterCrop")}, 1.0),
    "RandomCrop": _random_crop,
    "RandomPerspective": _perspective,
    "RandomInvert": _p("Invert"),
    "RandomPosterize": _posterize,
    "RandomSolarize": _solarize,
    "RandomAdjustSharpness": _sharpness,
    "RandomAutocontrast": _p("AutoContrast"),
    "RandomEqualize": _p("Equalize"),
    "RandAugment": _rand_augment,
    "TrivialAugmentWide": _trivial_augment,
    "AutoAugment": _auto_augment,
}
