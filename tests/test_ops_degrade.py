"""Degradation ops (box blur, downscaling, ISO noise, ...) do what their specs say on every backend, with the
per-image draws Albumentations makes, and Albumentations' own transforms import onto them."""
import ast
import os

import numpy as np
import pytest

import workbench as wb
from workbench.literals import Name

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402
import cv2  # noqa: E402

BACKENDS = ("kornia", "dali", "albumentations")


def run(images, op, backend, seed=0, **params):
    return wb.Chain(seed=seed).add(op, p=1.0, **params).run(images, backend=backend, device="cpu")


def levels(images) -> np.ndarray:
    x = np.asarray(images)
    return (x.astype(np.float64) * (255.0 if x.dtype != np.uint8 else 1.0)).round(3)


def box_reference(image, k):
    """Mean over k x k windows, borders mirrored without the edge pixel."""
    r = k // 2
    padded = np.pad(image.astype(np.float64), ((r, r), (r, r), (0, 0)), mode="reflect")
    h, w = image.shape[:2]
    return np.mean([padded[dy:dy + h, dx:dx + w] for dy in range(k) for dx in range(k)], axis=0)


def nearest_downscale(image, scale):
    """cv2.resize with fx = fy = scale then back, both INTER_NEAREST, by its formulas."""
    h, w = image.shape[:2]
    sh, sw = round(h * scale), round(w * scale)
    rows = np.minimum(np.floor(np.arange(sh) / scale).astype(int), h - 1)
    cols = np.minimum(np.floor(np.arange(sw) / scale).astype(int), w - 1)
    small = image[rows][:, cols]
    return small[np.floor(np.arange(h) * sh / h).astype(int)][:, np.floor(np.arange(w) * sw / w).astype(int)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_blur_is_the_window_mean_at_the_size_each_image_drew(small_images, backend):
    res = run(small_images * 2, "Blur", backend, seed=1, kernel_size=[3, 7])
    sizes = [row[0].get("kernel_size") for row in res.params]
    known = [k for k in sizes if k is not None]
    assert set(known) <= {3.0, 5.0, 7.0} and len(set(known)) > 1, sizes
    for image, out, k in zip(small_images * 2, levels(res.images), sizes):
        if k is not None:
            # Kornia in float; DALI and OpenCV round to whole levels.
            assert np.abs(out - box_reference(image, int(k))).max() <= 0.5 + 1e-3, (backend, k)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scale", [0.25, 0.3, 0.37])
def test_downscale_nearest_is_opencvs_resize_there_and_back(small_images, backend, scale):
    res = run(small_images[:3], "Downscale", backend, scale=[scale, scale])
    for image, out, rows in zip(small_images[:3], levels(res.images), res.params):
        assert np.array_equal(out, nearest_downscale(image, scale).astype(np.float64))
        assert rows[0]["scale"] == pytest.approx(scale, rel=1e-6)


def test_downscale_bilinear_agrees_with_opencv(small_images):
    expected = np.stack([cv2.resize(cv2.resize(i, None, fx=0.37, fy=0.37, interpolation=cv2.INTER_LINEAR),
                                    (i.shape[1], i.shape[0]), interpolation=cv2.INTER_LINEAR) for i in small_images])
    for backend in BACKENDS:
        out = levels(run(small_images, "Downscale", backend, scale=[0.37, 0.37], down="bilinear",
                         up="bilinear").images)
        assert np.abs(out - expected).mean() < 0.5 and np.abs(out - expected).max() <= 2.0, backend


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_downscale_scale_is_drawn_per_image(small_images, backend):
    res = run(small_images * 2, "Downscale", backend, scale=[0.2, 0.6])
    scales = [row[0]["scale"] for row in res.params]
    assert all(0.2 <= s <= 0.6 for s in scales) and len(set(scales)) == len(scales)
    # Each image is downscaled by its own reported factor (DALI's float32 factor may move a pick
    # at an exact pixel boundary).
    for image, out, scale in zip(small_images * 2, levels(res.images), scales):
        assert np.mean(out != nearest_downscale(image, scale)) < 0.02, scale


def build(spec, params):
    args = {k: ast.literal_eval(str.__str__(v)) if isinstance(v, Name) else v
            for k, v in spec.albumentations.args(params).items()}
    return getattr(A, spec.albumentations.transform)(**args, p=0.4)


@pytest.mark.parametrize("op,params", [
    ("Blur", {"kernel_size": [5, 9]}),
    ("Downscale", {"scale": [0.3, 0.6], "down": "bilinear", "up": "nearest"}),
])
def test_albumentations_import_gives_back_the_params(op, params):
    spec = wb.get_op(op)
    chain = wb.Chain(seed=2).add(op, p=0.4, **params)
    back = wb.Chain.from_albumentations(A.Compose([build(spec, chain.steps[0].params)]), strict=True)
    assert [(s.op, s.p, s.params) for s in back.steps] == [(op, 0.4, chain.steps[0].params)]


@pytest.mark.parametrize("transform,op,params", [
    (A.Blur(), "Blur", {"kernel_size": [3, 7]}),
    (A.Downscale(), "Downscale", {"scale": [0.25, 0.25], "down": "nearest", "up": "nearest"}),
])
def test_albumentations_default_arguments_import(transform, op, params):
    chain = wb.Chain.from_albumentations(A.Compose([transform]), strict=True)
    assert [(s.op, s.p, s.params) for s in chain.steps] == [(op, 0.5, params)]


def test_downscale_with_area_resampling_is_listed_with_the_reason():
    transform = A.Downscale(interpolation_pair={"downscale": cv2.INTER_AREA, "upscale": cv2.INTER_LINEAR})
    with pytest.warns(UserWarning, match="left out"):
        chain = wb.Chain.from_albumentations(A.Compose([transform]))
    assert chain.steps == [] and "interpolation_pair['downscale']=3" in chain.unmapped[0].reason


@pytest.mark.parametrize("op,params,words", [
    ("Blur", {"kernel_size": [4, 7]}, "'kernel_size' must be odd integers"),
    ("Blur", {"kernel_size": [3, 33]}, "'kernel_size' must lie within [3, 31]"),
    ("Downscale", {"scale": [0.0, 0.5]}, "'scale' must lie within [0.01, 1.0]"),
    ("Downscale", {"down": "area"}, "'down' must be one of ['nearest', 'bilinear']"),
])
def test_bad_parameters_name_the_op_and_the_parameter(op, params, words):
    with pytest.raises(wb.ChainError) as info:
        wb.Chain().add(op, **params)
    assert f"({op}): parameter" in str(info.value) and words in str(info.value)


# ----- ISONoise ---------------------------------------------------------------------------

def hls(image):
    return cv2.cvtColor(np.asarray(image).astype(np.float32) / 255.0, cv2.COLOR_RGB2HLS)


@pytest.mark.parametrize("backend", BACKENDS)
def test_iso_noise_brightens_specks_by_whole_steps_at_poisson_rate(small_images, backend):
    """Lightness L becomes L + n x intensity x (1 - L), n Poisson with mean intensity x std(L);
    with color_shift 0 the hue stays where it was."""
    res = run(small_images, "ISONoise", backend, seed=4, color_shift=[0.0, 0.0], intensity=[0.3, 0.3])
    hue_moves = []
    for image, out, rows in zip(small_images, res.images, res.params):
        assert rows[0]["intensity"] == pytest.approx(0.3) and rows[0]["color_shift"] == 0.0
        before, after = hls(image), hls(np.asarray(out) * (255.0 if np.asarray(out).dtype != np.uint8 else 1.0))
        light = before[..., 1]
        rate = 0.3 * light.std()
        room = 0.3 * (1.0 - light)
        steps = (after[..., 1] - light) / np.maximum(room, 1e-6)
        usable = room > 0.06  # whole steps are readable where a step is several grey levels
        changed = usable & (np.abs(after[..., 1] - light) > 1.5 / 255)
        # Changed pixels moved by whole steps (up to the rounding to 8 bits), never down.
        n = np.where(changed, np.round(steps), 0.0)
        assert (n[changed] >= 1).all() and np.abs(steps - n)[changed].mean() < 0.08, backend
        # P(n >= 1) = 1 - exp(-rate), and the mean count is the rate.
        assert abs(changed.sum() / usable.sum() - (1 - np.exp(-rate))) < 0.25 * (1 - np.exp(-rate)) + 0.005
        assert abs(n[usable].mean() - rate) < 0.25 * rate + 0.005
        # The specks keep their hue (where they stay coloured enough for 8 bits to hold it).
        coloured = changed & (before[..., 2] > 0.3) & (light > 0.1) & (after[..., 1] < 0.85)
        hue_moves.append(np.abs((after[..., 0] - before[..., 0] + 180) % 360 - 180)[coloured])
    hue_moves = np.concatenate(hue_moves)
    assert hue_moves.size > 50 and np.median(hue_moves) < 1.0, (hue_moves.size, np.median(hue_moves))


@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_iso_noise_draws_its_ranges_per_image_and_its_hue_noise_in_degrees(backend):
    """Albumentations' HLS hue is in degrees: color_shift x intensity is the hue noise's standard
    deviation in degrees (a saturated mid-tone image shows it)."""
    image = np.zeros((64, 64, 3), np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 200, 60, 60 + np.arange(64, dtype=np.uint8)[None] // 8
    res = run([image] * 6, "ISONoise", backend, seed=2, color_shift=[0.1, 1.0], intensity=[1.0, 1.0])
    shifts = [row[0]["color_shift"] for row in res.params]
    assert all(0.1 <= s <= 1.0 for s in shifts) and len(set(shifts)) == 6
    # No Poisson specks here (the lightness is flat): only the hue moves.
    for out, shift in zip(res.images, shifts):
        out = np.asarray(out) * (255.0 if np.asarray(out).dtype != np.uint8 else 1.0)
        moved = (hls(out)[..., 0] - hls(image)[..., 0] + 180) % 360 - 180
        assert moved.std() == pytest.approx(shift, rel=0.35, abs=0.15), (backend, shift)


def test_iso_noise_out_of_range_intensity_is_listed_with_the_reason():
    with pytest.warns(UserWarning, match="left out"):
        chain = wb.Chain.from_albumentations(A.Compose([A.ISONoise(intensity=(0.1, 9.0))]))
    assert chain.steps == [] and "intensity=(0.1, 9.0)" in chain.unmapped[0].reason


# ----- Sharpen, Emboss ----------------------------------------------------------------------

def sharpen_kernel(alpha, lightness):
    effect = np.array([[-1, -1, -1], [-1, 8 + lightness, -1], [-1, -1, -1]], np.float64)
    return (1 - alpha) * np.pad([[1.0]], 1) + alpha * effect


def emboss_kernel(alpha, s):
    effect = np.array([[-1 - s, -s, 0], [-s, 1, s], [0, s, 1 + s]], np.float64)
    return (1 - alpha) * np.pad([[1.0]], 1) + alpha * effect


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op,second,kernel", [("Sharpen", "lightness", sharpen_kernel),
                                              ("Emboss", "strength", emboss_kernel)])
