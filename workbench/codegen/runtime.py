"""Image listing and decoding shared by `workbench.load_images` and every exported script.

The exporters copy these functions' source into the files they write, so the preview and
the exported code decode the same files the same way (PIL, RGB, files in name order).
Keep them self-contained: only `Path`, `np` and `Image` may be used inside.
"""
from pathlib import Path

import numpy as np
from PIL import Image

IMAGE_EXTENSIONS = (".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")


def list_image_files(root):
    """Image files under `root` (recursive), sorted by their path relative to `root`."""
    root = Path(root)
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def decode_image(path):
    """Decode one file with PIL to an RGB uint8 array of shape (height, width, 3)."""
    with Image.open(path) as image:
        image.load()
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()
