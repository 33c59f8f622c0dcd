"""Throughput estimate: how many images/s a chain's exported loader delivers on this machine,
and where the time goes (decode, host-to-device, augment, moving targets; each step).

Example:
    >>> import workbench as wb
    >>> chain = wb.Chain(seed=1).add("HorizontalFlip").add("Brightness", factor=[0.8, 1.2])
    >>> est = chain.estimate(backend="kornia", batch_size=4, image_size=32, workers=0, runs=2, batches=1,
    ...                      progress=False)
    >>> est.images_per_s > 0, [s.op for s in est.steps], sorted(est.stages)
    (True, ['HorizontalFlip', 'Brightness'], ['augment', 'decode'])
"""
from __future__ import annotations

import os
import statistics
from typing import Any, Sequence

from ..backends import (BACKENDS, check_compile_backend, check_device_support, check_memory, check_sizes,
                        resolve_device)
from ..codegen.loader_sizes import resize_position
from ..plans import box_reading_op, unfollowed_op
from ..runtime.bad_files import BadImageError, bad_image_line
from ..runtime.common import bench_batches
from ..errors import ChainError, InputError, UnsupportedOpError, WorkbenchError
from .advice import Advice, advise
from .breakdown import STAGE_LABELS
from .files import BenchInput, check_image_size, prepare_annotated, prepare_input
from .isolated import measure_isolated
from .machine import describe_machine, machine_info
from .measure import PHASES, Settings, measure
from .progress import Phases, resolve_progress
from .result import Comparison, Estimate, RateSpread, StageCost, StepCost

def estimate(chain, backend: str = "kornia", device: str = "cpu", batch_size: int = 64, image_size=None,
             workers: int | None = None, images: Any = None, runs: int = 5, batches: int | None = None,
             warmup: int = 3, progress: Any = True, isolate: bool = True, torch_compile: bool = False,
             coco: Any = None, masks: Any = None, skip_bad: bool = False, exclude: Any = None) -> Estimate:
    """Measure `chain`'s exported training loader for `backend` on `device`.

    Decodes real files (`images`: a folder, glob, arrays...; the sample images by default;
    re-encoded as JPEG at `image_size` when they are not all that size) with `workers`
    DataLoader processes (Kornia) or DALI threads, `warmup` batches untimed, then `runs`
    stretches of `batches` batches (default: 256 images' worth): images/s is their median,
    exactly as the exported script's `--bench` computes it. With `isolate` (the default) this
    runs in a fresh Python process, as --bench does; False measures in this process. Then decode, host-to-device
    (on a GPU) and augmentation are timed alone, and each enabled step alone. `torch_compile`
    (Kornia only): the loader and the augmentation run their fused steps through torch.compile,
    as `--bench --compile` does, and `compile_seconds` reports the first compiled call.
    `coco` (a COCO instances file) and/or `masks` (a folder of label-map PNGs): the loader reads
    the annotated files of the folder `images` as they are and moves their targets with every
    batch, as `--bench --coco ... --masks ...` does (see prepare_annotated); a "targets" stage
    then times moving one batch's targets alone.
    A file of `images` that cannot be decoded is an InputError naming it; `skip_bad` and
    `exclude` (an exclusion list, see `workbench check`) are the loaders' own (--skip-bad,
    --exclude): the loader skips such files, or leaves out those the list names.

    Example:
        >>> import workbench as wb
        >>> est = wb.Chain().add("VerticalFlip").estimate(batch_size=2, image_size=16, workers=0, runs=1,
        ...                                              batches=1, progress=False)
        >>> est.batch_size, est.image_size
        (2, (16, 16))
    """
    settings = _settings(chain, backend, device, batch_size, workers, runs, batches, warmup, torch_compile)
    settings.skip_bad, settings.exclude = bool(skip_bad), None if exclude is None else str(exclude)
    try:
        return _measured(chain, settings, image_size, images, progress, isolate, coco, masks)
    except BadImageError as error:
        raise InputError(bad_image_line(error)) from None


def _measured(chain, settings, image_size, images, progress, isolate, coco, masks) -> Estimate:
    backend = settings.backend
    reading = box_reading_op(chain)
    if reading is not None:
        raise UnsupportedOpError(f"{reading} draws its window from each image's boxes, which the estimate's timing of "
                                 "each step alone does not hand it: measure the exported file's training loader "
                                 "instead, python augment.py --images DIR --coco instances.json --bench")
    size, mixed = check_image_size(image_size), reads_mixed_sizes(chain, backend)
    if coco is not None or masks is not None:
        check_moves_targets(chain)
        inp = prepare_annotated(images, coco, masks, size, mixed_sizes=mixed)
    else:
        inp = prepare_input(images, size, mixed_sizes=mixed, skip_bad=settings.skip_bad, exclude=settings.exclude)
    _check_chain_fits(chain, inp, settings)
    phases = Phases(resolve_progress(progress), PHASES)
    result = (measure_isolated if isolate else measure)(chain, inp, settings, phases)
    phases.done(f"{backend}: measured")
    return _estimate_from(chain, inp, settings, result)