def test_kernel_filters_use_each_images_own_draws(small_images, backend, op, second, kernel):
    """Each image is OpenCV's filter2D (mirrored borders, clipped) with the kernel of its own
    reported draws, drawn per image from the ranges."""
    res = run(small_images, op, backend, seed=6, alpha=[0.2, 0.8], **{second: [0.4, 1.2]})
    alphas = [row[0]["alpha"] for row in res.params]
    assert len(set(np.round(alphas, 6))) == len(alphas) and all(0.2 <= a <= 0.8 for a in alphas)
    for image, out, rows in zip(small_images, levels(res.images), res.params):
        assert 0.4 - 1e-6 <= rows[0][second] <= 1.2 + 1e-6
        expected = np.clip(cv2.filter2D(image.astype(np.float64), -1, kernel(rows[0]["alpha"], rows[0][second]),
                                        borderType=cv2.BORDER_REFLECT_101), 0, 255)
        # Kornia in float; DALI and OpenCV round to whole levels.
        assert np.abs(out - expected).max() <= 0.5 + 1e-3, (backend, rows[0])
        assert np.abs(out - image).mean() > 2.0


@pytest.mark.parametrize("transform,op,params", [
    (A.Sharpen(), "Sharpen", {"alpha": [0.2, 0.5], "lightness": [0.5, 1.0]}),
    (A.Emboss(), "Emboss", {"alpha": [0.2, 0.5], "strength": [0.2, 0.7]}),
    (A.ISONoise(), "ISONoise", {"color_shift": [0.01, 0.05], "intensity": [0.1, 0.5]}),
])
def test_albumentations_default_arguments_of_the_kernel_and_noise_filters_import(transform, op, params):
    chain = wb.Chain.from_albumentations(A.Compose([transform]), strict=True)
    assert [(s.op, s.p, s.params) for s in chain.steps] == [(op, 0.5, params)]


