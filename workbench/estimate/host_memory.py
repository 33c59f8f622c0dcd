"""How much host memory a training loader holds while it runs: this process and its worker
processes together, as their proportional set sizes (PSS: a page shared by N processes counts
1/N to each, so the sum counts each page once), read from Linux's /proc.

Example:
    >>> peak = PeakMemory()
    >>> tick = peak.wrap(None)
    >>> tick(1, 2)
    >>> peak.peak_mb is None or peak.peak_mb > 10
    True
"""
from __future__ import annotations

import os
import time
from pathlib import Path

# Reading /proc costs milliseconds for a process as large as torch's: at most one look a second
# (and one at the last batch), so that the loader's timed runs are not slowed by more than ~1%.
LOOK_EVERY_S = 1.0


def pss_mb(pid: int) -> float | None:
    """Process `pid`'s proportional set size in MB, or None where /proc cannot say (not Linux, gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024 / 1e6
    return None


def child_pids(pid: int) -> list[int]:
    """The processes `pid` started (each thread's children, from /proc), and theirs."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found + [grandchild for child in found for grandchild in child_pids(child)]


def tree_mb(pid: int | None = None) -> tuple[float, int] | None:
    """(PSS in MB of process `pid` (default: this one) and of every process under it, how many
    processes those are), or None where /proc cannot say."""
    pid = os.getpid() if pid is None else pid
    own = pss_mb(pid)
    if own is None:
        return None
    children = [mb for mb in (pss_mb(child) for child in child_pids(pid)) if mb is not None]
    return own + sum(children), len(children)


class PeakMemory:
    """The largest tree_mb seen: `wrap(progress)` gives a progress callback that looks at each call
    (each batch of a loader run) before passing it on. `peak_mb` and `processes` stay None where
    /proc cannot say."""

    def __init__(self):
        self.peak_mb: float | None = None
        self.processes: int | None = None
        self.looked = float("-inf")

    def sample(self) -> None:
        """Look now."""
        seen = tree_mb()
        if seen is not None and (self.peak_mb is None or seen[0] > self.peak_mb):
            self.peak_mb, self.processes = seen[0], seen[1] + 1

    def wrap(self, progress):
        """A progress callback (done, total) that samples, then calls `progress` (if any)."""
        def tick(done, total):
            if done == total or time.perf_counter() - self.looked >= LOOK_EVERY_S:
                self.sample()
                self.looked = time.perf_counter()
            if progress is not None:
                progress(done, total)
        return tick
