"""The real image files an estimate decodes: the user's own, or re-encoded at one size; with
targets, the user's annotated files as they are."""
from __future__ import annotations

import atexit
import hashlib
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..runtime.annotations import annotated_folder, read_targets
from ..runtime.bad_files import DECODE_ERRORS, BadImageError, decode_checked, image_problem, without_excluded
from ..data import as_image_list, image_files, resolve_source
from ..errors import InputError

# Decoding speed depends on pixels and format, not on how many distinct files there are;
# the loaders sample with replacement, so a few dozen files stand for any folder.
MAX_FILES = 48
JPEG_QUALITY = 90
PREPARED_PREFIX = "workbench-estimate-"

_prepared: dict[str, Path] = {}


@dataclass
class BenchInput:
    """A folder of same-size image files for the loaders to read, and how it was made; with
    targets, the annotations the loaders read beside it (`coco`, `masks`: see prepare_annotated)."""

    folder: Path
    size: tuple[int, int]
    files: list[Path]
    notes: list[str] = field(default_factory=list)
    # Every size among the files looked at (one, unless a folder of mixed sizes is used as it is).
    sizes: list[tuple[int, int]] = field(default_factory=list)
    coco: Path | None = None
    masks: Path | None = None

    @property
    def annotated(self) -> bool:
        """Whether the loaders read targets beside the images."""
        return self.coco is not None or self.masks is not None


def check_image_size(image_size: Any) -> tuple[int, int] | None:
    """None, an int (square) or (height, width), each side 8..8192.

    Example:
        >>> check_image_size(224), check_image_size([240, 320])
        ((224, 224), (240, 320))
    """
    if image_size is None:
        return None
    given = image_size
    if isinstance(image_size, (int, np.integer)) and not isinstance(image_size, bool):
        image_size = (image_size, image_size)
    sides = list(image_size) if isinstance(image_size, (list, tuple)) else []
    if len(sides) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and 8 <= v <= 8192
                                  for v in sides):
        raise InputError(f"image_size must be an int or [height, width] with sides 8..8192, got {given!r}")
    return int(sides[0]), int(sides[1])


def image_size_from_text(text: str):
    """'224' -> 224, '240x320' (or '240,320') -> [240, 320], '' -> None; anything else -> False
    (the caller words the error for where the text came from).

    Example:
        >>> image_size_from_text(" 240x320 "), image_size_from_text(""), image_size_from_text("big")
        ([240, 320], None, False)
    """
    text = text.strip().lower()
    if not text:
        return None
    try:
        sizes = [int(part) for part in text.replace(",", "x").split("x")]
    except ValueError:
        return False
    if len(sizes) not in (1, 2):
        return False
    return sizes[0] if len(sizes) == 1 else sizes


