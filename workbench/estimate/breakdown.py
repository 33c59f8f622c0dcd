"""Where an estimate's time goes: the cost of each loader stage and of each step, measured alone."""
from __future__ import annotations

from dataclasses import dataclass

STAGE_LABELS = {"decode": "decode", "host_to_device": "host-to-device", "augment": "augment",
                "targets": "moving targets"}


@dataclass
class StageCost:
    """One stage of the loader measured alone: images/s it sustains and ms per batch."""

    name: str
    images_per_s: float
    ms_per_batch: float
    detail: str = ""


@dataclass
class StepCost:
    """One enabled step of the chain measured alone on a batch (its own input)."""

    step: int  # position in the chain, from 1
    op: str
    ms_per_batch: float
    share: float  # of all steps' time
    input_size: tuple[int, int] = (0, 0)
    output_size: tuple[int, int] = (0, 0)
