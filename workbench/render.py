"""Turning augmented outputs into pictures: display conversion, targets drawn over them, and
the preview grid."""
from __future__ import annotations

import functools

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import cv2
import numpy as np
from PIL import Image, ImageDraw

from .backends import run_chain
from .data import as_image_list
from .errors import InputError
from .model import ChainModel
from .targets import Targets, check_targets

TARGET_KINDS = ("masks", "boxes", "keypoints")
MASK_OPACITY = 0.45
BOX_WIDTH = 2
KEYPOINT_RADIUS = 3
# Twenty colours told apart at a glance (Sasha Trubetskoy's list), indexed by label value: a
# mask region and the box of the same label share a colour.
PALETTE = np.array([
    (230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
    (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212), (0, 128, 128), (220, 190, 255),
    (170, 110, 40), (255, 250, 200), (128, 0, 0), (170, 255, 195), (128, 128, 0), (255, 215, 180),
    (0, 0, 128), (128, 128, 128)], np.uint8)


def to_display(chain: ChainModel, image: np.ndarray) -> np.ndarray:
    """uint8 RGB for showing one output: undoes the chain's last Normalize (steps after it, batch
    mixing or a misplaced colour op, keep its value scale), clips to [0, 1].

    Example:
        >>> import workbench as wb
        >>> c = wb.Chain().add("Normalize", mean=[0.5] * 3, std=[0.5] * 3)
        >>> to_display(c, np.zeros((1, 1, 3), np.float32))[0, 0].tolist()
        [128, 128, 128]
    """
    if np.asarray(image).dtype == np.uint8:  # backends that keep uint8 need no conversion
        return np.asarray(image)
    x = np.asarray(image, dtype=np.float32)
    normalize = [s for _, s in chain.enabled_steps() if s.op == "Normalize"]
    std, mean = (tuple(normalize[-1].params[k]) for k in ("std", "mean")) if normalize else ((1.0,), (0.0,))
    scale, offset = _display_affine(x.shape, std, mean)
    y = x * scale
    y += offset
    np.clip(y, 0, 255, out=y)
    return y.astype(np.uint8)


@functools.lru_cache(maxsize=8)
def _display_affine(shape: tuple, std: tuple, mean: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Per-pixel scale and offset arrays of `shape` for to_display (x * 255 * std + 255 * mean,
    plus 0.5 so that truncating rounds): numpy multiplies whole arrays several times faster than
    it broadcasts a 3-vector over the last axis, and a preview converts the same shape again and again."""
    scale = np.float32(255.0) * np.asarray(std, np.float32)
    offset = np.float32(255.0) * np.asarray(mean, np.float32) + np.float32(0.5)
    if len(shape) < 3 or shape[-1] != scale.size:
        scale, offset = scale[:1], offset[:1]  # one channel, or one value for every channel
    return np.broadcast_to(scale, shape).copy(), np.broadcast_to(offset, shape).copy()


def mix_caption(rows) -> str:
    """What the batch mixing steps did to one sample (its `RunResult.params` rows), as the
    preview shows it: the partner's share and image number (its batch index + 1, counted from 1
    as rows and steps are) per applied mixing step.

    Example:
        >>> mix_caption([{"op": "MixUp", "applied": True, "partner": 3, "weight": 0.3}])
        'MixUp 30% of #4'
    """
    return "; ".join(f"{row['op']} {row['weight']:.0%} of #{row['partner'] + 1}" for row in rows
                     if row.get("applied") and "partner" in row and "weight" in row)


def size_caption(chain: ChainModel, image) -> str:
    """A sample's size, "HxW" (height x width), where a step of `chain` draws each sample's size
    (Step.draws_sizes: RandomShortestSize, RandomResize, ScaleJitter, RandomZoomOut, a group with a
    size-changing child): the letterboxed tiles hide it; ""
    otherwise.

    Example:
        >>> from workbench.model import ChainModel, Step
        >>> size_caption(ChainModel(steps=[Step.create("RandomResize")]), np.zeros((300, 400, 3)))
        '300x400'
    """
    drawn = any(step.draws_sizes() for _, step in chain.enabled_steps())
    return "{}x{}".format(*np.asarray(image).shape[:2]) if drawn else ""


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


def label_colour(label: int) -> tuple[int, int, int]:
    """The RGB colour drawn for a mask or box label (the palette repeats every 20 labels).

    Example:
        >>> label_colour(1), label_colour(21)
        ((60, 180, 75), (60, 180, 75))
    """
    return tuple(int(c) for c in PALETTE[int(label) % len(PALETTE)])


def targets_of(targets: Targets | None, n: int) -> dict[str, Any]:
    """The targets of image `n` as `draw_targets`' keywords (empty for None).

    Example:
        >>> t = check_targets([np.zeros((4, 6, 3), np.uint8)], boxes=[[[1, 1, 3, 2]]])
        >>> sorted(targets_of(t, 0))
        ['box_labels', 'boxes']
    """
    if targets is None:
        return {}
    names = {"masks": "mask"}
    return {names.get(f.name, f.name): getattr(targets, f.name)[n] for f in fields(Targets)
            if f.name != "stacked" and getattr(targets, f.name) is not None}


def _resized(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` as RGB at (height, width) `size`, resampled as `_fit` does."""
    image = np.asarray(image)
    if image.ndim == 2 or image.shape[2] == 1:  # one-channel outputs are shown grey
        image = np.repeat(image.reshape(image.shape[0], image.shape[1], 1), 3, axis=2)
    if image.shape[:2] == tuple(size):
        return np.array(image)
    return _scaled(image, size)


def _overlay_mask(picture: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`picture` with each non-zero label of `mask` (nearest-sampled to its size) tinted."""
    h, w = picture.shape[:2]
    rows = np.minimum(((np.arange(h) + 0.5) * mask.shape[0] / h).astype(np.intp), mask.shape[0] - 1)
    cols = np.minimum(((np.arange(w) + 0.5) * mask.shape[1] / w).astype(np.intp), mask.shape[1] - 1)
    labels = mask[rows[:, None], cols[None, :]]
    inside = labels != 0
    if not inside.any():
        return picture
    colours = PALETTE[labels[inside].astype(np.int64) % len(PALETTE)].astype(np.float32)
    out = picture.copy()
    out[inside] = np.round(picture[inside] * (1.0 - MASK_OPACITY) + colours * MASK_OPACITY).astype(np.uint8)
    return out


def _ink(colour: tuple[int, int, int]) -> tuple[int, int, int]:
    """Black or white, whichever reads better on `colour`."""
    return (0, 0, 0) if 0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2] > 140 else (255, 255, 255)


def draw_targets(image: np.ndarray, mask: np.ndarray | None = None, boxes: np.ndarray | None = None,
                 box_labels: np.ndarray | None = None, keypoints: np.ndarray | None = None,
                 keypoints_visible: np.ndarray | None = None, show=TARGET_KINDS,
                 size: tuple[int, int] | None = None) -> np.ndarray:
    """A uint8 RGB picture of `image` (H x W x 3) with one image's targets drawn on it.

    The targets are in `image`'s own pixels (workbench/targets.py's formats). `show` picks the
    kinds drawn, among "masks", "boxes" and "keypoints". `size`: the (height, width) to draw at
    (the image is resampled to it and the coordinates scaled), so lines and dots keep their
    width in pixels on a small preview tile; default: the image's own size.

    - masks: each non-zero label tinted with its colour (`label_colour`) at 45% opacity;
      label 0 (background) is left clear;
    - boxes: 2-pixel rectangles inside the box edges, in the colour of their label, with the
      label id written in a small tab at the top-left corner;
    - keypoints: dots of radius 3 coloured by their index in the image (so a swap of left and
      right shows); visible ones filled with a dark rim, not visible ones (given so, or moved
      off the image at some step) drawn as hollow rings where they still lie on the picture.

    Example:
        >>> picture = draw_targets(np.zeros((20, 20, 3), np.uint8), boxes=[[2, 2, 12, 12]], box_labels=[1])
        >>> picture[7, 2].tolist() == list(label_colour(1)), picture[7, 15].tolist()
        (True, [0, 0, 0])
    """
    h, w = np.asarray(image).shape[:2]
    size = (h, w) if size is None else (int(size[0]), int(size[1]))
    picture = _resized(image, size)
    sx, sy = size[1] / w, size[0] / h
    show = set(show)
    if "masks" in show and mask is not None:
        picture = _overlay_mask(picture, np.asarray(mask))
    draw_boxes = "boxes" in show and boxes is not None and len(boxes)
    draw_points = "keypoints" in show and keypoints is not None and len(keypoints)
    if not (draw_boxes or draw_points):
        return picture
    canvas = Image.fromarray(picture)
    pen = ImageDraw.Draw(canvas)
    if draw_boxes:
        labels = np.arange(len(boxes)) if box_labels is None else np.asarray(box_labels).reshape(-1)
        for (x1, y1, x2, y2), label in zip(np.asarray(boxes, np.float64), labels):
            colour = label_colour(label)
            # Pixel edges: a box over columns 0-9 ([0, 10)) covers tile pixels round(0) .. round(10 sx) - 1.
            left, top = round(x1 * sx), round(y1 * sy)
            right, bottom = max(left, round(x2 * sx) - 1), max(top, round(y2 * sy) - 1)
            pen.rectangle([left, top, right, bottom], outline=colour, width=BOX_WIDTH)
            text = str(int(label))
            _, _, tw, th = pen.textbbox((0, 0), text)
            pen.rectangle([left, top, left + tw + 3, top + th + 2], fill=colour)
            pen.text((left + 2, top), text, fill=_ink(colour))
    if draw_points:
        visible = (np.ones(len(keypoints), bool) if keypoints_visible is None
                   else np.asarray(keypoints_visible, bool).reshape(-1))
        r = KEYPOINT_RADIUS
        for k, ((x, y), seen) in enumerate(zip(np.asarray(keypoints, np.float64), visible)):
            # Pixel centres at integers: x = j is column j's centre, at (j + 0.5) sx - 0.5 on the tile.
            cx, cy = (x + 0.5) * sx - 0.5, (y + 0.5) * sy - 0.5
            colour = label_colour(k)
            box = [cx - r, cy - r, cx + r, cy + r]
            if seen:
                pen.ellipse(box, fill=colour, outline=(0, 0, 0), width=1)
            elif -r <= cx < size[1] + r and -r <= cy < size[0] + r:
                pen.ellipse(box, outline=colour, width=2)
    return np.asarray(canvas)


def _fit_size(h: int, w: int, cell: int) -> tuple[int, int]:
    """(height, width) of an h x w image letterboxed into a cell x cell square."""
    scale = cell / max(h, w)
    return max(1, round(h * scale)), max(1, round(w * scale))


def _letterbox(small: np.ndarray, cell: int) -> np.ndarray:
    canvas = np.full((cell, cell, 3), 40, np.uint8)
    y, x = (cell - small.shape[0]) // 2, (cell - small.shape[1]) // 2
    canvas[y:y + small.shape[0], x:x + small.shape[1]] = small
    return canvas


def _fit(image: np.ndarray, cell: int) -> np.ndarray:
    """Letterbox an image into a cell x cell square (aspect kept, grey background)."""
    h, w = image.shape[:2]
    return _letterbox(_scaled(np.asarray(image), _fit_size(h, w, cell)), cell)


def _scaled(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """`image` resampled to (height, width) `size` for showing: bilinear, and averaging areas when
    it shrinks by more than 2 (a preview tile is drawn on every control change: OpenCV does it
    several times faster than PIL)."""
    if image.shape[:2] == tuple(size):
        return image
    shrink = image.shape[0] / size[0] > 2 or image.shape[1] / size[1] > 2
    out = cv2.resize(np.ascontiguousarray(image), (size[1], size[0]),
                     interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
    return out.reshape(*size, *image.shape[2:])  # OpenCV drops a single channel's axis


def fit_tile(image: np.ndarray, cell: int, targets: Mapping[str, Any] | None = None,
             show=TARGET_KINDS) -> np.ndarray:
    """A cell x cell preview tile: `image` letterboxed (aspect kept, grey bars) with its targets
    (`draw_targets`' keywords, e.g. `targets_of(t, n)`) drawn at the tile's scale.

    Example:
        >>> image = np.zeros((40, 80, 3), np.uint8)
        >>> tile = fit_tile(image, 20, {"boxes": [[40, 0, 80, 40]], "box_labels": [2]})
        >>> tile[10, 19].tolist() == list(label_colour(2)), tile[10, 5].tolist()
        (True, [0, 0, 0])
    """
    if not targets or not set(show) & {"masks" if k == "mask" else k for k in targets}:
        return _fit(image, cell)
    h, w = np.asarray(image).shape[:2]
    return _letterbox(draw_targets(image, **targets, show=show, size=_fit_size(h, w, cell)), cell)


def _given_targets(images: list[np.ndarray], targets: Targets | Mapping[str, Any] | None) -> Targets | None:
    """`targets` (load_annotated's dict of keyword lists, or checked Targets) checked for `images`."""
    if targets is None or isinstance(targets, Targets):
        return targets
    if not isinstance(targets, Mapping):
        raise InputError(f"targets must be a dict of masks/boxes/box_labels/keypoints/keypoints_visible lists "
                        f"(as load_annotated returns), got {type(targets).__name__}")
    return check_targets(images, **targets)


def preview_grid(chain: ChainModel, images, draws: int = 3, backend: str = "kornia", device: str = "cpu",
                 cell: int = 160, gap: int = 4, targets: Targets | Mapping[str, Any] | None = None,
                 show=TARGET_KINDS) -> np.ndarray:
    """One row per image: the original, then `draws` augmented samples (seeds seed, seed+1, ...);
    a sample that a batch mixing step mixed carries a caption with the partner and its share.

    `targets`: the images' masks, boxes and keypoints (the dict `load_annotated` returns, or
    checked `Targets`), drawn on every tile (`draw_targets`): as given on the originals, moved
    by the chain on the draws; `show` picks the kinds drawn.

    Example:
        >>> import workbench as wb
        >>> grid = preview_grid(wb.Chain().add("HorizontalFlip"), wb.load_images()[:2], draws=2, cell=32)
        >>> grid.shape
        (68, 104, 3)
        >>> images, targets = wb.load_annotated()
        >>> preview_grid(wb.Chain().add("Rotate"), images, draws=1, cell=32, targets=targets).shape
        (140, 68, 3)
    """
    if not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be a positive integer, got {draws!r}")
    given = None
    if targets is not None:
        images = as_image_list(images)  # decoded once: checked against the targets, then run
        given = _given_targets(images, targets)
    keywords = {} if given is None else {k: getattr(given, k) for k in
                                         ("masks", "boxes", "box_labels", "keypoints", "keypoints_visible")}
    runs = [run_chain(chain, images, backend=backend, device=device, seed=(chain.seed + k) % 2**31, **keywords)
            for k in range(draws)]
    originals = runs[0].inputs
    rows = []
    for n, original in enumerate(originals):
        tiles = [fit_tile(original, cell, targets_of(given, n), show)] + [
            _captioned(fit_tile(to_display(chain, r.images[n]), cell, targets_of(r.targets, n), show),
                       " · ".join(filter(None, (size_caption(chain, r.images[n]), mix_caption(r.params[n])))))
            for r in runs]
        row = np.full((cell, len(tiles) * (cell + gap) - gap, 3), 255, np.uint8)
        for j, tile in enumerate(tiles):
            row[:, j * (cell + gap): j * (cell + gap) + cell] = tile
        rows.append(row)
    grid = np.full((len(rows) * (cell + gap) - gap, rows[0].shape[1], 3), 255, np.uint8)
    for i, row in enumerate(rows):
        grid[i * (cell + gap): i * (cell + gap) + cell] = row
    return grid
