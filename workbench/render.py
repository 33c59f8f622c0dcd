"""Turning augmented outputs into pictures: display conversion and the preview grid."""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from .backends import run_chain
from .model import ChainModel


def to_display(chain: ChainModel, image: np.ndarray) -> np.ndarray:
    """uint8 RGB for showing one output: undoes a final Normalize, clips to [0, 1].

    Example:
        >>> import workbench as wb
        >>> c = wb.Chain().add("Normalize", mean=[0.5] * 3, std=[0.5] * 3)
        >>> to_display(c, np.zeros((1, 1, 3), np.float32))[0, 0].tolist()
        [128, 128, 128]
    """
    if np.asarray(image).dtype == np.uint8:  # backends that keep uint8 need no conversion
        return np.asarray(image)
    x = np.asarray(image, dtype=np.float32)
    enabled = [s for _, s in chain.enabled_steps()]
    if enabled and enabled[-1].op == "Normalize":
        x = x * np.asarray(enabled[-1].params["std"], np.float32) + np.asarray(enabled[-1].params["mean"], np.float32)
    return np.clip(np.round(x * 255.0), 0, 255).astype(np.uint8)


def mix_caption(rows) -> str:
    """What the batch mixing steps did to one sample (its `RunResult.params` rows), as the
    preview shows it: the partner's share and index per applied mixing step.

    Example:
        >>> mix_caption([{"op": "MixUp", "applied": True, "partner": 3, "weight": 0.3}])
        'MixUp 30% of #3'
    """
    return "; ".join(f"{row['op']} {row['weight']:.0%} of #{row['partner']}" for row in rows
                     if row.get("applied") and "partner" in row and "weight" in row)


def _captioned(tile: np.ndarray, text: str) -> np.ndarray:
    """The tile with `text` on a dark strip along its bottom edge (nothing when empty)."""
    if not text:
        return tile
    image = Image.fromarray(tile)
    draw = ImageDraw.Draw(image)
    height = 12
    draw.rectangle([0, image.height - height, image.width, image.height], fill=(0, 0, 0))
    draw.text((2, image.height - height), text, fill=(255, 255, 255))
    return np.asarray(image)


def _fit(image: np.ndarray, cell: int) -> np.ndarray:
    """Letterbox an image into a cell x cell square (aspect kept, grey background)."""
    h, w = image.shape[:2]
    scale = cell / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = np.asarray(Image.fromarray(image).resize(size, Image.BILINEAR))
    canvas = np.full((cell, cell, 3), 40, np.uint8)
    y, x = (cell - small.shape[0]) // 2, (cell - small.shape[1]) // 2
    canvas[y:y + small.shape[0], x:x + small.shape[1]] = small
    return canvas


def preview_grid(chain: ChainModel, images, draws: int = 3, backend: str = "kornia", device: str = "cpu",
                 cell: int = 160, gap: int = 4) -> np.ndarray:
    """One row per image: the original, then `draws` augmented samples (seeds seed, seed+1, ...);
    a sample that a batch mixing step mixed carries a caption with the partner and its share.

    Example:
        >>> import workbench as wb
        >>> grid = preview_grid(wb.Chain().add("HorizontalFlip"), wb.load_images()[:2], draws=2, cell=32)
        >>> grid.shape
        (68, 104, 3)
    """
    if not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be a positive integer, got {draws!r}")
    runs = [run_chain(chain, images, backend=backend, device=device, seed=(chain.seed + k) % 2**31) for k in range(draws)]
    originals = runs[0].inputs
    rows = []
    for n, original in enumerate(originals):
        tiles = [_fit(original, cell)] + [_captioned(_fit(to_display(chain, r.images[n]), cell),
                                                     mix_caption(r.params[n])) for r in runs]
        row = np.full((cell, len(tiles) * (cell + gap) - gap, 3), 255, np.uint8)
        for j, tile in enumerate(tiles):
            row[:, j * (cell + gap): j * (cell + gap) + cell] = tile
        rows.append(row)
    grid = np.full((len(rows) * (cell + gap) - gap, rows[0].shape[1], 3), 255, np.uint8)
    for i, row in enumerate(rows):
        grid[i * (cell + gap): i * (cell + gap) + cell] = row
    return grid
