"""The chain model: Step and ChainModel, their validation and the dict/JSON/YAML round trip
with a format version.

This is the bottom of the house beside the op registry: it imports nothing that runs a chain.
The verbs users call on a chain (run, export, estimate, the importers) live on `Chain`
(workbench/chain.py), which adds them to this model from above.

Example:
    >>> chain = ChainModel.from_dict({"seed": 7, "steps": [{"op": "HorizontalFlip", "p": 0.5}]})
    >>> ChainModel.from_dict(chain.to_dict()) == chain
    True
"""
from __future__ import annotations

import copy
import json
import math
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import ChainError, show
from .ops import GROUPS, get_spec, why_not_in_group
from .ops.groups import MAX_DEPTH, changes_size

FORMAT_NAME = "augmentation-workbench/chain"
# Version 2 added groups (OneOf, SomeOf, Sequential), version 3 the target settings; a chain is
# written with the lowest version that holds it, so older workbenches read what they can.
FORMAT_VERSION = 3
MAX_STEPS = 256
MAX_SEED = 2**31 - 1
# Chains are a few kB; a larger file is not a chain and is refused before parsing.
MAX_FILE_BYTES = 1_000_000

_STEP_KEYS = {"op", "params", "p", "enabled", "steps"}
_CHAIN_KEYS = {"format", "version", "seed", "steps", "targets"}
_TARGET_KEYS = ("min_visibility", "mask_fill", "mark_erased", "flip_pairs", "keypoints_per_instance")
# Mask values are label ids: 16 bits hold every dataset's classes.
MAX_MASK_VALUE = 65535


def _check_p(where: str, spec, value: Any) -> float:
    try:
        p = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
    except (OverflowError, TypeError, ValueError):
        p = math.nan
    if not 0.0 <= p <= 1.0:  # NaN fails this too
        raise ChainError(f"{where}: p must be a number in [0, 1], got {show(value)}")
    if spec.always_applies and p != 1.0:
        raise ChainError(f"{where}: {spec.name} must apply to every sample ({spec.always_applies_why}), "
                         f"so p must be 1.0, got {show(value)}")
    return p


def _check_seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= int(value) <= MAX_SEED:
        raise ChainError(f"seed must be an integer in [0, {MAX_SEED}], got {show(value)}")
    return int(value)


def _mask_value(where: str, value: Any, allow_none: bool) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 0 <= int(value) <= MAX_MASK_VALUE:
        extra = " or null (leave masks alone)" if allow_none else ""
        raise ChainError(f"{where} must be a mask label, an integer in [0, {MAX_MASK_VALUE}]{extra}, got {show(value)}")
    return int(value)


