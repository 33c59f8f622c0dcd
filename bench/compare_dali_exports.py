"""Several exported DALI files (for example two versions of the exporter) and the hand-written
pipeline of bench/dali_export_vs_handwritten.py, side by side in one process: blocks of 10
batches alternate between all of them after a warm-up; medians over blocks. Usage:

    python bench/compare_dali_exports.py OLD_EXPORT.py NEW_EXPORT.py [--blocks 8]

Each file must be an export of the example chain (workbench.examples.example_chain()).
"""
from __future__ import annotations

import argparse
import importlib.util
import warnings
from pathlib import Path

warnings.simplefilter("ignore", DeprecationWarning)

from dali_export_vs_handwritten import block_rates, hand_written

import workbench as wb


def _load(path: Path, index: int):
    spec = importlib.util.spec_from_file_location(f"export_{index}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("exports", nargs="+", type=Path)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    modules = [_load(path, i) for i, path in enumerate(args.exports)]
    files, labels = modules[0].image_folder(wb.SAMPLE_DATA)
    common = dict(batch_size=args.batch, num_threads=2, device_id=None, seed=1)
    pipes = {path.name: m.training_pipeline(files, labels, **common) for path, m in zip(args.exports, modules)}
    pipes["hand-written"] = hand_written(files, **common)
    rates = block_rates(pipes, args.batch, args.blocks, 10, warmup=5)
    for name, rate in rates.items():
        print(f"{name}: {rate:.1f} images/s, ratio to hand-written {rate / rates['hand-written']:.3f}")


if __name__ == "__main__":
    main()
