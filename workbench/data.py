"""Loading images and checking images handed to the workbench.

Decoding is PIL to RGB uint8, files in name order: the same code the exported scripts use.
"""
from __future__ import annotations

import glob as _glob
import warnings
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .runtime.common import IMAGE_EXTENSIONS, decode_image, list_image_files
from .errors import InputError

# The bundled photos ship inside the package (package data), so an installed workbench finds
# them from any folder; the project's top-level sample_data/ is a link to them.
SAMPLE_DATA = Path(__file__).resolve().parent / "sample_data"
SAMPLE_DATA_NAME = "sample_data"
MAX_IMAGES = 100_000


def resolve_source(source: str | Path | None) -> Path | str:
    """Where images named by `source` are: None, and the bare name "sample_data" where no such
    folder exists here, mean the bundled sample images; anything else is taken as given.

    Example:
        >>> resolve_source(None) == SAMPLE_DATA
        True
        >>> resolve_source("photos/*.jpg")
        'photos/*.jpg'
    """
    if source is None:
        return SAMPLE_DATA
    if isinstance(source, (str, Path)) and Path(source) == Path(SAMPLE_DATA_NAME) and not Path(source).is_dir():
        return SAMPLE_DATA
    return source


def image_files(source: str | Path | None) -> list[Path]:
    """Image files named by a folder (recursive), a glob pattern or a single file, in name order
    (None or "sample_data": the bundled sample images, see `resolve_source`).

    Example:
        >>> len(image_files("sample_data")) >= 8
        True
    """
    source = resolve_source(source)
    path = Path(source)
    if path.is_dir():
        files = list_image_files(path)
    elif path.is_file():
        files = [path]
    elif any(ch in str(source) for ch in "*?["):
        # Sorted by the path string, like folders, so both name the same order.
        files = sorted((Path(p) for p in _glob.glob(str(source), recursive=True)
                        if Path(p).is_file() and Path(p).suffix.lower() in IMAGE_EXTENSIONS), key=Path.as_posix)
    else:
        raise InputError(f"no such file or folder: {str(source)!r}")
    if not files:
        raise InputError(f"no image files ({', '.join(IMAGE_EXTENSIONS)}) found in {str(source)!r}")
    return files


class DecodedImage(np.ndarray):
    """An RGB uint8 HxWx3 array decoded from a file. Its layout is known, so it is never
    guessed from its shape: a 1 x 1 or 3 x 4 photo is an image like any other, where a bare
    array of shape (1, 1, 3) could as well be channels-first.

    Views, copies and arithmetic give bare arrays again (`source` is empty), since a
    transpose of a decoded image no longer has the layout its file had.

    Example:
        >>> img = DecodedImage.of(np.zeros((1, 1, 3), np.uint8), "dot.png")
        >>> img.source, (img + 0).source, img.shape
        ('dot.png', '', (1, 1, 3))
    """

    source: str = ""

    @classmethod
    def of(cls, array: np.ndarray, source: str | Path) -> "DecodedImage":
        image = array.view(cls)
        image.source = str(source)
        return image

    def __array_finalize__(self, obj) -> None:
        self.source = ""


def load_images(source: str | Path | None = None, on_error: str = "raise") -> list[np.ndarray]:
    """Decode images to RGB uint8 HxWx3 arrays (PIL, files sorted by name).

    `source` is a folder (searched recursively), a glob or a file; None (or "sample_data" where
    no folder of that name exists) means the bundled sample images, wherever the workbench is
    installed. `on_error="skip"` skips unreadable files with a warning.

    Example:
        >>> images = load_images("sample_data")
        >>> images[0].dtype.name, images[0].shape[2]
        ('uint8', 3)
    """
    if on_error not in ("raise", "skip"):
        raise ValueError("on_error must be 'raise' or 'skip'")
    files = image_files(source)
    images = []
    for f in files:
        try:
            images.append(DecodedImage.of(decode_image(f), f))
        except Exception as exc:  # PIL raises many types for corrupt data
            message = f"cannot decode {str(f)!r} as an image ({type(exc).__name__}: {exc})"
            if on_error == "raise":
                raise InputError(message + "; remove or fix the file, or pass on_error='skip'") from None
            warnings.warn(message + "; skipped", stacklevel=2)
    if not images:
        raise InputError(f"none of the files in {str(source)!r} could be decoded")
    return images


def as_image_list(images: Any) -> list[np.ndarray]:
    """Check and convert user images to a list of contiguous RGB uint8 HxWx3 arrays.

    Accepts a folder/glob/file path, a list of arrays (HxWx3, HxW, HxWx1, HxWx4), a 4-D
    NxHxWxC array, torch tensors (CxHxW or NxCxHxW, uint8), PIL images, or a torch Dataset
    whose items are images or (image, label) pairs. Grayscale and RGBA are converted with
    a warning; anything else raises InputError saying what to change.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     rgb = as_image_list([np.zeros((6, 5), np.uint8)])[0]
        >>> rgb.shape, str(caught[0].message)
        ((6, 5, 3), 'image 1: grayscale image converted to RGB (channel repeated)')
    """
    if isinstance(images, (str, Path)):
        return load_images(images)
    if isinstance(images, np.ndarray):
        if images.ndim == 4:
            items: Iterable[Any] = list(images)
        elif images.ndim in (2, 3):
            items = [images]
        else:
            raise InputError(f"an image array must be HxWx3 (or a batch NxHxWx3), got shape {images.shape}")
    elif _is_torch_tensor(images):
        items = list(images) if images.ndim == 4 else [images]
    elif _is_dataset(images):
        items = [images[i] for i in range(len(images))]
    elif isinstance(images, (list, tuple)):
        items = list(images)
    else:
        raise InputError(f"images must be a folder path, a list of arrays or tensors, or a Dataset; got "
                         f"{type(images).__name__}")
    if not items:
        raise InputError("no images given: pass at least one image (or a folder of images)")
    if len(items) > MAX_IMAGES:
        raise InputError(f"{len(items)} images given; at most {MAX_IMAGES} at a time")
    return [_one_image(item, i) for i, item in enumerate(items)]


