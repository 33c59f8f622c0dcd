"""The app's preview grid: a row per image, its original tile, then its draws as strips (with a
second backend, each draw's two tiles side by side), a caption and a params button under each
tile, and right under the row the draws of the tile last clicked, kept up to date on every refresh.

Every strip of every row is a band of one image, the sheet, sent as one message a refresh: each
row shows its bands through a view of that one widget, cut by CSS. Every widget update is a
message from the kernel to the page and costs the page more than its bytes do: measured in a
browser (bench/browser_latency.py, 2-core machine, default app), an arrow key took 129-131 ms to
new images with the sheet against 144-150 ms with a strip image per row on Kornia (145-149 against
155 ms on DALI), and a strip per row had already beaten an image per tile (12 tile widgets updated
in 101 ms, the same pixels as 3 strips in 57 ms). The sheet goes as a data URL, not JPEG bytes: every
view of a JPEG image makes its own blob URL and the page decodes the sheet once per view, where
views of one URL share one decode (DALI, same runs: 139 ms against 149-152).
A strip holds at most TILES_PER_STRIP tiles (wide enough at 1280 pixels with the chain beside it);
more draws continue on the row's next strip, each draw's tiles together. Widgets are built once per
(images, draws, backends, cell) and then only refilled; the strips scale with the page (CSS), up
to `cell` pixels a tile.
"""
from __future__ import annotations

import base64
import html
import math
from typing import Any, Callable

import ipywidgets as w
import numpy as np

# Row keys the inspector shows in their own columns, or not at all (a group's children get rows).
NOT_DRAWN = ("step", "op", "enabled", "applied", "steps")
TILES_PER_STRIP = 6
GAP = 2  # pixels between the tiles of a draw
PAIR_GAP = 8  # pixels between draws (wider, so that each draw's tiles read as one group)
BACKGROUND = 255
SEP = 2  # background rows between the sheet's strips: where a band rounds to a pixel more, it shows these


