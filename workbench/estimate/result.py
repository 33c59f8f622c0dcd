"""What an estimate returns: images/s with its spread over the runs, a stage breakdown and a
per-step breakdown."""
from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, Sequence

from .advice import Advice, advise
from .breakdown import STAGE_LABELS, StageCost, StepCost
from .machine import describe_machine
from .plot import plot_comparison, plot_estimate


class RateSpread(NamedTuple):
    """How an estimate's whole-loader runs (images/s each) spread: the slowest, the quartiles,
    the median (the estimate itself) and the fastest, over `runs` runs.

    Example:
        >>> spread = RateSpread.of([90.0, 100.0, 80.0, 110.0, 100.0])
        >>> spread.min, spread.q1, spread.median, spread.q3, spread.max, spread.runs
        (80.0, 90.0, 100.0, 100.0, 110.0, 5)
        >>> round(spread.relative_range, 2), spread.describe()
        (0.3, 'median of 5 runs; min 80.0, IQR 90.0-100.0, max 110.0 images/s (range 30% of the median)')
    """

    min: float
    q1: float
    median: float
    q3: float
    max: float
    runs: int

    @classmethod
    def of(cls, rates: Sequence[float]) -> "RateSpread":
        rates = sorted(float(r) for r in rates)
        if not rates:
            raise ValueError("no runs to summarise")
        # Quartiles by linear interpolation between the runs (the 'inclusive' method): with
        # one run every figure is that run.
        q1, _, q3 = statistics.quantiles(rates, n=4, method="inclusive") if len(rates) > 1 else rates * 3
        return cls(rates[0], q1, statistics.median(rates), q3, rates[-1], len(rates))

    @property
    def iqr(self) -> float:
        """Interquartile range, images/s."""
        return self.q3 - self.q1

    @property
    def relative_range(self) -> float:
        """(fastest - slowest) / median: 0.1 means the runs lie within 10% of the median's size."""
        return (self.max - self.min) / self.median if self.median > 0 else float("inf")

    def describe(self) -> str:
        """One line: median of N runs; min, IQR, max, and the range relative to the median."""
        return (f"median of {self.runs} run{'s' if self.runs != 1 else ''}; min {self.min:.1f}, "
                f"IQR {self.q1:.1f}-{self.q3:.1f}, max {self.max:.1f} images/s "
                f"(range {100 * self.relative_range:.0f}% of the median)")


