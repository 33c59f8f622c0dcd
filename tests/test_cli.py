"""The `workbench` command: preview grids, export, op listing, clear errors."""
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import workbench as wb
from workbench.cli import main
from workbench.estimate.breakdown import StageCost, StepCost
from workbench.estimate.result import Estimate

from conftest import DESIGN_CHAIN, ROOT


@pytest.fixture
def chain_file(tmp_path):
    path = tmp_path / "chain.yaml"
    wb.Chain.from_dict(DESIGN_CHAIN).save(path)
    return path


def test_preview_writes_grid_of_originals_and_draws(tmp_path, chain_file, capsys):
    out = tmp_path / "grid.png"
    assert main(["preview", str(chain_file), "--images", str(ROOT / "sample_data"), "-o", str(out),
                 "--draws", "2", "--max-images", "3", "--cell", "64"]) == 0
    grid = np.asarray(Image.open(out))
    assert grid.shape == (3 * 64 + 2 * 4, 3 * 64 + 2 * 4, 3)
    # Column 0 is the original, letterboxed; the draws differ from each other (different seeds).
    chain = wb.Chain.load(chain_file)
    images = wb.load_images(ROOT / "sample_data")[:3]
    expected = wb.preview_grid(chain, images, draws=2, cell=64)
    assert np.array_equal(grid, expected)
    assert not np.array_equal(grid[:64, 68:132], grid[:64, 136:200])
    assert "3 image(s), original + 2 draw(s)" in capsys.readouterr().out


def test_preview_draws_the_targets_of_annotated_images(tmp_path, chain_file):
    out = tmp_path / "grid.png"
    assert main(["preview", str(chain_file), "--annotated", "-o", str(out), "--draws", "1", "--max-images", "2",
                 "--cell", "64"]) == 0
    grid = np.asarray(Image.open(out))
    images, targets = wb.load_annotated()
    chain = wb.Chain.load(chain_file)
    two = {kind: values[:2] for kind, values in targets.items()}
    assert np.array_equal(grid, wb.preview_grid(chain, images[:2], draws=1, cell=64, targets=two))
    assert not np.array_equal(grid, wb.preview_grid(chain, images[:2], draws=1, cell=64))
    assert main(["preview", str(chain_file), "--annotated", "--images", str(ROOT / "sample_data" / "coins.png"),
                 "-o", str(out)]) == 2  # a folder of its own needs --coco or --masks


def test_export_writes_runnable_script(tmp_path, chain_file):
    out = tmp_path / "exported" / "aug.py"
    out.parent.mkdir()
    assert main(["export", str(chain_file), "--backend", "kornia", "-o", str(out)]) == 0
    assert out.read_text() == wb.Chain.load(chain_file).export("kornia")


def test_export_writes_the_snippet_form_when_asked(tmp_path, chain_file, capsys):
    out = tmp_path / "aug_snippet.py"
    assert main(["export", str(chain_file), "--backend", "albumentations", "--form", "snippet", "-o", str(out)]) == 0
    assert out.read_text() == wb.Chain.load(chain_file).export("albumentations", form="snippet")
    assert "augmentation = A.Compose([" in out.read_text() and "snippet" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # argparse names the choices
        main(["export", str(chain_file), "--form", "page", "-o", str(tmp_path / "x.py")])
    assert "invalid choice: 'page'" in capsys.readouterr().err


