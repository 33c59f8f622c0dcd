"""Targets in the app and the headless grid: masks tinted, boxes and keypoints drawn on every
tile where the chain moved them, a checkbox per kind that redraws without running the chain,
and a chain that cannot move targets still previewing its images with the reason said."""
import html
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import workbench as wb
from workbench.errors import InputError
from workbench.render import MASK_OPACITY, draw_targets, fit_tile, label_colour, preview_grid

from conftest import annotated_folder, said, tile

GREY = 128
H, W = 64, 96  # with cell=96 a tile shows the image at scale 1, 16 grey rows above and below
TOP = (96 - H) // 2
BOX = [4.0, 8.0, 30.0, 40.0]
MIRRORED = [W - 30.0, 8.0, W - 4.0, 40.0]
BLUE = label_colour(3)


def grey_image() -> np.ndarray:
    return np.full((H, W, 3), GREY, np.uint8)


def looks_like(pixel, colour, tol=45) -> bool:
    """JPEG tiles: near the colour, channel by channel."""
    return bool(np.abs(np.asarray(pixel, np.int16) - np.asarray(colour, np.int16)).max() <= tol)


def box_app(chain, **kwargs):
    targets = {"boxes": [[BOX]], "box_labels": [[3]]}
    return wb.Workbench(images=[grey_image()], chain=chain, targets=targets, debounce_s=0, draws=1, cell=96, **kwargs)


def flip_chain():
    return wb.Chain(seed=1).add("HorizontalFlip", p=1.0)


# ----- the app ------------------------------------------------------------------------------
def test_a_flip_moves_the_box_on_the_draw_and_not_on_the_original():
    app = box_app(flip_chain())
    assert app.results["kornia"][0].boxes[0].tolist() == [MIRRORED]
    draw, original = tile(app, "kornia", 0, 1), tile(app, "kornia", 0, 0)
    row = TOP + 24  # halfway down the box
    assert looks_like(draw[row, int(MIRRORED[0])], BLUE) and looks_like(draw[row, int(MIRRORED[2]) - 1], BLUE)
    assert looks_like(draw[row, int(BOX[0])], (GREY,) * 3) and looks_like(draw[row, int(BOX[2]) - 1], (GREY,) * 3)
    assert looks_like(original[row, int(BOX[0])], BLUE) and looks_like(original[row, int(MIRRORED[0])], (GREY,) * 3)
    # Only the kind given can be ticked.
    assert [(k, b.value, b.disabled) for k, b in app.show.items()] == \
        [("masks", False, True), ("boxes", True, False), ("keypoints", False, True)]


def test_unticking_boxes_hides_them_without_running_the_chain_again():
    app = box_app(flip_chain())
    cache = app._caches["kornia"]
    calls = []
    run = cache.run
    cache.run = lambda *a, **k: calls.append(1) or run(*a, **k)
    row = TOP + 24
    app.show["boxes"].value = False
    assert calls == [] and app.shown_kinds() == ()
    assert looks_like(tile(app, "kornia", 0, 1)[row, int(MIRRORED[0])], (GREY,) * 3)
    assert looks_like(tile(app, "kornia", 0, 0)[row, int(BOX[0])], (GREY,) * 3)
    app.show["boxes"].value = True
    assert calls == []
    assert looks_like(tile(app, "kornia", 0, 1)[row, int(MIRRORED[0])], BLUE)
    app.draws.value = 2  # an edit still runs the chain, and the boxes follow
    assert len(calls) == 2 and looks_like(tile(app, "kornia", 0, 2)[row, int(MIRRORED[0])], BLUE)


def test_the_mask_overlay_tints_inside_the_mask_only():
    mask = np.zeros((H, W), np.uint8)
    mask[10:50, 20:60] = 2
    app = wb.Workbench(images=[grey_image()], chain=wb.Chain(seed=1).add("VerticalFlip", p=1.0),
                       targets={"masks": [mask]}, debounce_s=0, draws=1, cell=96)
    assert app.show["masks"].value and app.show["boxes"].disabled
    tinted = np.round(GREY * (1 - MASK_OPACITY) + np.asarray(label_colour(2)) * MASK_OPACITY)
    draw = tile(app, "kornia", 0, 1)
    # The flip moved the mask: rows 10-49 became rows 14-53.
    assert looks_like(draw[TOP + 16, 40], tinted, tol=12) and looks_like(draw[TOP + 8, 40], (GREY,) * 3, tol=12)
    assert not looks_like(draw[TOP + 16, 40], (GREY,) * 3, tol=30)
    assert looks_like(draw[TOP + 30, 10], (GREY,) * 3, tol=12)
    app.show["masks"].value = False
    assert looks_like(tile(app, "kornia", 0, 1)[TOP + 30, 40], (GREY,) * 3, tol=12)


