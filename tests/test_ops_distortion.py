"""Non-rigid distortions (ElasticTransform, GridDistortion, OpticalDistortion): the Kornia modules
build Albumentations' maps for the same draws, zero distortion does what Albumentations does,
ranges and p are honoured, and Albumentations' transforms (defaults too) import 1:1. On DALI,
OpticalDistortion runs on the GPU only (its maps built on the CPU, checked here against
Albumentations'; its GPU graph defined; the CPU refused everywhere, saying why; on a GPU, the
cuda-marked tests compare it with Kornia), and ElasticTransform not at all."""
import os
import subprocess
import sys

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
from workbench.runtime.targets import elastic_field, gaussian_kernel  # noqa: E402
from workbench.backends.dali_cache import DaliPrefixCache  # noqa: E402
from workbench.codegen import emit, load_module  # noqa: E402
from workbench.runtime.dali_ops.distortion import (  # noqa: E402
    elastic_maps_dali, optical_distortion_maps, remap_frame, remap_padded)
from workbench.support_matrix import support_matrix_markdown  # noqa: E402

from conftest import ENV, assert_same_images, run_script, saved_images  # noqa: E402

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


# --- OpticalDistortion on DALI: GPU only ------------------------------------------------------

def _dali_cpu_outputs(function, images, *outputs):
    """Run `function(images node, height, width)` (DALI CPU operators only) on `images` and return its
    outputs as lists of per-sample arrays."""
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali import pipeline_def

    @pipeline_def
    def pipe():
        nodes = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
        hw = fn.cast(nodes.shape(), dtype=types.FLOAT)
        return function(nodes, hw[0], hw[1])

    built = pipe(batch_size=len(images), num_threads=1, device_id=None, seed=1)
    built.build()
    built.feed_input("images", images)
    return [[np.array(out[i]) for i in range(len(images))] for out in built.run()]


@pytest.mark.parametrize("mode", ["camera", "fisheye"])
def test_optical_maps_on_dali_are_albumentations_maps_for_the_same_k(mode):
    """The maps DALI builds on the CPU (over the image and the padding around it) are Albumentations'
    at the k each sample drew, in float32."""
    import nvidia.dali.fn as fn

    make = fgeometric.get_camera_matrix_distortion_maps if mode == "camera" else fgeometric.get_fisheye_distortion_maps
    sizes = [(32, 48), (17, 9)]

    def maps(images, height, width):
        k = fn.random.uniform(range=(-0.3, 0.3), seed=4)
        frame = remap_frame(height, width)
        return (*optical_distortion_maps(k, height, width, fisheye=mode == "fisheye", frame=frame), k)

    map_x, map_y, ks = _dali_cpu_outputs(maps, [np.zeros((*size, 3), np.uint8) for size in sizes])
    for (height, width), mx, my, k in zip(sizes, map_x, map_y, ks):
        ax, ay = make((height, width), float(k))
        assert mx.shape == (height + 4, width + 4) and abs(float(k)) > 1e-3
        assert np.abs(mx[2:-2, 2:-2] - ax).max() < 1e-4 and np.abs(my[2:-2, 2:-2] - ay).max() < 1e-4, (mode, k)


