"""`workbench check` and `wb.check_images`: open every image of a folder (or every sample of
WebDataset shards) as the training loaders do, on several processes, and report what cannot be
read, with the sizes and colour modes of the rest; the exclusion list it writes is what every
exported loader's --exclude takes.

Example:
    >>> report = check_images("workbench/sample_data")
    >>> report.count, report.bad
    (12, [])
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError
from .runtime.bad_files import check_files, check_tasks
from .runtime.common import read_member, shard_paths

# A full check decodes with DALI too when it imports (the DALI loader's decoder: libjpeg-turbo
# on the CPU), this many files per DALI batch.
DALI_BATCH = 32


@dataclass
class CheckReport:
    """What `check_images` found: one row per file (name, format, mode, height, width, problem:
    "" when it reads), how (`full`: every pixel decoded; else headers and file endings), with
    which decoders, and how long it took."""

    source: str
    rows: list[tuple[str, str, str, int, int, str]]
    full: bool
    decoders: tuple[str, ...]
    seconds: float
    notes: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        """How many files were checked."""
        return len(self.rows)

    @property
    def bad(self) -> list[tuple[str, str]]:
        """(name, problem) of each file that cannot be read, in order."""
        return [(row[0], row[5]) for row in self.rows if row[5]]

    def table(self, largest: int = 8) -> str:
        """The report as text: the unreadable files, then how many files of each format and
        colour mode, then the most common sizes (`largest` of them)."""
        rate = self.count / self.seconds if self.seconds > 0 else float("inf")
        how = "full decode (" + " and ".join(self.decoders) + ")" if self.full else "headers and file endings"
        lines = [f"{self.source}: {self.count} file(s) checked ({how}) in {self.seconds:.1f} s, {rate:,.0f} files/s; "
                 f"{len(self.bad)} unreadable"]
        lines += [f"  note: {note}" for note in self.notes]
        if self.bad:
            width = max(len("unreadable file"), *(len(name) for name, _ in self.bad))
            lines += ["", f"{'unreadable file':{width}s}  problem"]
            lines += [f"{name:{width}s}  {problem}" for name, problem in self.bad]
        good = [row for row in self.rows if not row[5]]
        if good:
            lines += ["", "format  mode    files"]
            kinds = Counter((row[1], row[2]) for row in good)
            lines += [f"{fmt:7s} {mode:7s} {count:6d}" for (fmt, mode), count in kinds.most_common()]
            sizes = Counter((row[3], row[4]) for row in good)
            lines += ["", "height x width    files"]
            lines += [f"{f'{h} x {w}':17s} {count:5d}" for (h, w), count in sizes.most_common(largest)]
            if len(sizes) > largest:
                lines.append(f"... and {len(sizes) - largest} other size(s)")
        return "\n".join(lines)

    def write_exclusions(self, path: str | Path) -> Path:
        """Write the unreadable files as an exclusion list for the loaders' --exclude (one name per
        line, a tab and the problem after it; names relative to the folder checked, or SHARD:KEY).

        Example:
            >>> import tempfile
            >>> report = CheckReport("data", [("a.jpg", "", "", 0, 0, "empty file (0 bytes)")], False, (), 0.1)
            >>> open(report.write_exclusions(tempfile.mktemp())).read().splitlines()[-1]
            'a.jpg\\tempty file (0 bytes)'
        """
        path = Path(path)
        lines = [f"# Unreadable files under {self.source}, found by `workbench check`; pass this file to a loader "
                 "as --exclude FILE (exclude=) to leave them out."]
        lines += [f"{name}\t{problem}" for name, problem in self.bad]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def __repr__(self) -> str:
        return f"<CheckReport {self.source}: {self.count} files, {len(self.bad)} unreadable>"


def check_images(source: Any, full: bool = False, workers: int | None = None, exclude: Any = None,
                 dali: bool | None = None) -> CheckReport:
    """Check every image file of the folder `source` (recursive, as the loaders list it), or every
    sample of WebDataset shards (a pattern such as "train-{0000..0099}.tar", a glob or a list),
    on `workers` processes (default: every core). By default only headers are read, and whether
    each file ends as a whole file of its format (a truncated JPEG or PNG lacks its end marker);
    `full` decodes every pixel as the loaders do (PIL), and with DALI installed (`dali`: None
    means where it imports) with DALI's decoder too. `exclude`: an exclusion list whose files are
    not checked again. Returns a CheckReport (`.bad`, `.table()`, `.write_exclusions(path)`).

    Example:
        >>> report = check_images("workbench/sample_data", full=True, dali=False)
        >>> sorted({row[2] for row in report.rows}), report.bad
        (['L', 'RGB'], [])
    """
    started = time.perf_counter()
    if isinstance(source, (str, Path)) and Path(source).is_dir():
        tasks, name = check_tasks(source, exclude), str(source)
    else:
        try:
            paths = shard_paths(source)
        except (ValueError, OSError) as error:
            raise InputError(f"check_images: {error} (give a folder of images or WebDataset tar shards)") from None
        tasks, name = check_tasks(paths, exclude), str(source)
    if not tasks:
        raise InputError(f"no image files to check in {name}")
    rows = check_files(tasks, full, workers)
    decoders, notes = ("PIL",), []
    if full and dali is not False:
        dali_rows = _dali_problems(tasks, rows, dali is True)
        if dali_rows is None:
            notes.append("DALI is not installed here: decoded with PIL only")
        else:
            decoders += ("DALI",)
            rows = [row if not dali_rows.get(row[0]) else (*row[:5], dali_rows[row[0]]) for row in rows]
    if any(row[5] for row in rows):
        notes.append("the loaders stop at such a file: leave them out with --exclude FILE (exclude=), FILE written by "
                     "--exclude-list FILE (report.write_exclusions(FILE)), or skip them as they come with --skip-bad "
                     "(skip_bad=True)")
    return CheckReport(name, rows, full, decoders, time.perf_counter() - started, notes)


def _dali_problems(tasks, rows, required: bool) -> dict[str, str] | None:
    """{name: problem} of the files PIL reads and DALI's CPU decoder does not; None without DALI."""
    try:
        # DALI is optional (and takes a second to import): only a full check that may use it asks.
        from nvidia.dali import fn, pipeline_def, types
    except ImportError:
        if required:
            raise InputError("check_images(dali=True): NVIDIA DALI does not import here; install the dali extra "
                             "or pass dali=False") from None
        return None

    def read(task):
        _, path, offset, size = task
        return read_member(path, offset if offset is not None else 0, size if offset is not None else
                           Path(path).stat().st_size)

    readable = [task for task, row in zip(tasks, rows) if not row[5]]

    @pipeline_def(batch_size=DALI_BATCH, num_threads=2, device_id=None)
    def decoding(batch):
        encoded = fn.external_source(source=[batch], batch=True, dtype=types.UINT8)
        return fn.decoders.image(encoded, device="cpu", output_type=types.RGB)

    def decodes(batch) -> bool:
        pipe = decoding([read(task) for task in batch], batch_size=len(batch))
        try:
            pipe.build()
            pipe.run()
            return True
        except RuntimeError:
            return False

    problems = {}
    for start in range(0, len(readable), DALI_BATCH):
        batch = readable[start:start + DALI_BATCH]
        if not decodes(batch):  # a batch with a failure: find its files one by one
            problems.update({task[0]: "DALI's decoder cannot decode it (PIL can)" for task in batch
                             if not decodes([task])})
    return problems
