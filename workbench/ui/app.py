"""`Workbench`: compose a chain with widgets, preview it live on your images, export it.

The app holds no state of its own beyond widgets and the edit history: `app.chain` is a plain
`Chain`, the same object the Python API sees. After editing it from code, call `app.sync()`.
"""
from __future__ import annotations

import dataclasses
import html
import io
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import ipywidgets as w
import numpy as np
from PIL import Image

from ..backends import BACKENDS, check_memory
from ..backends.albumentations_preview import AlbumentationsPreview
from ..backends.dali_cache import DaliPrefixCache
from ..backends.kornia_cache import PrefixCache
from ..backends.targets import check_target_ops, move_targets
from ..chain import Chain, Step
from ..data import as_image_list, load_images, resolve_source
from ..errors import InputError, WorkbenchError
from ..examples import example_chain
from ..ops import FAMILIES, REGISTRY, why_not_in_group
from ..order import insertion_point, order_warnings
from ..render import TARGET_KINDS, fit_tile, mix_caption, size_caption, targets_of, to_display
from ..targets import Targets, annotation_sources, check_targets, load_annotated
from .cards import label, step_card
from .estimate_panel import EstimatePanel
from .export_panel import ExportPanel
from .history import History
from .preview import PreviewGrid, draw_differences, inspector_table
from .style import style

MAX_DRAWS = 8
# A refresh shows its progress bar only past this: a quick one sends the page its tiles and nothing else.
SLOW_S = 0.3


def _jpeg(array: np.ndarray) -> bytes:
    """Tile bytes: JPEG encodes several times faster than PNG, and this is only a preview."""
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