def prepare_input(images: Any = None, image_size: tuple[int, int] | None = None,
                  mixed_sizes: bool = False, skip_bad: bool = False, exclude: Any = None) -> BenchInput:
    """Files to decode: a folder of same-size images is used as it is, and so is a folder of
    mixed sizes when `mixed_sizes` says the exported loader reads one as it is (a step fixes
    the size before the batch must be one size); otherwise (other sizes, a glob, arrays,
    tensors, a Dataset) up to MAX_FILES images are written as JPEG at one size.
    The files the exclusion list `exclude` names are left out; of the first MAX_FILES, one that
    cannot be decoded is a BadImageError naming it, or with `skip_bad` is left out too.

    The exported script's `--bench --images FOLDER` reads FOLDER's own files: measuring a
    re-encoded copy instead (other formats, sizes and JPEG quality) would time other decoding.

    Example:
        >>> inp = prepare_input(None, (64, 96))
        >>> inp.size, inp.files[0].suffix
        ((64, 96), '.jpg')
        >>> inp = prepare_input(None, mixed_sizes=True)  # the sample photos, as they are
        >>> inp.folder.name, len(inp.sizes) > 1
        ('sample_data', True)
    """
    source = resolve_source(images)
    if isinstance(source, (str, Path)):
        files = image_files(source)
        if Path(source).is_dir():
            files = without_excluded(files, source, exclude)
        files = _readable(files, skip_bad)
        sizes = [_size_of(f) for f in files[:MAX_FILES]]
        distinct = sorted(set(sizes))
        if Path(source).is_dir() and len(distinct) == 1 and image_size in (None, sizes[0]):
            return BenchInput(Path(source), sizes[0], files, [f"decodes your {len(files)} file(s) as they are"],
                              distinct)
        if Path(source).is_dir() and mixed_sizes and image_size is None:
            size = _median_size(sizes)
            return BenchInput(Path(source), size, files,
                              [f"decodes your {len(files)} file(s) as they are ({len(distinct)} sizes), as the "
                               f"exported --bench does; the stages and steps alone are timed on them resized to "
                               f"their median {size[0]}x{size[1]}"], distinct)
        arrays = [decode_checked(f) for f in files[:MAX_FILES]]
        origin = f"{len(arrays)} file(s) from {source}"
    else:
        arrays = as_image_list(source)[:MAX_FILES]
        origin = f"{len(arrays)} in-memory image(s)"
        sizes = [a.shape[:2] for a in arrays]
    notes = []
    if image_size is None:
        image_size = _median_size(sizes)
        if len(set(map(tuple, sizes))) > 1:
            notes.append(f"your images have {len(set(map(tuple, sizes)))} sizes; measured at their median "
                         f"{image_size[0]}x{image_size[1]} (pass image_size to choose)")
    folder = _write_jpegs(arrays, image_size)
    notes.insert(0, f"decodes {origin}, re-encoded as JPEG (quality {JPEG_QUALITY}) at "
                    f"{image_size[0]}x{image_size[1]}")
    return BenchInput(folder, image_size, sorted(folder.iterdir()), notes, [image_size])


def prepare_annotated(images: Any, coco: Any, masks: Any, image_size: tuple[int, int] | None = None,
                      mixed_sizes: bool = False) -> BenchInput:
    """The annotated files of the folder `images` (None: the sample photos), as the exported
    loaders read them with coco= / masks= (--coco, --masks): the files that the COCO file lists
    (or, without one, that have a mask), decoded as they are, since their targets are tied to
    their pixels. A folder of several sizes only where the loader reads one (`mixed_sizes`, see
    prepare_input); errors (InputError) say what to change.

    Example:
        >>> from workbench.targets import SAMPLE_TARGETS
        >>> inp = prepare_annotated(None, SAMPLE_TARGETS / "instances.json", None, mixed_sizes=True)
        >>> len(inp.files), inp.annotated, inp.masks
        (4, True, None)
    """
    source = resolve_source(images)
    if not (isinstance(source, (str, Path)) and Path(source).is_dir()):
        raise InputError("coco= and masks= annotate a folder of image files (the exported loaders read --images DIR "
                         f"--coco ...): give that folder as images=, got {type(images).__name__}"
                         + (f" {str(images)!r}" if isinstance(images, (str, Path)) else ""))
    for name, path, folder in (("coco", coco, False), ("masks", masks, True)):
        if path is not None and not (Path(path).is_dir() if folder else Path(path).is_file()):
            raise InputError(f"{name}={str(path)!r}: no such {'folder' if folder else 'file'}")
    try:
        files = annotated_folder(source, coco, masks)[0]
    except ValueError as exc:
        raise InputError(str(exc)) from None
    sizes = [_size_of(f) for f in files[:MAX_FILES]]
    distinct = sorted(set(sizes))
    if image_size is not None and distinct != [tuple(image_size)]:
        raise InputError(f"image_size={list(image_size)}: with targets the estimate decodes your annotated files as "
                         "they are (their masks, boxes and keypoints belong to those pixels); leave image_size out, "
                         "or annotate files of that size")
    if len(distinct) > 1 and not mixed_sizes:
        sizes = ", ".join(f"{h}x{w}" for h, w in distinct[:3]) + (", ..." if len(distinct) > 3 else "")
        raise InputError(f"your annotated images have {len(distinct)} sizes ({sizes}), and this chain's loader makes "
                         "batches of one size: start the chain with a step that fixes the size (Resize, "
                         "RandomResizedCrop, CenterCrop, ...), "
                         "as training on these files would need")
    size = distinct[0] if len(distinct) == 1 else _median_size(sizes)
    read = " and ".join(f"{name} {str(path)!r}" for name, path in (("COCO file", coco), ("masks from", masks)) if path)
    notes = [f"decodes your {len(files)} annotated file(s) as they are and moves their targets ({read}) with "
             "every batch, as the exported --bench --coco/--masks does"]
    if len(distinct) > 1:
        notes.append(f"the stages and steps alone are timed on the images resized to their median {size[0]}x{size[1]}")
    return BenchInput(Path(source), size, files, notes, distinct, None if coco is None else Path(coco),
                      None if masks is None else Path(masks))


