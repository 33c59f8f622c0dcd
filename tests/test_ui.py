"""The notebook app, driven headlessly: set widget values, click buttons, check the chain,
the preview images, the messages and the exported file."""
import subprocess
import sys
import time

import numpy as np
import pytest

import workbench as wb
from workbench.estimate import Estimate

from conftest import ENV, ROOT, said, tile


@pytest.fixture
def app(small_images):
    return wb.Workbench(images=small_images[:2], debounce_s=0, draws=2, cell=64)


def ops(app) -> list[str]:
    return [s.op for s in app.chain.steps]


def labels(widget) -> list[str]:
    """The text of every Label inside `widget`, in order."""
    if hasattr(widget, "children"):
        return [text for child in widget.children for text in labels(child)]
    return [widget.value] if type(widget).__name__ == "Label" else []


def palette_button(app, op: str):
    return next(b for section in app.palette.children for b in section.children if b.description == op)


def test_app_shows_originals_and_draws_of_the_same_chain(app, small_images):
    assert app.chain.to_dict()["steps"] == wb.examples.example_chain().to_dict()["steps"]
    assert list(app.preview.captions) == ["kornia"] and len(app.preview.strips) == 2  # a strip per image row
    assert all(len(row) == 2 for row in app.preview.captions["kornia"])
    # Every augmented tile shows what chain.run gives for that seed.
    res = app.chain.run(small_images[:2], seed=app.chain.seed + 1)
    expected = wb.render._fit(wb.to_display(app.chain, res.images[1]), 64).astype(np.int16)
    shown = tile(app, "kornia", 1, 2).astype(np.int16)
    assert shown.shape == expected.shape and np.abs(shown - expected).mean() < 2.0  # JPEG tiles
    other = wb.render._fit(wb.to_display(app.chain, res.images[0]), 64).astype(np.int16)
    assert np.abs(shown - other).mean() > 10  # and it is that image's tile, not another
    # Images, draws and steps are all counted from 1 on screen.
    rows = [c for c in app.preview.widget.children if "wb-row" in c._dom_classes]
    assert [labels(row) for row in rows] == [["image 1", "draw 1", "draw 2"], ["image 2", "draw 1", "draw 2"]]


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
    palette_button(app, "VerticalFlip").click()
    # New steps land before Normalize (the default chain ends with it), and become the selection.
    assert ops(app)[4:] == ["VerticalFlip", "Normalize"] and app.selected == (4,)
    assert len(app.steps_box.children) == 6
    assert "wb-selected" in app.steps_box.children[4]._dom_classes
    up, down, dup, reset, remove = app.steps_box.children[4].step_controls["buttons"]
    up.click()
    assert ops(app)[3:] == ["VerticalFlip", "Brightness", "Normalize"] and app.selected == (3,)
    app.steps_box.children[3].step_controls["buttons"][2].click()  # duplicate
    assert ops(app)[3:] == ["VerticalFlip", "VerticalFlip", "Brightness", "Normalize"]
    app.steps_box.children[2].step_controls["degrees"].value = (5.0, 6.0)
    app.steps_box.children[2].step_controls["buttons"][3].click()  # reset
    assert app.chain.steps[2].params == wb.get_op("Rotate").defaults()
    app.steps_box.children[4].step_controls["buttons"][4].click()  # remove
    assert ops(app)[3:] == ["VerticalFlip", "Brightness", "Normalize"]
    app.steps_box.children[1].step_controls["enabled"].value = False
    assert app.chain.steps[1].enabled is False
    assert all(run.params[0][1]["applied"] is False for run in app.results["kornia"])


