"""Blur, noise and occlusion ops do what their specs say, value for value, on every backend
that runs them (Kornia in float [0, 1]; DALI and Albumentations on 0-255 uint8, DALI on floats
after a Normalize)."""
import os

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.codegen import emit, load_module

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402

BACKENDS = ("kornia", "dali", "albumentations")
OPS = ("GaussianBlur", "GaussianNoise", "SaltAndPepper", "JpegCompression", "MotionBlur", "MedianBlur", "Erase",
       "GridMask", "CoarseDropout")


def run(images, op, backend, p=1.0, seed=0, **params):
    return wb.Chain(seed=seed).add(op, p=p, **params).run(images, backend=backend, device="cpu")


def levels(images) -> np.ndarray:
    """Any backend's output as 0-255 float levels (Kornia's floats scaled, to 1/1000 of a level
    so that 128 / 255 * 255 reads 128)."""
    x = np.asarray(images)
    return (x.astype(np.float64) * (255.0 if x.dtype != np.uint8 else 1.0)).round(3)


def backends_of(op):
    return [b for b in BACKENDS if wb.get_op(op).supports(b)]


@pytest.fixture(scope="module")
def grey():
    """Mid-grey images: noise neither saturates nor hides there."""
    return [np.full((96, 128, 3), 128, np.uint8) for _ in range(4)]


@pytest.fixture(scope="module")
def white():
    return [np.full((96, 128, 3), 255, np.uint8) for _ in range(3)]


# ----- noise -----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", backends_of("GaussianNoise"))
def test_gaussian_noise_std_is_the_std_asked_for(grey, backend):
    res = run(grey, "GaussianNoise", backend, std=0.1)
    change = (levels(res.images) - 128.0) / 255.0
    for c in range(3):  # each channel draws its own noise
        assert abs(change[..., c].std() - 0.1) < 0.004, (backend, c, change[..., c].std())
        assert abs(change[..., c].mean()) < 0.004
    # Independent per channel, not one value copied to all three.
    assert abs(np.corrcoef(change[..., 0].ravel(), change[..., 1].ravel())[0, 1]) < 0.05
    # A different seed gives different noise.
    assert not np.array_equal(res.images, run(grey, "GaussianNoise", backend, std=0.1, seed=1).images)


@pytest.mark.parametrize("backend", backends_of("SaltAndPepper"))
@pytest.mark.parametrize("amount", [0.02, 0.2])
def test_salt_and_pepper_flips_about_amount_of_the_pixels(grey, backend, amount):
    res = run(grey, "SaltAndPepper", backend, amount=[amount, amount], salt_vs_pepper=[0.25, 0.25])
    out = levels(res.images)
    changed = (out != 128.0).any(axis=-1)
    # Whole pixels turn white or black, all channels alike; nothing else changes.
    assert set(np.unique(out[changed])) <= {0.0, 255.0}
    assert (out[changed] == out[changed][:, :1]).all()
    pixels = changed.size
    assert abs(changed.sum() / pixels - amount) < 4 * np.sqrt(amount / pixels) + 1e-3
    salt = (out[..., 0] == 255.0).sum() / changed.sum()
    assert abs(salt - 0.25) < 0.05
    for row in res.params:
        assert row[0].get("amount", amount) == pytest.approx(amount)


def test_salt_and_pepper_writes_0_and_1_after_a_normalize(grey):
    """Kornia writes the literals 1 and 0 whatever the range; so does DALI on floats."""
    chain = (wb.Chain(seed=2).add("Normalize", mean=[0.5] * 3, std=[0.25] * 3)
             .add("SaltAndPepper", p=1.0, amount=[0.1, 0.1], salt_vs_pepper=[0.5, 0.5]))
    for backend in ("kornia", "dali"):
        out = np.asarray(chain.run(grey, backend=backend).images)
        base = (128 / 255 - 0.5) / 0.25
        assert {round(float(v), 5) for v in np.unique(out)} == {0.0, 1.0, round(base, 5)}, backend


# ----- JPEG ------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", backends_of("JpegCompression"))
def test_jpeg_error_grows_as_quality_falls(small_images, backend):
    x = np.stack(small_images).astype(np.float64)
    errors = []
    for quality in (100.0, 50.0, 10.0):
        res = run(small_images, "JpegCompression", backend, quality=[quality, quality])
        errors.append(np.abs(levels(res.images) - x).mean())
        assert {row[0]["quality"] for row in res.params if "quality" in row[0]} <= {quality}
    assert errors[0] < errors[1] < errors[2], errors
    assert errors[0] < 1.5 and errors[2] > 4.0, errors


