"""What moving targets costs: `chain.run` with masks, boxes and keypoints against the same run
without them, side by side in one process, on the DESIGN.md example chain (crop, flip, rotate,
brightness, normalize).

The four annotated sample photos (`wb.load_annotated()`, 27 boxes, 6 keypoints, one mask each)
are repeated to `--images` images; each run is timed alone (median of `--runs` after a warm-up),
alternating with and without targets so that a drifting machine affects both alike.

With `--loader`, the exported training loader instead (`bench_rates`, what `--bench` prints): a
folder of the four annotated photos, read `--batches` batches of `--batch-size` at a time with and
without `coco=`/`masks=`, alternating, the median images/s of `--runs`.

With `--masks`, moving the masks alone (runtime/targets.py's move_batch, what the loaders call
after each batch): `--images` masks as numpy arrays on the host against the same as tensors on
`--device` (warp_masks_on_device, a step's masks at once), from the draws of one run of the chain
(a rotation and a perspective warp added, the steps that move every pixel); the results are checked
equal. Usage:

    python bench/targets_overhead.py [--images 16] [--runs 9] [--backend kornia]
    python bench/targets_overhead.py --loader [--batch-size 16] [--batches 8] [--workers 2] [--backend dali]
    python bench/targets_overhead.py --masks [--images 64]
    (each with --device cuda on a GPU machine)
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

warnings.simplefilter("ignore", DeprecationWarning)

import torch

import numpy as np

import workbench as wb
from common import CHAINS
from workbench.codegen import emit, load_module
from workbench.plans import target_plan, target_settings
from workbench.runtime.targets import move_batch
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


def mask_moves(args, machine: str) -> None:
    """Median time of move_batch over the masks alone, on the host and as tensors on the device."""
    annotated, given = wb.load_annotated()
    repeat = [k % len(annotated) for k in range(args.images)]
    images = [annotated[k] for k in repeat]
    masks = [given["masks"][k] for k in repeat]
    steps = CHAINS["example"] + [{"op": "Rotate", "p": 1.0}, {"op": "Perspective", "p": 1.0}]
    chain = wb.Chain.from_dict({"seed": 1, "steps": steps})
    rows = chain.run(images, backend=args.backend, masks=masks).params
    plan, settings = target_plan(chain.steps), target_settings(chain)
    sizes = [image.shape[:2] for image in images]
    tensors = [torch.from_numpy(np.array(mask)).to(args.device) for mask in masks]

    def timed(given) -> tuple[float, list]:
        if args.device != "cpu":
            torch.cuda.synchronize()
        start = time.perf_counter()
        moved = move_batch(plan, rows, sizes, {"masks": given}, settings)["masks"]
        if args.device != "cpu":
            torch.cuda.synchronize()
        return time.perf_counter() - start, moved

    (_, host), (_, device) = timed(masks), timed(tensors)  # warm-up, and the check
    assert all(np.array_equal(a, b.cpu().numpy()) for a, b in zip(host, device)), "device masks differ"
    on_host, on_device = [], []
    for _ in range(args.runs):
        on_host.append(timed(masks)[0])
        on_device.append(timed(tensors)[0])
    host_s, device_s = statistics.median(on_host), statistics.median(on_device)
    print(machine)
    print(f"{args.images} masks (the 4 annotated sample photos' masks), chain 'example' + Rotate + Perspective "
          f"(draws from {args.backend}), median of {args.runs}; the two results are equal")
    print(f"numpy on the host: {host_s * 1000:.1f} ms; tensors on {args.device}: {device_s * 1000:.1f} ms "
          f"({host_s / device_s:.2f}x)")


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
    parser.add_argument("--masks", action="store_true", help="time moving masks on the host and on --device")
    args = parser.parse_args()
    machine = (f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s), "
               f"torch {torch.__version__}, workbench {wb.__version__}")
    if args.masks:
        mask_moves(args, machine)
        return
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