def test_padded_remap_is_cv2_remap_with_a_zero_border(photos):
    """remap_distortion's padding and clamping make a resampler that reads nothing outside its padded
    input give cv2.remap's BORDER_CONSTANT result: with OpenCV standing in for DALI's remap (NPP) and a
    border mode that would show any read past the padding (replicate), the image cut out of the padded
    result is cv2.remap of the image with zeros outside, for maps reaching well past every edge."""
    import nvidia.dali.fn as fn

    def padded(images, height, width):
        k = fn.random.uniform(values=[0.6], seed=1)  # pulls sources from far outside at the corners
        frame = remap_frame(height, width)
        map_x, map_y = optical_distortion_maps(k, height, width, fisheye=False, frame=frame)
        return (*remap_padded(images, map_x, map_y, frame), map_x, map_y)

    images = [photos[1], photos[2]]
    for image, pad, mx, my, inside, raw_x, raw_y in zip(images, *_dali_cpu_outputs(padded, images)):
        height, width = image.shape[:2]
        assert float(inside) == 2.0 and pad.shape == (height + 4, width + 4, 3)
        assert (pad[:2] == 0).all() and (pad[:, -2:] == 0).all() and np.array_equal(pad[2:-2, 2:-2], image)
        got = cv2.remap(pad, mx, my, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)[2:-2, 2:-2]
        want = cv2.remap(image.astype(np.float32), raw_x[2:-2, 2:-2], raw_y[2:-2, 2:-2], cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        outside = (raw_x[2:-2, 2:-2] < -1) | (raw_x[2:-2, 2:-2] > width) | (raw_y[2:-2, 2:-2] < -1)
        assert outside.mean() > 0.05  # the case tests the border
        assert np.abs(got - want).max() < 0.05


@pytest.mark.parametrize("op,params", [("OpticalDistortion", {"mode": "fisheye"}),
                                       ("ElasticTransform", {"sigma": 5.0, "alpha": 30.0})])
def test_remap_ops_on_dali_are_gpu_only_and_their_gpu_graphs_remap_on_the_gpu(op, params):
    spec = wb.get_op(op)
    assert spec.supports("dali") and spec.supports("dali", "cuda") and not spec.supports("dali", "cpu")
    assert "remap runs on the GPU only in DALI" in spec.gpu_only["dali"]
    assert f"| {op} | geometric | yes | GPU only | yes |" in support_matrix_markdown()
    for p in (1.0, 0.5):
        module = load_module(emit(wb.Chain(seed=2).add("Rotate").add(op, p=p, **params), "dali"), "dali")
        pipe = module.preview_pipeline(aug_seed=1, gpu=True, batch_size=2, num_threads=1, device_id=None)
        pipe._build_graph()  # defined, never run: no GPU needed
        remaps = [op for op in pipe._ops if getattr(op._op, "schema_name", "") == "experimental__Remap"]
        assert len(remaps) == 1 and remaps[0]._op.device == "gpu"


def _refused(message: str, op: str = "OpticalDistortion") -> None:
    for part in (op, "GPU only", "remap runs on the GPU only in DALI", 'device="cuda"'):
        assert part in message, (part, message)


def test_elastic_on_the_dali_cpu_is_refused_naming_the_op_the_reason_and_the_fix(photos):
    """The paths are OpticalDistortion's (tested below in full); ElasticTransform's own reason and fix."""
    chain = wb.Chain(seed=1).add("ElasticTransform")
    with pytest.raises(wb.UnsupportedOpError) as run:
        chain.run(photos[:2], backend="dali", device="cpu")
    _refused(str(run.value), "ElasticTransform")
    module = load_module(emit(chain, "dali"), "dali")
    with pytest.raises(ValueError) as augment:
        module.augment_images(photos[:2], device="cpu")
    _refused(str(augment.value), "ElasticTransform")


ELASTIC_SETTINGS = [
    {"alpha": 60.0, "sigma": 6.0, "approximate": False, "same_dxdy": False, "noise_distribution": "gaussian"},
    {"alpha": 40.0, "sigma": 3.0, "approximate": True, "same_dxdy": False, "noise_distribution": "uniform"},
    {"alpha": 25.0, "sigma": 2.0, "approximate": False, "same_dxdy": True, "noise_distribution": "gaussian"},
]


@pytest.mark.parametrize("settings", ELASTIC_SETTINGS, ids=lambda s: "-".join(str(v) for v in s.values()))
def test_elastic_maps_on_dali_are_the_field_every_backend_builds(settings):
    """DALI builds ElasticTransform's field in its graph (the noise hash in uint32 arithmetic, the edge
    frame, fn.gaussian_blur): run on the CPU, its maps are each pixel's position plus runtime/targets.py's
    elastic_field for the seed each sample drew (what Kornia, Albumentations and the targets build),
    within 1e-4 pixels, images smaller than the blur's taps included."""
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types

    taps = 17 if settings["approximate"] else len(gaussian_kernel(settings["sigma"], 0))

    def maps(images, height, width):
        seed = fn.random.uniform(range=(0, 16777215), dtype=types.INT32, seed=4)
        frame = remap_frame(height, width)
        return (*elastic_maps_dali(images, seed, height, width, frame, settings["alpha"], settings["sigma"], taps,
                                   1 if settings["same_dxdy"] else 2, settings["noise_distribution"]), seed)

    sizes = [(32, 48), (9, 17), (40, 40)]
    map_x, map_y, seeds = _dali_cpu_outputs(maps, [np.zeros((*size, 3), np.uint8) for size in sizes])
    assert len({int(s) for s in seeds}) == len(sizes)
    for (height, width), mx, my, seed in zip(sizes, map_x, map_y, seeds):
        dx, dy = elastic_field(settings, int(seed), height, width)
        xs, ys = np.meshgrid(np.arange(width), np.arange(height))
        assert mx.shape == (height + 4, width + 4) and np.abs(dx).max() > 0.5
        assert np.abs(mx[2:-2, 2:-2] - (xs + dx)).max() < 1e-4 and np.abs(my[2:-2, 2:-2] - (ys + dy)).max() < 1e-4


def test_optical_on_the_dali_cpu_is_refused_naming_the_op_the_reason_and_the_fix(photos, tmp_path):
    images = photos[2:]
    grouped = wb.Chain.from_dict({"seed": 1, "steps": [{"op": "Rotate"}, {"op": "OneOf", "steps": [
        {"op": "OpticalDistortion"}, {"op": "GridDistortion"}]}]})
    for chain in (wb.Chain(seed=1).add("Rotate").add("OpticalDistortion"), grouped):
        with pytest.raises(wb.UnsupportedOpError) as run:
            chain.run(images, backend="dali", device="cpu")
        _refused(str(run.value))
        assert "kornia or albumentations backend" in str(run.value)
        with pytest.raises(wb.UnsupportedOpError) as preview:
            DaliPrefixCache().run(chain, images, "cpu")
        _refused(str(preview.value))
        with pytest.raises(wb.UnsupportedOpError) as estimate:
            chain.estimate(backend="dali", device="cpu", batch_size=2, images=images, progress=False)
        _refused(str(estimate.value))
        assert chain.run(images, backend="kornia", device="cpu").images.shape[0] == len(images)
    # The export is written (it is for GPUs); on the CPU its pipelines refuse, saying which step and why.
    module = load_module(emit(grouped, "dali"), "dali")
    assert module.GPU_ONLY == ((1, module.GPU_ONLY[0][1]),) and "(step 2)" in module.GPU_ONLY[0][1]
    with pytest.raises(ValueError) as augment:
        module.augment_images(images, device="cpu")
    _refused(str(augment.value))
    module.check_gpu_only(False, first=2)  # resuming past the step needs no GPU
    with pytest.raises(ValueError) as loader:
        module.make_loader(tmp_path, 2, gpu=False)
    _refused(str(loader.value))
    script = tmp_path / "optical_dali.py"
    wb.Chain(seed=1).add("OpticalDistortion").export("dali", path=script.name, folder=tmp_path)
    cv2.imwrite(str(tmp_path / "a.png"), images[0])
    done = subprocess.run([sys.executable, str(script), "--images", str(tmp_path), "--save", str(tmp_path / "o.npz"),
                           "--device", "cpu"], capture_output=True, text=True, env=ENV, timeout=240)
    assert done.returncode != 0 and not (tmp_path / "o.npz").exists()
    _refused(done.stderr)


# --- on a GPU ------------------------------------------------------------------------------------

@pytest.mark.cuda
@pytest.mark.parametrize("mode", ["camera", "fisheye"])
def test_optical_on_dali_gpu_is_kornia_at_the_same_k(mode, sample_images):
    """DALI's GPU remap against Kornia's module at each sample's DALI-drawn k (Kornia's maps and
    grid_sample, on CUDA), and against Albumentations' reference, within the op's parity tolerance."""
    spec = wb.get_op("OpticalDistortion")
    images = [np.ascontiguousarray(i[:200, :240]) for i in sample_images[:6]]
    limit = [-0.2, 0.2] if mode == "camera" else [-0.4, 0.4]
    res = wb.Chain(seed=3).add("OpticalDistortion", p=1.0, distort_limit=limit, mode=mode).run(
        images, backend="dali", device="cuda")
    ks = [float(row[0]["k"]) for row in res.params]
    assert len(set(ks)) == len(ks) and all(limit[0] <= k <= limit[1] for k in ks)
    border = spec.parity.border
    cut = lambda x: x[border:-border, border:-border]  # noqa: E731
    kornia, reference, dali = [], [], []
    for image, out, k, row in zip(images, res.images, ks, res.params):
        x = torch.from_numpy(image).permute(2, 0, 1)[None].float().cuda() / 255.0
        map_x, map_y = distortion_optical_maps(torch.tensor([k]), *image.shape[:2], mode, x.device, x.dtype)
        kornia.append(cut(distortion_remap(x, map_x, map_y, "bilinear")[0].permute(1, 2, 0).cpu().numpy()))
        reference.append(cut(np.asarray(_remap(image, *(
            fgeometric.get_camera_matrix_distortion_maps if mode == "camera"
            else fgeometric.get_fisheye_distortion_maps)(image.shape[:2], k)), np.float64) / 255.0))
        dali.append(cut(out.astype(np.float64) / 255.0))
        assert out.dtype == np.uint8 and out.shape == image.shape
    for name, expected in (("kornia", kornia), ("albumentations", reference)):
        diff = np.concatenate([np.ravel(a - b) for a, b in zip(dali, expected)])
        mae, psnr = float(np.abs(diff).mean()), float(10 * np.log10(1.0 / max(np.mean(diff ** 2), 1e-12)))
        print(f"OpticalDistortion {mode}: DALI GPU vs {name} {mae * 255:.3f}/255, {psnr:.1f} dB")
        assert mae <= spec.parity.mae + 1e-9 and psnr >= spec.parity.psnr, (name, mae * 255, psnr)


@pytest.mark.cuda
def test_elastic_on_dali_gpu_is_the_reference_at_its_seeds(sample_images):
    """DALI's GPU ElasticTransform (its field built in the graph, resampled by the remap) against
    Albumentations' remap of the field rebuilt from each sample's reported seed (the parity reference,
    which Kornia matches on the CPU), within the op's parity tolerance; the seeds differ per sample."""
    spec = wb.get_op("ElasticTransform")
    images = [np.ascontiguousarray(i[:200, :240]) for i in sample_images[:6]]
    res = wb.Chain(seed=3).add("ElasticTransform", p=1.0, **spec.parity.params).run(
        images, backend="dali", device="cuda")
    seeds = [int(row[0]["seed"]) for row in res.params]
    assert len(set(seeds)) == len(seeds)
    border = spec.parity.border
    diff = np.concatenate([
        np.ravel((out.astype(np.float64) / 255.0 - np.asarray(spec.parity.reference(image, row[0]), np.float64))
                 [border:-border, border:-border])
        for image, out, row in zip(images, res.images, res.params)])
    mae, psnr = float(np.abs(diff).mean()), float(10 * np.log10(1.0 / max(np.mean(diff ** 2), 1e-12)))
    print(f"ElasticTransform: DALI GPU vs the reference at its seeds {mae * 255:.3f}/255, {psnr:.1f} dB")
    assert mae <= spec.parity.mae + 1e-9 and psnr >= spec.parity.psnr, (mae * 255, psnr)


@pytest.mark.cuda
def test_optical_export_equals_run_on_cuda_under_conditionals(tmp_path, sample_images):
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    for i, image in enumerate(sample_images[:4]):
        Image.fromarray(np.ascontiguousarray(image[:120, :160])).save(folder / f"img_{i:02d}.png")
    chain = wb.Chain(seed=6).add("Rotate").add("OpticalDistortion", p=0.5, distort_limit=[-0.4, 0.4], mode="fisheye")
    chain.export("dali", path="optical.py", folder=tmp_path)
    run_script(tmp_path / "optical.py", "--images", str(folder), "--save", str(tmp_path / "o.npz"), "--device", "cuda")
    expected = chain.run(wb.load_images(folder), backend="dali", device="cuda")
    saved = np.load(tmp_path / "o.npz")
    assert_same_images(saved_images(saved, expected.images), expected.images, "--save on CUDA differs from run")
    applied = [row[1]["applied"] for row in expected.params]
    assert 0 < sum(applied) < len(applied)  # the coin split the batch
