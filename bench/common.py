"""Helpers shared by the benchmarks: the machine line, running an export's --bench, tables."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workbench.estimate import describe_machine, machine_info

CHAINS = {
    # The DESIGN.md example: crop, flip, rotate, brightness, normalize.
    "example": [
        {"op": "RandomResizedCrop", "params": {"size": [224, 224], "scale": [0.5, 1.0]}},
        {"op": "HorizontalFlip", "p": 0.5},
        {"op": "Rotate", "p": 1.0, "params": {"degrees": [-20, 20]}},
        {"op": "Brightness", "params": {"factor": [0.7, 1.3]}},
        {"op": "Normalize", "params": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}},
    ],
    # Cheap: decoding dominates.
    "light": [
        {"op": "Resize", "params": {"size": [224, 224]}},
        {"op": "HorizontalFlip", "p": 0.5},
        {"op": "Normalize", "params": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}},
    ],
    # Expensive: colour, blur and occlusion on top of the geometry.
    "heavy": [
        {"op": "RandomResizedCrop", "params": {"size": [224, 224], "scale": [0.3, 1.0]}},
        {"op": "Rotate", "params": {"degrees": [-30, 30]}},
        {"op": "ColorJitter", "params": {"brightness": [0.8, 1.2], "contrast": [0.8, 1.2],
                                         "saturation": [0.8, 1.2], "hue": [-0.05, 0.05]}},
        {"op": "GaussianBlur", "params": {"sigma": [0.5, 2.0], "kernel_size": 9}},
        {"op": "Erase", "p": 0.5},
        {"op": "Normalize", "params": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}},
    ],
}


def chain_named(name: str, seed: int = 7):
    import workbench as wb

    return wb.Chain.from_dict({"seed": seed, "steps": CHAINS[name]})


def machine_line(device: str = "cpu") -> str:
    return "Machine: " + describe_machine(machine_info(device))


def export_bench(script: Path, images: Path, batch: int, workers: int, device: str = "cpu", *flags: str) -> float:
    """images/s from an exported script's own `--bench` (the last line it prints); its
    default runs unless `flags` (e.g. "--runs", "3") say otherwise."""
    out = subprocess.run([sys.executable, str(script), "--images", str(images), "--bench", "--batch-size", str(batch),
                          "--workers", str(workers), "--device", device, *flags],
                         capture_output=True, text=True, check=True).stdout
    last = out.strip().splitlines()[-1]
    if not last.startswith("images/s: "):
        raise RuntimeError(f"{script}: unexpected --bench output {last!r}")
    return float(last.split(": ")[1])


def add_json_option(parser) -> None:
    """`--json FILE`: where a benchmark also writes its headline figures (read by bench/gpu_check.py)."""
    parser.add_argument("--json", metavar="FILE", help="also write the headline figures to this JSON file")


def write_figures(path: str | None, **figures: float) -> None:
    """Write a benchmark's headline figures as one JSON object, for bench/gpu_check.py to set
    beside their targets; nothing without `--json`.

    Example: write_figures(args.json, exported=812.0, hand=790.5, ratio=1.027)
    """
    if path:
        Path(path).write_text(json.dumps({k: float(v) for k, v in figures.items()}, indent=1), encoding="utf-8")


def table(header: list[str], rows: list[list]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def alternate_runs(factories: dict, count, runs: int, batches: int, warmup: int) -> dict[str, list[float]]:
    """images/s of each source over `runs` alternating runs, each a fresh iterator from its
    factory timed over `batches` batches after `warmup`, then closed before the next starts.
    For loaders that do all their work on worker processes: interleaved blocks of two live
    loaders would time one's prefetch queue, filled while the other was being timed."""
    import time

    rates = {name: [] for name in factories}
    for _ in range(runs):
        for name, factory in factories.items():
            it = factory()
            try:
                for _ in range(warmup):
                    next(it)
                start = time.perf_counter()
                images = sum(count(next(it)) for _ in range(batches))
                rates[name].append(images / (time.perf_counter() - start))
            finally:
                it.close()  # shuts the loader's workers down before the other source runs
    return rates


def alternate_blocks(sources: dict, count, blocks: int, block: int, warmup: int) -> dict[str, list[float]]:
    """images/s of each source (an iterator of batches) over alternating blocks of `block`
    batches after `warmup` batches each; `count(batch)` is a batch's image count. Loaders
    run ahead asynchronously, so single batches cannot be timed while interleaving."""
    import time

    for it in sources.values():
        for _ in range(warmup):
            next(it)
    rates = {name: [] for name in sources}
    for _ in range(blocks):
        for name, it in sources.items():
            start = time.perf_counter()
            images = sum(count(next(it)) for _ in range(block))
            rates[name].append(images / (time.perf_counter() - start))
    return rates
