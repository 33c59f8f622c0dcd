"""SSD's augmentation (torchvision's detection reference: photometric distort, zoom out, IoU crop,
flip) with boxes: torchvision's own v2 pipeline, image by image as its Dataset applies it, against
the same pipeline imported with `Chain.from_torchvision` and run by `chain.run(images, boxes=...)`
on each backend's CPU, side by side in one process.

The four annotated sample photos (`wb.load_annotated()`, with their boxes) are repeated to `--images`
images; each way is timed alone (median of `--runs` after a warm-up), the ways alternating so that
a drifting machine affects all alike. Every way returns the augmented images and their boxes.
Usage:

    python bench/ssd_pipeline.py [--images 32] [--runs 7] [--backends kornia,albumentations,dali]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from torchvision_beside_cpu_torch import tolerate_missing_torchvision_kernels  # noqa: E402

tolerate_missing_torchvision_kernels()  # the registry's torchvision beside the CPU torch (tests' set-up)
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

import workbench as wb  # noqa: E402
from common import machine_line, table  # noqa: E402

SSD = [v2.RandomPhotometricDistort(), v2.RandomZoomOut(fill=[123, 117, 104]), v2.RandomIoUCrop(),
       v2.RandomHorizontalFlip()]


def torchvision_way(images, targets):
    """torchvision's pipeline (and SanitizeBoundingBoxes) on uint8 tensors, one sample at a time."""
    pipeline = v2.Compose([*SSD, v2.SanitizeBoundingBoxes()])
    samples = [{"image": tv_tensors.Image(torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)),
                "boxes": tv_tensors.BoundingBoxes(torch.as_tensor(boxes, dtype=torch.float32), format="XYXY",
                                                  canvas_size=image.shape[:2]),
                "labels": torch.as_tensor(labels)}
               for image, boxes, labels in zip(images, targets["boxes"], targets["box_labels"])]

    def run():
        return [pipeline(sample) for sample in samples]
    return run


def workbench_way(chain, backend, images, targets):
    def run():
        return chain.run(images, backend=backend, device="cpu", boxes=targets["boxes"],
                         box_labels=targets["box_labels"])
    return run


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--backends", default="kornia,albumentations,dali")
    args = parser.parse_args(argv)
    annotated, given = wb.load_annotated()
    repeat = -(-args.images // len(annotated))
    images = [np.asarray(image) for image in annotated] * repeat
    images = images[:args.images]
    targets = {kind: (list(given[kind]) * repeat)[:args.images] for kind in ("boxes", "box_labels")}
    chain = wb.Chain.from_torchvision(v2.Compose(SSD), seed=1)
    ways = {"torchvision (v2, per image)": torchvision_way(images, targets)}
    for backend in args.backends.split(","):
        ways[f"workbench chain.run, {backend}"] = workbench_way(chain, backend, images, targets)
    for run in ways.values():  # warm-up: imports, the generated modules, DALI's pipeline build
        run()
    times = {name: [] for name in ways}
    for _ in range(args.runs):
        for name, run in ways.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    base = statistics.median(times["torchvision (v2, per image)"])
    rows = [[name, f"{args.images / statistics.median(t):.1f}", f"{base / statistics.median(t):.2f}"]
            for name, t in times.items()]
    print(machine_line())
    sizes = ", ".join(f"{h}x{w}" for h, w in (image.shape[:2] for image in annotated))
    print(f"torch {torch.__version__}, {args.images} images (the 4 annotated sample photos, {sizes}, repeated), "
          f"median of {args.runs} runs after a warm-up")
    print(table(["way", "images/s", "x torchvision"], rows))


if __name__ == "__main__":
    main()
