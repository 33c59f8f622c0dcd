"""Import coverage of the pipeline corpus (tests/pipelines): for each real-world pipeline, how many
of its transforms Chain.from_albumentations / from_kornia / from_torchvision turn into steps.

Prints a markdown table (pipeline, transforms, mapped, coverage, unmapped with reasons) and the
overall figure per library, for bench/RESULTS.md. Containers count their children; layout-only
transforms (ToTensorV2, ToImage, ToDtype) are left out. torchvision rows need torchvision.

    python bench/import_coverage.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from pipelines import ALBUMENTATIONS, KORNIA, TORCHVISION  # noqa: E402
from torchvision_beside_cpu_torch import tolerate_missing_torchvision_kernels  # noqa: E402

from workbench.importers.coverage import measure  # noqa: E402


def main() -> None:
    # The tests' torchvision (a CUDA build's wheel beside a CPU torch) imports only so; a matching one needs nothing.
    tolerate_missing_torchvision_kernels()
    print("| library | pipeline | transforms | mapped | coverage | unmapped (position transform: reason) |")
    print("|---|---|---:|---:|---:|---|")
    overall = {}
    for library, table in (("albumentations", ALBUMENTATIONS), ("kornia", KORNIA), ("torchvision", TORCHVISION)):
        total = mapped = 0
        for name, make in table.items():
            try:
                pipeline = make()
            except ImportError as exc:
                print(f"| {library} | {name} | - | - | - | not measured: {exc} |")
                continue
            _, cov = measure(library, pipeline)
            total, mapped = total + cov.transforms, mapped + cov.mapped
            unmapped = "<br>".join(str(u).replace("|", "/") for u in cov.unmapped) or "-"
            print(f"| {library} | {name} | {cov.transforms} | {cov.mapped} | {cov.ratio:.2f} | {unmapped} |")
        if total:
            overall[library] = (mapped, total)
    print()
    for library, (mapped, total) in overall.items():
        print(f"{library}: {mapped}/{total} transforms mapped, coverage {mapped / total:.3f}")


if __name__ == "__main__":
    main()
