"""DALI (CPU) vs Kornia (CPU) on the same chain and the same in-memory images.

Two views, each measured side by side (alternating blocks after a warm-up, medians):
  preview: chain.run(images, backend=...) as the workbench preview calls it;
  loader:  the exported scripts' own --bench (decode from files + augment), run alternately.
Usage:

    python bench/backends_cpu.py [--batch 16] [--size 256] [--runs 7]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)

import kornia
import numpy as np
import nvidia.dali as dali
import torch
from PIL import Image

import workbench as wb
from workbench.examples import example_chain


def preview_rates(chain, images, runs):
    rates = {"kornia": [], "dali": []}
    for backend in rates:
        chain.run(images, backend=backend)  # warm-up: imports, first build
    for _ in range(runs):
        for backend in rates:
            start = time.perf_counter()
            chain.run(images, backend=backend)
            rates[backend].append(len(images) / (time.perf_counter() - start))
    return {k: statistics.median(v) for k, v in rates.items()}


def loader_rates(chain, batch, runs):
    rates = {"kornia": [], "dali": []}
    with tempfile.TemporaryDirectory() as tmp:
        scripts = {b: Path(tmp) / f"aug_{b}.py" for b in rates}
        for backend, path in scripts.items():
            chain.export(backend, path=path.name, folder=tmp)
        for _ in range(runs):
            for backend, path in scripts.items():
                out = subprocess.run([sys.executable, str(path), "--images", str(wb.SAMPLE_DATA), "--bench",
                                      "--batch-size", str(batch), "--runs", "3", "--warmup", "3",
                                      "--workers", "2", "--device", "cpu"],
                                     capture_output=True, text=True, check=True).stdout
                rates[backend].append(float(out.strip().splitlines()[-1].split(": ")[1]))
    return {k: statistics.median(v) for k, v in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--loader-runs", type=int, default=3)
    args = parser.parse_args()
    photos = wb.load_images()
    images = [np.asarray(Image.fromarray(photos[i % len(photos)]).resize((args.size, args.size), Image.BILINEAR))
              for i in range(args.batch)]
    chain = example_chain()
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, torch threads {torch.get_num_threads()}; "
          f"python {platform.python_version()}, torch {torch.__version__}, kornia {kornia.__version__}, "
          f"DALI {dali.__version__}")
    pre = preview_rates(chain, images, args.runs)
    print(f"preview (chain.run), batch {args.batch} x {args.size}x{args.size}, {args.runs} alternating runs:")
    print(f"| kornia images/s | dali images/s | dali / kornia |\n|---|---|---|\n"
          f"| {pre['kornia']:.1f} | {pre['dali']:.1f} | {pre['dali'] / pre['kornia']:.2f} |")
    load = loader_rates(chain, args.batch, args.loader_runs)
    print(f"loader (exported --bench on sample_data, batch {args.batch}, 2 workers/threads, "
          f"{args.loader_runs} alternating runs):")
    print(f"| kornia images/s | dali images/s | dali / kornia |\n|---|---|---|\n"
          f"| {load['kornia']:.1f} | {load['dali']:.1f} | {load['dali'] / load['kornia']:.2f} |")


if __name__ == "__main__":
    main()
