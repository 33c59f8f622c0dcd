"""Measure a chain on one backend: the whole training loader of its export, then each stage
and each step alone (with targets, moving a batch's targets too). Everything runs the code
`export()` writes (loaded as a module)."""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

from ..backends.kornia import levels_head
from ..codegen import emit, load_module
from ..errors import InputError
from ..runtime.bad_files import BadImageError, bad_image_line
from ..runtime.common import timed_rates
from .files import BenchInput, annotated_batch, first_batch
from .host_memory import PeakMemory
from .progress import Phases
from .timing import median_seconds

PHASES = {"whole loader": 5.0, "decoding alone": 3.0, "augmentation": 2.0, "targets": 0.5}


@dataclass
class Settings:
    """How to measure: the loader's batch size and workers, and how long."""

    backend: str
    device: str
    batch_size: int
    workers: int
    runs: int
    batches: int
    warmup: int
    torch_compile: bool = False
    skip_bad: bool = False  # the loaders' skip_bad= and exclude= (--skip-bad, --exclude)
    exclude: str | None = None


@dataclass
class Measurement:
    """Raw results: images/s of each whole-loader run, seconds per batch of each stage and
    each enabled step (in chain order), notes on what was measured how, and with torch.compile
    the seconds its first call took (compiling included)."""

    loader_rates: list[float]
    stage_seconds: dict[str, float]
    stage_details: dict[str, str]
    step_seconds: list[float]
    notes: list[str] = field(default_factory=list)
    compile_seconds: float | None = None
    # The whole loader's largest host memory (PSS, MB) and over how many processes; None off Linux.
    peak_host_mb: float | None = None
    processes: int | None = None


def measure(chain, inp: BenchInput, settings: Settings, phases: Phases) -> Measurement:
    """Run the measurement for `settings.backend` (see `workbench.estimate.estimate`). A file the
    loader cannot decode is an InputError: its one line names the file and the fixes."""
    run = {"dali": _measure_dali, "albumentations": _measure_albumentations}.get(settings.backend, _measure_kornia)
    try:
        return run(chain, inp, settings, phases)
    except ValueError as error:
        # The loaded program's own copy of BadImageError (load_module runs the exported source), or ours.
        if type(error).__name__ != BadImageError.__name__:
            raise
        raise InputError(bad_image_line(error)) from None


def _measure_albumentations(chain, inp: BenchInput, s: Settings, phases: Phases) -> Measurement:
    module = load_module(emit(chain, "albumentations"), "albumentations")
    root = str(inp.folder)
    peak = PeakMemory()  # the host memory of the loader's run (this process and its workers)
    rates = module.bench_rates(root, s.batch_size, s.batches, s.warmup, s.runs, s.workers, chain.seed, s.device,
                               progress=peak.wrap(phases.tick("whole loader")), **loader_options(inp, s))

    # Decoding alone: the same loader and workers with an empty pipeline (workers receive
    # their copy of the dataset when iteration starts, so the swap reaches them).
    loader = module.make_loader(root, s.batch_size, s.workers, chain.seed,
                                num_samples=s.batch_size * (s.warmup + s.batches * s.runs),
                                **loader_options(inp, s, targets=False))
    loader.dataset.compose = module.A.Compose([])
    if inp.annotated:  # the annotated files alone, without their targets (moved in the targets stage)
        loader.dataset.files, loader.dataset.labels = list(inp.files), [0] * len(inp.files)
    decode = timed_rates(iter(loader), lambda batch: len(batch[1]), s.batches, s.warmup, s.runs,
                         progress=phases.tick("decoding alone"))
    del loader  # stops its worker processes
    where = f"{s.workers} DataLoader worker process(es)" if s.workers else "the main process (workers=0)"
    stages = {"decode": s.batch_size / statistics.median(decode)}
    details = {"decode": f"PIL in {where}"}

    images = list(first_batch(inp, s.batch_size))
    compose = module.build_compose()
    pieces = module.split_at_mixing(compose)  # before seeding: see split_at_mixing
    module.seed_transforms(compose, chain.seed)
    tick = phases.tick("augmentation")
    # Albumentations augments one image at a time on one core: a batch is the sum of its
    # images; the loader spreads batches over its workers. A mixing step (MixUp, CutMix) mixes the
    # whole batch, as the loader's collate does.
    if not module.stages_mix(pieces):
        stages["augment"] = median_seconds(lambda: [compose(image=image) for image in images], s.runs, 1)
    else:
        stages["augment"] = median_seconds(lambda: module.run_stages(pieces, images), s.runs, 1)
    details["augment"] = f"Albumentations on one CPU core per batch (the loader runs {max(1, s.workers)} at once)"
    inputs = [images]
    for transform in compose.transforms:
        inputs.append(_albumentations_step(module, transform, inputs[-1]))
    steps = []
    for k, transform in enumerate(compose.transforms):
        steps.append(median_seconds(lambda: _albumentations_step(module, transform, inputs[k]), s.runs, 1))
        tick(k + 1, len(compose.transforms))
    if inp.annotated:
        # Each worker moves its own sample's targets, on the host, beside its Compose.
        stages["targets"] = targets_seconds(module, inp, chain.seed, s, phases)
        details["targets"] = (f"moving a batch's {target_kinds(inp)} on one CPU core, as each worker moves its "
                              f"sample's (the loader runs {max(1, s.workers)} at once)")
    return Measurement(rates, stages, details, steps, peak_host_mb=peak.peak_mb, processes=peak.processes)


