"""Targets: the masks, boxes and keypoints a user gives beside the images, checked, and read
from a COCO file and a mask folder.

Formats (`Chain.run` takes them and `RunResult` gives them back alike):
- masks: one H x W integer label map per image (a list), or an N x H x W stack;
- boxes: one (K, 4) float array per image, pixel [x1, y1, x2, y2] (pixel edges: a box over
  pixel columns 0-9 is [0, 10)), with optional box_labels, one (K,) integer array per image;
- keypoints: one (K, 2) float array per image, pixel [x, y] with pixel centres at integers
  (column j's centre is x = j), and optional keypoints_visible, one (K,) bool array per image.

Example:
    >>> import numpy as np
    >>> t = check_targets([np.zeros((4, 6, 3), np.uint8)], boxes=[[[1, 1, 3, 2]]])
    >>> t.boxes[0].tolist(), t.box_labels[0].tolist()
    ([[1.0, 1.0, 3.0, 2.0]], [0])
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from .data import SAMPLE_DATA, DecodedImage, decode_image, image_files, resolve_source
from .errors import InputError
from .runtime.annotations import annotated_files, read_targets

SAMPLE_TARGETS = Path(__file__).resolve().parent / "sample_targets"
MASK_DTYPES = "uint8, uint16, int32, int64 or bool"


@dataclass
class Targets:
    """Checked targets, one entry per image in every list that is not None (copies: the
    caller's arrays are never changed). `stacked`: masks were given as one N x H x W array."""

    masks: list[np.ndarray] | None = None
    boxes: list[np.ndarray] | None = None
    box_labels: list[np.ndarray] | None = None
    keypoints: list[np.ndarray] | None = None
    keypoints_visible: list[np.ndarray] | None = None
    stacked: bool = False

    def kinds(self) -> list[str]:
        """The kinds given: 'masks', 'boxes', 'keypoints'."""
        return [k for k in ("masks", "boxes", "keypoints") if getattr(self, k) is not None]


def _per_image(name: str, value: Any, count: int) -> list[Any]:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise InputError(f"{name}: expected one entry per image (a list of {count}), got {type(value).__name__}")
    if len(value) != count:
        raise InputError(f"{name}: expected one entry per image ({count} image(s)), got {len(value)}")
    return list(value)


def _array(name: str, n: int, value: Any, what: str) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        return np.array(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} of image {n + 1}: must be {what}, got {type(value).__name__}") from None


def _check_mask(n: int, value: Any, image: np.ndarray) -> np.ndarray:
    mask = _array("mask", n, value, "an H x W array of integer labels")
    if mask.ndim == 3 and mask.shape[2] == 1:
        mask = mask[:, :, 0]
    if mask.ndim != 2 or mask.dtype.kind not in "biu":
        raise InputError(f"mask of image {n + 1}: must be an H x W array of integer labels ({MASK_DTYPES}), got "
                         f"{mask.dtype} values of shape {mask.shape}")
    if mask.shape != image.shape[:2]:
        raise InputError(f"mask of image {n + 1} is {mask.shape[0]}x{mask.shape[1]} but image {n + 1} is "
                         f"{image.shape[0]}x{image.shape[1]}; give each image a mask of its own size")
    return mask.astype(np.uint8) if mask.dtype == bool else mask.copy()


def _check_points(kind: str, n: int, value: Any, columns: int, image: np.ndarray) -> np.ndarray:
    shape = "(K, 4) [x1, y1, x2, y2]" if columns == 4 else "(K, 2) [x, y]"
    array = _array(kind, n, value, f"a {shape} array of pixel coordinates")
    if array.size == 0:
        return np.zeros((0, columns), np.float64)
    if array.ndim != 2 or array.shape[1] != columns or array.dtype.kind not in "iuf":
        raise InputError(f"{kind} of image {n + 1}: must be a {shape} array of pixel coordinates, got {array.dtype} "
                         f"values of shape {array.shape}")
    array = array.astype(np.float64)
    bad = ~np.isfinite(array).all(axis=1)
    if bad.any():
        k = int(np.argmax(bad))
        raise InputError(f"{kind} of image {n + 1}: entry {k + 1} {array[k].tolist()} has a NaN or infinite "
                         "coordinate; "
                         "give finite pixel coordinates (drop the entry, or flag a keypoint with keypoints_visible)")
    h, w = image.shape[:2]
    if columns == 4:
        flipped = (array[:, 2] < array[:, 0]) | (array[:, 3] < array[:, 1])
        if flipped.any():
            k = int(np.argmax(flipped))
            raise InputError(f"boxes of image {n + 1}: box {k + 1} {array[k].tolist()} has x2 < x1 or y2 < y1; "
                             "boxes are "
                             "pixel [x1, y1, x2, y2] with x1 <= x2 and y1 <= y2 (COCO's [x, y, w, h] becomes "
                             "[x, y, x + w, y + h])")
        outside = (array[:, 0] < 0) | (array[:, 1] < 0) | (array[:, 2] > w) | (array[:, 3] > h)
        where = f"x in [0, {w}], y in [0, {h}]"
    else:
        outside = (array[:, 0] < -0.5) | (array[:, 1] < -0.5) | (array[:, 0] >= w - 0.5) | (array[:, 1] >= h - 0.5)
        where = f"x in [-0.5, {w - 0.5}), y in [-0.5, {h - 0.5}), pixel centres at integers"
    if outside.any():
        k = int(np.argmax(outside))
        raise InputError(f"{kind} of image {n + 1}: entry {k + 1} {array[k].tolist()} lies outside the {h}x{w} image "
                         f"({where}); clip it or drop it")
    return array


def _check_ids(name: str, n: int, value: Any, count: int, kind: str) -> np.ndarray:
    array = _array(name, n, value, f"one entry per {kind}").reshape(-1)
    if len(array) != count:
        raise InputError(f"{name} of image {n + 1}: expected one entry per {kind} ({count}), got {len(array)}")
    return array.copy()


def check_targets(images: list[np.ndarray], masks: Any = None, boxes: Any = None, box_labels: Any = None,
                  keypoints: Any = None, keypoints_visible: Any = None) -> Targets | None:
    """Check the targets given for `images` (see the module's formats); None when none are given.
    Every error names the image, the target and what to change.

    Example:
        >>> check_targets([np.zeros((4, 6, 3), np.uint8)], keypoints=[[[9, 1]]])
        Traceback (most recent call last):
        ...
        workbench.errors.InputError: keypoints of image 1: entry 1 [9.0, 1.0] lies outside the 4x6 image ...
        pixel centres at integers); clip it or drop it
    """
    if masks is None and boxes is None and keypoints is None:
        for name, value in (("box_labels", box_labels), ("keypoints_visible", keypoints_visible)):
            if value is not None:
                raise InputError(f"{name} were given without {'boxes' if name == 'box_labels' else 'keypoints'}")
        return None
    count = len(images)
    out = Targets()
    if masks is not None:
        out.stacked = isinstance(masks, np.ndarray) and masks.ndim == 3 or hasattr(masks, "detach") and masks.ndim == 3
        out.masks = [_check_mask(n, m, images[n]) for n, m in enumerate(_per_image("masks", masks, count))]
    if boxes is not None:
        out.boxes = [_check_points("boxes", n, b, 4, images[n])
                     for n, b in enumerate(_per_image("boxes", boxes, count))]
        labels = (_per_image("box_labels", box_labels, count) if box_labels is not None
                  else [np.arange(len(b)) for b in out.boxes])
        out.box_labels = [_check_ids("box_labels", n, v, len(out.boxes[n]), "box") for n, v in enumerate(labels)]
    elif box_labels is not None:
        raise InputError("box_labels were given without boxes")
    if keypoints is not None:
        out.keypoints = [_check_points("keypoints", n, k, 2, images[n])
                         for n, k in enumerate(_per_image("keypoints", keypoints, count))]
        visible = (_per_image("keypoints_visible", keypoints_visible, count) if keypoints_visible is not None
                   else [np.ones(len(k), bool) for k in out.keypoints])
        out.keypoints_visible = [_check_ids("keypoints_visible", n, v, len(out.keypoints[n]), "keypoint").astype(bool)
                                 for n, v in enumerate(visible)]
    elif keypoints_visible is not None:
        raise InputError("keypoints_visible were given without keypoints")
    return out


# ----- reading targets from files ------------------------------------------------------------
def annotation_sources(source: str | Path | None, coco: str | Path | None = None,
                       masks: str | Path | None = None) -> tuple[Path | str, Path | None, Path | None]:
    """(images, coco, masks) as load_annotated reads them: the sample photos (source None, or
    the sample folder) come with their hand-made annotations, for whichever of coco and masks is
    not given (both when neither is); other folders keep what is given.

    Example:
        >>> images, coco, masks = annotation_sources(None)
        >>> images == SAMPLE_DATA, coco.name, masks.name
        (True, 'instances.json', 'masks')
        >>> annotation_sources(str(SAMPLE_DATA), masks="my_masks")[1:]
        (None, 'my_masks')
    """
    resolved = resolve_source(source)
    # By where it leads, not by how it is written: "sample_data" at the repository's root is a link.
    if isinstance(resolved, (str, Path)) and Path(resolved).resolve() == SAMPLE_DATA.resolve():
        source = SAMPLE_DATA
        coco = SAMPLE_TARGETS / "instances.json" if coco is None and masks is None else coco
        masks = SAMPLE_TARGETS / "masks" if masks is None else masks
    return source, coco, masks


def load_annotated(source: str | Path | None = None, coco: str | Path | None = None,
                   masks: str | Path | None = None, limit: int | None = None
                   ) -> tuple[list[np.ndarray], dict[str, Any]]:
    """Images and their targets, ready for `chain.run(images, **targets)`.

    `source`: the images (a folder, searched recursively, or a glob; None: the bundled sample
    images, whose hand-made annotations are then the default `coco` and `masks`). `coco`: a COCO
    instances file: only the images it lists are loaded, in name order, each with its boxes
    ([x, y, w, h] becomes [x1, y1, x2, y2]), box_labels (category ids) and keypoints (COCO's
    v = 0 flagged not visible); files are matched by their path under the folder, or by name.
    `masks`: a folder with one label-map PNG per image, named after the image (cat.jpg:
    cat.png); without `coco`, only the images that have a mask are loaded. An exported file's
    `--save` with `--coco` and `--masks` picks and reads the same (runtime/annotations.py).
    `limit`: the first `limit` annotated images only (in name order), the others left unread.

    Example:
        >>> images, targets = load_annotated()
        >>> len(images) == len(targets["masks"]) == len(targets["boxes"]), sorted(targets)
        (True, ['box_labels', 'boxes', 'keypoints', 'keypoints_visible', 'masks'])
    """
    source, coco, masks = annotation_sources(source, coco, masks)
    if coco is None and masks is None:
        raise InputError("load_annotated needs a COCO file (coco=...) or a mask folder (masks=...) beside the images")
    files = image_files(source)
    root = Path(source) if Path(source).is_dir() else None
    try:
        files, index = annotated_files(files, root, coco, masks)
        if not files:
            raise ValueError(f"none of the images in {str(source)!r} is listed in {str(coco)!r} (COCO file_name "
                             "must be "
                             "the image's path under the folder, or its name)" if coco is not None else
                             f"no image in {str(source)!r} has a mask in {str(masks)!r} (cat.jpg needs cat.png)")
        files = files[:limit]
        targets = read_targets(files, root, index, masks)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return [DecodedImage.of(decode_image(f), f) for f in files], targets
