"""Albumentations backend: runs the very module that `export("albumentations")` writes, on the CPU."""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

# Importing Albumentations otherwise asks PyPI for a newer version (up to 2 s without a network).
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

from ..codegen import emit, load_module
from ..errors import WorkbenchError
from .records import per_sample_params


def _require_albumentations() -> None:
    try:
        import albumentations  # noqa: F401
    except ImportError:
        raise WorkbenchError("the albumentations backend needs Albumentations: pip install albumentations==2.0.8 "
                             "(the last MIT-licensed release)") from None


def run_albumentations(chain, images: list[np.ndarray], device: str):
    """(images, per-sample params) from the generated module's `augment_images` (CPU only)."""
    _require_albumentations()
    if device != "cpu":
        raise WorkbenchError(f"the albumentations backend runs on the CPU; use device='cpu' (got {device!r}), "
                             "or the kornia or dali backend on the GPU")
    module = load_module(emit(chain, "albumentations"), "albumentations")
    try:
        out, records = module.augment_images(images, seed=chain.seed, device="cpu")
    except (RuntimeError, ValueError, TypeError) as exc:
        raise WorkbenchError(f"Albumentations could not run the chain: {exc}") from exc
    return out, per_sample_params(chain, [_named(step, rec) for (_, step), rec in
                                          zip(chain.enabled_steps(), records)], len(images), lambda spec: None)


def _named(step, record: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """One step's raw per-sample arrays under the names the workbench reports (see
    AlbumentationsLowering.record); samples where the step did not apply keep only batch_prob.
    A group's record keeps its choice and names its children's."""
    if step.is_group:
        return {"batch_prob": record["batch_prob"], "selected": record["selected"],
                "steps": [_named(child, rec) for (_, child), rec in zip(step.enabled_steps(), record["steps"])]}
    spec = step.spec
    out: dict[str, Any] = {"batch_prob": record["batch_prob"]}
    mapping = spec.albumentations.record
    if callable(mapping):
        rows = []
        for n in range(len(record["batch_prob"])):
            raw = {k: v[n] for k, v in record.items() if k != "batch_prob"}
            rows.append(mapping(raw) if record["batch_prob"][n] > 0.5 else {})
        for key in {k for row in rows for k in row}:
            values = [np.asarray(row.get(key, np.nan), dtype=np.float64) for row in rows]
            shape = next((v.shape for v in values if v.size > 1 or not np.isnan(v).all()), ())
            out[key] = np.stack([v if v.shape == shape else np.full(shape, np.nan) for v in values])
        return out
    for raw, name in mapping.items():
        if raw in record:
            out[name] = record[raw]
    return out
