"""Albumentations' colour transforms as ops (BrightnessContrast, HueSaturationValue, RGBShift, CLAHE):
the formulas Albumentations documents and runs, value for value on every backend; its default
arguments import; the draws are per image on every backend."""
import os

import cv2
import numpy as np
import pytest

import workbench as wb

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402

from workbench.importers.albumentations import _map  # noqa: E402

BACKENDS = ("kornia", "dali", "albumentations")
OPS = ("BrightnessContrast", "HueSaturationValue", "RGBShift")


def run(images, op, backend, p=1.0, seed=0, **params):
    return wb.Chain(seed=seed).add(op, p=p, **params).run(images, backend=backend, device="cpu")


def levels(images) -> np.ndarray:
    """Any backend's output as 0-255 float levels (Kornia's floats scaled, not rounded)."""
    x = np.asarray(images)
    return x.astype(np.float64) * (255.0 if x.dtype != np.uint8 else 1.0)


@pytest.fixture(scope="module")
def x(small_images):
    return np.stack(small_images)


# ----- values ----------------------------------------------------------------------------

# Kornia exact; DALI rounds to a level once; Albumentations truncates (a level at most).
EXACT = {"kornia": 1e-3, "dali": 0.5 + 1e-3, "albumentations": 1.0 + 1e-3}


@pytest.mark.parametrize("backend", BACKENDS)
def test_brightness_contrast_is_x_times_1_plus_c_plus_b(small_images, x, backend):
    res = run(small_images, "BrightnessContrast", backend, brightness=[0.1, 0.1], contrast=[0.3, 0.3])
    expected = np.clip(x * 1.3 + 0.1 * 255.0, 0, 255)  # no contrast centre: Albumentations scales around 0
    assert np.abs(levels(res.images) - expected).max() <= EXACT[backend]
    assert all(r[0]["brightness"] == pytest.approx(0.1, rel=1e-6) and r[0]["contrast"] == pytest.approx(0.3)
               for r in res.params)


@pytest.mark.parametrize("backend", BACKENDS)
def test_brightness_not_by_max_shifts_by_the_image_mean(small_images, x, backend):
    res = run(small_images, "BrightnessContrast", backend, brightness=[-0.4, -0.4], contrast=[0.0, 0.0],
              brightness_by_max=False)
    for image, out in zip(x, levels(res.images)):
        expected = np.clip(image - 0.4 * image.mean(), 0, 255)
        assert np.abs(out - expected).max() <= EXACT[backend] + 1e-3


def _hsv_reference(image: np.ndarray, hue: float, sat: float, val: float) -> np.ndarray:
    """OpenCV's float HSV (H in degrees, S and V in [0, 1]) shifted in Albumentations' 8-bit units:
    hue by 2 degrees per unit, S and V by levels of 255, grey pixels kept grey; back to 0-255 RGB."""
    hsv = cv2.cvtColor(image.astype(np.float32) / 255.0, cv2.COLOR_RGB2HSV)
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    h = np.mod(h + hue * 2.0, 360.0)
    s = np.where(s > 0, np.clip(s + sat / 255.0, 0, 1), 0)
    v = np.clip(v + val / 255.0, 0, 1)
    return cv2.cvtColor(np.stack([h, s, v], -1).astype(np.float32), cv2.COLOR_HSV2RGB).astype(np.float64) * 255.0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shifts", [(10.0, 20.0, -15.0), (-70.0, -40.0, 30.0), (90.0, 0.0, 0.0)])
def test_hue_saturation_value_shifts_opencv_hsv(small_images, x, backend, shifts):
    hue, sat, val = shifts
    res = run(small_images, "HueSaturationValue", backend, hue_shift=[hue, hue], sat_shift=[sat, sat],
              val_shift=[val, val])
    out = levels(res.images)
    expected = np.stack([_hsv_reference(image, hue, sat, val) for image in x])
    error = np.abs(out - expected)
    if backend == "albumentations":  # OpenCV's 8-bit HSV: hue in whole 2-degree steps, S and V rounded
        assert error.mean() <= 0.5 and np.percentile(error, 99) <= 4.0
    else:
        assert error.max() <= (0.01 if backend == "kornia" else 0.51)
    assert all(r[0]["hue_shift"] == pytest.approx(hue) and r[0]["val_shift"] == pytest.approx(val)
               for r in res.params)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hue_saturation_value_leaves_grey_pixels_grey(backend):
    ramp = np.repeat(np.linspace(0, 255, 64).astype(np.uint8)[None, :, None], 3, axis=2)
    grey = np.repeat(ramp, 16, axis=0)
    out = levels(run([grey], "HueSaturationValue", backend, hue_shift=[40, 40], sat_shift=[60, 60],
                     val_shift=[0, 0]).images)[0]
    assert np.abs(out - grey).max() <= 1e-3


