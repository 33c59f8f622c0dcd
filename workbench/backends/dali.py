"""DALI backend: runs the very module that `export("dali")` writes (CPU-only pipelines when
device="cpu", GPU operators otherwise)."""
from __future__ import annotations

import numpy as np

from ..codegen import emit, load_module
from ..errors import WorkbenchError
from ..runtime.rows import records_from_draws
from ..plans import row_plan
from .records import per_sample_params


DALI_WHEELS = {"12": "nvidia-dali-cuda120", "13": "nvidia-dali-cuda130"}


def dali_wheel(cuda_version: str | None) -> str:
    """The DALI package for a torch built for `cuda_version` (torch.version.cuda; None on a
    CPU-only build, where the CUDA 12 wheel runs CPU pipelines).

    Example:
        >>> dali_wheel("13.0"), dali_wheel("12.8"), dali_wheel(None)
        ('nvidia-dali-cuda130', 'nvidia-dali-cuda120', 'nvidia-dali-cuda120')
    """
    return DALI_WHEELS.get((cuda_version or "12").split(".")[0], DALI_WHEELS["12"])


def _require_dali() -> None:
    import torch

    wheel = dali_wheel(torch.version.cuda)
    extra = "dali-cuda13" if wheel.endswith("130") else "dali-cuda12"
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        raise WorkbenchError(f"the DALI backend needs NVIDIA DALI: pip install {wheel} (the wheel for this torch's "
                             f"CUDA {torch.version.cuda or 'none: CPU-only'}; or the workbench's [{extra}] extra; it "
                             "also runs CPU-only pipelines on machines without a GPU)") from None


def _cause(message: str) -> str:
    """The operator and DALI's own reason, from its multi-line pipeline error."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    operator = next((line for line in lines if line.startswith("Error in ")), "")
    reason = next((lines[k + 1] for k, line in enumerate(lines) if line == "encountered:" and k + 1 < len(lines)),
                  lines[0] if lines else message)
    return f"{operator.rstrip(',')}: {reason}" if operator else reason


def run_dali(chain, images: list[np.ndarray], device: str, labels: np.ndarray | None = None,
             boxes: list[np.ndarray] | None = None):
    """(images, per-sample params, mixed labels or None) from the generated module's
    `augment_images`; `labels` (soft targets) and `boxes` (for the steps that read them) are handed
    to it when given."""
    _require_dali()
    module = load_module(emit(chain, "dali"), "dali")
    extra = {} if labels is None else {"labels": labels}
    if boxes is not None:
        extra["boxes"] = boxes
    try:
        out, draws, *mixed = module.augment_images(images, seed=chain.seed, device=device, **extra)
    except RuntimeError as exc:
        raise WorkbenchError(f"DALI could not run the chain: {_cause(str(exc))}") from exc
    return out, params_from_draws(chain, draws, len(images)), (mixed[0] if mixed else None)


def params_from_draws(chain, draws: dict, count: int) -> list:
    """Regroup "stepN_Op.name" draws into one record per enabled step, as Kornia reports them
    (runtime/rows.py's records_from_draws), then into rows."""
    records = records_from_draws(row_plan(chain.steps, lambda spec: None), draws, count)
    return per_sample_params(chain, records, count, lambda spec: None)