@dataclass
class TargetSettings:
    """How a chain treats masks, boxes and keypoints (chain.targets), beside what each op does.

    `min_visibility`: a box is dropped (its label with it) when a step leaves less than this
    fraction of its area on the image (Albumentations' min_visibility); boxes with no area left are
    always dropped. `mask_fill`: the mask label where a warp uncovers pixels. `mark_erased`: the
    mask label written where an occlusion step (Erase, CoarseDropout) erases pixels; None leaves
    masks alone. `flip_pairs`: keypoint ids that swap when a step mirrors the image ([[0, 1]]: the
    left eye becomes the right one). `keypoints_per_instance`: an image's keypoints come in
    instances of this many, one after another (COCO's person: 17), and flip_pairs swap within each;
    0 (the default): the image's whole list is one instance.

    Example:
        >>> TargetSettings.from_dict({"min_visibility": 0.3, "flip_pairs": [[0, 1]]}).to_dict()
        {'min_visibility': 0.3, 'flip_pairs': [[0, 1]]}
    """

    min_visibility: float = 0.0
    mask_fill: int = 0
    mark_erased: int | None = None
    flip_pairs: list[list[int]] = field(default_factory=list)
    keypoints_per_instance: int = 0

    @classmethod
    def from_dict(cls, data: Any) -> "TargetSettings":
        if not isinstance(data, Mapping):
            raise ChainError(f"'targets' must be a mapping of {', '.join(_TARGET_KEYS)}, got {type(data).__name__}")
        unknown = set(data) - set(_TARGET_KEYS)
        if unknown:
            raise ChainError(f"targets: unknown key(s) {sorted(map(str, unknown))}; the target settings are "
                             f"{', '.join(_TARGET_KEYS)}")
        visibility = data.get("min_visibility", 0.0)
        if isinstance(visibility, bool) or not isinstance(visibility, numbers.Real) or not 0.0 <= visibility <= 1.0:
            raise ChainError(f"targets: min_visibility must be a number in [0, 1] (the least fraction of a box's area "
                             f"left on the image), got {show(visibility)}")
        pairs = data.get("flip_pairs", [])
        ok = isinstance(pairs, list) and all(
            isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
                isinstance(k, numbers.Integral) and not isinstance(k, bool) and 0 <= k < 10_000 for k in pair)
            and pair[0] != pair[1] for pair in pairs)
        if not ok:
            raise ChainError(f"targets: flip_pairs must be a list of [left id, right id] pairs of different keypoint "
                             f"ids (integers >= 0), e.g. [[0, 1], [3, 4]], got {show(pairs)}")
        ids = [int(k) for pair in pairs for k in pair]
        if len(set(ids)) != len(ids):
            raise ChainError(f"targets: a keypoint id appears in two flip_pairs ({show(pairs)}); each id swaps with "
                             "one other")
        per_instance = data.get("keypoints_per_instance", 0)
        if (isinstance(per_instance, bool) or not isinstance(per_instance, numbers.Integral)
                or not 0 <= per_instance <= 10_000):
            raise ChainError(f"targets: keypoints_per_instance must be an integer in [0, 10000] (0: one instance per "
                             f"image), got {show(per_instance)}")
        if per_instance and ids and max(ids) >= per_instance:
            raise ChainError(f"targets: flip_pairs name keypoint id {max(ids)}, but an instance has "
                             f"keypoints_per_instance={per_instance} keypoints (ids 0 to {per_instance - 1})")
        return cls(min_visibility=float(visibility), keypoints_per_instance=int(per_instance),
                   mask_fill=_mask_value("targets: mask_fill", data.get("mask_fill", 0), allow_none=False),
                   mark_erased=_mask_value("targets: mark_erased", data.get("mark_erased"), allow_none=True),
                   flip_pairs=[[int(a), int(b)] for a, b in pairs])

    def to_dict(self) -> dict[str, Any]:
        """The settings that differ from the defaults (an empty dict for a chain that sets none)."""
        default = TargetSettings()
        return {k: copy.deepcopy(getattr(self, k)) for k in _TARGET_KEYS if getattr(self, k) != getattr(default, k)}


