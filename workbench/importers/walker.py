"""The one walk over a pipeline that every importer makes: containers opened up or made group
steps, leaves turned into steps by the library's inverse, everything else listed in
`chain.unmapped` at its position ("8.2" is the second child of the eighth transform), and the
same positions counted for the import coverage.

What differs between Albumentations, Kornia and torchvision is a `Library`: how to tell a
container from a leaf, which containers simply run their children in order, how a container
becomes a group step, and how a leaf becomes a step.

Example:
    >>> from workbench.model import Step
    >>> flips = Library(children=lambda t: t if isinstance(t, list) else None,
    ...                 layout_only=lambda t: t == "tensor", opened=lambda t: True,
    ...                 group=None, leaf=lambda t, notes: Step.create(t), describe=str)
    >>> imported = walk(["HorizontalFlip", "tensor", ["VerticalFlip", "Sepia"]], flips)
    >>> [s.op for s in imported.steps], [str(u) for u in imported.unmapped]
    (['HorizontalFlip', 'VerticalFlip'], ["3.2 Sepia: unknown op 'Sepia'; did you mean Shear?"])
    >>> leaf_positions(["HorizontalFlip", "tensor", ["VerticalFlip", "Sepia"]], flips)
    ['1', '3.1', '3.2']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..errors import ChainError
from ..model import Step
from .report import Unmapped, finish_import


@dataclass(frozen=True)
class Child:
    """A container's child as the walk converted it: its steps ([] when it could not be mapped,
    several when it was a container opened up) and whether it was lost (listed as unmapped)."""

    transform: Any
    position: str
    steps: list
    lost: bool


@dataclass
class Imported:
    """What a walk gives: the steps, the transforms it could not map, and the notes (settings
    mapped with a stated difference)."""

    steps: list = field(default_factory=list)
    unmapped: list[Unmapped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Library:
    """What a walk needs to know about one library's pipelines.

    - `children(t)`: a container's transforms, None for a leaf (a policy is a leaf);
    - `layout_only(t)`: t changes only the layout or dtype (left out, not counted);
    - `opened(t)`: the container runs its children in order on every image (they join the chain);
    - `group(t, position, children, imported)`: any other container as a group Step, or None when
      nothing of it is kept (it lists what it drops in `imported.unmapped` itself); ValueError with
      the reason lists the container as unmapped;
    - `leaf(t, notes)`: one transform as a Step; ValueError or ChainError with the reason when no op
      expresses it (notes: settings mapped with a stated difference);
    - `describe(t)`: how the report names t, e.g. "K.RandomAffine(p=0.5)".
    """

    children: Callable[[Any], Sequence[Any] | None]
    layout_only: Callable[[Any], bool]
    opened: Callable[[Any], bool]
    group: Callable[[Any, str, list[Child], Imported], Step | None] | None
    leaf: Callable[[Any, list[str]], Step]
    describe: Callable[[Any], str]


def walk(transforms: Sequence[Any], library: Library) -> Imported:
    """The steps, unmapped transforms and notes of importing `transforms` (a pipeline's top level)."""
    imported = Imported()
    imported.steps = _walk(transforms, library, "", imported)
    return imported


def import_chain(transforms: Sequence[Any], library: Library, chain, source: str, strict: bool):
    """`chain` (new and empty: the caller's chain type and seed) with the walk's steps, its unmapped
    transforms and notes, warned about or, when `strict`, refused (report.finish_import); `source`
    names the importer in the warning ("from_kornia")."""
    imported = walk(transforms, library)
    chain.steps = imported.steps
    # The warning points at the user's call: this <- the importer <- the Chain classmethod <- user.
    return finish_import(chain, imported.unmapped, source, strict, notes=imported.notes, stacklevel=5)


def leaf_positions(transforms: Sequence[Any], library: Library, prefix: str = "") -> list[str]:
    """Positions of the leaf transforms under `transforms`, numbered as the walk numbers them
    (containers count their children, layout-only transforms are left out): what the import
    coverage counts."""
    out: list[str] = []
    for k, transform in enumerate(transforms, start=1):
        position = f"{prefix}{k}"
        inner = library.children(transform)
        if inner is not None:
            out += leaf_positions(list(inner), library, position + ".")
        elif not library.layout_only(transform):
            out.append(position)
    return out


def _walk(transforms: Sequence[Any], library: Library, prefix: str, imported: Imported) -> list:
    steps: list = []
    for k, transform in enumerate(transforms, start=1):
        steps += _one(transform, f"{prefix}{k}", library, imported)
    return steps


def _one(transform: Any, position: str, library: Library, imported: Imported) -> list:
    """The steps for one transform at `position`: none (layout only, or unmapped), one, or a
    container's opened up."""
    if library.layout_only(transform):
        return []
    inner = library.children(transform)
    try:
        if inner is None:
            return [library.leaf(transform, imported.notes)]
        if library.opened(transform):
            return _walk(list(inner), library, position + ".", imported)
        children = []
        for k, child in enumerate(inner, start=1):
            if library.layout_only(child):
                continue
            before = len(imported.unmapped)
            steps = _one(child, f"{position}.{k}", library, imported)
            children.append(Child(child, f"{position}.{k}", steps, lost=len(imported.unmapped) > before))
        group = library.group(transform, position, children, imported)
        return [group] if group is not None else []
    except (ValueError, ChainError) as exc:
        imported.unmapped.append(Unmapped(position, library.describe(transform), str(exc)))
        return []


def child_step(child: Child) -> Step:
    """A group's child as one step: its only step, or a Sequential group of a container's steps."""
    return child.steps[0] if len(child.steps) == 1 else Step.create("Sequential", steps=child.steps)


def group_dict(op: str, p: float, params: dict, steps: list) -> dict:
    """The chain format's group (container) step: `op` OneOf, SomeOf or Sequential with its
    child steps.

    Example:
        >>> group_dict("OneOf", 0.5, {"weights": [1.0, 2.0]}, [Step.create("HorizontalFlip")])["steps"]
        [{'op': 'HorizontalFlip', 'params': {}, 'p': 0.5, 'enabled': True}]
    """
    return {"op": op, "p": float(p), "params": dict(params),
            "steps": [s.to_dict() if hasattr(s, "to_dict") else s for s in steps]}


def read_as_op(transform: Any, candidates: Sequence[tuple[str, Callable]], notes: list[str]) -> tuple[str, dict]:
    """(op name, params) from the first of `candidates` ((op, its inverse for the transform's class),
    in registry order) that reads `transform`: an inverse gives the op's params, None when the
    settings are another op's, or ValueError with the reason of a near miss (when none reads it:
    the reason, or each op's where they differ).

    Example:
        >>> read_as_op("any", [("Invert", lambda t, notes: None), ("Equalize", lambda t, notes: {})], [])
        ('Equalize', {})
    """
    reasons: dict[str, list[str]] = {}
    for op, read in candidates:
        try:
            params = read(transform, notes)
        except ValueError as exc:
            reasons.setdefault(str(exc), []).append(op)
            continue
        if params is not None:
            return op, params
    if len(reasons) == 1:  # one reason, whichever ops gave it
        raise ValueError(next(iter(reasons)))
    raise ValueError("; ".join(f"{', '.join(ops)}: {reason}" for reason, ops in reasons.items())
                     or f"its settings match no op ({', '.join(op for op, _ in candidates)})")


def every_child_mapped(children: list[Child]) -> bool:
    """Whether each of a container's children became a step (a choice among them changes when
    one is missing, so Kornia's and torchvision's groups are kept whole or not at all)."""
    return all(child.steps and not child.lost for child in children)
