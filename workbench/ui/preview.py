"""The app's preview grid: a row per image (its original, then each draw; with a second backend,
each draw's two tiles side by side), a caption and a params button under every draw, and right
under a row the draws of the tile last clicked, kept up to date on every refresh.

Widgets are built once per (images, draws, backends) and then only refilled: creating widgets
costs more than updating their bytes. Tiles scale with the page (CSS flex), up to `cell` pixels.
"""
from __future__ import annotations

import html
import math
from typing import Any, Callable

import ipywidgets as w

# Row keys the inspector shows in their own columns, or not at all (a group's children get rows).
NOT_DRAWN = ("step", "op", "enabled", "applied", "steps")


class PreviewGrid:
    """The tiles of the preview. `layout(images, draws, backends)` builds or reuses the rows;
    `fill_draw(...)` puts a draw's new bytes and captions in; `inspect(...)` shows one tile's draws under its
    row. `on_pick(image, draw, backend)` is called when a tile's params button is pressed. A refresh
    fills each draw as it is computed (`fill_draw`), then the originals and captions.

    Example:
        >>> grid = PreviewGrid(cell=64, on_pick=lambda n, k, b: None)
        >>> grid.layout(images=2, draws=3, backends=["kornia", "dali"])
        >>> len(grid.tiles["dali"]), len(grid.tiles["dali"][0])
        (2, 3)
    """

    def __init__(self, cell: int, on_pick: Callable[[int, int, str], None]):
        self.cell = cell
        self.on_pick = on_pick
        self.widget = w.VBox(layout=w.Layout(width="100%"))
        self.widget.add_class("wb-preview")
        self.summary = w.HTML()
        self.summary.add_class("wb-compare-note")
        self._built: dict[tuple, tuple] = {}
        self.key: tuple | None = None
        self.originals: list[w.Image] = []
        self.tiles: dict[str, list[list[w.Image]]] = {}
        self.captions: dict[str, list[list[w.Label]]] = {}
        self.cells: dict[str, list[list[w.Box]]] = {}
        self.inspectors: list[w.HTML] = []
        self.picked: tuple[int, int, str] | None = None

    def layout(self, images: int, draws: int, backends: list[str]) -> None:
        key = (images, draws, tuple(backends))
        if key != self.key:
            if key not in self._built:
                self._built[key] = self._build(images, draws, backends)
            rows, self.originals, self.tiles, self.captions, self.cells, self.inspectors = self._built[key]
            self.widget.children = [self.summary, *rows]
            self.key = key
            self.picked = None
            for inspector in self.inspectors:
                inspector.value = ""

    def _build(self, images: int, draws: int, backends: list[str]) -> tuple:
        pair = len(backends)
        rows: list[w.Widget] = []
        originals: list[w.Image] = []
        tiles = {b: [[None] * draws for _ in range(images)] for b in backends}
        captions = {b: [[None] * draws for _ in range(images)] for b in backends}
        cells = {b: [[None] * draws for _ in range(images)] for b in backends}
        inspectors = []
        for n in range(images):
            original = _image()
            originals.append(original)
            parts = [_group([_cell([original, _caption(f"image {n + 1}")], self.cell, "wb-original")], "original", 1,
                            self.cell)]
            for k in range(draws):
                group = []
                for b in backends:
                    image, caption = _image(), _caption("")
                    button = w.Button(icon="search", tooltip=f"what image {n + 1}, draw {k + 1} drew on {b}",
                                      layout=w.Layout(width="100%", height="22px", padding="0"))
                    button.add_class("wb-pick")
                    button.on_click(lambda _b, n=n, k=k, b=b: self.on_pick(n, k, b))
                    cell = _cell([image, caption, button], self.cell, "wb-draw")
                    cell.add_class(f"wb-backend-{b}")
                    tiles[b][n][k], captions[b][n][k], cells[b][n][k] = image, caption, cell
                    group.append(cell)
                parts.append(_group(group, f"draw {k + 1}", pair, self.cell))
            rows.append(_line(parts, "wb-row"))
            inspector = w.HTML()
            inspector.add_class("wb-inspector")
            inspectors.append(inspector)
            rows.append(inspector)
        return rows, originals, tiles, captions, cells, inspectors

    def fill_draw(self, backend: str, draw: int, tiles: list[bytes], captions: list[tuple[str, str]] | None) -> None:
        """One draw's tiles on `backend`, image by image, with (text, tooltip) captions (None: as they are)."""
        for n, data in enumerate(tiles):
            self.tiles[backend][n][draw].value = data
        if captions is not None:
            self.fill_captions(backend, draw, captions)

    def fill_captions(self, backend: str, draw: int, captions: list[tuple[str, str]]) -> None:
        for n, (text, tip) in enumerate(captions):
            label = self.captions[backend][n][draw]
            if label.value != text:
                label.value = text
            if (label.tooltip or "") != tip:
                label.tooltip = tip or None

    def fill_originals(self, originals: list[bytes]) -> None:
        for image, data in zip(self.originals, originals):
            if image.value != data:
                image.value = data

    def inspect(self, image: int, draw: int, backend: str, table: str) -> None:
        """Show `table` (HTML) under image `image`'s row and mark the tile it describes."""
        self.clear_inspector()
        self.picked = (image, draw, backend)
        self.inspectors[image].value = table
        self.cells[backend][image][draw].add_class("wb-picked")

    def clear_inspector(self) -> None:
        if self.picked is not None:
            n, k, b = self.picked
            if b in self.cells and n < len(self.cells[b]) and k < len(self.cells[b][n]):
                self.cells[b][n][k].remove_class("wb-picked")
                self.inspectors[n].value = ""
        self.picked = None


