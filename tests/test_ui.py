"""The notebook app, driven headlessly: set widget values, click buttons, check the chain,
the preview images and the exported file."""
import io
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import workbench as wb

from conftest import ENV, ROOT


@pytest.fixture
def app(small_images):
    return wb.Workbench(images=small_images[:2], debounce_s=0, draws=2, cell=64)


def said(app) -> str:
    """The app's message as the user reads it."""
    import html
    import re

    return html.unescape(re.sub(r"<[^>]+>", "", app.message.value))


def tile(app, backend, image, draw):
    """Decoded pixels of one preview tile (draw 0 is the original)."""
    box = app.grid.children[[g.children[0].value for g in app.grid.children].index(f"<b>{backend}</b>")]
    return np.asarray(Image.open(io.BytesIO(bytes(box.children[1 + image].children[draw].children[0].value))))


def test_app_shows_originals_and_draws_of_the_same_chain(app, small_images):
    assert app.chain.to_dict()["steps"] == wb.examples.example_chain().to_dict()["steps"]
    assert len(app.grid.children) == 1  # one backend
    rows = app.grid.children[0].children[1:]
    assert len(rows) == 2 and all(len(r.children) == 1 + 2 for r in rows)
    # Every augmented tile shows what chain.run gives for that seed.
    res = app.chain.run(small_images[:2], seed=app.chain.seed + 1)
    expected = wb.render._fit(wb.to_display(app.chain, res.images[1]), 64).astype(np.int16)
    shown = tile(app, "kornia", 1, 2).astype(np.int16)
    assert shown.shape == expected.shape and np.abs(shown - expected).mean() < 2.0  # JPEG tiles
    other = wb.render._fit(wb.to_display(app.chain, res.images[0]), 64).astype(np.int16)
    assert np.abs(shown - other).mean() > 10  # and it is that image's tile, not another


def test_control_change_edits_the_chain_and_the_preview(app):
    before = tile(app, "kornia", 0, 1).copy()
    rotate = app.steps_box.children[2].step_controls
    rotate["degrees"].value = (90.0, 90.0)
    assert app.chain.steps[2].params["degrees"] == [90.0, 90.0]
    assert not np.array_equal(tile(app, "kornia", 0, 1), before)
    assert app.inspect(0, 0)[2]["angle"] == pytest.approx(90.0)
    rotate["p"].value = 0.0
    assert app.chain.steps[2].p == 0.0 and app.inspect(0, 0)[2]["applied"] is False


def test_palette_and_editor_buttons(app):
    flip_button = next(b for section in app.palette.children for b in section.children if b.description == "VerticalFlip")
    flip_button.click()
    assert [s.op for s in app.chain.steps][-1] == "VerticalFlip" and len(app.steps_box.children) == 6
    up, down, dup, reset, remove = app.steps_box.children[5].step_controls["buttons"]
    up.click()
    assert [s.op for s in app.chain.steps][4:] == ["VerticalFlip", "Normalize"]
    app.steps_box.children[4].step_controls["buttons"][2].click()  # duplicate
    assert [s.op for s in app.chain.steps][4:] == ["VerticalFlip", "VerticalFlip", "Normalize"]
    app.steps_box.children[2].step_controls["degrees"].value = (5.0, 6.0)
    app.steps_box.children[2].step_controls["buttons"][3].click()  # reset
    assert app.chain.steps[2].params == wb.get_op("Rotate").defaults()
    app.steps_box.children[5].step_controls["buttons"][4].click()  # remove
    assert [s.op for s in app.chain.steps][4:] == ["VerticalFlip", "Normalize"]
    app.steps_box.children[1].step_controls["enabled"].value = False
    assert app.chain.steps[1].enabled is False
    assert all(run.params[0][1]["applied"] is False for run in app.results["kornia"])


def test_seed_resample_draws_and_step_through(app, small_images):
    first = [r.images.copy() for r in app.results["kornia"]]
    app.resample.click()
    assert app.chain.seed == 8 and not np.array_equal(app.results["kornia"][0].images, first[0])
    app.draws.value = 3
    assert len(app.results["kornia"]) == 3
    app.upto.value = 1  # after step 1 only: the crop
    out = app.results["kornia"][0]
    assert out.images.shape == (2, 224, 224, 3) and len(out.params[0]) == 1
    assert np.array_equal(out.images, wb.Chain(seed=8, steps=app.chain.steps[:1]).run(small_images[:2]).images)


def test_backend_switch_and_side_by_side(app):
    app.backend.value = "dali"
    assert list(app.results) == ["dali"] and app.results["dali"][0].backend == "dali"
    app.compare.value = "kornia"
    assert list(app.results) == ["dali", "kornia"] and len(app.grid.children) == 2


