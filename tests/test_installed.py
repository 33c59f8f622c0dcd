"""Installed, not editable: `pip install .` puts the sample images inside the package, so the
API, the app's default images and the command line work from any folder.

The installed copy goes into a target folder first on PYTHONPATH (this test's Python already has
the dependencies), and every command runs from an empty folder far from the project.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(site folder holding the installed package, an empty working folder)."""
    base = tmp_path_factory.mktemp("installed")
    source = base / "src"  # a copy: building in the project would leave build/ and *.egg-info there
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "workbench", source / "workbench", ignore=shutil.ignore_patterns("__pycache__"))
    site = base / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--no-compile", "--target", str(site), str(source)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(source)
    work = base / "elsewhere"
    work.mkdir()
    return site, work


def _python(installed, code: str) -> str:
    site, work = installed
    env = {**os.environ, "PYTHONPATH": str(site), "KORNIA_INSTALLATION_MODE": "RAISE"}
    done = subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_installed_package_carries_the_sample_images_and_their_licences(installed):
    site, _ = installed
    bundled = site / "workbench" / "sample_data"
    shipped = sorted(p.name for p in bundled.iterdir())
    assert shipped == sorted(p.name for p in (ROOT / "workbench" / "sample_data").iterdir())
    assert "LICENSES.md" in shipped and len([n for n in shipped if n.endswith((".jpg", ".png"))]) == 12


def test_load_images_finds_the_bundled_images_from_any_folder(installed):
    site, _ = installed
    out = json.loads(_python(installed, (
        "import json, workbench as wb\n"
        "a = wb.load_images(); b = wb.load_images('sample_data')\n"
        "print(json.dumps({'file': wb.__file__, 'n': len(a), 'same': all((x == y).all() for x, y in zip(a, b)),\n"
        "                  'shapes': [list(x.shape) for x in a[:2]], 'app': str(wb.Workbench(max_images=1, draws=1,\n"
        "                  debounce_s=0).source)}))")))
    assert Path(out["file"]).is_relative_to(site), "the installed copy, not the project's, was imported"
    assert out["n"] == 12 and out["same"]
    assert out["shapes"] == [[512, 512, 3], [512, 512, 3]]  # astronaut, camera (greyscale as RGB)
    assert Path(out["app"]) == site / "workbench" / "sample_data"


def test_a_folder_named_sample_data_here_is_the_users_own(installed, tmp_path):
    from PIL import Image

    _, work = installed
    own = work / "sample_data"
    own.mkdir()
    Image.new("RGB", (5, 3), (10, 20, 30)).save(own / "mine.png")
    try:
        out = _python(installed, "import workbench as wb; x = wb.load_images('sample_data'); "
                                 "print(len(x), x[0].shape, x[0][0, 0].tolist())")
    finally:
        shutil.rmtree(own)
    assert out.split() == ["1", "(3,", "5,", "3)", "[10,", "20,", "30]"]


def test_the_command_line_previews_and_exports_from_any_folder(installed):
    site, work = installed
    (work / "chain.yaml").write_text("seed: 3\nsteps:\n- op: HorizontalFlip\n  p: 1.0\n")
    env = {**os.environ, "PYTHONPATH": str(site), "KORNIA_INSTALLATION_MODE": "RAISE"}
    for args in (["preview", "chain.yaml", "-o", "grid.png", "--max-images", "2", "--draws", "1"],
                 ["export", "chain.yaml", "--backend", "kornia", "-o", "aug.py"]):
        done = subprocess.run([sys.executable, "-m", "workbench", *args], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    import numpy as np
    from PIL import Image

    import workbench as wb

    chain = wb.Chain.load(work / "chain.yaml")
    expected = wb.preview_grid(chain, wb.load_images()[:2], draws=1)  # the project's copy, in this process
    with Image.open(work / "grid.png") as grid:
        assert np.array_equal(np.asarray(grid.convert("RGB")), expected)
    assert (work / "aug.py").read_text() == chain.export("kornia")
