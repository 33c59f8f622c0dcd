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
from ..runtime.targets import policy_ops


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
    # The top of `random` draws where it is below `hi`: a side in pixels may be 8192, but random
    # chains (tests, fuzzing) stay at sizes the images they run on have, as Size's draws do.
    sample_hi: float | None = None
    # The span the app's slider covers where [lo, hi] is far wider than what people use (a typed
    # value still reaches lo and hi), and its step; None: [lo, hi], and a step fitting that span.
    slider: tuple[float, float] | None = None
    step: float | None = None
    ui: str = field(default="slider", init=False)

    def validate(self, where: str, value: Any) -> float | int:
        v = _number(where, self.name, value, self.integer)
        if not self.lo <= v <= self.hi:
            raise _fail(where, self.name, f"must be in [{self.lo}, {self.hi}], got {show(value)}")
        if self.odd and v % 2 != 1:
            raise _fail(where, self.name, f"must be an odd integer, got {show(value)}")
        return v

    def random(self, rng: np.random.Generator) -> float | int:
        hi = self.hi if self.sample_hi is None else min(self.hi, self.sample_hi)
        if self.integer:
            v = int(rng.integers(int(self.lo), int(hi) + 1))
            if self.odd and v % 2 == 0:
                v = v + 1 if v + 1 <= hi else v - 1
            return v
        return round(float(rng.uniform(self.lo, hi)), 4)

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
    # The app's slider span and step, as for Number; `integer`: whole numbers (the slider steps by 1).
    slider: tuple[float, float] | None = None
    step: float | None = None
    integer: bool = False
    # The top of `random` draws where it is below `hi`, as Number's (sides in pixels).
    sample_hi: float | None = None
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
        hi = self.hi if self.sample_hi is None else min(self.hi, self.sample_hi)
        a, b = sorted(round(float(x), 4) for x in rng.uniform(self.lo, hi, size=2))
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
        >>> choice = Choice("interpolation", "resampling", "bilinear", options=("bilinear", "nearest"))
        >>> choice.validate("Rotate", "nearest")
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


@dataclass(frozen=True)
class PolicyOp:
    """An op an `OpRanges` parameter may name: the bounds of its magnitude range, in `unit`
    (both None when the op takes no magnitude), whether it is applied with a random sign (its
    range is then written [-a, a]) and the range a new entry starts with."""

    name: str
    lo: float | None = None
    hi: float | None = None
    symmetric: bool = False
    default: tuple[float, float] | None = None
    unit: str = ""

    @property
    def has_magnitude(self) -> bool:
        return self.lo is not None


