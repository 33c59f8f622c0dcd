"""A real JupyterLab on 127.0.0.1 and headless Chromium driving it (Playwright), for the browser
test (tests/test_browser.py) and the browser latency benchmark (bench/browser_latency.py).

Example:
    with jupyter_lab(folder) as port, chromium() as browser:
        page = open_notebook(browser, port, "app.ipynb", width=1280)
        run_all_cells(page)
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def notebook(*cells: str) -> dict:
    """An nbformat 4 notebook of code cells, each given as its source."""
    return {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
                      for src in cells],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def write_notebook(folder: Path, name: str, *cells: str) -> Path:
    path = Path(folder) / name
    path.write_text(json.dumps(notebook(*cells)), encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def jupyter_lab(root: Path, env: dict | None = None, start_timeout_s: float = 90) -> Iterator[int]:
    """A JupyterLab server serving `root` on 127.0.0.1 with no token; yields its port."""
    port = _free_port()
    env = dict(env or os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # No "get notified about news?" toast over the page (news_url=None alone still asks).
    settings = Path(root) / ".lab-settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True, exist_ok=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    log_path = Path(root) / "lab.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
             "--IdentityProvider.token=", "--ServerApp.password=", "--LabApp.news_url=None",
             "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={root}", "--allow-root"],
            cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + start_timeout_s
            while True:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
                    break
                except OSError:
                    if proc.poll() is not None or time.time() > deadline:
                        raise RuntimeError(f"JupyterLab did not start within {start_timeout_s:.0f} s: "
                                           + log_path.read_text()[-2000:]) from None
                    time.sleep(0.5)
            yield port
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def chromium():
    """Headless Debian Chromium under Playwright (which never downloads a browser here)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_notebook(browser, port: int, name: str, width: int = 1280, height: int = 1000, timeout_ms: int = 90_000):
    """A page showing notebook `name` in JupyterLab, its kernel idle."""
    page = browser.new_page(viewport={"width": width, "height": height})
    # A workspace of its own: JupyterLab would otherwise reopen (and activate) the notebooks of earlier pages.
    workspace = "wb" + uuid.uuid4().hex[:12]
    page.goto(f"http://127.0.0.1:{port}/lab/workspaces/{workspace}/tree/{name}?reset", timeout=timeout_ms)
    page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=timeout_ms)
    page.wait_for_function("() => document.body.innerText.includes('Idle')", timeout=timeout_ms)
    return page


def close_notebook(page, timeout_ms: int = 30_000) -> None:
    """Shut down every kernel of the server, then close the page: an idle kernel left running keeps
    its threads and memory, and slows what is measured next on a 2-core machine."""
    page.evaluate("() => window.jupyterapp.serviceManager.sessions.shutdownAll()"
                  ".then(() => { window.__wbShut = true; })")
    page.wait_for_function("() => window.__wbShut === true", timeout=timeout_ms)
    page.close()


def run_all_cells(page) -> None:
    """Fire JupyterLab's run-all command without awaiting it (its promise resolves late)."""
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")


DRAW_TILES = ".wb-preview img.wb-strip"  # a strip of draws per image row (ui/preview.py)


def wait_tiles_loaded(page, count: int, selector: str = DRAW_TILES, timeout_ms: int = 180_000) -> None:
    """Until at least `count` images (default: the preview's strips of draws) show a loaded image."""
    page.wait_for_function(
        "([selector, count]) => [...document.querySelectorAll(selector)]"
        ".filter(i => i.complete && i.naturalWidth > 0).length >= count", arg=[selector, count], timeout=timeout_ms)