def test_bad_values_and_failing_backends_keep_the_app_and_the_chain(app):
    before = app.chain.to_dict()
    size = app.steps_box.children[0].step_controls["size"]
    app._set(0, "size", [0, 10])  # what a bad value from any control does
    assert "step 1 (RandomResizedCrop): parameter 'size'" in said(app)
    assert app.chain.to_dict() == before
    app.chain.add("CenterCrop", size=[4000, 4000])
    app.sync()
    assert "larger than image" in said(app)
    assert app.grid.children  # the last good preview stays
    app.remove(len(app.chain.steps) - 1)
    app.path.value = str(ROOT / "missing.yaml")
    app.load_button.click()
    assert "cannot read chain file" in said(app) and app.chain.to_dict() == before
    app.estimates.image_size.value = "tiny"
    app.estimate_button.click()
    assert "estimate failed: image size is empty (the images' own), N or HxW" in said(app)
    app.chain.steps.insert(0, wb.Step.create("CenterCrop", size=[128, 128]))
    app.estimates.image_size.value = "64"  # smaller than the crop: refused before measuring
    app.estimate_button.click()
    app.estimates.wait(120)
    assert "estimate failed" in said(app) and "larger than image" in said(app)
    app.remove(0)
    assert app.chain.to_dict() == before


def test_estimate_button_measures_and_shows_plot_and_advice(app):
    panel = app.estimates
    panel.batch_size.value, panel.image_size.value, panel.workers.value = 4, "240x256", 0
    panel.target.value = 1e9  # no machine delivers this: the advice must say it falls short
    app.estimate_button.click()
    est = panel.wait(300)
    from workbench.estimate import Estimate

    assert isinstance(est, Estimate)
    assert (est.backend, est.batch_size, est.image_size, est.workers) == ("kornia", 4, (240, 256), 0)
    assert [s.op for s in est.steps] == [s.op for _, s in app.chain.enabled_steps()]
    assert f"{est.images_per_s:.1f} images/s" in panel.report.value
    assert "Too slow" in panel.report.value and "The limit is" in panel.report.value
    assert panel.plot.value[:8] == b"\x89PNG\r\n\x1a\n" and panel.plot.layout.display == ""
    assert panel.bar.value == 1.0
    assert f"estimate: {est.images_per_s:.0f} images/s" in said(app)
    panel.compare.value, panel.target.value = True, 0
    app.estimate_button.click()
    panel.wait(600)
    assert list(panel.result.estimates) == ["kornia", "dali", "albumentations"]
    assert "dali on cpu" in panel.report.value and "Delivers" in panel.report.value


def test_the_compile_box_measures_the_compiled_loader_and_shows_its_first_call(app):
    panel = app.estimates
    panel.batch_size.value, panel.image_size.value, panel.workers.value = 4, "240x256", 0
    panel.compile.value = True
    app.estimate_button.click()
    est = panel.wait(300)
    assert est.compile_seconds > 0 and est.label == "kornia on cpu, torch.compile"
    assert f"first compiled call: {est.compile_seconds:.1f} s" in panel.report.value
    app.backend.value = "albumentations"
    app.estimate_button.click()
    panel.wait(60)
    assert "estimate failed" in said(app) and "torch_compile=True" in said(app)


def test_the_estimate_runs_beside_the_kernel_and_can_be_cancelled(app):
    """The estimate button returns at once: the measurement runs on a thread while the kernel
    (and the app) stay usable, the bar moves, edits do not reach the running measurement, and
    cancel stops it, its measuring process included."""
    import time

    import psutil

    panel = app.estimates
    # Large enough to take far longer than the cancel below needs (minutes on 2 cores).
    panel.batch_size.value, panel.image_size.value, panel.workers.value = 32, "512", 0
    measured = app.chain.to_dict()
    started = time.monotonic()
    thread = app.estimate()
    assert thread is not None and thread.is_alive() and time.monotonic() - started < 5
    assert not panel.cancel_button.disabled
    app.estimate_button.click()  # a second one waits for the first
    assert "an estimate is running: wait for it, or press cancel" in said(app)
    app.chain.add("Invert")  # the kernel is free: code and widgets go on
    app.sync()
    deadline = time.monotonic() + 120
    while panel.bar.value == 0.0 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 0.0 < panel.bar.value < 1.0, "the bar moves while measuring"
    children = set(psutil.Process().children(recursive=True))
    assert children, "the measurement runs in a child process"
    panel.cancel_button.click()
    panel.wait(60)
    assert not thread.is_alive() and panel.result is None
    assert "estimate cancelled" in said(app) and panel.label.value == "cancelled" and panel.cancel_button.disabled
    assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], "child stopped"
    app.remove(len(app.chain.steps) - 1)
    assert app.chain.to_dict() == measured
    # Measured to the end, the copy taken at the click is what the estimate reports.
    panel.batch_size.value, panel.image_size.value = 4, "240x256"
    app.chain.add("Invert")
    thread = app.estimate()
    app.chain.steps.pop()
    est = panel.wait(300)
    assert [s.op for s in est.steps] == [s["op"] for s in measured["steps"]] + ["Invert"]


def test_code_and_widgets_share_the_chain(app):
    chain = app.chain
    chain.add("Grayscale", p=1.0)
    app.sync()
    assert app.chain is chain and app.steps_box.children[-1].step_controls["p"].value == 1.0
    assert all(run.params[0][-1]["applied"] for run in app.results["kornia"])