def _albumentations_step(module, transform, images: list) -> list:
    """One transform of an Albumentations export on a batch of HxWxC arrays: per image, or on the
    whole batch for a mixing step (module.mixes_batch)."""
    if module.mixes_batch(transform):
        return list(transform.mix_batch(np.stack(images))[0])
    return [transform(image=image)["image"] for image in images]


def _measure_kornia(chain, inp: BenchInput, s: Settings, phases: Phases) -> Measurement:
    import torch

    module = load_module(emit(chain, "kornia"), "kornia")
    device = torch.device(s.device)
    cuda = device.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else None
    root = str(inp.folder)
    batch = torch.from_numpy(first_batch(inp, s.batch_size)).permute(0, 3, 1, 2).contiguous()
    augmentation = module.place(module.build_augmentation(), device)
    x = batch.to(device)
    compile_seconds = None
    if s.torch_compile:
        # The first compiled call compiles (once per batch shape); the loader's own shapes
        # compile again in its warm-up, untimed, as in --bench --compile.
        with torch.random.fork_rng(devices=[device] if cuda else []), torch.no_grad():
            compile_seconds = median_seconds(lambda: module.augment_batch(augmentation, x, device, torch_compile=True),
                                             1, 0, sync)
    peak = PeakMemory()  # the host memory of the loader's run (this process and its workers)
    rates = module.bench_rates(root, s.batch_size, s.batches, s.warmup, s.runs, s.workers, chain.seed, s.device,
                               progress=peak.wrap(phases.tick("whole loader")), torch_compile=s.torch_compile,
                               **loader_options(inp, s))

    # (with targets: the annotated files, each read with its targets, which the loader moves later)
    loader = module.make_loader(root, s.batch_size, s.workers, chain.seed, s.device,
                                num_samples=s.batch_size * (s.warmup + s.batches * s.runs), **loader_options(inp, s))
    # GPU-decoded batches are ready only when the GPU is done: wait for it, as the loader's user would.
    decode = timed_rates(iter(loader), lambda batch: len(batch[1]), s.batches, s.warmup, s.runs, sync,
                         progress=phases.tick("decoding alone"))
    del loader  # stops its worker processes
    stages = {"decode": s.batch_size / statistics.median(decode)}
    decoder = module.resolve_decoder("auto", s.device)
    readers = f"{s.workers} DataLoader worker process(es)" if s.workers else "the main process (workers=0)"
    details = {"decode": (f"PIL in {readers}" if decoder == "pil" else
                          f"{decoder} on {s.device}, batched, file bytes read in {readers} (a program exported with "
                          "gpu_decode=True; without it, PIL in the workers)")
               + (", each sample's targets read there too" if inp.annotated else "")}

    if cuda:
        pinned = batch.pin_memory()
        stages["host_to_device"] = median_seconds(lambda: pinned.to(device, non_blocking=True), s.runs, 2, sync)
        details["host_to_device"] = "pinned uint8 batch, copied with non_blocking=True"
    tick = phases.tick("augmentation")
    with torch.random.fork_rng(devices=[device] if cuda else []), torch.no_grad():
        torch.manual_seed(chain.seed)
        stages["augment"] = median_seconds(
            lambda: module.augment_batch(augmentation, x, device, torch_compile=s.torch_compile), s.runs, 1, sync)
        details["augment"] = (f"Kornia on {s.device}, uint8 to float included"
                              + (", fused runs through torch.compile" if s.torch_compile else ""))
        # A chain that draws each image's size runs its head image by image (as augment_batch):
        # its steps are timed so, on a list of one-image batches, until the batch forms again.
        # The first crops, flips and resizes that a CPU runs on the uint8 levels are timed on them.
        levels = 0 if module.PER_IMAGE else levels_head(module, augmentation, device)
        inputs = [[module.to_float(x[i:i + 1], device) for i in range(len(x))] if module.PER_IMAGE
                  else x if levels else module.to_float(x, device)]
        for k, step in enumerate(augmentation):
            out = _each(module, step, inputs[-1])
            if isinstance(out, list) and k + 1 == module.HEAD_STEPS and len({tuple(o.shape) for o in out}) == 1:
                out = torch.cat(out)
            inputs.append(module.as_unit(out) if k + 1 == levels else out)
        steps = []
        for k, step in enumerate(augmentation):
            steps.append(median_seconds(lambda: _each(module, step, inputs[k]), s.runs, 1, sync))
            tick(k + 1, len(augmentation))
    if inp.annotated:
        stages["targets"] = targets_seconds(module, inp, chain.seed, s, phases, s.device if cuda else None)
        details["targets"] = moving_detail(inp, cuda)
    return Measurement(rates, stages, details, steps, compile_seconds=compile_seconds, peak_host_mb=peak.peak_mb,
                       processes=peak.processes)


