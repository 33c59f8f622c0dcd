"""How fast `workbench check` goes through a folder of 500x375 JPEGs (issue 32: at least 1,000
files/s on the 2-core machine with headers only), in each mode, on every core.

Writes --files JPEGs (the bundled photos cropped and resized to 500x375, quality 90, a few
hundred distinct ones repeated under other names) into a temporary folder, then times
`check_images` in each mode: headers and file endings, a full decode with PIL, and a full decode
with PIL and DALI (where DALI imports). Each mode runs once to warm the page cache, then --runs
times; the median is reported.

Usage:

    python bench/check_speed.py                 # 4,000 files, 3 runs per mode
    python bench/check_speed.py --files 20000 --runs 5
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_line  # noqa: E402

import workbench as wb  # noqa: E402


def write_folder(root: Path, count: int, distinct: int = 200) -> None:
    """`count` JPEGs of 500x375 in 10 class folders: `distinct` crops of the sample photos, copied."""
    photos = [np.asarray(image) for image in wb.load_images()]
    rng = np.random.default_rng(0)
    made = []
    for k in range(distinct):
        photo = photos[k % len(photos)]
        h, w = photo.shape[:2]
        top, left = rng.integers(0, h // 4), rng.integers(0, w // 4)
        crop = Image.fromarray(photo[top:, left:]).convert("RGB").resize((500, 375))
        folder = root / f"class_{k % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        crop.save(folder / f"img_{k:06d}.jpg", quality=90)
        made.append(folder / f"img_{k:06d}.jpg")
    for k in range(distinct, count):
        source = made[k % distinct]
        shutil.copyfile(source, source.parent / f"img_{k:06d}.jpg")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None, help="processes (default: every core)")
    args = parser.parse_args()
    modes = {"headers and endings": dict(full=False), "full decode, PIL": dict(full=True, dali=False)}
    if importlib.util.find_spec("nvidia.dali") is not None:
        modes["full decode, PIL and DALI"] = dict(full=True, dali=True)
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="check-speed-") as folder:
        root = Path(folder)
        write_folder(root, args.files)
        print(f"{args.files} JPEG files of 500x375 (quality 90), workers: {args.workers or 'every core'}")
        print("| mode | files/s (median) | runs (files/s) |")
        print("|---|---|---|")
        for name, options in modes.items():
            rates = []
            for run in range(args.runs + 1):  # the first warms the page cache, untimed
                started = time.perf_counter()
                report = wb.check_images(root, workers=args.workers, **options)
                seconds = time.perf_counter() - started
                assert report.count == args.files and not report.bad
                if run:
                    rates.append(args.files / seconds)
            print(f"| {name} | {statistics.median(rates):,.0f} | {', '.join(f'{r:,.0f}' for r in rates)} |")


if __name__ == "__main__":
    main()
