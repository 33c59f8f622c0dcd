"""Progress while an estimate measures: a callback `report(fraction, message)`.

`resolve_progress(True)` picks a bar redrawn in its notebook output inside Jupyter (an HTML
display that is updated in place: no widgets, which only `workbench.ui` imports) and a text
bar on a terminal.
"""
from __future__ import annotations

import html
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


def _bar_html(fraction: float, message: str) -> str:
    width = f"{100 * max(0.0, min(1.0, fraction)):.1f}%"
    return (f'<div style="display:flex;align-items:center;gap:8px;font-family:sans-serif">'
            f'<div style="width:240px;height:10px;background:#ddd;border-radius:5px">'
            f'<div style="width:{width};height:10px;background:#4a8;border-radius:5px"></div></div>'
            f'<span>{100 * fraction:.0f}% {html.escape(message)}</span></div>')


def cell_progress() -> Report:
    """A bar in the running notebook cell's output, redrawn in place through an IPython
    display handle (so it needs no widgets and no widget front end).

    Example:
        >>> _bar_html(0.5, "decoding <alone>")[-45:]
        '<span>50% decoding &lt;alone&gt;</span></div>'
    """
    # IPython is there whenever a notebook is (this is only called inside one).
    from IPython.display import HTML, display

    handle = display(HTML(_bar_html(0.0, "starting")), display_id=True)
    shown = [None]

    def report(fraction: float, message: str) -> None:
        key = (int(round(200 * fraction)), message)
        if shown[0] != key:  # redraw only when the bar or the message changes
            shown[0] = key
            handle.update(HTML(_bar_html(fraction, message)))

    return report


def resolve_progress(progress) -> Report | None:
    """True -> a notebook bar in Jupyter, a text bar on a terminal (silent in logs);
    False/None -> silent; a callable is used as is."""
    if callable(progress):
        return progress
    if not progress:
        return None
    if _in_notebook():
        return cell_progress()
    # A redrawn bar only makes sense on a terminal; logs would fill with partial lines.
    return text_progress() if sys.stderr.isatty() else None


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"
