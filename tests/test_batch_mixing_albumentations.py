"""MixUp and CutMix on the Albumentations backend: the batch is mixed in numpy between the per-image
stretches of the chain (runtime/albumentations_mixing.py). Pixels and labels at the run's own
reported draws, p gating the whole batch, steps after the mixing step, mixed sizes refused, and the
export (--save, the training loader) equal to chain.run."""

import numpy as np
import pytest
import torch
from PIL import Image

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.render import mix_caption, preview_grid

from conftest import assert_save_equals_run, class_folder, import_export

BACKEND = "albumentations"


@pytest.fixture(scope="module")
def photos(sample_images) -> list[np.ndarray]:
    """Eight sample photographs at one small size (batch mixing needs a same-size batch)."""
    return [np.asarray(Image.fromarray(image).resize((48, 32), Image.BILINEAR)).copy() for image in sample_images[:8]]


def draws(result, step: int = 0):
    """(partner, weight, applied) per sample of one step, as the run reports them."""
    rows = [row[step] for row in result.params]
    return (np.array([r["partner"] for r in rows]), np.array([r["weight"] for r in rows], np.float32),
            [r["applied"] for r in rows])


def rounded_mixup(images, partner, weight) -> np.ndarray:
    """The Albumentations path's MixUp of uint8 images: the float32 blend rounded to nearest (np.rint)."""
    x = np.stack(images).astype(np.float32)
    w = weight.astype(np.float32)[:, None, None, None]
    return np.clip(np.rint(x * (np.float32(1) - w) + x[partner] * w), 0, 255).astype(np.uint8)


def pasted(images, result, step: int = 0) -> np.ndarray:
    x = np.stack(images)
    out = x.copy()
    for n, row in enumerate(result.params):
        x0, y0, x1, y1 = (int(v) for v in row[step]["box"])
        out[n, y0:y1, x0:x1] = x[row[step]["partner"], y0:y1, x0:x1]
    return out


def mixed_labels(labels, partner, weight, applied) -> np.ndarray:
    w = (weight.astype(np.float64) * np.asarray(applied, np.float64))[:, None]
    return (1 - w) * labels + w * labels[partner]


# ----- pixels and labels at the run's own draws -------------------------------------------
def test_mixup_is_the_blend_at_the_reported_partner_and_weight(photos):
    res = wb.Chain(seed=9).add("MixUp", weight=[0.1, 0.6]).run(photos, backend=BACKEND)
    partner, weight, applied = draws(res)
    assert all(applied) and sorted(partner) == list(range(8))  # a permutation of the batch
    assert any(p != n for n, p in enumerate(partner))
    assert len(set(weight.tolist())) == 8 and np.all((weight >= 0.1) & (weight <= 0.6))
    assert res.images.dtype == np.uint8 and np.array_equal(res.images, rounded_mixup(photos, partner, weight))
    # Within half a level of the exact blend (the uint8 rounding, no more).
    x, w = np.stack(photos).astype(np.float64), weight.astype(np.float64)[:, None, None, None]
    exact = (1 - w) * x + w * x[partner]
    assert np.abs(res.images - exact).max() <= 0.5 + 1e-3
    assert res.labels.dtype == np.float32 and res.labels.shape == (8, 8)
    np.testing.assert_allclose(res.labels, mixed_labels(np.eye(8), partner, weight, applied), atol=1e-6)
    np.testing.assert_allclose(res.labels.sum(axis=1), 1.0, atol=1e-6)


def test_mixup_after_normalize_blends_floats(photos):
    chain = wb.Chain(seed=2).add("Normalize", mean=[0.5] * 3, std=[0.25] * 3).add("MixUp", weight=[0.3, 0.3])
    res = chain.run(photos, backend=BACKEND)
    normalized = wb.Chain().add("Normalize", mean=[0.5] * 3, std=[0.25] * 3).run(photos, backend=BACKEND).images
    partner, weight, _ = draws(res, 1)
    assert res.images.dtype == np.float32
    w = np.float32(0.3)
    assert np.array_equal(res.images, normalized * (np.float32(1) - w) + normalized[partner] * w)


def test_cutmix_pastes_the_reported_box_exactly_and_weighs_labels_by_its_area(photos):
    area = 0.3
    ids = [0, 1, 2, 0, 1, 2, 4, 4]
    res = wb.Chain(seed=6).add("CutMix", area=[area, area]).run(photos, backend=BACKEND, labels=ids)
    partner, weight, applied = draws(res)
    assert all(applied) and sorted(partner) == list(range(8))
    height, width = photos[0].shape[:2]
    side = np.float32(np.sqrt(np.float32(1) - np.float32(1 - area)))
    for n, row in enumerate(res.params):
        x0, y0, x1, y1 = row[0]["box"]
        # Kornia's sizes: floor(sqrt(area) * side), inside the image.
        assert (y1 - y0, x1 - x0) == (np.floor(side * height), np.floor(side * width))
        assert 0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height
        assert weight[n] == np.float32((x1 - x0) * (y1 - y0)) / np.float32(width * height)
    assert len({tuple(row[0]["box"]) for row in res.params}) > 1  # placed at random per sample
    assert np.array_equal(res.images, pasted(photos, res))
    np.testing.assert_allclose(res.labels, mixed_labels(np.eye(5)[ids], partner, weight, applied), atol=1e-6)


