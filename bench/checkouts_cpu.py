"""chain.run (Kornia, CPU) of two checkouts of the workbench, side by side: the CPU sweep's chains
(bench/cpu_sweep.py) at one batch and image size, each checkout in processes of its own (a process
keeps what a run changed in it: its allocator's settings, its threads), alternating old, new, old, ...
for --rounds rounds; each cell is the median images/s of all the timed calls of that checkout.

The host's speed drifts from minute to minute (another tenant, the CPU's clock): a ratio of two sweeps
run minutes apart moves by more than a change does. Alternating processes gives both checkouts the
same minutes.
Usage:

    git worktree add /tmp/before 5dbc637
    python bench/checkouts_cpu.py /tmp/before .                     # batch 32, 256^2, 3 rounds
    python bench/checkouts_cpu.py /tmp/before . --batch 8 --size 128 --chains imagenet_train,segmentation
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_line  # noqa: E402

# One process: the checkout's workbench (first on sys.path) runs each chain of the sweep; prints a JSON
# {chain: [seconds per call, ...]}.
_PROCESS = """
import json, sys, time
root, names = sys.argv[1], sys.argv[2].split(",")
batch, size, calls = (int(v) for v in sys.argv[3:6])
sys.path[:0] = [root, root + "/bench"]
import cpu_sweep
import workbench
assert workbench.__file__.startswith(root), workbench.__file__
out = {}
for name in names:
    case = next(c for c in cpu_sweep.CASES if c.name == name)
    run = cpu_sweep.runners(case, cpu_sweep.images_of(batch, size))["workbench"]
    for _ in range(3):
        run()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    out[name] = times
print(json.dumps(out))
"""


def timed(root: Path, names: list[str], batch: int, size: int, calls: int) -> dict[str, list[float]]:
    """Seconds per call of each chain, in a fresh process running the checkout at `root`."""
    done = subprocess.run([sys.executable, "-c", _PROCESS, str(root), ",".join(names), str(batch), str(size),
                           str(calls)], capture_output=True, text=True, check=True,
                          env={**os.environ, "KORNIA_INSTALLATION_MODE": "RAISE", "PYTHONPATH": str(root)})
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="the checkout to compare against (a git worktree)")
    parser.add_argument("new", type=Path, help="the checkout measured")
    parser.add_argument("--chains", default="imagenet_train,imagenet_eval,self_supervised_view,segmentation,"
                                            "detection_style,colour_heavy,policy,blur_noise,rrc_rotate")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=7, help="timed calls per chain and process")
    args = parser.parse_args()
    names = args.chains.split(",")
    times = {"old": {n: [] for n in names}, "new": {n: [] for n in names}}
    for _ in range(args.rounds):
        for side in ("old", "new"):
            for name, seconds in timed(getattr(args, side).resolve(), names, args.batch, args.size, args.calls).items():
                times[side][name] += seconds
    print(machine_line())
    print(f"batch {args.batch}, {args.size}^2; {args.rounds} rounds of one process per checkout, alternating; "
          f"{args.calls} timed calls per chain and process after 3; medians")
    print(f"old: {args.old}; new: {args.new}")
    print("\n| chain | old img/s | new img/s | new / old |\n|---|---|---|---|")
    for name in names:
        old, new = (args.batch / statistics.median(times[side][name]) for side in ("old", "new"))
        print(f"| {name} | {old:.0f} | {new:.0f} | {new / old:.2f} |")


if __name__ == "__main__":
    main()
