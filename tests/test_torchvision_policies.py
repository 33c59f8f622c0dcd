"""torchvision's policies (v2.RandAugment, v2.TrivialAugmentWide, v2.AutoAugment) imported whole do what
torchvision does, on every backend: they draw from torchvision's augmentation spaces (its ops, bins and
signs, compared with its own tables), and at each image's reported ops and magnitudes they give the
pixels torchvision's own ops give (its `_apply_image_or_video_transform`, on uint8 tensors).
"""
import importlib
import math
import os

import cv2
import numpy as np
import pytest
import torch

# CI must compare with the real thing, never skip it: scripts/test.sh installs torchvision.
torchvision = importlib.import_module("torchvision") if os.environ.get("CI") else pytest.importorskip("torchvision")
from torchvision.transforms import v2  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.ops.policies import AUTO_AUGMENT_POLICIES  # noqa: E402
from workbench.runtime.torchvision_policy_space import (TV_SPACE_OPS, TV_SPACE_SIGNED,  # noqa: E402
                                                        tv_space_linspace_at, tv_space_reported, tv_space_value)

BACKENDS = ["kornia", "dali", "albumentations"]
TV_IDS = {"identity": "Identity", "shear_x": "ShearX", "shear_y": "ShearY", "translate_x": "TranslateX",
          "translate_y": "TranslateY", "rotate": "Rotate", "brightness": "Brightness", "color": "Color",
          "contrast": "Contrast", "sharpness": "Sharpness", "posterize": "Posterize", "solarize": "Solarize",
          "auto_contrast": "AutoContrast", "equalize": "Equalize", "invert": "Invert"}
BILINEAR = v2.InterpolationMode.BILINEAR


@pytest.fixture(scope="module")
def photos():
    """Three sample photos at 150 x 200 and one at an odd size (97 x 131: translations of a share of it
    are cut to whole pixels)."""
    images = wb.load_images("sample_data")[:4]
    sizes = [(200, 150)] * 3 + [(131, 97)]
    return [cv2.resize(np.asarray(i), size, interpolation=cv2.INTER_AREA) for i, size in zip(images, sizes)]


def _tv_magnitude(name, magnitude):
    """A reported magnitude in torchvision's own units (what its `_apply_image_or_video_transform` takes)."""
    if magnitude is None:
        return 0.0
    if name in ("shear_x", "shear_y"):
        return math.tan(math.radians(magnitude))
    if name in ("brightness", "color", "contrast", "sharpness"):
        return magnitude - 1.0
    return magnitude


def _theirs(transform, image, row):
    """torchvision's ops, in the order the row reports, at its magnitudes, on the uint8 image."""
    out = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()
    for name, magnitude in zip(row["ops"], row["magnitudes"]):
        out = transform._apply_image_or_video_transform(out, TV_IDS[name], _tv_magnitude(name, magnitude),
                                                         interpolation=transform.interpolation, fill=transform._fill)
    return out.permute(1, 2, 0).numpy()


def _levels(image):
    """An output as 8-bit levels (Kornia gives floats in [0, 1] that are levels / 255)."""
    image = np.asarray(image)
    return image if image.dtype == np.uint8 else np.rint(image * 255.0).astype(np.uint8)


