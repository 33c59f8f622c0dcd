"""A progress bar for long measurements run from a notebook cell."""
from __future__ import annotations

import ipywidgets as w


def notebook_progress(bar: w.FloatProgress | None = None, label: w.Label | None = None):
    """A `report(fraction, message)` callback drawing on `bar` and `label` (new ones, displayed
    right away, when not given).

    Example:
        >>> report = notebook_progress(w.FloatProgress(max=1.0), w.Label())
        >>> report(0.5, "decoding alone")
    """
    if bar is None:
        from IPython.display import display

        bar, label = w.FloatProgress(value=0.0, min=0.0, max=1.0, description="estimate"), w.Label()
        display(w.HBox([bar, label]))

    def report(fraction: float, message: str) -> None:
        bar.value = max(0.0, min(1.0, fraction))
        if label is not None:
            label.value = f"{100 * fraction:.0f}% {message}"

    return report