class PreviewGrid:
    """The tiles of the preview. `layout(images, draws, backends)` builds or reuses the rows;
    `fill(tiles)` puts every row's tiles (per backend, per draw) into the sheet and sends it,
    `fill_captions(...)` the texts under them; `inspect(...)` shows one tile's draws under its
    row. `on_pick(image, draw, backend)` is called when a tile's params button is pressed.

    Example:
        >>> grid = PreviewGrid(cell=64, on_pick=lambda n, k, b: None)
        >>> grid.layout(images=2, draws=3, backends=["kornia", "dali"])
        >>> len(grid.strips[0]), len(grid.captions["dali"][1]), grid.strip_top(1, 0)
        (1, 3, 66)
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
        self.backends: list[str] = []
        self.originals: list[w.Image] = []
        self.sheet: w.Image | None = None  # every strip, one under the other (one per layout)
        self.strips: list[list[w.Box]] = []  # per image, per line: the band of the sheet showing it
        self.pixels: list[list[np.ndarray | None]] = []  # what each strip shows (for tile_pixels)
        self.captions: dict[str, list[list[w.Label]]] = {}
        self.cells: dict[str, list[list[w.Box]]] = {}
        self.inspectors: list[w.HTML] = []
        self.picked: tuple[int, int, str] | None = None

    def lines(self, draws: int) -> list[list[int]]:
        """The draws each strip of a row holds (each draw's tiles together on one strip)."""
        per = max(1, TILES_PER_STRIP // max(1, len(self.backends)))
        return [list(range(k, min(draws, k + per))) for k in range(0, draws, per)]

    def layout(self, images: int, draws: int, backends: list[str]) -> None:
        key = (images, draws, tuple(backends))
        if key != self.key:
            self.backends = list(backends)
            if key not in self._built:
                self._built[key] = self._build(images, draws)
            (rows, self.sheet, self.originals, self.strips, self.pixels, self.captions, self.cells,
             self.inspectors) = self._built[key]
            self.widget.children = [self.summary, *rows]
            self.key = key
            self.picked = None
            for inspector in self.inspectors:
                inspector.value = ""

    def _build(self, images: int, draws: int) -> tuple:
        backends = self.backends
        rows: list[w.Widget] = []
        originals, strips, pixels, inspectors = [], [], [], []
        captions = {b: [[None] * draws for _ in range(images)] for b in backends}
        cells = {b: [[None] * draws for _ in range(images)] for b in backends}
        lines = self.lines(draws)
        widest = _width(max(len(line) for line in lines) * len(backends), len(backends), self.cell)
        # Its width comes from the CSS of the band showing it (per band, where a layout width
        # would be one inline style for every view).
        sheet = w.Image(format="url", layout=w.Layout(margin="0"))
        sheet.add_class("wb-strip")
        sheet.add_class("wb-sheet")
        bands = images * len(lines)
        rules = {}  # CSS placing each band's view of the sheet: named by its geometry, so apps never clash
        for n in range(images):
            original = _image("wb-original-tile")
            originals.append(original)
            left = w.VBox([original, _caption(f"image {n + 1}")],
                          layout=w.Layout(flex="0 0 auto", width=f"{min(self.cell, 96)}px", margin="0 8px 0 0"))
            left.add_class("wb-original")
            row_strips, parts = [], []
            for j, line in enumerate(lines):
                # A short last line keeps the tile size of the full ones.
                wide = _width(len(line) * len(backends), len(backends), self.cell)
                strip = w.Box([sheet], layout=w.Layout(width=f"{100 * wide / widest:.4f}%", margin="0"))
                fit, at = f"wb-fit-{self.cell}-{wide}-{widest}", f"wb-band-{self.cell}-{bands}-{n * len(lines) + j}"
                rules[fit] = (f".wb-app .{fit} {{ aspect-ratio: {wide} / {self.cell}; }} "
                              f".wb-app .{fit} > .wb-sheet {{ width: {100 * widest / wide:.4f}%; }}")
                top = 100 * self.strip_top(n, j, len(lines)) / (bands * (self.cell + SEP) - SEP)
                rules[at] = f".wb-app .{at} > .wb-sheet {{ transform: translateY(-{top:.5f}%); }}"
                for name in ("wb-band", fit, at):
                    strip.add_class(name)
                row_strips.append(strip)
                under = []
                for k in line:
                    for b in backends:
                        caption = _caption("")
                        button = w.Button(icon="search", tooltip=f"what image {n + 1}, draw {k + 1} drew on {b}",
                                          layout=w.Layout(width="100%", height="22px", padding="0", margin="0"))
                        button.add_class("wb-pick")
                        button.on_click(lambda _b, n=n, k=k, b=b: self.on_pick(n, k, b))
                        cell = w.VBox([caption, button], layout=w.Layout(flex="1 1 0%", min_width="0", margin="0"))
                        cell.add_class("wb-draw")
                        cell.add_class(f"wb-backend-{b}")
                        captions[b][n][k], cells[b][n][k] = caption, cell
                        under.append(cell)
                labels = w.HBox(under, layout=w.Layout(width=strip.layout.width, margin="0"))
                labels.add_class("wb-under")
                parts += [strip, labels]
            strips.append(row_strips)
            pixels.append([None] * len(lines))
            right = w.VBox(parts, layout=w.Layout(flex="1 1 0%", min_width="0", margin="0"))
            row = w.HBox([left, right], layout=w.Layout(width="100%", align_items="flex-start", margin="0 0 6px 0"))
            row.add_class("wb-row")
            inspector = w.HTML()
            inspector.add_class("wb-inspector")
            rows += [row, inspector]
            inspectors.append(inspector)
        css = w.HTML("<style>" + "\n".join(rules.values()) + "</style>", layout=w.Layout(height="0px", margin="0"))
        return [*rows, css], sheet, originals, strips, pixels, captions, cells, inspectors

    def fill(self, tiles: list[dict[str, list[np.ndarray]]], encode: Callable[[np.ndarray], bytes]) -> None:
        """Every row's draws, `tiles[image][backend][draw]` (cell x cell x 3 uint8), composed into
        strips (draw by draw, the backends' tiles of a draw side by side), the strips into the
        sheet, which is sent `encode`d (to JPEG bytes) as a data URL: one message for the whole grid."""
        lines = self.lines(len(next(iter(tiles[0].values()))))
        strips = []
        for n, row in enumerate(tiles):
            for j, line in enumerate(lines):
                strip = compose_strip([row[b][k] for k in line for b in self.backends], len(self.backends))
                self.pixels[n][j] = strip
                strips.append(strip)
        self.sheet.value = data_url(encode(stack_strips(strips)))

    def strip_top(self, image: int, line: int, lines: int | None = None) -> int:
        """y of image `image`'s strip `line` in the sheet."""
        lines = len(self.strips[image]) if lines is None else lines
        return (image * lines + line) * (self.cell + SEP)

    def fill_captions(self, backend: str, draw: int, captions: list[tuple[str, str]]) -> None:
        """(text, tooltip) under each image's tile of one backend's draw."""
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

    def tile_position(self, backend: str, image: int, draw: int) -> tuple[int, int]:
        """(strip of the row, x in it) of one tile."""
        lines = self.lines(len(self.captions[backend][image]))
        j = next(j for j, line in enumerate(lines) if draw in line)
        position = lines[j].index(draw) * len(self.backends) + self.backends.index(backend)
        return j, strip_offsets(len(lines[j]) * len(self.backends), len(self.backends), self.cell)[position]

    def tile_pixels(self, backend: str, image: int, draw: int) -> np.ndarray:
        """What one tile of the strips shows (cell x cell x 3, before JPEG), cut from its strip."""
        j, x = self.tile_position(backend, image, draw)
        return self.pixels[image][j][:, x:x + self.cell]

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


def strip_offsets(count: int, group: int, cell: int) -> list[int]:
    """x of each of `count` tiles in a strip, `group` tiles a draw: GAP within, PAIR_GAP between.

    Example:
        >>> strip_offsets(4, 2, 10)
        [0, 12, 30, 42]
    """
    out, x = [], 0
    for k in range(count):
        out.append(x)
        x += cell + (PAIR_GAP if (k + 1) % group == 0 else GAP)
    return out


def data_url(jpeg: bytes) -> bytes:
    """A JPEG as the bytes of a data URL (what an Image widget of format "url" holds).

    Example:
        >>> data_url(b"\\xff\\xd8")
        b'data:image/jpeg;base64,/9g='
    """
    return b"data:image/jpeg;base64," + base64.b64encode(jpeg)


def jpeg_of(url: bytes) -> bytes:
    """The JPEG bytes a data URL holds (`data_url`'s inverse)."""
    return base64.b64decode(bytes(url).split(b",", 1)[1])


def _width(count: int, group: int, cell: int) -> int:
    """Pixel width of a strip of `count` tiles, `group` a draw."""
    return strip_offsets(count, group, cell)[-1] + cell


def stack_strips(strips: list[np.ndarray]) -> np.ndarray:
    """Strips one under the other, SEP rows apart, each from the left, on white.

    Example:
        >>> stack_strips([np.zeros((4, 10, 3), np.uint8), np.zeros((4, 6, 3), np.uint8)]).shape
        (10, 10, 3)
    """
    cell = strips[0].shape[0]
    sheet = np.full((len(strips) * (cell + SEP) - SEP, max(s.shape[1] for s in strips), 3), BACKGROUND, np.uint8)
    for k, strip in enumerate(strips):
        sheet[k * (cell + SEP):k * (cell + SEP) + cell, :strip.shape[1]] = strip
    return sheet


def compose_strip(tiles: list[np.ndarray], group: int) -> np.ndarray:
    """Tiles side by side (see strip_offsets), on white.

    Example:
        >>> compose_strip([np.zeros((4, 4, 3), np.uint8)] * 2, 1).shape
        (4, 16, 3)
    """
    cell = tiles[0].shape[0]
    offsets = strip_offsets(len(tiles), group, cell)
    strip = np.full((cell, offsets[-1] + cell, 3), BACKGROUND, np.uint8)
    for x, tile in zip(offsets, tiles):
        strip[:, x:x + cell] = tile
    return strip


def _image(kind: str) -> w.Image:
    image = w.Image(format="jpeg", layout=w.Layout(width="100%", height="auto", margin="0"))
    image.add_class(kind)
    return image


def _caption(text: str) -> w.Label:
    label = w.Label(text, layout=w.Layout(width="100%", margin="0"))
    label.add_class("wb-caption")
    return label


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
