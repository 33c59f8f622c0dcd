"""The exported Albumentations training loader vs a hand-written DataLoader + A.Compose.

Both decode the same JPEG files with PIL and augment them with Albumentations on
`--workers` DataLoader processes, for the example chain (RandomResizedCrop 224 ->
HorizontalFlip p=0.5 -> Rotate [-20, 20] -> Brightness [0.7, 1.3] -> Normalize), written by
hand the way the Albumentations documentation writes it (A.Compose(..., seed=...) with
ToTensorV2). All the work happens on the workers, so the loaders do not run side by side:
runs alternate, each a fresh loader timed over `--batches` batches after a warm-up and shut
down before the other starts; medians over runs. Ratio = exported / hand-written (target
>= 0.95). Usage:

    python bench/albumentations_export_vs_handwritten.py [--batch 32] [--size 256] [--runs 7]
        [--batches 24] [--workers 2]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import albumentations as A
import cv2
import numpy as np
from albumentations.pytorch import ToTensorV2
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from common import alternate_runs, chain_named, machine_line, table
from workbench.codegen import load_module
from workbench.estimate.files import prepare_input


def hand_written() -> A.Compose:
    """The example chain as an Albumentations user writes it."""
    return A.Compose([
        A.RandomResizedCrop(size=(224, 224), scale=(0.5, 1.0), ratio=(0.75, 1.3333)),
        A.HorizontalFlip(p=0.5),
        A.Rotate(limit=(-20, 20), border_mode=cv2.BORDER_CONSTANT, fill=0, p=1.0),
        A.ColorJitter(brightness=(0.7, 1.3), contrast=(1, 1), saturation=(1, 1), hue=(0, 0), p=1.0),
        A.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
        ToTensorV2(),
    ], seed=7)


class Photos(Dataset):
    """Decode with PIL, augment with the Compose."""

    def __init__(self, files, length):
        self.files, self.length, self.compose = files, length, hand_written()

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        with Image.open(self.files[i % len(self.files)]) as image:
            array = np.asarray(image.convert("RGB"))
        return self.compose(image=array)["image"], 0


def hand_written_batches(files, batch, workers, length):
    loader = DataLoader(Photos(files, length), batch_size=batch, shuffle=True, num_workers=workers, drop_last=True,
                        prefetch_factor=4 if workers else None)
    yield from loader


def measure(batch: int, size: int, runs: int, batches: int, workers: int, warmup: int = 3) -> list:
    inp = prepare_input(None, (size, size))
    module = load_module(chain_named("example").export("albumentations"), "albumentations")
    # Enough samples that the timed batches never wait on the sampler running out.
    length = batch * (warmup + batches + 4 * workers + 1)
    factories = {"exported": lambda: (b[1] for b in module.training_batches(str(inp.folder), batch, workers=workers,
                                                                             device="cpu", num_samples=length)),
                 "hand": lambda: (b[0] for b in hand_written_batches(inp.files, batch, workers, length))}
    rates = alternate_runs(factories, lambda b: batch, runs, batches, warmup)
    med = {k: statistics.median(v) for k, v in rates.items()}
    return [batch, f"{size}x{size}", workers, f"{runs} x {batches}", f"{med['exported']:.1f}", f"{med['hand']:.1f}",
            f"{med['exported'] / med['hand']:.3f}"]


HEADER = ["batch", "image", "workers", "runs x batches", "exported images/s", "hand-written images/s", "ratio"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--batches", type=int, default=24)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    row = measure(args.batch, args.size, args.runs, args.batches, args.workers)
    print(machine_line("cpu"))
    print(table(HEADER, [row]))


if __name__ == "__main__":
    main()
