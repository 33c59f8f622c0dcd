"""What the backends' preview caches share: checked inputs, a key for the images, per-step
keys, and a bound on how many step states are kept."""
from __future__ import annotations

import json

from ..data import as_image_list
from .device import resolve_device
from .inputs import check_sizes
from .memory import check_memory

MAX_STATES = 64


class StepStateCache:
    """States after chain steps, valid for one list of images; subclasses run the backend."""

    backend = ""  # the backend a subclass runs (for the memory check)

    def __init__(self) -> None:
        self._states: dict[tuple, tuple] = {}
        self._images_key: tuple | None = None
        self._inputs: dict = {}  # the current images as the backend keeps them (e.g. on the GPU)
        self.resumed_at = 0  # steps taken from the cache by the last run (for tests and benchmarks)

    def _prepare(self, chain, images, device: str, seed: int | None):
        """(seed, arrays, device) checked as chain.run checks them; new images clear the cache."""
        chain.validate()
        arrays = as_image_list(images)
        check_sizes(chain, arrays)
        device = resolve_device(device)
        check_memory(chain, arrays, self.backend, device, kept_states=1)
        images_key = tuple((a.__array_interface__["data"][0], a.shape) for a in arrays)
        if images_key != self._images_key:  # other images: nothing cached applies
            self._states.clear()
            self._inputs = {}
            self._images_key = images_key
        return (chain.seed if seed is None else seed), arrays, device

    @staticmethod
    def _step_keys(chain) -> list[str]:
        return [json.dumps(step.to_dict(), sort_keys=True) for _, step in chain.enabled_steps()]

    def _bound(self, keep: set = frozenset()) -> None:
        """Keep at most MAX_STATES, dropping the oldest not in `keep` first."""
        excess = len(self._states) - MAX_STATES
        if excess > 0:
            for key in sorted(self._states, key=lambda k: k in keep)[:excess]:
                del self._states[key]