@pytest.mark.parametrize("op,params", [
    ("Sharpen", {"alpha": [0.1, 0.9], "lightness": [0.7, 2.5]}),
    ("Emboss", {"alpha": [0.3, 0.4], "strength": [0.0, 3.0]}),
    ("ISONoise", {"color_shift": [0.0, 0.3], "intensity": [0.2, 1.5]}),
])
def test_albumentations_round_trip_of_the_kernel_and_noise_filters(op, params):
    spec = wb.get_op(op)
    chain = wb.Chain(seed=2).add(op, p=0.4, **params)
    back = wb.Chain.from_albumentations(A.Compose([build(spec, chain.steps[0].params)]), strict=True)
    assert [(s.op, s.p, s.params) for s in back.steps] == [(op, 0.4, chain.steps[0].params)]


@pytest.mark.parametrize("transform,words", [
    (A.Sharpen(method="gaussian"), "method='gaussian'"),
    (A.Sharpen(lightness=(0.5, 20.0)), "lightness=(0.5, 20.0)"),
    (A.Emboss(strength=(0.2, 12.0)), "strength=(0.2, 12.0)"),
])
def test_kernel_filter_settings_without_an_equivalent_are_listed_with_the_reason(transform, words):
    with pytest.warns(UserWarning, match="left out"):
        chain = wb.Chain.from_albumentations(A.Compose([transform]))
    assert chain.steps == [] and words in chain.unmapped[0].reason


