"""Parameter kinds of an op spec.

Each kind validates and normalises a user value (so only checked literals reach
generated code), knows its default, tells the UI which control fits it, and can draw
a random valid value (used by property tests and by "randomise" in the app).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import ChainError, show


def _fail(where: str, name: str, message: str) -> ChainError:
    return ChainError(f"{where}: parameter '{name}' {message}")


def _number(where: str, name: str, value: Any, integer: bool) -> float | int:
    """Convert once (a value must not change between check and use) to a plain float/int."""
    kind = "an integer" if integer else "a number"
    # bool is an int subclass: True would silently pass as 1.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(where, name, f"must be {kind}, got {show(value)} ({type(value).__name__})")
    try:
        f = float(value)
    except (OverflowError, TypeError, ValueError):
        raise _fail(where, name, f"must be {kind} of ordinary size, got {show(value)}") from None
    if not math.isfinite(f):
        raise _fail(where, name, f"must be finite, got {show(f)}")
    if integer:
        if not f.is_integer():
            raise _fail(where, name, f"must be an integer, got {show(f)}")
        return int(f)
    return f


@dataclass(frozen=True)
class Param:
    """Common fields: name, one-line doc, default, and the UI control hint."""

    name: str
    doc: str
    default: Any
    ui: str = field(default="", init=False)

    def validate(self, where: str, value: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def random(self, rng: np.random.Generator) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name}: {self.doc}"


@dataclass(frozen=True)
class Number(Param):
    """A single number within [lo, hi].

    Example:
        >>> Number("kernel", "kernel size", 5, lo=1, hi=31, integer=True).validate("GaussianBlur", 7)
        7
    """

    lo: float = -math.inf
    hi: float = math.inf
    integer: bool = False
    odd: bool = False
    ui: str = field(default="slider", init=False)

    def validate(self, where: str, value: Any) -> float | int:
        v = _number(where, self.name, value, self.integer)
        if not self.lo <= v <= self.hi:
            raise _fail(where, self.name, f"must be in [{self.lo}, {self.hi}], got {show(value)}")
        if self.odd and v % 2 != 1:
            raise _fail(where, self.name, f"must be an odd integer, got {show(value)}")
        return v

    def random(self, rng: np.random.Generator) -> float | int:
        if self.integer:
            v = int(rng.integers(int(self.lo), int(self.hi) + 1))
            if self.odd and v % 2 == 0:
                v = v + 1 if v + 1 <= self.hi else v - 1
            return v
        return round(float(rng.uniform(self.lo, self.hi)), 4)

    def describe(self) -> str:
        return f"{self.name}: {self.doc} (number in [{self.lo}, {self.hi}])"


@dataclass(frozen=True)
class Range(Param):
    """A [lo, hi] pair from which a value is drawn uniformly per sample; lo <= hi.

    Example:
        >>> Range("degrees", "angle", (-10.0, 10.0), lo=-180, hi=180).validate("Rotate", [-20, 20])
        [-20.0, 20.0]
    """

    lo: float = -math.inf
    hi: float = math.inf
    ui: str = field(default="range_slider", init=False)

    def validate(self, where: str, value: Any) -> list[float]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
            raise _fail(where, self.name, f"must be a pair [lo, hi] within [{self.lo}, {self.hi}], got {show(value)}")
        a = _number(where, self.name, value[0], integer=False)
        b = _number(where, self.name, value[1], integer=False)
        if a > b:
            raise _fail(where, self.name, f"has lo > hi ({a} > {b}); write it as [{b}, {a}]")
        if a < self.lo or b > self.hi:
            raise _fail(where, self.name, f"must lie within [{self.lo}, {self.hi}], got [{a}, {b}]")
        return [a, b]

    def random(self, rng: np.random.Generator) -> list[float]:
        a, b = sorted(round(float(x), 4) for x in rng.uniform(self.lo, self.hi, size=2))
        return [a, b]

    def describe(self) -> str:
        return f"{self.name}: {self.doc} (range [lo, hi] within [{self.lo}, {self.hi}])"


@dataclass(frozen=True)
class Size(Param):
    """An output size [height, width] in pixels.

    Example:
        >>> Size("size", "output size", (224, 224)).validate("Resize", [128, 96])
        [128, 96]
    """

    lo: int = 1
    hi: int = 8192
    ui: str = field(default="size", init=False)

    def validate(self, where: str, value: Any) -> list[int]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
            raise _fail(where, self.name, f"must be [height, width] in pixels, got {show(value)}")
        out = [_number(where, self.name, v, integer=True) for v in value]
        if not all(self.lo <= v <= self.hi for v in out):
            raise _fail(where, self.name, f"sides must be in [{self.lo}, {self.hi}] pixels, got {show(value)}")
        return out

    def random(self, rng: np.random.Generator) -> list[int]:
        return [int(v) for v in rng.integers(8, 64, size=2)]

    def describe(self) -> str:
        return f"{self.name}: {self.doc} ([height, width] in pixels)"


@dataclass(frozen=True)
class Floats(Param):
    """A fixed-length list of numbers, for example a per-channel mean.

    Example:
        >>> Floats("std", "per-channel std", (0.2, 0.2, 0.2), lo=1e-6, hi=1e3).validate("Normalize", [1, 1, 1])
        [1.0, 1.0, 1.0]
    """

    length: int = 3
    lo: float = -math.inf
    hi: float = math.inf
    ui: str = field(default="floats", init=False)

    def validate(self, where: str, value: Any) -> list[float]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != self.length:
            raise _fail(where, self.name, f"must be a list of {self.length} numbers, got {show(value)}")
        out = [_number(where, self.name, v, integer=False) for v in value]
        if not all(self.lo <= v <= self.hi for v in out):
            raise _fail(where, self.name, f"values must be in [{self.lo}, {self.hi}], got {show(value)}")
        return out

    def random(self, rng: np.random.Generator) -> list[float]:
        lo, hi = max(self.lo, 0.05), min(self.hi, 1.0)
        return [round(float(v), 4) for v in rng.uniform(lo, hi, size=self.length)]

    def describe(self) -> str:
        return f"{self.name}: {self.doc} ({self.length} numbers in [{self.lo}, {self.hi}])"


@dataclass(frozen=True)
class Choice(Param):
    """One of a fixed set of strings.

    Example:
        >>> Choice("interpolation", "resampling", "bilinear", options=("bilinear", "nearest")).validate("Rotate", "nearest")
        'nearest'
    """

    options: tuple[str, ...] = ()
    ui: str = field(default="dropdown", init=False)

    def validate(self, where: str, value: Any) -> str:
        # Compare the plain characters and return our own copy: a str subclass could fake
        # equality or its text, and the value ends up in generated code.
        plain = str.__str__(value) if isinstance(value, str) else None
        if plain not in self.options:
            raise _fail(where, self.name, f"must be one of {list(self.options)}, got {show(value)}")
        return self.options[self.options.index(plain)]

    def random(self, rng: np.random.Generator) -> str:
        return str(self.options[int(rng.integers(len(self.options)))])

    def describe(self) -> str:
        return f"{self.name}: {self.doc} (one of {', '.join(self.options)})"


@dataclass(frozen=True)
class Flag(Param):
    """A yes/no switch.

    Example:
        >>> Flag("antialias", "low-pass before shrinking", True).validate("Resize", False)
        False
    """

    ui: str = field(default="checkbox", init=False)

    def validate(self, where: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise _fail(where, self.name, f"must be true or false, got {show(value)}")
        return value

    def random(self, rng: np.random.Generator) -> bool:
        return bool(rng.integers(2))
