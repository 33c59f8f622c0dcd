"""Before a run: will the chain's intermediate images fit in memory?

A chain that resizes a dozen photos to 8192x8192 and then rotates them needs tens of GB; run as
it is, the operating system kills the Python process (in a notebook: the kernel, and the chain
with it). So every run (`chain.run`, the app's preview, the estimate) first follows each image's
size through the chain, reckons what each step allocates at its widest, and refuses a chain that
cannot fit with an error naming the step, the size, and the memory needed against the memory
available. The reckoning is an upper estimate from peaks measured per backend (`PEAK_STATES`).

Example:
    >>> import numpy as np
    >>> from workbench.model import ChainModel
    >>> chain = ChainModel().add("Rotate").add("Resize", size=[128, 128])
    >>> need = memory_needed(chain, [np.zeros((32, 32, 3), np.uint8)] * 2, "kornia")
    >>> need.step, need.op, need.size, need.bytes  # 7 float32 copies of 2 x 128 x 128 x 3
    (2, 'Resize', (128, 128), 2752512)
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InsufficientMemoryError

# Peak memory of one step, in float32 copies of the batch at the step's widest (its input or its
# output, whichever is larger), measured on each backend's CPU path (12 photos at 2048x2048:
# Kornia 4.3 copies for a Rotate, 5.9 for a GaussianBlur; DALI 1.1-1.3; Albumentations, which
# works one uint8 image at a time, 0.6), with room to spare.
PEAK_STATES = {"kornia": 7.0, "dali": 1.6, "albumentations": 1.0}
BYTES_PER_VALUE = 4  # float32
# What a process may not count on of what the machine reports free (the kernel, the browser...).
HEADROOM = 0.9


@dataclass(frozen=True)
class MemoryNeed:
    """The widest step of a run: its number (1-based, top level), op, largest image size there,
    how many images, and the bytes the run needs at that step (with what a preview keeps)."""

    step: int
    op: str
    size: tuple[int, int]
    images: int
    bytes: int


def memory_profile(chain, images: list[np.ndarray], backend: str, kept_states: int = 0) -> list[MemoryNeed]:
    """What running `images` through `chain` on `backend` needs at each enabled step, in order.
    `kept_states`: how many runs' states before each step a preview cache holds besides (the app
    keeps one per draw); what they hold adds up from step to step."""
    sizes = [tuple(image.shape[:2]) for image in images]
    channels = max([3] + [image.shape[2] for image in images if image.ndim == 3])
    profile, kept = [], 0
    for index, step in chain.enabled_steps():
        before = sum(h * w for h, w in sizes)
        # (A drawn size at its largest; each size reckoned once: a batch's images mostly share one.)
        bounds = {size: step.size_bounds(*size)[1] for size in set(sizes)}
        sizes = [bounds[size] for size in sizes]
        after = sum(h * w for h, w in sizes)
        kept += before * channels * BYTES_PER_VALUE * kept_states
        need = int(PEAK_STATES[backend] * max(before, after) * channels * BYTES_PER_VALUE)
        largest = max(sizes, key=lambda s: s[0] * s[1]) if sizes else (0, 0)
        profile.append(MemoryNeed(index + 1, step.op, largest, len(sizes), need + kept))
    return profile


def memory_needed(chain, images: list[np.ndarray], backend: str, kept_states: int = 0) -> MemoryNeed | None:
    """The step where the run needs the most memory (see `memory_profile`); None without enabled steps."""
    return max(memory_profile(chain, images, backend, kept_states), key=lambda need: need.bytes, default=None)


def available_memory(device: str) -> int | None:
    """Bytes this process can still allocate on `device` ('cpu', 'cuda', 'cuda:N'); None when the
    machine does not say. On the CPU: MemAvailable, or less under a container's memory limit."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    now = time.monotonic()
    if now - _HOST_READING["at"] > HOST_READING_SECONDS:
        free = _meminfo_available()
        limit = _cgroup_room()
        room = min(v for v in (free, limit) if v is not None) if free is not None or limit is not None else None
        _HOST_READING.update(at=now, room=room)
    return _HOST_READING["room"]


# The host's reading is kept this long: reading /proc/meminfo and the cgroup's files took 0.5 ms, a tenth of
# a batch of 8 small images' chain.run (bench/cpu_sweep.py's imagenet_eval at batch 8, 256^2, profiled).
HOST_READING_SECONDS = 0.5
_HOST_READING = {"at": float("-inf"), "room": None}


def check_memory(chain, images: list[np.ndarray], backend: str, device: str, kept_states: int = 0,
                 what: str = "images") -> None:
    """Refuse, before anything runs, a chain that needs more memory than `device` has available,
    naming the first step that would not fit, the size there and both amounts. `what` names the images in the advice
    (the app says how to show fewer).

    Example:
        >>> import numpy as np
        >>> from workbench.model import ChainModel
        >>> check_memory(ChainModel().add("Rotate"), [np.zeros((8, 8, 3), np.uint8)], "kornia", "cpu")
    """
    room = available_memory(device)
    if room is None:
        return
    profile = memory_profile(chain, images, backend, kept_states)
    need = next((n for n in profile if n.bytes > HEADROOM * room), None)
    if need is None:
        return
    h, w = need.size
    grown = next(n for n in profile if n.size[0] * n.size[1] >= h * w)
    origin = f" (they reach that size at step {grown.step}, {grown.op})" if grown.step != need.step else ""
    where = "GPU memory" if device.startswith("cuda") else "memory"
    raise InsufficientMemoryError(
        f"step {need.step} ({need.op}) works on {need.images} image(s) of up to {h}x{w}{origin}: the chain needs about "
        f"{_gb(need.bytes)} of {where} on {backend} ({device}) at that step, and {_gb(room)} is available; nothing "
        f"was run. Make the images smaller before that step (a smaller Resize or crop), or run fewer {what} at once")


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_room() -> int | None:
    """What a cgroup v2 memory limit leaves this container (its limit less its use), if it has one."""
    root = Path("/sys/fs/cgroup")
    try:
        limit = (root / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((root / "memory.current").read_text().strip()))
    except (OSError, ValueError):
        return None
