"""Progress while an estimate measures: a callback `report(fraction, message)`.

`resolve_progress(True)` picks a notebook progress bar inside Jupyter (from `workbench.ui`,
the only place that imports ipywidgets) and a text bar on a terminal.
"""
from __future__ import annotations

import sys
from typing import Callable

Report = Callable[[float, str], None]


class Phases:
    """Maps each phase's own (done, total) onto one overall fraction.

    Example:
        >>> seen = []
        >>> phases = Phases(lambda f, m: seen.append((round(f, 2), m)), {"a": 1, "b": 3})
        >>> phases.tick("a")(1, 2); phases.tick("b")(3, 3)
        >>> seen
        [(0.12, 'a'), (1.0, 'b')]
    """

    def __init__(self, report: Report | None, weights: dict[str, float]):
        self.report = report
        total = sum(weights.values())
        self.start, offset = {}, 0.0
        for name, weight in weights.items():
            self.start[name] = (offset / total, weight / total)
            offset += weight

    def tick(self, name: str) -> Callable[[int, int], None]:
        """A (done, total) callback for phase `name`."""
        begin, width = self.start[name]

        def progress(done: int, total: int) -> None:
            if self.report is not None:
                self.report(begin + width * min(1.0, done / max(total, 1)), name)

        return progress

    def done(self, message: str = "done") -> None:
        if self.report is not None:
            self.report(1.0, message)


def text_progress(stream=None) -> Report:
    """A one-line text bar, redrawn in place (for terminals and the command line)."""
    stream = stream or sys.stderr
    shown = [None]

    def report(fraction: float, message: str) -> None:
        filled = int(round(30 * fraction))
        if shown[0] == (filled, message):  # redraw only when the bar or the message changes
            return
        shown[0] = (filled, message)
        stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {100 * fraction:5.1f}% {message:<40}")
        if fraction >= 1.0:
            stream.write("\n")
        stream.flush()

    return report


def resolve_progress(progress) -> Report | None:
    """True -> a notebook bar in Jupyter, a text bar on a terminal (silent in logs);
    False/None -> silent; a callable is used as is."""
    if callable(progress):
        return progress
    if not progress:
        return None
    if _in_notebook():
        from ..ui.progress import notebook_progress

        return notebook_progress()
    # A redrawn bar only makes sense on a terminal; logs would fill with partial lines.
    return text_progress() if sys.stderr.isatty() else None


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"
