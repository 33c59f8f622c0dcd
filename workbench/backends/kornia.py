"""Kornia backend: runs the very module that `export("kornia")` writes."""
from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")  # never block on an install prompt

from ..codegen import emit, load_module
from ..errors import WorkbenchError
from ..plans import kornia_names
from .records import per_sample_params


def run_kornia(chain, images: list[np.ndarray], device: str, labels: np.ndarray | None = None,
               torch_compile: bool = False):
    """(images, per-sample params, mixed labels or None) from the generated module's
    `augment_images`; `labels` (soft targets) are handed to it when given, and
    `torch_compile` when set (torch.compile of the fused runs of steps)."""
    module = load_module(emit(chain, "kornia"), "kornia")
    extra = {} if labels is None else {"labels": labels}
    if torch_compile:
        extra["torch_compile"] = True
    try:
        out, records, *mixed = module.augment_images(images, seed=chain.seed, device=device, **extra)
    except (RuntimeError, ValueError) as exc:
        raise WorkbenchError(f"Kornia could not run the chain: {exc}") from exc
    params = per_sample_params(chain, records, len(images), kornia_names)
    return out, params, (mixed[0] if mixed else None)
