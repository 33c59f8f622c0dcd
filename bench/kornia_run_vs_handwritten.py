"""chain.run (Kornia, CPU) vs a hand-written Kornia AugmentationSequential of the same chain.

Both sides start from the same list of uint8 HxWx3 arrays and end with a float32 NxHxWxC
numpy array, so conversions are counted on both. Runs are interleaved (A, B, A, B, ...)
after a warm-up; the table reports medians and the ratio (workbench / hand-written, >= 0.95
is the target). Usage:

    python bench/kornia_run_vs_handwritten.py [--batch 16] [--size 256] [--runs 9] [--device cuda]

On a GPU both sides copy the numpy batch to the device and the result back (numpy in and out,
what chain.run promises), synchronised before each timer stops.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import kornia
import kornia.augmentation as K
import numpy as np
import torch
from PIL import Image

import workbench as wb
from workbench.examples import example_chain

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import add_json_option, write_figures  # noqa: E402


def hand_written():
    """What an expert writes by hand for the same chain."""
    return K.AugmentationSequential(
        K.RandomResizedCrop((224, 224), scale=(0.5, 1.0), ratio=(0.75, 1.3333), align_corners=False),
        K.RandomHorizontalFlip(p=0.5),
        K.RandomRotation(degrees=(-20.0, 20.0), p=1.0, align_corners=False),
        K.ColorJitter(brightness=(0.7, 1.3), p=1.0),
        K.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    )


def images_of(batch: int, size: int) -> list[np.ndarray]:
    photos = wb.load_images()
    return [np.asarray(Image.fromarray(photos[i % len(photos)]).resize((size, size), Image.BILINEAR))
            for i in range(batch)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    add_json_option(parser)
    args = parser.parse_args()

    images = images_of(args.batch, args.size)
    chain = example_chain()
    device = torch.device(args.device)
    aug = hand_written().to(device)

    def run_workbench():
        return chain.run(images, backend="kornia", device=args.device).images

    def run_hand():
        with torch.no_grad():
            x = torch.from_numpy(np.stack(images)).to(device).permute(0, 3, 1, 2).float().div_(255.0)
            return aug(x).permute(0, 2, 3, 1).contiguous().cpu().numpy()  # .cpu() waits for the GPU

    assert run_workbench().shape == run_hand().shape
    times = {"workbench": [], "hand": []}
    for _ in range(args.warmup):
        run_workbench(), run_hand()
    for _ in range(args.runs):
        for name, fn in (("workbench", run_workbench), ("hand", run_hand)):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    ips = {k: args.batch / v for k, v in med.items()}
    ratio = ips["workbench"] / ips["hand"]
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, torch threads {torch.get_num_threads()}; "
          f"python {platform.python_version()}, torch {torch.__version__}, kornia {kornia.__version__}")
    print(f"device {args.device}, batch {args.batch} x {args.size}x{args.size} -> 224x224, {args.runs} interleaved "
          f"runs after {args.warmup} warm-up, medians")
    print("| chain.run images/s | hand-written images/s | ratio |")
    print("|---|---|---|")
    print(f"| {ips['workbench']:.1f} | {ips['hand']:.1f} | {ratio:.3f} |")
    write_figures(args.json, workbench=ips["workbench"], hand=ips["hand"], ratio=ratio)


if __name__ == "__main__":
    main()
