"""`run_chain`: check the chain and the images, then run them on one backend."""
from __future__ import annotations

from typing import Any

from ..data import as_image_list
from ..errors import ChainError, InputError, UnsupportedOpError
from ..model import validated_json
from ..ops import where_it_runs
from ..plans import box_reading_op
from ..targets import check_targets
from .albumentations import run_albumentations
from .dali import run_dali
from .device import resolve_device
from .inputs import check_sizes, soft_targets
from .memory import check_memory
from .kornia import run_kornia
from .result import BACKENDS, RunResult
from .targets import check_target_ops, move_targets


def check_compile_backend(torch_compile: bool, backend: str) -> None:
    """Refuse torch_compile=True on a backend other than Kornia, the only one that has it.

    Example:
        >>> check_compile_backend(True, "kornia")
    """
    if torch_compile and backend != "kornia":
        raise ChainError(f"torch_compile=True runs the Kornia backend's fused steps through torch.compile; "
                         f"{backend} has no such option: drop torch_compile=True, or use backend='kornia'")


def check_device_support(chain, backend: str, device: str, doing: str = "run") -> None:
    """Refuse the ops of `chain` that `backend` runs on its GPU only when `device` is the CPU (the
    run, the DALI preview and the estimate call it once the device is resolved), naming each op, why
    and what to use instead.

    Example:
        >>> import workbench as wb
        >>> check_device_support(wb.Chain().add("OpticalDistortion"), "dali", "cuda")
    """
    missing = chain.unsupported_ops(backend, device)
    if missing:
        raise UnsupportedOpError("; ".join(f"{op} cannot {doing} on {backend} with device={device!r}: it "
                                           f"{where_it_runs(op, backend, device)}" for op in missing))


# The sets of image sizes that check_sizes passed, by the chain's JSON: a preview and a training loop run one
# chain on images of the same sizes again and again.
SIZES_PASSED: dict[str, set] = {}


def checked_chain(chain, backend: str) -> set:
    """Validate `chain` (validated_json: once per chain) and refuse the ops `backend` cannot run; returns the
    sets of image sizes the chain passed check_sizes with (add to it).

    Example:
        >>> import workbench as wb
        >>> chain = wb.Chain().add("HorizontalFlip")
        >>> checked_chain(chain, "kornia") is checked_chain(chain, "kornia")
        True
    """
    key = validated_json(chain)
    unsupported = chain.unsupported_ops(backend)
    if unsupported:
        raise UnsupportedOpError("; ".join(f"{op} cannot run on {backend}: it {where_it_runs(op, backend)}"
                                           for op in unsupported))
    if key not in SIZES_PASSED:
        while len(SIZES_PASSED) >= 64:  # (the oldest go: a session of edits passes many chains)
            SIZES_PASSED.pop(next(iter(SIZES_PASSED)))
        SIZES_PASSED[key] = set()
    return SIZES_PASSED[key]


def run_chain(chain, images, backend: str = "kornia", device: str = "cpu", seed: int | None = None,
              labels: Any = None, torch_compile: bool = False, masks: Any = None, boxes: Any = None,
              box_labels: Any = None, keypoints: Any = None, keypoints_visible: Any = None) -> RunResult:
    """Validate the chain, the images and their targets, then run them on `backend` (see `Chain.run`)."""
    if backend not in BACKENDS:
        raise ChainError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    passed = checked_chain(chain, backend)
    check_compile_backend(torch_compile, backend)
    if seed is not None:
        chain = chain.copy()
        chain.seed = seed
        passed = checked_chain(chain, backend)
    arrays = as_image_list(images)
    targets = soft_targets(labels, len(arrays))
    given = check_targets(arrays, masks=masks, boxes=boxes, box_labels=box_labels, keypoints=keypoints,
                          keypoints_visible=keypoints_visible)
    reading = box_reading_op(chain)
    if reading is not None and (given is None or given.boxes is None):
        raise InputError(f"{reading} draws its window from each image's boxes as they stand at its step: give the "
                         "images' boxes, chain.run(images, boxes=...) (one (K, 4) [x1, y1, x2, y2] array per "
                         "image; wb.load_annotated() reads a COCO file), or drop the step")
    if given is not None:
        check_target_ops(chain, given)
    sizes = frozenset(image.shape[:2] for image in arrays)
    if sizes not in passed:
        check_sizes(chain, arrays)
        passed.add(sizes)
    # Only chains that mix the batch hand labels to the exported code: the others run as before.
    mixing = targets if any(s.spec.mixes_batch for _, s in chain.enabled_steps()) else None
    # Albumentations only runs on the CPU: "auto" means the CPU there.
    device = "cpu" if backend == "albumentations" and device == "auto" else resolve_device(device)
    check_device_support(chain, backend, device)
    check_memory(chain, arrays, backend, device)
    mixed = None
    boxes = given.boxes if reading is not None else None  # (only the chains that read them get them)
    if backend == "dali":
        out, params, mixed = run_dali(chain, arrays, device, mixing, boxes)
    elif backend == "albumentations":
        out, params, mixed = run_albumentations(chain, arrays, device, mixing, boxes)
    else:
        out, params, mixed = run_kornia(chain, arrays, device, mixing, torch_compile, boxes)
    result = RunResult(images=out, params=params, backend=backend, device=device, seed=chain.seed, inputs=arrays,
                       labels=targets if mixed is None else mixed)
    if given is not None:  # (moved by the draws: the rows a backend may defer are made here)
        result.targets = move_targets(chain, result.params, arrays, given, outputs=out)
    return result
