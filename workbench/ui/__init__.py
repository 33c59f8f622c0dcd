"""The notebook app (the only package that imports ipywidgets).

Example:
    >>> from workbench.ui import Workbench  # doctest: +SKIP
    >>> Workbench(images="sample_data")     # doctest: +SKIP
"""
from .app import Workbench

__all__ = ["Workbench"]
