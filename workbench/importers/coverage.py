"""How much of an existing pipeline an import carries over: the importers' leaf transforms
against what they could not map (bench/import_coverage.py runs this over a corpus)."""
from __future__ import annotations

import warnings
from typing import Any

from ..chain import Chain
from . import albumentations, kornia, torchvision
from .report import Coverage, coverage

IMPORTERS = {"albumentations": (Chain.from_albumentations, albumentations.leaf_transforms),
             "kornia": (Chain.from_kornia, kornia.leaf_transforms),
             "torchvision": (Chain.from_torchvision, torchvision.leaf_transforms)}


def measure(library: str, pipeline: Any) -> tuple[Chain, Coverage]:
    """Import `pipeline` ("albumentations", "kornia" or "torchvision") without warnings and
    return (chain, Coverage).

    Example:
        >>> import kornia.augmentation as K
        >>> chain, cov = measure("kornia", [K.RandomHorizontalFlip(), K.RandomThinPlateSpline()])
        >>> cov.transforms, cov.mapped, cov.ratio, [s.op for s in chain.steps]
        (2, 1, 0.5, ['HorizontalFlip'])
    """
    if library not in IMPORTERS:
        raise ValueError(f"library must be one of {', '.join(IMPORTERS)}, got {library!r}")
    importer, leaves = IMPORTERS[library]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chain = importer(pipeline)
    return chain, coverage(leaves(pipeline), chain.unmapped)