def _image() -> w.Image:
    image = w.Image(format="jpeg", layout=w.Layout(width="100%", height="auto"))
    image.add_class("wb-tile")
    return image


def _caption(text: str) -> w.Label:
    label = w.Label(text, layout=w.Layout(width="100%"))
    label.add_class("wb-caption")
    return label


# A tile never gets narrower than this: a row that cannot hold its tiles wraps, each draw's tiles
# (one per backend) staying together under their "draw k" label.
MIN_TILE = 56


def _cell(children: list[w.Widget], cell: int, kind: str) -> w.VBox:
    box = w.VBox(children, layout=w.Layout(flex="1 1 0%", min_width=f"{MIN_TILE}px", max_width=f"{cell}px"))
    box.add_class(kind)
    return box


def _group(cells: list[w.Widget], title: str, pair: int, cell: int) -> w.VBox:
    tiles = w.HBox(cells, layout=w.Layout(width="100%"))
    tiles.add_class("wb-pair")
    box = w.VBox([_caption(title), tiles], layout=w.Layout(
        flex=f"{pair} 1 0%", min_width=f"{pair * (MIN_TILE + 2)}px", max_width=f"{pair * (cell + 2)}px"))
    box.add_class("wb-group")
    return box


def _line(parts: list[w.Widget], kind: str) -> w.HBox:
    box = w.HBox(parts, layout=w.Layout(width="100%", align_items="flex-start", flex_flow="row wrap"))
    box.add_class(kind)
    return box


def inspector_table(rows: list[dict], title: str) -> str:
    """HTML of one sample's per-step draws (groups' children indented under them).

    Example:
        >>> "<td>yes</td>" in inspector_table([{"step": 1, "op": "Rotate", "applied": True, "angle": 3.0}], "x")
        True
    """
    cells = "".join(
        f"<tr><td>{r['step']}</td><td>{'&nbsp;' * 3 * str(r['step']).count('.')}{html.escape(r['op'])}</td>"
        f"<td>{'yes' if r['applied'] else 'no'}</td>"
        f"<td>{html.escape(', '.join(f'{k}={short(k, v)}' for k, v in r.items() if k not in NOT_DRAWN))}</td></tr>"
        for r in flat_rows(rows))
    return (f"<div class='wb-inspector-box'><b>{html.escape(title)}</b><table><tr><th>step</th><th>op</th>"
            f"<th>applied</th><th>drawn</th></tr>{cells}</table></div>")


def flat_rows(rows: list[dict]) -> list[dict]:
    """A sample's step rows with every group's children rows after it, in order."""
    out = []
    for row in rows:
        out.append(row)
        out += flat_rows(row.get("steps", []))
    return out


def short(key: str, value: Any) -> str:
    """A drawn value as the inspector shows it: 3 significant digits, partners as image numbers.

    Example:
        >>> short("angle", 12.3456), short("partner", 2), short("size", [0.51234, 2])
        ('12.3', '#3', '[0.512, 2]')
    """
    if key == "partner" and isinstance(value, int):
        return f"#{value + 1}"  # the batch index of the image mixed in, counted from 1 like the rows
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "[" + ", ".join(short("", v) for v in value) + "]"
    return str(value)


def draw_differences(a: list[dict], b: list[dict], limit: int = 3) -> list[str]:
    """Where two backends' draws for one sample differ: 'step 3 angle 12.1 vs 8.4', at most
    `limit` of them (an empty list when every step drew the same, to 1e-5 relative).

    Example:
        >>> draw_differences([{"step": 1, "op": "Rotate", "applied": True, "angle": 3.0}],
        ...                  [{"step": 1, "op": "Rotate", "applied": True, "angle": 5.0}])
        ['step 1 angle 3 vs 5']
    """
    out = []
    for ra, rb in zip(flat_rows(a), flat_rows(b)):
        for key in sorted(set(ra) | set(rb)):
            if key in ("step", "op", "enabled", "steps"):
                continue
            if not _same(ra.get(key), rb.get(key)):
                out.append(f"step {ra['step']} {key} {short(key, ra.get(key))} vs {short(key, rb.get(key))}")
    return out[:limit]


def _same(x: Any, y: Any) -> bool:
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y))
    if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            return True
        return math.isclose(float(x), float(y), rel_tol=1e-5, abs_tol=1e-6)
    return x == y
