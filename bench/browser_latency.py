"""The app's latency as a user feels it, in a real browser: from an arrow key on a slider to the
new preview images in the page, and from a palette click to the new step's images.

A real JupyterLab on 127.0.0.1, headless Chromium (Playwright), the default app on the bundled
sample images (`wb.Workbench(backend=...)`: 4 images, 3 draws, the example chain) at 1280x900.
Each measurement presses ArrowRight on the upper handle of Rotate's degrees slider (a value the
app has not shown yet: 21, 22, ... degrees); the clock starts at the keydown in the page and stops
when every row's strip of draws holds a new, decoded image and a frame has been painted after it.
Medians after 2 warm-ups. Then the first palette click: a click on an op in the palette until its
step's images are shown, for five colour ops each clicked for the first time (undone between). Usage:

    python bench/browser_latency.py [--backends kornia,dali,albumentations] [--runs 15] [--json FILE]

Targets (issue 27, 2-core CPU): <= 150 ms median per arrow key on every backend; the first
palette click <= 1 s.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import chromium, close_notebook, jupyter_lab, open_notebook, run_all_cells, write_notebook  # noqa: E402
from common import add_json_option, table, write_figures  # noqa: E402

from browser import DRAW_TILES as TILES  # noqa: E402  (the strips of draws, one per image row)
# Resolves with the ms from the next keydown to the moment every draw tile shows a new decoded
# image and a frame was painted after it.
ARM = """([selector, count]) => {
  // Event-driven, no polling: a poll loop would take the page's main thread (and a core of a
  // 2-core machine) from the very work it measures.
  const tiles = [...document.querySelectorAll(selector)];
  const before = new Map(tiles.map(t => [t, t.getAttribute('src')]));
  window.__wbLatency = new Promise((resolve) => {
    let start = null, done = false;
    const fresh = () => tiles.filter(t => t.getAttribute('src') !== before.get(t) && t.complete && t.naturalWidth > 0);
    const check = () => {
      if (!done && start !== null && fresh().length >= count) {
        done = true;
        requestAnimationFrame(() => resolve(performance.now() - start));
      }
    };
    document.addEventListener('keydown', () => { start = performance.now(); }, {once: true, capture: true});
    for (const t of tiles) t.addEventListener('load', check);
    // A row whose pixels did not change never loads a new image: say so instead of waiting forever.
    setTimeout(() => {
      if (!done) { done = true; resolve(`only ${fresh().length} of ${count} rows changed`); }
    }, 30000);
  });
}"""


def latency(page, what: str) -> float:
    """The armed measurement's ms (raises, naming `what`, when the page did not change)."""
    ms = page.evaluate("() => window.__wbLatency")
    if isinstance(ms, str):
        raise RuntimeError(f"{what}: {ms} in 30 s")
    return ms


# Colour ops a user adds to the default chain, each clicked for the first time; the median is reported.
# (Each changes every sample image: the clock stops when every row has new pixels, and Saturation
# leaves a grey image as it is, Posterize at times a dark one.)
FIRST_CLICKS = ("ColorJitter", "Contrast", "Gamma", "BrightnessContrast", "Invert")


def slider_handle(page, op: str):
    """The upper handle of the first range slider in `op`'s card."""
    card = page.locator(".wb-card", has=page.locator(".wb-card-title", has_text=op)).first
    return card.locator(".noUi-handle-upper").first


def arrow_latencies(page, op: str, count: int, runs: int) -> list[float]:
    # Focused once, as a user does before stepping through values: resolving the locator before
    # every key costs the page about 45 ms of CPU each time (a text search over some 4,000
    # elements) and its garbage collection can land inside the next measurement.
    slider_handle(page, op).focus()
    times = []
    for k in range(runs + 2):
        page.evaluate(ARM, [TILES, count])
        page.keyboard.press("ArrowRight")  # a new value each time, as a user stepping through angles makes
        ms = latency(page, f"arrow key on {op}")
        if k >= 2:
            times.append(ms)
    return times