def test_cutmix_area_is_uniform_then_clamped(photos):
    weights = []
    for seed in range(3):
        res = wb.Chain(seed=seed).add("CutMix", area=[0.2, 0.6]).run(photos, backend=BACKEND)
        weights += [row[0]["weight"] for row in res.params]
    assert min(weights) >= 0.2 * 0.8 and max(weights) <= 0.6 and len(set(weights)) > 5


@pytest.mark.parametrize("op", ["MixUp", "CutMix"])
def test_parity_at_its_own_draws(photos, op):
    """The spec's parity tolerances against the float64 reference at the run's own draws."""
    spec = wb.get_op(op)
    res = wb.Chain(seed=3).add(op, p=1.0, **dict(spec.parity.params)).run(photos, backend=BACKEND)
    partner, weight, _ = draws(res)
    x = np.stack(photos).astype(np.float64) / 255.0
    if op == "MixUp":
        w = weight.astype(np.float64)[:, None, None, None]
        expected = (1 - w) * x + w * x[partner]
    else:
        expected = pasted(photos, res).astype(np.float64) / 255.0
    diff = np.abs(res.images / 255.0 - expected)
    mse = float(np.mean(diff ** 2))
    psnr = 99.0 if mse == 0 else 10 * np.log10(1.0 / mse)
    assert diff.mean() <= spec.parity.mae and psnr >= spec.parity.psnr, \
        f"{op}: max {diff.max() * 255:.3f}/255, mean {diff.mean() * 255:.4f}/255, {psnr:.1f} dB"
    assert not np.allclose(expected, x)


# ----- p, steps after the mixing step, mixed sizes -------------------------------------------
@pytest.mark.parametrize("op", ["MixUp", "CutMix"])
def test_p_gates_the_whole_batch(photos, op):
    outcomes = set()
    for seed in range(10):
        res = wb.Chain(seed=seed).add(op, p=0.5).run(photos, backend=BACKEND)
        applied = [row[0]["applied"] for row in res.params]
        assert len(set(applied)) == 1, f"seed {seed}: {applied}"
        outcomes.add(applied[0])
        if applied[0]:
            assert not np.array_equal(res.images, np.stack(photos))
        else:
            assert np.array_equal(res.images, np.stack(photos))
            assert np.array_equal(res.labels, np.eye(8, dtype=np.float32))
    assert outcomes == {True, False}


def test_steps_after_the_mixing_step_run_on_the_mixed_images(photos):
    chain = wb.Chain(seed=4).add("Invert", p=1.0).add("MixUp", weight=[0.2, 0.5]).add("HorizontalFlip", p=0.5) \
        .add("CutMix", area=[0.1, 0.5]).add("VerticalFlip", p=0.5)
    res = chain.run(photos, backend=BACKEND)
    partner, weight, applied = draws(res, 1)
    flips = [row[2]["applied"] for row in res.params]
    # Some samples flipped after each mixing step, some not.
    assert 0 < sum(flips) < 8 and 0 < sum(row[4]["applied"] for row in res.params) < 8
    mixed = rounded_mixup([255 - p for p in photos], partner, weight)
    flipped = [m[:, ::-1] if flip else m for m, flip in zip(mixed, flips)]
    cut = pasted(flipped, res, step=3)
    expected = np.stack([c[::-1] if row[4]["applied"] else c for c, row in zip(cut, res.params)])
    assert np.array_equal(res.images, expected)
    # Both mixing steps mix the labels, one after the other.
    labels = mixed_labels(np.eye(8), partner, weight, applied)
    labels = mixed_labels(labels, *draws(res, 3))
    np.testing.assert_allclose(res.labels, labels, atol=1e-6)
    np.testing.assert_allclose(res.labels.sum(axis=1), 1.0, atol=1e-6)


def test_mixed_sizes_at_the_mixing_step_are_refused(sample_images):
    chain = wb.Chain().add("Rotate").add("CutMix")
    with pytest.raises(wb.InputError, match=r"step 2 \(CutMix\) mixes samples of one batch.*differ .*"
                                            r"add a Resize or a crop .* before step 2"):
        chain.run(sample_images[:3], backend=BACKEND)
    # The exported code refuses too (the user's own --save, augment_images or loader).
    module = load_module(emit(chain, BACKEND), BACKEND)
    with pytest.raises(ValueError, match=r"step 2 \(CutMix\) mixes samples of one batch, but the images differ in "
                                         r"size there; add a Resize or a crop"):
        module.augment_images(sample_images[:3])
    # A Resize before it makes one batch.
    res = wb.Chain(seed=1).add("Resize", size=[24, 40]).add("MixUp").run(sample_images[:3], backend=BACKEND)
    assert res.images.shape == (3, 24, 40, 3) and res.labels.shape == (3, 3)


