"""The app's throughput panel: settings, a progress bar, the breakdown plot and the advice."""
from __future__ import annotations

import html
import io
import os
from typing import Any, Callable

import ipywidgets as w

from ..errors import WorkbenchError
from ..estimate.files import image_size_from_text
from ..estimate.result import STAGE_LABELS, Comparison, Estimate
from .progress import notebook_progress


def parse_image_size(text: str):
    """'' -> None (the images' own size), '224' -> 224, '240x320' -> [240, 320].

    Example:
        >>> parse_image_size(" 240x320 "), parse_image_size(""), parse_image_size("224")
        ([240, 320], None, 224)
    """
    size = image_size_from_text(text)
    if size is False:
        raise WorkbenchError(f"image size is empty (the images' own), N or HxW (e.g. 224 or 240x320), "
                             f"got {text.strip()!r}")
    return size


class EstimatePanel:
    """Widgets for `chain.estimate` / `chain.compare_backends`; `run(chain, backend, device,
    images)` measures, shows progress, then the plot, the tables and the advice."""

    def __init__(self, say: Callable[[str, bool], None]):
        self.say = say
        self.batch_size = w.BoundedIntText(value=64, min=1, max=4096, description="batch size")
        self.image_size = w.Text(value="", placeholder="own size, N or HxW", description="image size")
        self.workers = w.BoundedIntText(value=max(1, min(4, os.cpu_count() or 1)), min=0, max=256,
                                        description="workers")
        self.target = w.BoundedFloatText(value=0.0, min=0.0, max=1e7, description="target img/s")
        self.compare = w.Checkbox(value=False, description="compare backends", indent=False)
        self.bar = w.FloatProgress(value=0.0, min=0.0, max=1.0, description="estimate")
        self.label = w.Label()
        self.plot = w.Image(format="png", layout=w.Layout(display="none"))
        self.report = w.HTML()
        self.result: Estimate | Comparison | None = None
        self.widget = w.VBox([
            w.HBox([self.batch_size, self.image_size, self.workers]),
            w.HBox([self.target, self.compare, self.bar, self.label]),
            self.report, self.plot,
        ])

    def run(self, chain, backend: str, device: str, images: Any) -> Estimate | Comparison | None:
        """Measure with the panel's settings; errors go to the app's message line."""
        try:
            options = dict(device=device, batch_size=self.batch_size.value,
                           image_size=parse_image_size(self.image_size.value), workers=self.workers.value,
                           images=images, progress=notebook_progress(self.bar, self.label))
            target = self.target.value or None
            if self.compare.value:
                result = chain.compare_backends(**options)
            else:
                result = chain.estimate(backend=backend, **options)
        except WorkbenchError as exc:
            self.say(f"estimate failed: {exc}", True)
            return None
        except Exception as exc:  # a backend failing mid-measurement must not take the app down
            self.say(f"estimate failed ({type(exc).__name__}): {exc}", True)
            return None
        self.result = result
        self.report.value = _report_html(result, result.advise(target))
        figure = result.plot(target)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(figure)
        self.plot.value = buffer.getvalue()
        self.plot.layout.display = ""
        best = result.fastest if isinstance(result, Comparison) else result
        self.say(f"estimate: {best.images_per_s:.0f} images/s ({best.label}, batch {best.batch_size})", False)
        return result


def _report_html(result: Estimate | Comparison, advice) -> str:
    e = html.escape
    parts = []
    estimates = list(result.estimates.values()) if isinstance(result, Comparison) else [result]
    if isinstance(result, Comparison):
        rows = "".join(f"<tr><td>{e(x.label)}</td><td>{x.images_per_s:.1f}</td></tr>" for x in estimates)
        rows += "".join(f"<tr><td>{e(b)}</td><td>not measured: {e(why)}</td></tr>" for b, why in result.skipped.items())
        parts.append(f"<table><tr><th>backend</th><th>images/s</th></tr>{rows}</table>")
    for est in estimates:
        lo, hi = est.spread
        stages = "".join(f"<tr><td>{e(STAGE_LABELS[s.name])}</td><td>{s.images_per_s:.1f}</td>"
                         f"<td>{s.ms_per_batch:.2f}</td><td>{e(s.detail)}</td></tr>" for s in est.stages.values())
        steps = "".join(f"<tr><td>{s.step}. {e(s.op)}</td><td>{s.ms_per_batch:.2f}</td><td>{100 * s.share:.0f}%</td></tr>"
                        for s in est.steps)
        parts.append(
            f"<p><b>{est.images_per_s:.1f} images/s</b>: {e(est.label)}, batch {est.batch_size}, "
            f"{est.image_size[0]}x{est.image_size[1]}, {est.workers} worker(s); runs {lo:.1f}-{hi:.1f}</p>"
            f"<table><tr><th>stage alone</th><th>images/s</th><th>ms/batch</th><th>how</th></tr>{stages}</table>"
            f"<table><tr><th>step alone</th><th>ms/batch</th><th>share</th></tr>{steps}</table>"
            + "".join(f"<div><small>{e(n)}</small></div>" for n in est.notes))
    items = "".join(f"<li>{e(s)}</li>" for s in advice.suggestions)
    parts.append(f"<p>{e(advice.verdict)}</p><ul>{items}</ul>")
    return "".join(parts)
