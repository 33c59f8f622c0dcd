"""The exported Kornia and DALI training loaders side by side on an ImageNet-style chain.

Chain: RandomResizedCrop 224 (scale 0.08-1) -> HorizontalFlip p=0.5 -> ColorJitter p=0.8
(0.4 brightness/contrast/saturation, 0.1 hue) -> Normalize. Input: a folder of JPEGs of
500x375 (ImageNet's typical size) made from the sample photos with PIL (--images to use
your own). Each export's own `--bench` runs in a fresh process, alternating Kornia, DALI,
Kornia, ...; medians over --repeats. Reports images/s and the ratio Kornia / DALI (target
on one H100 at batch 256: Kornia >= 10k images/s and >= 0.5x DALI). On a GPU the Kornia export
also runs with --decode-ahead (its GPU decoder decodes the next batch on a thread), side by side:
that option's first measurement. Usage:

    python bench/loaders_imagenet.py [--batch 64] [--files 512] [--workers 2] [--device cpu|cuda]
"""
from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from PIL import Image

import workbench as wb
from common import add_json_option, export_bench, machine_line, table, write_figures

IMAGENET_CHAIN = {"seed": 7, "steps": [
    {"op": "RandomResizedCrop", "params": {"size": [224, 224], "scale": [0.08, 1.0]}},
    {"op": "HorizontalFlip", "p": 0.5},
    {"op": "ColorJitter", "p": 0.8, "params": {"brightness": [0.6, 1.4], "contrast": [0.6, 1.4],
                                               "saturation": [0.6, 1.4], "hue": [-0.1, 0.1]}},
    {"op": "Normalize", "params": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}]}


def jpeg_folder(root: Path, count: int, size=(500, 375), processes: int = 1) -> Path:
    """`count` JPEGs (quality 90) of `size` (width, height): crops of the sample photos at
    varying positions and scales (file i from a generator seeded by i), so that files differ;
    `processes` > 1 writes them in that many processes."""
    jobs = [(root, i, size) for i in range(count)]
    if processes > 1:
        with multiprocessing.Pool(processes) as pool:
            pool.starmap(write_jpeg, jobs, chunksize=32)
    else:
        for job in jobs:
            write_jpeg(*job)
    return root


@functools.lru_cache(maxsize=1)
def sample_photos() -> tuple[np.ndarray, ...]:
    return tuple(wb.load_images())


def write_jpeg(root: Path, i: int, size: tuple[int, int]) -> None:
    photos = sample_photos()
    rng = np.random.default_rng(i)
    photo = Image.fromarray(photos[i % len(photos)])
    scale = rng.uniform(1.0, 1.6) * max(size[0] / photo.width, size[1] / photo.height)
    photo = photo.resize((max(size[0], round(photo.width * scale)), max(size[1], round(photo.height * scale))))
    x, y = (int(rng.integers(0, room + 1)) for room in (photo.width - size[0], photo.height - size[1]))
    photo.crop((x, y, x + size[0], y + size[1])).save(root / f"img_{i:05d}.jpg", quality=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--files", type=int, default=512)
    parser.add_argument("--workers", type=int, default=2, help="Kornia decoding processes and DALI threads")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--images", help="a folder of your own images (default: JPEGs made from sample_data)")
    parser.add_argument("--write-jpegs", metavar="DIR", help="only write --files JPEGs into DIR (for other benchmarks)")
    add_json_option(parser)
    args = parser.parse_args()
    if args.write_jpegs:
        Path(args.write_jpegs).mkdir(parents=True, exist_ok=True)
        jpeg_folder(Path(args.write_jpegs), args.files, processes=os.cpu_count() or 1)
        print(f"wrote {args.files} JPEGs 500x375 into {args.write_jpegs}")
        return

    chain = wb.Chain.from_dict(IMAGENET_CHAIN)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = Path(args.images) if args.images else jpeg_folder(tmp, args.files, processes=os.cpu_count() or 1)
        scripts = {backend: tmp / f"imagenet_{backend}.py" for backend in ("kornia", "dali")}
        for backend, script in scripts.items():
            # The Kornia loader decodes JPEGs on the GPU only when exported so (on the CPU it decodes with PIL).
            chain.export(backend, path=script.name, folder=tmp, **({"gpu_decode": True} if backend == "kornia" else {}))
        # (On the CPU the workers decode with PIL: --decode-ahead changes nothing there.)
        sides = {"kornia": (scripts["kornia"], ()), "dali": (scripts["dali"], ())}
        if args.device != "cpu":
            sides["kornia_ahead"] = (scripts["kornia"], ("--decode-ahead",))
        rates = {side: [] for side in sides}
        for _ in range(args.repeats):
            for side, (script, flags) in sides.items():
                rates[side].append(export_bench(script, folder, args.batch, args.workers, args.device,
                                                "--runs", "3", *flags))
    kornia, dali = (statistics.median(rates[b]) for b in ("kornia", "dali"))
    ahead = statistics.median(rates["kornia_ahead"]) if "kornia_ahead" in rates else None
    print(machine_line(args.device))
    print(f"batch {args.batch}, {'your folder ' + args.images if args.images else f'{args.files} JPEGs 500x375'}, "
          f"{args.workers} workers/threads, each export's --bench (median of 3 runs) alternating, "
          f"{args.repeats} repeats, medians")
    print(table(["Kornia export images/s", "DALI export images/s", "Kornia / DALI"],
                [[f"{kornia:.0f}", f"{dali:.0f}", f"{kornia / dali:.3f}"]]))
    extra = {}
    if ahead is not None:
        print(f"Kornia export with --decode-ahead: {ahead:.0f} images/s, {ahead / kornia:.3f}x without it")
        extra = {"kornia_ahead": ahead, "kornia_ahead_over_kornia": ahead / kornia}
    write_figures(args.json, kornia=kornia, dali=dali, kornia_over_dali=kornia / dali, **extra)


if __name__ == "__main__":
    main()