def test_a_chain_that_cannot_move_targets_still_previews_and_says_why(unfollowed_op):
    chain = wb.Chain(seed=1).add("HorizontalFlip", p=1.0).add(unfollowed_op)
    app = box_app(chain)
    assert f"{unfollowed_op} cannot move boxes" in said(app) and "targets are not shown" in said(app)
    run = app.results["kornia"][0]
    assert run.images.shape == (1, H, W, 3) and run.targets is None
    row = TOP + 24
    assert not looks_like(tile(app, "kornia", 0, 1)[row, int(MIRRORED[0])], BLUE)  # no box on the draw
    assert looks_like(tile(app, "kornia", 0, 0)[row, int(BOX[0])], BLUE)  # the original keeps its own
    app.upto.value = 1  # step through to before the elastic step: targets move again
    assert said(app) == "" and app.results["kornia"][0].boxes[0].tolist() == [MIRRORED]
    assert looks_like(tile(app, "kornia", 0, 1)[row, int(MIRRORED[0])], BLUE)


def test_step_through_and_a_second_backend_move_the_targets_too():
    chain = wb.Chain(seed=1).add("HorizontalFlip", p=1.0).add("VerticalFlip", p=1.0)
    points = {"boxes": [[BOX]], "box_labels": [[3]], "keypoints": [[[10.0, 20.0]]]}
    app = wb.Workbench(images=[grey_image()], chain=chain, targets=points, debounce_s=0, draws=1, cell=96)
    assert app.results["kornia"][0].boxes[0].tolist() == [[W - 30.0, H - 40.0, W - 4.0, H - 8.0]]
    assert app.results["kornia"][0].keypoints[0].tolist() == [[W - 1 - 10.0, H - 1 - 20.0]]
    app.upto.value = 1
    assert app.results["kornia"][0].boxes[0].tolist() == [MIRRORED]
    app.compare.value = "albumentations"
    assert app.results["albumentations"][0].keypoints[0].tolist() == [[W - 1 - 10.0, 20.0]]
    draw = tile(app, "albumentations", 0, 1)
    assert looks_like(draw[TOP + 24, int(MIRRORED[0])], BLUE)
    assert looks_like(draw[TOP + 20, W - 1 - 10], label_colour(0), tol=60)  # keypoint 0's filled dot


