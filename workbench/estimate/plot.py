"""Matplotlib figures of an estimate: stage breakdown beside the per-step breakdown."""
from __future__ import annotations

from .breakdown import STAGE_LABELS


def plot_estimate(est, target: float | None = None, axes=None):
    """Two panels for `est` (an Estimate): images/s of each stage alone, with the whole loader's
    rate (and the target) as lines; ms per batch of each step. Returns the figure.

    Example:
        >>> from workbench.estimate.result import Estimate, StageCost, StepCost
        >>> est = Estimate("kornia", "cpu", 8, (64, 64), 1, 90.0, [90.0],
        ...                {"decode": StageCost("decode", 100.0, 80.0)}, [StepCost(1, "Rotate", 5.0, 1.0)])
        >>> len(plot_estimate(est, target=120).axes)
        2
    """
    import matplotlib.pyplot as plt

    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.2), gridspec_kw={"width_ratios": [1, 1.2]})
    else:
        fig = axes[0].figure
    stage_ax, step_ax = axes
    stages = list(est.stages.values())
    names = [STAGE_LABELS[s.name] for s in stages]
    rates = [s.images_per_s for s in stages]
    colors = ["#d62728" if s is est.bottleneck else "#1f77b4" for s in stages]
    stage_ax.barh(names, rates, color=colors)
    spread = est.spread
    stage_ax.axvline(est.images_per_s, color="black", linestyle="--",
                     label=f"whole loader {est.images_per_s:.0f} (runs {spread.min:.0f}-{spread.max:.0f})")
    if target:
        stage_ax.axvline(target, color="#2ca02c", linestyle=":", label=f"target {target:.0f}")
    stage_ax.set_xlabel("images/s (stage alone)")
    stage_ax.set_title(f"{est.label}, batch {est.batch_size}, {est.image_size[0]}x{est.image_size[1]}", fontsize=10)
    stage_ax.invert_yaxis()
    stage_ax.legend(fontsize=8, loc="lower right")
    labels = [f"{s.step}. {s.op}" for s in est.steps]
    step_ax.barh(labels, [s.ms_per_batch for s in est.steps], color="#ff7f0e")
    step_ax.set_xlabel(f"ms per batch of {est.batch_size}")
    step_ax.set_title("steps (each alone)", fontsize=10)
    step_ax.invert_yaxis()
    fig.tight_layout()
    return fig


def plot_comparison(comparison, target: float | None = None):
    """One row per backend of `comparison` (a Comparison): whole-loader rate, stages and steps side
    by side. Returns the figure."""
    import matplotlib.pyplot as plt

    ests = list(comparison.estimates.values())
    fig, axes = plt.subplots(len(ests) + 1, 2, figsize=(11, 2.6 * (len(ests) + 1)), squeeze=False)
    overview, blank = axes[0]
    # Each bar is the median run; its whisker reaches the slowest and the fastest run.
    spreads = [e.spread for e in ests]
    overview.barh([e.label for e in ests], [e.images_per_s for e in ests], color="#1f77b4",
                  xerr=[[e.images_per_s - s.min for e, s in zip(ests, spreads)],
                        [s.max - e.images_per_s for e, s in zip(ests, spreads)]], capsize=3)
    if target:
        overview.axvline(target, color="#2ca02c", linestyle=":", label=f"target {target:.0f}")
        overview.legend(fontsize=8, loc="lower right")
    overview.set_xlabel("images/s (whole loader)")
    overview.invert_yaxis()
    blank.axis("off")
    lines = [f"{e.label}: {e.images_per_s:.1f} images/s (runs {s.min:.1f}-{s.max:.1f})" for e, s in zip(ests, spreads)]
    lines += [f"{b}: not measured ({why})" for b, why in comparison.skipped.items()]
    blank.text(0, 0.5, "\n".join(lines), fontsize=9, va="center", family="monospace")
    for est, row in zip(ests, axes[1:]):
        plot_estimate(est, target, row)
    fig.tight_layout()
    return fig
