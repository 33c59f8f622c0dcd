"""Bottleneck advice: does the chain keep up with a target rate, what limits it, what to change."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..errors import WorkbenchError
from ..ops import get_spec
from .breakdown import STAGE_LABELS, StepCost

# The whole loop runs below its slowest stage by more than this when stages fight over cores.
CONTENTION = 0.75
# A measurement is too noisy to advise from when its runs spread wider than this (fastest - slowest
# over the median), or when the whole loop ran faster than one of its stages alone by more than
# NOISE_OVERRUN: the loop does every stage's work, so that can only come from a busy machine.
NOISE_RANGE = 0.5
NOISE_OVERRUN = 1.2


@dataclass
class Advice:
    """The verdict (`keeps_up`, None without a target), the limiting stage and step, and
    what to change, in words (`str(advice)`)."""

    images_per_s: float
    target: float | None
    keeps_up: bool | None
    limiting_stage: str
    limiting_step: StepCost | None
    verdict: str
    suggestions: list[str] = field(default_factory=list)
    noisy: str = ""  # why the measurement is too noisy to advise from ("" when it is not)

    def __str__(self) -> str:
        return "\n".join([self.verdict] + [f"- {s}" for s in self.suggestions])

    def _repr_markdown_(self) -> str:
        return str(self)


def advise(est, target: float | None = None, comparison=None) -> Advice:
    """Say whether `est` (an Estimate) keeps up with `target` images/s, which stage or step limits
    it and what to change; `comparison` (a Comparison) adds the other backends' rates.

    Example:
        >>> from workbench.estimate.result import Estimate, StageCost
        >>> stages = {"decode": StageCost("decode", 160.0, 400.0), "augment": StageCost("augment", 900.0, 71.0)}
        >>> est = Estimate("kornia", "cpu", 64, (256, 256), 2, 150.0, [150.0], stages, [])
        >>> advice = advise(est, target=300)
        >>> advice.keeps_up, advice.limiting_stage
        (False, 'decode')
    """
    if target is not None:
        if isinstance(target, bool) or not isinstance(target, (int, float)) or not target > 0:
            raise WorkbenchError(f"target must be a positive number of images/s, got {target!r}")
        target = float(target)
    stage = est.bottleneck
    step = est.slowest_step
    rate = est.images_per_s
    noise = noisy(est)
    if noise:
        return _noisy_advice(est, target, noise, stage, step)
    if target is None:
        keeps_up, verdict = None, f"Delivers {rate:.0f} images/s ({est.label}, batch {est.batch_size})."
    elif rate >= target:
        keeps_up = True
        verdict = (f"Keeps up: {rate:.0f} images/s against the {target:.0f} needed "
                   f"({rate / target:.1f}x, {est.label}, batch {est.batch_size}).")
    else:
        keeps_up = False
        short = 100 * (1 - rate / target)
        verdict = (f"Too slow: {rate:.0f} images/s against the {target:.0f} needed "
                   f"({f'{short:.0f}%' if short >= 1 else 'under 1%'} short, {est.label}, batch {est.batch_size}).")
    suggestions: list[str] = []
    if stage is not None:
        verdict += (f" The limit is {STAGE_LABELS[stage.name]}: {stage.images_per_s:.0f} images/s on its own "
                    f"({stage.detail}).")
        if keeps_up is not False:
            suggestions.append("Nothing needs to change." if keeps_up else
                               "Give a target (the images/s your model consumes) to know whether this is enough.")
        if keeps_up is not True:
            suggestions += _for_stage(est, stage.name, step, comparison)
        if rate < CONTENTION * stage.images_per_s and est.device == "cpu":
            suggestions.append(
                f"Decoding and augmentation share this machine's {os.cpu_count()} CPU cores, so the whole loop "
                f"({rate:.0f} images/s) runs well below its slowest stage alone ({stage.images_per_s:.0f}); "
                "more cores, or moving one stage to a GPU, lifts both.")
    return Advice(rate, target, keeps_up, stage.name if stage else "", step, verdict, suggestions)


def _noisy_advice(est, target: float | None, noise: str, stage, step) -> Advice:
    """Noise hides what limits the loader, but not whether every run fell short of (or cleared) the
    target: a verdict only the spread could overturn is given as "too noisy to tell"."""
    rate, spread = est.images_per_s, est.spread
    where = f"({est.label}, batch {est.batch_size})"
    keeps_up = None
    if target is not None and spread.max < target:
        keeps_up = False
        verdict = (f"Too slow: {rate:.0f} images/s against the {target:.0f} needed {where}, and even the fastest "
                   f"run ({spread.max:.0f}) fell short; the measurement is too noisy to say what limits it: {noise}.")
    elif target is not None and spread.min >= target:
        keeps_up = True
        verdict = (f"Keeps up: {rate:.0f} images/s against the {target:.0f} needed {where}, and so did the "
                   f"slowest run ({spread.min:.0f}); the measurement is too noisy to say what limits it: {noise}.")
    else:
        against = "" if target is None else f", too noisy to tell against the {target:.0f} needed"
        verdict = (f"Delivers about {rate:.0f} images/s {where}{against}; the measurement is too noisy to say "
                   f"what limits it: {noise}.")
    suggestions = ["Measure again with the machine otherwise idle (close other notebooks and busy programs); "
                   "more runs (runs=9) narrow the spread."]
    return Advice(rate, target, keeps_up, stage.name if stage else "", step, verdict, suggestions, noise)


def noisy(est) -> str:
    """Why `est` (an Estimate) is too noisy to advise from, in words; "" when it is not.

    Example:
        >>> from workbench.estimate.result import Estimate, StageCost
        >>> est = Estimate("kornia", "cpu", 64, (256, 256), 2, 46.0, [30.0, 46.0, 49.0],
        ...                {"augment": StageCost("augment", 22.0, 2900.0)}, [])
        >>> noisy(est)
        'the whole loop (46 images/s) ran faster than augment alone (22 images/s), which it includes'
        >>> est.run_rates = [20.0, 46.0, 49.0]; est.stages = {}
        >>> noisy(est)
        'the runs spread 63% of the median (20-49 images/s)'
    """
    reasons = []
    spread = est.spread
    if spread.runs > 1 and spread.relative_range > NOISE_RANGE:
        reasons.append(f"the runs spread {100 * spread.relative_range:.0f}% of the median ({spread.min:.0f}-"
                       f"{spread.max:.0f} images/s)")
    slow = [s for s in est.stages.values() if est.images_per_s > NOISE_OVERRUN * s.images_per_s * _at_once(est, s.name)]
    if slow:
        s = min(slow, key=lambda s: s.images_per_s)
        reasons.append(f"the whole loop ({est.images_per_s:.0f} images/s) ran faster than {STAGE_LABELS[s.name]} "
                       f"alone ({s.images_per_s:.0f} images/s), which it includes")
    return ", and ".join(reasons)


def _at_once(est, stage: str) -> int:
    """How many copies of `stage` the loader runs at once: Albumentations augments (and moves targets)
    in every worker, each stage measured alone on one core; the other stages are measured as they run."""
    return max(1, est.workers) if est.backend == "albumentations" and stage in ("augment", "targets") else 1


def _for_stage(est, stage: str, step: StepCost | None, comparison) -> list[str]:
    out = []
    gpu = _gpu_available()
    cores = os.cpu_count() or 1
    if stage == "decode":
        if est.workers < cores:
            out.append(f"Use more decoding workers: workers={cores} (this machine has {cores} cores, "
                       f"the estimate used {est.workers}).")
        if gpu and not (est.backend == "dali" and est.device != "cpu"):
            out.append("Decode on the GPU: the DALI export with device='cuda' decodes JPEGs with nvJPEG "
                       "(decoders.image(device='mixed')).")
        h, w = est.image_size
        out.append(f"Decoding cost grows with pixels ({h}x{w} here): store the dataset resized close to the "
                   "training size, or decode once and cache the decoded images.")
    elif stage == "augment":
        if step is not None:
            out.append(f"Step {step.step} ({step.op}) takes {100 * step.share:.0f}% of the augmentation "
                       f"({step.ms_per_batch:.1f} ms per batch of {est.batch_size}).")
            out += _cheaper_step(est, step)
        if est.device == "cpu" and gpu:
            out.append("Augment on the GPU: device='cuda'.")
        if est.device == "cpu":
            out.append("Augmenting on the CPU takes cores from decoding; a GPU machine runs these ops for a "
                       "fraction of the cost.")
    elif stage == "targets":
        out += _for_targets(est, gpu)
    elif stage == "host_to_device":
        out.append("The copy to the GPU limits: keep batches uint8 until they are on the GPU (the exports do), "
                   "or decode on the GPU with the DALI export so only compressed files cross the bus.")
    if comparison is not None:
        for other in comparison.estimates.values():
            if other.backend != est.backend and other.images_per_s > est.images_per_s * 1.05:
                out.append(f"Switch backend: {other.label} delivers {other.images_per_s:.0f} images/s "
                           f"({other.images_per_s / est.images_per_s:.2f}x).")
    return out


def _for_targets(est, gpu: bool) -> list[str]:
    """What makes moving targets cheaper: masks are the cost (a resampled label map per warp and
    sample; boxes and keypoints are a few points), more so through a displacement field."""
    out = []
    fields = [s.op for s in est.steps if get_spec(s.op).targets.field is not None]
    if fields:
        out.append(f"{', '.join(fields)} move{'s' if len(fields) == 1 else ''} each mask pixel by pixel through "
                   "a displacement field, the costliest move; a matrix-based op (Affine, Perspective) moves masks "
                   "with one map.")
    if est.backend == "albumentations":
        out.append(f"Each worker moves its own samples' targets: more workers (this machine has "
                   f"{os.cpu_count() or 1} cores, the estimate used {est.workers}) move more at once.")
    elif est.device == "cpu":
        out.append("On a GPU the Kornia and DALI loaders move masks on the device, all of a step's at once"
                   + (": device='cuda'." if gpu else "."))
    out.append("Masks cost most; boxes and keypoints alone are a few points per object: give masks= only where the "
               "model learns from them.")
    return out


def _cheaper_step(est, step: StepCost) -> list[str]:
    out = []
    hint = get_spec(step.op).cost_hint  # a group's spec has none
    if hint:
        out.append(f"{step.op}: {hint}")
    pixels = step.input_size[0] * step.input_size[1]
    for later in est.steps:
        out_pixels = later.output_size[0] * later.output_size[1]
        if later.step > step.step and 0 < out_pixels < 0.8 * pixels and get_spec(later.op).fixes_size:
            out.append(f"Move {step.op} after step {later.step} ({later.op}), which shrinks images from "
                       f"{later.input_size[0]}x{later.input_size[1]} to {later.output_size[0]}x"
                       f"{later.output_size[1]}: it would work on {pixels / out_pixels:.1f}x fewer pixels "
                       "(the result changes slightly; check the preview).")
            break
    return out


def _gpu_available() -> bool:
    import torch

    return torch.cuda.is_available()