def test_dali_jpeg_quality_is_a_whole_number_drawn_from_the_range(small_images):
    res = run(small_images, "JpegCompression", "dali", quality=[20.0, 80.0])
    qualities = [row[0]["quality"] for row in res.params]
    assert all(q == int(q) and 20 <= q <= 80 for q in qualities) and len(set(qualities)) > 1


def test_jpeg_after_a_normalize_codes_like_kornia(small_images):
    """After a Normalize DALI codes the values clamped to [0, 1] in 8 bits, as Kornia does."""
    chain = wb.Chain().add("Normalize", mean=[0.0] * 3, std=[1.0] * 3).add("JpegCompression", p=1.0,
                                                                             quality=[50.0, 50.0])
    k = np.asarray(chain.run(small_images, backend="kornia").images)
    d = np.asarray(chain.run(small_images, backend="dali").images)
    assert d.dtype == np.float32 and 0.0 <= d.min() and d.max() <= 1.0
    assert np.abs(k - d).mean() < 2.0 / 255


# ----- blurs -----------------------------------------------------------------------------

def median_reference(image: np.ndarray, k: int) -> np.ndarray:
    """Per-channel median over k x k windows, borders mirrored without the edge pixel."""
    r = k // 2
    padded = np.pad(image, ((r, r), (r, r), (0, 0)), mode="reflect")
    h, w = image.shape[:2]
    stack = [padded[dy:dy + h, dx:dx + w] for dy in range(k) for dx in range(k)]
    return np.median(np.stack(stack), axis=0)


@pytest.mark.parametrize("k", [3, 5, 7])
def test_median_blur_is_the_window_median_on_kornia_and_dali(small_images, k):
    expected = np.stack([median_reference(i, k) for i in small_images[:3]])
    for backend in ("kornia", "dali"):
        out = levels(run(small_images[:3], "MedianBlur", backend, kernel_size=k).images)
        assert np.abs(out - expected).max() < 1e-3, backend
    # OpenCV repeats the edge pixel: equal inside, different at the border.
    a = levels(run(small_images[:3], "MedianBlur", "albumentations", kernel_size=k).images)
    assert np.array_equal(a[:, k:-k, k:-k], expected[:, k:-k, k:-k])


def test_median_blur_on_floats_after_a_normalize(small_images):
    chain = wb.Chain().add("Normalize", mean=[0.2] * 3, std=[0.5] * 3).add("MedianBlur", p=1.0, kernel_size=3)
    k = np.asarray(chain.run(small_images[:2], backend="kornia").images)
    d = np.asarray(chain.run(small_images[:2], backend="dali").images)
    assert d.dtype == np.float32 and np.abs(k - d).max() < 1e-5


def test_median_blur_removes_salt_and_pepper(grey):
    noisy = run(grey, "SaltAndPepper", "dali", amount=[0.05, 0.05]).images
    for backend in BACKENDS:
        out = run(list(noisy), "MedianBlur", backend, kernel_size=3).images
        assert (levels(out)[:, 1:-1, 1:-1] == 128.0).mean() > 0.99, backend


@pytest.mark.parametrize("angle,direction", [(0.0, 0.0), (30.0, 1.0), (90.0, -0.5), (135.0, 0.3), (215.0, -1.0),
                                             (333.3, 0.7)])
def test_motion_blur_dali_builds_kornias_kernel(angle, direction):
    """The blur of a single bright pixel is the kernel: DALI's equals Kornia's at any angle."""
    from kornia.filters import get_motion_kernel2d

    image = np.zeros((15, 15, 3), np.uint8)
    image[7, 7] = 255
    params = dict(kernel_size=7, angle=[angle, angle], direction=[direction, direction])
    k = levels(run([image], "MotionBlur", "kornia", **params).images)[0, ..., 0]
    d = levels(run([image], "MotionBlur", "dali", **params).images)[0, ..., 0]
    assert np.abs(k - d).max() <= 0.5 + 1e-6  # DALI rounds to whole levels
    kernel = get_motion_kernel2d(7, torch.tensor([angle]), torch.tensor([direction]))[0].numpy()
    # Correlation turns the kernel around: the point's streak is the kernel rotated by 180 degrees.
    assert np.allclose(k[4:11, 4:11], 255 * kernel[::-1, ::-1], atol=1e-3)


