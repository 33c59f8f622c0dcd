"""Colour ops do what their specs say, value for value, on every backend that runs them (Kornia
in float [0, 1]; DALI and Albumentations on 0-255 uint8, and DALI on floats after a Normalize)."""
import os

import cv2
import numpy as np
import pytest
from PIL import Image, ImageOps

import workbench as wb
from conftest import assert_save_equals_run

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402

BACKENDS = ("kornia", "dali", "albumentations")
NEW_OPS = ("Invert", "Solarize", "Posterize", "Equalize", "AutoContrast", "Sharpness", "Gamma", "ChannelShuffle")


def run(images, op, backend, p=1.0, seed=0, **params):
    return wb.Chain(seed=seed).add(op, p=p, **params).run(images, backend=backend, device="cpu")


def levels(images) -> np.ndarray:
    """Any backend's output as 0-255 float levels (Kornia's floats scaled, not rounded)."""
    x = np.asarray(images)
    return x.astype(np.float64) * (255.0 if x.dtype != np.uint8 else 1.0)


def backends_of(op):
    return [b for b in BACKENDS if wb.get_op(op).supports(b)]


@pytest.fixture(scope="module")
def x(small_images):
    return np.stack(small_images)


# ----- exact values ----------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_invert_is_255_minus_x_or_1_minus_x(small_images, x, backend):
    out = run(small_images, "Invert", backend).images
    if backend == "kornia":  # the levels 255 - x (a CPU's lookup, levels.py): 1 - x / 255 to float rounding
        assert out.dtype == np.float32 and np.array_equal(np.round(out * 255.0), 255 - x)
        np.testing.assert_allclose(out, 1.0 - x.astype(np.float32) / 255.0, atol=1e-6)
    else:
        assert out.dtype == np.uint8 and np.array_equal(out, 255 - x)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("bits", [1, 2, 3, 5, 7, 8])
def test_posterize_keeps_the_top_bits(small_images, x, backend, bits):
    res = run(small_images, "Posterize", backend, bits=[bits, bits])
    mask = np.uint8((0xFF << (8 - bits)) & 0xFF)
    assert np.array_equal(levels(res.images).round(3), (x & mask).astype(np.float64))
    out = levels(res.images)
    for image in out:
        for c in range(3):
            assert len(np.unique(image[..., c])) <= 2 ** bits
    assert {row[0]["bits"] for row in res.params} == {bits}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.9])
def test_solarize_inverts_only_values_at_or_above_the_threshold(small_images, x, backend, threshold):
    res = run(small_images, "Solarize", backend, threshold=[threshold, threshold])
    above = x.astype(np.float32) / np.float32(255.0) >= np.float32(threshold)
    expected = np.where(above, 255 - x.astype(np.int32), x).astype(np.float64)
    assert np.allclose(levels(res.images), expected, atol=1e-3)
    assert all(row[0]["threshold"] == pytest.approx(threshold) for row in res.params)


def test_solarize_threshold_one_changes_nothing_but_white(small_images, x):
    out = run(small_images, "Solarize", "dali", threshold=[1.0, 1.0]).images
    assert np.array_equal(out, np.where(x == 255, 0, x))


def _flatness(channel: np.ndarray) -> float:
    """Largest distance between the cumulative histogram and a straight line (0 = perfectly flat)."""
    cdf = np.cumsum(np.bincount(channel.ravel(), minlength=256)) / channel.size
    return float(np.abs(cdf - np.arange(1, 257) / 256).max())


@pytest.mark.parametrize("backend", BACKENDS)
def test_equalize_flattens_each_channel_histogram(small_images, x, backend):
    out = np.clip(np.rint(levels(run(small_images, "Equalize", backend).images)), 0, 255).astype(np.uint8)
    for before, after in zip(x, out):
        for c in range(3):
            assert _flatness(after[..., c]) < _flatness(before[..., c])
            assert after[..., c].max() == 255  # the last level always maps to the top


