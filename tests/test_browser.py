"""End to end in a real browser: headless Chromium (Debian's package) driven by Playwright,
against a real JupyterLab server on 127.0.0.1. Opens a notebook that shows the app, changes a
control, sees the preview change, presses Export, and runs the exported file."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import workbench as wb

from conftest import ENV

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("the browser test needs Debian's chromium (scripts/test.sh installs it as root)")
    pytest.skip("chromium is not installed (scripts/test.sh installs it)", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api")

NOTEBOOK = {
    "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": [
        "import workbench as wb\n",
        "app = wb.Workbench(images=wb.SAMPLE_DATA, max_images=2, draws=2, cell=96, debounce_s=0.05)\n",
        "app.export_folder.value = 'exports'\n",
        "app"]}],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    (root / "app.ipynb").write_text(json.dumps(NOTEBOOK))
    port = _free_port()
    env = {**ENV, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{ENV.get('PATH', '')}"}
    log = open(root / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
         "--IdentityProvider.token=", "--ServerApp.password=", "--LabApp.news_url=None",
         "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}", "--allow-root"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                break
            time.sleep(0.5)
    else:
        proc.terminate()
        pytest.fail("JupyterLab did not start within 90 s: " + (root / "lab.log").read_text()[-2000:])
    yield root, port
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


def test_app_in_jupyterlab_end_to_end(lab, tmp_path, small_folder):
    root, port = lab
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1600, "height": 1300})
        try:
            page.goto(f"http://127.0.0.1:{port}/lab/tree/app.ipynb", timeout=90_000)
            page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')",
                                   timeout=90_000)
            # Wait for the kernel, fire the command without awaiting it, then wait on the page.
            page.wait_for_function("() => document.body.innerText.includes('Idle')", timeout=90_000)
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            tiles = page.locator(".widget-image")
            # 2 images x (original + 2 draws), each tile loaded.
            page.wait_for_function("() => [...document.querySelectorAll('.widget-image')]"
                                   ".filter(i => i.complete && i.naturalWidth > 0).length >= 6", timeout=180_000)
            assert "javascript error" not in page.inner_text("body")  # every control's view rendered
            before = tiles.nth(1).get_attribute("src")

            seed = page.locator(".widget-inline-hbox", has=page.locator("label", has_text="seed")).locator("input")
            seed.fill("42")
            seed.press("Enter")
            page.wait_for_function("(src) => { const t = document.querySelectorAll('.widget-image')[1];"
                                   " return t && t.getAttribute('src') !== src && t.complete && t.naturalWidth > 0; }",
                                   arg=before, timeout=120_000)

            page.get_by_role("button", name="export").click()
            page.wait_for_function("() => document.body.innerText.includes('wrote exports/augment_kornia.py')",
                                   timeout=120_000)
            page.screenshot(path=str(tmp_path / "app.png"), full_page=True)
            if os.environ.get("WORKBENCH_SCREENSHOT"):
                shutil.copy(tmp_path / "app.png", os.environ["WORKBENCH_SCREENSHOT"])
        finally:
            browser.close()

    exported = root / "exports" / "augment_kornia.py"
    assert exported.exists()
    assert "SEED = 42" in exported.read_text()
    out = tmp_path / "out.npz"
    proc = subprocess.run([sys.executable, str(exported), "--images", str(small_folder), "--save", str(out)],
                          capture_output=True, text=True, env=ENV, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    chain = wb.examples.example_chain()
    chain.seed = 42
    assert np.array_equal(np.load(out)["images"], chain.run(wb.load_images(small_folder)).images)