def test_motion_blur_albumentations_matches_at_multiples_of_45_degrees(small_images):
    for angle in (0.0, 45.0, 90.0, 135.0):
        params = dict(kernel_size=5, angle=[angle, angle], direction=[0.0, 0.0])
        d = run(small_images[:2], "MotionBlur", "dali", **params).images
        a = run(small_images[:2], "MotionBlur", "albumentations", **params).images
        assert np.array_equal(d, a), angle


@pytest.mark.parametrize("backend", backends_of("GaussianBlur"))
def test_gaussian_blur_reports_the_sigma_it_drew(small_images, backend):
    res = run(small_images, "GaussianBlur", backend, sigma=[0.5, 2.5], kernel_size=9)
    sigmas = [row[0]["sigma"] for row in res.params]
    assert all(0.5 <= s <= 2.5 for s in sigmas) and len(set(sigmas)) == len(sigmas)
    fixed = run(small_images[:1], "GaussianBlur", backend, sigma=[1.7, 1.7], kernel_size=9)
    assert fixed.params[0][0]["sigma"] == pytest.approx(1.7, rel=1e-6)


# ----- occlusion -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", backends_of("GridMask"))
def test_grid_mask_zeroes_the_top_left_square_of_every_tile(white, backend):
    out = levels(run(white, "GridMask", backend, tile=32, ratio=0.5, random_offset=False).images)[..., 0]
    y, x = np.mgrid[0:96, 0:128]
    expected = np.where(((y % 32) < 16) & ((x % 32) < 16), 0.0, 255.0)
    assert (out == expected).all()
    assert (out == 0).mean() == pytest.approx(0.25)


@pytest.mark.parametrize("backend", ["dali", "kornia"])
def test_grid_mask_random_offset_shifts_the_grid_by_the_reported_offset(white, backend):
    res = run(white, "GridMask", backend, seed=4, tile=32, ratio=0.25, random_offset=True)
    y, x = np.mgrid[0:96, 0:128]
    offsets = set()
    for image, rows in zip(levels(res.images)[..., 0], res.params):
        dx, dy = rows[0]["x"], rows[0]["y"]
        assert 0 <= dx < 32 and 0 <= dy < 32 and dx == int(dx) and dy == int(dy)
        expected = np.where((((y - dy) % 32) < 8) & (((x - dx) % 32) < 8), 0.0, 255.0)
        assert (image == expected).all()
        assert (image == 0).mean() == pytest.approx(1 / 16)
        offsets.add((dx, dy))
    assert len(offsets) > 1


@pytest.mark.parametrize("backend", backends_of("CoarseDropout"))
def test_coarse_dropout_fills_exactly_its_reported_holes(small_images, backend):
    res = run(small_images, "CoarseDropout", backend, holes=5, height=[0.1, 0.3], width=[0.05, 0.4], value=0.5)
    for image, out, rows in zip(small_images, res.images, res.params):
        row = rows[0]
        holes = list(zip(*(np.atleast_1d(row[k]) for k in ("x", "y", "width", "height"))))
        assert len(holes) == 5
        inside = np.zeros(image.shape[:2], bool)
        for x, y, w, h in holes:
            assert 0 <= x and x + w <= 128 and 0 <= y and y + h <= 96
            assert int(0.1 * 96) <= h <= int(0.3 * 96) and int(0.05 * 128) <= w <= int(0.4 * 128)
            inside[int(y):int(y + h), int(x):int(x + w)] = True
        out = levels(out)
        # 0.5 of 255: DALI and Albumentations fill uint8 rounded down, Kornia 0.5 itself.
        assert (out[inside] == (127.5 if backend == "kornia" else 127.0)).all()
        assert np.array_equal(out[~inside], image[~inside].astype(np.float64))


@pytest.mark.parametrize("backend", backends_of("Erase"))
def test_erase_fills_its_reported_rectangle(small_images, backend):
    res = run(small_images, "Erase", backend, scale=[0.1, 0.2], ratio=[0.5, 2.0], value=1.0)
    for image, out, rows in zip(small_images, levels(res.images), res.params):
        x, y, w, h = (int(rows[0][k]) for k in ("x", "y", "width", "height"))
        inside = np.zeros(image.shape[:2], bool)
        inside[y:y + h, x:x + w] = True
        assert (out[inside] == 255.0).all()
        assert np.array_equal(out[~inside], image[~inside].astype(np.float64))
        assert 0.09 <= w * h / inside.size <= 0.21


def test_erase_albumentations_ratio_is_height_over_width(small_images):
    res = run(small_images, "Erase", "albumentations", scale=[0.2, 0.2], ratio=[3.0, 3.0])
    for rows in res.params:
        assert rows[0]["height"] / rows[0]["width"] == pytest.approx(3.0, rel=0.15)


