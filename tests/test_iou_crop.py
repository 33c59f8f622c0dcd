"""RandomIoUCrop (SSD's) is torchvision's: the window drawn from each image's boxes as they stand at
the step (its sampler, draw for draw), the pixels cut to it, the boxes whose centre falls outside it
dropped and the others cut to it; on Kornia with torch's generator the very windows torchvision draws
for a seed, on Albumentations from its own; a chain without boxes, a group and DALI refuse it saying why.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.errors import ChainError, InputError, UnsupportedOpError
from workbench.runtime.annotations import targets_from_arrays
from workbench.runtime.targets import centres_inside, iou_crop_window
from workbench.targets import SAMPLE_TARGETS

from conftest import annotated_folder, save_annotated

SETTINGS = {"sampler_options": [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0], "trials": 40, "scale": [0.3, 1.0],
            "aspect_ratio": [0.5, 2.0]}


@pytest.fixture(scope="module")
def annotated():
    """The sample photos and their hand-made boxes, labels, masks and keypoints."""
    return wb.load_annotated()


def _torch_draws():
    return (lambda n: int(torch.randint(low=0, high=n, size=(1,))), lambda: torch.rand(2).numpy())


def _random_boxes(rng, height, width):
    count = int(rng.integers(1, 6))
    x0, y0 = rng.integers(0, width - 2, count), rng.integers(0, height - 2, count)
    x1 = x0 + 1 + rng.integers(0, width - x0 - 1, count)
    y1 = y0 + 1 + rng.integers(0, height - y0 - 1, count)
    return np.stack([x0, y0, x1, y1], 1).astype(np.float32)


def test_the_sampler_draws_torchvisions_windows_for_the_same_seed(v2):
    from torchvision import tv_tensors
    rng = np.random.default_rng(0)
    cropped = left = 0
    for case in range(300):
        height, width = (int(v) for v in rng.integers(20, 700, 2))
        boxes = _random_boxes(rng, height, width)
        options = SETTINGS["sampler_options"] if case % 3 else [0.0, 0.5, 0.9, 2.0]
        transform = v2.RandomIoUCrop(sampler_options=options, min_scale=0.3 if case % 2 else 0.1)
        inputs = [tv_tensors.Image(torch.zeros(3, height, width)),
                  tv_tensors.BoundingBoxes(torch.from_numpy(boxes), format="XYXY", canvas_size=(height, width))]
        torch.manual_seed(case)
        theirs = transform.make_params(inputs)
        torch.manual_seed(case)
        settings = {**SETTINGS, "sampler_options": options, "scale": [transform.min_scale, 1.0]}
        ours = iou_crop_window(boxes, height, width, settings, *_torch_draws())
        if not theirs:
            assert ours is None, case
            left += 1
            continue
        cropped += 1
        assert ours == [theirs["left"], theirs["top"], theirs["left"] + theirs["width"],
                        theirs["top"] + theirs["height"]], case
        assert np.array_equal(centres_inside(boxes, ours), theirs["is_within_crop_area"].numpy()), case
        # and the stream stands where torchvision left it
        assert torch.rand(1).item() == (torch.manual_seed(case), transform.make_params(inputs),
                                        torch.rand(1).item())[2]
    assert cropped > 150 and left > 20, (cropped, left)


def test_the_sampler_keeps_the_iou_drawn_and_the_bounds():
    """Every window holds a box centre whose box overlaps it by at least the drawn IoU, with its sides
    and ratio in bounds; an option >= 1 leaves the image as it is."""
    rng = np.random.default_rng(1)
    for case in range(200):
        height, width = (int(v) for v in rng.integers(30, 400, 2))
        boxes = _random_boxes(rng, height, width)
        least = float(rng.choice([0.0, 0.3, 0.7]))
        settings = {**SETTINGS, "sampler_options": [least]}
        window = iou_crop_window(boxes, height, width, settings, lambda n: 0,
                                 lambda: rng.random(2, dtype=np.float32), rounds=5)
        if window is None:
            continue
        x0, y0, x1, y1 = window
        assert 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height
        assert x1 - x0 >= int(width * 0.3) and 0.5 <= (x1 - x0) / (y1 - y0) <= 2.0
        held = centres_inside(boxes, window)
        b = boxes[held].astype(np.float64)
        overlap = (np.clip(np.minimum(b[:, 2], x1) - np.maximum(b[:, 0], x0), 0, None)
                   * np.clip(np.minimum(b[:, 3], y1) - np.maximum(b[:, 1], y0), 0, None))
        union = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) + (x1 - x0) * (y1 - y0) - overlap
        assert held.any() and (overlap / union).max() >= least - 1e-6
    assert iou_crop_window(boxes, 50, 50, {**SETTINGS, "sampler_options": [1.0]}, lambda n: 0,
                           lambda: np.float32([0.5, 0.5])) is None


def _theirs(v2, pipeline, images, targets, seed):
    """torchvision's pipeline on each image in turn after one torch.manual_seed(seed): uint8 images,
    boxes and labels (SanitizeBoundingBoxes drops what RandomIoUCrop zeroes)."""
    from torchvision import tv_tensors
    torch.manual_seed(seed)
    out = []
    for image, boxes, labels in zip(images, targets["boxes"], targets["box_labels"]):
        height, width = image.shape[:2]
        sample = {"image": tv_tensors.Image(torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)),
                  "boxes": tv_tensors.BoundingBoxes(torch.as_tensor(boxes, dtype=torch.float32), format="XYXY",
                                                    canvas_size=(height, width)),
                  "labels": torch.as_tensor(labels)}
        done = pipeline(sample)
        out.append((done["image"].permute(1, 2, 0).numpy(), done["boxes"].numpy(), done["labels"].numpy()))
    return out


@pytest.mark.parametrize("ssd", [False, True], ids=["iou_crop", "ssd_geometry"])
def test_kornia_runs_what_torchvision_runs_for_the_same_seed(v2, annotated, ssd):
    """Imported from torchvision and run on Kornia with the same seed: the same windows, the same pixels
    and the same boxes as torchvision's own pipeline (SSD's geometry: zoom out, IoU crop, flip)."""
    images, targets = annotated
    steps = [v2.RandomIoUCrop()]
    if ssd:
        steps = [v2.RandomZoomOut(fill=[123, 117, 104]), *steps, v2.RandomHorizontalFlip()]
    theirs = _theirs(v2, v2.Compose([*steps, v2.SanitizeBoundingBoxes()]), images, targets, seed=11)
    chain = wb.Chain.from_torchvision(v2.Compose(steps), seed=11)
    assert [s.op for s in chain.steps] == (["RandomZoomOut", "RandomIoUCrop", "HorizontalFlip"] if ssd
                                           else ["RandomIoUCrop"])
    res = chain.run(images, backend="kornia", boxes=targets["boxes"], box_labels=targets["box_labels"])
    crop = [row[1 if ssd else 0] for row in res.params]
    assert sum(row["applied"] for row in crop) >= 2  # (a window was cut, not only the image kept)
    for n, (image, boxes, labels) in enumerate(theirs):
        ours = np.asarray(res.images[n])
        assert ours.shape == image.shape, n
        assert np.abs(ours * 255.0 - image).max() < 0.01, n
        assert np.array_equal(res.targets.box_labels[n], labels), n
        assert np.allclose(res.targets.boxes[n], boxes, atol=1e-4), n


@pytest.mark.parametrize("backend", ["kornia", "albumentations", "dali"])
def test_the_targets_follow_the_window(backend, annotated):
    """The image is the input cut to the reported window; the boxes whose centre it holds are cut to it
    (the others dropped with their labels); masks and keypoints are cut to it; after a zoom out the
    window is drawn from the moved boxes."""
    images, targets = annotated
    chain = wb.Chain(seed=2).add("RandomIoUCrop", sampler_options=[0.0, 0.3, 0.5])
    res = chain.run(images, backend=backend, **targets)
    for n, image in enumerate(images):
        row = res.params[n][0]
        assert row["applied"], n
        x0, y0, x1, y1 = (int(v) for v in row["crop_box"])
        assert np.array_equal(np.asarray(res.images[n]) if backend != "kornia" else
                              np.round(np.asarray(res.images[n]) * 255).astype(np.uint8),
                              np.asarray(image)[y0:y1, x0:x1]), n
        held = centres_inside(targets["boxes"][n], [x0, y0, x1, y1])
        assert held.any()
        expected = np.asarray(targets["boxes"][n], np.float64)[held] - [x0, y0, x0, y0]
        expected = np.clip(expected, 0, [x1 - x0, y1 - y0, x1 - x0, y1 - y0])
        assert np.allclose(res.targets.boxes[n], expected, atol=1e-4), n
        assert np.array_equal(res.targets.box_labels[n], np.asarray(targets["box_labels"][n])[held]), n
        assert np.array_equal(res.targets.masks[n], np.asarray(targets["masks"][n])[y0:y1, x0:x1]), n
        assert np.allclose(res.targets.keypoints[n], np.asarray(targets["keypoints"][n]) - [x0, y0], atol=1e-4)
    zoomed = wb.Chain(seed=3).add("RandomZoomOut", p=1.0, side_range=[2.0, 3.0])
    zoomed.add("RandomIoUCrop", sampler_options=[0.5])
    res = zoomed.run(images, backend=backend, **targets)
    cropped = [n for n in range(len(images)) if res.params[n][1]["applied"]]
    assert len(cropped) >= 2  # (the last photo's small boxes reach IoU 0.5 with no window: it stays whole)
    for n in cropped:
        left, _, top, _ = (int(v) for v in res.params[n][0]["padding"])
        moved = np.asarray(targets["boxes"][n], np.float64) + [left, top, left, top]
        assert _best_iou(moved, [int(v) for v in res.params[n][1]["crop_box"]]) >= 0.5, n


def _best_iou(boxes, window):
    """The largest IoU with `window` of the boxes whose centre it holds (0 when it holds none)."""
    x0, y0, x1, y1 = window
    b = np.asarray(boxes, np.float64)[centres_inside(boxes, window)]
    overlap = (np.clip(np.minimum(b[:, 2], x1) - np.maximum(b[:, 0], x0), 0, None)
               * np.clip(np.minimum(b[:, 3], y1) - np.maximum(b[:, 1], y0), 0, None))
    union = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) + (x1 - x0) * (y1 - y0) - overlap
    return float((overlap / union).max(initial=0.0))


@pytest.mark.parametrize("backend", ["albumentations", "dali"])
def test_albumentations_and_dali_draw_from_their_own_generator_and_repeat(backend, annotated):
    images, targets = annotated
    chain = wb.Chain(seed=5).add("RandomIoUCrop")
    a = chain.run(images, backend=backend, boxes=targets["boxes"])
    b = chain.run(images, backend=backend, boxes=targets["boxes"])
    c = chain.run(images, backend=backend, boxes=targets["boxes"], seed=6)
    windows = [[row[0].get("crop_box") for row in r.params] for r in (a, b, c)]
    assert windows[0] == windows[1] and windows[0] != windows[2]


def test_it_refuses_without_boxes_in_a_group_and_with_a_p(annotated):
    images, targets = annotated
    chain = wb.Chain().add("HorizontalFlip").add("RandomIoUCrop")
    for backend in ("kornia", "dali"):
        with pytest.raises(InputError, match=r"RandomIoUCrop draws its window from each image's boxes.*boxes=\.\.\."):
            chain.run(images, backend=backend)
    with pytest.raises(InputError, match="boxes"):
        chain.run(images, backend="albumentations", masks=targets["masks"])
    with pytest.raises(ChainError, match="RandomIoUCrop draws from each image's boxes.*put it in the chain itself"):
        wb.Chain.from_dict({"steps": [{"op": "OneOf", "steps": [{"op": "RandomIoUCrop"}]}]}).validate()
    with pytest.raises(ChainError, match="torchvision's RandomIoUCrop has no p"):
        wb.Chain().add("RandomIoUCrop", p=0.5)


@pytest.mark.parametrize("backend", ["kornia", "albumentations", "dali"])
def test_the_export_saves_what_run_gives_and_refuses_without_coco(backend, annotated, tmp_path):
    images, targets = annotated
    chain = wb.Chain(seed=7).add("RandomZoomOut", side_range=[1.0, 2.0]).add("RandomIoUCrop").add("HorizontalFlip")
    script = tmp_path / f"augment_{backend}.py"
    chain.export(backend, path=script)
    out = tmp_path / "out.npz"
    done = save_annotated(script, out)
    assert done.returncode == 0, done.stderr[-2000:]
    saved = dict(np.load(out))
    res = chain.run(images, backend=backend, **targets)
    for n in range(len(images)):
        assert np.array_equal(saved[f"image_{n:05d}"], res.images[n]), n
    moved = targets_from_arrays(saved)
    for a, b in zip(moved["boxes"], res.targets.boxes):
        assert np.array_equal(a, b)
    done = subprocess.run([sys.executable, str(script), "--images", str(wb.SAMPLE_DATA), "--save",
                           str(tmp_path / "no.npz")], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "--coco needed: RandomIoUCrop draws its window from each image's boxes" in \
        done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]
    if backend == "dali":  # its training pipeline cannot, --coco or not
        done = subprocess.run([sys.executable, str(script), "--images", str(wb.SAMPLE_DATA), "--coco",
                               str(SAMPLE_TARGETS / "instances.json"), "--bench"], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode != 0 and "train with the chain's Kornia or Albumentations export" in done.stderr \
            and "Traceback" not in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize("backend", ["kornia", "albumentations"])
def test_the_training_loader_crops_around_the_boxes_and_needs_coco(backend, tmp_path):
    root, coco, _ = annotated_folder(tmp_path, [(96, 128), (120, 90), (100, 100), (80, 140)])
    chain = wb.Chain(seed=1).add("RandomIoUCrop", sampler_options=[0.3, 0.5]).add("Resize", size=[64, 64])
    module = load_module(emit(chain, backend), backend)
    kwargs = {"workers": 0} if backend == "albumentations" else {"workers": 0, "device": "cpu"}
    seen = 0
    for _, batch, labels in module.training_batches(str(root), 2, coco=str(coco), **kwargs):
        assert tuple(batch.shape[-2:]) == (64, 64)
        for target in labels:
            assert len(target["boxes"]) == 1  # the one shape's box, held by every window
        seen += len(labels)
    assert seen == 4
    with pytest.raises(ValueError, match="RandomIoUCrop draws its window"):
        next(module.training_batches(str(root), 2, **kwargs))


def test_the_estimate_refuses_it_naming_the_bench_that_measures_it():
    with pytest.raises(UnsupportedOpError, match=r"RandomIoUCrop draws its window .* --coco instances.json --bench"):
        wb.Chain().add("RandomIoUCrop").estimate(batch_size=2, workers=0, runs=1, batches=1, progress=False)


def test_the_dali_training_loader_refuses_it_naming_the_exports_that_train_with_it(tmp_path):
    root, coco, _ = annotated_folder(tmp_path, [(96, 128)] * 2)
    module = load_module(emit(wb.Chain().add("RandomIoUCrop").add("Resize", size=[64, 64]), "dali"), "dali")
    with pytest.raises(ValueError, match=r"step 1 \(RandomIoUCrop\) .* train with the chain's Kornia or"):
        module.make_loader(str(root), 2, coco=str(coco))
