"""Batch mixing ops (MixUp, CutMix): values, mixed labels, parity at each backend's own
draws, export equals run with labels, training loaders that yield mixed labels, clear errors."""

import numpy as np
import pytest
import torch
from PIL import Image

import workbench as wb
from workbench.codegen import load_module
from workbench.render import mix_caption, preview_grid

from conftest import ROOT, assert_save_equals_run, class_folder, import_export, run_script

MIXING = ("kornia", "dali")


@pytest.fixture(scope="module")
def photos(sample_images) -> list[np.ndarray]:
    """The first 8 sample photographs at one size (batch mixing needs a same-size batch)."""
    return [np.asarray(Image.fromarray(image).resize((120, 90), Image.BILINEAR)).copy() for image in sample_images[:8]]


def unit(images) -> np.ndarray:
    images = np.asarray(images)
    return images.astype(np.float64) / (255.0 if images.dtype == np.uint8 else 1.0)


def draws(result, step: int = 0) -> tuple[np.ndarray, np.ndarray, list[bool]]:
    """(partner, weight, applied) per sample of one step, as the run reports them."""
    rows = [row[step] for row in result.params]
    return (np.array([r["partner"] for r in rows]), np.array([r["weight"] for r in rows], np.float32),
            [r["applied"] for r in rows])


def mixup_reference(images, partner, weight) -> np.ndarray:
    x = np.stack([unit(i) for i in images])
    w = weight.astype(np.float64)[:, None, None, None]
    return (1 - w) * x + w * x[partner]


def cutmix_reference(images, result) -> np.ndarray:
    x = np.stack([unit(i) for i in images])
    out = x.copy()
    for n, row in enumerate(result.params):
        x0, y0, x1, y1 = (int(v) for v in row[0]["box"])
        out[n, y0:y1, x0:x1] = x[row[0]["partner"], y0:y1, x0:x1]
    return out


def label_reference(partner, weight, applied, count) -> np.ndarray:
    eye = np.eye(count, dtype=np.float64)
    w = (weight.astype(np.float64) * np.asarray(applied, np.float64))[:, None]
    return (1 - w) * eye + w * eye[partner]