# ----- Albumentations imports invert the lowerings ---------------------------------------

ROUND_TRIPS = {
    "GaussianBlur": {"sigma": [0.3, 1.7], "kernel_size": [5, 11]},
    "GaussianNoise": {"std": [0.02, 0.07]},
    "SaltAndPepper": {"amount": [0.01, 0.05], "salt_vs_pepper": [0.3, 0.7]},
    "JpegCompression": {"quality": [30.0, 90.0]},
    "MotionBlur": {"kernel_size": [5, 9], "angle": [10.5, 200.25], "direction": [-0.5, 0.75], "allow_shifted": True},
    "MedianBlur": {"kernel_size": [3, 7]},
    "Erase": {"scale": [0.05, 0.2], "ratio": [0.3, 3.3], "value": 0.2},
    "GridMask": {"tile": 40, "ratio": 0.6, "random_offset": True},
    "CoarseDropout": {"holes": [1, 3], "height": [0.1, 0.25], "width": [0.2, 0.3], "value": 1.0},
}


@pytest.mark.parametrize("op", OPS)
def test_albumentations_import_gives_back_the_params(op):
    chain = wb.Chain(seed=5).add(op, p=0.3, **ROUND_TRIPS[op])
    spec = wb.get_op(op)
    transform = getattr(A, spec.albumentations.transform)(**spec.albumentations.args(chain.steps[0].params), p=0.3)
    back = wb.Chain.from_albumentations(A.Compose([transform], seed=5), strict=True)
    assert [(s.op, s.p) for s in back.steps] == [(op, 0.3)]
    assert back.steps[0].params == chain.steps[0].params


@pytest.mark.parametrize("transform,words", [
    (A.GaussNoise(mean_range=(0.1, 0.1)), "zero-mean noise"),
    (A.MedianBlur(blur_limit=(3, 9)), "'kernel_size' must lie within [3, 7]"),
    (A.GridDropout(), "GridMask takes a tile in pixels"),
    (A.CoarseDropout(num_holes_range=(2, 2), hole_height_range=(8, 16)), "is in pixels"),
    (A.Erasing(fill="random"), "fills a constant value"),
    (A.ImageCompression(compression_type="webp"), "JPEG only"),
    (A.GaussianBlur(blur_limit=(0, 7)), "blur_limit=(0, 7) draws a size of 0"),
    (A.GaussianBlur(blur_limit=(3, 101), sigma_limit=(1.0, 2.0)), "at most 99x99"),
])
def test_albumentations_settings_without_an_equivalent_are_listed_with_the_reason(transform, words):
    with pytest.warns(UserWarning, match="left out"):
        chain = wb.Chain.from_albumentations(A.Compose([transform]))
    assert chain.steps == [] and words in chain.unmapped[0].reason


def test_albumentations_gaussian_blur_sized_from_sigma_imports_the_largest_kernel():
    chain = wb.Chain.from_albumentations(A.Compose([A.GaussianBlur(sigma_limit=(0.5, 3.0))]))
    assert chain.steps[0].params == {"sigma": [0.5, 3.0], "kernel_size": [21, 21]}


# ----- errors ----------------------------------------------------------------------------

