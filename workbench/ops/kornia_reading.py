"""Reading a `kornia.augmentation` module's settings (Kornia 0.9 attributes), for the ops' Kornia
inverses (`OpSpec.from_kornia`). Kornia keeps constructor ranges on a module's `_param_generator`
(as given, before they become float32 samplers) and the rest in `flags`. Nothing here imports
Kornia: the modules are read as plain objects.

Example:
    >>> bound(0.2, 1.0)
    [0.8, 1.2]
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np



def plain(value: Any) -> Any:
    """Tensors, tuples and numbers as plain Python floats / lists of floats."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    return value


def decimal(value: Any, scale: float = 1.0) -> float:
    """`value * scale` with the fewest digits that give `value` back (Kornia keeps some ranges as
    float32 tensors: 0.1 comes back as 0.10000000149, written here as 0.1 again)."""
    is32 = getattr(value, "dtype", None) is not None and "float32" in str(value.dtype)
    v = float(value.item() if hasattr(value, "item") else value)
    for digits in range(1, 18):
        d = float(f"{v * scale:.{digits}g}")
        if (np.float32(d / scale) == np.float32(v)) if is32 else math.isclose(d / scale, v, rel_tol=1e-13,
                                                                               abs_tol=1e-15):
            return d
    return v * scale


def bound(value: Any, center: float, low: float = 0.0) -> list[float]:
    """Kornia's `_range_bound`: a number f is [max(center - f, low), center + f], a pair is itself."""
    value = plain(value)
    if isinstance(value, list):
        if len(value) != 2:
            raise ValueError(f"expected a number or a (min, max) pair, got {value}")
        return [float(value[0]), float(value[1])]
    return [max(center - value, low), center + value]


def flag(module: Any, key: str, default: Any = None) -> Any:
    return getattr(module, "flags", {}).get(key, default)


def gen(module: Any) -> Any:
    return module._param_generator


def sampler(module: Any, key: str) -> Any:
    """The value given for `key` to a PlainUniformGenerator-based module, as Kornia reads it."""
    for value, name, center, bounds in gen(module).samplers:
        if name == key:
            if isinstance(plain(value), list):
                return plain(value)
            return bound(value, center, bounds[0] if bounds else -math.inf)
    raise KeyError(key)


def interpolation(module: Any, op: str) -> str:
    resample = flag(module, "resample")
    name = getattr(resample, "name", str(resample)).lower()
    if name not in ("bilinear", "nearest"):
        raise ValueError(f"resample={name.upper()}: {op} takes interpolation 'bilinear' or 'nearest'")
    return name


def align(module: Any, op: str, notes: list[str]) -> None:
    if flag(module, "align_corners") is True:
        notes.append(f"K.{type(module).__name__}: align_corners=True samples on corner-aligned pixel grids; {op} "
                     "uses align_corners=False (pixel centres, as the other backends): a sub-pixel difference")


def zeros_padding(module: Any, op: str) -> None:
    mode = flag(module, "padding_mode")
    name = getattr(mode, "name", str(mode)).lower()
    if mode is not None and name != "zeros":
        raise ValueError(f"padding_mode={name!r} fills the uncovered corners from the image; {op} fills them with "
                         "zeros (padding_mode='zeros')")
    fill = flag(module, "fill_value")
    if fill is not None and any(v != 0.0 for v in as_list(plain(fill))):
        raise ValueError(f"fill_value={plain(fill)}: {op} fills the uncovered corners with 0")


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def pair_of(value: Any, what: str) -> list[float]:
    value = plain(value)
    if isinstance(value, list) and len(value) == 2:
        return value
    raise ValueError(f"{what} must be a (min, max) pair, got {value}")


def size(value: Any, what: str = "size") -> list[int]:
    value = plain(value)
    if isinstance(value, list) and len(value) == 2:
        return [int(v) for v in value]
    if isinstance(value, float):
        return [int(value), int(value)]
    raise ValueError(f"{what} must be (height, width), got {value}")


def blur_border(module: Any, op: str, notes: list[str]) -> None:
    border = flag(module, "border_type")
    name = getattr(border, "name", str(border)).lower()
    if border is not None and name != "reflect":
        notes.append(f"K.{type(module).__name__}: border_type={name!r}; {op} mirrors the border (border_type="
                     "'reflect', as OpenCV and DALI): only pixels within the kernel's reach of the edge differ")


def arguments(*params: str, when: dict | None = None, **renamed: str):
    """The inverse of a lowering that passes the op's parameters to a workbench module as they are
    (`params`; `renamed`: op parameter -> the argument it goes to): read from the arguments the
    module was built with (its `built_with`, runtime/kornia_modules/arguments.py). None, when an
    argument in `when` has another value (the module is then another op's).

    Example:
        >>> read = arguments("size", interpolation="resample", when={"longest": True})
        >>> read({"size": (4, 6), "resample": "nearest", "longest": True, "p": 1.0}, [])
        {'size': [4.0, 6.0], 'interpolation': 'nearest'}
        >>> read({"size": (4, 6), "resample": "nearest", "longest": False, "p": 1.0}, []) is None
        True
    """
    def read(built, notes):
        if when and any(built.get(name) != value for name, value in when.items()):
            return None
        return {param: plain(built[renamed.get(param, param)]) for param in (*params, *renamed)}

    return read
