"""Augmentation workbench: compose image-augmentation chains, preview them, export seeded code.

Example:
    >>> import workbench as wb
    >>> chain = wb.Chain(seed=7).add("Rotate", degrees=[-20, 20]).add("Brightness", factor=[0.7, 1.3])
    >>> res = chain.run(wb.load_images()[:2], backend="kornia", device="cpu")
    >>> len(res.params), res.params[0][0]["op"]
    (2, 'Rotate')
"""
from .backends import BACKENDS, RunResult
from .chain import Chain
from .check import CheckReport, check_images
from .data import SAMPLE_DATA, as_image_list, load_images
from .errors import (ChainError, EstimateCancelled, ExportError, InputError, InsufficientMemoryError,
                     UnsupportedOpError, WorkbenchError)
from .model import FORMAT_VERSION, Step
from .ops import get_op, list_ops
from .render import draw_targets, preview_grid, to_display
from .targets import load_annotated

__version__ = "0.1.0"


def __getattr__(name):
    # The app needs ipywidgets; import it only when asked for, so the headless API stays light.
    if name == "Workbench":
        from .ui import Workbench

        return Workbench
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")

__all__ = [
    "BACKENDS", "Chain", "ChainError", "CheckReport", "check_images",
    "EstimateCancelled", "ExportError", "FORMAT_VERSION", "InputError",
    "InsufficientMemoryError", "RunResult",
    "SAMPLE_DATA", "Step", "UnsupportedOpError", "WorkbenchError", "__version__", "as_image_list",
    "Workbench", "draw_targets", "get_op", "list_ops", "load_annotated", "load_images", "preview_grid", "to_display",
]