def test_cards_below_an_insertion_are_kept_renumbered_and_act_on_their_new_place(app):
    """A palette click builds the new step's card only (every widget is a model the page must
    build): the cards below it move down, renumbered, and their controls edit the step they show."""
    rotate = app.steps_box.children[2]
    app.select(0)
    palette_button(app, "ColorJitter").click()  # after the selected step 1: steps 2-5 move down
    assert app.steps_box.children[3] is rotate
    assert rotate.step_controls["title"].description == "4. Rotate"
    rotate.step_controls["degrees"].value = (-5.0, 5.0)  # edits the step now at 4
    assert ops(app)[3] == "Rotate" and app.chain.steps[3].params["degrees"] == [-5.0, 5.0]
    app.select(None)
    rotate.step_controls["buttons"][0].click()  # up: it swaps with HorizontalFlip
    assert ops(app)[1:4] == ["ColorJitter", "Rotate", "HorizontalFlip"] and app.steps_box.children[2] is rotate
    assert rotate.step_controls["title"].description == "3. Rotate"
    rotate.step_controls["title"].click()
    assert app.selected == (2,) and app.steps_box.children[2] is rotate and "wb-selected" in rotate._dom_classes
    rotate.step_controls["enabled"].value = False
    assert app.chain.steps[2].enabled is False and "wb-off" in rotate._dom_classes
    # A group moved down renumbers its children, whose controls follow.
    app.group(3)  # HorizontalFlip into a OneOf
    app.select(None)
    group = app.steps_box.children[3]
    app.move(3, 1)
    assert ops(app)[3:5] == ["Brightness", "OneOf"] and app.steps_box.children[4] is group
    child = group.step_controls["children"].children[0]
    assert child.step_controls["title"].description == "5.1. HorizontalFlip"
    child.step_controls["p"].value = 0.25
    assert app.chain.steps[4].steps[0].p == 0.25


def test_a_palette_click_builds_only_the_new_cards_widgets(app):
    """Each widget model is a message the page turns into a view: a click on ColorJitter built
    176 (a Layout and a style per widget, the Normalize card below rebuilt); alike ones share."""
    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    palette_button(app, "ColorJitter").click()
    new = [_instances[k] for k in set(_instances) - before]
    sliders = [m for m in new if type(m).__name__ == "FloatRangeSlider"]
    assert len(sliders) == 4  # brightness, contrast, saturation, hue: the new card's own
    assert len(new) <= 45, sorted(type(m).__name__ for m in new)


def test_new_steps_go_where_the_user_means_and_misplaced_colour_ops_are_named(app):
    palette_button(app, "ColorJitter").click()
    assert ops(app)[-2:] == ["ColorJitter", "Normalize"] and said(app, "notice") == ""
    # After the step the user selected (its title selects it; a second click clears it).
    app.steps_box.children[0].step_controls["title"].click()
    assert app.selected == (0,)
    palette_button(app, "GaussianBlur").click()
    assert ops(app)[:2] == ["RandomResizedCrop", "GaussianBlur"] and app.selected == (1,)
    app.steps_box.children[1].step_controls["title"].click()
    assert app.selected is None
    # Batch mixing closes the chain, and a second Normalize goes before it.
    palette_button(app, "MixUp").click()
    assert ops(app)[-2:] == ["Normalize", "MixUp"]
    # A colour op after Normalize is named with the fix; the preview still shows colours.
    app.select(len(app.chain.steps) - 2)  # Normalize
    palette_button(app, "Brightness").click()
    assert "step 8 (Brightness) comes after Normalize (step 7)" in said(app, "notice")
    assert "move it before step 7" in said(app, "notice")
    assert 40 < tile(app, "kornia", 0, 1).mean() < 215  # undone from the normalized scale, not blown out
    app.move(7, -1)
    assert said(app, "notice") == ""


def test_undo_and_redo_every_kind_of_edit(app):
    start = app.chain.to_dict()
    assert app.undo_button.disabled and app.redo_button.disabled
    app.add("Invert")
    app.steps_box.children[2].step_controls["degrees"].value = (-30.0, 30.0)
    app.seed.value = 99
    app.move(0, 1)
    states = [app.chain.to_dict()]
    for _ in range(4):
        app.undo_button.click()
        states.append(app.chain.to_dict())
    assert states[-1] == start and app.undo_button.disabled and not app.redo_button.disabled
    assert states[1]["seed"] == 99 and states[2]["seed"] == start["seed"]
    assert states[3]["steps"][2]["params"]["degrees"] == start["steps"][2]["params"]["degrees"]
    assert len(states[3]["steps"]) == 6
    for k in range(4):
        app.redo()
        assert app.chain.to_dict() == states[3 - k]
    assert app.redo_button.disabled
    assert app.steps_box.children[2].step_controls["degrees"].value == (-30.0, 30.0)  # cards follow
    app.undo()
    app.remove(0)  # a new edit: what was undone can no longer be redone
    assert app.redo_button.disabled
    app.undo()
    app.undo()
    assert "nothing to undo" not in said(app)
    assert app.chain.to_dict()["steps"][2]["params"]["degrees"] == [-30.0, 30.0]