def palette_click(page, op: str, count: int) -> float:
    """ms from a click on `op` in the palette to new images in every row's strip of draws."""
    page.evaluate(ARM.replace("'keydown'", "'pointerdown'"), [TILES, count])
    button = page.locator(".wb-palette button", has_text=op).first
    if not button.is_visible():  # the family's section is folded: open it first (not timed)
        page.locator(".wb-palette .p-Accordion-title, .wb-palette .lm-AccordionPanel-title, "
                     ".wb-palette .jupyter-widget-Collapse-header", has_text="color").first.click()
    button.click()
    return latency(page, f"palette click on {op}")


def undo(page, count: int) -> None:
    """Click undo and wait for the preview of the chain before (not timed)."""
    page.evaluate(ARM.replace("'keydown'", "'pointerdown'"), [TILES, count])
    page.locator("button", has_text="undo").first.click()
    latency(page, "undo")


def measure(backend: str, runs: int, root: Path, port: int, browser, first_clicks: int) -> dict[str, float]:
    name = f"latency_{backend}.ipynb"
    write_notebook(root, name, "import workbench as wb\n"
                               f"app = wb.Workbench(backend={backend!r})\n"
                               "app")
    page = open_notebook(browser, port, name, width=1280, height=900)
    try:
        run_all_cells(page)
        page.wait_for_function(f"() => document.querySelectorAll('{TILES}').length >= 4 && "
                               f"[...document.querySelectorAll('{TILES}')].every(t => t.complete && t.naturalWidth)",
                               timeout=240_000)
        count = page.evaluate(f"() => document.querySelectorAll('{TILES}').length")
        times = arrow_latencies(page, "Rotate", count, runs)  # on the default chain, as a new user has it
        clicks = []
        for k, op in enumerate(FIRST_CLICKS[:first_clicks]):  # each op's first click, the chain reset between
            if k:
                undo(page, count)
            clicks.append(palette_click(page, op, count))
    finally:
        close_notebook(page)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "first_palette_click_ms": statistics.median(clicks), "first_palette_click_max_ms": max(clicks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="kornia,dali,albumentations")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--first-clicks", type=int, default=len(FIRST_CLICKS),
                        help="how many of the ops to click (1: ColorJitter only, for a version without undo)")
    parser.add_argument("--tiles", default=TILES, help="CSS selector of the draws' images (another version's)")
    add_json_option(parser)
    args = parser.parse_args()
    globals()["TILES"] = args.tiles  # the selector every measurement waits on
    backends = [b for b in args.backends.split(",") if b]
    results = {}
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp, jupyter_lab(Path(tmp)) as port, chromium() as browser:
        for backend in backends:
            results[backend] = measure(backend, args.runs, Path(tmp), port, browser, args.first_clicks)
    import torch

    print(f"machine: {platform.machine()} {os.cpu_count()} cores, torch threads {torch.get_num_threads()}; "
          f"python {platform.python_version()}, torch {torch.__version__}; Chromium headless, JupyterLab on 127.0.0.1")
    print(f"default app (sample images: 4 images x 3 draws, the example chain), 1280x900 page; arrow key on "
          f"Rotate's degrees slider, {args.runs} runs after 2 warm-up, medians ({time.time() - started:.0f} s)")
    print(f"first palette click: {', '.join(FIRST_CLICKS[:args.first_clicks])}, each once (undone between), "
          "median and max")
    print(table(["backend", "arrow key -> new images, median ms", "min", "max", "first palette click ms", "max"],
                [[b, f"{r['median_ms']:.0f}", f"{r['min_ms']:.0f}", f"{r['max_ms']:.0f}",
                  f"{r['first_palette_click_ms']:.0f}", f"{r['first_palette_click_max_ms']:.0f}"]
                 for b, r in results.items()]))
    write_figures(args.json, **{f"{b}_{k}": v for b, r in results.items() for k, v in r.items()})


if __name__ == "__main__":
    main()
