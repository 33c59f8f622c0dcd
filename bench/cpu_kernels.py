"""The CPU kernels behind issue 30's changes, each against what it replaced, measured side by side.

Each pair runs interleaved in one process after a warm-up (medians of --runs calls), on random data
of the sizes the sweep's chains meet:
- a first antialiased resize, 32 images 512^2 -> 256^2: on uint8 levels (what a CPU runs now, the
  program's LEVEL_STEPS) against floats (Kornia's path, what the step did before);
- 32 RandomResizedCrop windows of 128-256 pixels resized to 224^2, uint8 then converted, against
  converted then resized;
- hue_turns' maximal-channel mask on a plane of 16 x 224^2: sign(x - high) + 1 against (x == high)
  made floats.
Usage:

    python bench/cpu_kernels.py            # every pair, 21 runs each
    python bench/cpu_kernels.py --runs 41
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_line  # noqa: E402


def pairs() -> dict[str, tuple]:
    """name -> (now, before), two calls on the same data that give the same result (within a level
    for the resizes, bit for bit for the mask)."""
    generator = torch.Generator().manual_seed(0)
    levels = torch.randint(0, 256, (32, 512, 512, 3), dtype=torch.uint8, generator=generator).permute(0, 3, 1, 2)
    windows = [tuple(int(v) for v in torch.randint(0, 256, (4,), generator=generator)) for _ in range(32)]

    def crop(batch, i, window):
        y, x, h, w = window
        return batch[i:i + 1, :, y:y + 128 + h // 2, x:x + 128 + w // 2]

    def resize(batch, size, antialias):
        return F.interpolate(batch, size, mode="bilinear", align_corners=False, antialias=antialias)

    floats = torch.rand(16, 3, 224, 224, generator=generator)
    plane, high = floats[:, :1], floats.amax(1, keepdim=True)
    return {
        "antialiased resize 512^2 -> 256^2, 32 images": (
            lambda: resize(levels, (256, 256), True).float().div_(255.0),
            lambda: resize(levels.float().div_(255.0), (256, 256), True)),
        "32 RandomResizedCrop windows -> 224^2": (
            lambda: torch.cat([resize(crop(levels, i, w), (224, 224), False) for i, w in enumerate(windows)])
            .float().div_(255.0),
            lambda: torch.cat([resize(crop(levels, i, w).float().div_(255.0), (224, 224), False)
                               for i, w in enumerate(windows)])),
        "maximal-channel mask, 16 x 224^2": (
            lambda: torch.sub(plane, high).sign_().add_(1.0),
            lambda: (plane == high).to(torch.float32)),
    }


def medians(now, before, runs: int) -> tuple[float, float]:
    """Median milliseconds of each call, interleaved, after two warm-up calls of each."""
    times = ([], [])
    for _ in range(2):
        now(), before()
    for _ in range(runs):
        for call, out in zip((now, before), times):
            start = time.perf_counter()
            call()
            out.append(time.perf_counter() - start)
    return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    print(machine_line())
    print(f"torch threads {torch.get_num_threads()}; {args.runs} interleaved runs after 2 warm-up calls; medians")
    print("\n| kernel | now ms | before ms | before / now |\n|---|---|---|---|")
    with torch.no_grad():
        for name, (now, before) in pairs().items():
            new, old = medians(now, before, args.runs)
            print(f"| {name} | {new:.2f} | {old:.2f} | {old / new:.1f} |")


if __name__ == "__main__":
    main()