POLICIES = [
    ("RandAugment", lambda: v2.RandAugment(num_ops=2, magnitude=9)),
    ("RandAugment-strong-bilinear", lambda: v2.RandAugment(num_ops=3, magnitude=27, interpolation=BILINEAR)),
    ("TrivialAugmentWide", lambda: v2.TrivialAugmentWide()),
    ("AutoAugment-imagenet", lambda: v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET)),
    ("AutoAugment-cifar10", lambda: v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10)),
    ("AutoAugment-svhn-bilinear", lambda: v2.AutoAugment(v2.AutoAugmentPolicy.SVHN, interpolation=BILINEAR)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name, make", POLICIES, ids=[p[0] for p in POLICIES])
def test_imported_policies_give_torchvisions_pixels_at_their_draws(backend, name, make, photos):
    """24 images per run: at each image's reported ops and magnitudes, torchvision's own ops give the same
    pixels (within 1/255 mean abs error per image, and nearly every pixel identical)."""
    transform = make()
    chain = wb.Chain.from_torchvision([transform], seed=5)
    assert chain.steps and not chain.unmapped and not chain.notes
    images = (photos * 6)[:24]
    result = chain.run(images, backend=backend, device="cpu")
    seen, differing = set(), []
    for image, out, rows in zip(images, result.images, result.params):
        row = rows[0]
        seen.update(row["ops"])
        ours, theirs = _levels(out).astype(np.int16), _theirs(transform, image, row).astype(np.int16)
        assert ours.shape == theirs.shape
        mae = np.abs(ours - theirs).mean()
        assert mae <= 1.0, (row, mae)
        differing.append(np.mean(ours != theirs))
    assert np.mean(differing) < 0.002, np.mean(differing)
    assert len(seen) >= 5, seen  # the draws reached several ops


def _reported(result):
    return [(name, m) for rows in result.params for name, m in zip(rows[0]["ops"], rows[0]["magnitudes"])]


def _tiny(count, height=12, width=16):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (height, width, 3), dtype=np.uint8) for _ in range(count)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_rand_augment_draws_torchvisions_ops_with_replacement_at_its_bin(backend):
    """Over 240 images: every op of torchvision's 14 (identity included, no invert), each at bin 9's magnitude
    with both signs where signed, and some images drawing the same op twice (with replacement)."""
    chain = wb.Chain.from_torchvision([v2.RandAugment(num_ops=2, magnitude=9)], seed=1)
    result = chain.run(_tiny(240), backend=backend, device="cpu")
    pairs = _reported(result)
    assert {name for name, _ in pairs} == set(TV_SPACE_OPS)
    for name, magnitude in pairs:
        top = tv_space_reported("rand", name, 9, 31, 12, 16)
        if math.isnan(top):
            assert magnitude is None
        elif name in TV_SPACE_SIGNED and name not in ("brightness", "color", "contrast", "sharpness"):
            assert magnitude in (pytest.approx(top, abs=1e-4), pytest.approx(-top, abs=1e-4)), (name, magnitude)
        elif name in TV_SPACE_SIGNED:
            assert magnitude in (pytest.approx(top, abs=1e-6), pytest.approx(2.0 - top, abs=1e-6)), (name, magnitude)
        else:
            assert magnitude == pytest.approx(top), (name, magnitude)
    assert {m > 0 for name, m in pairs if name == "rotate"} == {True, False}
    twice = sum(rows[0]["ops"][0] == rows[0]["ops"][1] for rows in result.params)
    assert 4 <= twice <= 40  # 240 / 14 = 17 expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_trivial_augment_draws_its_bins_uniformly(backend):
    """TrivialAugmentWide with 8 bins: the magnitudes are the 8 bins' values (rotate: 135 k / 7 degrees), each
    drawn, with both signs."""
    chain = wb.Chain.from_torchvision([v2.TrivialAugmentWide(num_magnitude_bins=8)], seed=2)
    pairs = _reported(chain.run(_tiny(400), backend=backend, device="cpu"))
    rotations = sorted({round(m, 3) for name, m in pairs if name == "rotate"})
    steps = sorted({round(135.0 * k / 7, 3) for k in range(8)} | {round(-135.0 * k / 7, 3) for k in range(1, 8)})
    assert set(rotations) <= set(steps) and len(rotations) >= 8
    assert {name for name, _ in pairs} == set(TV_SPACE_OPS)


