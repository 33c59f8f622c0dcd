"""`Workbench`: compose a chain with widgets, preview it live on your images, export it.

The app holds no state of its own beyond widgets: `app.chain` is a plain `Chain`, the
same object the Python API sees. After editing it from code, call `app.sync()`.
"""
from __future__ import annotations

import html
import io
import threading
from pathlib import Path
from typing import Any

import ipywidgets as w
import numpy as np
from PIL import Image

from ..backends import BACKENDS
from ..backends.albumentations import AlbumentationsPreview
from ..backends.dali_cache import DaliPrefixCache
from ..backends.kornia_cache import PrefixCache
from ..chain import Chain, Step
from ..data import SAMPLE_DATA, as_image_list
from ..errors import WorkbenchError
from ..examples import example_chain
from ..ops import FAMILIES, REGISTRY
from ..render import _fit, mix_caption, to_display
from .controls import control_for
from .estimate_panel import EstimatePanel


def _jpeg(array: np.ndarray) -> bytes:
    """Tile bytes: JPEG encodes several times faster than PNG, and this is only a preview."""
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


class Workbench:
    """The notebook app: op palette, chain editor, live preview grid, save/load and export.

    Example:
        >>> app = Workbench(images="sample_data", max_images=1, draws=1, debounce_s=0)
        >>> _ = app.chain.add("VerticalFlip", p=1.0); app.sync()
        >>> app.inspect(image=0, draw=0)[-1]["applied"]
        True
    """

    def __init__(self, images: Any = None, chain: Chain | None = None, backend: str = "kornia",
                 device: str = "cpu", draws: int = 3, max_images: int = 4, cell: int = 150,
                 debounce_s: float = 0.15):
        self.source = SAMPLE_DATA if images is None else images  # all of it is what the estimate decodes
        self.images, skipped = _load(self.source, max_images)
        self.chain = chain if chain is not None else example_chain()
        self.cell = cell
        self.debounce_s = debounce_s
        self.results: dict[str, list] = {}
        self._original_tiles = [_jpeg(_fit(image, cell)) for image in self.images]  # never change
        self._grids: dict[tuple, w.Widget] = {}
        # Under each draw: what a batch mixing step mixed in (partner and share), empty otherwise.
        self._captions: dict[tuple, list[list[w.Label]]] = {}
        # Previews recompute only from the edited step on (per backend).
        self._caches = {"kornia": PrefixCache(), "dali": DaliPrefixCache(), "albumentations": AlbumentationsPreview()}
        self._timer: threading.Timer | None = None
        self._syncing = False
        self._lock = threading.Lock()

        self.message = w.HTML()
        self.status = w.HTML()
        self.progress = w.IntProgress(value=0, min=0, max=1, description="preview", layout=w.Layout(width="300px"))
        self.backend = w.Dropdown(options=list(BACKENDS), value=backend, description="backend")
        self.compare = w.Dropdown(options=["none", *BACKENDS], value="none", description="compare with")
        self.device = w.Dropdown(options=["cpu", "auto", "cuda"], value=device, description="device")
        self.seed = w.BoundedIntText(value=self.chain.seed, min=0, max=2**31 - 1, description="seed")
        self.resample = w.Button(description="resample", icon="refresh", tooltip="new seed, new draws")
        self.draws = w.IntSlider(value=draws, min=1, max=6, description="draws", continuous_update=False)
        self.upto = w.IntSlider(value=0, min=0, max=0, description="after step", continuous_update=False,
                                tooltip="show the output after this step (step-through)")
        self.grid = w.VBox()
        self.inspector = w.HTML()
        self.steps_box = w.VBox()
        self.palette = self._build_palette()
        self.path = w.Text(value="chain.yaml", description="chain file")
        self.save_button = w.Button(description="save", icon="save")
        self.load_button = w.Button(description="load", icon="folder-open")
        self.export_folder = w.Text(value="exports", description="folder")
        self.export_name = w.Text(value="", placeholder="augment_<backend>.py", description="file")
        self.export_button = w.Button(description="export", icon="download", button_style="primary")
        self.estimate_button = w.Button(description="estimate", icon="tachometer",
                                        tooltip="measure the exported loader's images/s on this machine")
        self.estimates = EstimatePanel(self.say)
        self.code = w.HTML()

        for control in (self.backend, self.compare, self.device, self.draws, self.upto):
            control.observe(lambda ch: self.schedule(), names="value")
        self.seed.observe(self._on_seed, names="value")
        self.resample.on_click(lambda b: setattr(self.seed, "value", (self.seed.value + 1) % 2**31))
        self.save_button.on_click(lambda b: self.save())
        self.load_button.on_click(lambda b: self.load())
        self.export_button.on_click(lambda b: self.export())
        self.estimate_button.on_click(lambda b: self.estimate())

        self.widget = w.VBox([
            w.HBox([self.backend, self.device, self.compare]),
            w.HBox([self.seed, self.resample, self.draws, self.upto]),
            w.HBox([
                w.VBox([w.HTML("<b>Ops</b>"), self.palette], layout=w.Layout(width="230px")),
                w.VBox([w.HTML("<b>Chain</b>"), self.steps_box], layout=w.Layout(width="420px")),
                w.VBox([w.HTML("<b>Preview</b> (original, then draws; click 'params' under a draw)"),
                        self.progress, self.status, self.grid, self.inspector]),
            ]),
            self.message,
            w.HBox([self.path, self.save_button, self.load_button]),
            w.HBox([self.export_folder, self.export_name, self.export_button]),
            self.code,
            w.HTML("<b>Throughput</b> (the exported training loader, measured here: decode, copy, augment)"),
            w.HBox([self.estimate_button]), self.estimates.widget,
        ])
        self.sync()
        if skipped:
            self.say("skipped unreadable files: " + "; ".join(skipped), error=True)

    # ----- display ------------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def say(self, text: str, error: bool = False) -> None:
        """Show a message inside the app (errors in red); never raises."""
        colour = "#b00020" if error else "#1b5e20"
        self.message.value = f'<span style="color:{colour}">{html.escape(text)}</span>' if text else ""

    # ----- palette and chain editor ------------------------------------------------------
    def _build_palette(self) -> w.Accordion:
        sections = []
        for family in FAMILIES:
            buttons = []
            for name, spec in REGISTRY.items():
                if spec.family == family:
                    button = w.Button(description=name, tooltip=spec.doc, layout=w.Layout(width="200px"))
                    button.on_click(lambda b, op=name: self.add(op))
                    buttons.append(button)
            sections.append(w.VBox(buttons))
        palette = w.Accordion(children=sections)
        for i, family in enumerate(FAMILIES):
            palette.set_title(i, family)
        return palette

    def add(self, op: str) -> None:
        """Append `op` with its default parameters."""
        self._edit(lambda steps: steps.append(Step.create(op)))

    def remove(self, index: int) -> None:
        self._edit(lambda steps: steps.pop(index))

    def move(self, index: int, offset: int) -> None:
        def do(steps):
            target = index + offset
            if 0 <= target < len(steps):
                steps[index], steps[target] = steps[target], steps[index]
        self._edit(do)

    def duplicate(self, index: int) -> None:
        self._edit(lambda steps: steps.insert(index + 1, Step.from_dict(steps[index].to_dict())))

    def reset(self, index: int) -> None:
        self._edit(lambda steps: steps.__setitem__(index, Step.create(steps[index].op, enabled=steps[index].enabled)))

    def _edit(self, change) -> None:
        """Apply a structural change to the chain's steps, then rebuild the editor."""
        steps = list(self.chain.steps)
        try:
            change(steps)
        except (WorkbenchError, IndexError) as exc:
            self.say(str(exc), error=True)
            return
        self.chain.steps[:] = steps
        self.sync()

    def _set(self, index: int, name: str | None, value: Any) -> None:
        """A control changed: validate the edited step; on error keep the old one and say why."""
        step = self.chain.steps[index]
        data = step.to_dict()
        if name == "p":
            data["p"] = value
        elif name == "enabled":
            data["enabled"] = value
        else:
            data["params"][name] = value
        try:
            self.chain.steps[index] = Step.from_dict(data, index + 1)
        except WorkbenchError as exc:
            self.say(str(exc), error=True)
            return
        self.say("")
        self.schedule()

    def _card(self, index: int, step: Step) -> w.Widget:
        spec = step.spec
        enabled = w.Checkbox(value=step.enabled, indent=False, layout=w.Layout(width="24px"),
                             tooltip="enable / disable")
        enabled.observe(lambda ch: self._set(index, "enabled", ch["new"]), names="value")
        buttons = []
        for icon, tip, action in (("arrow-up", "move up", lambda b: self.move(index, -1)),
                                  ("arrow-down", "move down", lambda b: self.move(index, 1)),
                                  ("copy", "duplicate", lambda b: self.duplicate(index)),
                                  ("undo", "reset to defaults", lambda b: self.reset(index)),
                                  ("trash", "remove", lambda b: self.remove(index))):
            button = w.Button(icon=icon, tooltip=tip, layout=w.Layout(width="34px"))
            button.on_click(action)
            buttons.append(button)
        title = w.HTML(f"<b>{index + 1}. {html.escape(step.op)}</b>", layout=w.Layout(width="180px"))
        p = w.FloatSlider(value=step.p, min=0.0, max=1.0, step=0.05, description="p", continuous_update=False,
                          disabled=spec.always_applies, layout=w.Layout(width="340px"),
                          style={"description_width": "90px"})
        p.observe(lambda ch: self._set(index, "p", float(ch["new"])), names="value")
        controls = [control_for(param, step.params[param.name], lambda n, v: self._set(index, n, v))
                    for param in spec.params]
        card = w.VBox([w.HBox([enabled, title, *buttons]), p, *controls],
                      layout=w.Layout(border="1px solid #ccc", padding="4px", margin="2px 0"))
        card.step_controls = {"enabled": enabled, "p": p, "buttons": buttons,
                              **{param.name: c for param, c in zip(spec.params, controls)}}
        return card

    def sync(self) -> None:
        """Rebuild the editor from `self.chain` (call after editing the chain from code), then preview."""
        self._syncing = True
        try:
            self.steps_box.children = [self._card(i, s) for i, s in enumerate(self.chain.steps)]
            count = len(self.chain.steps)
            at_end = self.upto.value == 0 or self.upto.value >= self.upto.max
            self.upto.max = max(count, 1)
            if at_end or self.upto.value > count:
                self.upto.value = count  # a step-through at the end follows new steps
            if self.seed.value != self.chain.seed:
                self.seed.value = self.chain.seed
        finally:
            self._syncing = False
        self.refresh()

    def _on_seed(self, change) -> None:
        self.chain.seed = int(change["new"])
        self.schedule()

    # ----- preview -----------------------------------------------------------------------
    def schedule(self) -> None:
        """Refresh after `debounce_s` of quiet (immediately when it is 0)."""
        if self._syncing:  # sync() refreshes once at its end
            return
        if self.debounce_s <= 0:
            self.refresh()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(self.debounce_s, self.refresh)
        self._timer.start()

    def preview_chain(self) -> Chain:
        """The chain as previewed: cut after the step the step-through slider selects."""
        upto = self.upto.value or len(self.chain.steps)
        return Chain(seed=self.chain.seed, steps=list(self.chain.steps[:upto]))

    def refresh(self) -> None:
        """Recompute the preview; a failing backend leaves a message and the last grid."""
        with self._lock:
            chain = self.preview_chain()
            backends = [self.backend.value] + ([self.compare.value] if self.compare.value not in
                                               ("none", self.backend.value) else [])
            self.status.value = "<i>computing…</i>"
            results = {}
            try:
                if not any(s.enabled for s in chain.steps):
                    raise WorkbenchError("no enabled step to preview: add an op from the palette or enable one")
                seeds = [(chain.seed + k) % 2**31 for k in range(self.draws.value)]
                self.progress.max, self.progress.value = len(backends) * len(seeds), 0
                for backend in backends:
                    results[backend] = []
                    for seed in seeds:
                        results[backend].append(self._caches[backend].run(chain, self.images, self.device.value, seed))
                        self.progress.value += 1
            except (WorkbenchError, ValueError) as exc:
                self.status.value = ""
                self.say(str(exc), error=True)
                return
            self.results = results
            grids = []
            for backend, runs in results.items():
                grid, tiles = self._grid_for(backend, len(runs))
                for n in range(len(self.images)):
                    for k, run in enumerate(runs):
                        tiles[n][k].value = _jpeg(_fit(to_display(chain, run.images[n]), self.cell))
                        self._captions[(backend, len(runs))][n][k].value = mix_caption(run.params[n])
                grids.append(grid)
            self.grid.children = grids
            self.status.value = ""

    def _grid_for(self, backend: str, draws: int) -> tuple[w.Widget, list[list[w.Image]]]:
        """The grid for (backend, draws), built once and then only refilled: creating
        widgets costs more than updating their bytes."""
        key = (backend, draws)
        if key not in self._grids:
            rows, tiles, captions = [], [], []
            for n, original in enumerate(self._original_tiles):
                row_tiles = [w.Image(format="jpeg") for _ in range(draws)]
                row_captions = [w.Label(layout=w.Layout(width=f"{self.cell}px")) for _ in range(draws)]
                cells = [w.VBox([w.Image(value=original, format="jpeg"), w.Label("original")])]
                for k, (image, caption) in enumerate(zip(row_tiles, row_captions)):
                    button = w.Button(description="params", layout=w.Layout(width=f"{self.cell}px"),
                                      tooltip=f"what image {n}, draw {k + 1} drew")
                    button.on_click(lambda b, n=n, k=k, backend=backend: self.inspect(n, k, backend))
                    cells.append(w.VBox([image, caption, button]))
                rows.append(w.HBox(cells))
                tiles.append(row_tiles)
                captions.append(row_captions)
            self._captions[key] = captions
            self._grids[key] = (w.VBox([w.HTML(f"<b>{html.escape(backend)}</b>"), *rows]), tiles)
        return self._grids[key]

    def inspect(self, image: int, draw: int, backend: str | None = None) -> list[dict]:
        """Show (and return) the per-step draws of one preview sample."""
        backend = backend or self.backend.value
        rows = self.results[backend][draw].params[image]
        cells = "".join(
            f"<tr><td>{r['step']}</td><td>{html.escape(r['op'])}</td><td>{'yes' if r['applied'] else 'no'}</td>"
            f"<td>{html.escape(', '.join(f'{k}={_short(v)}' for k, v in r.items() if k not in ('step', 'op', 'enabled', 'applied')))}</td></tr>"
            for r in rows)
        self.inspector.value = (f"<b>image {image}, draw {draw + 1} ({html.escape(backend)}, seed "
                                f"{self.results[backend][draw].seed})</b><table><tr><th>step</th><th>op</th>"
                                f"<th>applied</th><th>drawn</th></tr>{cells}</table>")
        return rows

    # ----- files -------------------------------------------------------------------------
    def save(self) -> None:
        try:
            path = self.chain.save(self.path.value)
        except (WorkbenchError, OSError) as exc:
            self.say(str(exc), error=True)
            return
        self.say(f"saved the chain to {path}")

    def load(self) -> None:
        """Replace the chain's contents with the file's (same object: code keeps its reference)."""
        try:
            loaded = Chain.load(self.path.value)
        except WorkbenchError as exc:
            self.say(str(exc), error=True)
            return
        self.chain.seed, self.chain.steps[:] = loaded.seed, loaded.steps
        self.say(f"loaded {self.path.value}")
        self.sync()

    def export(self) -> str | None:
        """Write the chain for the selected backend inside the folder; show the code."""
        backend = self.backend.value
        name = self.export_name.value.strip() or f"augment_{backend}.py"
        try:
            source = self.chain.export(backend, path=name, folder=self.export_folder.value or ".")
        except (WorkbenchError, OSError) as exc:
            self.say(str(exc), error=True)
            return None
        target = (Path(self.export_folder.value or ".") / name)
        self.say(f"wrote {target}; run it: python {target} --images DIR --seed {self.chain.seed} --save out.npz")
        self.code.value = _highlight(source)
        return source

    def estimate(self):
        """Measure the chain with the throughput panel's settings on the selected backend and
        device (or every backend, with 'compare backends'); shows the plot and the advice."""
        return self.estimates.run(self.chain, self.backend.value, self.device.value, self.source)


def _load(images: Any, limit: int) -> tuple[list[np.ndarray], list[str]]:
    """Images for the preview; files that cannot be decoded are skipped and named."""
    import warnings

    if isinstance(images, (str, Path)):
        from ..data import load_images

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = load_images(images, on_error="skip")
        return loaded[:limit], [str(c.message) for c in caught if "cannot decode" in str(c.message)]
    return as_image_list(images)[:limit], []


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return str(value)


def _highlight(source: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    formatter = HtmlFormatter(noclasses=True, style="friendly")
    return (f'<div style="max-height:420px;overflow:auto;font-size:12px">'
            f"{highlight(source, PythonLexer(), formatter)}</div>")