@dataclass
class Step:
    """One op of a chain with its parameters, probability and on/off switch; or a group
    (OneOf, SomeOf, Sequential) whose `steps` are its children (see workbench/ops/groups.py).

    Example:
        >>> Step.create("Rotate", degrees=[-20, 20]).params
        {'degrees': [-20.0, 20.0], 'interpolation': 'bilinear'}
        >>> group = Step.create("OneOf", steps=[Step.create("Rotate"), Step.create("GaussianBlur")])
        >>> [s.op for s in group.steps], group.params
        (['Rotate', 'GaussianBlur'], {'weights': []})
    """

    op: str
    params: dict[str, Any] = field(default_factory=dict)
    p: float = 1.0
    enabled: bool = True
    steps: list["Step"] = field(default_factory=list)

    @classmethod
    def create(cls, op: str, p: float | None = None, enabled: bool = True, steps: list | None = None,
               **params: Any) -> "Step":
        """A validated step; parameters left out take the spec's defaults. A group takes its
        children as `steps` (Steps or step dicts)."""
        spec = get_spec(op)
        data = {"op": op, "params": params, "p": spec.default_p if p is None else p, "enabled": enabled}
        if steps is not None:
            data["steps"] = [s.to_dict() if isinstance(s, Step) else s for s in steps]
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any, index: int | str = 1, depth: int = 0) -> "Step":
        if not isinstance(data, Mapping):
            raise ChainError(f"step {index}: must be a mapping with 'op' and 'params', got {type(data).__name__}")
        unknown = set(data) - _STEP_KEYS
        if unknown:
            raise ChainError(f"step {index}: unknown key(s) {sorted(map(str, unknown))}; a step has "
                             f"{sorted(_STEP_KEYS)}")
        if "op" not in data:
            raise ChainError(f"step {index}: missing 'op' (the op's name, see workbench.list_ops(), or a group: "
                             f"{', '.join(GROUPS)})")
        spec = get_spec(data["op"]) if isinstance(data["op"], str) else None
        if spec is None:
            raise ChainError(f"step {index}: 'op' must be an op name, got {show(data['op'])}")
        where = f"step {index} ({spec.name})"
        children = _children(where, spec, data, index, depth)
        params = data.get("params", {}) or {}
        params = (spec.validate_params(where, params, children=len(children)) if spec.is_group
                  else spec.validate_params(where, params))
        if params.get("weights") and sum(w for w, c in zip(params["weights"], children) if c.enabled) <= 0:
            raise ChainError(f"{where}: the enabled children's weights sum to 0; give one of them a weight > 0")
        p = _check_p(where, spec, data.get("p", spec.default_p))
        enabled = data.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ChainError(f"{where}: 'enabled' must be true or false, got {show(enabled)}")
        return cls(op=spec.name, params=params, p=p, enabled=enabled, steps=children)

    def to_dict(self) -> dict[str, Any]:
        out = {"op": self.op, "params": copy.deepcopy(self.params), "p": self.p, "enabled": self.enabled}
        if self.spec.is_group:
            out["steps"] = [s.to_dict() for s in self.steps]
        return out

    @property
    def spec(self):
        return get_spec(self.op)

    @property
    def is_group(self) -> bool:
        return self.spec.is_group

    def enabled_steps(self) -> list[tuple[int, "Step"]]:
        """A group's (index, child) of the children that run, in order."""
        return [(i, s) for i, s in enumerate(self.steps) if s.enabled]

    def ops(self) -> list["Step"]:
        """This step, or for a group every enabled op step inside it (at any depth), in order."""
        if not self.is_group:
            return [self]
        return [op for _, child in self.enabled_steps() for op in child.ops()]

    def draws_sizes(self) -> bool:
        """Whether the samples may leave this step at sizes of their own: an op that draws each
        sample's size (sizes_per_sample), or a group with a child that changes the size (which
        children a sample runs decides its size).

        Example:
            >>> Step.create("OneOf", steps=[Step.create("Resize", size=[8, 8]), Step.create("Invert")]).draws_sizes()
            True
        """
        if not self.is_group:
            return self.spec.sizes_per_sample
        return any(op.spec.sizes_per_sample or changes_size(op.spec) for op in self.ops())

    def size_bounds(self, height: int, width: int) -> tuple[tuple[int, int], tuple[int, int]]:
        """(smallest, largest) image size after this step, for an input of height x width: the op's
        (OpSpec.size_bounds); for a group, the envelope of its children run in turn, each of which
        may not run for a sample (so the input's size is within it).

        Example:
            >>> Step.create("OneOf", steps=[Step.create("Resize", size=[8, 40])]).size_bounds(20, 20)
            ((8, 20), (20, 40))
        """
        if not self.is_group:
            return tuple(tuple(int(v) for v in size) for size in self.spec.size_bounds(self.params, height, width))
        smallest = largest = (height, width)
        for _, child in self.enabled_steps():
            # OneOf runs one child on the group's input; SomeOf and Sequential run them in turn.
            low_in, high_in = ((height, width), (height, width)) if self.spec.kind == "one" else (smallest, largest)
            low, high = child.size_bounds(*low_in)[0], child.size_bounds(*high_in)[1]
            smallest = (min(smallest[0], low[0]), min(smallest[1], low[1]))
            largest = (max(largest[0], high[0]), max(largest[1], high[1]))
        return smallest, largest

    def count(self) -> int:
        """Steps in this step: 1, or a group plus everything inside it."""
        return 1 + sum(s.count() for s in self.steps)

    def describe(self) -> str:
        """One line: the op, its parameters and p, as shown in comments and the UI."""
        args = " ".join(f"{k}={v}" for k, v in self.params.items())
        state = "" if self.enabled else "  [disabled]"
        inner = f" of {len(self.steps)} step(s)" if self.is_group else ""
        return f"{self.op}({args}){inner} p={self.p:g}{state}".replace("() ", " ").replace("()", "")

    def outline(self, label: str) -> list[str]:
        """`describe()` lines of this step and, indented, of its children, numbered from `label`
        (children as 3.1, 3.2, ...), as the exports' header comments show the chain.

        Example:
            >>> Step.create("Sequential", steps=[Step.create("Invert")]).outline("2")
            ['2. Sequential of 1 step(s) p=1', '  2.1. Invert p=0.5']
        """
        lines = [f"{label}. {self.describe()}"]
        for k, child in enumerate(self.steps, start=1):
            lines += ["  " + line for line in child.outline(f"{label}.{k}")]
        return lines