def annotated_batch(inp: BenchInput, batch_size: int) -> tuple[list[np.ndarray], dict[str, list]]:
    """batch_size of `inp`'s annotated files (repeated in order), decoded at their own sizes, and
    their targets ({kind: one entry per image}, as Chain.run and the exports' augment_targets take
    them).

    Example:
        >>> from workbench.targets import SAMPLE_TARGETS
        >>> inp = prepare_annotated(None, None, SAMPLE_TARGETS / "masks", mixed_sizes=True)
        >>> images, targets = annotated_batch(inp, 6)
        >>> len(images), sorted(targets), targets["masks"][4].shape == images[4].shape[:2]
        (6, ['masks'], True)
    """
    files, index, keypoints = annotated_folder(inp.folder, inp.coco, inp.masks)
    files = files[:min(batch_size, MAX_FILES)]
    images = [decode_checked(f) for f in files]
    targets = read_targets(files, inp.folder, index, inp.masks)
    return ([images[i % len(images)] for i in range(batch_size)],
            {kind: [values[i % len(values)] for i in range(batch_size)] for kind, values in targets.items()})


def first_batch(inp: BenchInput, batch_size: int) -> np.ndarray:
    """batch_size decoded images (the files repeated in order) as one uint8 NxHxWx3 array at
    `inp.size` (images of another size, from a folder of mixed sizes, resized to it): the first
    MAX_FILES at most, which prepare_input checked."""
    decoded = [_at_size(decode_checked(f), inp.size) for f in inp.files[:min(batch_size, MAX_FILES)]]
    return np.stack([decoded[i % len(decoded)] for i in range(batch_size)])


def _at_size(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    if image.shape[:2] == tuple(size):
        return image
    return np.asarray(Image.fromarray(image).resize((size[1], size[0]), Image.BILINEAR))


def _readable(files: list[Path], skip_bad: bool) -> list[Path]:
    """`files` less those of the first MAX_FILES that cannot be decoded (skip_bad), or as they are."""
    if not skip_bad:
        return files
    bad = set()
    for path in files[:MAX_FILES]:
        try:
            decode_checked(path)
        except BadImageError:
            bad.add(path)
    return [f for f in files if f not in bad]


def _size_of(path: Path) -> tuple[int, int]:
    try:
        with Image.open(path) as image:
            return image.height, image.width
    except DECODE_ERRORS as exc:
        with open(path, "rb") as file:
            raise BadImageError(str(path), image_problem(exc, file.read(16))) from None


def _median_size(sizes) -> tuple[int, int]:
    hs, ws = zip(*sizes)
    return int(np.median(hs)), int(np.median(ws))


def _write_jpegs(arrays: list[np.ndarray], size: tuple[int, int]) -> Path:
    # Same pixels and size -> same folder, so repeated estimates reuse it (and the OS cache).
    digest = hashlib.sha1(repr(size).encode())
    for a in arrays:
        digest.update(np.ascontiguousarray(a[::7, ::7]).tobytes())
        digest.update(repr(a.shape).encode())
    key = digest.hexdigest()
    if key in _prepared and _prepared[key].is_dir():
        return _prepared[key]
    folder = Path(tempfile.mkdtemp(prefix=PREPARED_PREFIX))
    for i, a in enumerate(arrays):
        image = Image.fromarray(a)
        if image.size != (size[1], size[0]):
            image = image.resize((size[1], size[0]), Image.BILINEAR)
        image.save(folder / f"image_{i:03d}.jpg", quality=JPEG_QUALITY)
    _prepared[key] = folder
    return folder


@atexit.register
def _remove_prepared() -> None:
    for folder in _prepared.values():
        shutil.rmtree(folder, ignore_errors=True)