def test_export_writes_anywhere_and_replaces_only_when_asked(tmp_path, chain_file, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path.parent / f"{tmp_path.name}-outside" / "new" / "aug.py"  # outside the current folder
    assert main(["export", str(chain_file), "--backend", "dali", "-o", str(out)]) == 0
    assert out.read_text() == wb.Chain.load(chain_file).export("dali")
    out.write_text("# mine\n")
    assert main(["export", str(chain_file), "--backend", "dali", "-o", str(out)]) == 2
    assert "it exists; pass overwrite=True (--overwrite on the command line)" in capsys.readouterr().err
    assert out.read_text() == "# mine\n"
    assert main(["export", str(chain_file), "--backend", "dali", "-o", str(out), "--overwrite"]) == 0
    assert out.read_text() == wb.Chain.load(chain_file).export("dali")


def test_errors_are_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 1\nsteps:\n  - op: Rotate\n    params: {degrees: [30, -30]}\n")
    assert main(["export", str(bad), "-o", str(tmp_path / "x.py")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("workbench export: error: step 1 (Rotate): parameter 'degrees' has lo > hi")
    assert not (tmp_path / "x.py").exists()
    assert main(["preview", str(bad).replace("bad", "missing"), "-o", str(tmp_path / "g.png")]) == 2
    assert "cannot read chain file" in capsys.readouterr().err
    good = tmp_path / "good.yaml"
    wb.Chain.from_dict(DESIGN_CHAIN).save(good)
    assert main(["export", str(good), "--backend", "tensorflow", "-o", str(tmp_path / "x.py")]) == 2
    assert "unknown backend 'tensorflow'" in capsys.readouterr().err


def test_ops_lists_every_op(capsys):
    assert main(["ops"]) == 0
    out = capsys.readouterr().out
    for op in wb.list_ops():
        assert f"\n{op} " in "\n" + out
    assert "degrees: angle range in degrees (range [lo, hi] within [-180.0, 180.0])" in out


def test_installed_console_script(tmp_path, chain_file):
    exe = __import__("shutil").which("workbench", path=str(__import__("pathlib").Path(sys.executable).parent))
    assert exe, "the `workbench` command is not installed next to this Python"
    proc = subprocess.run([exe, "export", str(chain_file), "-o", str(tmp_path / "a.py")], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and (tmp_path / "a.py").exists()


def test_docs_ops_md_is_current():
    """docs/ops.md is generated from the registry; regenerate with the command it names."""
    from workbench.support_matrix import support_matrix_markdown

    current = (ROOT / "docs" / "ops.md").read_text()
    assert current == support_matrix_markdown(), "docs/ops.md is stale: run `workbench ops --markdown -o docs/ops.md`"
    for op in wb.list_ops():
        assert f"| {op} |" in current and f"## {op}" in current
    assert "| Affine | geometric | yes | yes | yes | <= 0.3/255, >= 56 dB, border 4 px |" in current
    assert "| GridMask | occlusion | yes | yes | yes |" in current
    assert "| ElasticTransform | geometric | yes | GPU only | yes |" in current
    assert "| no |" not in current  # every op on every backend (DALI's remap ops on its GPU)


def test_ops_markdown_to_file(tmp_path, capsys):
    out = tmp_path / "ops.md"
    assert main(["ops", "--markdown", "-o", str(out)]) == 0
    assert out.read_text().startswith("# Ops and backends")


def test_estimate_prints_breakdown_advice_and_writes_plot_and_json(tmp_path, chain_file, capsys):
    plot, data = tmp_path / "est.png", tmp_path / "est.json"
    assert main(["estimate", str(chain_file), "--batch-size", "4", "--image-size", "240x256", "--workers", "0",
                 "--runs", "2", "--batches", "1", "--target", "1e9", "--plot", str(plot), "--json", str(data),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "kornia on cpu, batch 4, 240x256 images, 0 worker(s):" in out
    assert "step 1 RandomResizedCrop" in out and "step 5 Normalize" in out
    assert "Too slow:" in out
    assert Image.open(plot).format == "PNG"
    [saved] = __import__("json").loads(data.read_text())
    assert saved["backend"] == "kornia" and saved["image_size"] == [240, 256] and len(saved["run_rates"]) == 2
    assert f"{saved['images_per_s']:.1f} images/s" in out
    # The advice printed is the advice of the figures saved (noisy or not: a 2-run measurement on a
    # busy machine may be), against the target given.
    assert str(_estimate_of(saved).advise(1e9)) in out


def _estimate_of(saved: dict) -> Estimate:
    fields = {k: v for k, v in saved.items() if k != "spread"}
    fields["stages"] = {k: StageCost(**v) for k, v in saved["stages"].items()}
    fields["steps"] = [StepCost(**{**v, "input_size": tuple(v["input_size"]), "output_size": tuple(v["output_size"])})
                       for v in saved["steps"]]
    return Estimate(**{**fields, "image_size": tuple(saved["image_size"])})


def test_estimate_compile_reports_the_first_compiled_call(chain_file, capsys):
    assert main(["estimate", str(chain_file), "--compile", "--batch-size", "4", "--image-size", "240x256",
                 "--workers", "0", "--runs", "1", "--batches", "1", "-q"]) == 0
    out = capsys.readouterr().out
    assert "kornia on cpu, torch.compile, batch 4" in out and "first compiled call: " in out
    assert main(["estimate", str(chain_file), "--compile", "--backend", "dali", "--image-size", "240x256",
                 "-q"]) == 2
    assert "torch_compile=True" in capsys.readouterr().err


def test_estimate_compare_and_bad_arguments(tmp_path, chain_file, capsys):
    assert main(["estimate", str(chain_file), "--compare", "--batch-size", "2", "--image-size", "224",
                 "--workers", "1", "--runs", "1", "--batches", "1", "-q"]) == 0
    out = capsys.readouterr().out
    assert "kornia on cpu:" in out and "dali on cpu:" in out
    crop = tmp_path / "crop.json"
    wb.Chain().add("CenterCrop", size=[128, 128]).save(crop)
    assert main(["estimate", str(crop), "--image-size", "64", "-q"]) == 2
    assert "step 1 (CenterCrop): size [128, 128] is larger than image 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["estimate", str(chain_file), "--image-size", "huge"])
    assert "image size is N or HxW" in capsys.readouterr().err
