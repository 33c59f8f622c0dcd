"""DALI backend: runs the very module that `export("dali")` writes (CPU-only pipelines when
device="cpu", GPU operators otherwise)."""
from __future__ import annotations

import numpy as np

from ..codegen import emit, load_module
from ..errors import WorkbenchError
from . import per_sample_params


def _require_dali() -> None:
    try:
        import nvidia.dali  # noqa: F401
    except ImportError:
        raise WorkbenchError("the DALI backend needs NVIDIA DALI: pip install nvidia-dali-cuda120 "
                             "(it also runs CPU-only pipelines on machines without a GPU)") from None


def _cause(message: str) -> str:
    """The operator and DALI's own reason, from its multi-line pipeline error."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    operator = next((line for line in lines if line.startswith("Error in ")), "")
    reason = next((lines[k + 1] for k, line in enumerate(lines) if line == "encountered:" and k + 1 < len(lines)),
                  lines[0] if lines else message)
    return f"{operator.rstrip(',')}: {reason}" if operator else reason


def run_dali(chain, images: list[np.ndarray], device: str, labels: np.ndarray | None = None):
    """(images, per-sample params, mixed labels or None) from the generated module's
    `augment_images`; `labels` (soft targets) are handed to it when given."""
    _require_dali()
    module = load_module(emit(chain, "dali"), "dali")
    extra = {} if labels is None else {"labels": labels}
    try:
        out, draws, *mixed = module.augment_images(images, seed=chain.seed, device=device, **extra)
    except RuntimeError as exc:
        raise WorkbenchError(f"DALI could not run the chain: {_cause(str(exc))}") from exc
    return out, params_from_draws(chain, draws, len(images)), (mixed[0] if mixed else None)


def params_from_draws(chain, draws: dict, count: int) -> list:
    """Regroup "stepN_Op.name" draws into one record per enabled step, as Kornia reports them."""
    records = []
    for i, step in chain.enabled_steps():
        prefix = f"step{i + 1}_{step.op}."
        record = {name[len(prefix):]: value for name, value in draws.items() if name.startswith(prefix)}
        record["batch_prob"] = np.asarray(record.pop("applied", np.ones(count))).reshape(count)
        records.append(record)
    return per_sample_params(chain, records, count, lambda spec: None)
