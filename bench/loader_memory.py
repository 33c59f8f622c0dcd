"""Memory of the training loaders' DataLoader workers on a dataset of millions of files (issue 33).

The loaders' own dataset (the Kornia export's ImageFolderDataset, whose file names and labels live
in a FileTable: one byte buffer, an offset array, an int32 array) is built on a stand-in list of
--paths ImageNet-style names (no files: the memory is the point), and a DataLoader with --workers
processes reads every sample's file name and label once in a shuffled epoch, as decoding would
read them. Then each worker's unique memory (USS: the pages it no longer shares with the main
process) is measured, against the same run on an empty dataset (one file) and on the layout the
loaders used before: a list of `Path` objects and a list of ints, whose reference counts a worker
writes as it reads them (copy-on-access).

Usage (2M paths take about 1 GB in the main process for the lists):

    python bench/loader_memory.py                      # 2,000,000 paths, 2 and 4 workers
    python bench/loader_memory.py --paths 200000 --workers 2
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings
from pathlib import Path

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import psutil  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_line  # noqa: E402

# (DataLoader says 4 workers are more than 2 cores suggest: the point here is their memory.)
warnings.filterwarnings("ignore", message="This DataLoader will create")

import workbench as wb  # noqa: E402
from workbench.codegen import emit, load_module  # noqa: E402
from workbench.runtime.file_table import FileTable  # noqa: E402

MiB = 2 ** 20


def stand_in_names(count: int) -> list[str]:
    """ImageNet-style relative names: 1,000 class folders of count / 1000 files each."""
    per = max(1, count // 1000)
    return [f"n{c:08d}/n{c:08d}_{k:06d}.JPEG" for c in range(1000) for k in range(per)][:count]


class Lists(Dataset):
    """The layout before: a Path per file and an int per label, in lists."""

    def __init__(self, root: Path, names: list[str]):
        self.files = [root / name for name in names]
        self.labels = [int(name[1:9]) for name in names]

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return len(str(self.files[i])) + self.labels[i]


def reading(dataset):
    """The loader's dataset, its __getitem__ reading a sample's file name and label (not the file)."""

    class Reading(type(dataset)):
        def __getitem__(self, item):
            i = item[0] if isinstance(item, tuple) else item
            return len(str(self.files[i])) + int(self.labels[i])

    dataset.__class__ = Reading
    return dataset


def workers_uss(dataset, workers: int, seed: int = 0) -> list[float]:
    """Each worker's unique memory (MiB) after one shuffled epoch over `dataset`."""
    loader = DataLoader(dataset, batch_size=4096, shuffle=True, num_workers=workers, persistent_workers=True,
                        collate_fn=lambda batch: sum(batch), generator=torch.Generator().manual_seed(seed))
    total = sum(batch for batch in loader)
    assert total > 0
    children = psutil.Process().children()
    uss = [child.memory_full_info().uss / MiB for child in children]
    del loader
    return uss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=2_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    args = parser.parse_args()
    module = load_module(emit(wb.Chain().add("HorizontalFlip"), "kornia"), "kornia")
    root = Path("/data/imagenet/train")
    names = stand_in_names(args.paths)
    print(machine_line())
    print(f"{len(names):,} stand-in paths; each worker's unique memory (USS, MiB) after one shuffled epoch, "
          "median over the workers")
    print("| workers | empty dataset | FileTable (the loaders now) | lists of Path and int (before) | "
          "FileTable - empty |")
    print("|---|---|---|---|---|")
    for workers in args.workers:
        results = {}
        for name, make in (("empty", lambda: FileTable.of_names(root, names[:1])),
                           ("table", lambda: FileTable.of_names(root, names)),
                           ("lists", None)):
            if make is None:
                dataset = Lists(root, names)
            else:
                dataset = module.ImageFolderDataset.__new__(module.ImageFolderDataset)
                table = make()
                dataset.root, dataset.annotations, dataset.skip_bad = root, None, False
                dataset.files, dataset.classes, dataset.labels = table, table.classes, table.labels
                dataset = reading(dataset)
            results[name] = statistics.median(workers_uss(dataset, workers))
            del dataset
        print(f"| {workers} | {results['empty']:.0f} | {results['table']:.0f} | {results['lists']:.0f} | "
              f"{results['table'] - results['empty']:+.0f} |")


if __name__ == "__main__":
    main()
