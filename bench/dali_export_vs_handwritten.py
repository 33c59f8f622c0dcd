"""The exported DALI training pipeline vs a hand-written expert DALI pipeline of the same chain.

Both read the same files (fn.readers.file), decode with DALI (libjpeg-turbo on the CPU, nvJPEG
with device="mixed" on a GPU: `--device gpu`), apply the example chain (RandomResizedCrop 224
-> HorizontalFlip p=0.5 -> Rotate [-20, 20] -> Brightness [0.7, 1.3] -> Normalize) and return
float HWC batches. The expert fuses the random crop into decoding
(fn.decoders.image_random_crop), as the export's region decoding does. DALI runs ahead
asynchronously, so single calls cannot be timed while interleaving: blocks of batches
alternate between the two pipelines after a warm-up, and each block's images/s is the
batches it delivered over its wall time; medians over blocks. Ratio = exported /
hand-written (target >= 1.0 with region decoding). Usage:

    python bench/dali_export_vs_handwritten.py [--batch 16] [--blocks 5] [--block 10] [--threads 2]
    python bench/dali_export_vs_handwritten.py --device gpu --images DIR --batch 256 --threads 8
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import nvidia.dali as dali
import nvidia.dali.fn as fn
import nvidia.dali.types as types
from nvidia.dali import pipeline_def

import workbench as wb
from common import add_json_option, alternate_blocks, write_figures
from workbench.codegen import load_module
from workbench.examples import example_chain

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


@pipeline_def
def hand_written(files, gpu=False):
    """What an expert writes by hand for the same chain, in the same order: the random crop
    fused into decoding (only the window is decoded), then a resize. The flip stays before the
    rotation; moving it into crop_mirror_normalize would change per-sample results (the export
    fuses it only where the steps between are mirror-invariant)."""
    encoded, labels = fn.readers.file(files=files, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(encoded, device="mixed" if gpu else "cpu", output_type=types.RGB,
                                           random_area=(0.5, 1.0), random_aspect_ratio=(0.75, 1.3333))
    images = fn.resize(images, size=(224, 224), antialias=False)
    images = fn.flip(images, horizontal=fn.random.coin_flip(probability=0.5))
    images = fn.rotate(images, angle=fn.random.uniform(range=(-20.0, 20.0)), keep_size=True, fill_value=0)
    images = fn.brightness(images, brightness=fn.random.uniform(range=(0.7, 1.3)))
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="HWC", mean=MEAN, std=STD)
    return images, labels


def block_rates(pipes: dict, batch: int, blocks: int, block: int, warmup: int) -> dict[str, float]:
    """Build the pipelines, then alternate blocks of batches between them; median images/s."""
    sources = {}
    for name, pipe in pipes.items():
        pipe.build()
        sources[name] = iter(pipe.run, None)
    rates = alternate_blocks(sources, lambda outputs: batch, blocks, block, warmup)
    return {name: statistics.median(r) for name, r in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--block", type=int, default=10, help="batches per block")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--images", default=str(wb.SAMPLE_DATA), help="folder of images (default: sample_data)")
    add_json_option(parser)
    args = parser.parse_args()

    chain = example_chain()
    module = load_module(chain.export("dali"), "dali")
    files, labels = module.image_folder(args.images)
    gpu = args.device == "gpu"
    common = dict(batch_size=args.batch, num_threads=args.threads, device_id=0 if gpu else None, seed=1)
    pipes = {"exported": module.training_pipeline(files, labels, gpu=gpu, **common),
             "hand": hand_written(files, gpu=gpu, **common)}
    ips = block_rates(pipes, args.batch, args.blocks, args.block, args.warmup)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores; python {platform.python_version()}, "
          f"DALI {dali.__version__}; {args.device.upper()} pipelines, {args.threads} threads")
    print(f"batch {args.batch}, {len(files)} files from {args.images} -> 224x224, {args.blocks} alternating "
          f"blocks of {args.block} batches after {args.warmup} warm-up, medians")
    print("| exported images/s | hand-written images/s | ratio |")
    print("|---|---|---|")
    print(f"| {ips['exported']:.1f} | {ips['hand']:.1f} | {ips['exported'] / ips['hand']:.3f} |")
    write_figures(args.json, exported=ips["exported"], hand=ips["hand"], ratio=ips["exported"] / ips["hand"])


if __name__ == "__main__":
    main()