@pytest.mark.parametrize("backend", BACKENDS)
def test_auto_augment_runs_each_stage_at_its_probability(backend):
    """AutoAugment's svhn policy: every image's ops are a sub-policy's stages in order; stage 1 of
    ("shear_x", 0.9, 4) runs about 9 times in 10."""
    chain = wb.Chain.from_torchvision([v2.AutoAugment(v2.AutoAugmentPolicy.SVHN)], seed=3)
    result = chain.run(_tiny(500), backend=backend, device="cpu")
    stages = {tuple(stage[0] for stage in sub) for sub in AUTO_AUGMENT_POLICIES["svhn"]}
    ran = [tuple(rows[0]["ops"]) for rows in result.params]
    assert all(any(set(ops) <= set(sub) for sub in stages) for ops in ran)
    shears = [m for name, m in _reported(result) if name == "shear_x"]
    # bin 4 of 10: tan(angle) = 0.3 x 4 / 9, with either sign.
    assert {round(abs(math.tan(math.radians(m))), 5) for m in shears if abs(abs(m) - 7.59) < 0.1} == {0.13333}


def test_torchvisions_spaces_are_the_ones_drawn_from():
    """Each op's magnitudes at every bin, and which ops are signed, against torchvision's own tables, at
    several bin counts and image sizes (the translations of RandAugment's space are a share of the size)."""
    for transform, space in ((v2.RandAugment(), "rand"), (v2.TrivialAugmentWide(), "wide"),
                             (v2.AutoAugment(), "rand")):
        table = transform._AUGMENTATION_SPACE
        ours = [name for name in TV_SPACE_OPS + ("invert",) if TV_IDS[name] in table]
        assert [TV_IDS[name] for name in ours] == list(table)
        for bins in (10, 31, 20):
            for height, width in ((150, 200), (97, 131), (224, 224)):
                for name in ours:
                    values, signed = table[TV_IDS[name]]
                    values = values(bins, height, width)
                    assert signed == (name in TV_SPACE_SIGNED)
                    for index in range(bins):
                        mine = tv_space_value(space, name, index, bins, height, width)
                        assert (mine is None) if values is None else mine == float(values[index]), (name, bins, index)


def test_the_space_computes_linspace_as_torch():
    rng = np.random.default_rng(0)
    for _ in range(5000):
        start = float(rng.choice([0.0, 1.0]))
        end = float(rng.choice([0.0, 0.3, 0.9, 0.99, 30.0, 135.0, 32.0, 150.0 / 331.0 * int(rng.integers(1, 2000))]))
        steps = int(rng.integers(2, 41))
        index = int(rng.integers(steps))
        assert float(tv_space_linspace_at(start, end, steps, index)) == float(torch.linspace(start, end, steps)[index])


def test_auto_augments_sub_policies_are_torchvisions():
    for policy in ("imagenet", "cifar10", "svhn"):
        theirs = v2.AutoAugment(v2.AutoAugmentPolicy(policy))._policies
        names = {v: k for k, v in TV_IDS.items()}
        assert [tuple((names[op], prob, b) for op, prob, b in sub) for sub in theirs] == \
            [tuple(sub) for sub in AUTO_AUGMENT_POLICIES[policy]]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_shear_moves_boxes_about_the_top_left_corner(backend, photos):
    """shear_x about the corner, as torchvision shears: a box's top edge stays where it is and its bottom
    edge moves by -tan(angle) x its height (torchvision refuses boxes in its policies: the map is the
    workbench's, checked here against the pixels' own motion)."""
    chain = wb.Chain(seed=0).add("TorchvisionRandAugment", num_ops=1, magnitude=30)
    images = [photos[0]] * 120
    result = chain.run(images, backend=backend, device="cpu", boxes=[[[40.0, 0.0, 60.0, 150.0]]] * 120)
    checked = 0
    for rows, boxes in zip(result.params, result.boxes):
        if rows[0]["ops"] == ["shear_x"]:
            k = math.tan(math.radians(rows[0]["magnitudes"][0]))
            x0, y0, x1, y1 = boxes[0]
            assert (y0, y1) == (0.0, 150.0)
            assert x0 == pytest.approx(max(0.0, 40.0 - k * 150.0 if k > 0 else 40.0), abs=1e-6)
            assert x1 == pytest.approx(min(200.0, 60.0 if k > 0 else 60.0 - k * 150.0), abs=1e-6)
            checked += 1
    assert checked >= 3
