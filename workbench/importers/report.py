"""What the importers (`Chain.from_albumentations`, `from_kornia`, `from_torchvision`) share:
the record of a transform they could not turn into a step, how they report those (a warning,
or an error when strict), and the import coverage (mapped transforms / all transforms).

Example:
    >>> u = Unmapped("3", "K.RandomThinPlateSpline(p=0.5)", "no workbench op runs it")
    >>> str(u)
    '3 K.RandomThinPlateSpline(p=0.5): no workbench op runs it'
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import WorkbenchError


@dataclass(frozen=True)
class Unmapped:
    """A transform the import could not turn into a step: where it was, what, and why.

    `position` is the transform's place in the pipeline, 1-based, nested containers joined
    with dots ("8.2" is the second child of the eighth transform)."""

    position: str
    transform: str
    reason: str

    def __str__(self) -> str:
        return f"{self.position} {self.transform}: {self.reason}"


def finish_import(chain, unmapped: Sequence[Unmapped], source: str, strict: bool, notes: Iterable[str] = (),
                  stacklevel: int = 4):
    """Attach `unmapped` (and `notes`: settings mapped with a stated difference) to the chain;
    warn about the unmapped transforms, or raise a WorkbenchError listing them when `strict`.

    `source` names the importer in the warning ("from_kornia"); `stacklevel` points the
    warning at the user's call (importer function <- Chain classmethod <- user).

    Example:
        >>> from workbench.model import ChainModel
        >>> finish_import(ChainModel(), [], "from_kornia", strict=True).unmapped
        []
    """
    chain.unmapped = list(unmapped)
    chain.notes = list(notes)
    if chain.unmapped:
        listing = "\n".join(f"  {u}" for u in chain.unmapped)
        if strict:
            raise WorkbenchError(f"{len(chain.unmapped)} transform(s) could not be mapped:\n{listing}")
        warnings.warn(f"{source}: {len(chain.unmapped)} transform(s) left out (see chain.unmapped):\n{listing}",
                      stacklevel=stacklevel)
    return chain


@dataclass(frozen=True)
class Coverage:
    """How much of a pipeline an import carried over: leaf transforms (containers count their
    children; layout-only transforms are left out), how many of them became steps, and the
    unmapped records."""

    transforms: int
    mapped: int
    unmapped: tuple[Unmapped, ...]

    @property
    def ratio(self) -> float:
        return self.mapped / self.transforms if self.transforms else 1.0


def coverage(leaves: Sequence[str], unmapped: Sequence[Unmapped]) -> Coverage:
    """Coverage of an import: a leaf is unmapped when an unmapped record sits at its position
    or at one of its containers' (a container left out as a whole loses all its children).

    Example:
        >>> coverage(["1", "2.1", "2.2", "3"], [Unmapped("2", "A.OneOf(p=0.5)", "...")]).ratio
        0.5
    """
    def lost(position: str) -> bool:
        return any(position == u.position or position.startswith(u.position + ".") for u in unmapped)

    missing = sum(1 for leaf in leaves if lost(leaf))
    return Coverage(transforms=len(leaves), mapped=len(leaves) - missing, unmapped=tuple(unmapped))