def _children(where: str, spec, data: Mapping, index, depth: int) -> list[Step]:
    """A group's validated children (none for an op)."""
    raw = data.get("steps")
    if not spec.is_group:
        if raw is not None:
            raise ChainError(f"{where}: only groups ({', '.join(GROUPS)}) hold 'steps'; {spec.name} is an op")
        return []
    if depth + 1 > MAX_DEPTH:
        raise ChainError(f"{where}: groups nest at most {MAX_DEPTH} deep")
    if not isinstance(raw, list) or not raw:
        raise ChainError(f"{where}: a group needs a non-empty list 'steps' of child steps, got {show(raw)}")
    if len(raw) > MAX_STEPS:
        raise ChainError(f"{where}: {len(raw)} child steps; at most {MAX_STEPS} are allowed")
    children = [s if isinstance(s, Step) else Step.from_dict(s, f"{index}.{k}", depth + 1)
                for k, s in enumerate(raw, start=1)]
    if not any(child.enabled for child in children):
        raise ChainError(f"{where}: every child step is disabled; enable one, or disable the group")
    for k, child in enumerate(children, start=1):
        for op in [child] if not child.is_group else child.ops():
            why = why_not_in_group(op.spec)
            if why:
                raise ChainError(f"step {index}.{k} ({op.op}) cannot be inside a group: {why}. Move it out of "
                                 f"{spec.name} (before or after the group)")
    return children


