"""Backends run a chain on a batch of images and report what each sample drew.

Example:
    >>> import workbench as wb
    >>> res = wb.Chain(seed=2).add("HorizontalFlip", p=1.0).run(wb.load_images()[:1])
    >>> res.params[0][0]["applied"]
    True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data import as_image_list
from ..errors import ChainError, InputError, UnsupportedOpError, WorkbenchError

BACKENDS = ("kornia", "dali", "albumentations")


@dataclass
class RunResult:
    """Output of `Chain.run`.

    `images`: NxHxWxC array in the backend's output dtype (a list of arrays when the
    chain leaves images of different sizes). `params`: per sample, per step of the chain,
    a dict with `op`, `enabled`, `applied` and the values drawn for that sample (a mixing
    step's `partner` index and `weight`). `labels`: N x classes float32 soft targets, the
    one-hot labels given to `run` (default: each image's index) mixed by the mixing steps
    (MixUp, CutMix) as the images were; one-hot as given when no step mixes.
    """

    images: Any
    params: list[list[dict[str, Any]]]
    backend: str
    device: str
    seed: int
    inputs: list[np.ndarray] = field(repr=False, default_factory=list)
    labels: np.ndarray | None = field(repr=False, default=None)


def resolve_device(device: str) -> str:
    """'auto' -> 'cuda' when torch sees a GPU, else 'cpu'; checks that a CUDA device exists.

    Example:
        >>> resolve_device("cpu")
        'cpu'
    """
    import torch

    if not isinstance(device, str):
        raise WorkbenchError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if device == "cuda" or (device.startswith("cuda:") and device[5:].isdigit()):
        if not torch.cuda.is_available():
            raise WorkbenchError(f"device {device!r} asked for, but torch sees no GPU here; use device='cpu' "
                                 "or device='auto'")
        return device
    raise WorkbenchError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")


def run_chain(chain, images, backend: str = "kornia", device: str = "cpu", seed: int | None = None,
              labels: Any = None) -> RunResult:
    """Validate the chain and the images, then run them on `backend` (see `Chain.run`)."""
    if backend not in BACKENDS:
        raise ChainError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    chain.validate()
    unsupported = chain.unsupported_ops(backend)
    if unsupported:
        from ..ops import get_op

        raise UnsupportedOpError("; ".join(
            f"{op} cannot run on {backend}: it runs on {', '.join(get_op(op).backends) or 'no backend'}"
            + (f" ({get_op(op).unsupported[backend]})" if backend in get_op(op).unsupported else "")
            for op in unsupported))
    if seed is not None:
        chain = chain.copy()
        chain.seed = seed
        chain.validate()
    arrays = as_image_list(images)
    targets = soft_targets(labels, len(arrays))
    check_sizes(chain, arrays)
    # Only chains that mix the batch hand labels to the exported code: the others run as before.
    mixing = targets if any(s.spec.mixes_batch for _, s in chain.enabled_steps()) else None
    # Albumentations only runs on the CPU: "auto" means the CPU there.
    device = "cpu" if backend == "albumentations" and device == "auto" else resolve_device(device)
    mixed = None
    if backend == "dali":
        from .dali import run_dali

        out, params, mixed = run_dali(chain, arrays, device, mixing)
    elif backend == "albumentations":
        from .albumentations import run_albumentations

        out, params = run_albumentations(chain, arrays, device)
    else:
        from .kornia import run_kornia

        out, params, mixed = run_kornia(chain, arrays, device, mixing)
    return RunResult(images=out, params=params, backend=backend, device=device, seed=chain.seed, inputs=arrays,
                     labels=targets if mixed is None else mixed)


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
    """Follow each image's size through the chain; refuse crops larger than their input, and
    mixing steps where the images differ in size (they blend samples of one batch)."""
    for n, image in enumerate(images):
        h, w = image.shape[:2]
        for i, step in chain.enabled_steps():
            need = step.spec.input_at_least
            if need and (step.params[need][0] > h or step.params[need][1] > w):
                raise InputError(f"step {i + 1} ({step.op}): {need} {step.params[need]} is larger than image {n} "
                                 f"({h}x{w} at that step); lower {need} or resize first")
            if h != w and any(op.spec.square_input for op in step.ops()):
                op = next(op.op for op in step.ops() if op.spec.square_input)
                raise InputError(f"step {i + 1} ({op}) swaps height and width on some samples only, so its input "
                                 f"must be square, but image {n} is {h}x{w} there; add a square crop or Resize "
                                 f"(e.g. CenterCrop [{min(h, w)}, {min(h, w)}]) before step {i + 1}")
            h, w = step.spec.output_size(step.params, h, w)
    sizes = {image.shape[:2] for image in images}
    for i, step in chain.enabled_steps():
        if step.spec.mixes_batch and len(sizes) > 1:
            a, b = sorted(sizes)[:2]
            raise InputError(f"step {i + 1} ({step.op}) mixes samples of one batch, so the images must have one "
                             f"size there, but they differ ({a[0]}x{a[1]} and {b[0]}x{b[1]}); add a Resize or a "
                             f"crop (CenterCrop, RandomResizedCrop) before step {i + 1}")
        sizes = {tuple(step.spec.output_size(step.params, h, w)) for h, w in sizes}


def per_sample_params(chain, records: list[dict[str, np.ndarray]], count: int,
                      names_for) -> list[list[dict[str, Any]]]:
    """Turn per-step arrays (sample index first) into one list of step dicts per sample.

    `records` has one dict per enabled step; a group's holds its coin (`batch_prob`), which
    children each sample chose (`selected`, one column per enabled child) and `steps`, its
    enabled children's records. A group's row reports `chosen` (the children's 1-based
    positions in the group) and `steps`, its children's rows ("step" numbered 3.1, 3.2, ...).
    `names_for(spec)` gives the backend's {raw key: reported name} map for an op, or None
    when the records already use the reported names.
    """
    return [_rows(chain.steps, records, n, names_for, "") for n in range(count)]


def _rows(steps, records, n: int, names_for, prefix: str) -> list[dict[str, Any]]:
    enabled = [i for i, s in enumerate(steps) if s.enabled]
    by_index = dict(zip(enabled, records))
    rows = []
    for i, step in enumerate(steps):
        row: dict[str, Any] = {"step": f"{prefix}.{i + 1}" if prefix else i + 1, "op": step.op,
                               "enabled": step.enabled}
        rec = by_index.get(i)
        row["applied"] = bool(rec is not None and float(rec["batch_prob"][n]) > 0.5)
        if step.is_group:
            children = [k for k, child in enumerate(step.steps) if child.enabled]
            if row["applied"]:
                row["chosen"] = [k + 1 for col, k in enumerate(children) if float(rec["selected"][n][col]) > 0.5]
            row["steps"] = _rows(step.steps, rec["steps"] if rec is not None else [], n, names_for, str(row["step"]))
        elif rec is not None and (row["applied"] or not prefix):
            # (Inside a group, a child that did not run shows no draws, whatever the backend drew.)
            names = names_for(step.spec)
            for raw, name in (names or {k: k for k in rec if k != "batch_prob"}).items():
                if raw in rec and not _undrawn(rec[raw][n]):
                    row[name] = _to_python(raw, rec[raw][n])
            for prm in step.spec.params:  # parameters that name what was drawn (a policy's ops)
                if hasattr(prm, "readable_draws"):
                    prm.readable_draws(row, step.params[prm.name])
        rows.append(row)
    return rows


def _undrawn(value) -> bool:
    """NaN marks a value the backend did not draw for that sample (a step that did not apply)."""
    value = np.asarray(value)
    return value.dtype.kind == "f" and value.size > 0 and bool(np.isnan(value).all())


def _to_python(raw: str, value: np.ndarray) -> Any:
    value = np.asarray(value)
    if raw == "partner":  # a batch index
        return int(value.reshape(-1)[0])
    if raw == "src":  # Kornia's inclusive corner pixels -> [x0, y0, x1, y1) in pixel edges, like DALI's
        return [float(value[:, 0].min()), float(value[:, 1].min()),
                float(value[:, 0].max()) + 1.0, float(value[:, 1].max()) + 1.0]
    if value.ndim == 0:
        return float(value)
    if value.size == 1:
        return float(value.reshape(-1)[0])
    return [float(v) for v in value.reshape(-1)]