def test_preview_captions_the_partner_and_weight(photos):
    chain = wb.Chain(seed=5).add("MixUp", weight=[0.4, 0.4])
    res = chain.run(photos[:3], backend=BACKEND)
    assert mix_caption(res.params[0]) == f"MixUp 40% of #{res.params[0][0]['partner'] + 1}"
    grid = preview_grid(chain, photos[:3], draws=1, backend=BACKEND, cell=64)
    plain = preview_grid(wb.Chain(seed=5).add("MixUp", p=0.0), photos[:3], draws=1, backend=BACKEND, cell=64)
    assert grid.shape == plain.shape and np.mean(grid[60:64, 68:132] == 0) > 0.5  # the caption strip


# ----- export equals run ---------------------------------------------------------------------
def test_save_equals_run_with_mixed_labels(small_folder, tmp_path):
    chain = wb.Chain(seed=21).add("Rotate", degrees=[-10, 10]).add("MixUp", p=0.8, weight=[0.1, 0.6]) \
        .add("CutMix", p=0.9, area=[0.1, 0.4]).add("Brightness", factor=[0.9, 1.1])
    seeds = (0, 5, 7)
    assert_save_equals_run(chain, small_folder, tmp_path, seeds=seeds, backend=BACKEND)
    images = wb.load_images(small_folder)
    for seed in seeds:
        saved = np.load(tmp_path / f"out_{seed}.npz")
        expected = chain.run(images, backend=BACKEND, seed=seed)
        assert saved["labels"].dtype == np.float32 and np.array_equal(saved["labels"], expected.labels)
        assert np.array_equal(saved["params.step2_MixUp.partner"], [r[1]["partner"] for r in expected.params])
        assert np.array_equal(saved["params.step3_CutMix.box"], [r[2]["box"] for r in expected.params])


@pytest.fixture
def own_classes(tmp_path, small_folder):
    """Six files, each its own class: a label row names the file an image was mixed with."""
    return class_folder(tmp_path / "data", small_folder, {f"c{k}": [f"img_{k:02d}.png"] for k in range(6)})


def _check_loader_batches(module, root, workers):
    files = [np.asarray(Image.open(root / f"c{k}" / f"img_{k:02d}.png").convert("RGB")) for k in range(6)]
    seen = []
    for epoch, images, labels in module.training_batches(root, 3, epochs=2, workers=workers, seed=1, device="cpu",
                                                         num_samples=6):
        assert images.shape == (3, 3, 96, 128) and images.dtype == torch.uint8
        y = labels.numpy()
        assert y.dtype == np.float32 and y.shape == (3, 6)
        np.testing.assert_allclose(y.sum(axis=1), 1.0, atol=1e-6)
        flips = []
        for image, row in zip(images.permute(0, 2, 3, 1).numpy(), y):
            # Each image is the blend its label row reports: 0.7 of its own file, 0.3 of its partner's,
            # then flipped or not by the step after the mixing step (run in the collate too).
            own, partner = int(np.argmax(row)), int(np.argsort(row)[-2]) if row.max() < 1 else int(np.argmax(row))
            expected = rounded_mixup([files[own], files[partner]], np.array([1, 1]), np.float32([0.3, 0.3]))[0] \
                if own != partner else files[own]
            assert np.array_equal(image, expected) or np.array_equal(image, expected[:, ::-1])
            flips.append(not np.array_equal(image, expected))
        seen.append((y, flips))
    return np.concatenate([y for y, _ in seen]), [f for _, flips in seen for f in flips]


def test_training_loader_yields_mixed_soft_labels_and_images_mixed_as_reported(tmp_path, own_classes):
    chain = wb.Chain(seed=3).add("MixUp", weight=[0.3, 0.3]).add("HorizontalFlip", p=0.5)
    module = import_export(chain, BACKEND, tmp_path, "aug_mix_alb")
    labels, flips = _check_loader_batches(module, own_classes, workers=0)
    assert np.any(np.isclose(labels, 0.3, atol=1e-6))  # some sample mixed with another file
    assert 0 < sum(flips) < len(flips)
    # In worker processes (the collate runs there), seeded: the same batches on a second pass.
    again = _check_loader_batches(module, own_classes, workers=2)
    assert all(np.array_equal(a, b) for a, b in zip(again, _check_loader_batches(module, own_classes, workers=2)))
    assert np.any(np.isclose(again[0], 0.3, atol=1e-6))
    # --bench's loop counts the mixed batches' labels.
    assert module.bench_rates(own_classes, 3, batches=2, warmup=1, workers=0)[0] > 0


def test_training_loader_refuses_mixed_sizes_at_the_mixing_step(tmp_path, own_classes):
    Image.new("RGB", (40, 30)).save(own_classes / "c0" / "small.png")
    module = import_export(wb.Chain(seed=3).add("MixUp"), BACKEND, tmp_path, "aug_mix_sizes")
    with pytest.raises(ValueError, match=r"step 1 \(MixUp\) mixes samples of one batch, but the images differ"):
        for _ in module.training_batches(own_classes, 7, workers=0, device="cpu"):
            pass
