"""Degradation ops (box blur, downscaling) do what their specs say on every backend, with the
per-image draws Albumentations makes, and Albumentations' own transforms import onto them."""
import ast
import os

import numpy as np
import pytest

import workbench as wb
from workbench.codegen.literals import Name

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
