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
    """Decode one file with PIL to an RGB uint8 array of shape (height, width, 3).

    16-bit greyscale keeps its top 8 bits (PIL's own conversion would clip it to white).
    """
    with Image.open(path) as image:
        image.load()
        if image.mode.startswith("I;16") or image.mode == "I":
            grey = (np.asarray(image).astype(np.uint32) >> 8).clip(0, 255).astype(np.uint8)
            return np.repeat(grey[:, :, None], 3, axis=2)
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()
