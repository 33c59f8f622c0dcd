"""Exports move targets with the workbench's own code: `--save --coco --masks` writes the masks,
boxes and keypoints `Chain.run` gives, bit for bit, on every backend."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.runtime.annotations import target_arrays, targets_from_arrays
from workbench.targets import SAMPLE_TARGETS

from conftest import save_annotated

KINDS = ("masks", "boxes", "box_labels", "keypoints", "keypoints_visible")


def detection_chain():
    chain = wb.Chain(seed=4)
    chain.add("RandomResizedCrop", size=[160, 160], scale=[0.4, 1.0]).add("HorizontalFlip").add("Rotate")
    chain.add("Affine", shear=[-5, 5]).add("Brightness").add("CoarseDropout", p=1.0)
    chain.targets.min_visibility = 0.2
    chain.targets.flip_pairs = [[0, 1]]
    chain.targets.mark_erased = 255
    return chain


def assert_same_targets(saved, res):
    for kind in KINDS:
        expected = getattr(res, kind)
        assert len(saved[kind]) == len(expected)
        for a, b in zip(saved[kind], expected):
            assert a.dtype == np.asarray(b).dtype and np.array_equal(a, b), kind


@pytest.mark.parametrize("backend", wb.BACKENDS)
def test_save_with_coco_and_masks_writes_what_run_gives_bit_for_bit(backend, tmp_path):
    chain = detection_chain()
    script = tmp_path / f"augment_{backend}.py"
    chain.export(backend, path=script, targets=True)
    out = tmp_path / "out.npz"
    done = save_annotated(script, out)
    assert done.returncode == 0, done.stderr[-2000:]
    saved = np.load(out)
    images, targets = wb.load_annotated()
    res = chain.run(images, backend=backend, **targets)
    assert np.array_equal(saved["images"], res.images)
    assert_same_targets(targets_from_arrays(dict(saved)), res)
    assert (saved["masks"] == 255).any() and saved["box_counts"].sum() == sum(len(b) for b in res.boxes) > 0


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_mixing_and_groups_move_targets_alike_in_the_export(backend):
    chain = wb.Chain.from_dict({"seed": 9, "steps": [
        {"op": "Resize", "params": {"size": [128, 128]}},
        {"op": "OneOf", "steps": [{"op": "HorizontalFlip", "p": 1.0}, {"op": "Rotate", "p": 1.0}]},
        {"op": "CutMix", "params": {"area": [0.2, 0.4]}},
        {"op": "MixUp"}]})
    images, targets = wb.load_annotated()
    res = chain.run(images, backend=backend, **targets)
    module = load_module(emit(chain, backend), backend)
    out, records, *_ = module.augment_images(images, seed=chain.seed, device="cpu")
    moved = module.augment_targets(records, [image.shape[:2] for image in images], dict(targets))
    assert np.array_equal(out, res.images)
    assert_same_targets(moved, res)
    # CutMix and MixUp gave some images their partners' boxes.
    assert sum(len(b) for b in res.boxes) > sum(len(b) for b in targets["boxes"])


# Displacement fields and policies on each backend that runs them.
FIELD_STEPS = {
    "kornia": [{"op": "ElasticTransform", "p": 1.0, "params": {"alpha": 60.0, "sigma": 6.0}},
               {"op": "GridDistortion", "p": 1.0}, {"op": "OpticalDistortion", "p": 1.0,
                                                    "params": {"distort_limit": [-0.2, 0.2]}},
               {"op": "TrivialAugment", "params": {"ops": {"rotate": [-30, 30], "shear_y": [-16.7, 16.7]}}}],
    "dali": [{"op": "GridDistortion", "p": 1.0}, {"op": "RandAugment", "params": {"n": 2, "magnitude": 20}}],
    "albumentations": [{"op": "ElasticTransform", "p": 1.0, "params": {"alpha": 60.0, "sigma": 6.0}},
                       {"op": "GridDistortion", "p": 1.0},
                       {"op": "OpticalDistortion", "p": 1.0,
                        "params": {"mode": "fisheye", "distort_limit": [-0.3, 0.3]}}],
}


@pytest.mark.parametrize("backend", wb.BACKENDS)
def test_fields_and_policies_move_targets_alike_in_the_export(backend):
    chain = wb.Chain.from_dict({"seed": 5, "steps": [{"op": "Resize", "params": {"size": [128, 128]}},
                                                     *FIELD_STEPS[backend]]})
    images, targets = wb.load_annotated()
    res = chain.run(images, backend=backend, **targets)
    module = load_module(emit(chain, backend), backend)
    out, records, *_ = module.augment_images(images, seed=chain.seed, device="cpu")
    moved = module.augment_targets(records, [image.shape[:2] for image in images], dict(targets))
    assert np.array_equal(np.asarray(out), np.asarray(res.images))
    assert_same_targets(moved, res)
    # The fields moved the masks: not one of them is left as it was resized.
    resized = wb.Chain.from_dict({"seed": 5, "steps": chain.to_dict()["steps"][:1]}).run(images, **targets)
    assert not any(np.array_equal(a, b) for a, b in zip(res.masks, resized.masks))


def test_a_chain_that_cannot_move_targets_refuses_coco_in_the_export(unfollowed_op, tmp_path):
    chain = wb.Chain(seed=0).add(unfollowed_op)
    script = tmp_path / "augment.py"
    chain.export("kornia", path=script, targets=True)
    done = subprocess.run([sys.executable, str(script), "--images", str(wb.SAMPLE_DATA), "--coco",
                           str(SAMPLE_TARGETS / "instances.json"), "--save", str(tmp_path / "o.npz")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and f"{unfollowed_op} cannot move masks, boxes or keypoints" in done.stderr
    assert not (tmp_path / "o.npz").exists()


def test_saved_target_arrays_read_back_per_image():
    moved = {"masks": [np.ones((2, 3), np.uint8), np.zeros((4, 3), np.uint8)],
             "boxes": [np.zeros((2, 4), np.float32), np.zeros((0, 4), np.float32)],
             "box_labels": [np.array([1, 2]), np.zeros(0, np.int64)]}
    arrays = target_arrays(moved)
    assert sorted(arrays) == ["box_counts", "box_labels", "boxes", "mask_00000", "mask_00001"]
    back = targets_from_arrays(arrays)
    assert [b.shape for b in back["boxes"]] == [(2, 4), (0, 4)] and back["box_labels"][0].tolist() == [1, 2]
    assert all(np.array_equal(a, b) for a, b in zip(back["masks"], moved["masks"]))


@pytest.mark.parametrize("backend", wb.BACKENDS)
def test_an_export_defines_each_name_once(backend):
    """An export is the workbench's code copied from several modules (runtime, targets, Kornia
    modules, templates): a name defined twice would silently replace the first definition (a
    helper named like a template's once broke --save)."""
    import ast
    from collections import Counter

    chain = wb.Chain(seed=0)
    for op in wb.list_ops(backend=backend):
        chain.add(op)
    tree = ast.parse(emit(chain, backend))
    names = Counter(node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef)))
    names.update(target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
                 if isinstance(target, ast.Name))
    assert [name for name, count in names.items() if count > 1] == []