def errors(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    diff = np.abs(a - b)
    mse = float(np.mean(diff ** 2))
    return float(diff.max()), float(diff.mean()), (99.0 if mse == 0 else 10 * np.log10(1.0 / mse))


# ----- values ----------------------------------------------------------------------------
def test_mixup_on_kornia_is_the_exact_blend(photos):
    res = wb.Chain(seed=4).add("MixUp", weight=[0.3, 0.3]).run(photos, backend="kornia")
    partner, weight, applied = draws(res)
    assert all(applied) and np.all(weight == np.float32(0.3))
    assert sorted(partner) == list(range(len(photos)))  # a permutation of the batch
    x = np.stack(photos).astype(np.float32) / np.float32(255.0)
    w = np.float32(0.3)
    assert np.array_equal(res.images, x * (np.float32(1) - w) + x[partner] * w)


def test_mixup_on_dali_is_the_blend_rounded_to_uint8(photos):
    res = wb.Chain(seed=4).add("MixUp", weight=[0.3, 0.3]).run(photos, backend="dali")
    partner, weight, applied = draws(res)
    assert res.images.dtype == np.uint8 and all(applied) and sorted(partner) == list(range(len(photos)))
    expected = mixup_reference(photos, partner, weight) * 255.0
    assert np.abs(res.images - expected).max() <= 0.5 + 1e-3
    assert any(p != n for n, p in enumerate(partner))  # something really was mixed in


@pytest.mark.parametrize("backend", MIXING)
def test_labels_are_mixed_with_the_image_weights(photos, backend):
    res = wb.Chain(seed=9).add("MixUp", weight=[0.1, 0.4]).run(photos, backend=backend)
    partner, weight, applied = draws(res)
    assert res.labels.dtype == np.float32 and res.labels.shape == (8, 8)
    assert len(set(weight.tolist())) > 1 and np.all((weight >= 0.1) & (weight <= 0.4))
    np.testing.assert_allclose(res.labels, label_reference(partner, weight, applied, 8), atol=1e-6)
    np.testing.assert_allclose(res.labels.sum(axis=1), 1.0, atol=1e-6)
    # Each image is the blend its label row says, at that row's weight.
    expected = mixup_reference(photos, partner, weight)
    assert np.abs(unit(res.images) - expected).max() <= (0.5 / 255 + 1e-6 if backend == "dali" else 1e-6)


@pytest.mark.parametrize("backend", MIXING)
def test_given_labels_are_mixed_as_class_ids_and_as_soft_targets(photos, backend):
    chain = wb.Chain(seed=2).add("MixUp", weight=[0.25, 0.25])
    ids = [0, 1, 2, 0, 1, 2, 4, 4]
    res = chain.run(photos, backend=backend, labels=ids)
    partner, weight, applied = draws(res)
    eye = np.eye(5, dtype=np.float64)[ids]
    assert res.labels.shape == (8, 5)
    np.testing.assert_allclose(res.labels, 0.75 * eye + 0.25 * eye[partner], atol=1e-6)
    soft = chain.run(photos, backend=backend, labels=np.eye(5, dtype=np.float32)[ids])
    assert np.array_equal(soft.labels, res.labels) and np.array_equal(soft.images, res.images)


@pytest.mark.parametrize("backend", MIXING)
def test_cutmix_pastes_the_partners_box_and_weighs_labels_by_its_area(photos, backend):
    area = 0.3
    res = wb.Chain(seed=6).add("CutMix", area=[area, area]).run(photos, backend=backend)
    partner, weight, applied = draws(res)
    assert all(applied) and sorted(partner) == list(range(8))
    height, width = photos[0].shape[:2]
    for n, row in enumerate(res.params):
        x0, y0, x1, y1 = row[0]["box"]
        # Kornia's sizes: floor(sqrt(area) * side), inside the image.
        assert (y1 - y0, x1 - x0) == (np.floor(np.float32(np.sqrt(np.float32(1) - np.float32(1 - area))) * height),
                                      np.floor(np.float32(np.sqrt(np.float32(1) - np.float32(1 - area))) * width))
        assert 0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height
        # The label weight is the pasted area fraction.
        assert weight[n] == np.float32((x1 - x0) * (y1 - y0)) / np.float32(width * height)
        assert abs(weight[n] - area) < 0.02
    # Exact on both backends: the box is a copy (Kornia's float32 is uint8 / 255).
    pasted = np.round(cutmix_reference(photos, res) * 255.0).astype(np.uint8)
    assert np.array_equal(res.images, pasted if backend == "dali" else pasted.astype(np.float32) / np.float32(255))
    np.testing.assert_allclose(res.labels, label_reference(partner, weight, applied, 8), atol=1e-6)
    # Boxes are placed at random per sample.
    assert len({tuple(row[0]["box"]) for row in res.params}) > 1


@pytest.mark.parametrize("backend", MIXING)
def test_cutmix_area_is_uniform_then_clamped(photos, backend):
    """With area [0.2, 0.6], CutMix's lambda U(0, 1) clamped: the pasted fraction stays within
    the range (less the rounding down of the sides) and takes several values."""
    weights = []
    for seed in range(4):
        res = wb.Chain(seed=seed).add("CutMix", area=[0.2, 0.6]).run(photos, backend=backend)
        weights += [row[0]["weight"] for row in res.params]
    assert min(weights) >= 0.2 * 0.9 and max(weights) <= 0.6 and len(set(weights)) > 5


@pytest.mark.parametrize("backend", MIXING)
@pytest.mark.parametrize("op", ["MixUp", "CutMix"])
def test_p_gates_the_whole_batch(photos, backend, op):
    outcomes = set()
    for seed in range(12):
        chain = wb.Chain(seed=seed).add(op, p=0.5)
        res = chain.run(photos, backend=backend)
        applied = [row[0]["applied"] for row in res.params]
        assert len(set(applied)) == 1, f"seed {seed}: {applied}"
        outcomes.add(applied[0])
        if not applied[0]:
            x = np.stack(photos)
            assert np.array_equal(res.images, x if backend == "dali" else x.astype(np.float32) / np.float32(255))
            assert np.array_equal(res.labels, np.eye(8, dtype=np.float32))
    assert outcomes == {True, False}


@pytest.mark.parametrize("backend", MIXING)
def test_mixing_steps_compose_their_labels(photos, backend):
    chain = wb.Chain(seed=1).add("MixUp", weight=[0.2, 0.4]).add("HorizontalFlip", p=0.5).add("CutMix", area=[0.1, 0.5])
    res = chain.run(photos, backend=backend)
    first, second = draws(res, 0), draws(res, 2)
    expected = label_reference(*first, 8)
    w = (second[1].astype(np.float64) * np.asarray(second[2], np.float64))[:, None]
    expected = (1 - w) * expected + w * expected[second[0]]
    np.testing.assert_allclose(res.labels, expected, atol=1e-6)
    np.testing.assert_allclose(res.labels.sum(axis=1), 1.0, atol=1e-6)


def test_chain_without_mixing_keeps_one_hot_labels(photos):
    res = wb.Chain(seed=1).add("HorizontalFlip", p=1.0).run(photos, labels=[3, 1, 0, 0, 1, 2, 2, 3])
    assert np.array_equal(res.labels, np.eye(4, dtype=np.float32)[[3, 1, 0, 0, 1, 2, 2, 3]])
    assert np.array_equal(wb.Chain().add("HorizontalFlip").run(photos[:3]).labels, np.eye(3, dtype=np.float32))


# ----- parity: each backend against the reference at its own draws ----------------------
@pytest.mark.parametrize("backend", MIXING)
@pytest.mark.parametrize("op", ["MixUp", "CutMix"])
def test_parity_at_each_backends_own_draws(photos, op, backend):
    spec = wb.get_op(op)
    res = wb.Chain(seed=3).add(op, p=1.0, **dict(spec.parity.params)).run(photos, backend=backend)
    partner, weight, _ = draws(res)
    expected = mixup_reference(photos, partner, weight) if op == "MixUp" else cutmix_reference(photos, res)
    worst, mae, psnr = errors(unit(res.images), expected)
    assert mae <= spec.parity.mae and psnr >= spec.parity.psnr, \
        f"{op} on {backend}: max {worst * 255:.3f}/255, mean {mae * 255:.4f}/255, {psnr:.1f} dB"
    assert not np.allclose(expected, np.stack([unit(i) for i in photos]))  # it did change the images
    # Both backends report the collapsed weight (MixUp) or the same box size (CutMix).
    if op == "MixUp":
        assert np.all(weight == np.float32(0.3))
    else:
        sizes = {(r[0]["box"][2] - r[0]["box"][0], r[0]["box"][3] - r[0]["box"][1]) for r in res.params}
        assert sizes == {(60.0, 45.0)}


# ----- export equals run, with labels ------------------------------------------------------
@pytest.mark.parametrize("backend", MIXING)
def test_save_writes_the_mixed_labels_of_chain_run(small_folder, tmp_path, backend):
    chain = wb.Chain(seed=21).add("Rotate", degrees=[-10, 10]).add("MixUp", p=0.8, weight=[0.1, 0.6]) \
        .add("CutMix", p=0.9, area=[0.1, 0.4]).add("Brightness", factor=[0.9, 1.1])
    assert_save_equals_run(chain, small_folder, tmp_path, seeds=(0, 5), backend=backend)
    images = wb.load_images(small_folder)
    for seed in (0, 5):
        saved = np.load(tmp_path / f"out_{seed}.npz")
        expected = chain.run(images, backend=backend, seed=seed)
        assert saved["labels"].dtype == np.float32 and np.array_equal(saved["labels"], expected.labels)
        assert np.array_equal(saved["params.step2_MixUp.partner"].ravel(), [r[1]["partner"] for r in expected.params])


def test_save_without_mixing_writes_no_labels(small_folder, tmp_path):
    chain = wb.Chain(seed=1).add("HorizontalFlip")
    script = tmp_path / "aug.py"
    chain.export("kornia", path=script.name, folder=tmp_path)
    run_script(script, "--images", str(small_folder), "--save", str(tmp_path / "o.npz"))
    assert "labels" not in np.load(tmp_path / "o.npz").files


def test_mixed_size_photos_mix_after_a_resize(sample_images, tmp_path):
    """The sample photos differ in size: a Resize before the mixing step makes one batch, and
    the exported --save (decoding the folder itself) still equals chain.run."""
    chain = wb.Chain(seed=8).add("Resize", size=[64, 80]).add("MixUp").add("CutMix")
    for backend in MIXING:
        res = chain.run(sample_images, backend=backend)
        assert res.images.shape == (len(sample_images), 64, 80, 3) and res.labels.shape == (12, 12)
    assert_save_equals_run(chain, ROOT / "sample_data", tmp_path, seeds=(8,), backend="kornia")


# ----- training loaders ---------------------------------------------------------------------
@pytest.fixture
def three_classes(tmp_path, small_folder):
    return class_folder(tmp_path / "data", small_folder, {"cats": ["img_00.png", "img_01.png"],
                                                           "dogs": ["img_02.png", "img_03.png"],
                                                           "owls": ["img_04.png", "img_05.png"]})


def _check_soft_targets(labels: np.ndarray, classes: int) -> None:
    assert labels.dtype == np.float32 and labels.shape[1] == classes
    np.testing.assert_allclose(labels.sum(axis=1), 1.0, atol=1e-6)
    assert np.all((labels > 1e-6).sum(axis=1) <= 2)  # one partner per sample


def test_kornia_training_batches_yield_mixed_soft_targets(tmp_path, three_classes):
    module = import_export(wb.Chain(seed=3).add("MixUp", weight=[0.3, 0.3]), "kornia", tmp_path, "aug_mix_k")
    labels = []
    for epoch, images, y in module.training_batches(three_classes, 3, epochs=2, workers=0, seed=1, device="cpu",
                                                    num_samples=12):
        assert images.shape == (3, 3, 96, 128)
        _check_soft_targets(y.numpy(), 3)
        labels.append(y.numpy())
    labels = np.concatenate(labels)
    assert np.any(np.isclose(labels, 0.7, atol=1e-6))  # some sample mixed with another class
    # Training still runs end to end with cross_entropy on the soft targets.
    logits = torch.zeros(3, 3, requires_grad=True)
    torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels[:3])).backward()
    assert logits.grad is not None