@dataclass(frozen=True)
class OpRanges(Param):
    """An editable op set: {op name: [lo, hi] magnitude range} over the ops in `known`, with
    an empty range [] for ops that take no magnitude (null is read as []). Validation returns
    the entries in `known`'s order, the order in which every backend numbers the ops.

    Example:
        >>> ops = (PolicyOp("rotate", -180.0, 180.0, symmetric=True), PolicyOp("invert"))
        >>> param = OpRanges("ops", "op set", {"invert": []}, known=ops)
        >>> param.validate("RandAugment", {"invert": None, "rotate": [-9, 9]})
        {'rotate': [-9.0, 9.0], 'invert': []}
    """

    known: tuple[PolicyOp, ...] = ()
    ui: str = field(default="op_ranges", init=False)

    def _valid(self) -> str:
        return ", ".join(f"{op.name} [{op.lo:g}, {op.hi:g}]" if op.has_magnitude else f"{op.name} []"
                         for op in self.known)

    def validate(self, where: str, value: Any) -> dict[str, list[float]]:
        from collections.abc import Mapping

        if not isinstance(value, Mapping) or not value:
            raise _fail(where, self.name, f"must map one or more op names to a [lo, hi] magnitude range ([] for "
                                          f"ops without one), from: {self._valid()}; got {show(value)}")
        catalogue = {op.name: op for op in self.known}
        given: dict[str, Any] = {}
        for key, entry in value.items():
            # Plain characters only: the name reaches generated code (see Choice.validate).
            plain = str.__str__(key) if isinstance(key, str) else None
            if plain not in catalogue:
                import difflib

                close = difflib.get_close_matches(str(plain), catalogue, n=1) if plain is not None else []
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise _fail(where, self.name, f"names unknown op {show(key)}{hint}; known ops: {', '.join(catalogue)}")
            if plain in given:
                raise _fail(where, self.name, f"names {plain} twice")
            given[plain] = entry
        out: dict[str, list[float]] = {}
        for op in self.known:
            if op.name in given:
                out[op.name] = self._entry(where, op, given[op.name])
        return out

    def _entry(self, where: str, op: PolicyOp, entry: Any) -> list[float]:
        if not op.has_magnitude:
            if entry is None or (isinstance(entry, (list, tuple)) and not entry):
                return []
            raise _fail(where, self.name, f"entry {op.name!r} takes no magnitude: write [], got {show(entry)}")
        what = f"entry {op.name!r} must be a range [lo, hi] of numbers within [{op.lo:g}, {op.hi:g}]" + (
            f" ({op.unit})" if op.unit else "")
        if isinstance(entry, (str, bytes)) or not isinstance(entry, Sequence) or len(entry) != 2:
            raise _fail(where, self.name, f"{what}, got {show(entry)}")
        try:
            lo, hi = (_number(where, self.name, v, integer=False) for v in entry)
        except ChainError:
            raise _fail(where, self.name, f"{what}, got {show(entry)}") from None
        if lo > hi:
            raise _fail(where, self.name, f"entry {op.name!r} has lo > hi ({lo:g} > {hi:g}); write it as "
                                          f"[{hi:g}, {lo:g}]")
        if lo < op.lo or hi > op.hi:
            raise _fail(where, self.name, f"{what}, got [{lo:g}, {hi:g}]")
        if op.symmetric and lo != -hi:
            a = max(abs(lo), abs(hi))
            raise _fail(where, self.name, f"entry {op.name!r} is applied with a random sign, so its range must be "
                                          f"[-a, a], got [{lo:g}, {hi:g}]; for example [{-a:g}, {a:g}]")
        return [lo, hi]

    def random(self, rng: np.random.Generator) -> dict[str, list[float]]:
        count = int(rng.integers(1, len(self.known) + 1))
        chosen = {int(k) for k in rng.choice(len(self.known), size=count, replace=False)}
        out: dict[str, list[float]] = {}
        for k, op in enumerate(self.known):
            if k not in chosen:
                continue
            if not op.has_magnitude:
                out[op.name] = []
            elif op.symmetric:
                a = round(float(rng.uniform(0.0, op.hi)), 4)
                out[op.name] = [-a, a]
            else:
                out[op.name] = sorted(round(float(v), 4) for v in rng.uniform(op.lo, op.hi, size=2))
        return out

    def describe(self) -> str:
        return f"{self.name}: {self.doc} ({{op: [lo, hi]}} over {self._valid()})"

    def readable_draws(self, row: dict[str, Any], value: dict[str, Any]) -> None:
        """Name the ops a policy step reported by index (see `policy_draws`): the i-th op of the set."""
        policy_draws(row, [[name] for name in value])


def policy_draws(row: dict[str, Any], op_names: list[list[str]]) -> None:
    """Turn a policy step's raw per-sample draws in `row` into readable ones, in place.

    Backends report `policy_choice` (the chosen candidates, by position), `op_applied` (1 per op
    of those that ran) and `op_magnitude` (the value each op used; NaN or absent for ops
    without one); `op_names[c]` names the ops candidate c holds, in order. The row gets `ops`
    (the ops that ran, in order) and `magnitudes` (theirs, None for none), as
    runtime/targets.py's policy_ops reads the raw draws for the targets.
    """
    raw = {key: row.pop(key) for key in ("policy_choice", "op_applied", "op_magnitude") if key in row}
    names, magnitudes = policy_ops({"op_names": op_names}, raw)
    row["ops"] = names
    row["magnitudes"] = [None if math.isnan(m) else m for m in magnitudes]


