"""Preview latency: from a control change in the app to the new preview images.

16 images of 256x256, a 6-step chain, the app with debouncing off (the debounce delay is a
choice, not work); each measurement sets a parameter control and waits for the refreshed
grid. The app caches the state before each step (Kornia and DALI), so the cost depends on
which step changes: later steps recompute less. Medians after a warm-up. Usage:

    python bench/preview_latency.py [--draws 1] [--backend kornia] [--runs 9] [--device cuda]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)

import numpy as np
import torch
from PIL import Image

import workbench as wb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import add_json_option, write_figures  # noqa: E402

CHAIN = {"seed": 3, "steps": [
    {"op": "RandomResizedCrop", "params": {"size": [224, 224], "scale": [0.5, 1.0]}},
    {"op": "HorizontalFlip", "p": 0.5},
    {"op": "Rotate", "params": {"degrees": [-20, 20]}},
    {"op": "Brightness", "params": {"factor": [0.7, 1.3]}},
    {"op": "GaussianBlur", "params": {"sigma": [0.1, 1.5]}},
    {"op": "Normalize"}]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1)
    parser.add_argument("--backend", default="kornia")
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--device", default="cpu", help="cpu or cuda (the app's backend/device switch)")
    parser.add_argument("--step", type=int, default=3, help="index of the step whose control changes "
                        "(0-based; a step with a range parameter)")
    add_json_option(parser)
    args = parser.parse_args()
    photos = wb.load_images()
    images = [np.asarray(Image.fromarray(photos[i % len(photos)]).resize((256, 256), Image.BILINEAR))
              for i in range(16)]
    app = wb.Workbench(images=images, chain=wb.Chain.from_dict(CHAIN), backend=args.backend, device=args.device,
                       draws=args.draws, max_images=16, debounce_s=0)
    spec = wb.get_op(app.chain.steps[args.step].op)
    name = next(p.name for p in spec.params if p.ui == "range_slider")  # a slider a user would drag
    control = app.steps_box.children[args.step].step_controls[name]
    lo, hi = control.value
    values = [(lo + d, hi - d) for d in (0.01, 0.02)]
    times = []
    for k in range(args.runs + 2):
        start = time.perf_counter()
        control.value = values[k % 2]  # the observer recomputes and redraws synchronously
        elapsed = time.perf_counter() - start
        if k >= 2:
            times.append(elapsed)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, torch threads {torch.get_num_threads()}; "
          f"torch {torch.__version__}")
    print(f"backend {args.backend} on {args.device}, 16 images 256x256, 6 steps, change at step {args.step + 1} "
          f"({app.chain.steps[args.step].op}), {args.draws} draw(s), {args.runs} runs after 2 warm-up")
    print(f"median control-change-to-new-images: {statistics.median(times) * 1000:.0f} ms "
          f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})")
    write_figures(args.json, median_ms=statistics.median(times) * 1000, min_ms=min(times) * 1000,
                  max_ms=max(times) * 1000)


if __name__ == "__main__":
    main()
