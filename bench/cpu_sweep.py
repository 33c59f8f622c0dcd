"""chain.run (Kornia, CPU) against Kornia's AugmentationSequential and a single-process Albumentations
Compose, over common chains, batch sizes and image sizes (issue 30's sweep).

Each chain is written three times: the workbench chain, and what an expert writes by hand with each
library's own classes for the same steps and settings. All three start from the same list of uint8
HxWx3 numpy arrays and end with one float32 NxHxWxC numpy array (Kornia's sides convert to and from a
float tensor in [0, 1]; Albumentations runs image by image, then stacks, with ToFloat where the chain has
no Normalize). The workbench's Resize shrinks with a low-pass filter (antialias, its default), and so do
Kornia's (antialias=True) and Albumentations' (area_for_downscale="image", OpenCV's area filter) here; the
crops' resizes (RandomResizedCrop) filter on no side. Runs are interleaved after a warm-up, in rounds of one
call per side whose order turns each round (see measure); each cell is the median of the runs. Ratios:
workbench / AugmentationSequential and workbench / Albumentations.
Usage:

    python bench/cpu_sweep.py                       # the whole sweep (9 chains x 3 batches x 3 sizes)
    python bench/cpu_sweep.py --quick               # batch 8 and 32, sizes 128 and 256, fewer runs
    python bench/cpu_sweep.py --chains imagenet_train --batches 32 --sizes 256 --runs 7
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import albumentations as A  # noqa: E402
import kornia.augmentation as K  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

import workbench as wb  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import add_json_option, machine_line, table, write_figures  # noqa: E402

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class Case:
    """One chain three ways: the workbench's steps, an AugmentationSequential, an A.Compose (None where
    Albumentations has no such transform)."""

    name: str
    what: str
    chain: Callable[[], wb.Chain]
    kornia: Callable[[], K.AugmentationSequential]
    albumentations: Callable[[], A.Compose] | None


def _k_normalize():
    return K.Normalize(mean=torch.tensor(MEAN), std=torch.tensor(STD))


CASES = (
    Case("imagenet_train", "RandomResizedCrop 224, HorizontalFlip, ColorJitter, Normalize",
         lambda: wb.Chain(seed=1).add("RandomResizedCrop", size=[224, 224]).add("HorizontalFlip", p=0.5)
         .add("ColorJitter", p=0.8, brightness=[0.6, 1.4], contrast=[0.6, 1.4], saturation=[0.6, 1.4], hue=[-0.1, 0.1])
         .add("Normalize"),
         lambda: K.AugmentationSequential(
             K.RandomResizedCrop((224, 224), scale=(0.08, 1.0), ratio=(0.75, 1.3333)), K.RandomHorizontalFlip(p=0.5),
             K.ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-0.1, 0.1), p=0.8),
             _k_normalize()),
         lambda: A.Compose([
             A.RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0), ratio=(0.75, 1.3333)), A.HorizontalFlip(p=0.5),
             A.ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-0.1, 0.1), p=0.8),
             A.Normalize(mean=MEAN, std=STD)])),
    Case("imagenet_eval", "Resize 256, CenterCrop 224, Normalize",
         lambda: wb.Chain(seed=1).add("Resize", size=[256, 256]).add("CenterCrop", size=[224, 224]).add("Normalize"),
         lambda: K.AugmentationSequential(K.Resize((256, 256), antialias=True), K.CenterCrop((224, 224)),
                                          _k_normalize()),
         lambda: A.Compose([A.Resize(256, 256, area_for_downscale="image"), A.CenterCrop(224, 224),
                            A.Normalize(mean=MEAN, std=STD)])),
    Case("self_supervised_view", "RandomResizedCrop 224, HorizontalFlip, ColorJitter p=0.8, Grayscale p=0.2, "
         "GaussianBlur p=0.5, Normalize",
         lambda: wb.Chain(seed=1).add("RandomResizedCrop", size=[224, 224]).add("HorizontalFlip", p=0.5)
         .add("ColorJitter", p=0.8, brightness=[0.6, 1.4], contrast=[0.6, 1.4], saturation=[0.6, 1.4], hue=[-0.1, 0.1])
         .add("Grayscale", p=0.2).add("GaussianBlur", p=0.5, kernel_size=[9, 9], sigma=[0.1, 2.0]).add("Normalize"),
         lambda: K.AugmentationSequential(
             K.RandomResizedCrop((224, 224), scale=(0.08, 1.0), ratio=(0.75, 1.3333)), K.RandomHorizontalFlip(p=0.5),
             K.ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-0.1, 0.1), p=0.8),
             K.RandomGrayscale(p=0.2), K.RandomGaussianBlur((9, 9), (0.1, 2.0), p=0.5), _k_normalize()),
         lambda: A.Compose([
             A.RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0), ratio=(0.75, 1.3333)), A.HorizontalFlip(p=0.5),
             A.ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-0.1, 0.1), p=0.8),
             A.ToGray(p=0.2), A.GaussianBlur(blur_limit=(9, 9), sigma_limit=(0.1, 2.0), p=0.5),
             A.Normalize(mean=MEAN, std=STD)])),
    Case("segmentation", "Rotate 15, HorizontalFlip, Brightness, Contrast, Normalize",
         lambda: wb.Chain(seed=1).add("Rotate", degrees=[-15, 15]).add("HorizontalFlip", p=0.5)
         .add("Brightness", factor=[0.8, 1.2]).add("Contrast", factor=[0.8, 1.2]).add("Normalize"),
         lambda: K.AugmentationSequential(
             K.RandomRotation(15.0, p=1.0), K.RandomHorizontalFlip(p=0.5), K.RandomBrightness((0.8, 1.2), p=1.0),
             K.RandomContrast((0.8, 1.2), p=1.0), _k_normalize()),
         lambda: A.Compose([
             A.Rotate(limit=15, p=1.0), A.HorizontalFlip(p=0.5),
             A.ColorJitter(brightness=(0.8, 1.2), contrast=(1.0, 1.0), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0),
             A.ColorJitter(brightness=(1.0, 1.0), contrast=(0.8, 1.2), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0),
             A.Normalize(mean=MEAN, std=STD)])),
    Case("detection_style", "HorizontalFlip, Affine (rotate 10, translate 0.1, scale 0.9-1.1), Brightness, "
         "Resize 320",
         lambda: wb.Chain(seed=1).add("HorizontalFlip", p=0.5).add("Affine").add("Brightness")
         .add("Resize", size=[320, 320]),
         lambda: K.AugmentationSequential(
             K.RandomHorizontalFlip(p=0.5), K.RandomAffine(10.0, translate=(0.1, 0.1), scale=(0.9, 1.1), p=1.0),
             K.RandomBrightness((0.8, 1.2), p=1.0), K.Resize((320, 320), antialias=True)),
         lambda: A.Compose([
             A.HorizontalFlip(p=0.5),
             A.Affine(rotate=(-10, 10), translate_percent=(-0.1, 0.1), scale=(0.9, 1.1), p=1.0),
             A.ColorJitter(brightness=(0.8, 1.2), contrast=(1.0, 1.0), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0),
             A.Resize(320, 320, area_for_downscale="image"), A.ToFloat(max_value=255.0)])),
    Case("colour_heavy", "Brightness, Contrast, Saturation, Hue, Gamma, Normalize",
         lambda: wb.Chain(seed=1).add("Brightness").add("Contrast").add("Saturation").add("Hue").add("Gamma")
         .add("Normalize"),
         lambda: K.AugmentationSequential(
             K.RandomBrightness((0.8, 1.2), p=1.0), K.RandomContrast((0.8, 1.2), p=1.0),
             K.RandomSaturation((0.8, 1.2), p=1.0), K.RandomHue((-0.05, 0.05), p=1.0),
             K.RandomGamma((0.8, 1.25), p=1.0), _k_normalize()),
         lambda: A.Compose([
             A.ColorJitter(brightness=(0.8, 1.2), contrast=(1.0, 1.0), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0),
             A.ColorJitter(brightness=(1.0, 1.0), contrast=(0.8, 1.2), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0),
             A.ColorJitter(brightness=(1.0, 1.0), contrast=(1.0, 1.0), saturation=(0.8, 1.2), hue=(0.0, 0.0), p=1.0),
             A.ColorJitter(brightness=(1.0, 1.0), contrast=(1.0, 1.0), saturation=(1.0, 1.0), hue=(-0.05, 0.05), p=1.0),
             A.RandomGamma(gamma_limit=(80, 125), p=1.0), A.Normalize(mean=MEAN, std=STD)])),
    Case("policy", "RandAugment (n 2, magnitude 9), Normalize",
         lambda: wb.Chain(seed=1).add("RandAugment").add("Normalize"),
         lambda: K.AugmentationSequential(K.auto.RandAugment(n=2, m=9), _k_normalize()),
         None),  # Albumentations 2.0.8 has no RandAugment
    Case("blur_noise", "GaussianBlur, GaussianNoise p=0.5, MotionBlur p=0.5, Normalize",
         lambda: wb.Chain(seed=1).add("GaussianBlur").add("GaussianNoise", p=0.5).add("MotionBlur", p=0.5)
         .add("Normalize"),
         lambda: K.AugmentationSequential(
             K.RandomGaussianBlur((5, 5), (0.1, 2.0), p=1.0), K.RandomGaussianNoise(std=0.06, p=0.5),
             K.RandomMotionBlur(5, 35.0, 0.5, p=0.5), _k_normalize()),
         lambda: A.Compose([
             A.GaussianBlur(blur_limit=(5, 5), sigma_limit=(0.1, 2.0), p=1.0),
             A.GaussNoise(std_range=(0.02, 0.1), p=0.5),
             A.MotionBlur(blur_limit=(3, 7), p=0.5), A.Normalize(mean=MEAN, std=STD)])),
    Case("rrc_rotate", "RandomResizedCrop 192, Rotate, VerticalFlip, Contrast, Brightness, Normalize (the issue's)",
         lambda: wb.Chain(seed=1).add("RandomResizedCrop", size=[192, 192]).add("Rotate").add("VerticalFlip", p=0.5)
         .add("Contrast").add("Brightness").add("Normalize"),
         lambda: K.AugmentationSequential(
             K.RandomResizedCrop((192, 192), scale=(0.08, 1.0), ratio=(0.75, 1.3333)), K.RandomRotation(15.0, p=1.0),
             K.RandomVerticalFlip(p=0.5), K.RandomContrast((0.8, 1.2), p=1.0), K.RandomBrightness((0.8, 1.2), p=1.0),
             _k_normalize()),
         lambda: A.Compose([
             A.RandomResizedCrop(size=(192, 192), scale=(0.08, 1.0), ratio=(0.75, 1.3333)), A.Rotate(limit=15, p=1.0),
             A.VerticalFlip(p=0.5),
             A.ColorJitter(brightness=(1.0, 1.0), contrast=(0.8, 1.2), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0),
             A.ColorJitter(brightness=(0.8, 1.2), contrast=(1.0, 1.0), saturation=(1.0, 1.0), hue=(0.0, 0.0), p=1.0),
             A.Normalize(mean=MEAN, std=STD)])),
)


def images_of(batch: int, size: int) -> list[np.ndarray]:
    """`batch` sample photos resized to size x size, uint8 HxWx3."""
    photos = wb.load_images()
    return [np.asarray(Image.fromarray(photos[i % len(photos)]).resize((size, size), Image.BILINEAR))
            for i in range(batch)]


def runners(case: Case, images: list[np.ndarray]) -> dict[str, Callable[[], np.ndarray]]:
    """name -> a call that augments `images` once and returns the float32 NxHxWxC batch."""
    chain, sequential = case.chain(), case.kornia()

    def workbench():
        return chain.run(images, backend="kornia", device="cpu").images

    def kornia():
        with torch.inference_mode():
            x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float().div_(255.0)
            return sequential(x).permute(0, 2, 3, 1).contiguous().numpy()

    out = {"workbench": workbench, "AugmentationSequential": kornia}
    if case.albumentations is not None:
        compose = case.albumentations()
        compose.set_random_seed(1)

        def albumentations():
            return np.stack([compose(image=image)["image"] for image in images]).astype(np.float32, copy=False)

        out["Albumentations"] = albumentations
    return out


# Rounds of a row: at least --runs, and for a cheap row as many as fill about ROW_SECONDS per side (at most
# MAX_ROUNDS): a batch of 8 takes 5 to 20 ms, and five of them gave medians that moved by a tenth between sweeps.
ROW_SECONDS, MAX_ROUNDS = 0.4, 41


def measure(case: Case, batch: int, size: int, runs: int, warmup: int) -> dict[str, float]:
    """Median images/s of each side after `warmup` calls of each: rounds of one call per side, the order turned by
    one side each round (each side follows each other equally often: the threads a side leaves spinning slow the
    next one down, see threads.py), at least `runs` rounds, more for a cheap row (ROW_SECONDS)."""
    images = images_of(batch, size)
    calls = runners(case, images)
    slowest = 0.0
    for call in calls.values():
        for _ in range(warmup):
            start = time.perf_counter()
            out = call()
            slowest = max(slowest, time.perf_counter() - start)
            assert out.dtype == np.float32 and out.shape[0] == batch, (case.name, out.dtype, out.shape)
    rounds = max(runs, min(MAX_ROUNDS, int(ROW_SECONDS / max(slowest, 1e-6))))
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(rounds):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    return {name: batch / statistics.median(seconds) for name, seconds in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", default=",".join(c.name for c in CASES), help="comma-separated case names")
    parser.add_argument("--batches", default="8,32,128")
    parser.add_argument("--sizes", default="128,256,512")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="batches 8,32, sizes 128,256, 3 runs")
    add_json_option(parser)
    args = parser.parse_args()
    if args.quick:
        args.batches, args.sizes, args.runs = "8,32", "128,256", 3
    torch.set_num_threads(os.cpu_count() or 1)
    wanted = args.chains.split(",")
    cases = [c for c in CASES if c.name in wanted]
    batches, sizes = [int(b) for b in args.batches.split(",")], [int(s) for s in args.sizes.split(",")]
    started = time.perf_counter()
    print(machine_line())
    print(f"torch threads {torch.get_num_threads()}; albumentations {A.__version__}; at least {args.runs} rounds "
          f"(a cheap row: up to {MAX_ROUNDS}, about {ROW_SECONDS} s a side), the order turned each round, after "
          f"{args.warmup} warm-up; medians; uint8 numpy in, float32 NHWC numpy out\n")
    rows, over_sequential, over_albumentations = [], [], []
    for case in cases:
        for batch in batches:
            for size in sizes:
                rate = measure(case, batch, size, args.runs, args.warmup)
                seq = rate["workbench"] / rate["AugmentationSequential"]
                alb = rate["workbench"] / rate["Albumentations"] if "Albumentations" in rate else None
                over_sequential.append(seq)
                if alb is not None:
                    over_albumentations.append(alb)
                rows.append([case.name, batch, f"{size}^2", f"{rate['workbench']:.0f}",
                             f"{rate['AugmentationSequential']:.0f}",
                             f"{rate['Albumentations']:.0f}" if alb is not None else "-", f"{seq:.2f}",
                             f"{alb:.2f}" if alb is not None else "-"])
                print(" | ".join(str(c) for c in rows[-1]), flush=True)
    print()
    print(table(["chain", "batch", "image", "workbench img/s", "AugmentationSequential img/s", "Albumentations img/s",
                 "wb / Seq", "wb / Alb"], rows))
    figures = {"median_over_sequential": statistics.median(over_sequential),
               "median_over_albumentations": statistics.median(over_albumentations),
               "worst_over_albumentations": min(over_albumentations)}
    print(f"\nmedian workbench / AugmentationSequential {figures['median_over_sequential']:.2f} (target >= 3); "
          f"median workbench / Albumentations {figures['median_over_albumentations']:.2f} (target >= 1.0); "
          f"worst row {figures['worst_over_albumentations']:.2f} (target >= 0.8); "
          f"{len(rows)} rows in {time.perf_counter() - started:.0f} s")
    print("Chains:\n" + "\n".join(f"- {c.name}: {c.what}" for c in cases))
    write_figures(args.json, **figures)


if __name__ == "__main__":
    main()