def compare_backends(chain, backends: Sequence[str] | None = None, **kwargs) -> Comparison:
    """Estimate `chain` on each backend (default: all that can run it), one after the other
    with the same settings (see `estimate`; `torch_compile=True` applies to Kornia, the only
    backend that has it); backends that cannot run it are listed as skipped.

    Example:
        >>> import workbench as wb
        >>> cmp = compare_backends(wb.Chain().add("HorizontalFlip"), batch_size=2, image_size=16, workers=1,
        ...                        runs=1, batches=1, progress=False)
        >>> sorted(cmp.estimates)
        ['albumentations', 'dali', 'kornia']
    """
    backends = list(BACKENDS if backends is None else backends)
    unknown = [b for b in backends if b not in BACKENDS]
    if unknown or not backends:
        raise ChainError(f"unknown backend(s) {unknown or backends}; choose from {', '.join(BACKENDS)}")
    report = resolve_progress(kwargs.pop("progress", True))
    estimates, skipped = {}, {}
    device = resolve_device(kwargs.get("device", "cpu"))
    for n, backend in enumerate(backends):
        missing = chain.unsupported_ops(backend)
        gpu_only = chain.unsupported_ops(backend, device)
        if missing or gpu_only:
            skipped[backend] = (f"{', '.join(missing)} cannot run on {backend}" if missing else
                                f"{', '.join(gpu_only)} run(s) on {backend}'s GPU only, not on device={device!r}")
            continue
        part = None if report is None else (lambda f, m, n=n: report((n + f) / len(backends), f"{backend}: {m}"))
        options = {k: v for k, v in kwargs.items() if k != "torch_compile" or backend == "kornia"}
        estimates[backend] = estimate(chain, backend=backend, progress=part or False, **options)
    if not estimates:
        raise UnsupportedOpError("no backend can run this chain: " + "; ".join(skipped.values()))
    return Comparison(estimates, skipped)


def _settings(chain, backend, device, batch_size, workers, runs, batches, warmup, torch_compile=False) -> Settings:
    if backend not in BACKENDS:
        raise ChainError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    check_compile_backend(torch_compile, backend)
    chain.validate()
    missing = chain.unsupported_ops(backend)
    if missing:
        raise UnsupportedOpError(f"cannot estimate on {backend}: {', '.join(missing)} cannot run there")
    _check_int("batch_size", batch_size, 1, 4096)
    if workers is None:
        workers = max(1, min(4, os.cpu_count() or 1))
    _check_int("workers", workers, 0, 256)
    _check_int("runs", runs, 1, 1000)
    _check_int("warmup", warmup, 0, 1000)
    # The same runs as the exported --bench by default, so the two measure alike.
    batches = bench_batches(batch_size, batches)
    _check_int("batches", batches, 1, 100_000)
    device = resolve_device(device)
    check_device_support(chain, backend, device, doing="estimate")
    return Settings(backend, device, batch_size, workers, runs, batches, warmup, bool(torch_compile))


def _check_int(name: str, value: Any, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise WorkbenchError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")


def reads_mixed_sizes(chain, backend: str) -> bool:
    """Whether `backend`'s exported training loader (and so its --bench) reads a folder of
    images of several sizes as it is: Albumentations always (image by image), Kornia and DALI
    when a step fixes the size before the batch must be one size (their FIXES_SIZE).

    Example:
        >>> import workbench as wb
        >>> crop = wb.Chain().add("RandomResizedCrop", size=[64, 64]).add("HorizontalFlip")
        >>> reads_mixed_sizes(crop, "dali"), reads_mixed_sizes(wb.Chain().add("HorizontalFlip"), "kornia")
        (True, False)
    """
    return backend == "albumentations" or not resize_position(chain.enabled_steps())[1]


def check_moves_targets(chain) -> None:
    """Refuse, before measuring, a chain with a step whose targets cannot follow its pixels (the
    exported loader would refuse coco= and masks=), naming the step and why.

    Example:
        >>> import workbench as wb
        >>> check_moves_targets(wb.Chain().add("Rotate").add("ElasticTransform"))  # every op moves them
    """
    op = unfollowed_op(chain)
    if op is not None:
        raise UnsupportedOpError(f"cannot estimate with targets: {op.op} cannot move masks, boxes or keypoints "
                                 f"({op.spec.targets.unsupported})")


def _check_chain_fits(chain, inp: BenchInput, s: Settings) -> None:
    """Sizes at every step, and memory: a batch of the largest images through the chain (each
    worker holds a batch at most; on a GPU, the batch is what the device holds)."""
    import numpy as np

    check_sizes(chain, [np.zeros((*size, 3), np.uint8) for size in inp.sizes or [inp.size]])
    largest = max(inp.sizes or [inp.size], key=lambda size: size[0] * size[1])
    check_memory(chain, [np.zeros((*largest, 3), np.uint8)] * s.batch_size, s.backend, s.device,
                 what="images per batch")


def _estimate_from(chain, inp: BenchInput, s: Settings, m) -> Estimate:
    stages = {}
    for name in STAGE_LABELS:
        if name in m.stage_seconds:
            seconds = m.stage_seconds[name]
            rate = s.batch_size / seconds if seconds > 0 else float("inf")
            stages[name] = StageCost(name, rate, 1000 * seconds, m.stage_details[name])
    total = sum(m.step_seconds) or 1.0
    sizes, (h, w) = [], inp.size
    for _, step in chain.enabled_steps():
        out = step.size_bounds(h, w)[1]  # (a drawn size at its largest)
        sizes.append(((h, w), out))
        h, w = out
    steps = [StepCost(i + 1, step.op, 1000 * sec, sec / total, size_in, size_out)
             for (i, step), sec, (size_in, size_out) in zip(chain.enabled_steps(), m.step_seconds, sizes)]
    return Estimate(s.backend, s.device, s.batch_size, inp.size, s.workers, statistics.median(m.loader_rates),
                    list(m.loader_rates), stages, steps, inp.notes + m.notes, machine_info(s.device),
                    m.compile_seconds, m.peak_host_mb, m.processes)


__all__ = ["Advice", "BenchInput", "Comparison", "Estimate", "RateSpread", "StageCost", "StepCost", "advise",
           "compare_backends", "describe_machine", "estimate", "machine_info", "reads_mixed_sizes"]
