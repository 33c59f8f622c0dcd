"""The exported Kornia training loader vs a hand-written DataLoader + AugmentationSequential.

Both decode the same JPEG files with PIL on `--workers` DataLoader processes, batch them as
uint8, convert to float on the device and apply the example chain (RandomResizedCrop 224 ->
HorizontalFlip p=0.5 -> Rotate [-20, 20] -> Brightness [0.7, 1.3] -> Normalize). Blocks of
batches alternate between the two loaders after a warm-up; medians over blocks.
Ratio = exported / hand-written (target >= 0.95). Usage:

    python bench/kornia_export_vs_handwritten.py [--batch 32] [--size 256] [--blocks 7] [--block 6] [--workers 2]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from common import add_json_option, alternate_blocks, chain_named, machine_line, table, write_figures
from kornia_run_vs_handwritten import hand_written
from workbench.codegen import load_module
from workbench.estimate.files import prepare_input


class Photos(Dataset):
    """What an expert writes: decode with PIL to a uint8 CHW tensor."""

    def __init__(self, files, length):
        self.files, self.length = files, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        with Image.open(self.files[i % len(self.files)]) as image:
            array = np.asarray(image.convert("RGB"))
        return torch.from_numpy(array).permute(2, 0, 1).contiguous(), 0


def hand_written_batches(files, batch, workers, device, length):
    loader = DataLoader(Photos(files, length), batch_size=batch, shuffle=True, num_workers=workers, drop_last=True,
                        pin_memory=device.type == "cuda", persistent_workers=workers > 0,
                        prefetch_factor=4 if workers else None)
    aug = hand_written().to(device)
    for images, labels in loader:
        with torch.no_grad():
            yield aug(images.to(device, non_blocking=True).float().div_(255.0)), labels


def measure(batch: int, size: int, blocks: int, block: int, workers: int, device: str = "cpu") -> tuple[list, dict]:
    """The table's row and the medians ({"exported", "hand"} images/s)."""
    device = torch.device(device)
    inp = prepare_input(None, (size, size))
    # With gpu_decode, as the earlier figures were measured (on a CPU the loader decodes with PIL either way).
    module = load_module(chain_named("example").export("kornia", gpu_decode=True), "kornia")
    length = batch * (blocks * block + 40)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def synced(it):
        for item in it:
            sync()
            yield item

    sources = {"exported": synced(module.training_batches(str(inp.folder), batch, workers=workers, device=device,
                                                          num_samples=length)),
               "hand": synced(hand_written_batches(inp.files, batch, workers, device, length))}
    rates = alternate_blocks(sources, lambda b: batch, blocks, block, warmup=3)
    med = {k: statistics.median(v) for k, v in rates.items()}
    return [batch, f"{size}x{size}", workers, f"{blocks} x {block}", f"{med['exported']:.1f}", f"{med['hand']:.1f}",
            f"{med['exported'] / med['hand']:.3f}"], med


HEADER = ["batch", "image", "workers", "blocks x batches", "exported images/s", "hand-written images/s", "ratio"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--block", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    add_json_option(parser)
    args = parser.parse_args()
    row, med = measure(args.batch, args.size, args.blocks, args.block, args.workers, args.device)
    print(machine_line(args.device))
    print(table(HEADER, [row]))
    write_figures(args.json, exported=med["exported"], hand=med["hand"], ratio=med["exported"] / med["hand"])


if __name__ == "__main__":
    main()
