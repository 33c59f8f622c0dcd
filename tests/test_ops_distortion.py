"""Non-rigid distortions (ElasticTransform, GridDistortion, OpticalDistortion): the Kornia modules
build Albumentations' maps for the same draws, zero distortion does what Albumentations does,
ranges and p are honoured, and Albumentations' transforms (defaults too) import 1:1."""
import os

import numpy as np
import pytest
import torch

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402
import cv2  # noqa: E402
from albumentations.augmentations.geometric import functional as fgeometric  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.runtime.kornia_modules.distortion import (  # noqa: E402
    distortion_elastic_field, distortion_elastic_noise, distortion_grid_axis, distortion_grid_steps,
    distortion_optical_maps, distortion_remap)
from workbench.ops.distortion import _grid_record, _optical_record  # noqa: E402
from workbench.runtime.targets import elastic_field  # noqa: E402

OPS = ["ElasticTransform", "GridDistortion", "OpticalDistortion"]


@pytest.fixture(scope="module")
def photos(sample_images):
    """Three small crops of real photographs, of different sizes."""
    return [np.ascontiguousarray(sample_images[0][100:172, 120:216]),
            np.ascontiguousarray(sample_images[2][40:101, 60:143]),
            np.ascontiguousarray(sample_images[4][:80, :80])]