def test_save_load_and_export(app, tmp_path, small_folder):
    app.path.value = str(tmp_path / "c.yaml")
    app.save_button.click()
    assert wb.Chain.load(tmp_path / "c.yaml") == app.chain
    app.steps_box.children[3].step_controls["factor"].value = (1.5, 1.5)
    app.load_button.click()
    assert app.chain.steps[3].params["factor"] == [0.7, 1.3]
    app.export_folder.value = str(tmp_path / "out")
    app.export_name.value = "../escape.py"
    app.export_button.click()
    assert "refusing to write" in said(app) and not (tmp_path / "escape.py").exists()
    app.export_name.value = "aug.py"
    app.export_button.click()
    script = tmp_path / "out" / "aug.py"
    assert script.read_text() == app.chain.export("kornia") and "<span" in app.code.value
    proc = subprocess.run([sys.executable, str(script), "--images", str(small_folder), "--save", str(tmp_path / "o.npz"),
                           "--seed", str(app.chain.seed)], capture_output=True, text=True, env=ENV, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert np.array_equal(np.load(tmp_path / "o.npz")["images"], app.chain.run(wb.load_images(small_folder)).images)


def test_debounced_changes_coalesce(small_images):
    app = wb.Workbench(images=small_images[:1], debounce_s=0.2, draws=1, cell=32)
    app.steps_box.children[2].step_controls["degrees"].value = (30.0, 30.0)
    app.steps_box.children[2].step_controls["degrees"].value = (40.0, 40.0)
    app._timer.join()
    assert app.inspect(0, 0)[2]["angle"] == pytest.approx(40.0)


def test_unreadable_images_are_skipped_with_a_message(tmp_path, small_folder):
    folder = tmp_path / "imgs"
    folder.mkdir()
    for name in ("img_00.png", "img_01.png"):
        (folder / name).write_bytes((small_folder / name).read_bytes())
    (folder / "broken.jpg").write_bytes(b"not a jpeg at all")
    app = wb.Workbench(images=folder, debounce_s=0, draws=1, cell=32)
    assert len(app.images) == 2 and "broken.jpg" in said(app) and "skipped" in said(app)
    assert app.progress.value == app.progress.max == 1 and app.results["kornia"][0].images.shape[0] == 2


def test_groups_are_edited_as_nested_steps(small_images):
    chain = wb.Chain(seed=4).add("Invert", p=1.0).add("VerticalFlip", p=1.0).add("Brightness")
    app = wb.Workbench(images=small_images[:2], chain=chain, debounce_s=0, draws=1, cell=64)
    app.steps_box.children[0].step_controls["actions"]["group"].click()  # step 1 into a new OneOf
    assert [s.op for s in app.chain.steps] == ["OneOf", "VerticalFlip", "Brightness"]
    app.steps_box.children[1].step_controls["actions"]["indent"].click()  # VerticalFlip into it
    group = app.chain.steps[0]
    assert [s.op for s in group.steps] == ["Invert", "VerticalFlip"] and len(app.chain.steps) == 2
    card = app.steps_box.children[0]
    children = card.step_controls["children"].children
    assert [c.step_controls["p"].value for c in children] == [1.0, 1.0]
    assert "1.2. VerticalFlip" in children[1].children[0].children[1].value
    # The group's own controls: kind, p, weights; a child's controls edit the child.
    card.step_controls["weights"].value = "1, 3"
    assert app.chain.steps[0].params["weights"] == [1.0, 3.0]
    children[0].step_controls["p"].value = 0.5
    assert app.chain.steps[0].steps[0].p == 0.5
    # Bad weights: the message names the problem; the chain keeps its last valid state.
    app.steps_box.children[0].step_controls["weights"].value = "1, 2, 3"
    assert "'weights' has 3 value(s) for 2 child step(s)" in said(app)
    assert app.chain.steps[0].params["weights"] == [1.0, 3.0]
    # The preview's inspector lists the group, what it chose, and its children's rows.
    rows = app.inspect(image=0, draw=0)
    assert rows[0]["op"] == "OneOf" and len(rows[0]["chosen"]) == 1 and "1.2" in app.inspector.value
    # Kind switch keeps the children; a size-changing op cannot go in; ungroup puts them back.
    app.steps_box.children[0].step_controls["kind"].value = "Sequential"
    assert app.chain.steps[0].op == "Sequential" and len(app.chain.steps[0].steps) == 2
    app.add("Resize")
    app.steps_box.children[-1].step_controls["actions"]["indent"].click()  # Brightness is above, not a group
    assert "no group just above it" in said(app)
    app.move(2, -1)  # Resize right after the group
    app.indent(1)
    assert "Resize must apply to every sample" in said(app) and app.chain.steps[1].op == "Resize"
    app.steps_box.children[0].step_controls["children"].children[1].step_controls["actions"]["outdent"].click()
    assert [s.op for s in app.chain.steps] == ["Sequential", "VerticalFlip", "Resize", "Brightness"]
    app.steps_box.children[0].step_controls["actions"]["ungroup"].click()
    assert [s.op for s in app.chain.steps] == ["Invert", "VerticalFlip", "Resize", "Brightness"]
    assert app.chain.steps[0].p == 0.5
