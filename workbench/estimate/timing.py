"""Small timing helpers: median of timed calls after a warm-up."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def median_seconds(call: Callable[[], object], runs: int, warmup: int = 1,
                   sync: Callable[[], None] | None = None) -> float:
    """Median wall time of `call()` over `runs` calls after `warmup` untimed ones.

    Example:
        >>> median_seconds(lambda: sum(range(100)), runs=3) >= 0
        True
    """
    for _ in range(warmup):
        call()
    if sync is not None:
        sync()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        if sync is not None:
            sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
