"""How close is `chain.estimate` to the exported script's own `--bench` on this machine?

For each chain x backend x batch size x image size: a folder of JPEGs at that size is made
the way the estimate makes it, then `repeats` times, alternately, the estimate (in this
process) and the exported script's --bench (a fresh process) run on it, both with their
defaults: 3 warm-up batches, then the median of 5 runs of 256 images' worth of batches.
Error = median estimate / median --bench - 1; target |error| <= 20%.
Usage:

    python bench/estimate_accuracy.py [--quick] [--repeats 3] [--workers 2] [--device cpu]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import chain_named, export_bench, machine_line, table  # noqa: E402

from workbench.estimate.files import prepare_input  # noqa: E402

GRID = {"chains": ["light", "example", "heavy"], "backends": ["kornia", "dali"], "batches": [16, 64],
        "sizes": [256, 512]}
QUICK = {"chains": ["light", "example"], "backends": ["kornia", "dali"], "batches": [32], "sizes": [256]}


def measure(args) -> list[list]:
    grid = QUICK if args.quick else GRID
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in grid["chains"]:
            chain = chain_named(name)
            for backend in grid["backends"]:
                script = Path(tmp) / f"{name}_{backend}.py"
                chain.export(backend, path=script.name, folder=tmp)
                for size in grid["sizes"]:
                    folder = prepare_input(None, (size, size)).folder
                    for batch in grid["batches"]:
                        est, bench = [], []
                        for _ in range(args.repeats):
                            est.append(chain.estimate(backend=backend, device=args.device, batch_size=batch,
                                                      image_size=size, workers=args.workers, images=folder,
                                                      progress=False).images_per_s)
                            bench.append(export_bench(script, folder, batch, args.workers, args.device))
                        e, b = statistics.median(est), statistics.median(bench)
                        error = e / b - 1
                        rows.append([name, backend, batch, f"{size}x{size}", f"{e:.1f}", f"{b:.1f}",
                                     f"{100 * error:+.1f}%", "yes" if abs(error) <= 0.20 else "**no**"])
                        print(table(["chain", "backend", "batch", "image", "estimate images/s",
                                     "--bench images/s", "error", "within 20%"], rows[-1:]).splitlines()[-1],
                              flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller grid (2 chains, batch 32, 256x256)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    start = time.time()
    rows = measure(args)
    within = sum(r[-1] == "yes" for r in rows)
    errors = [abs(float(r[6].rstrip("%"))) for r in rows]
    print()
    print(f"### Estimate vs exported --bench ({args.device})")
    print()
    print(f"{machine_line(args.device)}; {args.workers} workers/threads; {args.repeats} alternating repeats, medians.")
    print(f"Command: `python bench/estimate_accuracy.py{' --quick' if args.quick else ''} --repeats {args.repeats} "
          f"--workers {args.workers} --device {args.device}` ({time.time() - start:.0f} s)")
    print()
    print(table(["chain", "backend", "batch", "image", "estimate images/s", "--bench images/s", "error",
                 "within 20%"], rows))
    print()
    print(f"{within} of {len(rows)} within 20%; median |error| {statistics.median(errors):.1f}%, "
          f"largest {max(errors):.1f}%.")


if __name__ == "__main__":
    main()
