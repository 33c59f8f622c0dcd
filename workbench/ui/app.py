"""`Workbench`: compose a chain with widgets, preview it live on your images, export it.

The app holds no state of its own beyond widgets: `app.chain` is a plain `Chain`, the
same object the Python API sees. After editing it from code, call `app.sync()`.
"""
from __future__ import annotations

import dataclasses
import html
import io
import threading
from pathlib import Path
from typing import Any

import ipywidgets as w
import numpy as np
from PIL import Image

from ..backends import BACKENDS
from ..backends.albumentations_preview import AlbumentationsPreview
from ..backends.dali_cache import DaliPrefixCache
from ..backends.kornia_cache import PrefixCache
from ..backends.targets import check_target_ops, move_targets
from ..chain import Chain, Step
from ..data import as_image_list, load_images, resolve_source
from ..errors import InputError, WorkbenchError
from ..examples import example_chain
from ..ops import FAMILIES, GROUPS, REGISTRY
from ..render import TARGET_KINDS, fit_tile, mix_caption, targets_of, to_display
from ..targets import Targets, annotation_sources, check_targets, load_annotated
from .controls import control_for
from .estimate_panel import EstimatePanel


def _jpeg(array: np.ndarray) -> bytes:
    """Tile bytes: JPEG encodes several times faster than PNG, and this is only a preview."""
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


