"""The app's throughput panel: settings, a progress bar, the breakdown plot and the advice.

A measurement takes seconds to minutes, so it runs on a background thread: the kernel stays
free for the user's other cells and the app's other buttons, the progress bar moves, and a
cancel button stops it (the measuring child process with it).
"""
from __future__ import annotations

import html
import io
import os
import threading
from typing import Any, Callable

import ipywidgets as w
import matplotlib.pyplot as plt

from ..errors import EstimateCancelled, WorkbenchError
from ..estimate.files import image_size_from_text
from ..estimate.result import STAGE_LABELS, Comparison, Estimate


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
    """Widgets for `chain.estimate` / `chain.compare_backends`. `run(chain, backend, device,
    images)` checks the settings, then measures a copy of the chain on a background thread
    (progress on the bar, a cancel button) and shows the plot, the tables and the advice;
    `wait()` blocks until it is done, for code and tests. Its own message line, beside the
    button, says what happened; the button is disabled while a measurement runs, and the last
    result is cleared when a new one starts. `start` (when given) is what the button calls.

    Example:
        >>> panel = EstimatePanel()
        >>> panel.running, panel.cancel_button.disabled, panel.button.disabled
        (False, True, False)
    """

    def __init__(self, start: Callable[[], Any] | None = None):
        self.button = w.Button(description="estimate", icon="tachometer", button_style="info",
                               tooltip="measure the exported loader's images/s on this machine")
        self.button.on_click(lambda b: start() if start is not None else None)
        self.message = w.HTML()
        self.message.add_class("wb-estimate-message")
        self.batch_size = w.BoundedIntText(value=64, min=1, max=4096, description="batch size")
        self.image_size = w.Text(value="", placeholder="own size, N or HxW", description="image size")
        self.workers = w.BoundedIntText(value=max(1, min(4, os.cpu_count() or 1)), min=0, max=256,
                                        description="workers")
        self.target = w.BoundedFloatText(value=0.0, min=0.0, max=1e7, description="target img/s")
        # The advice asks for more runs when a measurement is noisy: the panel must offer them.
        self.runs = w.BoundedIntText(value=5, min=1, max=50, description="runs", style={"description_width": "36px"},
                                     layout=w.Layout(width="110px"),
                                     tooltip="whole-loader runs; the figure is their median (more runs: a steadier "
                                             "figure, a longer wait)")
        self.batches = w.BoundedIntText(value=0, min=0, max=100_000, description="batches",
                                        style={"description_width": "52px"}, layout=w.Layout(width="130px"),
                                        tooltip="batches per timed run (0: 256 images' worth); fewer: a quicker, "
                                                "noisier figure")
        self.compare = w.Checkbox(value=False, description="compare backends", indent=False)
        self.compile = w.Checkbox(value=False, description="torch.compile (Kornia)", indent=False,
                                  tooltip="measure the Kornia loader with its fused steps compiled, as --compile "
                                          "runs it; the first compiled call's seconds are shown")
        self.bar = w.FloatProgress(value=0.0, min=0.0, max=1.0, layout=w.Layout(width="160px"))
        self.label = w.HTML(layout=w.Layout(flex="1 1 auto", width="auto"))
        self.label.add_class("wb-estimate-status")
        self.cancel_button = w.Button(description="cancel", icon="stop", disabled=True,
                                      tooltip="stop the measurement", layout=w.Layout(width="90px"))
        self.cancel_button.on_click(lambda b: self.cancel())
        self.plot = w.Image(format="png", layout=w.Layout(display="none"))
        self.report = w.HTML()
        self.result: Estimate | Comparison | None = None
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self._left_out = ""  # what the running estimate leaves out, said with its result
        self.widget = w.VBox([
            w.HBox([self.batch_size, self.image_size, self.workers]),
            w.HBox([self.target, self.runs, self.batches, self.compare, self.compile]),
            w.HBox([self.button, self.cancel_button, self.bar, self.label], layout=w.Layout(align_items="center")),
            self.message, self.report, self.plot,
        ])
        self.widget.add_class("wb-estimate")

    def say(self, text: str, error: bool = False) -> None:
        """Show a message on the panel's own line, beside its button (errors in red)."""
        colour = "#b00020" if error else "#1b5e20"
        self.message.value = f'<span style="color:{colour}">{html.escape(text)}</span>' if text else ""

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def run(self, chain, backend: str, device: str, images: Any, coco: Any = None, masks: Any = None,
            without_targets: bool = False) -> threading.Thread | None:
        """Start measuring with the panel's settings; returns the measuring thread (None when
        the settings are refused or a measurement is already running: the app's message line
        says why). Later edits of `chain` do not change what is measured. `coco`, `masks`: the
        images' annotation files, whose targets the loader then moves too; `without_targets`:
        the app shows targets that are not files, which the report says it left out."""
        if self.running:
            self.say("an estimate is running: wait for it, or press cancel", True)
            return None
        try:
            options = dict(device=device, batch_size=self.batch_size.value,
                           image_size=parse_image_size(self.image_size.value), workers=self.workers.value,
                           runs=self.runs.value, batches=self.batches.value or None, images=images)
            if coco is not None or masks is not None:
                options.update(coco=coco, masks=masks)
            if self.compile.value:
                options["torch_compile"] = True
            chain = chain.copy()  # a validated snapshot: edits made while measuring wait for the next estimate
        except WorkbenchError as exc:
            self.say(f"estimate failed: {exc}", True)
            return None
        self._cancel.clear()
        self.bar.value, self.label.value = 0.0, "starting"
        self.cancel_button.disabled, self.button.disabled = False, True
        self.result = None  # the last figures are not this chain's: cleared while it measures
        self.report.value, self.plot.layout.display = "", "none"
        self.say(f"measuring {backend} on {options['device']}...")
        self._left_out = ("measured the images alone: the estimate reads targets from files; give the app coco= "
                          "and/or masks= to measure the loader moving them" if without_targets else "")
        self._thread = threading.Thread(target=self._measure, args=(chain, backend, options, self.target.value or None),
                                        name="workbench-estimate", daemon=True)
        self._thread.start()
        return self._thread

    def cancel(self) -> None:
        """Stop a running measurement (at its next progress report, within a batch or so)."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> Estimate | Comparison | None:
        """Block until the running measurement ends (or `timeout` seconds pass); its result."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result

    def _progress(self, fraction: float, message: str) -> None:
        if self._cancel.is_set():
            raise EstimateCancelled("the estimate was cancelled")
        self.bar.value = max(0.0, min(1.0, fraction))
        self.label.value = f"{100 * fraction:.0f}%: {html.escape(message)}"

    def _measure(self, chain, backend: str, options: dict, target: float | None) -> None:
        try:
            if self.compare.value:
                result = chain.compare_backends(progress=self._progress, **options)
            else:
                result = chain.estimate(backend=backend, progress=self._progress, **options)
            self._show(result, target)
        except EstimateCancelled:
            self.label.value = "cancelled"
            self.say("estimate cancelled; the chain is as it was", False)
        except WorkbenchError as exc:
            self.label.value = "failed"
            self.say(f"estimate failed: {exc}", True)
        except Exception as exc:  # a backend failing mid-measurement must not take the app down
            self.label.value = "failed"
            self.say(f"estimate failed ({type(exc).__name__}): {exc}", True)
        finally:
            self.cancel_button.disabled, self.button.disabled = True, False

    def _show(self, result: Estimate | Comparison, target: float | None) -> None:
        """The figures first, then the advice and the plot: a part that fails is named, and never
        takes the finished measurement with it."""
        self.result = result
        best = result.fastest if isinstance(result, Comparison) else result
        failed = []
        try:
            advice = result.advise(target)
        except Exception as exc:  # noqa: BLE001 - show the figures whatever the advice does
            advice, failed = None, [f"the advice failed ({type(exc).__name__}: {exc})"]
        self.report.value = _report_html(result, advice, self._left_out)
        try:
            figure = result.plot(target)
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png", dpi=80, bbox_inches="tight")
            plt.close(figure)
            self.plot.value = buffer.getvalue()
            self.plot.layout.display = ""
        except Exception as exc:  # noqa: BLE001
            failed.append(f"the plot failed ({type(exc).__name__}: {exc})")
        self.label.value = "done"
        text = f"estimate: {best.images_per_s:.0f} images/s ({best.label}, batch {best.batch_size})"
        if advice is not None and advice.noisy:
            text += "; the measurement was noisy: measure again before acting on its breakdown"
        self.say(text + ("; " + "; ".join(failed) if failed else ""), bool(failed))


