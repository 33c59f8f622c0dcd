"""End to end in a real browser: headless Chromium (Debian's package) driven by Playwright, against
a real JupyterLab server on 127.0.0.1 (bench/browser.py starts both). What only a browser shows:
the app renders and reacts, its layout holds at many draws in a 1280-pixel-wide JupyterLab, two
backends sit tile by tile side by side, overlays toggle, an arrow key on a slider moves a value by
its step, and Export writes a file that reproduces the preview."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import workbench as wb

from conftest import ENV, ROOT

sys.path.insert(0, str(ROOT / "bench"))
from browser import CHROMIUM, DRAW_TILES, chromium, jupyter_lab, open_notebook, run_all_cells, wait_tiles_loaded  # noqa: E402
from browser import write_notebook  # noqa: E402

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("the browser test needs Debian's chromium (scripts/test.sh installs it as root)")
    pytest.skip("chromium is not installed (scripts/test.sh installs it)", allow_module_level=True)
pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    with jupyter_lab(root, env=ENV) as port, chromium() as browser:
        yield root, port, browser


def test_app_in_jupyterlab_end_to_end(lab, tmp_path, small_folder):
    root, port, browser = lab
    write_notebook(root, "app.ipynb", "import workbench as wb\n"
                                      "app = wb.Workbench(images=wb.SAMPLE_DATA, max_images=2, draws=2, cell=96)\n"
                                      "app.export_folder.value = 'exports'\n"
                                      "app")
    page = open_notebook(browser, port, "app.ipynb", width=1600, height=1300)
    try:
        run_all_cells(page)
        wait_tiles_loaded(page, 2)  # 2 images: a strip of 2 draws each
        assert "javascript error" not in page.inner_text("body")  # every control's view rendered
        before = page.locator(DRAW_TILES).nth(0).get_attribute("src")
        seed = page.locator(".widget-inline-hbox", has=page.locator("label", has_text="seed")).locator("input")
        seed.fill("42")
        seed.press("Enter")
        page.wait_for_function("([sel, src]) => { const t = document.querySelectorAll(sel)[0];"
                               " return t && t.getAttribute('src') !== src && t.complete && t.naturalWidth > 0; }",
                               arg=[DRAW_TILES, before], timeout=120_000)
        # An arrow key on Rotate's upper handle moves its value by the slider's step (1 degree).
        card = page.locator(".wb-card", has=page.locator(".wb-card-title", has_text="Rotate")).first
        handle = card.locator(".noUi-handle-upper").first
        handle.focus()
        handle.press("ArrowRight")
        upper = card.locator(".wb-entry input").last  # p, then the range's low and high ends
        page.wait_for_function("(el) => el.value === '21'", arg=upper.element_handle(), timeout=60_000)
        page.get_by_role("button", name="export").click()
        page.wait_for_function("() => document.body.innerText.includes('wrote exports/augment_kornia.py')",
                               timeout=120_000)
        page.screenshot(path=str(tmp_path / "app.png"), full_page=True)
        if os.environ.get("WORKBENCH_SCREENSHOT"):
            shutil.copy(tmp_path / "app.png", os.environ["WORKBENCH_SCREENSHOT"])
    finally:
        page.close()

    exported = root / "exports" / "augment_kornia.py"
    assert "SEED = 42" in exported.read_text() and "degrees=[-20.0, 21.0]" in exported.read_text()
    out = tmp_path / "out.npz"
    proc = subprocess.run([sys.executable, str(exported), "--images", str(small_folder), "--save", str(out)],
                          capture_output=True, text=True, env=ENV, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    chain = wb.examples.example_chain()
    chain.seed = 42
    chain.steps[2].params["degrees"] = [-20.0, 21.0]
    assert np.array_equal(np.load(out)["images"], chain.run(wb.load_images(small_folder)).images)


# Every element of the app that would clip or wrap what it shows, as [what, text] pairs.
LAYOUT_PROBLEMS = """() => {
  const app = document.querySelector('.wb-app');
  const problems = [];
  if (app.scrollWidth > app.clientWidth + 1)
    problems.push(['app overflows', app.scrollWidth + ' > ' + app.clientWidth]);
  for (const b of app.querySelectorAll('button')) {
    if (b.offsetParent === null) continue;  // hidden
    if (b.closest('.wb-palette')) continue;  // folded sections
    if (b.scrollWidth > b.clientWidth + 1 && !b.classList.contains('wb-card-title'))
      problems.push(['button clipped', b.innerText || b.title]);
  }
  for (const t of app.querySelectorAll('.wb-card-title')) {
    const line = parseFloat(getComputedStyle(t).lineHeight) || 20;
    if (t.getBoundingClientRect().height > 2 * line) problems.push(['title wraps', t.innerText]);
  }
  for (const c of app.querySelectorAll('.wb-preview .wb-caption')) {
    if (c.scrollWidth > c.clientWidth + 1) problems.push(['caption clipped', c.innerText]);
  }
  for (const i of app.querySelectorAll('.wb-entry input')) {
    if (i.scrollWidth > i.clientWidth + 1) problems.push(['number clipped', i.value]);
  }
  const edge = Math.min(app.getBoundingClientRect().right,
                        document.querySelector('.wb-right').getBoundingClientRect().right);
  for (const i of app.querySelectorAll('.wb-preview img, .wb-card')) {
    const r = i.getBoundingClientRect();
    if (r.right > edge + 1) problems.push(['outside the app', Math.round(r.right) + ' > ' + Math.round(edge)]);
  }
  return problems.slice(0, 8);
}"""

# Under each strip, a cell per tile (caption and search button), each draw's two backends side by
# side: [backend class, top, left, width] of each cell, and each strip's [width, tiles it holds].
CELLS = """() => [...document.querySelectorAll('.wb-preview .wb-under')].map(u => [...u.children].map(c => {
  const r = c.getBoundingClientRect();
  return [[...c.classList].find(k => k.startsWith('wb-backend-')), r.top, r.left, r.width]; }))"""
STRIPS = """() => [...document.querySelectorAll('.wb-preview .wb-band')].map(s => [s.getBoundingClientRect().width,
  s.nextElementSibling ? s.nextElementSibling.children.length : 0])"""

# Each band's window onto the sheet, in sheet pixels: [top, height, width] of what it shows.
BANDS = """() => [...document.querySelectorAll('.wb-preview .wb-band')].map(b => {
  const i = b.querySelector('img.wb-sheet'), r = b.getBoundingClientRect(), s = i.getBoundingClientRect();
  const scale = i.naturalWidth / s.width;
  return [(r.top - s.top) * scale, r.height * scale, r.width * scale]; })"""


def test_the_layout_holds_at_many_draws_with_two_backends_tile_by_tile(lab):
    root, port, browser = lab
    write_notebook(root, "layout.ipynb", "import workbench as wb\n"
                                         "app = wb.Workbench(draws=6, max_images=2)\n"
                                         "app.compare.value = 'dali'\n"
                                         "app")
    page = open_notebook(browser, port, "layout.ipynb", width=1280, height=1000)
    try:
        run_all_cells(page)
        wait_tiles_loaded(page, 4)  # 2 images, each 2 strips of 6 tiles: 3 draws of two backends
        assert_layout(page, 6)
        # Two more draws from the app's own slider: the preview lays out again, its last strips uneven.
        slider = page.locator(".widget-slider", has=page.locator(".widget-label", has_text="draws")).first
        handle = slider.locator(".noUi-handle").first
        handle.focus()
        handle.press("ArrowRight")
        handle.press("ArrowRight")
        page.wait_for_function(
            "(cells) => document.querySelectorAll('.wb-preview .wb-under > *').length === cells && "
            "[...document.querySelectorAll('.wb-preview img.wb-sheet')].every(i => i.complete && i.naturalWidth > 0)"
            " && [...document.querySelectorAll('.wb-preview .wb-caption')].some(c => c.innerText === 'draw 8')",
            arg=2 * 2 * 8, timeout=120_000)
        assert_layout(page, 8)
    finally:
        page.close()


def assert_layout(page, draws: int) -> None:
    """Nothing clips or overflows, every strip is a band of the sheet showing its tiles whole, and
    each draw's DALI tile sits right beside its Kornia one, at `draws` draws of 2 images."""
    problems = page.evaluate(LAYOUT_PROBLEMS)
    assert problems == [], problems
    for width, tiles in page.evaluate(STRIPS):  # no tile narrower than 50 pixels
        assert tiles and width / tiles >= 50, (width, tiles)
    # Every strip is a band of one sheet image: each band shows its own strip, whole, and
    # nothing of the next (the sheet holds a row's strips in order, then the next row's).
    cell, lines = 150, -(-2 * draws // 6)
    bands = page.evaluate(BANDS)
    assert len(bands) == 2 * lines
    for k, (top, height, width) in enumerate(bands):
        tiles = 2 * draws - 6 * (k % lines) if k % lines == lines - 1 else 6
        assert abs(top - k * (cell + 2)) < 1.5 and abs(height - cell) < 1.5, (k, top, height)
        assert abs(width - ((tiles - 1) * 2 + (tiles // 2 - 1) * 6 + tiles * cell)) < 2, (k, width, tiles)
    cells = [cell for under in page.evaluate(CELLS) for cell in under]
    assert len(cells) == 2 * 2 * draws
    for a, b in zip(cells[0::2], cells[1::2]):  # each draw: dali's tile right beside kornia's
        assert (a[0], b[0]) == ("wb-backend-kornia", "wb-backend-dali")
        assert abs(a[1] - b[1]) < 1 and abs(b[2] - (a[2] + a[3])) < 2
    captions = page.locator(".wb-preview .wb-under .wb-caption").all_inner_texts()
    assert captions[0] == "draw 1" and f"draw {draws}" in captions and captions[1].startswith("dali ")
    assert [c for c in captions if c.startswith("dali")] == [c for c in captions[1::2]]


def test_target_overlays_toggle_in_the_page(lab):
    root, port, browser = lab
    write_notebook(root, "targets.ipynb", "import workbench as wb\n"
                                          "images, targets = wb.load_annotated()\n"
                                          "app = wb.Workbench(images=images, targets=targets, max_images=2, draws=1)\n"
                                          "app")
    page = open_notebook(browser, port, "targets.ipynb", width=1280, height=1000)
    try:
        run_all_cells(page)
        wait_tiles_loaded(page, 2)
        mean = """(sel) => { const i = document.querySelector(sel); const c = document.createElement('canvas');
                   c.width = i.naturalWidth; c.height = i.naturalHeight; const g = c.getContext('2d');
                   g.drawImage(i, 0, 0); const d = g.getImageData(0, 0, c.width, c.height).data;
                   let s = 0; for (let k = 0; k < d.length; k += 4) s += Math.abs(d[k] - d[k + 2]);
                   return s / d.length; }"""
        with_boxes = page.evaluate(mean, DRAW_TILES)
        before = page.locator(DRAW_TILES).first.get_attribute("src")
        for kind in ("masks", "boxes", "keypoints"):
            page.locator(".widget-checkbox", has_text=kind).locator("input").uncheck()
        page.wait_for_function("([sel, src]) => { const t = document.querySelector(sel);"
                               " return t.getAttribute('src') !== src && t.complete && t.naturalWidth > 0; }",
                               arg=[DRAW_TILES, before], timeout=60_000)
        page.wait_for_timeout(300)
        plain = page.evaluate(mean, DRAW_TILES)
        assert with_boxes > plain + 1, (with_boxes, plain)  # the coloured overlays are gone from the tile
    finally:
        page.close()
