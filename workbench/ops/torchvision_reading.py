"""Reading a `torchvision.transforms.v2` transform's settings (torchvision 0.26-0.28 attributes),
for the ops' torchvision inverses (`OpSpec.from_torchvision`, an `Inverse`). Nothing here
imports torchvision: the transforms are read as plain objects.

Value conventions: the workbench works on images in [0, 1] (after ToImage/ToDtype(float,
scale=True)).

Example:
    >>> class Flip:
    ...     interpolation = "bilinear"
    >>> interpolation(Flip(), "Rotate")
    'bilinear'
"""
from __future__ import annotations

import numbers
from typing import Any


def interpolation(t: Any, op: str, resize: bool = False) -> str:
    """The transform's interpolation as the op names it; ValueError for one the op lacks. A
    `resize` samples at pixel centres (torchvision's NEAREST_EXACT); torchvision's NEAREST resize
    reads pixel floor(x * scale) instead (PyTorch's legacy nearest), half a pixel off. Warps
    (rotations, affine, perspective, elastic) sample at pixel centres in either mode."""
    mode = getattr(t, "interpolation", None)
    name = str(getattr(mode, "value", mode)).lower()
    if resize and name == "nearest":
        raise ValueError(f"interpolation=NEAREST: torchvision's nearest resize reads pixel floor(x * scale), half a "
                         f"pixel off the pixel centres {op}'s nearest samples (torchvision's NEAREST_EXACT: use that)")
    if name == "nearest-exact":
        name = "nearest"
    if name not in ("bilinear", "nearest") and not (resize and name == "bicubic"):
        raise ValueError(f"interpolation={name.upper()}: {op} takes interpolation 'bilinear' or 'nearest'"
                         + (" or 'bicubic'" if resize else "") + "; the nearest op is the same with 'bilinear'")
    return name


def zero_fill(t: Any, op: str) -> None:
    """ValueError unless the transform fills uncovered pixels with 0, as the op does."""
    fill = getattr(t, "fill", 0)
    values = fill if isinstance(fill, (list, tuple)) else [fill]
    if isinstance(fill, dict) or any(v not in (0, 0.0, None) for v in values):
        raise ValueError(f"fill={fill!r}: {op} fills the uncovered area with 0")


def no_center(t: Any, op: str) -> None:
    """ValueError unless the transform turns about the image centre."""
    if getattr(t, "center", None) is not None:
        raise ValueError(f"center={t.center}: {op} turns about the image centre")


def pair(value: Any) -> list[float]:
    """A (min, max) pair as floats."""
    return [float(value[0]), float(value[1])]


def size(value: Any) -> list[int]:
    """torchvision's size (an int, [s] or (h, w)) as [height, width]."""
    if isinstance(value, numbers.Integral):
        return [int(value), int(value)]
    value = list(value)
    if len(value) == 1:
        return [int(value[0]), int(value[0])]
    return [int(value[0]), int(value[1])]


# v2.ColorJitter's kinds: the op each one alone is, its parameter, and the range that changes nothing.
JITTER_KINDS = {"brightness": ("Brightness", "factor", [1.0, 1.0]), "contrast": ("Contrast", "factor", [1.0, 1.0]),
                "saturation": ("Saturation", "factor", [1.0, 1.0]), "hue": ("Hue", "shift", [0.0, 0.0])}


def jitter_ranges(t: Any) -> tuple[dict[str, list[float]], list[str]]:
    """(each kind's range, the kinds that change the image) of a v2.ColorJitter: torchvision keeps
    None for a factor left out (or 0), else the (min, max) range it draws from."""
    ranges = {k: (neutral if getattr(t, k) is None else pair(getattr(t, k)))
              for k, (_, _, neutral) in JITTER_KINDS.items()}
    return ranges, [k for k, (_, _, neutral) in JITTER_KINDS.items() if ranges[k] != neutral]