def _each(module, step, batch):
    """A Kornia step of the exported `module` on a batch, or on each one-image batch of a list: floats
    through Kornia's forward; uint8 levels as the module's runs take them (apply_step for its LEVEL_STEPS,
    filter_levels for the blurs and greys of filter_on_levels, a fused run of the one step for a colour
    step on levels or a geometric step, which run_kernels gives OpenCV where it can, else converts: see
    levels_head), or converted first."""
    if isinstance(batch, list):
        return [step(image) for image in batch]
    if batch.is_floating_point():
        return step(batch)
    if module.runs_on_levels(step, batch):
        return module.apply_step(step, batch, None, None)[0]
    if module.filter_on_levels(step, batch):
        return module.filter_levels(batch, step, step.forward_parameters(batch.shape))
    kept, tabled = module.levels_plan([step], batch)
    kind = "colour" if kept or tabled else \
        "geometry" if module.fusion_geometry(step) is not None else None
    if kind is None:
        return step(module.as_unit(batch))
    plans, _ = module.fused_plans([(kind, [step])], batch.shape, batch.device, batch.dtype)
    return module.run_kernels([arguments for *_, arguments in plans], plans, batch, False)


def _measure_dali(chain, inp: BenchInput, s: Settings, phases: Phases) -> Measurement:
    module = load_module(emit(chain, "dali"), "dali")
    gpu = s.device != "cpu"
    # workers=0 means what `--bench --workers 0` makes of it: the export's default thread count
    # (DALI needs at least one thread), so both measure the same pipeline.
    threads = s.workers or module._threads()
    notes = [] if s.workers else [f"DALI needs at least one thread: workers=0 runs its default of {threads}, "
                                  f"as --bench --workers 0 does"]
    root = str(inp.folder)
    peak = PeakMemory()  # the host memory of the loader's run (this process and its workers)
    rates = module.bench_rates(root, s.batch_size, s.batches, s.warmup, s.runs, s.workers, chain.seed, gpu,
                               progress=peak.wrap(phases.tick("whole loader")), **loader_options(inp, s))
    # Decoding alone: the export's own training pipeline stopped after decoding, run bare (its
    # PyTorch iterator wants one size per batch, which only the chain gives a folder of mixed sizes).
    files, labels = module.image_folder(root, s.exclude)
    if inp.annotated or s.skip_bad:
        # The annotated files alone (their targets move in the targets stage); with skip_bad the
        # files prepare_input found readable (DALI cannot skip one mid-run).
        files, labels = [str(f) for f in inp.files], list(range(len(inp.files)))
    pipe = module.training_pipeline(files, labels, gpu=gpu, aug_seed=chain.seed, augmented=False,
                                    batch_size=s.batch_size, num_threads=threads, device_id=0 if gpu else None,
                                    seed=chain.seed)
    pipe.build()
    try:
        decode = timed_rates(iter(pipe.run, None), lambda outputs: len(outputs[0]), s.batches, s.warmup, s.runs,
                             progress=phases.tick("decoding alone"))
    except RuntimeError as error:
        raise module.dali_failure(error, files) or error
    del pipe
    stages = {"decode": s.batch_size / statistics.median(decode)}
    decoder = "nvJPEG (decoders.image, device='mixed'), copy to the GPU included" if gpu else "libjpeg-turbo on the CPU"
    details = {"decode": f"DALI reader + {decoder}, {threads} thread(s)"}
    if gpu:
        notes.append("host-to-device: DALI's mixed decoder copies while decoding, so it is part of decode")

    batch = list(first_batch(inp, s.batch_size))
    _, _, after = module.augment_images(batch, seed=chain.seed, device="cpu", keep=True)
    inputs = [batch] + [list(a) for a in after]
    segment = _SegmentTimer(module, chain.seed, s, threads, gpu)
    tick = phases.tick("augmentation")
    count = len(module.STEP_FUNCTIONS)
    stages["augment"] = segment.seconds(inputs[0], 0, count)
    details["augment"] = f"DALI on {'the GPU' if gpu else 'the CPU'}, {threads} thread(s)"
    steps = []
    for k in range(count):
        steps.append(segment.seconds(inputs[k], k, k + 1))
        tick(k + 1, count)
    if inp.annotated:  # (the DALI loader's images, and so its masks, are on GPU 0)
        stages["targets"] = targets_seconds(module, inp, chain.seed, s, phases, "cuda:0" if gpu else None)
        details["targets"] = moving_detail(inp, gpu)
    return Measurement(rates, stages, details, steps, notes, peak_host_mb=peak.peak_mb, processes=peak.processes)