def test_after_undoing_an_add_the_next_op_goes_before_normalize_again(app):
    # The added step was selected; undone, its place holds Normalize, which must not stay selected.
    default = ops(app)
    palette_button(app, "ColorJitter").click()
    app.undo()
    assert ops(app) == default and app.selected is None
    palette_button(app, "Contrast").click()
    assert ops(app)[-2:] == ["Contrast", "Normalize"] and said(app, "notice") == ""
    app.undo()
    app.redo()
    assert app.selected is None


def test_the_params_table_follows_every_change_and_sits_under_its_tile(app):
    pick = app.preview.cells["kornia"][1][1].children[1]  # image 2, draw 2: its search button
    pick.click()
    assert app.picked == (1, 1, "kornia") and app.preview.inspectors[1].value
    assert app.preview.inspectors[0].value == "" and "image 2, draw 2 (kornia" in app.inspector.value
    assert "wb-picked" in app.preview.cells["kornia"][1][1]._dom_classes
    app.remove(1)  # HorizontalFlip goes: the table no longer lists it
    assert "HorizontalFlip" not in app.preview.inspectors[1].value and "Rotate" in app.preview.inspectors[1].value
    app.group(1)
    app.steps_box.children[1].step_controls["kind"].value = "SomeOf"
    assert "SomeOf" in app.preview.inspectors[1].value and "OneOf" not in app.preview.inspectors[1].value
    app.backend.value = "dali"
    assert "(dali, seed" not in app.preview.inspectors[1].value  # kornia's tile is gone: closed, not stale
    assert app.picked is None and app.preview.inspectors[1].value == ""
    app.compare.value = "kornia"
    app.inspect(1, 0, "kornia")
    assert "(kornia, seed" in app.preview.inspectors[1].value
    app.draws.value = 1
    assert "draw 1 (kornia" in app.preview.inspectors[1].value


def test_two_backends_side_by_side_tile_by_tile_saying_where_their_draws_differ(app):
    app.backend.value = "dali"
    assert list(app.results) == ["dali"] and app.results["dali"][0].backend == "dali"
    app.compare.value = "kornia"
    assert list(app.results) == ["dali", "kornia"]
    row = app.preview.widget.children[1]  # image 1's row: the original, then per draw dali | kornia
    under = row.children[1].children[1]  # what sits under the row's strip: a cell per tile
    assert [c._dom_classes[-1] for c in under.children] == ["wb-backend-dali", "wb-backend-kornia"] * 2
    assert labels(row)[:2] == ["image 1", "draw 1"] and labels(row)[2] in ("kornia ≠", "kornia =")
    # Side by side: in the strip, draw 1's dali tile, then its kornia tile, then draw 2's.
    positions = [app.preview.tile_position(b, 0, k) for k in range(2) for b in ("dali", "kornia")]
    assert [line for line, _ in positions] == [0] * 4 and [x for _, x in positions] == sorted(x for _, x in positions)
    for k in range(2):  # and each is that backend's draw
        for b in ("dali", "kornia"):
            shown = tile(app, b, 0, k + 1).astype(np.int16)
            expected = wb.render._fit(wb.to_display(app.chain, app.results[b][k].images[0]), 64).astype(np.int16)
            assert np.abs(shown - expected).mean() < 6.0, (b, k)  # JPEG blurs colour across the 2-pixel gaps
    # The backends draw from their own streams: the captions and the note say so.
    captions = [app.preview.captions["kornia"][n][k].value for n in range(2) for k in range(2)]
    assert all(c.startswith(("kornia ≠", "kornia =")) for c in captions)
    assert [app.preview.captions["dali"][0][k].value for k in range(2)] == ["draw 1", "draw 2"]
    assert app.preview.captions["dali"][0][0].tooltip == "dali, draw 1 of image 1"
    assert "drew different values" in said(app.preview, "summary") and "tiles marked ≠" in said(app.preview, "summary")
    # Collapsed ranges and p = 1: both backends draw alike, and the note says so.
    chain = wb.Chain(seed=3).add("Rotate", p=1.0, degrees=[10, 10]).add("Brightness", factor=[1.2, 1.2])
    app.chain.steps[:] = chain.steps
    app.sync()
    assert all(app.preview.captions["kornia"][n][k].value == "kornia =" for n in range(2) for k in range(2))
    assert "drew the same values for all 4 samples" in said(app.preview, "summary")


