"""What an estimate returns: images/s, a stage breakdown and a per-step breakdown."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .advice import Advice, advise
from .breakdown import STAGE_LABELS, StageCost, StepCost
from .machine import describe_machine
from .plot import plot_comparison, plot_estimate

@dataclass
class Estimate:
    """Throughput of a chain's exported training loader on this machine.

    `images_per_s` is the median over `run_rates`, each a stretch of the exported loader
    (decode from files, copy, augment) as its `--bench` runs it. `stages` and `steps` are
    measured alone, to show where the time goes.

    Example:
        >>> est = Estimate("kornia", "cpu", 8, (64, 64), 0, 100.0, [100.0], {}, [])
        >>> est.spread
        (100.0, 100.0)
    """

    backend: str
    device: str
    batch_size: int
    image_size: tuple[int, int]
    workers: int
    images_per_s: float
    run_rates: list[float]
    stages: dict[str, StageCost]
    steps: list[StepCost]
    notes: list[str] = field(default_factory=list)
    machine: dict[str, str] = field(default_factory=dict)

    @property
    def spread(self) -> tuple[float, float]:
        """Slowest and fastest of the whole-loader runs."""
        return min(self.run_rates), max(self.run_rates)

    @property
    def bottleneck(self) -> StageCost | None:
        """The stage with the lowest rate on its own."""
        return min(self.stages.values(), key=lambda s: s.images_per_s) if self.stages else None

    @property
    def slowest_step(self) -> StepCost | None:
        return max(self.steps, key=lambda s: s.ms_per_batch) if self.steps else None

    @property
    def label(self) -> str:
        return f"{self.backend} on {self.device}"

    def advise(self, target: float | None = None, comparison: "Comparison | None" = None) -> Advice:
        """Whether the chain keeps up with `target` images/s and what to change (see `Advice`)."""
        return advise(self, target, comparison)

    def plot(self, target: float | None = None, ax=None):
        """A matplotlib figure: the stage breakdown and the per-step breakdown."""
        return plot_estimate(self, target, ax)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """A few lines of text: rate, stages, steps."""
        lo, hi = self.spread
        lines = [f"{self.label}, batch {self.batch_size}, {self.image_size[0]}x{self.image_size[1]} images, "
                 f"{self.workers} worker(s): {self.images_per_s:.1f} images/s "
                 f"(runs {lo:.1f}-{hi:.1f}, median of {len(self.run_rates)})"]
        for stage in self.stages.values():
            lines.append(f"  {STAGE_LABELS[stage.name]:<15} {stage.images_per_s:10.1f} images/s "
                         f"{stage.ms_per_batch:9.2f} ms/batch  ({stage.detail})")
        for step in self.steps:
            lines.append(f"  step {step.step} {step.op:<20} {step.ms_per_batch:9.2f} ms/batch {100 * step.share:5.1f}%")
        lines += [f"  note: {n}" for n in self.notes]
        if self.machine:
            lines.append(f"  machine: {describe_machine(self.machine)}")
        return "\n".join(lines)

    __str__ = summary

    def _repr_markdown_(self) -> str:
        lo, hi = self.spread
        rows = [f"**{self.images_per_s:.1f} images/s**: {self.label}, batch {self.batch_size}, "
                f"{self.image_size[0]}x{self.image_size[1]} images, {self.workers} worker(s) "
                f"(runs {lo:.1f}-{hi:.1f}, median of {len(self.run_rates)})", "",
                "| stage (alone) | images/s | ms/batch | how |", "|---|---|---|---|"]
        rows += [f"| {STAGE_LABELS[s.name]} | {s.images_per_s:.1f} | {s.ms_per_batch:.2f} | {s.detail} |"
                 for s in self.stages.values()]
        rows += ["", "| step | op | ms/batch | share |", "|---|---|---|---|"]
        rows += [f"| {s.step} | {s.op} | {s.ms_per_batch:.2f} | {100 * s.share:.1f}% |" for s in self.steps]
        rows += [""] + [f"- {n}" for n in self.notes]
        if self.machine:
            rows.append(f"- machine: {describe_machine(self.machine)}")
        return "\n".join(rows)


@dataclass
class Comparison:
    """Estimates of one chain on several backends, measured one after the other in one call.

    `skipped` maps a backend that cannot run the chain to the reason.
    """

    estimates: dict[str, Estimate]
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def fastest(self) -> Estimate:
        return max(self.estimates.values(), key=lambda e: e.images_per_s)

    def ratio(self, a: str, b: str) -> float:
        """images/s of backend `a` over backend `b`."""
        return self.estimates[a].images_per_s / self.estimates[b].images_per_s

    def advise(self, target: float | None = None):
        """Advice for the fastest backend, mentioning the others."""
        return self.fastest.advise(target, self)

    def plot(self, target: float | None = None):
        """A matplotlib figure: each backend's rate and stage breakdown side by side."""
        return plot_comparison(self, target)

    def summary(self) -> str:
        lines = [f"{e.label}: {e.images_per_s:.1f} images/s" for e in self.estimates.values()]
        lines += [f"{b}: not measured ({why})" for b, why in self.skipped.items()]
        return "\n".join(lines)

    __str__ = summary

    def _repr_markdown_(self) -> str:
        fastest = self.fastest
        rows = ["| backend | images/s | vs fastest | decode | augment | slowest step |", "|---|---|---|---|---|---|"]
        for e in self.estimates.values():
            step = e.slowest_step
            rows.append(f"| {e.label} | {e.images_per_s:.1f} | {e.images_per_s / fastest.images_per_s:.2f} | "
                        f"{e.stages['decode'].images_per_s:.1f} | {e.stages['augment'].images_per_s:.1f} | "
                        f"{f'{step.step} {step.op}' if step else '-'} |")
        rows += [f"| {b} | not measured: {why} | | | | |" for b, why in self.skipped.items()]
        return "\n".join(rows)