@dataclass
class Estimate:
    """Throughput of a chain's exported training loader on this machine.

    `images_per_s` is the median over `run_rates`, each a stretch of the exported loader
    (decode from files, copy, augment) as its `--bench` runs it; `spread` says how far the
    runs lie apart (min, quartiles, max). `stages` and `steps` are measured alone, to show
    where the time goes. `compile_seconds`: with torch.compile, how long its first call took
    (compiling included; each new batch shape compiles once more), else None.

    Example:
        >>> est = Estimate("kornia", "cpu", 8, (64, 64), 0, 100.0, [90.0, 100.0, 120.0], {}, [])
        >>> est.spread.min, est.spread.median, est.spread.max
        (90.0, 100.0, 120.0)
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
    compile_seconds: float | None = None
    peak_host_mb: float | None = None
    processes: int | None = None

    @property
    def spread(self) -> RateSpread:
        """How the whole-loader runs spread: min, quartiles, median (= images_per_s), max."""
        return RateSpread.of(self.run_rates)

    @property
    def bottleneck(self) -> StageCost | None:
        """The stage with the lowest rate on its own."""
        return min(self.stages.values(), key=lambda s: s.images_per_s) if self.stages else None

    @property
    def slowest_step(self) -> StepCost | None:
        return max(self.steps, key=lambda s: s.ms_per_batch) if self.steps else None

    @property
    def label(self) -> str:
        return f"{self.backend} on {self.device}" + (", torch.compile" if self.compile_seconds is not None else "")

    @property
    def memory_line(self) -> str | None:
        """The loader's peak host memory in words, or None where it could not be read (not Linux).

        Example:
            >>> Estimate("kornia", "cpu", 8, (64, 64), 2, 100.0, [100.0], {}, [], peak_host_mb=812.4,
            ...          processes=3).memory_line
            'host memory at its peak: 812 MB (the loader and its workers: 3 processes, proportional set size)'
        """
        if self.peak_host_mb is None:
            return None
        return (f"host memory at its peak: {self.peak_host_mb:.0f} MB (the loader and its workers: "
                f"{self.processes} process{'es' if self.processes != 1 else ''}, proportional set size)")

    @property
    def compile_line(self) -> str | None:
        """What compiling cost, in words, or None without torch.compile."""
        if self.compile_seconds is None:
            return None
        return (f"first compiled call: {self.compile_seconds:.1f} s, compiling included (once per batch shape; "
                "the rates above are after it)")

    def advise(self, target: float | None = None, comparison: "Comparison | None" = None) -> Advice:
        """Whether the chain keeps up with `target` images/s and what to change (see `Advice`)."""
        return advise(self, target, comparison)

    def plot(self, target: float | None = None, ax=None):
        """A matplotlib figure: the stage breakdown and the per-step breakdown."""
        return plot_estimate(self, target, ax)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: every field, and the runs' spread under "spread"."""
        return {**asdict(self), "spread": self.spread._asdict()}

    def summary(self) -> str:
        """A few lines of text: rate, stages, steps."""
        lines = [f"{self.label}, batch {self.batch_size}, {self.image_size[0]}x{self.image_size[1]} images, "
                 f"{self.workers} worker(s): {self.images_per_s:.1f} images/s",
                 f"  whole loader: {self.spread.describe()}"] + ([f"  {self.memory_line}"] if self.memory_line else [])
        for stage in self.stages.values():
            lines.append(f"  {STAGE_LABELS[stage.name]:<15} {stage.images_per_s:10.1f} images/s "
                         f"{stage.ms_per_batch:9.2f} ms/batch  ({stage.detail})")
        for step in self.steps:
            lines.append(f"  step {step.step} {step.op:<20} {step.ms_per_batch:9.2f} ms/batch {100 * step.share:5.1f}%")
        if self.compile_line:
            lines.append(f"  {self.compile_line}")
        lines += [f"  note: {n}" for n in self.notes]
        if self.machine:
            lines.append(f"  machine: {describe_machine(self.machine)}")
        return "\n".join(lines)

    __str__ = summary

    def _repr_markdown_(self) -> str:
        rows = [f"**{self.images_per_s:.1f} images/s**: {self.label}, batch {self.batch_size}, "
                f"{self.image_size[0]}x{self.image_size[1]} images, {self.workers} worker(s) "
                f"({self.spread.describe()})" + (f"; {self.memory_line}" if self.memory_line else ""), "",
                "| stage (alone) | images/s | ms/batch | how |", "|---|---|---|---|"]
        rows += [f"| {STAGE_LABELS[s.name]} | {s.images_per_s:.1f} | {s.ms_per_batch:.2f} | {s.detail} |"
                 for s in self.stages.values()]
        rows += ["", "| step | op | ms/batch | share |", "|---|---|---|---|"]
        rows += [f"| {s.step} | {s.op} | {s.ms_per_batch:.2f} | {100 * s.share:.1f}% |" for s in self.steps]
        rows += [""] + ([f"- {self.compile_line}"] if self.compile_line else []) + [f"- {n}" for n in self.notes]
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
        lines = [f"{e.label}: {e.images_per_s:.1f} images/s ({e.spread.describe()})" for e in self.estimates.values()]
        lines += [f"{b}: not measured ({why})" for b, why in self.skipped.items()]
        return "\n".join(lines)

    __str__ = summary

    def _repr_markdown_(self) -> str:
        fastest = self.fastest
        rows = ["| backend | images/s | runs min-max | vs fastest | decode | augment | slowest step |",
                "|---|---|---|---|---|---|---|"]
        for e in self.estimates.values():
            step, spread = e.slowest_step, e.spread
            rows.append(f"| {e.label} | {e.images_per_s:.1f} | {spread.min:.1f}-{spread.max:.1f} | "
                        f"{e.images_per_s / fastest.images_per_s:.2f} | "
                        f"{e.stages['decode'].images_per_s:.1f} | {e.stages['augment'].images_per_s:.1f} | "
                        f"{f'{step.step} {step.op}' if step else '-'} |")
        rows += [f"| {b} | not measured: {why} | | | | | |" for b, why in self.skipped.items()]
        return "\n".join(rows)