def test_targets_follow_max_images_and_bad_targets_are_refused():
    images = [grey_image(), grey_image() // 2, grey_image() * 0]
    boxes = [[BOX], [[0, 0, 5, 5]], [[1, 1, 2, 2]]]
    app = wb.Workbench(images=images, chain=flip_chain(), targets={"boxes": boxes}, max_images=2, debounce_s=0,
                       draws=1, cell=96)
    assert [b.tolist() for b in app.results["kornia"][0].boxes] == [[MIRRORED], [[W - 5.0, 0.0, W, 5.0]]]
    with pytest.raises(InputError, match=r"boxes of image 1: entry 1 \[0.0, 0.0, 500.0, 5.0\] lies outside"):
        wb.Workbench(images=images[:1], targets={"boxes": [[[0, 0, 500, 5]]]}, debounce_s=0, draws=1)
    with pytest.raises(InputError, match=r"unknown key\(s\) \['box'\]"):
        wb.Workbench(images=images[:1], targets={"box": [[BOX]]}, debounce_s=0, draws=1)


def test_without_targets_the_app_has_no_target_row():
    app = wb.Workbench(images=[grey_image()], chain=flip_chain(), debounce_s=0, draws=1, cell=96)
    assert app.targets is None and app.results["kornia"][0].targets is None
    assert all(b.disabled and not b.value for b in app.show.values())
    assert not any(b in row.children for row in app.widget.children if hasattr(row, "children")
                   for b in app.show.values())
    with_targets = box_app(flip_chain())
    assert len(with_targets.widget.children) == len(app.widget.children) + 1


# ----- drawing ------------------------------------------------------------------------------
def test_draw_targets_kinds_and_visibility():
    image = np.zeros((40, 40, 3), np.uint8)
    mask = np.zeros((40, 40), np.uint8)
    mask[:, 20:] = 5
    out = draw_targets(image, mask=mask, boxes=[[2, 2, 18, 18]], box_labels=[7],
                       keypoints=[[10, 30], [30, 30]], keypoints_visible=[True, False])
    assert out[15, 2].tolist() == list(label_colour(7)) and out[15, 3].tolist() == list(label_colour(7))
    assert out[15, 4].tolist() == [0, 0, 0] and out[15, 1].tolist() == [0, 0, 0]  # 2-pixel lines inside the box
    assert out[17, 10].tolist() == list(label_colour(7)) and out[18, 10].tolist() == [0, 0, 0]  # ends at y = 18
    assert out[5, 30].tolist() == [round(c * MASK_OPACITY) for c in label_colour(5)]  # label 5 tinted
    assert out[10, 14].tolist() == [0, 0, 0]  # label 0 left clear
    assert out[30, 10].tolist() == list(label_colour(0))  # a visible keypoint: filled
    assert out[30, 30].tolist() == out[5, 30].tolist()  # not visible: a ring, its centre left as it was
    assert out[30, 33].tolist() == list(label_colour(1))
    only_boxes = draw_targets(image, mask=mask, boxes=[[2, 2, 18, 18]], box_labels=[7], keypoints=[[10, 30]],
                              show=("boxes",))
    assert only_boxes[5, 30].tolist() == [0, 0, 0] and only_boxes[30, 10].tolist() == [0, 0, 0]
    assert only_boxes[15, 2].tolist() == list(label_colour(7))


def test_fit_tile_scales_the_targets_with_the_image():
    image = np.zeros((100, 200, 3), np.uint8)  # into 100 x 100: scale 0.5, 25 grey rows above
    out = fit_tile(image, 100, {"boxes": np.array([[100.0, 40.0, 180.0, 80.0]]), "box_labels": np.array([3])})
    assert out[55, 50].tolist() == list(BLUE) and out[55, 89].tolist() == list(BLUE)
    assert out[55, 48].tolist() == [0, 0, 0] and out[55, 91].tolist() == [0, 0, 0]
    assert out[45, 70].tolist() == list(BLUE) and out[44, 70].tolist() == [0, 0, 0]
    assert out[24, 70].tolist() == [40, 40, 40] and out[25, 70].tolist() == [0, 0, 0]  # the grey bar above
    assert np.array_equal(fit_tile(image, 100, {"boxes": [[100, 40, 180, 80]]}, show=()), wb.render._fit(image, 100))


def test_preview_grid_draws_given_and_moved_targets(unfollowed_op):
    targets = {"boxes": [[BOX]], "box_labels": [[3]]}
    grid = preview_grid(flip_chain(), [grey_image()], draws=1, cell=96, gap=4, targets=targets)
    original, draw = grid[:, :96], grid[:, 100:]
    row = TOP + 24
    assert original[row, int(BOX[0])].tolist() == list(BLUE) and original[row, int(MIRRORED[0])].tolist() == [GREY] * 3
    assert draw[row, int(MIRRORED[0])].tolist() == list(BLUE) and draw[row, int(BOX[0])].tolist() == [GREY] * 3
    plain = preview_grid(flip_chain(), [grey_image()], draws=1, cell=96, gap=4, targets=targets, show=())
    assert np.array_equal(plain, preview_grid(flip_chain(), [grey_image()], draws=1, cell=96, gap=4))
    with pytest.raises(wb.errors.UnsupportedOpError, match="UnfollowedWarp cannot move boxes"):
        preview_grid(wb.Chain().add("UnfollowedWarp"), [grey_image()], draws=1, targets=targets)


# ----- annotation files: the app reads them, and its estimate measures moving them ---------------
def test_an_app_given_annotation_files_draws_their_targets_and_estimates_with_them(tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, [(64, 80)] * 3)
    Image.fromarray(grey_image()).save(folder / "unannotated.png")
    app = wb.Workbench(images=folder, coco=coco, masks=masks, chain=flip_chain(), debounce_s=0, draws=1,
                       max_images=2)
    assert [Path(image.source).name for image in app.images] == ["img0.png", "img1.png"]  # the annotated ones
    assert app.targets.kinds() == ["masks", "boxes", "keypoints"] and app.show["masks"].value
    moved = app.results["kornia"][0]
    assert moved.boxes[0][0, 0] == 80 - app.targets.boxes[0][0, 2]  # flipped with the image
    panel = app.estimates
    panel.batch_size.value, panel.workers.value, panel.runs.value, panel.batches.value = 4, 0, 2, 4
    app.estimate()
    est = panel.wait(300)
    assert list(est.stages) == ["decode", "augment", "targets"] and "moving targets" in panel.report.value
    assert "measured the images alone" not in panel.report.value
    with pytest.raises(InputError, match=r"targets=\) or as files \(coco=, masks=\), not both"):
        wb.Workbench(images=folder, coco=coco, targets={"boxes": [[BOX]]})


def test_an_app_given_targets_as_arrays_says_its_estimate_measured_the_images_alone(tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, [(64, 80)] * 2)
    images, targets = wb.load_annotated(folder, coco=coco, masks=masks)
    app = wb.Workbench(images=folder, targets=targets, chain=flip_chain(), debounce_s=0, draws=1)
    panel = app.estimates
    panel.batch_size.value, panel.workers.value, panel.runs.value, panel.batches.value = 4, 0, 2, 4
    app.estimate()
    est = panel.wait(300)
    assert "targets" not in est.stages
    assert "measured the images alone: the estimate reads targets from files" in html.unescape(panel.report.value)