class Workbench:
    """The notebook app: op palette, chain editor, live preview grid, save/load and export.

    New ops go after the selected step (click a step's title to select it), else before Normalize
    and batch mixing; a colour op placed after Normalize is named with the fix. Every edit can be
    undone and redone. The preview recomputes at once when a control changes, on a background
    thread, from the edited step on; changes that arrive while it computes are taken together
    (`debounce_s=0`: each change recomputes before the call returns, for scripts and tests; a
    positive value waits for that much quiet first). `app.wait()` waits for the preview.

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
        >>> app.add("VerticalFlip"); [s.op for s in app.chain.steps][-2:]  # before Normalize
        ['VerticalFlip', 'Normalize']
        >>> app.chain.steps[-2].p = 1.0; app.sync()
        >>> app.inspect(image=0, draw=0)[-2]["applied"]
        True
        >>> app.undo(); [s.op for s in app.chain.steps][-2:]
        ['Brightness', 'Normalize']
        >>> import workbench as wb
        >>> images, targets = wb.load_annotated()
        >>> app = Workbench(images=images, targets=targets, max_images=2, draws=1, debounce_s=0)
        >>> app.results["kornia"][0].boxes[0].shape, app.show["boxes"].value
        ((2, 4), True)
    """

    def __init__(self, images: Any = None, chain: Chain | None = None, backend: str = "kornia",
                 device: str = "cpu", draws: int = 3, max_images: int = 4, cell: int = 150,
                 debounce_s: float | None = None, targets: dict[str, Any] | Targets | None = None,
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
        self.selected: tuple[int, ...] | None = None
        self.picked: tuple[int, int, str] | None = None  # the tile whose draws are shown (image, draw, backend)
        self.history = History()
        self._shown_chain: Chain | None = None  # the chain the current results ran
        self._target_error = ""  # why the current chain cannot move the targets ("" when it can)
        self._original_tiles: dict[tuple, list[bytes]] = {}  # per set of kinds shown
        self._cards: list[tuple[tuple, w.VBox]] = []  # (what a card shows, its widgets), reused when unchanged
        # Previews recompute only from the edited step on (per backend).
        self._caches = {"kornia": PrefixCache(), "dali": DaliPrefixCache(), "albumentations": AlbumentationsPreview()}
        self._syncing = False
        self._lock = threading.Lock()  # one refresh at a time
        self._pending = threading.Condition()  # guards _dirty, _running, _last_change
        self._dirty = self._running = False
        self._last_change = 0.0
        self.refreshes = 0  # previews computed (the tests and benchmarks count them)

        self.message = w.HTML()
        self.message.add_class("wb-message")
        self.notice = w.HTML()  # what the chain's order does wrong (a colour op after Normalize)
        self.notice.add_class("wb-notice")
        self.preview_error = w.HTML()
        self.preview_error.add_class("wb-preview-error")
        self.status = w.HTML(layout=w.Layout(height="20px"))
        self.progress = w.IntProgress(value=0, min=0, max=1, layout=w.Layout(width="120px", visibility="hidden"))
        self.backend = w.Dropdown(options=list(BACKENDS), value=backend, description="backend",
                                  layout=w.Layout(width="210px"))
        self.compare = w.Dropdown(options=["none", *BACKENDS], value="none", description="beside it",
                                  layout=w.Layout(width="210px"),
                                  tooltip="a second backend, tile by tile beside the first")
        self.device = w.Dropdown(options=["cpu", "auto", "cuda"], value=device, description="device",
                                 layout=w.Layout(width="160px"))
        self.seed = w.BoundedIntText(value=self.chain.seed, min=0, max=2**31 - 1, description="seed",
                                     layout=w.Layout(width="190px"))
        self.resample = w.Button(description="resample", icon="refresh", tooltip="new seed, new draws",
                                 layout=w.Layout(width="auto"))
        self.draws = w.IntSlider(value=draws, min=1, max=MAX_DRAWS, description="draws", continuous_update=False,
                                 layout=w.Layout(width="230px"))
        self.upto = w.IntSlider(value=0, min=0, max=0, description="after step", continuous_update=False,
                                layout=w.Layout(width="260px"),
                                tooltip="show the output after this step (step-through)")
        self.undo_button = w.Button(description="undo", icon="undo", disabled=True, layout=w.Layout(width="auto"),
                                    tooltip="undo the last change to the chain")
        self.redo_button = w.Button(description="redo", icon="repeat", disabled=True, layout=w.Layout(width="auto"),
                                    tooltip="redo what was undone")
        given = self.targets.kinds() if self.targets is not None else []
        self.show = {kind: w.Checkbox(value=kind in given, disabled=kind not in given, description=kind, indent=False,
                                      layout=w.Layout(width="110px"),
                                      tooltip=f"draw the {kind} on the tiles" if kind in given else f"no {kind} given")
                     for kind in TARGET_KINDS}
        self.preview = PreviewGrid(cell, self.inspect_tile)
        self.grid = self.preview.widget
        self.inspector = w.HTML()  # the draws of the tile last clicked, as plain text for code (shown under its row)
        self.steps_box = w.VBox(layout=w.Layout(width="100%"))
        self.palette = self._build_palette()
        self.path = w.Text(value="chain.yaml", description="chain file", layout=w.Layout(width="300px"))
        self.save_button = w.Button(description="save", icon="save", layout=w.Layout(width="auto"))
        self.load_button = w.Button(description="load", icon="folder-open", layout=w.Layout(width="auto"))
        self.exports = ExportPanel(lambda replace=False: self.export(replace),
                                   annotated=any(v is not None for v in self.annotations.values()))
        self.export_folder, self.export_name, self.export_button = (self.exports.folder, self.exports.name,
                                                                    self.exports.button)
        self.code = self.exports.code
        self.estimates = EstimatePanel(lambda: self.estimate())
        self.estimate_button = self.estimates.button

        for control in (self.backend, self.compare, self.device, self.draws, self.upto):
            control.observe(lambda ch: self.schedule(), names="value")
        self.seed.observe(self._on_seed, names="value")
        for box in self.show.values():
            box.observe(lambda ch: self.redraw(), names="value")
        self.resample.on_click(lambda b: setattr(self.seed, "value", (self.seed.value + 1) % 2**31))
        self.undo_button.on_click(lambda b: self.undo())
        self.redo_button.on_click(lambda b: self.redo())
        self.save_button.on_click(lambda b: self.save())
        self.load_button.on_click(lambda b: self.load())

        left = w.VBox([w.HTML("<b>Add an op</b> (after the selected step, else before Normalize)"), self.palette,
                       w.HTML("<b>Chain</b>"), self.steps_box], layout=w.Layout(width="400px", flex="0 0 400px"))
        left.add_class("wb-left")
        right = w.VBox([w.HBox([w.HTML("<b>Preview</b>", layout=w.Layout(width="70px")), self.progress, self.status],
                               layout=w.Layout(align_items="center")),
                        self.preview_error, self.grid], layout=w.Layout(flex="1 1 0%", min_width="0"))
        right.add_class("wb-right")
        self.widget = w.VBox([
            style(),
            w.HBox([self.backend, self.device, self.compare, self.undo_button, self.redo_button],
                   layout=w.Layout(flex_flow="row wrap")),
            w.HBox([self.seed, self.resample, self.draws, self.upto], layout=w.Layout(flex_flow="row wrap")),
            *([w.HBox([w.HTML("<b>Targets</b>&nbsp;", layout=w.Layout(width="70px")), *self.show.values()])]
              if self.targets is not None else []),
            self.message, self.notice,
            w.HBox([left, right], layout=w.Layout(width="100%", align_items="flex-start")),
            w.HBox([self.path, self.save_button, self.load_button]),
            w.HTML("<b>Export</b> (a runnable program, or the chain alone as a snippet to paste; the code is shown "
                   "below)"), self.exports.widget,
            w.HTML("<b>Throughput</b> (the exported training loader, measured here: decode, copy, augment)"),
            self.estimates.widget,
        ], layout=w.Layout(width="100%"))
        self.widget.add_class("wb-app")
        self.sync(now=True)
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
                    button = w.Button(description=name, tooltip=spec.doc, layout=w.Layout(width="48%", margin="1px"))
                    button.on_click(lambda b, op=name: self.add(op))
                    buttons.append(button)
            sections.append(w.HBox(buttons, layout=w.Layout(flex_flow="row wrap", width="100%")))
        palette = w.Accordion(children=sections, layout=w.Layout(width="100%"))
        for i, family in enumerate(FAMILIES):
            palette.set_title(i, family)
        palette.add_class("wb-palette")
        return palette

    def select(self, path) -> None:
        """Select a step (new ops are added after it); None clears the selection. (Clicking a
        step's title selects it, and clicking it again clears the selection.)"""
        self.selected = None if path is None else _path(path)
        self.sync(refresh=False)

    def add(self, op: str) -> None:
        """Add `op` with its default parameters after the selected step, or, with none selected,
        before Normalize and batch mixing; the new step becomes the selected one."""
        where: list[tuple[int, ...]] = []

        def do(steps):
            new = Step.create(op)
            path = self.selected
            if path is not None and len(path) > 1 and why_not_in_group(new.spec):
                path = path[:1]  # an op that cannot sit in a group goes after the group
            if path is not None and _exists(steps, path):
                siblings = _siblings(steps, path)
                siblings.insert(path[-1] + 1, new)
                where.append((*path[:-1], path[-1] + 1))
                if len(path) > 1:  # a weighted group gives its new child a weight of 1
                    parent = _siblings(steps, path[:-1])[path[-2]]
                    if parent.params.get("weights"):
                        parent.params["weights"].insert(path[-1] + 1, 1.0)
            else:
                index = insertion_point(steps, op)
                steps.insert(index, new)
                where.append((index,))
        if self._edit(do):
            self.selected = where[0]
            self.sync()

    def remove(self, path) -> None:
        path = _path(path)
        if self._edit(lambda steps: _siblings(steps, path).pop(path[-1])):
            if self.selected is not None and self.selected[:len(path)] == path:
                self.selected = None
            self.sync()

    def move(self, path, offset: int) -> None:
        """Move a step up (offset -1) or down (+1) among its siblings."""
        path = _path(path)
        moved = []

        def do(steps):
            siblings, index = _siblings(steps, path), path[-1]
            target = index + offset
            if 0 <= target < len(siblings):
                siblings[index], siblings[target] = siblings[target], siblings[index]
                moved.append((*path[:-1], target))
        if self._edit(do):
            if moved and self.selected == path:
                self.selected = moved[0]
            self.sync()

    def duplicate(self, path) -> None:
        path = _path(path)

        def do(steps):
            siblings, index = _siblings(steps, path), path[-1]
            siblings.insert(index + 1, Step.from_dict(siblings[index].to_dict()))
        if self._edit(do):
            self.sync()

    def reset(self, path) -> None:
        """Default parameters and p (a group keeps its children)."""
        path = _path(path)

        def do(steps):
            siblings, index = _siblings(steps, path), path[-1]
            step = siblings[index]
            siblings[index] = Step.create(step.op, enabled=step.enabled, steps=step.steps if step.is_group else None)
        if self._edit(do):
            self.sync()

    def group(self, path, kind: str = "OneOf") -> None:
        """Put a step into a new group (OneOf by default); move more steps into it with `indent`."""
        path = _path(path)

        def do(steps):
            siblings, index = _siblings(steps, path), path[-1]
            siblings[index] = Step.create(kind, steps=[siblings[index]])
        if self._edit(do):
            self.sync()

    def ungroup(self, path) -> None:
        """Replace a group by its children, in place."""
        path = _path(path)

        def do(steps):
            siblings, index = _siblings(steps, path), path[-1]
            group = siblings[index]
            if not group.is_group:
                raise WorkbenchError(f"step {label(path)} ({group.op}) is not a group")
            siblings[index:index + 1] = group.steps
        if self._edit(do):
            self.sync()

    def indent(self, path) -> None:
        """Move a step into the group just above it (as its last child)."""
        path = _path(path)

        def do(steps):
            siblings, index = _siblings(steps, path), path[-1]
            if index == 0 or not siblings[index - 1].is_group:
                raise WorkbenchError(f"step {label(path)} has no group just above it to move into; put a step "
                                     "in a group with its 'group' button first")
            siblings[index - 1].steps.append(siblings.pop(index))
        if self._edit(do):
            self.selected = None
            self.sync()

    def outdent(self, path) -> None:
        """Move a step out of its group, to just after the group."""
        path = _path(path)

        def do(steps):
            if len(path) < 2:
                raise WorkbenchError(f"step {label(path)} is not inside a group")
            parent = _siblings(steps, path[:-1])
            parent.insert(path[-2] + 1, _siblings(steps, path).pop(path[-1]))
        if self._edit(do):
            self.selected = None
            self.sync()

    def set_kind(self, path, kind: str) -> None:
        """Turn a group into another kind (OneOf, SomeOf, Sequential), keeping its children and p."""
        path = _path(path)

        def do(steps):
            siblings, index = _siblings(steps, path), path[-1]
            group = siblings[index]
            siblings[index] = Step.create(kind, p=group.p, enabled=group.enabled, steps=group.steps)
        if self._edit(do):
            self.sync()

    def undo(self) -> None:
        """Go back to the chain before the last edit (steps, parameters, seed)."""
        self._restore(self.history.undo(self.chain.to_dict()), "nothing to undo")

    def redo(self) -> None:
        self._restore(self.history.redo(self.chain.to_dict()), "nothing to redo")

    def _restore(self, snapshot: dict | None, none: str) -> None:
        if snapshot is None:
            self.say(none)
            return
        restored = Chain.from_dict(snapshot)
        self.chain.seed, self.chain.steps[:] = restored.seed, restored.steps
        # The selected place may now hold another step (undoing an add leaves Normalize where the new
        # step was, and the next op would go after Normalize): the selection goes.
        self.selected = None
        self.say("")
        self.sync()

    def _edit(self, change) -> bool:
        """Apply a structural change to a copy of the chain's steps; if the result is a valid
        chain, take it (the caller then syncs), else say why and keep the chain as it was."""
        before = self.chain.to_dict()
        steps = [Step.from_dict(s.to_dict(), i + 1) for i, s in enumerate(self.chain.steps)]
        try:
            change(steps)
            if steps:
                Chain(seed=self.chain.seed, steps=steps).validate()
        except (WorkbenchError, IndexError) as exc:
            self.say(str(exc), error=True)
            return False
        self.chain.steps[:] = steps
        self.history.record(before)
        self.say("")
        return True

    def set_value(self, path, name: str | None, value: Any, shown: bool = False) -> bool:
        """A control changed: validate the edited step; on error keep the old one, say why and
        return False. `shown`: the new value is what the step's card shows already (the card's
        own control changed), so the card is kept as it is; else the next sync rebuilds it."""
        path = _path(path)
        before = self.chain.to_dict()
        top = self.chain.steps[path[0]].to_dict()
        data = top
        for k in path[1:]:
            data = data["steps"][k]
        if name in ("p", "enabled"):
            data[name] = value
        else:
            data["params"][name] = value
        try:
            step = Step.from_dict(top, path[0] + 1)
        except WorkbenchError as exc:
            self.say(str(exc), error=True)
            return False
        self.chain.steps[path[0]] = step
        if shown:
            self._cards = [(self._card_key(path[0]), card) if k == path[0] else (key, card)
                           for k, (key, card) in enumerate(self._cards)]
        if self.chain.to_dict() != before:
            self.history.record(before)
        self._update_history_buttons()
        self.say("")
        self._update_notice()
        self.schedule()
        return True

    _set = set_value

    def sync(self, now: bool = False, refresh: bool = True) -> None:
        """Rebuild the editor from `self.chain` (call after editing the chain from code), then
        preview (at once with `now`, else as `schedule` does)."""
        self._syncing = True
        try:
            count = len(self.chain.steps)
            at_end = self.upto.value == 0 or self.upto.value >= self.upto.max
            self.upto.max = max(count, 1)
            if at_end or self.upto.value > count:
                self.upto.value = count  # a step-through at the end follows new steps
            if self.seed.value != self.chain.seed:
                self.seed.value = self.chain.seed
        finally:
            self._syncing = False
        if refresh and not now:
            self.schedule()  # the preview computes on its thread while the cards are built here
        self._syncing = True
        try:
            self.steps_box.children = self._step_cards()
        finally:
            self._syncing = False
        self._update_history_buttons()
        self._update_notice()
        if refresh and now:
            self.refresh()

    def _step_cards(self) -> list[w.Widget]:
        """A card per step, reusing the widgets of a card whose step and neighbour above are
        unchanged, renumbered and its selection mark updated (a step added above it, one removed)."""
        kept: dict[tuple, list[w.VBox]] = {}
        for key, card in self._cards:
            kept.setdefault(key, []).append(card)
        cards, used = [], []
        for index, step in enumerate(self.chain.steps):
            key = self._card_key(index)
            if kept.get(key):
                card = kept[key].pop(0)
                card.renumber((index,), self.selected)
            else:
                card = step_card(self, (index,), step, self.chain.steps, self.selected)
            used.append((key, card))
            cards.append(card)
        self._cards = used
        return cards

    def _card_key(self, index: int) -> tuple:
        """What the card of step `index` shows: one card fits another place with the same key."""
        return repr(self.chain.steps[index].to_dict()), index > 0 and self.chain.steps[index - 1].is_group

    def _update_history_buttons(self) -> None:
        self.undo_button.disabled = not self.history.can_undo
        self.redo_button.disabled = not self.history.can_redo

    def _update_notice(self) -> None:
        found = order_warnings(self.chain.steps)
        self.notice.value = ("" if not found else '<span style="color:#8a5300">&#9888; '
                             + "<br>&#9888; ".join(html.escape(text) for text in found) + "</span>")

    def _on_seed(self, change) -> None:
        if self._syncing:
            return
        self.history.record(self.chain.to_dict())
        self.chain.seed = int(change["new"])
        self._update_history_buttons()
        self.schedule()

    # ----- preview -----------------------------------------------------------------------
    def schedule(self) -> None:
        """Recompute the preview: at once on a background thread, changes that arrive meanwhile
        taken together in one more run (`debounce_s` > 0: after that much quiet; 0: right here)."""
        if self._syncing:  # sync() refreshes once at its end
            return
        if self.debounce_s == 0:
            self.refresh()
            return
        with self._pending:
            self._dirty, self._last_change = True, time.monotonic()
            if self._running:
                return
            self._running = True
        threading.Thread(target=self._work, name="workbench-preview", daemon=True).start()

    def _work(self) -> None:
        while True:
            if self.debounce_s:
                while (quiet := time.monotonic() - self._last_change) < self.debounce_s:
                    time.sleep(self.debounce_s - quiet)
            with self._pending:
                if not self._dirty:
                    self._running = False
                    self._pending.notify_all()
                    return
                self._dirty = False
            try:
                self.refresh()
            except Exception as exc:  # noqa: BLE001 - a background thread must say what went wrong
                self._show_error(f"the preview failed ({type(exc).__name__}): {exc}")

    def wait(self, timeout: float | None = 60) -> bool:
        """Wait until the preview has caught up with every change; False if `timeout` ran out."""
        with self._pending:
            return self._pending.wait_for(lambda: not self._running, timeout)

    def preview_chain(self) -> Chain:
        """The chain as previewed: cut after the step the step-through slider selects (its
        target settings kept, for the targets it moves)."""
        upto = self.upto.value or len(self.chain.steps)
        return Chain(seed=self.chain.seed, steps=list(self.chain.steps[:upto]), targets=self.chain.targets)

    def shown_kinds(self) -> tuple[str, ...]:
        """The target kinds drawn on the tiles: those given whose checkbox is ticked."""
        return tuple(kind for kind, box in self.show.items() if box.value and not box.disabled)

    def backends_shown(self) -> list[str]:
        return [self.backend.value] + ([self.compare.value] if self.compare.value not in
                                       ("none", self.backend.value) else [])

    def refresh(self) -> None:
        """Recompute the preview, then send each image's row of draws as one strip (one message
        a row). A chain that cannot run leaves the error where the preview is, the last grid
        dimmed under it, and the chain as it is. The progress bar shows only when a refresh takes
        longer than SLOW_S."""
        with self._lock:
            chain = self.preview_chain()
            backends = self.backends_shown()
            slow = threading.Event()
            timer = threading.Timer(SLOW_S, self._busy, args=(slow, True))
            timer.daemon = True
            timer.start()
            results, done, show = {}, 0, self.shown_kinds()
            try:
                if not any(s.enabled for s in chain.steps):
                    raise WorkbenchError("no enabled step to preview: add an op from the palette or enable one")
                seeds = [(chain.seed + k) % 2**31 for k in range(self.draws.value)]
                self.progress.max = len(backends) * len(seeds)
                mover = self._target_mover(chain)
                self.preview.layout(len(self.images), len(seeds), backends)
                for backend in backends:
                    device = "cpu" if backend == "albumentations" else self.device.value
                    check_memory(chain, self.images, backend, _device(device), kept_states=len(seeds),
                                 what="images in the preview (max_images) or draws")
                    results[backend] = [mover(run) for run in self._caches[backend].run_draws(
                        chain, self.images, self.device.value, seeds,
                        boxes=None if self.targets is None else self.targets.boxes)]
                    done += len(seeds)
                    if slow.is_set():
                        self.progress.value = done
            except (WorkbenchError, ValueError) as exc:
                self._show_error(str(exc))
                return
            finally:
                timer.cancel()
                self._busy(slow, False)
            self.progress.value = done
            self.results, self._shown_chain = results, chain
            # Captions first (small messages): they are in the page when the new images are.
            if len(backends) == 2:
                self._mark_differences(*backends)
            else:
                self.preview.summary.value = ""
                for k, run in enumerate(results[backends[0]]):
                    self.preview.fill_captions(backends[0], k, [
                        (_caption(f"draw {k + 1}", rows, size_caption(chain, image)), "")
                        for rows, image in zip(run.params, run.images)])
            self._send_rows(chain, show)
            self.preview.fill_originals(self._original_tiles_for(show))
            self._show_error("")
            self._inspect_again()
            self.refreshes += 1
        # After the images (a few ms, off the preview's path): what each export option adds to the file.
        try:
            self.exports.costs(Chain.from_dict(self.chain.to_dict()), self.backend.value)
        except WorkbenchError:
            pass  # a chain this backend cannot export: the export button says why

    def _busy(self, slow: threading.Event, busy: bool) -> None:
        """Show (or hide) the progress bar and 'computing…' of a refresh found slow."""
        if busy:
            slow.set()
            self.status.value = "<i>computing…</i>"
            self.progress.layout.visibility = "visible"
        elif slow.is_set():
            self.status.value = ""
            self.progress.layout.visibility = "hidden"

    def _show_error(self, text: str) -> None:
        self.preview_error.value = (f'<div class="wb-error-box">{html.escape(text)}</div>' if text else "")
        (self.grid.add_class if text else self.grid.remove_class)("wb-stale")

    def _target_mover(self, chain: Chain):
        """A function that gives a run its targets moved as its pixels were; a chain that cannot
        move them runs as it is, and the message line says why."""
        if self.targets is None:
            return lambda run: run
        try:
            check_target_ops(chain, self.targets)
        except (WorkbenchError, ValueError) as exc:
            self._target_error = f"targets are not shown on the draws: {exc}"
            self.say(self._target_error, error=True)
            return lambda run: run
        if self._target_error and html.escape(self._target_error) in self.message.value:
            self.say("")  # the reason no longer holds
        self._target_error = ""
        return lambda run: dataclasses.replace(run, targets=move_targets(chain, run.params, self.images, self.targets))

    def redraw(self) -> None:
        """Redraw every tile from the last results, with the target kinds ticked now: nothing
        runs the chain again."""
        with self._lock:
            if self._shown_chain is not None:
                show = self.shown_kinds()
                self._send_rows(self._shown_chain, show)
                self.preview.fill_originals(self._original_tiles_for(show))

    def _send_rows(self, chain: Chain, show: tuple[str, ...]) -> None:
        """Every row's draws, as one image message (see preview.py)."""
        def tile(run, n):
            return fit_tile(to_display(chain, run.images[n]), self.cell, targets_of(run.targets, n), show)

        self.preview.fill([{backend: [tile(run, n) for run in runs] for backend, runs in self.results.items()}
                           for n in range(len(self.images))], _jpeg)

    def _mark_differences(self, first: str, second: str) -> None:
        """Under each tile: its backend, and under the second's whether it drew what the first
        drew; above the grid, how many samples differ (each backend has its own random stream)."""
        differ = total = 0
        captions: dict[str, list[list[tuple[str, str]]]] = {first: [], second: []}
        for k, (a, b) in enumerate(zip(self.results[first], self.results[second])):
            captions[first].append([])
            captions[second].append([])
            for n in range(len(self.images)):
                found = draw_differences(a.params[n], b.params[n])
                total += 1
                differ += bool(found)
                sizes = [size_caption(self._shown_chain, run.images[n]) for run in (a, b)]
                captions[first][k].append((_caption(f"draw {k + 1}", a.params[n], sizes[0]),
                                           f"{first}, draw {k + 1} of image {n + 1}"))
                captions[second][k].append(
                    (_caption(f"{second} {'≠' if found else '='}", b.params[n], sizes[1]),
                     f"{second} drew otherwise than {first}: " + "; ".join(found) if found else
                     f"{second} drew what {first} drew"))
        for backend, per_draw in captions.items():
            for k, texts in enumerate(per_draw):
                self.preview.fill_captions(backend, k, texts)
        if differ:
            note = (f"{first} and {second} drew different values for {differ} of {total} samples (each backend draws "
                    f"from its own random stream): tiles marked ≠ differ by their draws, not only by the backend; "
                    f"press a tile's search button to see which values. With every range collapsed to one value "
                    f"(and p = 1) the backends draw alike.")
        else:
            note = (f"{first} and {second} drew the same values for all {total} samples: any difference is the "
                    "backend's.")
        self.preview.summary.value = f"<small>{html.escape(note)}</small>"

    def _original_tiles_for(self, show: tuple[str, ...]) -> list[bytes]:
        """The originals' tiles with the given targets of the kinds in `show` (each set drawn once)."""
        if show not in self._original_tiles:
            self._original_tiles[show] = [_jpeg(fit_tile(image, self.cell, targets_of(self.targets, n), show))
                                          for n, image in enumerate(self.images)]
        return self._original_tiles[show]

    def inspect_tile(self, image: int, draw: int, backend: str) -> None:
        self.inspect(image, draw, backend)

    def inspect(self, image: int, draw: int, backend: str | None = None) -> list[dict]:
        """Show (under the image's row) and return the per-step draws of one preview sample;
        `image` and `draw` are 0-based indices (shown counted from 1)."""
        backend = backend or self.backend.value
        run = self.results[backend][draw]
        rows = run.params[image]
        title = f"image {image + 1}, draw {draw + 1} ({backend}, seed {run.seed})"
        table = inspector_table(rows, title)
        self.inspector.value = table
        self.picked = (image, draw, backend)
        if backend in self.preview.captions:
            self.preview.inspect(image, draw, backend, table)
        return rows

    def _inspect_again(self) -> None:
        """Keep the open draws table true to the new results, or close it when its tile is gone."""
        if self.picked is None:
            return
        image, draw, backend = self.picked
        if backend in self.results and draw < len(self.results[backend]) and image < len(self.images):
            self.inspect(image, draw, backend)
        else:
            self.picked = None
            self.preview.clear_inspector()
            self.inspector.value = ""

    # ----- files -------------------------------------------------------------------------
    def save(self) -> None:
        try:
            path = self.chain.save(self.path.value)
        except (WorkbenchError, OSError) as exc:
            self.say(str(exc), error=True)
            return
        self.say(f"saved the chain to {path}")

    def load(self) -> None:
        """Replace the chain's contents with the file's (same object: code keeps its reference);
        undo goes back to the chain before."""
        try:
            loaded = Chain.load(self.path.value)
        except WorkbenchError as exc:
            self.say(str(exc), error=True)
            return
        self.history.record(self.chain.to_dict())
        self.chain.seed, self.chain.steps[:] = loaded.seed, loaded.steps
        self.selected = None
        self.say(f"loaded {self.path.value}")
        self.sync()

    def export(self, replace: bool = False) -> str | None:
        """Write the chain for the selected backend inside the folder; show the code. A file this
        app did not write is replaced only with `replace` (the panel's 'replace it' button)."""
        return self.exports.export(self.chain, self.backend.value, self.source, self.annotations, replace)

    def estimate(self):
        """Start measuring the chain with the throughput panel's settings on the selected backend
        and device (or every backend, with 'compare backends') on a background thread, which it
        returns; the panel shows progress, then the plot and the advice (`self.estimates.wait()`)."""
        return self.estimates.run(self.chain, self.backend.value, self.device.value, self.source,
                                  without_targets=self.targets is not None and not self.annotations,
                                  **self.annotations)


def _caption(head: str, rows: list[dict], size: str = "") -> str:
    """A tile's caption: `head`, the sample's size where the chain draws it (`size`, see
    size_caption), then what batch mixing did to the sample, if anything."""
    return " · ".join(filter(None, (head, size, mix_caption(rows))))


def _device(device: str) -> str:
    """The device a preview runs on, for the memory check ('auto' resolved)."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _load(images: Any, limit: int) -> tuple[list[np.ndarray], list[str]]:
    """Images for the preview; files that cannot be decoded are skipped and named."""
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


def _path(path) -> tuple[int, ...]:
    """A step's address: its index in the chain, or a path of indices into groups."""
    return (int(path),) if isinstance(path, (int, np.integer)) else tuple(int(k) for k in path)


def _siblings(steps: list, path) -> list:
    """The list that holds the step at `path` (the chain's steps, or a group's)."""
    for k in _path(path)[:-1]:
        if not 0 <= k < len(steps) or not steps[k].is_group:
            raise IndexError(f"no group at step {k + 1}")
        steps = steps[k].steps
    return steps


def _exists(steps: list, path) -> bool:
    try:
        return 0 <= _path(path)[-1] < len(_siblings(steps, path))
    except IndexError:
        return False