@dataclass(frozen=True)
class Span(Range):
    """A [lo, hi] range drawn per sample, for parameters that Albumentations draws per image
    and that were one number here before: a single number v is still accepted and read as
    [v, v] (chains saved then keep loading; they are saved back as [v, v]). `integer`: whole
    numbers; `odd`: odd whole numbers (kernel sizes), drawn uniformly among the odd ones.

    Example:
        >>> Span("kernel_size", "kernel sizes", (3, 7), lo=3, hi=31, integer=True, odd=True).validate("MedianBlur", 5)
        [5, 5]
    """

    integer: bool = False
    odd: bool = False

    def validate(self, where: str, value: Any) -> list:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = [value, value]
        kind = "odd integers" if self.odd else ("integers" if self.integer else "numbers")
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
            raise _fail(where, self.name, f"must be a number or a pair [lo, hi] of {kind} within "
                                          f"[{self.lo}, {self.hi}], got {show(value)}")
        a, b = (_number(where, self.name, v, integer=self.integer) for v in value)
        if a > b:
            raise _fail(where, self.name, f"has lo > hi ({a} > {b}); write it as [{b}, {a}]")
        if a < self.lo or b > self.hi:
            raise _fail(where, self.name, f"must lie within [{self.lo}, {self.hi}], got [{a}, {b}]")
        if self.odd and (a % 2 != 1 or b % 2 != 1):
            raise _fail(where, self.name, f"must be odd integers (kernel sizes), got [{a}, {b}]")
        return [a, b]

    def random(self, rng: np.random.Generator) -> list:
        if not self.integer:
            return super().random(rng)
        step = 2 if self.odd else 1
        hi = self.hi if self.sample_hi is None else min(self.hi, self.sample_hi)
        values = list(range(int(self.lo) + (step == 2 and int(self.lo) % 2 == 0), int(hi) + 1, step))
        picks = rng.choice(len(values), size=2, replace=len(values) < 2)
        return sorted(int(values[int(k)]) for k in picks)

    def describe(self) -> str:
        kind = "odd integers" if self.odd else ("integers" if self.integer else "numbers")
        return (f"{self.name}: {self.doc} (range [lo, hi] of {kind} within [{self.lo}, {self.hi}], drawn per "
                f"sample; one number v means [v, v])")


@dataclass(frozen=True)
class Sides(Param):
    """One or more side lengths in pixels (whole numbers), one of which is drawn per sample: the
    shorter sides of torchvision's RandomShortestSize. Kept in the order given.

    Example:
        >>> Sides("sizes", "shorter side, one drawn per sample", (256,)).validate("RandomShortestSize", [480, 512])
        [480, 512]
    """

    lo: int = 1
    hi: int = 8192
    ui: str = field(default="sides", init=False)

    def validate(self, where: str, value: Any) -> list[int]:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
            raise _fail(where, self.name, f"must be a list of one or more whole numbers of pixels in "
                                          f"[{self.lo}, {self.hi}], got {show(value)}")
        out = [_number(where, self.name, v, integer=True) for v in value]
        if not all(self.lo <= v <= self.hi for v in out):
            raise _fail(where, self.name, f"sides must be in [{self.lo}, {self.hi}] pixels, got {show(value)}")
        return out

    def random(self, rng: np.random.Generator) -> list[int]:
        # Sides the small images that random chains run on have (as Size's draws).
        return sorted(int(v) for v in rng.integers(8, 64, size=int(rng.integers(1, 4))))

    def describe(self) -> str:
        return f"{self.name}: {self.doc} (a list of whole numbers of pixels in [{self.lo}, {self.hi}])"


@dataclass(frozen=True)
class Thresholds(Sides):
    """One or more numbers at least `lo`, one of which is drawn per try: RandomIoUCrop's minimum IoUs
    (a value >= 1 stands for "leave the image as it is"). Kept in the order given; the app's control
    is Sides' (comma-separated numbers).

    Example:
        >>> Thresholds("sampler_options", "minimum IoUs", (0.0, 1.0)).validate("RandomIoUCrop", [0.5, 2])
        [0.5, 2.0]
    """

    lo: float = 0.0
    hi: float = 1e6

    def validate(self, where: str, value: Any) -> list[float]:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
            raise _fail(where, self.name, f"must be a list of one or more numbers in [{self.lo}, {self.hi}], got "
                                          f"{show(value)}")
        out = [float(_number(where, self.name, v, integer=False)) for v in value]
        if not all(self.lo <= v <= self.hi for v in out):
            raise _fail(where, self.name, f"values must be in [{self.lo}, {self.hi}], got {show(value)}")
        return out

    def random(self, rng: np.random.Generator) -> list[float]:
        return sorted(round(float(v), 2) for v in rng.uniform(0.0, 0.9, size=int(rng.integers(1, 4))))

    def describe(self) -> str:
        return f"{self.name}: {self.doc} (a list of numbers in [{self.lo}, {self.hi}])"
