"""The CPU kernels behind issue 30's changes, each against what it replaced, measured side by side.

Each pair runs interleaved in one process after a warm-up (medians of --runs calls), on random data
of the sizes the sweep's chains meet:
- a first antialiased resize, 32 images 512^2 -> 256^2: on uint8 levels (what a CPU runs now, the
  program's LEVEL_STEPS) against floats (Kornia's path, what the step did before);
- 32 RandomResizedCrop windows of 128-256 pixels resized to 224^2, uint8 then converted, against
  converted then resized; and the same windows' uint8 resize by cv2.resize (levels.py's
  sliced_crops_levels) against torch's uint8 F.interpolate (what Kornia's crop_by_indices gives levels);
- hue_turns' maximal-channel mask on a plane of 16 x 224^2: sign(x - high) + 1 against (x == high)
  made floats;
- a fused rotation of 32 images of 512^2, 256^2 and 192^2, and of 8 of 128^2: on their uint8 levels with
  cv2.warpAffine (kornia_modules/levels.py's resample_levels) against grid_sample on
  floats (fusion.py's fused_resample), each converted to floats;
- a ColorJitter with all four adjustments on 32 images of 224^2: on their uint8 levels with OpenCV
  (kornia_modules/levels.py, what a CPU runs now where a ColorJitter meets levels) against the fused
  colour run's float arithmetic (brightness, contrast_in_place, saturation_in_place, hue_turns), each
  followed by the conversion to floats the next step needs.
- 8 images of 224^2 uint8 laid out N x H x W x C from N x C x H x W: cv2.merge image by image (levels.py's
  channels_last_levels) against torch's contiguous(memory_format=torch.channels_last);
- 16 of 32 samples of 224^2 written back into a batch, uint8 and float32: one copy_ per sample (fusion.py's
  copy_rows) against index_copy_;
- Normalize of 32 images of 224^2 levels to float32 N x H x W x C: float tables looked up by cv2.LUT
  (levels.py's float_tables_levels) against the conversion, (x - mean) / std, and the transposing copy
  augment_images made of it;
- 32 RandomResizedCrop windows of 288-512 pixels in 512^2 images warped with a rotation into 192^2, uint8:
  the window with a rim of its edge pixels under a constant border (levels.py's window_source) against the
  window under BORDER_REPLICATE (what resample_levels did before);
- the ColorJitter's 32 images shared out to the cores (threads.py's sample_threads and each_sample, torch on one
  thread meanwhile) against one thread; the uint8 antialiased resize of 8 images 512^2 -> 256^2 laid out
  N x H x W x C, a part a core (shared_parts) against one call (which torch keeps to one core);
- a RandomResizedCrop's draws for 8 samples of 256^2: draws.py's resized_crop_draws (numpy) against Kornia's
  forward_parameters; 16 motion kernels of 5 x 5: filters.py's motion_kernels against Kornia's
  get_motion_kernel2d; GaussianNoise's noise for 16 of 32 samples of 3 x 256^2: WbGaussianNoise's (cv2.randn
  seeded per sample, shared out to the cores) against torch's normal_ for each sample (what it did before); 8
  images of 320^2 levels converted to float32 N x H x W x C: float_tables_levels with no step (a copy and a
  division) against cv2.LUT's per-channel tables (what it did before).
And one pair of processes: the chain Resize 256, CenterCrop 224, Normalize on 128 images of 320^2, in
a process that keeps the memory it frees (keep_freed_memory, what a CPU run does now) against one
that hands it back (the function replaced by a no-op), alternating, with the page faults per run.
Usage:

    python bench/cpu_kernels.py            # every pair, 21 runs each
    python bench/cpu_kernels.py --runs 41
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import cv2  # noqa: E402
import kornia.augmentation as K  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from workbench.runtime.kornia_modules.color import contrast_in_place, hue_turns, saturation_in_place  # noqa: E402
from workbench.runtime.kornia_modules.fusion import copy_rows, fused_resample  # noqa: E402
from workbench.runtime.kornia_modules.levels import (channels_last_levels, float_tables_levels,  # noqa: E402
                                                     jitter_levels, resample_levels, shifted,
                                                     sliced_crops_levels, window_source)
from workbench.runtime.kornia_modules.threads import sample_threads, shared_parts  # noqa: E402
from workbench.runtime.kornia_modules.draws import resized_crop_draws  # noqa: E402
from workbench.runtime.kornia_modules.filters import WbGaussianNoise, motion_kernels  # noqa: E402
from kornia.filters import get_motion_kernel2d  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_line  # noqa: E402


def pairs() -> dict[str, tuple]:
    """name -> (now, before), two calls on the same data that give the same result (within a level
    for the resizes and the rimmed windows, whose frames' masks both leave out; bit for bit for the mask)."""
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
    photos = torch.randint(0, 256, (32, 224, 224, 3), dtype=torch.uint8, generator=generator).permute(0, 3, 1, 2)
    factors = {key: torch.rand(32, generator=generator, dtype=torch.float64) * 0.8 + 0.6
               for key in ("brightness_factor", "contrast_factor", "saturation_factor")}
    factors["hue_factor"] = torch.rand(32, generator=generator, dtype=torch.float64) * 0.2 - 0.1

    def jitter_floats():
        x = photos.float().div_(255.0).mul_(factors["brightness_factor"].float().view(-1, 1, 1, 1)).clamp_(0.0, 1.0)
        x = saturation_in_place(contrast_in_place(x, factors["contrast_factor"]), factors["saturation_factor"])
        return hue_turns(x, factors["hue_factor"].float()).clamp_(0.0, 1.0)

    def rotations(count, side):
        angles = (torch.rand(count, generator=generator) - 0.5) * 0.5
        theta = torch.zeros(count, 3, 3)
        theta[:, 0, 0], theta[:, 0, 1], theta[:, 1, 0] = angles.cos(), -angles.sin(), angles.sin()
        theta[:, 1, 1], theta[:, 2, 2] = angles.cos(), 1.0
        batch = torch.randint(0, 256, (count, side, side, 3), dtype=torch.uint8, generator=generator)
        batch, run = batch.permute(0, 3, 1, 2), ([], None, None, (side, side), "bilinear", True)
        return (lambda: resample_levels(batch, theta, *run).float().div_(255.0),
                lambda: fused_resample(batch.float().div_(255.0), theta, *run))

    planar = torch.randint(0, 256, (8, 3, 224, 224), dtype=torch.uint8, generator=generator)
    rows = torch.arange(0, 32, 2)
    copied = {dtype: (torch.randint(0, 256, (32, 3, 224, 224), generator=generator).to(dtype),
                      torch.randint(0, 256, (16, 3, 224, 224), generator=generator).to(dtype))
              for dtype in (torch.uint8, torch.float32)}
    normalize = K.Normalize(torch.tensor([0.485, 0.456, 0.406]), torch.tensor([0.229, 0.224, 0.225]))
    mean, std = normalize.flags["mean"].view(1, -1, 1, 1), normalize.flags["std"].view(1, -1, 1, 1)
    unit = photos.contiguous(memory_format=torch.channels_last)

    def clamped_warps(rimmed):
        out = None
        for image, (x0, y0, side), matrix in zip(windowed, corners, turns):
            window = (x0, x0 + side - 1, y0, y0 + side - 1)
            if rimmed:
                source, shift, border = window_source(image, window, matrix, window, (192, 192))
            else:
                source, shift, border = image[y0:y0 + side, x0:x0 + side], shifted(matrix, x0, y0), \
                    cv2.BORDER_REPLICATE
            out = cv2.warpAffine(source, shift[:2], (192, 192), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                 borderMode=border)
        return out

    windowed = levels.permute(0, 2, 3, 1).numpy()
    corners = [(int(v[0]) % 64, int(v[1]) % 64, 288 + int(v[2]) % 160) for v in windows]
    turns = []
    for (x0, y0, side), angle in zip(corners, torch.rand(32, generator=generator).tolist()):
        c, s_, scale = math.cos(angle - 0.5), math.sin(angle - 0.5), side / 192
        centre = np.array([x0 + side / 2 - 0.5, y0 + side / 2 - 0.5])
        linear = scale * np.array([[c, -s_], [s_, c]])
        offset = centre - linear @ np.array([95.5, 95.5])
        turns.append(np.array([[*linear[0], offset[0]], [*linear[1], offset[1]], [0.0, 0.0, 1.0]]))

    boxes = torch.tensor([[[x, y], [x + 127 + w // 2, y], [x + 127 + w // 2, y + 127 + h // 2],
                           [x, y + 127 + h // 2]] for y, x, h, w in windows])
    interleaved = levels.contiguous(memory_format=torch.channels_last)

    def rows_pair(dtype):
        batch, part = copied[dtype]
        return (lambda: copy_rows(batch.clone(), rows, part), lambda: batch.clone().index_copy_(0, rows, part))

    return {
        "8 images 224^2 uint8 to N x H x W x C": (lambda: channels_last_levels(planar),
                                                  lambda: planar.contiguous(memory_format=torch.channels_last)),
        "16 of 32 samples 224^2 written back, uint8": rows_pair(torch.uint8),
        "16 of 32 samples 224^2 written back, float32": rows_pair(torch.float32),
        "Normalize of 32 images 224^2 levels to float32 N x H x W x C": (
            lambda: float_tables_levels(unit, [normalize], [{}], [None]),
            lambda: unit.float().div_(255.0).sub_(mean).div_(std).permute(0, 2, 3, 1).contiguous()),
        "32 windows 288-512 of 512^2 rotated into 192^2, uint8: rim vs BORDER_REPLICATE": (
            lambda: clamped_warps(True), lambda: clamped_warps(False)),
        "fused rotation, 32 images 512^2": rotations(32, 512),
        "fused rotation, 32 images 256^2": rotations(32, 256),
        "fused rotation, 32 images 192^2": rotations(32, 192),
        "fused rotation, 8 images 128^2": rotations(8, 128),
        "ColorJitter, 4 adjustments, 32 images 224^2": (
            lambda: jitter_levels(photos, factors, None, (0, 1, 2, 3)).float().div_(255.0), jitter_floats),
        "ColorJitter, 4 adjustments, 32 images 224^2: shared out to the cores vs one thread": (
            lambda: shared_out(32, lambda: jitter_levels(photos, factors, None, (0, 1, 2, 3))),
            lambda: jitter_levels(photos, factors, None, (0, 1, 2, 3))),
        "antialiased resize 512^2 -> 256^2, 8 images uint8 N x H x W x C: a part a core vs one call": (
            lambda: shared_out(8, lambda: shared_parts(8, lambda first, last: resize(
                interleaved[first:last], (256, 256), True))),
            lambda: resize(interleaved[:8], (256, 256), True)),
        "antialiased resize 512^2 -> 256^2, 32 images": (
            lambda: resize(levels, (256, 256), True).float().div_(255.0),
            lambda: resize(levels.float().div_(255.0), (256, 256), True)),
        "32 RandomResizedCrop windows -> 224^2": (
            lambda: torch.cat([resize(crop(levels, i, w), (224, 224), False) for i, w in enumerate(windows)])
            .float().div_(255.0),
            lambda: torch.cat([resize(crop(levels, i, w).float().div_(255.0), (224, 224), False)
                               for i, w in enumerate(windows)])),
        "32 RandomResizedCrop windows -> 224^2, uint8: cv2.resize vs torch": (
            lambda: sliced_crops_levels(interleaved, boxes, (224, 224), "bilinear"),
            lambda: torch.cat([resize(crop(interleaved, i, w), (224, 224), False) for i, w in enumerate(windows)])),
        "maximal-channel mask, 16 x 224^2": (
            lambda: torch.sub(plane, high).sign_().add_(1.0),
            lambda: (plane == high).to(torch.float32)),
    }


def fixed_cost_pairs() -> dict[str, tuple]:
    """The rows of a small batch's fixed costs (see the docstring): now, before, on the same modules and data."""
    crop, shape = K.RandomResizedCrop((224, 224)), torch.Size((8, 3, 256, 256))
    angle, direction = torch.rand(16) * 360.0, torch.rand(16) * 2.0 - 1.0
    noise = WbGaussianNoise(std=(0.02, 0.1), p=0.5)
    noise_shape = torch.Size((32, 3, 256, 256))
    interleaved = torch.randint(0, 256, (8, 320, 320, 3), dtype=torch.uint8).permute(0, 3, 1, 2)
    table = np.tile(torch.arange(256, dtype=torch.float32).div_(255.0).numpy()[:, None], (1, 3)).reshape(256, 1, 3)

    def lut_floats(batch):  # (what float_tables_levels did with no step: a table per channel)
        images = batch.permute(0, 2, 3, 1).numpy()
        results = np.empty(images.shape, np.float32)
        cv2.LUT(images.reshape(-1, *images.shape[2:]), table, dst=results.reshape(-1, *results.shape[2:]))
        return results

    def normal_noise():
        drawn = K.IntensityAugmentationBase2D.forward_parameters(noise, noise_shape)
        out = torch.empty(tuple(noise_shape))
        for n, applied in enumerate(drawn["batch_prob"].to(torch.bool).tolist()):
            out[n].normal_() if applied else out[n].zero_()
        return out

    return {
        "RandomResizedCrop draws, 8 samples 256^2": (lambda: resized_crop_draws(crop, shape),
                                                     lambda: crop.forward_parameters(shape)),
        "MotionBlur kernels, 16 of 5 x 5": (lambda: motion_kernels(5, angle, direction),
                                            lambda: get_motion_kernel2d(5, angle, direction)),
        "GaussianNoise's noise, 32 samples 3 x 256^2 at p = 0.5": (lambda: noise.forward_parameters(noise_shape),
                                                                   normal_noise),
        "levels to float32, 8 images 320^2 N x H x W x C: copy and division vs cv2.LUT": (
            lambda: float_tables_levels(interleaved, [], [], []), lambda: lut_floats(interleaved)),
    }


def shared_out(count, call):
    """call() inside sample_threads(count): the levels' loops and parts shared out to the cores (threads.py)."""
    with sample_threads(count):
        return call()


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


# One process's runs of a chain (see the docstring): milliseconds and page faults of each of 5 runs after 2.
_PROCESS_RUNS = """
import resource, sys, time
import numpy as np
import workbench as wb
from workbench.codegen import emit, load_module
chain = wb.Chain().add("Resize", size=[256, 256]).add("CenterCrop", size=[224, 224]).add("Normalize")
module = load_module(emit(chain, "kornia"), "kornia")
if sys.argv[1] == "before":
    module.keep_freed_memory = lambda *args: False
images = [np.random.default_rng(k).integers(0, 256, (320, 320, 3), dtype=np.uint8) for k in range(128)]
for _ in range(2):
    module.augment_images(images)
for _ in range(5):
    faults, start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.perf_counter()
    module.augment_images(images)
    print((time.perf_counter() - start) * 1000, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
"""


def kept_memory_row(rounds: int = 3) -> str:
    """The table row of the process pair (see the docstring): medians of every run of `rounds` processes each."""
    runs = {"now": [], "before": []}
    for _ in range(rounds):
        for mode in runs:
            done = subprocess.run([sys.executable, "-c", _PROCESS_RUNS, mode], capture_output=True, text=True,
                                  check=True, env={**os.environ, "KORNIA_INSTALLATION_MODE": "RAISE"})
            runs[mode] += [tuple(float(v) for v in line.split()) for line in done.stdout.split("\n") if line]
    (now, now_faults), (old, old_faults) = ((statistics.median(r[0] for r in runs[m]),
                                             statistics.median(r[1] for r in runs[m])) for m in ("now", "before"))
    return (f"| Resize, CenterCrop, Normalize, 128 images 320^2, memory kept (page faults per run: {now_faults:.0f} "
            f"vs {old_faults:.0f}) | {now:.2f} | {old:.2f} | {old / now:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    print(machine_line())
    print(f"torch threads {torch.get_num_threads()}; {args.runs} interleaved runs after 2 warm-up calls; medians")
    print("\n| kernel | now ms | before ms | before / now |\n|---|---|---|---|")
    with torch.no_grad():
        for name, (now, before) in {**pairs(), **fixed_cost_pairs()}.items():
            new, old = medians(now, before, args.runs)
            print(f"| {name} | {new:.2f} | {old:.2f} | {old / new:.1f} |")
    print(kept_memory_row())


if __name__ == "__main__":
    main()