@pytest.mark.parametrize("op,params,words", [
    ("MedianBlur", {"kernel_size": 4}, "'kernel_size' must be odd integers (kernel sizes), got [4, 4]"),
    # GaussianBlur's kernel_size was one number: that form keeps its wording.
    ("GaussianBlur", {"kernel_size": 6}, "'kernel_size' must be an odd integer, got 6"),
    ("GaussianBlur", {"kernel_size": 101}, "'kernel_size' must be in [3, 99], got 101"),
    ("GaussianBlur", {"kernel_size": [7, 5]}, "'kernel_size' has lo > hi (7 > 5)"),
    ("GaussianBlur", {"kernel_size": [3, 6]}, "'kernel_size' must be odd integers (kernel sizes), got [3, 6]"),
    ("MedianBlur", {"kernel_size": [3, 9]}, "'kernel_size' must lie within [3, 7]"),
    ("MedianBlur", {"kernel_size": [3.5, 5]}, "'kernel_size' must be an integer"),
    ("GaussianNoise", {"std": 1.5}, "'std' must lie within [0.0, 1.0]"),
    ("GaussianNoise", {"std": [0.2, 0.1]}, "'std' has lo > hi"),
    ("GaussianNoise", {"std": "0.1"}, "'std' must be a number or a pair [lo, hi]"),
    ("CoarseDropout", {"holes": [3, 1]}, "'holes' has lo > hi (3 > 1)"),
    ("SaltAndPepper", {"amount": [0.3, 0.1]}, "'amount' has lo > hi"),
    ("JpegCompression", {"quality": [0.0, 50.0]}, "'quality' must lie within [1.0, 100.0]"),
    ("MotionBlur", {"angle": [-10.0, 10.0]}, "'angle' must lie within [0.0, 360.0]"),
    ("MotionBlur", {"direction": [-2.0, 0.0]}, "'direction' must lie within [-1.0, 1.0]"),
    ("GridMask", {"ratio": 1.0}, "'ratio' must be in [0.05, 0.95]"),
    ("GridMask", {"tile": 2}, "'tile' must be in [4, 1024]"),
    ("GridMask", {"random_offset": 1}, "'random_offset' must be true or false"),
    ("CoarseDropout", {"height": [0.5, 1.0]}, "'height' must lie within [0.01, 0.99]"),
    ("CoarseDropout", {"holes": 0}, "'holes' must lie within [1, 64]"),
    ("Erase", {"value": 2.0}, "'value' must be in [0.0, 1.0]"),
])
def test_bad_parameters_name_the_op_and_the_parameter(op, params, words):
    with pytest.raises(wb.ChainError) as info:
        wb.Chain().add(op, **params)
    assert f"({op}): parameter" in str(info.value) and words in str(info.value)


# ----- per-image ranges, as Albumentations draws them ------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_median_blur_draws_an_odd_size_per_image_and_applies_it(small_images, backend):
    res = run(small_images, "MedianBlur", backend, seed=2, kernel_size=[3, 7])
    sizes = [row[0].get("kernel_size") for row in res.params]
    assert set(sizes) <= {3.0, 5.0, 7.0} and len(set(sizes)) > 1, sizes
    for image, out, k in zip(small_images, levels(res.images), sizes):
        expected = median_reference(image, int(k))
        r = int(k) if backend == "albumentations" else 0  # OpenCV repeats the edge pixel
        inner = (slice(r, -r or None), slice(r, -r or None))
        assert np.abs(out[inner] - expected[inner]).max() < 1e-3, (backend, k)


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_motion_blur_kernel_size_is_drawn_per_image(small_images, backend):
    """Each sample equals the blur at its own reported draws, applied alone."""
    res = run(small_images, "MotionBlur", backend, seed=1, kernel_size=[3, 9])
    sizes = {row[0]["kernel_size"] for row in res.params}
    assert sizes <= {3.0, 5.0, 7.0, 9.0} and len(sizes) > 1
    for image, out, rows in zip(small_images, levels(res.images), res.params):
        d = rows[0]
        alone = run([image], "MotionBlur", "kornia", kernel_size=int(d["kernel_size"]), angle=[d["angle"]] * 2,
                    direction=[d["direction"]] * 2)
        assert np.abs(levels(alone.images)[0] - out).mean() < 0.3


def shifted_motion_reference(image, row):
    """Kornia's motion kernel at the sample's draws, moved by round(shift x (k // 2) / 2) whole
    pixels along x and y, correlated with mirrored borders (OpenCV's filter2D)."""
    import cv2
    import kornia

    k = int(row["kernel_size"])
    kernel = kornia.filters.get_motion_kernel2d(k, torch.tensor([row["angle"]]), torch.tensor([row["direction"]]),
                                               mode="nearest")[0].double().numpy()
    half, margin = k // 2, (k // 2 + 1) // 2
    dx, dy = (int(torch.round(torch.tensor(row[key], dtype=torch.float32) * half * 0.5))
              for key in ("shift_x", "shift_y"))
    moved = np.zeros((k + 2 * margin,) * 2)
    moved[margin + dy:margin + dy + k, margin + dx:margin + dx + k] = kernel
    return cv2.filter2D(image.astype(np.float64), -1, moved, borderType=cv2.BORDER_REFLECT_101), (dx, dy)


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_motion_blur_allow_shifted_moves_each_kernel_by_its_own_draw(small_images, backend):
    res = run(small_images * 2, "MotionBlur", backend, seed=5, kernel_size=[5, 9], allow_shifted=True)
    moves = []
    for image, out, rows in zip(small_images * 2, levels(res.images), res.params):
        d = rows[0]
        assert -1.0 <= d["shift_x"] <= 1.0 and -1.0 <= d["shift_y"] <= 1.0
        expected, move = shifted_motion_reference(image, d)
        moves.append(move)
        # Kornia in float; DALI rounds to whole levels.
        assert np.abs(out - expected).max() <= 0.5 + 1e-3, (backend, d)
    assert len(set(moves)) > 3 and any(dx and dy for dx, dy in moves), moves