def test_equalize_algorithms_are_the_ones_the_notes_name(small_images, x):
    """Kornia is PIL's ImageOps.equalize exactly; DALI's fn.equalize is OpenCV's equalizeHist."""
    kornia = levels(run(small_images, "Equalize", "kornia").images).round(3)
    dali = run(small_images, "Equalize", "dali").images
    for image, k, d in zip(x, kornia, dali):
        assert np.array_equal(k, np.asarray(ImageOps.equalize(Image.fromarray(image)), np.float64))
        assert np.array_equal(d, np.stack([cv2.equalizeHist(np.ascontiguousarray(image[..., c]))
                                           for c in range(3)], axis=-1))
    assert "OpenCV" in wb.get_op("Equalize").dali.note


@pytest.mark.parametrize("backend", BACKENDS)
def test_autocontrast_maps_each_channel_min_to_0_and_max_to_1(x, backend):
    # Each channel squeezed into its own narrower range first.
    squeezed = [(img.astype(np.int32) * np.array([1, 2, 3]) // 5 + np.array([10, 60, 100])).astype(np.uint8)
                for img in x]
    out = levels(run(squeezed, "AutoContrast", backend).images)
    for before, after in zip(squeezed, out):
        # Kornia divides by (max - min + 1e-6): its top lands a few thousandths of a level short.
        for c in range(3):
            assert after[..., c].min() == pytest.approx(0.0, abs=1e-3)
            assert after[..., c].max() == pytest.approx(255.0, abs=5e-3)
            lo, hi = float(before[..., c].min()), float(before[..., c].max())
            stretched = (before[..., c] - lo) * 255.0 / (hi - lo)
            assert np.abs(after[..., c] - stretched).max() <= 0.5 + 5e-3  # the rounding to a level at most


@pytest.mark.parametrize("backend", BACKENDS)
def test_gamma(small_images, x, backend):
    out = levels(run(small_images, "Gamma", backend, gamma=[2.0, 2.0]).images)
    expected = (x / 255.0) ** 2 * 255.0
    # Kornia on a CPU's levels and DALI round, Albumentations' table truncates.
    assert np.abs(out - expected).max() <= (0.5 + 1e-3 if backend == "kornia" else 1.0)
    one = levels(run(small_images, "Gamma", backend, gamma=[1.0, 1.0]).images)
    assert np.abs(one - x).max() <= (1e-3 if backend == "kornia" else 1.0)


def _torchvision_sharpness(image: np.ndarray, factor: float) -> np.ndarray:
    """torchvision's adjust_sharpness in float [0, 255] (numpy reference)."""
    xf = image.astype(np.float64)
    kernel = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float64) / 13.0
    out = xf.copy()
    h, w = image.shape[:2]
    blur = sum(kernel[i, j] * xf[i:h - 2 + i, j:w - 2 + j] for i in range(3) for j in range(3))
    out[1:-1, 1:-1] = np.clip(blur + (xf[1:-1, 1:-1] - blur) * factor, 0, 255)
    return out