@dataclass(eq=False)
class ChainModel:
    """An ordered list of steps plus the seed that makes its random draws reproducible: what a
    chain is, without what can be done with it (see `workbench.Chain`).

    Example:
        >>> chain = ChainModel(seed=3).add("Rotate", degrees=[-10, 10]).add("Brightness", factor=[0.9, 1.1])
        >>> [s.op for s in chain.steps]
        ['Rotate', 'Brightness']
    """

    seed: int = 0
    steps: list[Step] = field(default_factory=list)
    targets: TargetSettings = field(default_factory=TargetSettings)

    def __post_init__(self) -> None:
        self.seed = _check_seed(self.seed)
        settings = self.targets.to_dict() if isinstance(self.targets, TargetSettings) else self.targets
        self.targets = TargetSettings.from_dict(settings)

    # ----- building -------------------------------------------------------------------
    def add(self, op: str, p: float | None = None, enabled: bool = True, steps: list | None = None,
            **params: Any) -> "ChainModel":
        """Append a validated step (a group takes its children as `steps`) and return the chain
        (so calls can be chained)."""
        self.steps.append(Step.create(op, p=p, enabled=enabled, steps=steps, **params))
        return self

    def validate(self) -> "ChainModel":
        """Re-check every step (after edits made directly on `steps`); raise ChainError if invalid."""
        self.__post_init__()
        if not self.steps:
            raise ChainError("the chain has no steps; add one, e.g. chain.add('HorizontalFlip')")
        total = sum(s.count() if isinstance(s, Step) else 1 for s in self.steps)
        if total > MAX_STEPS:
            raise ChainError(f"the chain has {total} steps (groups' children included); at most {MAX_STEPS} "
                             "are allowed")
        self.steps = [Step.from_dict(s.to_dict() if isinstance(s, Step) else s, i + 1)
                      for i, s in enumerate(self.steps)]
        return self

    def enabled_steps(self) -> list[tuple[int, Step]]:
        """(index, step) of the steps that run, in order (a group is one step)."""
        return [(i, s) for i, s in enumerate(self.steps) if s.enabled]

    def enabled_ops(self) -> list[Step]:
        """Every op step that runs, groups opened up, in order.

        Example:
            >>> chain = ChainModel().add("Invert").add("OneOf", steps=[Step.create("Rotate"), Step.create("Solarize")])
            >>> [s.op for s in chain.enabled_ops()]
            ['Invert', 'Rotate', 'Solarize']
        """
        return [op for _, s in self.enabled_steps() for op in s.ops()]

    def unsupported_ops(self, backend: str, device: str | None = None) -> list[str]:
        """Names of the enabled ops (inside groups too) that `backend` cannot run (on `device`, when
        given: an op that runs on the backend's GPU only is listed for "cpu")."""
        return list(dict.fromkeys(s.op for s in self.enabled_ops() if not s.spec.supports(backend, device)))

    # ----- dict / JSON / YAML ---------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> "ChainModel":
        """Build and validate a chain from a plain dict (as written by `to_dict`)."""
        if not isinstance(data, Mapping):
            raise ChainError(f"a chain must be a mapping with 'seed' and 'steps', got {type(data).__name__}")
        unknown = set(data) - _CHAIN_KEYS
        if unknown:
            raise ChainError(f"unknown chain key(s) {sorted(map(str, unknown))}; a chain has {sorted(_CHAIN_KEYS)}")
        if "format" in data and data["format"] != FORMAT_NAME:
            raise ChainError(f"'format' must be {FORMAT_NAME!r}, got {show(data['format'])}")
        version = data.get("version", FORMAT_VERSION)
        if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
            raise ChainError(f"chain format version {show(version)} is not supported; this workbench reads "
                             f"versions 1 to {FORMAT_VERSION} (upgrade the workbench for newer files)")
        steps = data.get("steps")
        if not isinstance(steps, list):
            raise ChainError(f"'steps' must be a list of steps, got {type(steps).__name__}")
        chain = cls(seed=_check_seed(data.get("seed", 0)), targets=data.get("targets", {}),
                    steps=[s if isinstance(s, Step) else Step.from_dict(s, i + 1)
                           for i, s in enumerate(steps[:MAX_STEPS + 1])])
        return chain.validate()

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-safe dict carrying the format name and version."""
        settings = self.targets.to_dict()
        version = 3 if settings else 2 if any(s.is_group for s in self.steps) else 1
        out = {"format": FORMAT_NAME, "version": version, "seed": self.seed, "steps": [s.to_dict() for s in self.steps]}
        if settings:
            out["targets"] = settings
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_json(cls, text: str) -> "ChainModel":
        """Parse JSON text; NaN/Infinity and malformed text become ChainError."""
        def _no_constants(name: str):
            raise ChainError(f"JSON contains {name}; parameters must be finite numbers")
        try:
            data = json.loads(text, parse_constant=_no_constants)
        except ChainError:
            raise
        except (ValueError, RecursionError) as exc:
            raise ChainError(f"the chain is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    @classmethod
    def from_yaml(cls, text: str) -> "ChainModel":
        """Parse YAML with the safe loader: tags such as !!python/object are refused."""
        try:
            data = yaml.safe_load(text)
        except yaml.constructor.ConstructorError as exc:
            if "tag" in str(exc.problem):
                raise ChainError(f"the YAML uses a tag that is not allowed in a chain file ({exc.problem}); "
                                 "chains hold only plain mappings, lists, strings and numbers") from None
            raise ChainError(f"the chain is not valid YAML: {exc.problem}") from None
        except (yaml.YAMLError, RecursionError) as exc:
            raise ChainError(f"the chain is not valid YAML: {exc}") from None
        return cls.from_dict(data)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the chain as YAML (.yaml/.yml) or JSON (.json); returns the path."""
        path = Path(path)
        self.validate()
        fmt = _format_of(path)
        path.write_text(self.to_yaml() if fmt == "yaml" else self.to_json() + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "ChainModel":
        """Read a chain saved by `save` (format chosen by the file extension)."""
        path = Path(path)
        fmt = _format_of(path)
        try:
            if not path.is_file():  # directories, FIFOs, devices: nothing to read safely
                raise ChainError(f"cannot read chain file {str(path)!r}: not a regular file")
            with open(path, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                raw = handle.read(MAX_FILE_BYTES + 1)  # bounded even if the file grows
        except OSError as exc:
            raise ChainError(f"cannot read chain file {str(path)!r}: {exc.strerror}") from None
        if len(raw) > MAX_FILE_BYTES:
            raise ChainError(f"{str(path)!r} is {max(size, len(raw))} bytes; a chain file is at most "
                             f"{MAX_FILE_BYTES} bytes")
        text = raw.decode("utf-8", errors="replace")
        return cls.from_yaml(text) if fmt == "yaml" else cls.from_json(text)

    def copy(self) -> "ChainModel":
        """A validated deep copy, of the same class."""
        return type(self).from_dict(self.to_dict())

    def __eq__(self, other: object) -> bool:
        # A Chain and the ChainModel it extends are the same chain when their contents are.
        if not isinstance(other, ChainModel):
            return NotImplemented
        return (self.seed, self.steps, self.targets) == (other.seed, other.steps, other.targets)


# The JSON of chains that validated, oldest first: a live preview and a training loop run (and emit) the same
# chain again and again, and rebuilding every step to validate it was a good part of a small batch's fixed cost.
_VALIDATED: dict[str, None] = {}


def validated_json(chain: ChainModel) -> str:
    """The chain's JSON (sorted keys) as `validate` leaves it, validating the chain unless the same JSON
    validated before; raises ChainError where it is invalid (an edit made directly on its steps included).

    Example:
        >>> chain = ChainModel().add("HorizontalFlip")
        >>> validated_json(chain) == validated_json(chain)
        True
    """
    try:
        key = json.dumps(chain.to_dict(), sort_keys=True)
    except (TypeError, ValueError):
        key = None  # not even serialisable: validate names what is wrong
    if key in _VALIDATED:
        return key
    chain.validate()
    key = json.dumps(chain.to_dict(), sort_keys=True)  # (as validate wrote the steps: [5, 5] as floats)
    _VALIDATED[key] = None
    while len(_VALIDATED) > 256:
        _VALIDATED.pop(next(iter(_VALIDATED)))
    return key


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".json":
        return "json"
    raise ChainError(f"chain files end in .yaml, .yml or .json, got {str(path)!r}")
