"""Tensor-resident augmentation: a batch already on the device, the exported Kornia module's
`augment_batch` vs a hand-written Kornia AugmentationSequential of the same chain.

No decoding and no copies: a uint8 NCHW batch of photos (resized to --size) sits on the
device; each side turns it into float and runs the example chain (RandomResizedCrop 224 ->
HorizontalFlip -> Rotate -> Brightness -> Normalize). Interleaved runs after a warm-up,
synchronised before each timer stops; medians. Usage:

    python bench/tensor_resident.py [--batch 64] [--size 256] [--runs 9] [--device cuda]
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

from common import machine_line, table
from kornia_run_vs_handwritten import hand_written, images_of
from workbench.codegen import load_module
from workbench.examples import example_chain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    device = torch.device(args.device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    module = load_module(example_chain().export("kornia"), "kornia")
    exported = module.place(module.build_augmentation(), device)
    expert = hand_written().to(device)
    batch = torch.stack([torch.from_numpy(a).permute(2, 0, 1) for a in images_of(args.batch, args.size)]).to(device)

    sides = {"exported augment_batch": lambda: module.augment_batch(exported, batch, device),
             "hand-written AugmentationSequential": lambda: expert(batch.float().div_(255.0))}
    times = {name: [] for name in sides}
    with torch.no_grad():
        for k in range(args.warmup + args.runs):
            for name, run in sides.items():
                sync()
                start = time.perf_counter()
                run()
                sync()
                if k >= args.warmup:
                    times[name].append(time.perf_counter() - start)
    rates = {name: args.batch / statistics.median(t) for name, t in times.items()}
    mine, theirs = rates["exported augment_batch"], rates["hand-written AugmentationSequential"]
    print(machine_line(args.device))
    print(f"batch {args.batch} x {args.size}x{args.size} uint8 on {args.device} -> 224x224 float, "
          f"{args.runs} interleaved runs after {args.warmup} warm-up, medians")
    print(table(["exported images/s", "hand-written images/s", "ratio"], [[f"{mine:.0f}", f"{theirs:.0f}",
                                                                         f"{mine / theirs:.3f}"]]))


if __name__ == "__main__":
    main()
