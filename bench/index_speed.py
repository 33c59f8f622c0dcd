"""Listing a big training folder, and loading its index file instead (issue 33).

Makes --files empty files (ImageNet-style: 1,000 class folders) in a temporary folder, then times,
interleaved, --runs times each after one untimed round: the loaders' listing before (Path.rglob,
one stat per entry, then a sort), the listing now (FileTable.listed: one os.scandir pass, one sort),
and loading the index file `workbench index` writes (FileTable.load). Medians in seconds.

Usage:

    python bench/index_speed.py                 # 200,000 files, 3 runs
    python bench/index_speed.py --files 50000 --runs 5
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_line  # noqa: E402

from workbench.runtime.common import IMAGE_EXTENSIONS  # noqa: E402
from workbench.runtime.file_table import FileTable  # noqa: E402


def rglob_listing(root: Path) -> list[Path]:
    """How the loaders listed a folder before this change."""
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="index-speed-") as folder:
        root = Path(folder) / "train"
        per = max(1, args.files // 1000)
        for c in range(1000):
            (root / f"n{c:08d}").mkdir(parents=True)
            for k in range(per):
                (root / f"n{c:08d}" / f"n{c:08d}_{k:06d}.JPEG").touch()
        index = Path(folder) / "train.index"
        ways = {"Path.rglob + sort (before)": lambda: len(rglob_listing(root)),
                "os.scandir + sort (FileTable.listed, now)": lambda: len(FileTable.listed(root)),
                "load the index file (--index)": lambda: len(FileTable.load(index, root))}
        FileTable.listed(root).save(index)
        seconds = {name: [] for name in ways}
        for run in range(args.runs + 1):  # the first warms the page and dentry caches, untimed
            for name, way in ways.items():
                started = time.perf_counter()
                assert way() == per * 1000
                if run:
                    seconds[name].append(time.perf_counter() - started)
        print(f"{per * 1000:,} empty files in 1,000 folders; index file {index.stat().st_size / 2**20:.1f} MiB")
        print("| way | seconds (median) | runs |")
        print("|---|---|---|")
        for name, values in seconds.items():
            print(f"| {name} | {statistics.median(values):.3f} | {', '.join(f'{v:.3f}' for v in values)} |")


if __name__ == "__main__":
    main()