def test_motion_blur_without_allow_shifted_draws_and_blurs_as_before(small_images):
    """The flag's default leaves earlier chains' draws, reports and images as they were."""
    params = {"kernel_size": [3, 7], "angle": [0.0, 360.0], "direction": [-1.0, 1.0]}
    chain = wb.Chain(seed=3).add("MotionBlur", p=1.0, **params)
    assert chain.steps[0].params["allow_shifted"] is False
    for backend in ("kornia", "dali"):
        res = chain.run(small_images, backend=backend, device="cpu")
        assert all("shift_x" not in row[0] for row in res.params)
        for image, out, rows in zip(small_images, levels(res.images), res.params):
            expected, move = shifted_motion_reference(image, {**rows[0], "shift_x": 0.0, "shift_y": 0.0})
            assert move == (0, 0) and np.abs(out - expected).max() <= 0.5 + 1e-3


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_gaussian_noise_std_is_drawn_per_image(grey, backend):
    res = run(grey * 3, "GaussianNoise", backend, std=[0.02, 0.2])
    stds = [row[0]["std"] for row in res.params]
    assert all(0.02 <= s <= 0.2 for s in stds) and len(set(stds)) == len(stds)
    for out, s in zip(levels(res.images), stds):
        assert abs((out - 128.0).std() / 255.0 - s) < 0.004 + 0.03 * s


def test_gaussian_noise_draws_noise_for_the_samples_it_applies_to_only(grey):
    """p = 0.5 over 12 grey images: the samples left out come back as they went in (their noise is zero, not
    drawn); each noisy one has noise of its reported std, unlike any other's; and the draws repeat with the seed."""
    res = run(grey * 3, "GaussianNoise", "kornia", p=0.5, seed=4, std=[0.1, 0.1])
    applied = [row[0]["applied"] for row in res.params]
    assert 0 < sum(applied) < len(applied), applied
    noises = [out - 128.0 for out in levels(res.images)]
    for noise, on in zip(noises, applied):
        if on:
            assert abs(noise.std() / 255.0 - 0.1) < 0.01 and abs(noise.mean()) < 1.0
        else:
            assert not noise.any()
    noisy = [noise for noise, on in zip(noises, applied) if on]
    assert all(not np.allclose(a, b) for k, a in enumerate(noisy) for b in noisy[k + 1:])
    np.testing.assert_array_equal(run(grey * 3, "GaussianNoise", "kornia", p=0.5, seed=4, std=[0.1, 0.1]).images,
                                  res.images)


@pytest.mark.parametrize("backend", BACKENDS)
def test_coarse_dropout_draws_the_number_of_holes_per_image(small_images, backend):
    res = run(small_images * 2, "CoarseDropout", backend, seed=3, holes=[1, 3], height=[0.1, 0.2],
              width=[0.1, 0.2], value=1.0)
    counts = []
    for image, out, rows in zip(small_images * 2, levels(res.images), res.params):
        row = rows[0]
        if "x" not in row:  # the Albumentations runner cannot stack a count unlike the first image's
            continue
        holes = [h for h in zip(*(np.atleast_1d(row[k]) for k in ("x", "y", "width", "height"))) if h[2] * h[3] > 0]
        counts.append(len(holes))
        assert row.get("holes", len(holes)) == len(holes)
        inside = np.zeros(image.shape[:2], bool)
        for x, y, w, h in holes:
            inside[int(y):int(y + h), int(x):int(x + w)] = True
        assert (out[inside] == 255.0).all() and np.array_equal(out[~inside], image[~inside].astype(np.float64))
    assert set(counts) <= {1, 2, 3} and (backend == "albumentations" or len(set(counts)) > 1), counts


def test_chains_saved_with_single_numbers_still_load_as_ranges():
    chain = wb.Chain.from_dict({"seed": 1, "steps": [
        {"op": "MedianBlur", "params": {"kernel_size": 5}}, {"op": "GaussianNoise", "params": {"std": 0.05}},
        {"op": "MotionBlur", "params": {"kernel_size": 7}}, {"op": "CoarseDropout", "params": {"holes": 4}},
        {"op": "GaussianBlur", "params": {"kernel_size": 9}}]})
    names = ("kernel_size", "std", "kernel_size", "holes", "kernel_size")
    assert [s.params[k] for s, k in zip(chain.steps, names)] == [[5, 5], [0.05, 0.05], [7, 7], [4, 4], [9, 9]]
    again = wb.Chain.from_dict(chain.to_dict())
    assert again.to_dict() == chain.to_dict()


