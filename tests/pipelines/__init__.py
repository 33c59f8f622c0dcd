"""A corpus of real-world augmentation pipelines, written from the recipes widely used public
training repositories and tutorials follow (not copied from any of them): each function returns
the pipeline object; the comment above it names the kind of source.

`ALBUMENTATIONS`, `KORNIA` and `TORCHVISION` map a pipeline's name to its function. The
torchvision functions import torchvision when called (it is optional).
"""
from .albumentations_pipelines import ALBUMENTATIONS
from .kornia_pipelines import KORNIA
from .torchvision_pipelines import TORCHVISION

__all__ = ["ALBUMENTATIONS", "KORNIA", "TORCHVISION"]
