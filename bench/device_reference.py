"""The machine's own speed, measured beside the GPU check's benchmarks so that their figures can be read:
a device-to-device copy (memory bandwidth, GB/s read + written) and a matrix product (TFLOP/s, bf16 on
a GPU, float32 on a CPU). Lent machines of one kind differ run to run (the sixth GPU run's first H200
gave the tensor-resident chain 36.6k images/s, the next machine 58.5k, with the same code): a figure
below its target on a machine whose reference figures are also low reads differently from one on a
machine running at its usual speed. Medians after a warm-up. Usage:

    python bench/device_reference.py [--device cuda] [--mib 1024] [--matrix 8192] [--runs 9]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch

from common import add_json_option, machine_line, table, write_figures


def timed(call, sync, runs: int, warmup: int = 2) -> float:
    """Median seconds of `call` over `runs` runs after `warmup`, synchronised around each.

    Example: timed(lambda: None, lambda: None, 3) >= 0.0"""
    for _ in range(warmup):
        call()
    sync()
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        sync()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--mib", type=int, default=1024, help="size of the copied buffer")
    parser.add_argument("--matrix", type=int, default=8192, help="side of the square matrices multiplied")
    parser.add_argument("--runs", type=int, default=9)
    add_json_option(parser)
    args = parser.parse_args()

    device = torch.device(args.device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    source = torch.empty(args.mib * 2**20, dtype=torch.uint8, device=device).fill_(1)
    target = torch.empty_like(source)
    copy_s = timed(lambda: target.copy_(source), sync, args.runs)
    bandwidth = 2 * source.numel() / copy_s / 1e9  # read and written
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(args.matrix, args.matrix, device=device, dtype=dtype)
    b = torch.randn(args.matrix, args.matrix, device=device, dtype=dtype)
    matmul_s = timed(lambda: a @ b, sync, args.runs)
    tflops = 2 * args.matrix ** 3 / matmul_s / 1e12

    print(machine_line(str(device)))
    print(f"copy of {args.mib} MiB and a {args.matrix}^2 {str(dtype).replace('torch.', '')} matrix product on "
          f"{device}, medians of {args.runs} runs after 2 warm-up")
    print(table(["figure", "value"], [["copy bandwidth (GB/s, read + written)", f"{bandwidth:.0f}"],
                                      [f"matrix product (TFLOP/s, {str(dtype).replace('torch.', '')})",
                                       f"{tflops:.1f}"]]))
    write_figures(args.json, copy_gb_per_s=bandwidth, matmul_tflops=tflops)


if __name__ == "__main__":
    main()