@pytest.mark.parametrize("transform,op,params", [
    (A.MedianBlur(), "MedianBlur", {"kernel_size": [3, 7]}),
    (A.GaussNoise(), "GaussianNoise", {"std": [0.2, 0.44]}),
    (A.CoarseDropout(), "CoarseDropout", {"holes": [1, 2], "height": [0.1, 0.2], "width": [0.1, 0.2], "value": 0.0}),
    (A.GaussianBlur(), "GaussianBlur", {"sigma": [0.5, 3.0], "kernel_size": [21, 21]}),
    (A.ImageCompression(), "JpegCompression", {"quality": [99.0, 100.0], "codec": "native"}),
    (A.MotionBlur(allow_shifted=False), "MotionBlur", {"kernel_size": [3, 7], "angle": [0.0, 360.0],
                                                       "direction": [-1.0, 1.0], "allow_shifted": False}),
    # Albumentations' default moves the kernel off centre at random.
    (A.MotionBlur(), "MotionBlur", {"kernel_size": [3, 7], "angle": [0.0, 360.0], "direction": [-1.0, 1.0],
                                    "allow_shifted": True}),
    (A.MedianBlur(blur_limit=4), "MedianBlur", {"kernel_size": [3, 5]}),
])
def test_albumentations_default_arguments_import(transform, op, params):
    chain = wb.Chain.from_albumentations(A.Compose([transform]), strict=True)
    assert [(s.op, s.p) for s in chain.steps] == [(op, 0.5)]
    assert chain.steps[0].params == params


# ----- GaussianBlur: an odd kernel size drawn per image ----------------------------------------

def gaussian_reference(image, k, sigma):
    """Separable exp(-x^2 / 2 sigma^2) / sum over k taps, borders mirrored without the edge pixel."""
    import cv2

    x = np.arange(k, dtype=np.float64) - k // 2
    g = np.exp(-x ** 2 / (2 * sigma ** 2))
    g /= g.sum()
    return cv2.sepFilter2D(image.astype(np.float64), -1, g, g, borderType=cv2.BORDER_REFLECT_101)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gaussian_blur_draws_an_odd_size_per_image_and_applies_it(small_images, backend):
    res = run(small_images * 2, "GaussianBlur", backend, seed=2, sigma=[0.8, 2.5], kernel_size=[3, 9])
    sizes = [row[0]["kernel_size"] for row in res.params]
    assert set(sizes) <= {3.0, 5.0, 7.0, 9.0} and len(set(sizes)) > 2, sizes
    for image, out, rows in zip(small_images * 2, levels(res.images), res.params):
        assert 0.8 - 1e-6 <= rows[0]["sigma"] <= 2.5 + 1e-6
        expected = gaussian_reference(image, int(rows[0]["kernel_size"]), rows[0]["sigma"])
        # DALI and OpenCV round to whole levels; Kornia on a CPU's levels is OpenCV's fixed-point blur.
        assert np.abs(out - expected).max() <= (1.5 if backend == "kornia" else 0.5 + 0.02), (backend, rows[0])


