"""RandAugment, TrivialAugment and AutoAugment on Albumentations (the workbench's own transforms,
runtime/albumentations_policies.py): each of the policies' ops is Kornia's at the draws the transform
reports, the export's --save is chain.run, masks, boxes and keypoints move as on Kornia, and a seed
gives the same images and report every time."""
import os

import numpy as np
import pytest

import workbench as wb
from workbench.ops.policies import AUTO_AUGMENT_POLICIES, POLICY_OPS, apply_reported

from conftest import assert_save_equals_run
from test_targets import POINTS, SHAPE, shape_image  # the shape every targets test moves

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
GEOMETRIC_OPS = ("rotate", "shear_x", "shear_y", "translate_x", "translate_y")


def unit(images) -> list[np.ndarray]:
    return [np.asarray(i, np.float64) / (255.0 if np.asarray(i).dtype == np.uint8 else 1.0) for i in images]


@pytest.fixture(scope="module")
def crops(sample_images) -> list[np.ndarray]:
    """32x48 crops of the sample photos, from textured places (edges, not flat sky)."""
    return [np.ascontiguousarray(image[h // 3:h // 3 + 32, w // 3:w // 3 + 48])
            for image in sample_images[:8] for h, w in [image.shape[:2]]]


# Each op's range: the policies' defaults, wide enough to move or change every crop visibly.
RANGES = {op.name: list(op.default) if op.has_magnitude else [] for op in POLICY_OPS}
RANGES.update(rotate=[-40.0, 40.0], translate_x=[-0.2, 0.2], translate_y=[-0.2, 0.2], posterize=[2.0, 6.0],
              solarize=[0.2, 0.8])


@pytest.mark.parametrize("op", [op.name for op in POLICY_OPS])
def test_each_op_is_kornias_at_the_draws_albumentations_reports(crops, op):
    """TrivialAugment with a one-op set on Albumentations, against Kornia's own op at each crop's
    reported magnitude (apply_reported): within 2/255 mean abs error per crop (measured at most 0.5/255,
    the final rounding to a level; equalize is exact, Kornia's (PIL's) formula on the same levels)."""
    res = wb.Chain(seed=5).add("TrivialAugment", ops={op: RANGES[op]}).run(crops, backend="albumentations")
    magnitudes = set()
    for image, out, rows in zip(crops, unit(res.images), res.params):
        row = rows[0]
        assert row["ops"] == [op] and len(row["magnitudes"]) == 1
        magnitudes.add(row["magnitudes"][0])
        expected = apply_reported(image, row)
        error = np.abs(out - expected).mean() * 255
        assert error <= 2.0, (op, row, error)
        assert error <= (1e-4 if op in ("posterize", "solarize", "equalize", "invert") else 0.6), (op, row, error)
    assert np.abs(np.concatenate(unit(res.images)) - np.concatenate(unit(crops))).max() > 0.05  # it changed them
    if RANGES[op]:  # drawn per sample: the crops got different magnitudes
        assert len(magnitudes) > 1, magnitudes


def test_magnitudes_follow_the_kornia_and_dali_lowerings(small_images):
    """RandAugment: m / 30 of each range, rotate with a random sign, posterize floored, translate_x in
    pixels (0.125 of the 128 columns); TrivialAugment: uniform in the range from 0, signed; AutoAugment:
    in each stage's bin, each stage gated by its probability."""
    images = small_images * 3
    chain = wb.Chain(seed=4).add("RandAugment", n=3, magnitude=15,
                                 ops={"rotate": [-30, 30], "posterize": [4, 8], "translate_x": [-0.25, 0.25]})
    signs = set()
    for rows in chain.run(images, backend="albumentations").params:
        got = dict(zip(rows[0]["ops"], rows[0]["magnitudes"]))
        assert sorted(got) == ["posterize", "rotate", "translate_x"]
        assert abs(got["rotate"]) == pytest.approx(15.0) and got["posterize"] == 6.0
        assert abs(got["translate_x"]) == pytest.approx(0.125 * 128)
        signs.add(np.sign(got["rotate"]))
    assert signs == {-1.0, 1.0}
    trivial = wb.Chain(seed=4).add("TrivialAugment", ops={"shear_y": [-20.0, 20.0]}).run(images * 2,
                                                                                        backend="albumentations")
    shears = np.array([rows[0]["magnitudes"][0] for rows in trivial.params])
    assert np.abs(shears).max() <= 20.0 and (shears < 0).any() and (shears > 0).any()
    posterize = wb.Chain(seed=4).add("TrivialAugment", ops={"posterize": [2.0, 8.0]}).run(images,
                                                                                       backend="albumentations")
    bits = [rows[0]["magnitudes"][0] for rows in posterize.params]
    assert all(b == int(b) and 2 <= b <= 8 for b in bits) and len(set(bits)) > 2, bits  # whole bits, as reported
    for rows in wb.Chain(seed=4).add("AutoAugment", policy="cifar10").run(images, backend="albumentations").params:
        row, sub = rows[0], AUTO_AUGMENT_POLICIES["cifar10"][rows[0]["subpolicy"]]
        assert all(name in [entry[0] for entry in sub] for name in row["ops"])
        for name, magnitude in zip(row["ops"], row["magnitudes"]):
            assert (magnitude is None) == (name in ("equalize", "auto_contrast", "invert"))


def test_albumentations_picks_per_sample_and_says_so(small_images):
    res = wb.Chain(seed=2).add("RandAugment", n=1, magnitude=10).run(small_images, backend="albumentations")
    assert len({tuple(rows[0]["ops"]) for rows in res.params}) > 1
    assert "picks per image" in wb.get_op("RandAugment").albumentations.note


def test_policies_after_a_normalize_run_on_values_clamped_to_0_1(small_images):
    """After a Normalize the image is float: the ops see it clamped to [0, 1] (as on DALI, and as
    Kornia's ops clamp) and give floats back, Kornia's values without rounding to a level."""
    ops = {"invert": [], "solarize": [0.5, 0.5], "contrast": [1.4, 1.4]}
    images = small_images * 2
    shifted = [np.clip(image.astype(np.int16) + 40, 0, 255).astype(np.uint8) for image in images]
    res = wb.Chain(seed=3).add("Normalize", mean=[-40 / 255] * 3, std=[1.0] * 3).add("TrivialAugment", ops=ops) \
        .run(images, backend="albumentations")
    assert res.images.dtype == np.float32
    assert {r[1]["ops"][0] for r in res.params} == set(ops)
    for image, out, rows in zip(shifted, res.images, res.params):
        # Values above 1 after the Normalize (bright pixels + 40/255) count as 1: the shifted, clamped photo.
        assert np.abs(out - apply_reported(image, rows[1])).max() <= 1e-5, rows[1]


@pytest.mark.parametrize("op, params", [("RandAugment", {"n": 2, "magnitude": 14}), ("TrivialAugment", {}),
                                        ("AutoAugment", {"policy": "svhn"})])
def test_export_save_equals_run(op, params, small_folder, tmp_path):
    chain = wb.Chain(seed=9).add(op, **params).add("HorizontalFlip", p=0.5)
    assert_save_equals_run(chain, small_folder, tmp_path, seeds=(0, 31), backend="albumentations",
                           fresh=1 if op == "AutoAugment" else 0)
    source = chain.export("albumentations")
    assert "class WbPolicy(A.ImageOnlyTransform):" in source and f"class Wb{op}(WbPolicy):" in source
    assert f"Wb{op}(" in source.split("def build_compose")[1]


def test_same_seed_same_images_and_report_and_another_seed_differs(small_images):
    chain = wb.Chain(seed=12).add("RandAugment", n=2, magnitude=12).add("AutoAugment", policy="imagenet")
    first, again = (chain.run(small_images, backend="albumentations") for _ in range(2))
    assert np.array_equal(first.images, again.images) and first.params == again.params
    other = chain.run(small_images, backend="albumentations", seed=13)
    assert not np.array_equal(first.images, other.images) and first.params != other.params
    for rows in first.params:
        assert len(rows[0]["ops"]) == 2 and len(set(rows[0]["ops"])) == 2  # n different ops, named
        assert set(rows[0]["ops"]) <= set(wb.get_op("RandAugment").param("ops").default)
        assert len(rows[0]["magnitudes"]) == 2 and isinstance(rows[1]["subpolicy"], int)


# ---------------------------------------------------------------------------------------
# Targets: moved from the reported draws, alike on Albumentations and Kornia
# ---------------------------------------------------------------------------------------
def run_with_targets(chain, backend, count=4):
    image, mask = shape_image()
    return chain.run([image] * count, backend=backend, masks=[mask] * count, boxes=[[SHAPE]] * count,
                     keypoints=[POINTS] * count)


@pytest.mark.parametrize("op", GEOMETRIC_OPS)
def test_targets_move_alike_on_albumentations_and_kornia_at_the_same_draws(op):
    """RandAugment with one geometric op at a fixed strength: each sample draws only the sign, so
    Albumentations' and Kornia's samples meet at the same reported draws; there they must give the
    same masks, boxes and keypoints, and the same pixels (the shape the targets describe)."""
    chain = wb.Chain(seed=1).add("RandAugment", n=1, magnitude=20, ops={op: RANGES[op]})
    alb, kornia = (run_with_targets(chain, backend, count=6) for backend in ("albumentations", "kornia"))
    matched = set()
    for n, rows in enumerate(alb.params):
        for k, other in enumerate(kornia.params):
            if rows[0]["ops"] != other[0]["ops"] or rows[0]["magnitudes"] != pytest.approx(other[0]["magnitudes"]):
                continue
            matched.add(np.sign(rows[0]["magnitudes"][0]))
            assert np.abs(alb.boxes[n] - kornia.boxes[k]).max() <= 1e-3, (op, rows[0])
            assert np.abs(alb.keypoints[n] - kornia.keypoints[k]).max() <= 1e-3, (op, rows[0])
            assert np.array_equal(alb.masks[n], kornia.masks[k]), (op, rows[0])
            assert np.abs(unit([alb.images[n]])[0] - unit([kornia.images[k]])[0]).mean() <= 1.0 / 255, (op, rows[0])
    assert matched == {-1.0, 1.0}, (op, [r[0] for r in alb.params], [r[0] for r in kornia.params])


def test_autoaugment_moves_targets_with_each_samples_geometric_ops():
    """The svhn policy's shears, rotations and translations (picked per sample): the moved mask and box
    sit on the shape in the pixels."""
    checked = 0
    for seed in range(6):
        chain = wb.Chain.from_dict({"seed": seed, "steps": [{"op": "AutoAugment", "params": {"policy": "svhn"}}]})
        res = run_with_targets(chain, "albumentations")
        for n in range(4):
            ops = set(res.params[n][0]["ops"])
            # Only samples whose shape stays findable (invert and solarize change which pixels are bright).
            if not ops & set(GEOMETRIC_OPS) or ops & {"invert", "solarize"}:
                continue
            checked += 1
            shape = res.images[n].mean(axis=-1) > 127.5
            overlap = (res.masks[n] == 1) & shape
            assert overlap.sum() / max(((res.masks[n] == 1) | shape).sum(), 1) > 0.93, (seed, n, ops)
            ys, xs = np.nonzero(shape)
            tight = np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)
            assert np.abs(res.boxes[n][0] - tight).max() <= 1.6, (seed, n, ops, res.boxes[n])
    assert checked >= 6
