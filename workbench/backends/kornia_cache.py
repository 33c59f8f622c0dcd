"""Live preview for Kornia: recompute a chain only from the first step that changed.

Kornia draws every step's values from one torch generator, in step order, so the state
after a step (its output batch, the generator state and the draws so far) is all a later
step needs. The cache keeps those states at the end of each run of steps that the module
fuses (a single step where nothing fuses) and resumes from the longest unchanged prefix. It
runs the generated module's own pieces (`build_augmentation`, `augment_batch`, `apply_steps`,
`sampled_params`) in `augment_images`' order, so its results
equal `chain.run` bit for bit (tests check it over sequences of edits).

Example:
    >>> import workbench as wb
    >>> cache, images = PrefixCache(), wb.load_images()[:2]
    >>> chain = wb.Chain(seed=1).add("Resize", size=[64, 64]).add("Rotate").add("Brightness")
    >>> res = cache.run(chain, images)
    >>> chain.steps[2].params["factor"] = [1.1, 1.2]
    >>> res = cache.run(chain, images); cache.resumed_at   # Resize and Rotate came from the cache
    2
"""
from __future__ import annotations

import torch

from ..codegen import emit, load_module
from ..plans import kornia_names
from .kornia import built_augmentation, fusion_bounds, levels_head
from .records import per_sample_params
from .result import RunResult
from .run import run_chain
from .step_cache import StepStateCache


class PrefixCache(StepStateCache):
    """Per-step states of recent Kornia runs, keyed by (images, seed, device, steps so far)."""

    backend = "kornia"

    def run(self, chain, images, device: str = "cpu", seed: int | None = None) -> RunResult:
        """Same result as `chain.run(images, backend="kornia", device=device, seed=seed)`."""
        seed, arrays, device = self._prepare(chain, images, device, seed)
        enabled = chain.enabled_steps()
        module = load_module(emit(chain, "kornia"), "kornia")
        head = module.HEAD_STEPS
        # A batch forms at once where the images share a size and no step draws each one's size.
        same_size = len({a.shape for a in arrays}) == 1 and not module.PER_IMAGE
        if not same_size and head == len(enabled):  # no batch forms: every image runs alone
            self.resumed_at = 0
            return run_chain(chain, arrays, backend="kornia", device=device, seed=seed)
        # Points where the random stream is at a step boundary for the whole batch and no fused
        # run of steps (see the module's fusion_segments) is cut: the ends of the runs.
        first = 0 if same_size else head
        augmentation = built_augmentation(module, device)
        resumable = [first + end for end in fusion_bounds(module, augmentation[first:])]
        if same_size:
            # The first steps run on the images' uint8 levels on a CPU (levels_head): a state inside
            # them would be floats, which a resize after it rounds otherwise.
            levels = levels_head(module, augmentation, device)
            resumable = [end for end in resumable if end >= levels]
        else:
            resumable.insert(0, head)
        step_keys = self._step_keys(chain)
        key = lambda n: (seed, device, tuple(step_keys[:n]))  # noqa: E731

        dev = torch.device(device)
        cuda = [dev] if dev.type == "cuda" else []
        start = next((n for n in reversed(resumable) if key(n) in self._states), 0)
        self.resumed_at = start
        with torch.random.fork_rng(devices=cuda), torch.no_grad():
            if start:
                batch, cpu_state, cuda_state, records = self._states[key(start)]
                torch.set_rng_state(cpu_state)
                if cuda:
                    torch.cuda.set_rng_state(cuda_state, dev)
                records = list(records)
            else:
                module.seed_generators(seed, dev)
                tensors = self._uploaded(module, arrays, dev)
                records = []
                if same_size:
                    batch = torch.stack(tensors)  # uint8, as augment_images gives it to augment_batch
                else:  # the per-image head, exactly as augment_batch runs it
                    batch = module.augment_batch(augmentation[:head], tensors, dev, records)
                    start = head
                    self._store(key(start), batch, records, cuda, dev)
            for end in (end for end in resumable if end > start):
                batch = module.apply_steps(augmentation[start:end], batch, records)
                self._store(key(end), batch, records, cuda, dev)
                start = end
        self._bound(keep={key(n) for n in resumable})
        out = batch.permute(0, 2, 3, 1).contiguous().cpu().numpy()
        params = per_sample_params(chain, records, len(arrays), kornia_names)
        return RunResult(images=out, params=params, backend="kornia", device=device, seed=seed, inputs=arrays)

    def _uploaded(self, module, arrays, dev: torch.device) -> list[torch.Tensor]:
        """The images as uint8 CHW tensors on `dev`, copied there once per list of images: an
        edit of the first step re-runs the chain without copying the inputs again."""
        if self._inputs.get("device") != dev:
            tensors = [module.image_tensor(a) for a in arrays]
            self._inputs = {"device": dev, "tensors": [t.to(dev) for t in tensors]}
        return self._inputs["tensors"]

    def _store(self, key, batch, records, cuda, dev) -> None:
        cuda_state = torch.cuda.get_rng_state(dev) if cuda else None
        self._states[key] = (batch, torch.get_rng_state(), cuda_state, list(records))