def test_dali_loader_yields_mixed_soft_targets(tmp_path, three_classes):
    module = import_export(wb.Chain(seed=3).add("CutMix", area=[0.5, 0.5]), "dali", tmp_path, "aug_mix_d")
    loader = module.make_loader(three_classes, 3, seed=2, gpu=False, threads=1)
    labels = []
    for batch in loader:
        assert tuple(batch[0]["images"].shape) == (3, 96, 128, 3)
        labels.append(batch[0]["labels"].numpy())
    labels = np.concatenate(labels)
    assert labels.shape == (6, 3)
    _check_soft_targets(labels, 3)
    # Every box is floor(sqrt(0.5) * side) on both sides: a mixed row holds 1 - w and w.
    weight = np.float32(67 * 90) / np.float32(96 * 128)
    mixed = [row for row in labels if row.max() < 1.0]
    assert mixed, "no sample was mixed with another class"
    for row in mixed:
        np.testing.assert_allclose(sorted(row[row > 0]), [weight, 1 - weight], atol=1e-6)


# ----- preview ------------------------------------------------------------------------------
def test_preview_shows_partner_and_weight(photos):
    chain = wb.Chain(seed=5).add("MixUp", weight=[0.4, 0.4])
    res = chain.run(photos[:3])
    caption = mix_caption(res.params[0])
    assert caption == f"MixUp 40% of #{res.params[0][0]['partner'] + 1}"  # images counted from 1
    assert mix_caption(wb.Chain().add("HorizontalFlip", p=1.0).run(photos[:1]).params[0]) == ""
    grid = preview_grid(chain, photos[:3], draws=1, cell=64)
    plain = preview_grid(wb.Chain(seed=5).add("MixUp", p=0.0), photos[:3], draws=1, cell=64)
    # A dark caption strip along the bottom of each mixed tile; unmixed tiles keep the grey letterbox.
    assert grid.shape == plain.shape
    assert np.all(plain[60:64, 68:132] == 40) and np.mean(grid[60:64, 68:132] == 0) > 0.5


