"""The exported training loaders yield targets: with coco= and masks= every backend's loader moves
each sample's masks, boxes and keypoints with the draws of its own training batch (shuffled,
region-decoded, resized, batch-cropped), so they sit on the augmented pixels."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench.codegen import emit, load_module

from conftest import annotated_folder

# (height, width) of the images in the folders; the shape is a bright rectangle in each.
SAME = [(96, 128)] * 6
MIXED = [(96, 128), (120, 90), (100, 100), (80, 140), (128, 96), (110, 120)]


def iou(a, b):
    return (a & b).sum() / max((a | b).sum(), 1)


def check_on_shape(image, target, boxes=True):
    """The sample's mask, box and visible keypoints sit on its bright shape (HxWx3 in any range).
    The box holds the shape: after a rotation and a shear it is the box around a box's corners,
    larger than the shape's tight box (as in Albumentations)."""
    image = np.asarray(image, dtype=np.float64)
    shape = (image / (255.0 if image.max() > 1.5 else 1.0)).mean(axis=-1) > 0.5
    mask = np.asarray(target["mask"]) == 1
    assert mask.shape == shape.shape and shape.sum() > 30
    assert iou(mask, shape) > 0.85, iou(mask, shape)
    if boxes:
        ys, xs = np.nonzero(shape)
        tight = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)
        box = np.asarray(target["boxes"])
        assert box.shape == (1, 4) and (box[0, :2] <= tight[:2] + 1.5).all() and (box[0, 2:] >= tight[2:] - 1.5).all()
        assert _area(box[0]) < 2.5 * _area(tight), (box, tight)
        assert np.asarray(target["box_labels"]).tolist() == [1]
    grown = shape.copy()
    grown[1:] |= shape[:-1]
    grown[:-1] |= shape[1:]
    grown[:, 1:] |= grown[:, :-1]
    grown[:, :-1] |= grown[:, 1:]
    points = np.asarray(target["keypoints"])
    visible = np.asarray(target["keypoints_visible"])
    assert points.shape == (3, 2) and visible.shape == (3,)
    for (x, y), seen in zip(points, visible):
        if seen:
            assert grown[int(round(y)), int(round(x))], (x, y)


def geometric_chain(first=None, seed=3):
    chain = wb.Chain(seed=seed)
    if first is not None:
        chain.add(*first[:1], **first[1])
    return chain.add("HorizontalFlip").add("Rotate", degrees=[-25, 25]).add("Affine", shear=[-8, 8])


CROP = ("RandomResizedCrop", {"size": [96, 96], "scale": [0.6, 1.0]})


def kornia_batches(chain, folder, coco, masks, device="cpu", **kwargs):
    module = load_module(emit(chain, "kornia"), "kornia")
    for _, images, labels in module.training_batches(str(folder), 3, workers=0, device=device, coco=coco,
                                                     masks=masks, **kwargs):
        yield images.permute(0, 2, 3, 1).cpu().numpy(), labels


def albumentations_batches(chain, folder, coco, masks, device="cpu", **kwargs):
    module = load_module(emit(chain, "albumentations"), "albumentations")
    for _, images, labels in module.training_batches(str(folder), 3, workers=0, device=device, coco=coco,
                                                     masks=masks, **kwargs):
        yield images.permute(0, 2, 3, 1).cpu().numpy(), labels


def dali_batches(chain, folder, coco, masks, device="cpu", **kwargs):
    module = load_module(emit(chain, "dali"), "dali")
    loader = module.make_loader(str(folder), 3, gpu=device != "cpu", coco=coco, masks=masks, **kwargs)
    for batch in loader:
        yield batch[0]["images"].cpu().numpy(), batch[0]["labels"]


LOADERS = {"kornia": kornia_batches, "dali": dali_batches, "albumentations": albumentations_batches}


@pytest.mark.parametrize("backend, sizes, first, resize", [
    ("kornia", MIXED, CROP, None),               # the batched RandomResizedCrop of mixed sizes
    ("kornia", MIXED, None, (80, 80)),           # resize=, inserted where the batch must be one size
    ("kornia", SAME, None, None),                # one tensor, fused geometric steps
    ("dali", MIXED, CROP, None),                 # region decoding: the crop drawn from the header
    ("dali", MIXED, None, (80, 80)),
    ("albumentations", MIXED, CROP, None),
])
def test_training_loaders_yield_targets_that_sit_on_the_augmented_shape(backend, sizes, first, resize, tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, sizes)
    kwargs = {"resize": resize} if resize else {}
    seen = visible = 0
    for images, targets in LOADERS[backend](geometric_chain(first), folder, str(coco), str(masks), **kwargs):
        assert isinstance(targets, list) and len(targets) == len(images)
        for image, target in zip(images, targets):
            assert sorted(target) == ["box_labels", "boxes", "keypoints", "keypoints_visible", "mask"]
            check_on_shape(image, {k: v.cpu().numpy() for k, v in target.items()})
            seen += 1
            visible += int(target["keypoints_visible"].sum())
    assert seen == 6 and visible > 6