def test_albumentations_reports_the_kernel_filters_draws():
    """A.Sharpen reports alpha and its kernel, A.Emboss only its kernel: the draws are read back."""
    image = [np.full((32, 32, 3), 100, np.uint8)]
    sharp = run(image, "Sharpen", "albumentations", seed=1, alpha=[0.3, 0.3], lightness=[0.75, 0.75])
    assert sharp.params[0][0]["alpha"] == pytest.approx(0.3) and sharp.params[0][0]["lightness"] == pytest.approx(0.75)
    emboss = run(image, "Emboss", "albumentations", seed=1, alpha=[0.4, 0.4], strength=[0.6, 0.6])
    assert emboss.params[0][0]["alpha"] == pytest.approx(0.4, abs=1e-6)
    assert emboss.params[0][0]["strength"] == pytest.approx(0.6, abs=1e-5)


# ----- UnsharpMask, Defocus ------------------------------------------------------------------

from albumentations.augmentations.blur.functional import defocus as a_defocus  # noqa: E402
from albumentations.augmentations.pixel.functional import unsharp_mask as a_unsharp_mask  # noqa: E402


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("sigma", [[0.0, 0.0], [0.5, 2.0]])
def test_unsharp_mask_is_albumentations_at_each_images_own_draws(small_images, backend, sigma):
    """Each image is Albumentations' own unsharp_mask at the kernel size, sigma (0: OpenCV's fixed
    kernels and sigma rule) and alpha it reported, drawn per image."""
    res = run(small_images * 2, "UnsharpMask", backend, seed=3, kernel_size=[3, 11], sigma=sigma, alpha=[0.3, 1.0],
              threshold=5)
    sizes = [row[0]["kernel_size"] for row in res.params]
    assert set(sizes) <= {3.0, 5.0, 7.0, 9.0, 11.0} and len(set(sizes)) > 2, sizes
    for image, out, rows in zip(small_images * 2, levels(res.images), res.params):
        d = rows[0]
        assert sigma[0] <= d["sigma"] <= sigma[1] + 1e-6 and 0.3 - 1e-6 <= d["alpha"] <= 1.0 + 1e-6
        expected = a_unsharp_mask(image, int(d["kernel_size"]), sigma=d["sigma"], alpha=d["alpha"], threshold=5)
        diff = np.abs(out - expected)
        # Kornia in float; DALI rounds as Albumentations does. A residual right at the threshold may
        # fall on the other side in another float order (integer levels and OpenCV's dyadic kernels
        # land on it exactly), which moves the soft mask around that pixel by a few levels.
        assert diff.mean() < 0.3 and diff.max() <= 4.0, (backend, d, diff.mean(), diff.max())
        assert (diff > 0.52).mean() < (0.01 if backend == "kornia" else 1e-3), (backend, d)
        assert np.abs(out - image).max() > 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_defocus_is_albumentations_at_each_images_own_draws(small_images, backend):
    """Radii on both sides of 8, where the kernel's grid grows and its edge blur takes 5 taps."""
    res = run(small_images * 2, "Defocus", backend, seed=1, radius=[3, 12], alias_blur=[0.0, 0.8])
    radii = [row[0]["radius"] for row in res.params]
    assert all(r == int(r) and 3 <= r <= 12 for r in radii) and min(radii) <= 8 < max(radii), radii
    for image, out, rows in zip(small_images * 2, levels(res.images), res.params):
        d = rows[0]
        diff = np.abs(out - a_defocus(image, int(d["radius"]), d["alias_blur"]))
        # Kornia in float; DALI rounds to whole levels, one level apart where the float sum lands on a
        # half level (about 1 pixel in 100,000).
        assert diff.max() <= (0.5 + 0.02 if backend == "kornia" else 1.0), (backend, d)
        assert (diff > 0.5 + 0.02).mean() < 1e-4, (backend, d)