# ----- errors -------------------------------------------------------------------------------
def test_mixed_sizes_before_a_mixing_step_are_refused(sample_images, photos):
    chain = wb.Chain().add("Rotate").add("CutMix")
    for backend in MIXING:
        with pytest.raises(wb.InputError, match=r"step 2 \(CutMix\) mixes samples of one batch.*differ .*"
                                                r"add a Resize or a crop .* before step 2"):
            chain.run(sample_images[:3], backend=backend)
    # The exported code refuses too (the user's own --save or loader).
    for backend in MIXING:
        module = load_module(chain.export(backend), backend)
        with pytest.raises(ValueError, match=r"step 2 \(CutMix\) mixes samples of one batch.*add a Resize"):
            module.augment_images(sample_images[:3])


@pytest.mark.parametrize("step,message", [
    ({"op": "MixUp", "params": {"weight": [0.2, 1.5]}},
     r"step 1 \(MixUp\): parameter 'weight' must lie within \[0.0, 1.0\]"),
    ({"op": "MixUp", "params": {"weight": [0.6, 0.2]}}, r"step 1 \(MixUp\): parameter 'weight' has lo > hi"),
    ({"op": "CutMix", "params": {"area": [0.0, 0.0]}}, r"step 1 \(CutMix\): parameter 'area' must reach above 0"),
    ({"op": "CutMix", "params": {"area": [-0.1, 0.5]}}, r"step 1 \(CutMix\): parameter 'area' must lie within"),
    ({"op": "CutMix", "params": {"beta": 1.0}},
     r"step 1 \(CutMix\): unknown parameter 'beta'; CutMix takes: alpha, area"),
    ({"op": "MixUp", "params": {"alpha": -0.5}}, r"step 1 \(MixUp\): parameter 'alpha' must be in \[0.0, 100.0\]"),
])
def test_bad_parameters_name_the_op_and_parameter(step, message):
    with pytest.raises(wb.ChainError, match=message):
        wb.Chain.from_dict({"steps": [step]})


@pytest.mark.parametrize("labels,message", [
    ([0, 1], r"expected 3 label\(s\) for 3 image\(s\)"),
    ([0, -1, 2], r"class ids must be in \[0, 99999\]"),
    ([0.5, 1, 2], r"class ids must be integers"),
    ("abc", r"labels must be one class id per image"),
    (np.full((3, 2), np.nan), r"soft targets must be finite"),
])
def test_bad_labels_are_refused(photos, labels, message):
    with pytest.raises(wb.InputError, match=message):
        wb.Chain().add("MixUp").run(photos[:3], labels=labels)

