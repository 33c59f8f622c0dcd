"""What moving targets costs: `chain.run` with masks, boxes and keypoints against the same run
without them, side by side in one process, on the DESIGN.md example chain (crop, flip, rotate,
brightness, normalize).

The four annotated sample photos (`wb.load_annotated()`, 27 boxes, 6 keypoints, one mask each)
are repeated to `--images` images; each run is timed alone (median of `--runs` after a warm-up),
alternating with and without targets so that a drifting machine affects both alike. Usage:

    python bench/targets_overhead.py [--images 16] [--runs 9] [--backend kornia]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import warnings

warnings.simplefilter("ignore", DeprecationWarning)

import torch

import workbench as wb
from common import CHAINS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--backend", default="kornia", choices=wb.BACKENDS)
    args = parser.parse_args()

    annotated, given = wb.load_annotated()
    repeat = [k % len(annotated) for k in range(args.images)]
    images = [annotated[k] for k in repeat]
    targets = {kind: [values[k] for k in repeat] for kind, values in given.items()}
    chain = wb.Chain.from_dict({"seed": 1, "steps": CHAINS["example"]})

    def timed(**kwargs) -> float:
        start = time.perf_counter()
        chain.run(images, backend=args.backend, **kwargs)
        return time.perf_counter() - start

    timed(), timed(**targets)  # warm-up: module build, first calls
    plain, moved = [], []
    for _ in range(args.runs):
        plain.append(timed())
        moved.append(timed(**targets))
    base, with_targets = statistics.median(plain), statistics.median(moved)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s), torch {torch.__version__}, "
          f"workbench {wb.__version__}")
    print(f"{args.images} images (the 4 annotated sample photos, 300x451 to 512x512), backend {args.backend}, "
          f"chain 'example', median of {args.runs}")
    print(f"without targets: {base * 1000:.1f} ms; with masks, boxes and keypoints: {with_targets * 1000:.1f} ms; "
          f"targets cost {(with_targets - base) * 1000:.1f} ms ({with_targets / base:.2f}x)")


if __name__ == "__main__":
    main()