def _remap(image, map_x, map_y):
    """Albumentations' remap (uint8, bilinear, 0 outside) of a photo with the given maps."""
    return cv2.remap(image, np.asarray(map_x, np.float32), np.asarray(map_y, np.float32), cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def test_defaults_import_from_albumentations():
    chain = wb.Chain.from_albumentations([A.ElasticTransform(), A.GridDistortion(), A.OpticalDistortion()])
    assert [s.op for s in chain.steps] == OPS and not chain.unmapped
    assert [s.p for s in chain.steps] == [0.5] * 3
    for step in chain.steps:  # Albumentations' defaults are the ops' defaults
        assert step.params == step.spec.defaults(), step.op
    elastic, grid, optical = (s.params for s in chain.steps)
    assert elastic["alpha"] == 1.0 and elastic["sigma"] == 50.0 and elastic["noise_distribution"] == "gaussian"
    assert grid["num_steps"] == 5 and grid["distort_limit"] == [-0.3, 0.3] and grid["normalized"] is True
    assert optical["distort_limit"] == [-0.05, 0.05] and optical["mode"] == "camera"


def test_settings_import_and_near_misses_name_the_parameter():
    chain = wb.Chain.from_albumentations([
        A.ElasticTransform(alpha=120, sigma=6, approximate=True, same_dxdy=True, noise_distribution="uniform",
                           interpolation=cv2.INTER_NEAREST, p=0.3),
        A.GridDistortion(num_steps=7, distort_limit=(-0.1, 0.2), normalized=False, p=1.0),
        A.OpticalDistortion(distort_limit=0.3, mode="fisheye", p=0.8)])
    elastic, grid, optical = (s.params for s in chain.steps)
    assert elastic == {"alpha": 120.0, "sigma": 6.0, "approximate": True, "same_dxdy": True,
                       "noise_distribution": "uniform", "interpolation": "nearest"}
    assert grid == {"num_steps": 7, "distort_limit": [-0.1, 0.2], "normalized": False, "interpolation": "bilinear"}
    assert optical == {"distort_limit": [-0.3, 0.3], "mode": "fisheye", "interpolation": "bilinear"}
    misses = [(A.ElasticTransform(border_mode=cv2.BORDER_REFLECT_101), "border_mode"),
              (A.ElasticTransform(alpha=5000), "alpha"),
              (A.ElasticTransform(sigma=500), "sigma"),
              (A.GridDistortion(interpolation=cv2.INTER_CUBIC), "interpolation"),
              (A.GridDistortion(num_steps=100), "num_steps"),
              (A.OpticalDistortion(distort_limit=1.5), "distort_limit"),
              (A.OpticalDistortion(fill=(10, 10, 10)), "fill")]
    with pytest.warns(UserWarning):
        missed = wb.Chain.from_albumentations([t for t, _ in misses])
    assert missed.steps == [] and len(missed.unmapped) == len(misses)
    for entry, (_, name) in zip(missed.unmapped, misses):
        assert name in entry.reason, (name, entry.reason)


# ----- ElasticTransform -----------------------------------------------------------------------
class _FixedNoise:
    """Stands in for Albumentations' random generator: hands out the given noise."""

    def __init__(self, noise):
        self.noise = noise

    def standard_normal(self, shape, dtype):
        assert tuple(shape) == self.noise.shape
        return self.noise.astype(dtype).copy()

    def uniform(self, lo, hi, size):
        assert tuple(size) == self.noise.shape
        return self.noise.astype(np.float64).copy()


@pytest.mark.parametrize("sigma,approximate,same,distribution", [
    (4.0, False, False, "gaussian"),   # a short kernel (convolution)
    (50.0, False, False, "gaussian"),  # the default: 401 taps, through the FFT, longer than the image
    (50.0, True, False, "gaussian"),   # 17 taps
    (3.0, False, True, "uniform"),
])
def test_elastic_field_is_albumentations_for_the_same_noise(sigma, approximate, same, distribution):
    height, width, alpha = 45, 70, 30.0
    fields = 1 if same else 2
    noise = distortion_elastic_noise(11, fields, height, width, distribution)
    if distribution == "gaussian":  # Albumentations divides by the largest magnitude itself
        assert float(noise.abs().max()) == pytest.approx(1.0)
        raw = (noise * 3.7).numpy()
    else:
        assert -1.0 <= float(noise.min()) and float(noise.max()) <= 1.0
        raw = noise.numpy()
    dx, dy = fgeometric.generate_displacement_fields((height, width), alpha, sigma, same_dxdy=same,
                                                     kernel_size=(17, 17) if approximate else (0, 0),
                                                     random_generator=_FixedNoise(raw),
                                                     noise_distribution=distribution)
    kx, ky = distortion_elastic_field(noise[None], alpha, sigma, approximate)
    scale = max(np.abs(dx).max(), np.abs(dy).max())
    assert scale > 1e-3
    assert np.abs(kx[0].numpy() - dx).max() <= 1e-5 * scale and np.abs(ky[0].numpy() - dy).max() <= 1e-5 * scale
    if not same:  # dx and dy are blurred as one image, one above the other: they differ
        assert not np.allclose(dx, dy)


@pytest.mark.parametrize("settings", [
    {"alpha": 40.0, "sigma": 5.0, "approximate": False, "same_dxdy": False, "noise_distribution": "gaussian"},
    {"alpha": 90.0, "sigma": 50.0, "approximate": True, "same_dxdy": True, "noise_distribution": "uniform"}])
def test_both_backends_warp_through_the_field_rebuilt_from_the_reported_seed(settings, photos):
    """The targets rebuild the elastic field in NumPy from the seed (runtime/targets.py): it is the
    field each backend warped the pixels with."""
    chain = wb.Chain(seed=6).add("ElasticTransform", p=1.0, **settings)
    for backend in ("kornia", "albumentations"):
        res = chain.run(photos, backend=backend)
        seeds = {float(row[0]["seed"]) for row in res.params}
        assert len(seeds) == len(photos), backend  # a seed per sample
        for image, out, row in zip(photos, res.images, res.params):
            dx, dy = elastic_field(settings, row[0]["seed"], *image.shape[:2])
            if backend == "kornia":
                fields = 1 if settings["same_dxdy"] else 2
                noise = distortion_elastic_noise(row[0]["seed"], fields, *image.shape[:2],
                                                 settings["noise_distribution"])
                kx, ky = distortion_elastic_field(noise[None], settings["alpha"], settings["sigma"],
                                                  settings["approximate"])
                assert np.abs(kx[0].numpy() - dx).max() < 1e-4 and np.abs(ky[0].numpy() - dy).max() < 1e-4
            xs, ys = np.meshgrid(np.arange(image.shape[1]), np.arange(image.shape[0]))
            expected = cv2.remap(image.astype(np.float32), (xs + dx).astype(np.float32), (ys + dy).astype(np.float32),
                                 cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0) / 255.0
            unit = 1.0 if backend == "kornia" else 255.0
            assert np.abs(out / unit - expected).mean() < 0.5 / 255, backend
            assert np.abs(out / unit - image / 255.0).mean() > 1 / 255, backend  # it did move pixels


def test_elastic_replays_its_seed_and_is_the_identity_at_zero_alpha(photos):
    image = photos[0]
    moved = wb.Chain(seed=4).add("ElasticTransform", p=1.0, alpha=40.0, sigma=5.0).run([image], backend="kornia")
    seed = int(moved.params[0][0]["seed"])
    noise = distortion_elastic_noise(seed, 2, *image.shape[:2], "gaussian")
    dx, dy = distortion_elastic_field(noise[None], 40.0, 5.0, False)
    x = torch.from_numpy(image).permute(2, 0, 1)[None].float() / 255.0
    rows, cols = torch.meshgrid(torch.arange(image.shape[0]), torch.arange(image.shape[1]), indexing="ij")
    expected = distortion_remap(x, cols[None] + dx, rows[None] + dy, "bilinear")[0].permute(1, 2, 0).numpy()
    assert np.allclose(moved.images[0], expected, atol=1e-6)
    assert np.abs(moved.images[0] - image / 255.0).mean() > 2 / 255  # it did move pixels
    for backend in ("kornia", "albumentations"):
        still = wb.Chain(seed=4).add("ElasticTransform", p=1.0, alpha=0.0).run(photos, backend=backend)
        for out, photo in zip(still.images, photos):
            assert np.allclose(np.asarray(out, np.float64) / (255.0 if out.dtype == np.uint8 else 1.0),
                               photo / 255.0, atol=1e-5), backend


# ----- GridDistortion -------------------------------------------------------------------------
@pytest.mark.parametrize("height,width,num_steps,normalized", [
    (72, 96, 5, True), (61, 83, 5, True), (14, 10, 5, False),  # 14 // 5 = 2: pixels past the last cell stay 0
    (64, 64, 7, False), (33, 20, 3, True), (50, 60, 1, True)])
def test_grid_maps_are_albumentations_for_the_same_steps(height, width, num_steps, normalized):
    rng = np.random.default_rng(num_steps + width)
    raw_x, raw_y = 1 + rng.uniform(-0.4, 0.4, num_steps + 1), 1 + rng.uniform(-0.4, 0.4, num_steps + 1)
    steps_x, steps_y = torch.from_numpy(raw_x[None]), torch.from_numpy(raw_y[None])
    if normalized:
        expected = fgeometric.normalize_grid_distortion_steps((height, width), num_steps, list(raw_x), list(raw_y))
        raw_x, raw_y = expected["steps_x"], expected["steps_y"]
        steps_x = distortion_grid_steps(steps_x, width, num_steps)
        steps_y = distortion_grid_steps(steps_y, height, num_steps)
        assert np.allclose(steps_x[0].numpy(), raw_x) and np.allclose(steps_y[0].numpy(), raw_y)
    map_x, map_y = fgeometric.generate_grid((height, width), list(raw_x), list(raw_y), num_steps)
    assert np.abs(distortion_grid_axis(steps_x, width, num_steps)[0].numpy() - map_x[0]).max() < 1e-4
    assert np.abs(distortion_grid_axis(steps_y, height, num_steps)[0].numpy() - map_y[:, 0]).max() < 1e-4
    # Albumentations records only the maps: the steps are read back from them.
    recorded = _grid_record({"map_x": map_x, "map_y": map_y})
    known = ~np.isnan(recorded["steps_x"])
    assert known[:num_steps].all() and np.allclose(recorded["steps_x"][known], np.asarray(raw_x)[known], atol=1e-4)
    known = ~np.isnan(recorded["steps_y"])
    assert np.allclose(recorded["steps_y"][known], np.asarray(raw_y)[known], atol=1e-4)


def test_grid_without_distortion_is_albumentations_near_identity(photos):
    """distort_limit 0 leaves every cell its size, but each cell runs from its first to its last
    pixel with both ends included (np.linspace): pixels move by less than one, as in Albumentations."""
    chain = wb.Chain(seed=1).add("GridDistortion", p=1.0, distort_limit=[0.0, 0.0])
    kornia, alb = chain.run(photos, backend="kornia"), chain.run(photos, backend="albumentations")
    for image, k, a, row in zip(photos, kornia.images, alb.images, kornia.params):
        height, width = image.shape[:2]
        map_x, map_y = fgeometric.generate_grid((height, width), list(row[0]["steps_x"]), list(row[0]["steps_y"]), 5)
        assert np.abs(map_x - np.arange(width)[None]).max() <= 1.0 + 1e-6
        assert np.abs(map_y - np.arange(height)[:, None]).max() <= 1.0 + 1e-6
        assert np.abs(k * 255.0 - a).max() <= 0.5 + 1e-3  # Albumentations rounds to whole levels
        assert np.abs(k - image / 255.0).mean() > 0.5 / 255  # and it is not quite the identity
    for rows in (kornia.params, alb.params):
        for row in rows:  # all cells keep their size (the last, shorter one, its share)
            assert np.allclose(row[0]["steps_x"][:5], 1.0) and np.allclose(row[0]["steps_y"][:5], 1.0)


def test_grid_steps_respect_the_range(photos):
    chain = wb.Chain(seed=6).add("GridDistortion", p=1.0, num_steps=4, distort_limit=[-0.2, 0.1], normalized=False)
    for backend in ("kornia", "albumentations"):
        res = chain.run(photos * 3, backend=backend)
        steps = np.array([np.r_[row[0]["steps_x"][:4], row[0]["steps_y"][:4]] for row in res.params])
        assert steps.min() >= 0.8 - 1e-4 and steps.max() <= 1.1 + 1e-4, backend
        assert steps.max() - steps.min() > 0.2, backend  # drawn per cell and sample
    normalized = wb.Chain(seed=6).add("GridDistortion", p=1.0, num_steps=4).run(photos, backend="kornia")
    for image, row in zip(photos, normalized.params):  # the grid ends at the far edge
        width = image.shape[1]
        assert (width // 4) * np.sum(row[0]["steps_x"]) == pytest.approx(width)


# ----- OpticalDistortion ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["camera", "fisheye"])
@pytest.mark.parametrize("k", [0.0, 0.05, -0.3])
def test_optical_maps_are_albumentations_for_the_same_k(mode, k):
    make = fgeometric.get_camera_matrix_distortion_maps if mode == "camera" else fgeometric.get_fisheye_distortion_maps
    map_x, map_y = make((37, 52), k)
    kx, ky = distortion_optical_maps(torch.tensor([k], dtype=torch.float64), 37, 52, mode, "cpu", torch.float64)
    assert np.abs(kx[0].numpy() - map_x).max() < 1e-4 and np.abs(ky[0].numpy() - map_y).max() < 1e-4
    assert _optical_record({"map_x": map_x, "map_y": map_y})["k"] == pytest.approx(k, abs=1e-5)


def test_optical_at_zero_is_a_half_pixel_shift_for_the_camera_and_the_identity_for_the_fisheye(photos):
    image = photos[1]
    height, width = image.shape[:2]
    for backend in ("kornia", "albumentations"):
        camera = wb.Chain().add("OpticalDistortion", p=1.0, distort_limit=[0.0, 0.0]).run([image], backend=backend)
        fisheye = wb.Chain().add("OpticalDistortion", p=1.0, distort_limit=[0.0, 0.0], mode="fisheye").run(
            [image], backend=backend)
        unit = 1.0 if backend == "kornia" else 255.0
        xs, ys = np.meshgrid(np.arange(width), np.arange(height))
        shifted = _remap(image, xs + 0.5, ys + 0.5).astype(np.float64) / 255.0
        assert np.abs(camera.images[0] / unit - shifted).max() <= 1 / 255 + 1e-6, backend
        assert np.abs(fisheye.images[0] / unit - image / 255.0).max() <= 1e-5, backend
        assert camera.params[0][0]["k"] == pytest.approx(0.0, abs=1e-6)


def test_optical_k_respects_the_range_and_fisheye_follows_the_reference(photos):
    spec = wb.get_op("OpticalDistortion")
    chain = wb.Chain(seed=2).add("OpticalDistortion", p=1.0, distort_limit=[-0.3, -0.1], mode="fisheye")
    for backend in ("kornia", "albumentations"):
        res = chain.run(photos, backend=backend)
        ks = [float(row[0]["k"]) for row in res.params]
        assert all(-0.3 - 1e-6 <= k <= -0.1 + 1e-6 for k in ks) and len(set(ks)) == len(ks), backend
        for image, out, row in zip(photos, res.images, res.params):
            make = fgeometric.get_fisheye_distortion_maps
            expected = _remap(image, *make(image.shape[:2], float(row[0]["k"]))) / 255.0
            unit = 1.0 if backend == "kornia" else 255.0
            assert np.abs(out / unit - expected).mean() < 0.5 / 255, backend
    assert spec.parity.reference is not None


# ----- all three --------------------------------------------------------------------------------
@pytest.mark.parametrize("op", OPS)
def test_p_gates_each_sample(op, photos):
    images = [photos[2]] * 8
    params = {"alpha": 40.0, "sigma": 5.0} if op == "ElasticTransform" else {}
    for backend in ("kornia", "albumentations"):
        none = wb.Chain(seed=3).add(op, p=0.0, **params).run(images, backend=backend)
        unit = 1.0 if backend == "kornia" else 255.0
        assert all(np.allclose(o / unit, photos[2] / 255.0, atol=1e-6) for o in none.images), backend
        half = wb.Chain(seed=3).add(op, p=0.5, **params).run(images, backend=backend)
        applied = [bool(row[0]["applied"]) for row in half.params]
        assert 0 < sum(applied) < 8, backend
        for out, was in zip(half.images, applied):
            assert np.allclose(out / unit, photos[2] / 255.0, atol=1e-6) != was, backend


@pytest.mark.parametrize("params", [
    {"num_steps": 3, "distort_limit": [-0.5, 0.6], "normalized": False},  # sources past the edge: 0
    {"num_steps": 6, "distort_limit": [0.0, 0.0]},
    {"num_steps": 1, "distort_limit": [-1.0, 1.0]}])
def test_grid_on_dali_is_albumentations_grid_at_its_own_steps(params, photos):
    spec = wb.get_op("GridDistortion")
    for p in (1.0, 0.5):
        res = wb.Chain(seed=8).add("GridDistortion", p=p, **params).run(photos * 2, backend="dali")
        for image, out, row in zip(photos * 2, res.images, res.params):
            steps = np.asarray(row[0]["steps_x"])
            assert len(steps) == params["num_steps"] + 1
            if not params.get("normalized", True):
                lo, hi = params["distort_limit"]
                assert (steps >= 1 + lo - 1e-6).all() and (steps <= 1 + hi + 1e-6).all()
            expected = spec.parity.reference(image, row[0]) if row[0]["applied"] else image / 255.0
            assert out.dtype == np.uint8 and np.abs(out / 255.0 - expected).max() <= 1.01 / 255, (p, params)


def test_dali_is_refused_with_the_reason():
    for op in ("ElasticTransform", "OpticalDistortion"):
        spec = wb.get_op(op)
        assert not spec.supports("dali") and "GPU only" in spec.unsupported["dali"]
        with pytest.raises(wb.UnsupportedOpError, match="remap"):
            wb.Chain().add(op).export("dali")
