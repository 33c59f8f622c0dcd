"""What the backends' preview caches share: checked inputs, a key for the images, per-step
keys, and a bound on how many step states are kept."""
from __future__ import annotations

import json

from ..data import as_image_list
from ..plans import box_reading_op
from .device import resolve_device
from .inputs import check_sizes
from .memory import check_memory
from .run import run_chain

MAX_STATES = 64


class StepStateCache:
    """States after chain steps, valid for one list of images; subclasses run the backend."""

    backend = ""  # the backend a subclass runs (for the memory check)

    def __init__(self) -> None:
        self._states: dict[tuple, tuple] = {}
        self._images_key: tuple | None = None
        self._inputs: dict = {}  # the current images as the backend keeps them (e.g. on the GPU)
        self.resumed_at = 0  # steps taken from the cache by the last run (for tests and benchmarks)
        self._checked: tuple | None = None  # (chain, images, device) the last run checked

    def _prepare(self, chain, images, device: str, seed: int | None):
        """(seed, arrays, device) checked as chain.run checks them; new images clear the cache.
        (A preview runs the same chain on the same images once per draw: checked once.)"""
        arrays = as_image_list(images)
        images_key = tuple((a.__array_interface__["data"][0], a.shape) for a in arrays)
        checked = (json.dumps(chain.to_dict(), sort_keys=True), images_key, device)
        if checked != self._checked:
            chain.validate()
            check_sizes(chain, arrays)
            check_memory(chain, arrays, self.backend, resolve_device(device), kept_states=1)
            self._checked = checked
        device = resolve_device(device)
        if images_key != self._images_key:  # other images: nothing cached applies
            self._states.clear()
            self._inputs = {}
            self._images_key = images_key
        return (chain.seed if seed is None else seed), arrays, device

    def run_draws(self, chain, images, device: str = "cpu", seeds=(None,), boxes=None) -> list:
        """`run` once per seed of `seeds` (one draw each), in order. A chain with a step that draws
        from the boxes (RandomIoUCrop) runs as chain.run runs it, given `boxes` (each image's), uncached."""
        if box_reading_op(chain):
            return [run_chain(chain, images, backend=self.backend, device=device, seed=seed,
                              **({} if boxes is None else {"boxes": boxes})) for seed in seeds]
        return [self.run(chain, images, device, seed) for seed in seeds]

    @staticmethod
    def _step_keys(chain) -> list[str]:
        return [json.dumps(step.to_dict(), sort_keys=True) for _, step in chain.enabled_steps()]

    def _bound(self, keep: set = frozenset()) -> None:
        """Keep at most MAX_STATES, dropping the oldest not in `keep` first."""
        excess = len(self._states) - MAX_STATES
        if excess > 0:
            for key in sorted(self._states, key=lambda k: k in keep)[:excess]:
                del self._states[key]
