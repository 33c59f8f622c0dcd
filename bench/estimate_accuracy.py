"""How close is `chain.estimate` to the exported script's own `--bench` on this machine?

Side by side in one run, for each backend: the chain exported to a file, then `repeats` times,
in alternating order (estimate first, then --bench first, ...), `chain.estimate(...)` (as a
user calls it: a fresh measuring process, 3 warm-up batches, the median of 5 runs of 256
images' worth of batches) and the exported file's `--bench` (a fresh process, its defaults:
the same warm-up and runs), both on the same files, batch size and workers. The figure of each
side is the median over the repeats; error = estimate / --bench - 1, target |error| <= 10%.
The spreads say how much each side moves between repeats (and the estimate's own runs within
one call): on a shared machine they are the noise floor any comparison lives with.

Default: the realistic chain (RandomResizedCrop 224, HorizontalFlip, ColorJitter p=0.8,
Normalize) on the bundled sample photos (`workbench/sample_data`, read as they are: 12 files,
8 sizes, JPEG and PNG), on every backend. `--grid` adds the older grid of chains x batch sizes
x image sizes on re-encoded JPEG folders. `--annotated` measures both sides with the sample photos'
masks, boxes and keypoints (`chain.estimate(coco=, masks=)` against `--bench --coco --masks`: the 4
annotated photos); `--coco`/`--masks` name other annotation files for `--images`. Usage:

    python bench/estimate_accuracy.py [--quick] [--repeats 5] [--batch-size 32] [--workers 2]
                                      [--device cpu|cuda] [--backends kornia,dali] [--grid]
                                      [--annotated | --coco FILE --masks DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import add_json_option, chain_named, machine_line, table, write_figures  # noqa: E402

from workbench.codegen.options import everything  # noqa: E402
from workbench.data import SAMPLE_DATA  # noqa: E402
from workbench.estimate import RateSpread  # noqa: E402
from workbench.estimate.files import prepare_input  # noqa: E402
from workbench.runtime.annotations import annotated_folder  # noqa: E402
from workbench.targets import annotation_sources  # noqa: E402

TARGET = 0.10
REALISTIC = [
    {"op": "RandomResizedCrop", "params": {"size": [224, 224]}},
    {"op": "HorizontalFlip", "p": 0.5},
    {"op": "ColorJitter", "p": 0.8},
    {"op": "Normalize", "params": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}},
]
GRID = {"chains": ["light", "example", "heavy"], "batches": [16, 64], "sizes": [256, 512]}
BACKENDS = ["kornia", "dali", "albumentations"]


def bench_runs(script: Path, images: Path, batch: int, workers: int, device: str,
               annotations: dict | None = None) -> list[float]:
    """The per-run images/s that the exported script's `--bench` prints (its last line, images/s,
    is their median); `annotations` ({"coco", "masks"}) become --coco and --masks."""
    extra = [arg for key, path in (annotations or {}).items() if path is not None for arg in (f"--{key}", str(path))]
    out = subprocess.run([sys.executable, str(script), "--images", str(images), "--bench", "--batch-size", str(batch),
                          "--workers", str(workers), "--device", device, *extra],
                         capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    runs = next(line for line in lines if line.startswith("runs (images/s): "))
    rates = [float(r) for r in runs.split(": ", 1)[1].split(", ")]
    if not lines[-1].startswith("images/s: ") or abs(float(lines[-1].split(": ")[1]) - statistics.median(rates)) > 0.06:
        raise RuntimeError(f"{script}: unexpected --bench output {lines[-2:]!r}")
    return rates


class OtherLoad:
    """CPU time that processes other than this one and its children took while a block ran, in
    cores (0.5: half a core busy on average): /proc/stat's busy time less our own (Linux only;
    NaN elsewhere). The measuring processes and their DataLoader workers are children that
    have exited (and been waited for) when a block ends, so their time counts as ours."""

    def __enter__(self):
        self.start = self._now()
        return self

    def __exit__(self, *exc):
        end = self._now()
        wall = end[0] - self.start[0]
        # Clock ticks are coarser than os.times: clip the rounding below zero.
        busy = (end[1] - self.start[1]) - (end[2] - self.start[2])
        self.cores = max(0.0, busy / wall) if wall > 0 else float("nan")

    @staticmethod
    def _now():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except OSError:
            return time.perf_counter(), float("nan"), 0.0
        # user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
        busy = sum(fields[:8]) - fields[3] - fields[4]
        t = os.times()
        own = t.user + t.system + t.children_user + t.children_system
        return time.perf_counter(), busy / os.sysconf("SC_CLK_TCK"), own


def compare(chain, backend: str, script: Path, images: Path, batch: int, workers: int, device: str,
            repeats: int, annotations: dict | None = None) -> dict:
    """`repeats` alternating pairs of (estimate, --bench) on the same files, targets and settings."""
    est, bench, est_runs, bench_runs_all, seconds = [], [], [], [], {"estimate": 0.0, "--bench": 0.0}
    load, other = [os.getloadavg()[0]], {"estimate": [], "--bench": []}
    for k in range(repeats):
        order = ("estimate", "--bench") if k % 2 == 0 else ("--bench", "estimate")
        for side in order:
            start = time.perf_counter()
            meter = OtherLoad().__enter__()
            if side == "estimate":
                e = chain.estimate(backend=backend, device=device, batch_size=batch, workers=workers, images=images,
                                   progress=False, **(annotations or {}))
                est.append(e.images_per_s)
                est_runs += e.run_rates
                notes = e.notes
            else:
                rates = bench_runs(script, images, batch, workers, device, annotations)
                bench.append(statistics.median(rates))
                bench_runs_all += rates
            meter.__exit__()
            other[side].append(meter.cores)
            seconds[side] += time.perf_counter() - start
        load.append(os.getloadavg()[0])
        print(f"  {backend} repeat {k + 1}/{repeats}: estimate {est[-1]:.1f}, --bench {bench[-1]:.1f} images/s "
              f"(ratio {est[-1] / bench[-1]:.3f}; other processes' CPU {other['estimate'][-1]:.2f} / "
              f"{other['--bench'][-1]:.2f} cores; load {load[-1]:.2f})", flush=True)
    e, b = statistics.median(est), statistics.median(bench)
    return {"estimate": e, "bench": b, "error": e / b - 1, "est": RateSpread.of(est),
            "bench_spread": RateSpread.of(bench),
            "pairs": RateSpread.of([x / y for x, y in zip(est, bench)]), "est_runs": RateSpread.of(est_runs),
            "bench_runs": RateSpread.of(bench_runs_all), "load": (min(load), max(load)), "notes": notes,
            "seconds": seconds, "other": max(max(v) for v in other.values())}


def spread_cell(s: RateSpread) -> str:
    return f"{s.min:.1f} / {s.median:.1f} / {s.max:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats unless --repeats says otherwise; the grid "
                        "(with --grid) shrinks to 2 chains, batch 32, 256x256")
    parser.add_argument("--repeats", type=int, default=None, help="alternating (estimate, --bench) pairs (default 5)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU loaders")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--images", default=str(SAMPLE_DATA), help="folder of images (default: the sample photos)")
    parser.add_argument("--grid", action="store_true", help="also the grid of chains x batch sizes x image sizes")
    parser.add_argument("--annotated", action="store_true", help="with the sample photos' masks, boxes and keypoints")
    parser.add_argument("--coco", help="a COCO instances file for --images: both sides move its boxes and keypoints")
    parser.add_argument("--masks", help="a folder of label-map PNGs for --images: both sides move the masks")
    add_json_option(parser)
    args = parser.parse_args()
    repeats = args.repeats or (3 if args.quick else 5)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    started = time.time()
    print(f"{machine_line(args.device)}; load average at start {os.getloadavg()[0]:.2f}", flush=True)

    import workbench as wb

    chain = wb.Chain.from_dict({"seed": 7, "steps": REALISTIC})
    images, annotations = Path(args.images), None
    if args.annotated or args.coco or args.masks:
        folder, coco, masks = annotation_sources(args.images, args.coco, args.masks)
        images, annotations = Path(folder), {"coco": coco, "masks": masks}
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend in backends:
            script = Path(tmp) / f"realistic_{backend}.py"
            # The program the estimate measures: every option its backend takes (targets; on a GPU the
            # Kornia loader decodes there, gpu_decode).
            chain.export(backend, path=script.name, folder=tmp, **asdict(everything(backend)))
            r = compare(chain, backend, script, images, args.batch_size, args.workers, args.device, repeats,
                        annotations)
            results[backend] = r
            rows.append([backend, f"{r['estimate']:.1f}", f"{r['bench']:.1f}", f"{100 * r['error']:+.1f}%",
                         "yes" if abs(r["error"]) <= TARGET else "**no**", spread_cell(r["est"]),
                         spread_cell(r["bench_spread"]), f"{r['pairs'].min:.3f} / {r['pairs'].median:.3f} / "
                         f"{r['pairs'].max:.3f}", f"{100 * r['est_runs'].relative_range:.0f}%",
                         f"{100 * r['bench_runs'].relative_range:.0f}%", f"{r['load'][0]:.1f}-{r['load'][1]:.1f}",
                         f"{r['other']:.2f}"])
        grid_rows = measure_grid(args, tmp) if args.grid else []

    count = len(annotated_folder(images, **annotations)[0] if annotations else wb.load_images(images))
    print()
    print(f"### Estimate vs exported --bench ({args.device}), "
          + ("with masks, boxes and keypoints (--coco --masks)" if annotations else "sample photos as they are"))
    print()
    print(f"{machine_line(args.device)}; batch {args.batch_size}, {args.workers} workers/threads; "
          f"chain RandomResizedCrop 224, HorizontalFlip, ColorJitter p=0.8, Normalize on {images} ({count} files); "
          f"{repeats} alternating (estimate, --bench) repeats, each side the median of 5 runs after 3 warm-up "
          f"batches; figures are medians over the repeats.")
    command = (f"python bench/estimate_accuracy.py{' --quick' if args.quick else ''} --repeats {repeats} "
               f"--batch-size {args.batch_size} --workers {args.workers} --device {args.device} "
               f"--backends {','.join(backends)}{' --grid' if args.grid else ''}"
               + (" --annotated" if args.annotated else "")
               + "".join(f" --{k} {v}" for k, v in (("coco", args.coco), ("masks", args.masks)) if v))
    print(f"Command: `{command}` ({time.time() - started:.0f} s)")
    print()
    print(table(["backend", "estimate images/s", "--bench images/s", "error", f"within {100 * TARGET:.0f}%",
                 "estimate min / median / max over repeats", "--bench min / median / max over repeats",
                 "ratio per repeat min / median / max", "estimate runs range", "--bench runs range", "load average",
                 "other processes' CPU, most (cores)"], rows))
    for backend, r in results.items():
        print(f"\n{backend}: estimate runs (all repeats) {r['est_runs'].describe()}; --bench runs "
              f"{r['bench_runs'].describe()}; {r['seconds']['estimate']:.0f} s in estimates (breakdowns included), "
              f"{r['seconds']['--bench']:.0f} s in --bench. Input: {'; '.join(r['notes'][:1])}")
    write_figures(args.json, **{f"{backend}_{key}": r[key] for backend, r in results.items()
                                for key in ("estimate", "bench", "error")})
    within = sum(abs(r["error"]) <= TARGET for r in results.values())
    print(f"\n{within} of {len(results)} backends within {100 * TARGET:.0f}%; largest |error| "
          f"{max(abs(100 * r['error']) for r in results.values()):.1f}%.")
    if grid_rows:
        print()
        print(f"### Grid: estimate vs exported --bench ({args.device}), re-encoded JPEG folders")
        print()
        print(table(["chain", "backend", "batch", "image", "estimate images/s", "--bench images/s", "error",
                     f"within {100 * TARGET:.0f}%", "ratio per repeat min / median / max"], grid_rows))


def measure_grid(args, tmp: str) -> list[list]:
    grid = {"chains": ["light", "example"], "batches": [32], "sizes": [256]} if args.quick else GRID
    repeats = args.repeats or 3
    rows = []
    for name in grid["chains"]:
        chain = chain_named(name)
        for backend in [b for b in args.backends.split(",") if b]:
            script = Path(tmp) / f"{name}_{backend}.py"
            # The program the estimate measures: every option its backend takes (targets; on a GPU the
            # Kornia loader decodes there, gpu_decode).
            chain.export(backend, path=script.name, folder=tmp, **asdict(everything(backend)))
            for size in grid["sizes"]:
                folder = prepare_input(None, (size, size)).folder
                for batch in grid["batches"]:
                    r = compare(chain, backend, script, folder, batch, args.workers, args.device, repeats)
                    rows.append([name, backend, batch, f"{size}x{size}", f"{r['estimate']:.1f}", f"{r['bench']:.1f}",
                                 f"{100 * r['error']:+.1f}%", "yes" if abs(r["error"]) <= TARGET else "**no**",
                                 f"{r['pairs'].min:.3f} / {r['pairs'].median:.3f} / {r['pairs'].max:.3f}"])
    return rows


if __name__ == "__main__":
    main()