@pytest.mark.parametrize("backend", backends_of("Sharpness"))
@pytest.mark.parametrize("factor", [0.0, 1.0, 2.5])
def test_sharpness_is_torchvisions(small_images, x, backend, factor):
    out = levels(run(small_images, "Sharpness", backend, factor=[factor, factor]).images)
    for image, o in zip(x, out):
        assert np.abs(o - _torchvision_sharpness(image, factor)).max() <= (1e-3 if backend == "kornia" else 0.5 + 1e-3)
        # The one-pixel border keeps the input's values.
        for edge, kept in ((o[0], image[0]), (o[-1], image[-1]), (o[:, 0], image[:, 0]), (o[:, -1], image[:, -1])):
            assert np.allclose(edge, kept, atol=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_channel_shuffle_applies_the_reported_permutation(x, backend):
    images = list(x) * 3
    res = run(images, "ChannelShuffle", backend, seed=5)
    seen = set()
    for image, out, rows in zip(images, levels(res.images), res.params):
        perm = [int(v) for v in rows[0]["permutation"]]
        assert sorted(perm) == [0, 1, 2]
        assert np.allclose(out, image[..., perm], atol=1e-3)
        seen.add(tuple(perm))
    assert len(seen) >= 3  # 18 draws from 6 permutations


@pytest.mark.parametrize("backend", BACKENDS)
def test_grayscale_gives_three_equal_bt601_channels(small_images, x, backend):
    out = levels(run(small_images, "Grayscale", backend).images)
    luma = x.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    # OpenCV's fixed-point weights (14 bits) round once (Albumentations, and Kornia on a CPU's levels); DALI's
    # saturation 0 goes through its own colour-space matrix and rounds each channel (measured 1.2 levels at
    # most, channels one level apart at most).
    tolerance = {"kornia": 0.51, "albumentations": 0.51, "dali": 1.5}[backend]
    for c in range(3):
        assert np.abs(out[..., c] - luma).max() <= tolerance
    assert np.abs(out[..., 0] - out[..., 2]).max() <= (1.0 if backend == "dali" else 1e-3)


GREY = {"average": lambda x: x.mean(axis=-1), "max": lambda x: x.max(axis=-1),
        "desaturation": lambda x: (x.max(axis=-1) + x.min(axis=-1)) / 2.0}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", list(GREY))
def test_grayscale_methods(small_images, x, backend, method):
    out = levels(run(small_images, "Grayscale", backend, method=method).images)
    grey = GREY[method](x.astype(np.float64))
    # Kornia in float; DALI rounds to a level; Albumentations truncates (average, desaturation).
    tolerance = {"kornia": 1e-3, "dali": 0.5 + 1e-3, "albumentations": 1.0}[backend]
    for c in range(3):
        assert np.abs(out[..., c] - grey).max() <= tolerance
    assert np.array_equal(out[..., 0], out[..., 2])


def test_grayscale_method_weighted_average_is_the_default_and_kornias_luma(small_images):
    import torch
    from kornia.color import rgb_to_grayscale

    assert wb.get_op("Grayscale").defaults() == {"method": "weighted_average"}
    # On a CPU's uint8 levels OpenCV's luma, which rgb_to_grayscale gives a uint8 image bit for bit.
    out = run(small_images, "Grayscale", "kornia").images
    t = torch.from_numpy(np.stack(small_images)).permute(0, 3, 1, 2)
    assert np.array_equal(out[..., 1] * 255.0, rgb_to_grayscale(t)[:, 0].numpy().astype(np.float32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_equalize_cv_is_opencvs_equalize_hist_on_every_backend(small_images, x, backend):
    out = levels(run(small_images, "Equalize", backend, mode="cv").images)
    for image, o in zip(x, out):
        expected = np.stack([cv2.equalizeHist(np.ascontiguousarray(image[..., c])) for c in range(3)], axis=-1)
        assert np.abs(o - expected).max() <= 1e-3


def test_equalize_cv_leaves_a_one_level_channel_as_it_is():
    flat = np.zeros((16, 16, 3), np.uint8)
    flat[..., 0], flat[..., 1], flat[:8, :, 2], flat[8:, :, 2] = 90, 255, 10, 20
    for backend in BACKENDS:
        out = levels(run([flat], "Equalize", backend, mode="cv").images)[0]
        assert np.allclose(out[..., 0], 90) and np.allclose(out[..., 1], 255), backend
        assert np.allclose(out[:8, :, 2], 0) and np.allclose(out[8:, :, 2], 255), backend


# ----- both value regimes on DALI --------------------------------------------------------

FLOAT_CASES = {"Invert": {}, "Solarize": {"threshold": [0.4, 0.4]}, "Posterize": {"bits": [3, 3]},
               "AutoContrast": {}, "Sharpness": {"factor": [1.7, 1.7]}, "Gamma": {"gamma": [0.7, 0.7]},
               "Brightness": {"factor": [1.3, 1.3]}, "Contrast": {"factor": [0.7, 0.7]},
               "Saturation": {"factor": [1.4, 1.4]}, "Grayscale": {"method": "desaturation"},
               "Equalize": {"mode": "cv"}}


@pytest.mark.parametrize("op", list(FLOAT_CASES))
def test_dali_after_a_normalize_matches_kornia(small_images, op):
    """After Normalize(0, 1) DALI's images are float [0, 1]: each op clamps and maps them as
    Kornia does (no 8-bit rounding on that side)."""
    chain = wb.Chain(seed=1).add("Normalize", mean=[0, 0, 0], std=[1, 1, 1]).add(op, p=1.0, **FLOAT_CASES[op])
    kornia = chain.run(small_images, backend="kornia").images
    dali = chain.run(small_images, backend="dali").images
    assert dali.dtype == np.float32
    assert np.abs(kornia - dali).max() < 2e-3  # float32 rounding (Saturation: DALI's own HSV path)
    assert not np.allclose(dali, np.stack(small_images) / 255.0)


def test_dali_colour_ops_clamp_like_kornia_after_a_real_normalize(small_images):
    """With ImageNet statistics the values leave [0, 1]; Kornia clamps before and after a colour op."""
    chain = wb.Chain(seed=1).add("Normalize").add("Brightness", factor=[1.3, 1.3]).add("Gamma", gamma=[0.7, 0.7])
    kornia = chain.run(small_images, backend="kornia").images
    dali = chain.run(small_images, backend="dali").images
    assert dali.min() >= 0.0 and dali.max() <= 1.0
    assert np.abs(kornia - dali).max() < 1e-5


# ----- the coin: p < 1 on DALI runs the same statements, only for some samples ----------------

@pytest.mark.parametrize("op", ["ColorJitter", "Contrast", "Grayscale-average", "Equalize-cv", *NEW_OPS])
def test_dali_applied_samples_equal_the_always_applied_output(x, op):
    """Statements of a step that do not change the images run before DALI's `if`; an op whose
    helper values read the images (ColorJitter's contrast centre after its brightness) must not
    read them stale. Draws come from their own seeds, so p does not change them."""
    op, _, choice = op.partition("-")
    spec = wb.get_op(op)
    images = list(x) * 2
    params = dict(spec.parity.params) if op != "ChannelShuffle" else {}
    if choice:
        params[spec.params[0].name] = choice
    always = wb.Chain(seed=9).add(op, p=1.0, **params).run(images, backend="dali")
    some = wb.Chain(seed=9).add(op, p=0.5, **params).run(images, backend="dali")
    applied = [rows[0]["applied"] for rows in some.params]
    assert 0 < sum(applied) < len(images)
    for n, on in enumerate(applied):
        assert np.array_equal(some.images[n], always.images[n] if on else images[n]), (op, n, on)


# ----- validation ------------------------------------------------------------------------

BAD = [
    ("Posterize", {"bits": [2.5, 4]}, r"step 1 \(Posterize\): parameter 'bits' must be an integer, got 2.5"),
    ("Posterize", {"bits": [0, 4]}, r"step 1 \(Posterize\): parameter 'bits' must lie within \[1, 8\]"),
    ("Posterize", {"bits": [5, 3]}, r"'bits' has lo > hi"),
    ("Solarize", {"threshold": [0.2, 1.5]}, r"step 1 \(Solarize\): parameter 'threshold' must lie within \[0.0, 1.0\]"),
    ("Gamma", {"gamma": [0.0, 1.0]}, r"step 1 \(Gamma\): parameter 'gamma' must lie within \[0.05, 5.0\]"),
    ("Sharpness", {"factor": "sharp"}, r"step 1 \(Sharpness\): parameter 'factor' must be a pair"),
    ("Invert", {"amount": 1}, r"step 1 \(Invert\): unknown parameter 'amount'; Invert takes: none"),
]


@pytest.mark.parametrize("op,params,message", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_invalid_parameters_name_the_op_and_the_parameter(op, params, message):
    with pytest.raises(wb.ChainError, match=message):
        wb.Chain.from_dict({"steps": [{"op": op, "params": params}]})


def test_posterize_bits_round_trip_as_integers():
    chain = wb.Chain.from_dict({"steps": [{"op": "Posterize", "params": {"bits": [3.0, 6]}}]})
    assert chain.steps[0].params["bits"] == [3, 6] and all(isinstance(b, int) for b in chain.steps[0].params["bits"])
    assert wb.Chain.from_yaml(chain.to_yaml()) == chain


def test_posterize_draws_every_integer_of_the_range(x):
    images = list(x) * 6
    for backend in BACKENDS:
        res = run(images, "Posterize", backend, seed=2, bits=[2, 4])
        drawn = {row[0]["bits"] for row in res.params}
        assert drawn == {2.0, 3.0, 4.0}, (backend, drawn)


# ----- Albumentations import (from_transform) ------------------------------------------------

def _import(transform):
    from workbench.importers.albumentations import _map

    return _map(transform)


def test_color_jitter_imports_to_the_single_factor_op_when_only_one_factor_moves():
    neutral = dict(brightness=(1, 1), contrast=(1, 1), saturation=(1, 1), hue=(0, 0))
    assert _import(A.ColorJitter(**{**neutral, "brightness": (0.7, 1.3)})) == ("Brightness", {"factor": [0.7, 1.3]})
    assert _import(A.ColorJitter(**{**neutral, "contrast": (0.5, 0.9)})) == ("Contrast", {"factor": [0.5, 0.9]})
    assert _import(A.ColorJitter(**{**neutral, "saturation": (0, 2)})) == ("Saturation", {"factor": [0.0, 2.0]})
    assert _import(A.ColorJitter(**{**neutral, "hue": (-0.1, 0.1)})) == ("Hue", {"shift": [-0.1, 0.1]})
    op, params = _import(A.ColorJitter(brightness=0.2, contrast=0.2, saturation=0.2, hue=0.05))
    assert op == "ColorJitter" and params["hue"] == pytest.approx([-0.05, 0.05])
    assert params["brightness"] == pytest.approx([0.8, 1.2])


def test_new_ops_import_from_their_transforms():
    assert _import(A.InvertImg()) == ("Invert", {})
    assert _import(A.Solarize(threshold_range=(0.3, 0.6))) == ("Solarize", {"threshold": [0.3, 0.6]})
    assert _import(A.Posterize(num_bits=(2, 5))) == ("Posterize", {"bits": [2, 5]})
    assert _import(A.Equalize(mode="pil")) == ("Equalize", {"mode": "pil"})
    assert _import(A.Equalize()) == ("Equalize", {"mode": "cv"})  # Albumentations' default
    assert _import(A.AutoContrast(method="pil")) == ("AutoContrast", {})
    assert _import(A.RandomGamma(gamma_limit=(70, 150))) == ("Gamma", {"gamma": [0.7, 1.5]})
    assert _import(A.ChannelShuffle()) == ("ChannelShuffle", {})
    assert _import(A.ToGray()) == ("Grayscale", {"method": "weighted_average"})
    for method in ("average", "max", "desaturation"):
        assert _import(A.ToGray(method=method)) == ("Grayscale", {"method": method})


@pytest.mark.parametrize("transform,reason", [
    (A.Equalize(by_channels=False), "by_channels=False"),
    (A.AutoContrast(method="cdf"), "method='cdf'"),
    (A.ToGray(method="from_lab"), "method='from_lab' has no Kornia and DALI counterpart"),
    (A.ToGray(method="pca"), "method='pca'"),
    (A.Posterize(num_bits=[(1, 2), (3, 4), (5, 6)]), "per-channel"),
])
def test_near_misses_say_why(transform, reason):
    with pytest.raises(ValueError, match=reason):
        _import(transform)


def test_lowering_and_import_are_inverse(x):
    """args then from_transform gives back the parameters; the transform runs as the backend does."""
    # (A.ColorJitter applies its kinds in a random order per image: it imports as order 'random'.)
    cases = {"Brightness": {"factor": [0.7, 1.3]}, "ColorJitter": {"brightness": [0.9, 1.1], "contrast": [0.8, 1.0],
                                                                   "saturation": [1.0, 1.5], "hue": [-0.02, 0.03],
                                                                   "order": "random"},
             "Solarize": {"threshold": [0.25, 0.75]}, "Posterize": {"bits": [2, 6]}, "Gamma": {"gamma": [0.7, 1.3]}}
    for op, params in cases.items():
        spec = wb.get_op(op)
        full = spec.validate_params("t", params)
        transform = getattr(A, spec.albumentations.transform)(**spec.albumentations.args(full), p=1.0)
        assert _import(transform) == (op, full)
        assert transform(image=x[0])["image"].shape == x[0].shape


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_color_jitter_in_a_random_order_exports_what_the_run_gives(backend, small_folder, tmp_path):
    """The exported file draws each sample's order as chain.run does (Kornia's WbColorJitter is copied
    into the export, DALI's select is the same graph), bit for bit."""
    chain = wb.Chain(seed=5).add("ColorJitter", p=0.8, brightness=[0.7, 1.3], contrast=[0.7, 1.3],
                                 saturation=[0.7, 1.3], hue=[-0.05, 0.05], order="random")
    assert_save_equals_run(chain, small_folder, tmp_path, seeds=(0, 7), backend=backend, fresh=0)
