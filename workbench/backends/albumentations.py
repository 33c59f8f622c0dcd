"""Albumentations backend: runs the very module that `export("albumentations")` writes, on the CPU."""
from __future__ import annotations

import os
import numpy as np

# Importing Albumentations otherwise asks PyPI for a newer version (up to 2 s without a network).
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

from ..codegen import emit, load_module
from ..errors import WorkbenchError
from ..plans import albumentations_names
from .records import per_sample_params


def _require_albumentations() -> None:
    try:
        import albumentations  # noqa: F401
    except ImportError:
        raise WorkbenchError("the albumentations backend needs Albumentations: pip install albumentations==2.0.8 "
                             "(the last MIT-licensed release)") from None


def run_albumentations(chain, images: list[np.ndarray], device: str, labels: np.ndarray | None = None,
                       boxes: list[np.ndarray] | None = None):
    """(images, per-sample params, mixed labels or None) from the generated module's
    `augment_images` (CPU only); `labels` (soft targets) and `boxes` (for the steps that read them)
    are handed to it when given."""
    _require_albumentations()
    if device != "cpu":
        raise WorkbenchError(f"the albumentations backend runs on the CPU; use device='cpu' (got {device!r}), "
                             "or the kornia or dali backend on the GPU")
    module = load_module(emit(chain, "albumentations"), "albumentations")
    extra = {} if labels is None else {"labels": labels}
    if boxes is not None:
        extra["boxes"] = boxes
    try:
        out, records, *mixed = module.augment_images(images, seed=chain.seed, device="cpu", **extra)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise WorkbenchError(f"Albumentations could not run the chain: {exc}") from exc
    return out, per_sample_params(chain, records, len(images), albumentations_names), (mixed[0] if mixed else None)