@pytest.mark.parametrize("op,params", [
    ("UnsharpMask", {"kernel_size": [5, 9], "sigma": [0.0, 1.5], "alpha": [0.5, 0.5], "threshold": 0}),
    ("Defocus", {"radius": [4, 10], "alias_blur": [0.2, 0.2]}),
])
def test_unsharp_mask_and_defocus_on_floats_after_a_normalize(small_images, op, params):
    chain = wb.Chain(seed=2).add("Normalize", mean=[0.0] * 3, std=[1.0] * 3).add(op, p=1.0, **params)
    k = chain.run(small_images[:3], backend="kornia")
    d = chain.run(small_images[:3], backend="dali")
    assert np.asarray(d.images).dtype == np.float32
    for a, b, ra, rb in zip(k.images, d.images, k.params, d.params):
        if all(ra[1][key] == pytest.approx(rb[1][key]) for key in ra[1] if key in rb[1] and key != "batch_prob"):
            assert np.abs(np.asarray(a) - np.asarray(b)).max() < 1e-4


@pytest.mark.parametrize("transform,op,params", [
    (A.UnsharpMask(), "UnsharpMask", {"kernel_size": [3, 7], "sigma": [0.0, 0.0], "alpha": [0.2, 0.5],
                                      "threshold": 10}),
    (A.Defocus(), "Defocus", {"radius": [3, 10], "alias_blur": [0.1, 0.5]}),
])
def test_albumentations_default_arguments_of_unsharp_mask_and_defocus_import(transform, op, params):
    chain = wb.Chain.from_albumentations(A.Compose([transform]), strict=True)
    assert [(s.op, s.p, s.params) for s in chain.steps] == [(op, 0.5, params)]


@pytest.mark.parametrize("op,params", [
    ("UnsharpMask", {"kernel_size": [5, 9], "sigma": [0.5, 2.5], "alpha": [0.1, 0.9], "threshold": 3}),
    ("Defocus", {"radius": [2, 14], "alias_blur": [0.0, 1.5]}),
])
def test_albumentations_round_trip_of_unsharp_mask_and_defocus(op, params):
    spec = wb.get_op(op)
    chain = wb.Chain(seed=2).add(op, p=0.4, **params)
    back = wb.Chain.from_albumentations(A.Compose([build(spec, chain.steps[0].params)]), strict=True)
    assert [(s.op, s.p, s.params) for s in back.steps] == [(op, 0.4, chain.steps[0].params)]


@pytest.mark.parametrize("transform,words", [
    (A.UnsharpMask(blur_limit=(3, 41)), "blur_limit=(3, 41): UnsharpMask takes kernel sizes up to 31"),
    (A.UnsharpMask(sigma_limit=(0.0, 30.0)), "sigma_limit=(0.0, 30.0)"),
    (A.Defocus(radius=(3, 40)), "radius=(3, 40): Defocus takes radii up to 31"),
    (A.Defocus(alias_blur=(0.1, 9.0)), "alias_blur=(0.1, 9.0)"),
])
def test_unsharp_mask_and_defocus_settings_without_an_equivalent_are_listed_with_the_reason(transform, words):
    with pytest.warns(UserWarning, match="left out"):
        chain = wb.Chain.from_albumentations(A.Compose([transform]))
    assert chain.steps == [] and words in chain.unmapped[0].reason


@pytest.mark.parametrize("op,params,words", [
    ("UnsharpMask", {"kernel_size": [4, 7]}, "'kernel_size' must be odd integers"),
    ("UnsharpMask", {"threshold": 300}, "'threshold' must be in [0, 255]"),
    ("UnsharpMask", {"sigma": [-1.0, 1.0]}, "'sigma' must lie within [0.0, 20.0]"),
    ("Defocus", {"radius": [0, 3]}, "'radius' must lie within [1, 31]"),
    ("Defocus", {"radius": [2.5, 3]}, "'radius' must be an integer"),
])
def test_bad_unsharp_mask_and_defocus_parameters_name_the_op_and_the_parameter(op, params, words):
    with pytest.raises(wb.ChainError) as info:
        wb.Chain().add(op, **params)
    assert f"({op}): parameter" in str(info.value) and words in str(info.value)
