"""Kornia backend: runs the very module that `export("kornia")` writes."""
from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")  # never block on an install prompt

from ..codegen import emit, load_module
from ..errors import WorkbenchError
from . import per_sample_params


def run_kornia(chain, images: list[np.ndarray], device: str):
    """(images, per-sample params) from the generated module's `augment_images`."""
    module = load_module(emit(chain, "kornia"), "kornia")
    try:
        out, records = module.augment_images(images, seed=chain.seed, device=device)
    except (RuntimeError, ValueError) as exc:
        raise WorkbenchError(f"Kornia could not run the chain: {exc}") from exc
    return out, per_sample_params(chain, records, len(images), lambda spec: spec.kornia.record)