@pytest.mark.parametrize("backend", wb.BACKENDS)
def test_distortions_and_policies_move_targets_in_the_training_loader(backend, tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, SAME)
    chain = wb.Chain(seed=2).add("GridDistortion", p=1.0, distort_limit=[-0.4, 0.4])
    if backend == "albumentations":  # (no policies there)
        chain.add("OpticalDistortion", p=1.0, distort_limit=[-0.3, 0.3], mode="fisheye")
    else:
        chain.add("TrivialAugment", ops={"rotate": [-30, 30], "shear_x": [-16.7, 16.7], "translate_y": [-0.2, 0.2]})
    seen = 0
    for images, targets in LOADERS[backend](chain, folder, str(coco), str(masks)):
        for image, target in zip(images, targets):
            check_on_shape(image, {k: v.cpu().numpy() for k, v in target.items()})
            seen += 1
    assert seen == 6


@pytest.mark.parametrize("backend", wb.BACKENDS)
def test_cutmix_in_the_training_loader_pastes_the_partners_mask_with_its_pixels(backend, tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, MIXED)
    chain = wb.Chain(seed=5).add("Resize", size=[96, 96]).add("CutMix", area=[0.3, 0.5])
    boxes = 0
    for images, targets in LOADERS[backend](chain, folder, str(coco), str(masks)):
        for image, target in zip(images, targets):
            check_on_shape(image, {k: v.numpy() for k, v in target.items()}, boxes=False)
            boxes += len(target["boxes"])
    # Some images carry a part of their partner's box besides their own.
    assert boxes > 6


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_targets_do_not_change_what_the_training_loader_draws(backend, tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, SAME)
    chain = geometric_chain(CROP).add("Brightness")
    plain = [images for images, _ in LOADERS[backend](chain, folder, None, None)]
    annotated = [images for images, _ in LOADERS[backend](chain, folder, str(coco), None)]
    assert len(plain) == len(annotated) == 2
    assert all(np.array_equal(a, b) for a, b in zip(plain, annotated))


def test_only_the_annotated_images_are_loaded_and_boxes_alone_need_no_masks(tmp_path):
    folder, coco, _ = annotated_folder(tmp_path, SAME, keypoints=False)
    data = json.loads(coco.read_text())
    data["images"] = data["images"][:3]
    data["annotations"] = data["annotations"][:3]
    coco.write_text(json.dumps(data))
    batches = list(kornia_batches(geometric_chain(CROP), folder, str(coco), None))
    assert len(batches) == 1
    assert all(sorted(t) == ["box_labels", "boxes"] for t in batches[0][1])


# (the op that refuses is ElasticTransform's lowerings, which DALI lacks)
@pytest.mark.parametrize("backend", ["kornia", "albumentations"])
def test_a_chain_that_cannot_move_targets_refuses_them_in_the_training_loader(backend, unfollowed_op, tmp_path):
    op = unfollowed_op
    folder, coco, masks = annotated_folder(tmp_path, SAME)
    chain = wb.Chain(seed=0).add(op)
    with pytest.raises(ValueError, match=f"{op} cannot move masks, boxes or keypoints"):
        next(LOADERS[backend](chain, folder, str(coco), str(masks)))


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_shards_with_targets_are_refused_with_the_fix(backend, tmp_path):
    folder, coco, _ = annotated_folder(tmp_path, SAME)
    module = load_module(emit(geometric_chain(), backend), backend)
    shards = str(tmp_path / "x-{0..1}.tar")
    with pytest.raises(ValueError, match="annotate a folder of images"):
        if backend == "kornia":
            next(module.training_batches(shards=shards, coco=str(coco), workers=0, device="cpu"))
        else:
            module.make_loader(shards=shards, coco=str(coco))


def test_the_exported_script_trains_on_annotated_images(tmp_path):
    folder, coco, masks = annotated_folder(tmp_path, MIXED)
    script = tmp_path / "augment.py"
    geometric_chain(CROP).export("kornia", path=script, targets=True)
    done = subprocess.run([sys.executable, str(script), "--images", str(folder), "--coco", str(coco), "--masks",
                           str(masks), "--batch-size", "2", "--workers", "1", "--epochs", "2", "--device", "cpu"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # Every image keeps its one box: the shapes sit well inside the images and the crops keep most of them.
    assert done.stdout.strip().endswith("rank 0/1: 12 augmented images, 12 boxes over 2 epoch(s)")


@pytest.mark.cuda
@pytest.mark.parametrize("backend", ["kornia", "dali"])
@pytest.mark.parametrize("first, resize", [(CROP, None), (None, (80, 80))])
def test_gpu_training_loaders_yield_targets_on_the_device_that_sit_on_the_shape(backend, first, resize, tmp_path):
    # JPEG files: decoded on the GPU (nvJPEG through DALI, nvImageCodec or torchvision for Kornia).
    folder, coco, masks = annotated_folder(tmp_path, MIXED, suffix=".jpg")
    kwargs = {"resize": resize} if resize else {}
    seen = 0
    for images, targets in LOADERS[backend](geometric_chain(first), folder, str(coco), str(masks), "cuda", **kwargs):
        for image, target in zip(images, targets):
            assert all(value.device.type == "cuda" for value in target.values())
            check_on_shape(image, {k: v.cpu().numpy() for k, v in target.items()})
            seen += 1
    assert seen == 6


def _area(box) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])
