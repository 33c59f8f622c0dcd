"""Where the time goes on a GPU: profiles of the three GPU figures that miss their targets.

1. The tensor-resident fused batch (`augment_batch`, batch 256, 256^2 -> 224^2): host time per
   call by function (cProfile), the GPU's busy time against the wall (torch.profiler), and the
   host-device synchronisations per call (torch.cuda.set_sync_debug_mode).
2. `chain.run(device=...)` at batch 256 against the same work done by hand: host time by function.
3. The Kornia export's `--bench` (GPU decode) on a JPEG folder, its main process under cProfile.

Prints plain text (the tables the profilers give); nothing is judged. Usage:

    python bench/profile_gpu_paths.py [--device cuda] [--batch 256] [--images DIR] [--parts 1,2,3]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch

import workbench as wb
from common import machine_line
from kornia_run_vs_handwritten import images_of
from loaders_imagenet import IMAGENET_CHAIN, jpeg_folder
from workbench.codegen import load_module
from workbench.examples import example_chain


def profiled(fn, sync, calls: int, key: str, count: int) -> str:
    """cProfile's `count` top functions by `key` over `calls` calls of `fn`."""
    profile = cProfile.Profile()
    profile.enable()
    timed(fn, sync, calls)
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).strip_dirs().sort_stats(key).print_stats(count)
    return "\n".join(line for line in out.getvalue().splitlines() if line.strip())[-6000:]


def synchronizer(device):
    """A call that waits for `device`'s queued work (nothing to wait for on a CPU)."""
    return (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)


def timed(fn, sync, calls: int) -> float:
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def syncs_per_call(fn, device, calls: int = 3) -> int:
    if device.type != "cuda":
        return 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(calls):
                fn()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    seen = [str(w.message).splitlines()[0] for w in caught if "synchroniz" in str(w.message)]
    for line in sorted(set(seen)):
        print(f"    sync: {line[:160]}")
    return len(seen) // calls


def fused_batch(device, batch_size: int) -> None:
    sync = synchronizer(device)
    module = load_module(example_chain().export("kornia"), "kornia")
    exported = module.place(module.build_augmentation(), device)
    batch = torch.stack([torch.from_numpy(a.copy()).permute(2, 0, 1) for a in images_of(batch_size, 256)]).to(device)
    with torch.no_grad():
        fused = lambda: module.augment_batch(exported, batch, device)  # noqa: E731
        for _ in range(3):
            fused()
        wall = timed(fused, sync, 10)
        print(f"  fused augment_batch: {wall * 1e3:.2f} ms a call ({batch_size / wall:.0f} images/s)")
        steps_only = lambda: module.apply_steps(exported, module.to_float(batch, device), [])  # noqa: E731
        print(f"  to_float + apply_steps: {timed(steps_only, sync, 10) * 1e3:.2f} ms a call")
        print(f"  host-device synchronisations a call: {syncs_per_call(fused, device)}")
        print(profiled(fused, sync, 10, "tottime", 30))
        if device.type == "cuda":
            activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            with torch.profiler.profile(activities=activities) as prof:
                timed(fused, sync, 5)
            events = prof.key_averages()
            # The kernels' and copies' own events (an aten op's row repeats its kernels' time).
            gpu_us = sum(e.self_device_time_total for e in events
                         if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA) / 5
            print(f"  GPU busy {gpu_us / 1e3:.2f} ms a call (kernels and copies) against the wall above")
            print(events.table(sort_by="self_device_time_total", row_limit=15)[-5000:])
            print(events.table(sort_by="self_cpu_time_total", row_limit=20)[-5000:])


def chain_run(device, batch_size: int) -> None:
    sync = synchronizer(device)
    images, chain = images_of(batch_size, 256), example_chain()
    run = lambda: chain.run(images, backend="kornia", device=str(device))  # noqa: E731
    run(), run()
    print(f"  chain.run: {timed(run, sync, 3) * 1e3:.1f} ms a call")
    print(profiled(run, sync, 3, "cumulative", 45))


def export_bench(device, batch_size: int, images: str | None, workers: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder = Path(images) if images else jpeg_folder(tmp, 1024, processes=os.cpu_count() or 1)
        wb.Chain.from_dict(IMAGENET_CHAIN).export("kornia", path="imagenet_kornia.py", folder=tmp, gpu_decode=True)
        stats = tmp / "bench.prof"
        argv = [sys.executable, "-m", "cProfile", "-o", str(stats), str(tmp / "imagenet_kornia.py"), "--images",
                str(folder), "--bench", "--batch-size", str(batch_size), "--workers", str(workers), "--device",
                str(device), "--runs", "3"]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=240)
        print("  " + "\n  ".join((out.stdout + out.stderr).strip().splitlines()[-6:]))
        if stats.exists():
            text = io.StringIO()
            pstats.Stats(str(stats), stream=text).strip_dirs().sort_stats("tottime").print_stats(30)
            print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[-6000:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--images", help="a JPEG folder for part 3 (default: 1,024 made here)")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--parts", default="1,2,3")
    args = parser.parse_args()
    device = torch.device(args.device)
    print(machine_line(args.device))
    parts = set(args.parts.split(","))
    for number, title, fn in (("1", "fused batch", lambda: fused_batch(device, args.batch)),
                              ("2", "chain.run", lambda: chain_run(device, args.batch)),
                              ("3", "Kornia export --bench", lambda: export_bench(device, args.batch, args.images,
                                                                                 args.workers))):
        if number in parts:
            print(f"\n## {number}. {title} (batch {args.batch}, {device})", flush=True)
            start = time.perf_counter()
            fn()
            print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