def loader_options(inp: BenchInput, s: Settings, targets: bool = True) -> dict:
    """The loaders' skip_bad= and exclude=, and (with `targets`) coco= and masks= for `inp`."""
    options = {"skip_bad": s.skip_bad, "exclude": s.exclude}
    if targets and inp.annotated:
        options.update(coco=None if inp.coco is None else str(inp.coco),
                       masks=None if inp.masks is None else str(inp.masks))
    return options


def target_kinds(inp: BenchInput) -> str:
    """What the loader moves, in words: "boxes, keypoints and masks" (of those inp's files give)."""
    if inp.coco is None:
        return "masks"
    return "boxes, keypoints and masks" if inp.masks is not None else "boxes and keypoints"


def moving_detail(inp: BenchInput, gpu: bool) -> str:
    """How the Kornia and DALI loaders move a batch's targets, in words."""
    where = "boxes and keypoints on the host, masks on the GPU as tensors" if gpu and inp.masks is not None else \
        "on the host (numpy)"
    return f"moving a batch's {target_kinds(inp)} from its draws, {where}, as the loader does after augmenting"


def targets_seconds(module, inp: BenchInput, seed: int, s: Settings, phases: Phases, gpu: str | None = None) -> float:
    """Seconds to move one batch of `inp`'s annotated images' targets with the export's own
    augment_targets, from the draws its augment_images made for that batch (on the CPU: the
    draws' values, not where they were drawn, decide the work); `gpu`: the device where the
    loader moves the masks (as tensors, the Kornia and DALI loaders on a GPU), None: the host."""
    tick = phases.tick("targets")
    images, targets = annotated_batch(inp, s.batch_size)
    records = module.augment_images(images, seed=seed, device="cpu")[1]
    sizes = [image.shape[:2] for image in images]
    sync = None
    if gpu is not None and targets.get("masks") is not None:
        import torch

        device = torch.device(gpu)
        targets["masks"] = [torch.as_tensor(mask).to(device) for mask in targets["masks"]]
        sync = lambda: torch.cuda.synchronize(device)  # noqa: E731 (the GPU's queued work is part of the cost)
    seconds = median_seconds(lambda: module.augment_targets(records, sizes, dict(targets)), s.runs, 1, sync)
    tick(1, 1)
    return seconds


class _SegmentTimer:
    """Seconds per batch of steps first..last-1 in a DALI pipeline fed from memory, less the
    same pipeline with no step (feeding and handing out a batch is not augmentation)."""

    def __init__(self, module, seed: int, s: Settings, threads: int, gpu: bool):
        self.module, self.seed, self.s, self.threads, self.gpu = module, seed, s, threads, gpu

    def seconds(self, batch: list[np.ndarray], first: int, last: int) -> float:
        if first == last:
            return 0.0
        return max(0.0, self._pipeline_seconds(batch, first, last) - self._pipeline_seconds(batch, first, first))

    def _pipeline_seconds(self, batch: list[np.ndarray], first: int, last: int) -> float:
        from nvidia.dali import fn, pipeline_def

        module, seed = self.module, self.seed
        if self.gpu:
            import torch

            batch = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in batch]

        @pipeline_def(enable_conditionals=True)
        def segment():
            images = fn.external_source(source=lambda: batch, batch=True, layout="HWC",
                                        device="gpu" if self.gpu else "cpu")
            images, _ = module.augment(images, seed, first, last)
            return images

        pipe = segment(batch_size=len(batch), num_threads=self.threads, device_id=0 if self.gpu else None, seed=seed)
        pipe.build()
        return median_seconds(pipe.run, self.s.runs, 2)