@pytest.mark.parametrize("backend", BACKENDS)
def test_rgb_shift_adds_each_channel_its_shift(small_images, x, backend):
    res = run(small_images, "RGBShift", backend, r_shift=[30, 30], g_shift=[-12, -12], b_shift=[0, 0])
    expected = np.clip(x.astype(np.float64) + np.array([30.0, -12.0, 0.0]), 0, 255)
    assert np.abs(levels(res.images) - expected).max() <= 1e-3
    assert [res.params[0][0][k] for k in ("r_shift", "g_shift", "b_shift")] == pytest.approx([30, -12, 0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", OPS)
def test_default_ranges_draw_per_image_within_the_ranges(small_images, op, backend):
    spec = wb.get_op(op)
    res = run(list(small_images) * 2, op, backend, seed=4)
    for prm in spec.params:
        if not hasattr(prm, "lo") or prm.ui != "range_slider":
            continue
        lo, hi = spec.defaults()[prm.name]
        drawn = [row[0][prm.name] for row in res.params]
        assert all(lo - 1e-6 <= v <= hi + 1e-6 for v in drawn), (prm.name, drawn)
        assert len({round(v, 6) for v in drawn}) == len(drawn), f"{prm.name} is not drawn per image"


# ----- DALI: both value regimes and the coin ------------------------------------------------------

FLOAT_CASES = {"BrightnessContrast": {"brightness": [0.1, 0.1], "contrast": [0.3, 0.3]},
               "HueSaturationValue": {"hue_shift": [25, 25], "sat_shift": [-30, -30], "val_shift": [10, 10]},
               "RGBShift": {"r_shift": [20, 20], "g_shift": [-10, -10], "b_shift": [5, 5]},
               "CLAHE": {"clip_limit": [3.0, 3.0], "tiles_x": 4, "tiles_y": 3}}


@pytest.mark.parametrize("op", OPS + ("CLAHE",))
def test_dali_after_a_normalize_matches_kornia(small_images, op):
    chain = wb.Chain(seed=1).add("Normalize", mean=[0, 0, 0], std=[1, 1, 1]).add(op, p=1.0, **FLOAT_CASES[op])
    kornia = chain.run(small_images, backend="kornia").images
    dali = chain.run(small_images, backend="dali").images
    assert dali.dtype == np.float32 and np.abs(kornia - dali).max() < 1e-4
    assert not np.allclose(dali, np.stack(small_images) / 255.0)


@pytest.mark.parametrize("op", OPS)
def test_dali_applied_samples_equal_the_always_applied_output(x, op):
    images = list(x) * 2
    always = wb.Chain(seed=9).add(op, p=1.0, **FLOAT_CASES[op]).run(images, backend="dali")
    some = wb.Chain(seed=9).add(op, p=0.5, **FLOAT_CASES[op]).run(images, backend="dali")
    applied = [rows[0]["applied"] for rows in some.params]
    assert 0 < sum(applied) < len(images)
    for n, on in enumerate(applied):
        assert np.array_equal(some.images[n], always.images[n] if on else images[n]), (op, n, on)


# ----- Albumentations import -------------------------------------------------------------

def test_default_arguments_import():
    assert _map(A.RandomBrightnessContrast()) == (
        "BrightnessContrast", {"brightness": [-0.2, 0.2], "contrast": [-0.2, 0.2], "brightness_by_max": True})
    assert _map(A.HueSaturationValue()) == (
        "HueSaturationValue", {"hue_shift": [-20.0, 20.0], "sat_shift": [-30.0, 30.0], "val_shift": [-20.0, 20.0]})
    assert _map(A.RGBShift()) == ("RGBShift", {"r_shift": [-20.0, 20.0], "g_shift": [-20.0, 20.0],
                                               "b_shift": [-20.0, 20.0]})
    assert _map(A.RandomGamma()) == ("Gamma", {"gamma": [0.8, 1.2]})


def test_rgb_shift_limits_within_one_are_fractions_of_the_range():
    """A.RGBShift reads a limit within [-1, 1] as a fraction of the range: 0.1 is 25.5 levels."""
    op, params = _map(A.RGBShift(r_shift_limit=0.1, g_shift_limit=(-30, 10), b_shift_limit=(0, 1)))
    assert params["r_shift"] == pytest.approx([-25.5, 25.5]) and params["g_shift"] == [-30.0, 10.0]
    assert params["b_shift"] == pytest.approx([0.0, 255.0])


@pytest.mark.parametrize("op,params", [
    ("BrightnessContrast", {"brightness": [-0.3, 0.1], "contrast": [-0.5, 0.7], "brightness_by_max": False}),
    ("HueSaturationValue", {"hue_shift": [-5.5, 30.0], "sat_shift": [-80.0, 0.0], "val_shift": [2.0, 9.0]}),
    ("RGBShift", {"r_shift": [-0.5, 0.5], "g_shift": [-100.0, 3.0], "b_shift": [7.0, 7.0]}),
    ("CLAHE", {"clip_limit": [1.5, 6.0], "tiles_x": 4, "tiles_y": 12}),
])
def test_lowering_and_import_are_inverse(x, op, params):
    spec = wb.get_op(op)
    full = spec.validate_params("t", params)
    transform = getattr(A, spec.albumentations.transform)(**spec.albumentations.args(full), p=1.0)
    got_op, got = _map(transform)
    assert got_op == op and got.keys() == full.keys()
    for key, value in full.items():
        assert got[key] == (pytest.approx(value) if isinstance(value, list) else value), key


def test_safe_range_is_a_near_miss_that_says_why():
    with pytest.raises(ValueError, match="ensure_safe_range=True"):
        _map(A.RandomBrightnessContrast(ensure_safe_range=True))


def test_imported_pipeline_agrees_with_albumentations():
    """An Albumentations recipe of these three transforms, imported, runs on Kornia as the original does."""
    pipeline = A.Compose([A.RandomBrightnessContrast(brightness_limit=(0.1, 0.1), contrast_limit=(0.2, 0.2), p=1.0),
                          A.HueSaturationValue(hue_shift_limit=(8, 8), sat_shift_limit=(10, 10),
                                               val_shift_limit=(-5, -5), p=1.0),
                          A.RGBShift(r_shift_limit=(10, 10), g_shift_limit=(0, 0), b_shift_limit=(-10, -10), p=1.0)],
                         seed=0)
    chain = wb.Chain.from_albumentations(pipeline)
    assert [s.op for s in chain.steps] == list(OPS) and not chain.unmapped
    images = wb.load_images()[:4]
    original = [pipeline(image=i)["image"].astype(np.float64) for i in images]
    for backend in ("kornia", "dali"):
        outs = chain.run(images, backend=backend).images
        error = np.mean([np.abs(levels(o) - e).mean() for o, e in zip(outs, original)])
        assert error < 1.0, backend  # a level of rounding per step at most



# ----- CLAHE -------------------------------------------------------------------------------

from workbench.runtime.kornia_modules.color import clahe_opencv, opencv_lab_lightness  # noqa: E402
from workbench.ops.color_adjust import clahe_levels  # noqa: E402


def _lightness(image: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(image, cv2.COLOR_RGB2LAB)[:, :, 0]


def _cv_clahe(image: np.ndarray, clip: float, tiles=(8, 8)) -> np.ndarray:
    """Albumentations' CLAHE, written out: OpenCV's CLAHE on L of OpenCV's 8-bit Lab, back to RGB."""
    lab = cv2.cvtColor(image, cv2.COLOR_RGB2LAB)
    lab[:, :, 0] = cv2.createCLAHE(clipLimit=clip, tileGridSize=tiles).apply(lab[:, :, 0])
    return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)


@pytest.mark.parametrize("clip,tiles", [(1.0, (8, 8)), (2.5, (3, 5)), (4.0, (16, 2)), (40.0, (7, 7))])
def test_clahe_opencv_equals_cv2_create_clahe(sample_images, clip, tiles):
    """The Kornia module's CLAHE is OpenCV's, level for level: sizes divisible by the grid or not
    (OpenCV pads then), clipping, redistribution and the bilinear blend of the tile tables."""
    grey = [_lightness(image) for image in sample_images[:3]]
    grey += [np.ascontiguousarray(grey[0][:101, :77]), np.ascontiguousarray(grey[1][:40, :64])]
    import torch

    for g in grey:
        expected = cv2.createCLAHE(clipLimit=clip, tileGridSize=tiles).apply(g)
        got = clahe_opencv(torch.from_numpy(g.astype(np.int64))[None], torch.tensor([clip]), *tiles)[0]
        assert np.array_equal(got.numpy().astype(np.uint8), expected), (g.shape, clip, tiles)


def test_lab_lightness_is_opencvs_8bit_l(sample_images):
    import torch

    rng = np.random.default_rng(0)
    colours = rng.integers(0, 256, size=(256, 256, 3), dtype=np.uint8)
    for image in [colours, sample_images[0]]:
        levels = torch.from_numpy(image.astype(np.int64)).permute(2, 0, 1)[None]
        assert np.array_equal(opencv_lab_lightness(levels)[0].numpy(), _lightness(image))
    # (Kornia's module and the DALI function look up the same tables: runtime/opencv_lab.py.)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clahe_equalises_l_of_lab_as_albumentations_does(small_images, backend):
    res = run(small_images, "CLAHE", backend, clip_limit=[3.0, 3.0], tiles_x=4, tiles_y=3)
    expected = np.stack([_cv_clahe(image, 3.0, (4, 3)) for image in small_images]).astype(np.float64)
    error = np.abs(levels(res.images) - expected)
    if backend == "albumentations":
        assert error.max() == 0
    else:  # the same L levels; Albumentations rounds a, b and the result to whole levels
        assert error.mean() <= 0.45 and np.percentile(error, 99) <= 2.0, error.mean()
        assert np.abs(levels(res.images) - np.stack(small_images)).mean() > 5.0  # it did equalise
    if backend == "dali":  # Kornia's result rounded to a level: the same L levels, the same float arithmetic
        kornia = run(small_images, "CLAHE", "kornia", clip_limit=[3.0, 3.0], tiles_x=4, tiles_y=3)
        assert np.abs(levels(res.images) - levels(kornia.images)).max() <= 0.5 + 1e-3
    assert all(r[0]["clip_limit"] == pytest.approx(3.0) for r in res.params)


def test_clahe_levels_are_exact_binary_steps_within_the_range():
    assert clahe_levels(1.0, 4.0) == [1.0 + k / 8 for k in range(25)]
    assert clahe_levels(2.0, 2.0) == [2.0]
    assert clahe_levels(1.3, 1.7) == [1.3, 1.375, 1.5, 1.625, 1.7]
    wide = clahe_levels(1.0, 40.0)
    assert len(wide) <= 33 and wide[0] == 1.0 and wide[-1] == 40.0 and wide == sorted(set(wide))


@pytest.mark.parametrize("backend", BACKENDS)
def test_clahe_draws_per_image_within_the_range(small_images, backend):
    images = list(small_images) * 2
    res = run(images, "CLAHE", backend, seed=4)
    drawn = [row[0]["clip_limit"] for row in res.params]
    assert all(1.0 <= v <= 4.0 for v in drawn)
    if backend == "dali":  # rounded to the levels fn.clahe runs at, and applied at the value reported
        assert set(drawn) <= set(clahe_levels(1.0, 4.0)) and len(set(drawn)) >= 4
        for image, out, clip in zip(images[:3], res.images, drawn):
            kornia = run([image], "CLAHE", "kornia", clip_limit=[clip, clip]).images[0]
            assert np.abs(levels(out) - levels(kornia)).max() <= 0.5 + 1e-3, clip
    else:
        assert len({round(v, 6) for v in drawn}) == len(drawn)


def test_clahe_default_arguments_import_and_near_misses_name_the_parameter():
    assert _map(A.CLAHE()) == ("CLAHE", {"clip_limit": [1.0, 4.0], "tiles_x": 8, "tiles_y": 8})
    assert _map(A.CLAHE(clip_limit=2.0)) == ("CLAHE", {"clip_limit": [1.0, 2.0], "tiles_x": 8, "tiles_y": 8})
    # OpenCV reads tile_grid_size as (tiles across, tiles down).
    assert _map(A.CLAHE(tile_grid_size=(2, 6)))[1] == {"clip_limit": [1.0, 4.0], "tiles_x": 2, "tiles_y": 6}
    with pytest.raises(ValueError, match=r"clip_limit must lie within \[1, 40\]"):
        _map(A.CLAHE(clip_limit=(2, 50)))
    with pytest.raises(ValueError, match="tile_grid_size"):
        _map(A.CLAHE(tile_grid_size=(8, 100)))


@pytest.mark.parametrize("tiles", [(8, 8), (3, 5), (16, 2)])
def test_dali_clahe_runs_on_the_tiles_cv2_pads_to(sample_images, tiles):
    """DALI's lowering pads the lightness to the whole tiles cv2.createCLAHE pads it to (reflect-101, and
    a whole tile more on a side that divides when the other does not) before fn.clahe, and cuts it back:
    DALI's GPU kernel takes smaller last tiles instead of padding, so only on whole tiles do both of
    DALI's kernels compute OpenCV's CLAHE. On the CPU the result stays cv2's, level for level; a side
    shorter than a tile is left unpadded (cv2 mirrors it more than once)."""
    from nvidia.dali import fn, pipeline_def, types

    from workbench.runtime.dali_ops.clahe import cut_to_size, on_whole_tiles

    rng = np.random.default_rng(0)
    grey = [np.ascontiguousarray(_lightness(image)[:, :, None]) for image in sample_images[:6]]
    grey += [rng.integers(0, 256, (h, w, 1), dtype=np.uint8) for h, w in [(101, 77), (40, 64), (64, 40), (3, 5)]]

    @pipeline_def(batch_size=len(grey), num_threads=1, device_id=None)
    def pipeline():
        x = fn.external_source(source=lambda: grey, layout="HWC", batch=True)
        hw = fn.cast(x.shape(), dtype=types.FLOAT)
        padded = on_whole_tiles(x, hw[0], hw[1], *tiles)
        equalised = fn.clahe(padded, tiles_x=tiles[0], tiles_y=tiles[1], clip_limit=2.0)
        return padded, cut_to_size(equalised, hw[0], hw[1])

    pipe = pipeline()
    pipe.build()
    padded, equalised = ([np.array(t)[:, :, 0] for t in out] for out in pipe.run())
    for g, pad, got in zip(grey, padded, equalised):
        (h, w), (tx, ty) = g.shape[:2], tiles
        whole = h % ty == 0 and w % tx == 0
        fits = ty - h % ty <= h - 1 and tx - w % tx <= w - 1
        expected = g[:, :, 0] if whole or not fits else \
            cv2.copyMakeBorder(g[:, :, 0], 0, ty - h % ty, 0, tx - w % tx, cv2.BORDER_REFLECT_101)
        assert np.array_equal(pad, expected), (g.shape, tiles)
        assert np.array_equal(got, cv2.createCLAHE(clipLimit=2.0, tileGridSize=tiles).apply(g[:, :, 0])), g.shape


def test_clahe_non_square_grid_agrees_with_albumentations(small_images):
    pipeline = A.Compose([A.CLAHE(clip_limit=(2.5, 2.5), tile_grid_size=(2, 6), p=1.0)], seed=0)
    chain = wb.Chain.from_albumentations(pipeline)
    original = np.stack([pipeline(image=i)["image"] for i in small_images]).astype(np.float64)
    for backend in ("kornia", "dali"):
        assert np.abs(levels(chain.run(small_images, backend=backend).images) - original).mean() <= 0.45, backend


def test_clahe_dali_coin_gates_the_clip_levels(x):
    """p < 1 on DALI: the clip levels' conditionals nest under the coin; applied samples equal the
    always-applied output at the same draws, the others are untouched."""
    images = list(x) * 2
    always = wb.Chain(seed=9).add("CLAHE", p=1.0, clip_limit=[2.0, 2.5]).run(images, backend="dali")
    some = wb.Chain(seed=9).add("CLAHE", p=0.5, clip_limit=[2.0, 2.5]).run(images, backend="dali")
    applied = [rows[0]["applied"] for rows in some.params]
    assert 0 < sum(applied) < len(images)
    drawn = [r[0]["clip_limit"] for r in some.params]
    assert drawn == [r[0]["clip_limit"] for r in always.params] and len(set(drawn)) > 1
    for n, on in enumerate(applied):
        assert np.array_equal(some.images[n], always.images[n] if on else images[n]), (n, on)