class Workbench:
    """The notebook app: op palette, chain editor, live preview grid, save/load and export.

    `targets`: masks, boxes and keypoints of `images` (the dict `wb.load_annotated` returns:
    lists aligned with the images, cut to `max_images` as they are). Every preview tile then
    shows them (the originals as given, the draws as the chain moved them), with a checkbox
    per kind to hide or show it; a chain whose ops cannot move them still previews its images,
    says why, and shows no targets on the draws. `coco` (a COCO instances file) and/or `masks` (a
    folder of label-map PNGs) instead: the app loads the annotated images of the folder `images`
    and their targets (as `wb.load_annotated`; `images` None: the sample photos' own), and its
    estimate measures the loader moving them too, as `--bench --coco --masks` does. (Targets
    given as arrays are drawn, but the estimate, which reads files, measures the images alone.)

    Example:
        >>> app = Workbench(images="sample_data", max_images=1, draws=1, debounce_s=0)
        >>> _ = app.chain.add("VerticalFlip", p=1.0); app.sync()
        >>> app.inspect(image=0, draw=0)[-1]["applied"]
        True
        >>> import workbench as wb
        >>> images, targets = wb.load_annotated()
        >>> app = Workbench(images=images, targets=targets, max_images=2, draws=1, debounce_s=0)
        >>> app.results["kornia"][0].boxes[0].shape, app.show["boxes"].value
        ((2, 4), True)
    """

    def __init__(self, images: Any = None, chain: Chain | None = None, backend: str = "kornia",
                 device: str = "cpu", draws: int = 3, max_images: int = 4, cell: int = 150,
                 debounce_s: float = 0.15, targets: dict[str, Any] | Targets | None = None,
                 coco: str | Path | None = None, masks: str | Path | None = None):
        # What the estimate reads: all of the images, and the annotation files where given.
        self.annotations: dict[str, Any] = {}
        if coco is not None or masks is not None:
            if targets is not None:
                raise InputError("give the targets as arrays (targets=) or as files (coco=, masks=), not both")
            folder, coco, masks = annotation_sources(images, coco, masks)
            self.images, targets = load_annotated(folder, coco, masks, limit=max_images)
            self.source, self.annotations, skipped = resolve_source(folder), {"coco": coco, "masks": masks}, []
        else:
            self.source = resolve_source(images)
            self.images, skipped = _load(self.source, max_images)
        self.targets = _checked_targets(self.images, targets, max_images, skipped)
        self.chain = chain if chain is not None else example_chain()
        self.cell = cell
        self.debounce_s = debounce_s
        self.results: dict[str, list] = {}
        self._shown_chain: Chain | None = None  # the chain the current results ran
        self._target_error = ""  # why the current chain cannot move the targets ("" when it can)
        self._original_tiles: dict[tuple, list[bytes]] = {}  # per set of kinds shown
        self._originals: dict[tuple, list[w.Image]] = {}  # each grid's original tiles
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
        given = self.targets.kinds() if self.targets is not None else []
        self.show = {kind: w.Checkbox(value=kind in given, disabled=kind not in given, description=kind, indent=False,
                                      layout=w.Layout(width="110px"),
                                      tooltip=f"draw the {kind} on the tiles" if kind in given else f"no {kind} given")
                     for kind in TARGET_KINDS}
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
        for box in self.show.values():
            box.observe(lambda ch: self.redraw(), names="value")
        self.resample.on_click(lambda b: setattr(self.seed, "value", (self.seed.value + 1) % 2**31))
        self.save_button.on_click(lambda b: self.save())
        self.load_button.on_click(lambda b: self.load())
        self.export_button.on_click(lambda b: self.export())
        self.estimate_button.on_click(lambda b: self.estimate())

        self.widget = w.VBox([
            w.HBox([self.backend, self.device, self.compare]),
            w.HBox([self.seed, self.resample, self.draws, self.upto]),
            *([w.HBox([w.HTML("<b>Targets</b>&nbsp;", layout=w.Layout(width="70px")), *self.show.values()])]
              if self.targets is not None else []),
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

    # Steps are addressed by their index in the chain, or inside groups by a path of indices:
    # (2, 0) is the first child of the third step.
    def remove(self, path) -> None:
        self._edit(lambda steps: _siblings(steps, path).pop(_path(path)[-1]))

    def move(self, path, offset: int) -> None:
        """Move a step up (offset -1) or down (+1) among its siblings."""
        def do(steps):
            siblings, index = _siblings(steps, path), _path(path)[-1]
            target = index + offset
            if 0 <= target < len(siblings):
                siblings[index], siblings[target] = siblings[target], siblings[index]
        self._edit(do)

    def duplicate(self, path) -> None:
        def do(steps):
            siblings, index = _siblings(steps, path), _path(path)[-1]
            siblings.insert(index + 1, Step.from_dict(siblings[index].to_dict()))
        self._edit(do)

    def reset(self, path) -> None:
        """Default parameters and p (a group keeps its children)."""
        def do(steps):
            siblings, index = _siblings(steps, path), _path(path)[-1]
            step = siblings[index]
            siblings[index] = Step.create(step.op, enabled=step.enabled,
                                          steps=step.steps if step.is_group else None)
        self._edit(do)

    def group(self, path, kind: str = "OneOf") -> None:
        """Put a step into a new group (OneOf by default); move more steps into it with `indent`."""
        def do(steps):
            siblings, index = _siblings(steps, path), _path(path)[-1]
            siblings[index] = Step.create(kind, steps=[siblings[index]])
        self._edit(do)

    def ungroup(self, path) -> None:
        """Replace a group by its children, in place."""
        def do(steps):
            siblings, index = _siblings(steps, path), _path(path)[-1]
            group = siblings[index]
            if not group.is_group:
                raise WorkbenchError(f"step {_label(path)} ({group.op}) is not a group")
            siblings[index:index + 1] = group.steps
        self._edit(do)

    def indent(self, path) -> None:
        """Move a step into the group just above it (as its last child)."""
        def do(steps):
            siblings, index = _siblings(steps, path), _path(path)[-1]
            if index == 0 or not siblings[index - 1].is_group:
                raise WorkbenchError(f"step {_label(path)} has no group just above it to move into; put a step "
                                     "in a group with its 'group' button first")
            siblings[index - 1].steps.append(siblings.pop(index))
        self._edit(do)

    def outdent(self, path) -> None:
        """Move a step out of its group, to just after the group."""
        def do(steps):
            path_ = _path(path)
            if len(path_) < 2:
                raise WorkbenchError(f"step {_label(path)} is not inside a group")
            parent = _siblings(steps, path_[:-1])
            parent.insert(path_[-2] + 1, _siblings(steps, path_).pop(path_[-1]))
        self._edit(do)

    def set_kind(self, path, kind: str) -> None:
        """Turn a group into another kind (OneOf, SomeOf, Sequential), keeping its children and p."""
        def do(steps):
            siblings, index = _siblings(steps, path), _path(path)[-1]
            group = siblings[index]
            siblings[index] = Step.create(kind, p=group.p, enabled=group.enabled, steps=group.steps)
        self._edit(do)

    def _edit(self, change) -> None:
        """Apply a structural change to a copy of the chain's steps; if the result is a valid
        chain, take it and rebuild the editor, else say why and keep the chain as it was."""
        steps = [Step.from_dict(s.to_dict(), i + 1) for i, s in enumerate(self.chain.steps)]
        try:
            change(steps)
            if steps:
                Chain(seed=self.chain.seed, steps=steps).validate()
        except (WorkbenchError, IndexError) as exc:
            self.say(str(exc), error=True)
            return
        self.chain.steps[:] = steps
        self.sync()

    def _set(self, path, name: str | None, value: Any) -> None:
        """A control changed: validate the edited step; on error keep the old one and say why."""
        path = _path(path)
        top = self.chain.steps[path[0]].to_dict()
        data = top
        for k in path[1:]:
            data = data["steps"][k]
        if name in ("p", "enabled"):
            data[name] = value
        else:
            data["params"][name] = value
        try:
            self.chain.steps[path[0]] = Step.from_dict(top, path[0] + 1)
        except WorkbenchError as exc:
            self.say(str(exc), error=True)
            return
        self.say("")
        self.schedule()

    def _card(self, path, step: Step) -> w.Widget:
        path = _path(path)
        spec = step.spec
        enabled = w.Checkbox(value=step.enabled, indent=False, layout=w.Layout(width="24px"),
                             tooltip="enable / disable")
        enabled.observe(lambda ch: self._set(path, "enabled", ch["new"]), names="value")
        buttons = []
        for icon, tip, action in (("arrow-up", "move up", lambda b: self.move(path, -1)),
                                  ("arrow-down", "move down", lambda b: self.move(path, 1)),
                                  ("copy", "duplicate", lambda b: self.duplicate(path)),
                                  ("undo", "reset to defaults", lambda b: self.reset(path)),
                                  ("trash", "remove", lambda b: self.remove(path))):
            button = w.Button(icon=icon, tooltip=tip, layout=w.Layout(width="34px"))
            button.on_click(action)
            buttons.append(button)
        actions = {}
        for key, icon, tip, action in (
                ("group", "object-group", "put this step in a new group (OneOf)", lambda b: self.group(path)),
                ("indent", "indent", "move into the group just above", lambda b: self.indent(path)),
                ("outdent", "outdent", "move out of its group", lambda b: self.outdent(path)),
                *([("ungroup", "object-ungroup", "replace the group by its steps", lambda b: self.ungroup(path))]
                  if step.is_group else [])):
            button = w.Button(icon=icon, tooltip=tip, layout=w.Layout(width="34px"))
            button.on_click(action)
            actions[key] = button
        width = 180 - 16 * (len(path) - 1)
        title = w.HTML(f"<b>{_label(path)}. {html.escape(step.op)}</b>", layout=w.Layout(width=f"{width}px"))
        p = w.FloatSlider(value=step.p, min=0.0, max=1.0, step=0.05, description="p", continuous_update=False,
                          disabled=spec.always_applies, layout=w.Layout(width="340px"),
                          style={"description_width": "90px"})
        p.observe(lambda ch: self._set(path, "p", float(ch["new"])), names="value")
        controls = [control_for(param, step.params[param.name], lambda n, v: self._set(path, n, v))
                    for param in spec.params]
        rows = [w.HBox([enabled, title, *buttons]), w.HBox(list(actions.values()))]
        extra = {}
        if step.is_group:
            kind = w.Dropdown(options=list(GROUPS), value=step.op, description="group", layout=w.Layout(width="340px"),
                              style={"description_width": "90px"}, tooltip=spec.doc)
            kind.observe(lambda ch: self.set_kind(path, ch["new"]), names="value")
            children = w.VBox([self._card((*path, k), child) for k, child in enumerate(step.steps)],
                              layout=w.Layout(margin="0 0 0 16px"))
            rows += [kind, p, *controls, children]
            extra = {"kind": kind, "children": children}
        else:
            rows += [p, *controls]
        card = w.VBox(rows, layout=w.Layout(border="1px solid #ccc", padding="4px", margin="2px 0"))
        card.step_controls = {"enabled": enabled, "p": p, "buttons": buttons, "actions": actions, **extra,
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
        """The chain as previewed: cut after the step the step-through slider selects (its
        target settings kept, for the targets it moves)."""
        upto = self.upto.value or len(self.chain.steps)
        return Chain(seed=self.chain.seed, steps=list(self.chain.steps[:upto]), targets=self.chain.targets)

    def shown_kinds(self) -> tuple[str, ...]:
        """The target kinds drawn on the tiles: those given whose checkbox is ticked."""
        return tuple(kind for kind, box in self.show.items() if box.value and not box.disabled)

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
            self.results = self._moved(chain, results)
            self._shown_chain = chain
            self._draw_tiles()
            self.status.value = ""

    def _moved(self, chain: Chain, results: dict[str, list]) -> dict[str, list]:
        """The runs with the targets moved as each draw's pixels were (once per refresh and
        draw); a chain that cannot move them keeps its runs as they are and says why."""
        if self.targets is None:
            return results
        try:
            check_target_ops(chain, self.targets)
            moved = {backend: [dataclasses.replace(run, targets=move_targets(chain, run.params, self.images,
                                                                             self.targets)) for run in runs]
                     for backend, runs in results.items()}
        except (WorkbenchError, ValueError) as exc:
            self._target_error = f"targets are not shown on the draws: {exc}"
            self.say(self._target_error, error=True)
            return results
        if self._target_error and html.escape(self._target_error) in self.message.value:
            self.say("")  # the reason no longer holds
        self._target_error = ""
        return moved

    def redraw(self) -> None:
        """Redraw every tile from the last results, with the target kinds ticked now: nothing
        runs the chain again."""
        with self._lock:
            if self._shown_chain is not None:
                self._draw_tiles()

    def _draw_tiles(self) -> None:
        """Fill the tiles of every backend's grid from `self.results` and the targets shown."""
        show = self.shown_kinds()
        originals = self._original_tiles_for(show)
        grids = []
        for backend, runs in self.results.items():
            grid, tiles = self._grid_for(backend, len(runs))
            for n, image in enumerate(self._originals[(backend, len(runs))]):
                image.value = originals[n]
            for n in range(len(self.images)):
                for k, run in enumerate(runs):
                    tiles[n][k].value = _jpeg(fit_tile(to_display(self._shown_chain, run.images[n]), self.cell,
                                                       targets_of(run.targets, n), show))
                    self._captions[(backend, len(runs))][n][k].value = mix_caption(run.params[n])
            grids.append(grid)
        self.grid.children = grids

    def _original_tiles_for(self, show: tuple[str, ...]) -> list[bytes]:
        """The originals' tiles with the given targets of the kinds in `show` (each set drawn once)."""
        if show not in self._original_tiles:
            self._original_tiles[show] = [_jpeg(fit_tile(image, self.cell, targets_of(self.targets, n), show))
                                          for n, image in enumerate(self.images)]
        return self._original_tiles[show]

    def _grid_for(self, backend: str, draws: int) -> tuple[w.Widget, list[list[w.Image]]]:
        """The grid for (backend, draws), built once and then only refilled: creating
        widgets costs more than updating their bytes."""
        key = (backend, draws)
        if key not in self._grids:
            rows, tiles, captions, originals = [], [], [], []
            for n, original in enumerate(self._original_tiles_for(self.shown_kinds())):
                row_tiles = [w.Image(format="jpeg") for _ in range(draws)]
                row_captions = [w.Label(layout=w.Layout(width=f"{self.cell}px")) for _ in range(draws)]
                originals.append(w.Image(value=original, format="jpeg"))
                cells = [w.VBox([originals[-1], w.Label("original")])]
                for k, (image, caption) in enumerate(zip(row_tiles, row_captions)):
                    button = w.Button(description="params", layout=w.Layout(width=f"{self.cell}px"),
                                      tooltip=f"what image {n}, draw {k + 1} drew")
                    button.on_click(lambda b, n=n, k=k, backend=backend: self.inspect(n, k, backend))
                    cells.append(w.VBox([image, caption, button]))
                rows.append(w.HBox(cells))
                tiles.append(row_tiles)
                captions.append(row_captions)
            self._captions[key] = captions
            self._originals[key] = originals
            self._grids[key] = (w.VBox([w.HTML(f"<b>{html.escape(backend)}</b>"), *rows]), tiles)
        return self._grids[key]

    def inspect(self, image: int, draw: int, backend: str | None = None) -> list[dict]:
        """Show (and return) the per-step draws of one preview sample."""
        backend = backend or self.backend.value
        rows = self.results[backend][draw].params[image]
        cells = "".join(
            f"<tr><td>{r['step']}</td><td>{'&nbsp;' * 3 * str(r['step']).count('.')}{html.escape(r['op'])}</td>"
            f"<td>{'yes' if r['applied'] else 'no'}</td>"
            f"<td>{html.escape(', '.join(f'{k}={_short(v)}' for k, v in r.items() if k not in _NOT_DRAWN))}</td></tr>"
            for r in _flat_rows(rows))
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
            # The file box is typed text: it stays inside the folder, and the button replaces
            # its own earlier export (the path is shown after every write).
            source = self.chain.export(backend, path=name, folder=self.export_folder.value or ".", overwrite=True)
        except (WorkbenchError, OSError) as exc:
            self.say(str(exc), error=True)
            return None
        target = (Path(self.export_folder.value or ".") / name)
        self.say(f"wrote {target}; run it: python {target} --images DIR --seed {self.chain.seed} --save out.npz")
        self.code.value = _highlight(source)
        return source

    def estimate(self):
        """Start measuring the chain with the throughput panel's settings on the selected backend
        and device (or every backend, with 'compare backends') on a background thread, which it
        returns; the panel shows progress, then the plot and the advice (`self.estimates.wait()`)."""
        return self.estimates.run(self.chain, self.backend.value, self.device.value, self.source,
                                  without_targets=self.targets is not None and not self.annotations,
                                  **self.annotations)


def _load(images: Any, limit: int) -> tuple[list[np.ndarray], list[str]]:
    """Images for the preview; files that cannot be decoded are skipped and named."""
    import warnings

    if isinstance(images, (str, Path)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = load_images(images, on_error="skip")
        return loaded[:limit], [str(c.message) for c in caught if "cannot decode" in str(c.message)]
    return as_image_list(images)[:limit], []


_TARGET_KEYS = ("masks", "boxes", "box_labels", "keypoints", "keypoints_visible")


def _checked_targets(images: list[np.ndarray], targets: Any, limit: int, skipped: list[str]) -> Targets | None:
    """The app's targets (load_annotated's dict, or Targets) cut to the images it shows, checked."""
    if targets is None:
        return None
    if isinstance(targets, Targets):
        targets = {k: getattr(targets, k) for k in _TARGET_KEYS}
    if not isinstance(targets, dict):
        raise InputError(f"targets must be a dict of masks/boxes/box_labels/keypoints/keypoints_visible lists "
                         f"(as wb.load_annotated returns), got {type(targets).__name__}")
    unknown = sorted(set(map(str, targets)) - set(_TARGET_KEYS))
    if unknown:
        raise InputError(f"targets: unknown key(s) {unknown}; give {', '.join(_TARGET_KEYS)}")
    if skipped:
        raise InputError("targets cannot be matched to the images: some files could not be read ("
                         + "; ".join(skipped) + "); remove them, or load the images with wb.load_annotated")
    return check_targets(images, **{k: None if v is None else list(v)[:limit] for k, v in targets.items()})


# Row keys the inspector shows in its own columns, or not at all (a group's children get rows).
_NOT_DRAWN = ("step", "op", "enabled", "applied", "steps")


def _flat_rows(rows: list[dict]) -> list[dict]:
    """A sample's step rows with every group's children rows after it, in order."""
    out = []
    for row in rows:
        out.append(row)
        out += _flat_rows(row.get("steps", []))
    return out


def _path(path) -> tuple[int, ...]:
    """A step's address: its index in the chain, or a path of indices into groups."""
    return (int(path),) if isinstance(path, (int, np.integer)) else tuple(int(k) for k in path)


def _label(path) -> str:
    """The step number people see: 3, or 3.1 for the first child of step 3."""
    return ".".join(str(k + 1) for k in _path(path))


def _siblings(steps: list, path) -> list:
    """The list that holds the step at `path` (the chain's steps, or a group's)."""
    for k in _path(path)[:-1]:
        if not 0 <= k < len(steps) or not steps[k].is_group:
            raise IndexError(f"no group at step {k + 1}")
        steps = steps[k].steps
    return steps


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
