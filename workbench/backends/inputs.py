"""Checking what a run is given against the chain: the labels and the images' sizes at every step."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError

MAX_CLASSES = 100_000


def soft_targets(labels: Any, count: int) -> np.ndarray:
    """`labels` for `count` images as float32 soft targets (count x classes): class ids become
    one-hot rows (classes: the largest id + 1), soft rows are checked and kept, None means
    each image's own index (so a mixed row shows which images were mixed in).

    Example:
        >>> soft_targets([1, 0], 2).tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    if labels is None:
        return np.eye(count, dtype=np.float32)
    what = ("labels must be one class id per image (integers >= 0) or soft targets (one row of class "
            "weights per image)")
    try:
        array = np.asarray(labels.detach().cpu() if hasattr(labels, "detach") else labels)
    except (TypeError, ValueError):
        raise InputError(f"{what}, got {type(labels).__name__}") from None
    if array.ndim not in (1, 2) or len(array) != count:
        raise InputError(f"{what}: expected {count} label(s) for {count} image(s), got shape {array.shape}")
    if array.ndim == 1:
        if array.dtype.kind not in "iu" and not (array.dtype.kind == "f" and np.all(np.mod(array, 1) == 0)):
            raise InputError(f"{what}: class ids must be integers, got {array.dtype} values")
        if count and (array.min() < 0 or array.max() >= MAX_CLASSES):
            raise InputError(f"{what}: class ids must be in [0, {MAX_CLASSES - 1}], got {array.min()} to "
                             f"{array.max()}")
        ids = array.astype(np.int64)
        return np.eye(int(ids.max()) + 1 if count else 1, dtype=np.float32)[ids]
    if array.dtype.kind not in "iuf" or not np.all(np.isfinite(array)) or not 0 < array.shape[1] <= MAX_CLASSES:
        raise InputError(f"{what}: soft targets must be finite numbers with 1 to {MAX_CLASSES} classes")
    return array.astype(np.float32)


def check_sizes(chain, images: list[np.ndarray]) -> None:
    """Follow each image's size through the chain; refuse crops larger than their input, images
    smaller than an op's `min_input` (filters reflecting at the borders, grids), and mixing
    steps where the images differ in size (they blend samples of one batch).

    Example:
        >>> from workbench.model import ChainModel
        >>> chain = ChainModel().add("MedianBlur", kernel_size=[3, 7])
        >>> check_sizes(chain, [np.zeros((3, 3, 3), np.uint8)])
        Traceback (most recent call last):
        ...
        workbench.errors.InputError: step 1 (MedianBlur): image 1 is 3x3 at that step, smaller than the 4x4 ...
        lower kernel_size); or enlarge the image first (Resize, PadIfNeeded before step 1)
    """
    checked = set()  # images of one size pass or fail alike: check the first of each size
    for n, image in enumerate(images):
        h, w = image.shape[:2]
        if (h, w) in checked:
            continue
        checked.add((h, w))
        at = "at that step"
        for i, step in chain.enabled_steps():
            for label, op in _labelled_ops(str(i + 1), step):  # (a crop in a group: at the group's input size)
                need = op.spec.input_at_least
                if need and (op.params[need][0] > h or op.params[need][1] > w):
                    raise InputError(f"step {label} ({op.op}): {need} {op.params[need]} is larger than image {n + 1} "
                                     f"({h}x{w} {at}); lower {need} or resize first")
            for op in step.ops():  # a group's children run on its input size
                side, why = op.spec.min_input(op.params) if op.spec.min_input else (0, "")
                if min(h, w) < side:
                    raise InputError(f"step {i + 1} ({op.op}): image {n + 1} is {h}x{w} at that step, smaller than the "
                                     f"{side}x{side} {op.op} needs ({why}); or enlarge the image first (Resize, "
                                     f"PadIfNeeded before step {i + 1})")
            if h != w and any(op.spec.square_input for op in step.ops()):
                op = next(op.op for op in step.ops() if op.spec.square_input)
                raise InputError(f"step {i + 1} ({op}) swaps height and width on some samples only, so its input "
                                 f"must be square, but image {n + 1} is {h}x{w} there; add a square crop or Resize "
                                 f"(e.g. CenterCrop [{min(h, w)}, {min(h, w)}]) before step {i + 1}")
            # A drawn size is checked at its smallest: a later crop must fit every draw.
            h, w = step.size_bounds(h, w)[0]
            if step.draws_sizes():
                at = f"at that step, the smallest size step {i + 1} ({step.op}) can draw"
    sizes = {image.shape[:2] for image in images}
    for i, step in chain.enabled_steps():
        if step.spec.mixes_batch and len(sizes) > 1:
            a, b = sorted(sizes)[:2]
            drawing = [(j, s.op) for j, s in chain.enabled_steps() if j < i and s.draws_sizes()]
            drawn = f", as step {drawing[-1][0] + 1} ({drawing[-1][1]}) draws each image's size" if drawing else ""
            raise InputError(f"step {i + 1} ({step.op}) mixes samples of one batch, so the images must have one "
                             f"size there, but they differ ({a[0]}x{a[1]} and {b[0]}x{b[1]}{drawn}); add a Resize or "
                             f"a crop (CenterCrop, RandomResizedCrop) before step {i + 1}")
        sizes = {tuple(size) for h, w in sizes for size in step.size_bounds(h, w)}


def _labelled_ops(label: str, step):
    """(label, op step) of a step, or of every enabled op inside a group, labelled as the chain's
    outline numbers them ("3", or "3.1", "3.2.1" inside groups)."""
    if not step.is_group:
        return [(label, step)]
    return [pair for k, child in step.enabled_steps() for pair in _labelled_ops(f"{label}.{k + 1}", child)]