def test_gaussian_blur_at_one_size_gives_the_images_it_gave_before(small_images, monkeypatch):
    """kernel_size [k, k] (what a chain saved with one number loads as) draws and blurs exactly as the
    lowerings before per-image sizes did: K.RandomGaussianBlur, fn.gaussian_blur with a literal
    window, A.GaussianBlur(blur_limit=(k, k)); the steps after it draw as before too."""
    import dataclasses

    from workbench.ops import REGISTRY
    from workbench.ops.dali_helpers import assign, uniform
    from workbench.ops.params import Number
    from workbench.ops.spec import DaliLowering, KorniaLowering

    spec = wb.get_op("GaussianBlur")
    before = dataclasses.replace(
        spec, name="GaussianBlurBefore",
        params=(spec.param("sigma"), Number("kernel_size", "window side", 5, lo=3, hi=99, integer=True, odd=True)),
        kornia=KorniaLowering("RandomGaussianBlur", lambda a: {"kernel_size": (a["kernel_size"], a["kernel_size"]),
                                                               "sigma": tuple(a["sigma"]), "border_type": "reflect"},
                              record={"sigma": "sigma"}),
        dali=DaliLowering(mirror_invariant=True, draws=lambda a: {"sigma": uniform(*a["sigma"])},
                          apply=lambda a, c, d: [assign(c.x, "fn.gaussian_blur", {"sigma": d["sigma"],
                                                                                  "window_size": a["kernel_size"]})]),
        albumentations=dataclasses.replace(
            spec.albumentations, from_transform=None,
            args=lambda a: {"blur_limit": (a["kernel_size"], a["kernel_size"]), "sigma_limit": tuple(a["sigma"])}))
    monkeypatch.setitem(REGISTRY, "GaussianBlurBefore", before)

    def chain(op):
        return (wb.Chain(seed=4).add("Brightness", p=0.5).add(op, p=0.7, sigma=[0.3, 2.0], kernel_size=7)
                .add("GaussianNoise", p=1.0, std=0.05))

    for backend in BACKENDS:
        new = chain("GaussianBlur").run(small_images, backend=backend, device="cpu")
        old = chain("GaussianBlurBefore").run(small_images, backend=backend, device="cpu")
        if backend == "kornia":  # now OpenCV's blur of a CPU's uint8 levels (levels.py), within 1.5 of a level
            assert np.abs(np.asarray(new.images) - np.asarray(old.images)).max() <= 1.5 / 255, backend
        else:
            assert np.array_equal(np.asarray(new.images), np.asarray(old.images)), backend
        assert [r[1].get("sigma") for r in new.params] == [r[1].get("sigma") for r in old.params], backend
    assert "window_size=7" in chain("GaussianBlur").export("dali")


@pytest.mark.parametrize("limit,sizes", [((3, 7), [3, 7]), ((2, 7), [3, 7]), ((4, 4), [5, 5]), ((5, 10), [5, 11]),
                                         ((9, 9), [9, 9])])
def test_albumentations_gaussian_blur_limit_imports_as_a_range_of_odd_sizes(limit, sizes):
    """A.GaussianBlur draws randint(lo, hi) and makes even sizes odd (+1)."""
    chain = wb.Chain.from_albumentations(A.Compose([A.GaussianBlur(blur_limit=limit, sigma_limit=(0.5, 1.0))]),
                                         strict=True)
    assert chain.steps[0].params == {"sigma": [0.5, 1.0], "kernel_size": sizes}


def test_albumentations_export_draws_the_odd_sizes_uniformly():
    from collections import Counter

    args = wb.get_op("GaussianBlur").albumentations.args
    assert args({"sigma": [1.0, 1.0], "kernel_size": [7, 7]})["blur_limit"] == (7, 7)
    assert args({"sigma": [1.0, 1.0], "kernel_size": [3, 7]})["blur_limit"] == (2, 7)
    t = A.GaussianBlur(blur_limit=(2, 7), sigma_limit=(1.0, 1.0), p=1.0)
    t.set_random_seed(0)
    counts = Counter(len(t.get_params_dependent_on_data({}, {})["kernel"]) for _ in range(3000))
    assert set(counts) == {3, 5, 7} and all(abs(n / 3000 - 1 / 3) < 0.04 for n in counts.values()), counts


def test_gaussian_noise_written_into_the_rows_is_what_the_rows_copied_out_and_back_give(grey):
    """Noise added in place to the rows of a batch the run owns (apply_rows_in_place) against the same run with the
    rows taken out, noised and written back (apply_to_rows' general path): bit for bit; the samples left out keep
    their values. A blur of one drawn size on every sample is handed on whole (wb_by_size), the same values."""
    chain = wb.Chain(seed=6).add("Brightness", p=1.0).add("GaussianNoise", p=0.5, std=[0.05, 0.2]) \
        .add("MotionBlur", p=1.0, kernel_size=[5, 5])
    module = load_module(emit(chain, "kornia"), "kornia")
    images = grey * 4
    noise_class = module.WbGaussianNoise
    written, calls = noise_class.apply_rows_in_place, []

    def counted(self, batch, rows, params):
        calls.append(len(rows))
        return written(self, batch, rows, params)
    noise_class.apply_rows_in_place = counted
    try:
        in_place, records = module.augment_images(images, seed=6)
        del noise_class.apply_rows_in_place
        copied, _ = module.augment_images(images, seed=6)
    finally:
        noise_class.apply_rows_in_place = written
    applied = records[1]["batch_prob"].astype(bool)
    assert 0 < applied.sum() < len(images) and calls == [applied.sum()]
    np.testing.assert_array_equal(in_place, copied)