def test_bad_values_and_failing_chains_keep_the_app_and_the_chain(app):
    before = app.chain.to_dict()
    assert app.set_value(0, "size", [0, 10]) is False  # what a bad value from any control does
    assert "step 1 (RandomResizedCrop): parameter 'size'" in said(app)
    assert app.chain.to_dict() == before
    app.chain.add("CenterCrop", size=[4000, 4000])
    app.sync()
    assert "larger than image" in said(app, "preview_error")  # where the preview is
    assert "wb-stale" in app.grid._dom_classes and app.preview.strips  # the last preview stays, dimmed
    app.remove(len(app.chain.steps) - 1)
    assert said(app, "preview_error") == "" and "wb-stale" not in app.grid._dom_classes
    app.path.value = str(ROOT / "missing.yaml")
    app.load_button.click()
    assert "cannot read chain file" in said(app) and app.chain.to_dict() == before


def test_a_chain_too_big_for_memory_is_refused_where_the_preview_was(small_images):
    app = wb.Workbench(images=small_images[:2], debounce_s=0, draws=3, cell=32)
    tiles = tile(app, "kornia", 0, 1).copy()
    from workbench.backends.memory import available_memory

    side = 8192
    app.chain.steps.insert(1, wb.Step.create("Resize", size=[side, side]))
    wanted = 7 * side * side * 3 * 4 * 2 * 4  # 7 float copies of 2 images, 3 draws kept + 1
    assert wanted > available_memory("cpu"), "this machine has too much memory for this test's chain"
    app.sync()
    message = said(app, "preview_error")
    assert "works on 2 image(s) of up to 8192x8192" in message and "GB is available" in message
    assert "they reach that size at step 2, Resize" in message  # the step that made them that big
    assert "max_images" in message and app.chain.steps[1].op == "Resize"  # the chain stays
    assert np.array_equal(tile(app, "kornia", 0, 1), tiles)
    app.remove(1)
    assert said(app, "preview_error") == "" and ops(app)[1] == "HorizontalFlip"


def test_seed_resample_draws_and_step_through(app, small_images):
    first = [r.images.copy() for r in app.results["kornia"]]
    app.seed.value = 8
    assert app.chain.seed == 8 and not np.array_equal(app.results["kornia"][0].images, first[0])
    app.resample.click()
    assert app.seed.value == 9 and app.chain.seed == 9
    app.seed.value = 8
    app.draws.value = 8  # up to 8 draws
    assert len(app.results["kornia"]) == 8 and len(app.preview.captions["kornia"][0]) == 8
    assert len(app.preview.strips[0]) == 2  # 6 tiles a strip: the row goes on to a second
    app.draws.value = 3
    app.upto.value = 1  # after step 1 only: the crop
    out = app.results["kornia"][0]
    assert out.images.shape == (2, 224, 224, 3) and len(out.params[0]) == 1
    assert np.array_equal(out.images, wb.Chain(seed=8, steps=app.chain.steps[:1]).run(small_images[:2]).images)


