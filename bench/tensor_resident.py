"""Tensor-resident augmentation: a batch already on the device, the exported Kornia module's
`augment_batch` (fused, and with fuse=False, and with torch.compile) vs a hand-written Kornia
AugmentationSequential of the same chain, and on the CPU an Albumentations Compose of it.

No decoding and no copies: a uint8 NCHW batch of photos (resized to --size) sits on the
device; each side turns it into float and runs the example chain (RandomResizedCrop 224 ->
HorizontalFlip -> Rotate -> Brightness -> Normalize). Albumentations takes the same photos as
uint8 HWC arrays, one at a time in one process, as a CPU loader's worker does. Interleaved runs
after a warm-up (the compiled side compiles during its first warm-up call, timed apart); each
timed run is --block calls back to back, synchronised before the timer starts and before it
stops, so on a GPU the host queues a call while the device runs the one before, as in a training
loop (--block 1 times each call alone: its latency); medians. Usage:

    python bench/tensor_resident.py [--batch 256] [--size 256] [--runs 9] [--block 5] [--device cuda] [--compile]

Targets (issue 14): on a GPU >= 10x AugmentationSequential and >= 50k img/s on an H100; on the
2-core CPU >= 3x AugmentationSequential and >= 0.8x Albumentations.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch

from common import add_json_option, machine_line, table, write_figures
from kornia_run_vs_handwritten import hand_written, images_of
from workbench.codegen import load_module
from workbench.examples import example_chain


def hand_written_albumentations():
    """The same chain as an Albumentations user writes it (a CPU library: GPU machines may lack it)."""
    import albumentations as A
    import cv2

    return A.Compose([
        A.RandomResizedCrop(size=(224, 224), scale=(0.5, 1.0), ratio=(0.75, 1.3333)),
        A.HorizontalFlip(p=0.5),
        A.Rotate(limit=(-20, 20), p=1.0, border_mode=cv2.BORDER_CONSTANT, fill=0),
        A.ColorJitter(brightness=(0.7, 1.3), contrast=(1, 1), saturation=(1, 1), hue=(0, 0), p=1.0),
        A.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--block", type=int, help="calls per timed run, back to back (default: 5 on a GPU, "
                        "1 on a CPU, where a call ends when its work does)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--compile", action="store_true", help="also time augment_batch(torch_compile=True)")
    add_json_option(parser)
    args = parser.parse_args()

    device = torch.device(args.device)
    args.block = args.block or (5 if device.type == "cuda" else 1)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    module = load_module(example_chain().export("kornia"), "kornia")
    exported = module.place(module.build_augmentation(), device)
    expert = hand_written().to(device)
    arrays = images_of(args.batch, args.size)
    batch = torch.stack([torch.from_numpy(a).permute(2, 0, 1) for a in arrays]).to(device)

    sides = {"exported augment_batch (fused)": lambda: module.augment_batch(exported, batch, device),
             "exported, fuse=False": lambda: module.augment_batch(exported, batch, device, fuse=False),
             "hand-written AugmentationSequential": lambda: expert(batch.float().div_(255.0))}
    compile_seconds = None
    if args.compile:
        def compiled():
            return module.augment_batch(exported, batch, device, torch_compile=True)
        sides["exported, torch_compile=True"] = compiled
        sync()
        start = time.perf_counter()
        with torch.no_grad():
            sides["exported, torch_compile=True"]()
        sync()
        compile_seconds = time.perf_counter() - start
    if device.type == "cpu":
        compose = hand_written_albumentations()
        sides["hand-written Albumentations Compose"] = lambda: [compose(image=a)["image"] for a in arrays]
    times = {name: [] for name in sides}
    with torch.no_grad():
        for k in range(args.warmup + args.runs):
            for name, run in sides.items():
                sync()
                start = time.perf_counter()
                for _ in range(args.block):
                    run()
                sync()
                if k >= args.warmup:
                    times[name].append(time.perf_counter() - start)
    rates = {name: args.batch * args.block / statistics.median(t) for name, t in times.items()}
    reference = rates["hand-written AugmentationSequential"]
    print(machine_line(args.device))
    print(f"batch {args.batch} x {args.size}x{args.size} uint8 on {args.device} -> 224x224 float, "
          f"{args.runs} interleaved runs of {args.block} calls after {args.warmup} warm-up, medians; "
          f"torch threads {torch.get_num_threads()}")
    rows = [[name, f"{rate:.0f}", f"{rate / reference:.2f}x",
             f"{rate / rates['hand-written Albumentations Compose']:.2f}x" if "hand-written Albumentations Compose"
             in rates else "-"] for name, rate in rates.items()]
    print(table(["side", "images/s", "vs AugmentationSequential", "vs Albumentations"], rows))
    if compile_seconds is not None:
        print(f"first compiled call (compiling): {compile_seconds:.1f} s")
    keys = {"exported augment_batch (fused)": "fused", "exported, fuse=False": "unfused",
            "hand-written AugmentationSequential": "augmentation_sequential",
            "exported, torch_compile=True": "compiled",
            "hand-written Albumentations Compose": "albumentations"}
    figures = {keys[name]: rate for name, rate in rates.items()}
    figures.update({f"{keys[name]}_over_sequential": rate / reference for name, rate in rates.items()
                    if name != "hand-written AugmentationSequential"})
    if compile_seconds is not None:
        figures["compile_seconds"] = compile_seconds
    write_figures(args.json, **figures)


if __name__ == "__main__":
    main()
