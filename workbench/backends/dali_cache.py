"""Live preview for DALI: recompute a chain only from the first step that changed.

Every random operator of a DALI export has its own seed (`op_seed`), so a pipeline that
starts at step n, fed the images step n received, draws exactly what the whole pipeline
draws. The cache keeps each step's output (as arrays) and the draws so far, and resumes
with the export's own `augment_images(first=n)`; results equal `chain.run(backend="dali")`
bit for bit (tests check it over sequences of edits).

Example:
    >>> import workbench as wb
    >>> cache, images = DaliPrefixCache(), wb.load_images()[:2]
    >>> chain = wb.Chain(seed=1).add("Resize", size=[64, 64]).add("Rotate").add("Brightness")
    >>> res = cache.run(chain, images)
    >>> chain.steps[2].params["factor"] = [1.1, 1.2]
    >>> res = cache.run(chain, images); cache.resumed_at   # Resize and Rotate came from the cache
    2
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..codegen import emit, load_module
from ..codegen.dali import fused_flip
from ..errors import WorkbenchError
from .dali import _cause, _require_dali, params_from_draws
from .result import RunResult
from .run import check_device_support
from ..plans import box_reading_op
from .step_cache import StepStateCache


@contextlib.contextmanager
def _without_origin_traces():
    """DALI records the Python stack of each operator a pipeline defines, for its error messages:
    about 1.5 ms an operator, 10% of a preview draw, which defines the same pipeline again and
    again. Off while the preview defines one (the error messages keep the operator and its reason,
    which `_cause` reports); where DALI has no such switch, as it is."""
    try:
        from nvidia.dali._utils import dali_trace  # DALI's own switch, not public: tried, not required
    except ImportError:
        yield
        return
    before = dali_trace.is_tracing_enabled()
    dali_trace.set_tracing(enabled=False)
    try:
        yield
    finally:
        dali_trace.set_tracing(enabled=before)


def _samples(batch) -> list[np.ndarray]:
    return list(batch) if isinstance(batch, np.ndarray) else batch


def _batch(samples: list[np.ndarray]):
    return np.stack(samples) if len({s.shape for s in samples}) == 1 else samples


class DaliPrefixCache(StepStateCache):
    """Per-step states of recent DALI runs, keyed by (images, seed, device, steps so far)."""

    backend = "dali"

    def run(self, chain, images, device: str = "cpu", seed: int | None = None) -> RunResult:
        """Same result as `chain.run(images, backend="dali", device=device, seed=seed)`."""
        return self.run_draws(chain, images, device, (seed,))[0]

    def run_draws(self, chain, images, device: str = "cpu", seeds=(None,), boxes=None) -> list[RunResult]:
        """`run` once per seed of `seeds`, in order. Every draw's pipeline is started before the
        first is collected: DALI computes one on its threads while Python defines the next. A chain
        with a step that draws from `boxes` goes to chain.run, which says why DALI cannot run it."""
        if box_reading_op(chain):
            return super().run_draws(chain, images, device, seeds, boxes)
        _require_dali()
        _, arrays, device = self._prepare(chain, images, device, None)
        check_device_support(chain, "dali", device, doing="preview")
        module = load_module(emit(chain, "dali"), "dali")
        steps = len(chain.enabled_steps())
        # The fusion of a flip into Normalize changes what earlier steps output: part of the key.
        flip = fused_flip(chain)
        step_keys = self._step_keys(chain)
        draws_of, keep = [], set()
        try:
            with _without_origin_traces():
                for seed in seeds:
                    seed = chain.seed if seed is None else seed
                    key = lambda n, seed=seed: (seed, device, flip, tuple(step_keys[:n]))  # noqa: E731
                    start = next((n for n in range(steps, 0, -1) if key(n) in self._states), 0)
                    inputs, draws = self._states[key(start)] if start else (arrays, {})
                    started = (module.start_images(inputs, seed=seed, device=device, first=start, keep=True)
                               if start < steps else None)
                    draws_of.append((seed, key, start, inputs, dict(draws), started))
                    keep |= {key(n) for n in range(1, steps + 1)}
                results = [self._collect(module, chain, arrays, device, *draw) for draw in draws_of]
        except RuntimeError as exc:
            raise WorkbenchError(f"DALI could not run the chain: {_cause(str(exc))}") from exc
        self.resumed_at = draws_of[0][2]
        self._bound(keep=keep)
        return results

    def _collect(self, module, chain, arrays, device, seed, key, start, inputs, draws, started) -> RunResult:
        """One draw's result, its new step states kept."""
        if started is None:  # every step came from the cache
            out = _batch(inputs)
        else:
            out, new_draws, after = module.collect_images(started)
            for n, step_draws in enumerate(module.STEP_DRAWS[start:], start=start + 1):
                draws.update({name: new_draws[name] for name in step_draws})
                self._states[key(n)] = (_samples(after[n - start - 1]), dict(draws))
        return RunResult(images=out, params=params_from_draws(chain, draws, len(arrays)), backend="dali",
                         device=device, seed=seed, inputs=arrays)