def test_group_actions_are_labelled_and_enabled_where_they_apply(small_images):
    chain = wb.Chain(seed=4).add("Invert", p=1.0).add("VerticalFlip", p=1.0).add("Brightness")
    app = wb.Workbench(images=small_images[:2], chain=chain, debounce_s=0, draws=1, cell=64)
    actions = app.steps_box.children[0].step_controls["actions"]
    assert [b.description for b in actions.values()] == ["group", "into group above", "out of group", "ungroup"]
    assert [b.disabled for b in actions.values()] == [False, True, True, True]
    actions["group"].click()
    assert [b.disabled for b in app.steps_box.children[1].step_controls["actions"].values()] == [False, False, True,
                                                                                                   True]
    assert not app.steps_box.children[0].step_controls["actions"]["ungroup"].disabled


def test_the_estimate_panel_runs_beside_its_button_and_survives_a_failing_part(app, monkeypatch):
    panel = app.estimates
    panel.batch_size.value, panel.image_size.value, panel.workers.value = 4, "64", 0
    panel.runs.value, panel.batches.value = 2, 4
    app.chain.steps[1:3] = [wb.Step.create("SomeOf", n=1, steps=[wb.Step.create("Rotate"), wb.Step.create("Invert")])]
    app.sync()
    app.estimate_button.click()
    assert panel.button.disabled and not panel.cancel_button.disabled  # no second click while it runs
    est = panel.wait(300)
    assert isinstance(est, Estimate) and [s.op for s in est.steps] == ["RandomResizedCrop", "SomeOf", "Brightness",
                                                                        "Normalize"]
    assert not panel.button.disabled and f"{est.images_per_s:.1f} images/s" in panel.report.value
    assert said(panel).startswith(f"estimate: {est.images_per_s:.0f} images/s") and said(app) == ""
    assert panel.label.value == "done"
    # A part that fails after the measurement is named; the figures stay.
    monkeypatch.setattr(Estimate, "plot", lambda self, target=None: 1 / 0)
    panel._show(est, None)
    assert f"{est.images_per_s:.1f} images/s" in panel.report.value and "Delivers" in panel.report.value
    assert "the plot failed (ZeroDivisionError" in said(panel)
    # A new run clears the last result while it measures.
    panel.image_size.value = "tiny"
    app.estimate_button.click()
    assert "estimate failed: image size is empty (the images' own), N or HxW" in said(panel)
    assert panel.result is est  # refused before starting: the last result stays
    panel.image_size.value = "64"
    thread = app.estimate()
    assert panel.result is None and panel.report.value == "" and panel.plot.layout.display == "none"
    panel.cancel_button.click()
    thread.join(60)
    assert not thread.is_alive()


def test_estimate_button_measures_and_shows_plot_and_advice(app, monkeypatch):
    asked = []  # what the panel asks the estimate for, recorded on the way through
    estimate, compare = wb.Chain.estimate, wb.Chain.compare_backends
    monkeypatch.setattr(wb.Chain, "estimate", lambda self, **kw: asked.append(kw) or estimate(self, **kw))
    monkeypatch.setattr(wb.Chain, "compare_backends", lambda self, **kw: asked.append(kw) or compare(self, **kw))
    panel = app.estimates
    panel.batch_size.value, panel.image_size.value, panel.workers.value = 4, "40x48", 0  # small files: quick to measure
    panel.runs.value = 2  # the runs box sets how many whole-loader runs the figure is the median of
    panel.target.value = 1e9  # no machine delivers this: the advice must say it falls short
    app.estimate_button.click()
    est = panel.wait(300)
    assert isinstance(est, Estimate) and (asked[-1]["runs"], asked[-1]["batches"]) == (2, None)  # 256 images' worth
    assert (est.backend, est.batch_size, est.image_size, est.workers) == ("kornia", 4, (40, 48), 0)
    assert len(est.run_rates) == 2
    assert [s.op for s in est.steps] == [s.op for _, s in app.chain.enabled_steps()]
    assert f"{est.images_per_s:.1f} images/s" in panel.report.value
    assert "Too slow" in panel.report.value  # noisy or not: no run comes near 1e9 images/s
    assert panel.plot.value[:8] == b"\x89PNG\r\n\x1a\n" and panel.plot.layout.display == ""
    assert panel.bar.value == 1.0
    panel.compare.value, panel.target.value = True, 0
    panel.batches.value = 3  # the batches box sets how many batches each run times
    app.estimate_button.click()
    panel.wait(600)
    assert (asked[-1]["runs"], asked[-1]["batches"]) == (2, 3)
    assert list(panel.result.estimates) == ["kornia", "dali", "albumentations"]
    assert all(len(e.run_rates) == 2 for e in panel.result.estimates.values())
    assert "dali on cpu" in panel.report.value and "Delivers" in panel.report.value


