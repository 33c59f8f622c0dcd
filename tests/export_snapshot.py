"""The exports frozen before the redesign of issue 28 ("code that reads as code"), and the chains
they are of: every op of each backend, a few ops a chain, after a Resize to a square.

The redesign moves every line an export is made of (templates into modules, DALI strings into
functions); `test_export_unchanged.py` runs each frozen file and today's export of the same chain
on the same images and seeds and wants the same `--save` output, bit for bit. Both run on the
machine at hand, so the check holds wherever floating point rounds otherwise.

Frozen again for issue 30, when a CPU began to run a Kornia chain's first crops, flips and resizes
on the uint8 levels (each chain here starts with a Resize): with those off (the program's
LEVEL_STEPS = ()), every Kornia export of that day gave the earlier snapshot's output bit for bit,
and the DALI and Albumentations exports gave it as they were.

Frozen again for issue 30, when the Kornia GaussianNoise began to draw its noise with cv2.randn (seeded per sample
from torch's generator) instead of torch's normal_: only kornia_08 (the one with GaussianNoise) gave other output,
and with the earlier normal_ draws put back into its export it gave the earlier snapshot's output bit for bit.

Run this file to freeze today's exports again, on purpose only (an export whose output changes
for a reason of its own), and say why in the commit:

    python tests/export_snapshot.py
"""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import workbench as wb

from conftest import op_rng, random_step_dict

SNAPSHOT = Path(__file__).parent / "data" / "exports_before.tar.xz"
BACKENDS = ("kornia", "dali", "albumentations")
PER_CHAIN = 7
SEED = 3  # one seed: the chains' p < 1 steps are applied to some of the six images and not to others
FAMILIES = ("geometric", "color", "blur/noise", "weather", "occlusion", "policies", "batch mixing", "normalize")


def _step(op: str) -> dict:
    step = random_step_dict(op, op_rng(op))
    step["enabled"] = True
    if op == "GridDistortion":  # every cell is the same code: 12 a side keep DALI's graph small
        step["params"]["num_steps"] = min(step["params"]["num_steps"], 12)
    if op == "Erase":  # a rectangle that fits: where none does, Albumentations fails (the op's note)
        step["params"]["ratio"] = [0.5, 2.0]
    return step


def cpu_ops(backend: str) -> list[str]:
    """The backend's ops that it runs on the CPU, where the snapshot's --save runs (not those it runs on
    its GPU only: OpSpec.gpu_only), on a folder without annotations (not those that draw from boxes:
    OpSpec.reads_boxes, saved with --coco in tests/test_iou_crop.py)."""
    return [op for op in wb.list_ops(backend=backend) if wb.get_op(op).supports(backend, "cpu")
            and not wb.get_op(op).reads_boxes]


def chains(backend: str) -> dict[str, wb.Chain]:
    """name -> chain: the backend's ops, square-input ops first, in family order, PER_CHAIN a chain,
    each chain after a Resize to 96x96 (the square ops need a square)."""
    ops = cpu_ops(backend)
    ops = sorted(ops, key=lambda op: (not wb.get_op(op).square_input, FAMILIES.index(wb.get_op(op).family), op))
    out = {}
    for k in range(0, len(ops), PER_CHAIN):
        steps = [{"op": "Resize", "params": {"size": [96, 96]}}] + [_step(op) for op in ops[k:k + PER_CHAIN]]
        out[f"{backend}_{k // PER_CHAIN + 1:02d}"] = wb.Chain.from_dict({"seed": 100 + k, "steps": steps})
    return out


def freeze() -> None:
    """Write every chain's export of today into SNAPSHOT."""
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(SNAPSHOT, "w:xz", preset=9) as tar:
        for backend in BACKENDS:
            for name, chain in chains(backend).items():
                data = chain.export(backend).encode()
                info = tarfile.TarInfo(f"{name}.py")
                info.size, info.mtime = len(data), 0
                tar.addfile(info, io.BytesIO(data))


if __name__ == "__main__":
    freeze()
    print(f"wrote {SNAPSHOT} ({SNAPSHOT.stat().st_size} bytes)")