def _report_html(result: Estimate | Comparison, advice, left_out: str = "") -> str:
    e = html.escape
    parts = [f"<p><i>{e(left_out)}</i></p>"] if left_out else []
    estimates = list(result.estimates.values()) if isinstance(result, Comparison) else [result]
    if isinstance(result, Comparison):
        rows = "".join(f"<tr><td>{e(x.label)}</td><td>{x.images_per_s:.1f}</td></tr>" for x in estimates)
        rows += "".join(f"<tr><td>{e(b)}</td><td>not measured: {e(why)}</td></tr>" for b, why in result.skipped.items())
        parts.append(f"<table><tr><th>backend</th><th>images/s</th></tr>{rows}</table>")
    for est in estimates:
        stages = "".join(f"<tr><td>{e(STAGE_LABELS[s.name])}</td><td>{s.images_per_s:.1f}</td>"
                         f"<td>{s.ms_per_batch:.2f}</td><td>{e(s.detail)}</td></tr>" for s in est.stages.values())
        steps = "".join(f"<tr><td>{s.step}. {e(s.op)}</td><td>{s.ms_per_batch:.2f}</td>"
                        f"<td>{100 * s.share:.0f}%</td></tr>" for s in est.steps)
        parts.append(
            f"<p><b>{est.images_per_s:.1f} images/s</b>: {e(est.label)}, batch {est.batch_size}, "
            f"{est.image_size[0]}x{est.image_size[1]}, {est.workers} worker(s); {e(est.spread.describe())}"
            + (f"; {e(est.memory_line)}" if est.memory_line else "") + "</p>"
            f"<table><tr><th>stage alone</th><th>images/s</th><th>ms/batch</th><th>how</th></tr>{stages}</table>"
            f"<table><tr><th>step alone</th><th>ms/batch</th><th>share</th></tr>{steps}</table>"
            + (f"<div><small>{e(est.compile_line)}</small></div>" if est.compile_line else "")
            + "".join(f"<div><small>{e(n)}</small></div>" for n in est.notes))
    if advice is not None:
        items = "".join(f"<li>{e(s)}</li>" for s in advice.suggestions)
        style = ' style="color:#8a5300"' if advice.noisy else ""
        parts.append(f"<p{style}>{e(advice.verdict)}</p><ul>{items}</ul>")
    return "".join(parts)
