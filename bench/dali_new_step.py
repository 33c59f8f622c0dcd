"""DALI preview after a new step: the first run of a chain whose shape changed.

Adding, removing or moving a step makes a new module (the chain's source changed), and DALI's
autograph rewrites every pipeline function with an `if` in it the first time it is defined: the
step functions, and the runtime's `preview_pipeline` and `augment`. The runtime's code is the same
code in every module (codegen/compiler.py compiles each block as a file of its own), so only the
new step's function is rewritten. This times chain.run on DALI right after each of eight steps
(p < 1, so the chain branches on its draws) is added to a chain, after one warm-up chain.
Usage:

    python bench/dali_new_step.py [--runs 3]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import warnings

warnings.simplefilter("ignore", DeprecationWarning)

import numpy as np  # noqa: E402
import nvidia.dali  # noqa: E402

import workbench as wb  # noqa: E402

STEPS = ["Rotate", "HorizontalFlip", "Contrast", "GaussianBlur", "Affine", "Saturation", "VerticalFlip", "Solarize"]


def first_runs(images: list[np.ndarray], p: float) -> list[float]:
    """Seconds of the first chain.run after each step is added, every step with probability `p`
    (a literal in its function: a p of its own per run makes every step's code new)."""
    chain, times = wb.Chain(seed=1).add("Brightness", p=p), []
    for op in STEPS:
        chain.add(op, p=p)
        start = time.perf_counter()
        chain.run(images, backend="dali")
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="chains of eight additions")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(4)]
    wb.Chain(seed=1).add("Brightness", p=0.5).run(images, backend="dali")  # imports, the runtime's first rewrite
    times = [t for run in range(args.runs) for t in first_runs(images, 0.5 + run / 100)]
    print(f"{platform.machine()}, {os.cpu_count()} cores, DALI {nvidia.dali.__version__}; CPU pipelines, "
          f"4 images 64x64, {len(times)} additions")
    print(f"first run after adding a step: median {statistics.median(times) * 1000:.0f} ms, "
          f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