def test_the_compile_box_measures_the_compiled_loader_and_shows_its_first_call(app):
    panel = app.estimates
    panel.batch_size.value, panel.image_size.value, panel.workers.value = 4, "40x48", 0
    panel.compile.value = True
    panel.runs.value, panel.batches.value = 2, 4
    app.estimate_button.click()
    est = panel.wait(300)
    assert est.compile_seconds > 0 and est.label == "kornia on cpu, torch.compile"
    assert f"first compiled call: {est.compile_seconds:.1f} s" in panel.report.value
    app.backend.value = "albumentations"
    app.estimate_button.click()
    panel.wait(60)
    assert "estimate failed" in said(panel) and "torch_compile=True" in said(panel)


def test_the_estimate_runs_beside_the_kernel_and_can_be_cancelled(app):
    """The estimate button returns at once: the measurement runs on a thread while the kernel
    (and the app) stay usable, the bar moves, edits do not reach the running measurement, and
    cancel stops it, its measuring process included."""
    import psutil

    panel = app.estimates
    # Large enough to take far longer than the cancel below needs (minutes on 2 cores).
    panel.batch_size.value, panel.image_size.value, panel.workers.value = 32, "512", 0
    measured = app.chain.to_dict()
    started = time.monotonic()
    thread = app.estimate()
    assert thread is not None and thread.is_alive() and time.monotonic() - started < 5
    assert not panel.cancel_button.disabled and panel.button.disabled
    assert app.estimate() is None  # a second one waits for the first
    assert "an estimate is running: wait for it, or press cancel" in said(panel)
    app.chain.add("Invert")  # the kernel is free: code and widgets go on
    app.sync()
    deadline = time.monotonic() + 120
    while panel.bar.value == 0.0 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 0.0 < panel.bar.value < 1.0, "the bar moves while measuring"
    # The measuring process, and its own children: the warm process it was forked from stays (warm.py).
    warm = {p.pid for p in psutil.Process().children() if "--warm" in p.cmdline()}
    children = {p for p in psutil.Process().children(recursive=True) if p.pid not in warm}
    assert children, "the measurement runs in a child process"
    panel.cancel_button.click()
    panel.wait(60)
    assert not thread.is_alive() and panel.result is None
    assert "estimate cancelled" in said(panel) and panel.label.value == "cancelled" and panel.cancel_button.disabled
    assert not panel.button.disabled
    assert not [p for p in children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], "child stopped"
    app.remove(len(app.chain.steps) - 1)
    assert app.chain.to_dict() == measured
    # Measured to the end, the copy taken at the click is what the estimate reports.
    panel.batch_size.value, panel.image_size.value, panel.batches.value = 4, "40x48", 4
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
    app.undo()  # the load is an edit like any other
    assert app.chain.steps[3].params["factor"] == [1.5, 1.5]
    app.redo()
    app.export_folder.value = str(tmp_path / "out")
    app.export_name.value = "../escape.py"
    app.export_button.click()
    assert "refusing to write" in said(app.exports) and not (tmp_path / "escape.py").exists()
    app.export_name.value = "aug.py"
    app.export_button.click()
    script = tmp_path / "out" / "aug.py"
    assert script.read_text() == app.chain.export("kornia") and "<span" in app.code.value
    lines = script.read_text().count("\n")
    assert said(app.exports).startswith(f"wrote {tmp_path / 'out' / 'aug.py'} ({lines} lines); run it: python ")
    proc = subprocess.run([sys.executable, str(script), "--images", str(small_folder), "--save",
                           str(tmp_path / "o.npz"), "--seed", str(app.chain.seed)],
                          capture_output=True, text=True, env=ENV, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert np.array_equal(np.load(tmp_path / "o.npz")["images"], app.chain.run(wb.load_images(small_folder)).images)


def test_export_writes_the_snippet_form_when_chosen(app, tmp_path):
    app.export_folder.value = str(tmp_path)
    app.backend.value = "albumentations"
    app.exports.form.value = "snippet"
    app.export_button.click()
    snippet = tmp_path / "augment_albumentations_snippet.py"
    assert snippet.read_text() == app.chain.export("albumentations", form="snippet")
    assert "augmentation = A.Compose([" in snippet.read_text() and "Compose" in app.code.value
    assert said(app.exports).startswith(f"wrote {snippet} ({snippet.read_text().count(chr(10))} lines): the chain "
                                        "alone, to paste")
    app.exports.form.value = "program"
    app.export_button.click()
    assert (tmp_path / "augment_albumentations.py").read_text() == app.chain.export("albumentations")


def test_export_never_replaces_a_file_it_did_not_write_without_asking(app, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    mine = folder / "augment_kornia.py"
    mine.write_text("# a colleague's export\n")
    app.export_folder.value = str(folder)
    assert app.export() is None and mine.read_text() == "# a colleague's export\n"
    assert "already exists and this app did not write it" in said(app.exports)
    assert app.exports.replace_button.layout.display == ""
    app.exports.replace_button.click()
    assert mine.read_text() == app.chain.export("kornia") and said(app.exports).startswith("replaced ")
    assert app.exports.replace_button.layout.display == "none"
    app.seed.value = 123
    assert app.export() is not None and "SEED = 123" in mine.read_text()  # its own file: replaced, and said
    assert said(app.exports).startswith("replaced")
    mine.write_text("# edited by hand\n")  # changed since: asked again
    assert app.export() is None and mine.read_text() == "# edited by hand\n"


def test_the_run_hint_repeats_the_images_and_annotation_files(tmp_path):
    images, targets = wb.load_annotated(limit=2)
    app = wb.Workbench(coco=wb.data.SAMPLE_DATA.parent / "sample_targets" / "instances.json", max_images=2,
                       debounce_s=0, draws=1, cell=32)
    app.export_folder.value = str(tmp_path)
    app.export()
    hint = said(app.exports)
    assert f"--images {app.source}" in hint and "--coco " in hint and "instances.json" in hint
    # Given annotations, the program carries targets from the start; without them, no --coco to pass.
    written = (tmp_path / "augment_kornia.py").read_text()
    assert app.exports.options["targets"].value and "def augment_targets(" in written
    app.exports.options["targets"].value = False
    app.export()
    assert "--coco" not in said(app.exports) and not (tmp_path / "augment_kornia.py").read_text().count(
        "def augment_targets(")


def test_each_export_option_box_says_what_it_adds_and_the_program_carries_it(app, tmp_path):
    chain = app.chain
    plain = chain.export("kornia").count("\n")
    for option in ("targets", "shards", "gpu_decode"):  # labelled by the refresh that built the preview
        with_it = chain.export("kornia", **{option: True}).count("\n")
        assert with_it > plain and app.exports.options[option].description == f"{option} (+{with_it - plain:,} lines)"
    app.export_folder.value = str(tmp_path)
    app.exports.options["shards"].value = True
    app.export()
    written = (tmp_path / "augment_kornia.py").read_text()
    assert written == chain.export("kornia", shards=True) and "class TarShardDataset(" in written
    assert said(app.exports).startswith(f"wrote {tmp_path / 'augment_kornia.py'} ({written.count(chr(10))} lines)")
    # A backend without the option greys its box out; the snippet form takes none.
    app.backend.value = "albumentations"
    assert app.wait(60)
    assert app.exports.options["shards"].disabled and not app.exports.options["targets"].disabled
    assert app.exports.options["shards"].description == "shards (not on albumentations)"
    app.export()
    assert "def shard_paths(" not in (tmp_path / "augment_albumentations.py").read_text()
    app.exports.form.value = "snippet"
    assert all(box.disabled for box in app.exports.options.values())
    # A step that reads boxes needs targets: in the file whether ticked or not, and said so.
    assert app.exports.costs(wb.Chain().add("RandomIoUCrop"), "kornia")["targets"] == 0
    assert app.exports.options["targets"].description == "targets (the chain needs it)"


def test_the_preview_recomputes_at_once_in_the_background_and_coalesces(small_images):
    app = wb.Workbench(images=small_images[:2], draws=1, cell=32)  # the default: background, no delay
    assert app.refreshes == 1
    degrees = app.steps_box.children[2].step_controls["degrees"]
    started = time.monotonic()
    for k in range(6):
        degrees.value = (float(10 + k), float(10 + k))
    returned = time.monotonic() - started
    assert app.wait(60)
    assert returned < 1.0, "the control's observer returns without waiting for the preview"
    assert app.inspect(0, 0)[2]["angle"] == pytest.approx(15.0)  # the last change is what shows
    assert 2 <= app.refreshes <= 7  # changes that arrived while it computed were taken together


def test_debounced_changes_coalesce(small_images):
    app = wb.Workbench(images=small_images[:1], debounce_s=0.2, draws=1, cell=32)
    app.steps_box.children[2].step_controls["degrees"].value = (30.0, 30.0)
    app.steps_box.children[2].step_controls["degrees"].value = (40.0, 40.0)
    assert app.wait(60) and app.refreshes == 2  # the first view, then both changes at once
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
    assert ops(app) == ["OneOf", "VerticalFlip", "Brightness"]
    app.steps_box.children[1].step_controls["actions"]["indent"].click()  # VerticalFlip into it
    group = app.chain.steps[0]
    assert [s.op for s in group.steps] == ["Invert", "VerticalFlip"] and len(app.chain.steps) == 2
    card = app.steps_box.children[0]
    children = card.step_controls["children"].children
    assert [c.step_controls["p"].value for c in children] == [1.0, 1.0]
    assert children[1].step_controls["title"].description == "1.2. VerticalFlip"
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
    # A new op added with a group's child selected goes into the group, after that child; one that
    # cannot be in a group goes after the group.
    app.select((0, 1))
    app.add("Invert")
    assert [s.op for s in app.chain.steps[0].steps] == ["Invert", "VerticalFlip", "Invert"]
    assert app.chain.steps[0].params["weights"] == [1.0, 3.0, 1.0]  # the new child's weight: 1
    app.select((0, 2))
    app.add("RandAugment")
    assert ops(app) == ["OneOf", "RandAugment", "Brightness"] and app.selected == (1,)
    app.undo()
    app.undo()
    assert app.selected is None  # undone: the selected place may hold another step now
    # Kind switch keeps the children; a policy cannot go in (a crop can); ungroup puts them back.
    app.steps_box.children[0].step_controls["kind"].value = "Sequential"
    assert app.chain.steps[0].op == "Sequential" and len(app.chain.steps[0].steps) == 2
    app.steps_box.children[1].step_controls["title"].click()
    assert app.selected == (1,)
    app.steps_box.children[1].step_controls["title"].click()  # selected already: a second click clears it
    assert app.selected is None
    app.add("RandAugment")  # nothing closes this chain: at its end
    app.indent(2)
    assert "no group just above it" in said(app)
    app.move(2, -1)  # RandAugment right after the group
    app.indent(1)
    assert "RandAugment must apply to every sample" in said(app) and app.chain.steps[1].op == "RandAugment"
    app.steps_box.children[0].step_controls["children"].children[1].step_controls["actions"]["outdent"].click()
    assert ops(app) == ["Sequential", "VerticalFlip", "RandAugment", "Brightness"]
    app.add("PadIfNeeded")  # a pad goes into a group: its samples leave it at the padded size
    app.move(4, -3)
    app.indent(1)
    assert [s.op for s in app.chain.steps[0].steps] == ["Invert", "PadIfNeeded"] and not said(app)
    app.steps_box.children[0].step_controls["children"].children[1].step_controls["actions"]["outdent"].click()
    app.steps_box.children[0].step_controls["actions"]["ungroup"].click()
    assert ops(app) == ["Invert", "PadIfNeeded", "RandAugment", "Brightness", "VerticalFlip"]  # (move swaps)
    assert app.chain.steps[0].p == 0.5