def _is_torch_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "permute") and hasattr(x, "dtype")


def _is_dataset(x: Any) -> bool:
    return hasattr(x, "__getitem__") and hasattr(x, "__len__") and type(x).__module__ != "builtins" \
        and not isinstance(x, (np.ndarray, str, bytes))


def _one_image(item: Any, index: int) -> np.ndarray:
    where = f"image {index + 1}"
    if isinstance(item, tuple) and len(item) == 2 and getattr(item[1], "ndim", 0) < 2:
        item = item[0]  # a Dataset's (image, label) pair; the label may be a scalar tensor
    if hasattr(item, "convert") and hasattr(item, "mode"):  # PIL image
        item = np.array(item.convert("RGB") if item.mode not in ("RGB", "L", "RGBA") else item)
    if _is_torch_tensor(item):
        item = _tensor_to_hwc(item, where)
    if not isinstance(item, np.ndarray):
        raise InputError(f"{where}: expected an array, tensor or PIL image, got {type(item).__name__}")
    if item.dtype != np.uint8:
        if item.dtype == np.bool_:
            hint = " (for a mask use img.astype(np.uint8) * 255)"
        elif np.issubdtype(item.dtype, np.floating):
            hint = " (for floats in [0, 1] use (img * 255).round().astype(np.uint8))"
        else:
            hint = " (use img.astype(np.uint8) if values are 0-255)"
        raise InputError(f"{where}: dtype must be uint8, got {item.dtype}{hint}")
    if item.ndim == 3 and item.shape[0] in (1, 3, 4) and item.shape[2] not in (1, 3, 4):
        raise InputError(f"{where}: shape {item.shape} looks like channels-first (CxHxW); arrays must be "
                         "HxWxC: use np.transpose(img, (1, 2, 0))")
    # Decoded from a file: RGB HxWx3 by construction, whatever its size; only bare arrays are guessed.
    layout_known = isinstance(item, DecodedImage) and bool(item.source)
    item = np.asarray(item)
    if not layout_known and item.ndim == 3 and item.shape[0] in (1, 3, 4) and item.shape[2] in (1, 3, 4) \
            and item.shape[0] != item.shape[2] and min(item.shape[:2]) <= 4:
        raise InputError(f"{where}: shape {item.shape} is ambiguous between CxHxW and HxWxC; pass HxWxC "
                         "arrays larger than 4x4 pixels, or read the file with wb.load_images (whose images "
                         "have a known layout at any size)")
    if item.ndim == 2 or (item.ndim == 3 and item.shape[2] == 1):
        warnings.warn(f"{where}: grayscale image converted to RGB (channel repeated)", stacklevel=3)
        item = np.repeat(item.reshape(item.shape[0], item.shape[1], 1), 3, axis=2)
    elif item.ndim == 3 and item.shape[2] == 4:
        warnings.warn(f"{where}: RGBA image converted to RGB (alpha channel dropped)", stacklevel=3)
        item = item[:, :, :3]
    if item.ndim != 3 or item.shape[2] != 3:
        raise InputError(f"{where}: expected HxWx3 RGB (or HxW grayscale, HxWx4 RGBA), got shape {item.shape}")
    if item.shape[0] == 0 or item.shape[1] == 0:
        raise InputError(f"{where}: image is empty (shape {item.shape})")
    # Not copied, read-only arrays (np.asarray of a PIL image) included: no backend writes into
    # its inputs, and a batch of 256 photos is 50 MB to copy.
    return np.ascontiguousarray(item)


def _tensor_to_hwc(t: Any, where: str) -> np.ndarray:
    import torch

    t = t.detach().cpu()
    if t.dtype != torch.uint8:
        hint = " (for floats in [0, 1] use (t * 255).round().to(torch.uint8))" if t.is_floating_point() else ""
        raise InputError(f"{where}: dtype must be uint8, got {t.dtype}{hint}")
    if t.ndim == 3 and t.shape[-1] in (1, 3, 4) and t.shape[0] not in (1, 3, 4):
        raise InputError(f"{where}: tensor shape {tuple(t.shape)} looks like HxWxC; tensors must be CxHxW "
                         "(torch convention): use t.permute(2, 0, 1)")
    if t.ndim == 3:
        return t.permute(1, 2, 0).numpy()
    if t.ndim == 2:
        return t.numpy()
    raise InputError(f"{where}: tensor must be CxHxW, got shape {tuple(t.shape)}")
