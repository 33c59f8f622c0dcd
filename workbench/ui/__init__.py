"""The notebook app (the only package that imports ipywidgets): `Workbench`."""
from .app import Workbench

__all__ = ["Workbench"]
