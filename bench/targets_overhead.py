"""What moving targets costs: `chain.run` with masks, boxes and keypoints against the same run
without them, side by side in one process, on the DESIGN.md example chain (crop, flip, rotate,
brightness, normalize).

The four annotated sample photos (`wb.load_annotated()`, 27 boxes, 6 keypoints, one mask each)
are repeated to `--images` images; each run is timed alone (median of `--runs` after a warm-up),
alternating with and without targets so that a drifting machine affects both alike.

With `--loader`, the exported training loader instead (`bench_rates`, what `--bench` prints): a
folder of the four annotated photos, read `--batches` batches of `--batch-size` at a time with and
without `coco=`/`masks=`, alternating, the median images/s of `--runs`. Usage:

    python bench/targets_overhead.py [--images 16] [--runs 9] [--backend kornia]
    python bench/targets_overhead.py --loader [--batch-size 16] [--batches 8] [--workers 2] [--backend dali]
    (either with --device cuda on a GPU machine)
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)

import torch

import workbench as wb
from common import CHAINS
from workbench.codegen import emit, load_module
from workbench.targets import SAMPLE_TARGETS


def loader_rates(args, chain) -> tuple[list[float], list[float]]:
    """Images/s of the exported training loader without and with targets, alternating runs."""
    module = load_module(emit(chain, args.backend), args.backend)
    annotated, _ = wb.load_annotated()
    with tempfile.TemporaryDirectory(prefix="targets-loader-") as folder:
        for image in annotated:
            shutil.copy(image.source, folder)
        sources = {"coco": str(SAMPLE_TARGETS / "instances.json"), "masks": str(SAMPLE_TARGETS / "masks")}
        common = {"batches": args.batches, "warmup": 2, "runs": 1, "seed": 1}
        if args.backend == "dali":
            common.update(threads=args.workers, gpu=args.device != "cpu")
        else:
            common.update(workers=args.workers, device=args.device)
        plain, moved = [], []
        for _ in range(args.runs):
            plain += module.bench_rates(folder, args.batch_size, **common)
            moved += module.bench_rates(folder, args.batch_size, **common, **sources)
    return plain, moved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=16)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--backend", default="kornia", choices=wb.BACKENDS)
    parser.add_argument("--loader", action="store_true", help="time the exported training loader")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (Albumentations: cpu)")
    args = parser.parse_args()
    machine = (f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s), "
               f"torch {torch.__version__}, workbench {wb.__version__}")
    if args.loader:
        chain = wb.Chain.from_dict({"seed": 1, "steps": CHAINS["example"]})
        plain, moved = (statistics.median(rates) for rates in loader_rates(args, chain))
        print(machine)
        print(f"exported {args.backend} training loader on {args.device}, the 4 annotated sample photos, "
              f"chain 'example', batch "
              f"{args.batch_size}, {args.workers} worker(s), {args.batches} batches per run, median of {args.runs}")
        print(f"without targets: {plain:.1f} images/s; with masks, boxes and keypoints: {moved:.1f} images/s "
              f"({moved / plain:.2f}x)")
        return

    annotated, given = wb.load_annotated()
    repeat = [k % len(annotated) for k in range(args.images)]
    images = [annotated[k] for k in repeat]
    targets = {kind: [values[k] for k in repeat] for kind, values in given.items()}
    chain = wb.Chain.from_dict({"seed": 1, "steps": CHAINS["example"]})

    def timed(**kwargs) -> float:
        start = time.perf_counter()
        chain.run(images, backend=args.backend, device=args.device, **kwargs)
        return time.perf_counter() - start

    timed(), timed(**targets)  # warm-up: module build, first calls
    plain, moved = [], []
    for _ in range(args.runs):
        plain.append(timed())
        moved.append(timed(**targets))
    base, with_targets = statistics.median(plain), statistics.median(moved)
    print(machine)
    print(f"{args.images} images (the 4 annotated sample photos, 300x451 to 512x512), "
          f"backend {args.backend} on {args.device}, "
          f"chain 'example', median of {args.runs}")
    print(f"without targets: {base * 1000:.1f} ms; with masks, boxes and keypoints: {with_targets * 1000:.1f} ms; "
          f"targets cost {(with_targets - base) * 1000:.1f} ms ({with_targets / base:.2f}x)")


if __name__ == "__main__":
    main()
