"""Geometric ops: each does what its spec says on every backend that runs it (checked against
numpy/OpenCV), its reported draws mean the same everywhere, its Albumentations lowering
inverts, and bad settings get a clear error."""
import ast
import math
import os
import re

import numpy as np
import pytest

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402
import cv2  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.literals import Name  # noqa: E402
from workbench.ops import REGISTRY  # noqa: E402
from workbench.codegen.albumentations import LOCAL_TRANSFORMS  # noqa: E402
from workbench.runtime import albumentations_transforms  # noqa: E402

GEOMETRIC = wb.list_ops(family="geometric")


def run(op, images, backend, seed=0, **params):
    return wb.Chain(seed=seed).add(op, p=1.0, **params).run(images, backend=backend, device="cpu")


def unit(image) -> np.ndarray:
    """Any backend's output in [0, 1] floats (Kornia gives floats, DALI and Albumentations uint8)."""
    image = np.asarray(image)
    return image.astype(np.float64) / (255.0 if image.dtype == np.uint8 else 1.0)


def levels(image) -> np.ndarray:
    return np.round(unit(image) * 255.0).astype(np.int64)


def mean_abs(first, second) -> float:
    """Mean absolute difference over all pixels of two lists of same-shape images."""
    return float(np.concatenate([np.abs(x - y).ravel() for x, y in zip(first, second, strict=True)]).mean())


def noise(n, h, w, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(n)]


# ----- crops and pads -------------------------------------------------------------------------
@pytest.mark.parametrize("backend", wb.get_op("RandomCrop").backends)
def test_random_crop_is_the_input_at_the_reported_window(backend, small_images):
    res = run("RandomCrop", small_images, backend, size=[40, 56])
    starts = set()
    for image, out, rows in zip(small_images, res.images, res.params):
        x0, y0, x1, y1 = (int(v) for v in rows[0]["crop_box"])
        assert (x1 - x0, y1 - y0) == (56, 40) and 0 <= x0 <= 128 - 56 and 0 <= y0 <= 96 - 40
        assert np.array_equal(levels(out), image[y0:y1, x0:x1])
        starts.add((x0, y0))
    assert len(starts) > 1, "every sample got the same window"


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
def test_crop_larger_than_the_image_names_the_op_and_the_fix(backend, small_images):
    chain = wb.Chain().add("RandomCrop", size=[100, 56])
    with pytest.raises(wb.InputError, match=r"step 1 \(RandomCrop\): size \[100, 56\] is larger than image 1 "
                                            r"\(96x128 at that step\); lower size or resize first"):
        chain.run(small_images, backend=backend)


@pytest.mark.parametrize("backend", wb.get_op("CenterCrop").backends)
def test_center_crop_reports_the_floored_window(backend):
    image = noise(1, 31, 40)[0]
    res = run("CenterCrop", [image], backend, size=[20, 25])
    # Odd margins (11 and 15 pixels) put the extra pixel after the window on every backend.
    assert res.params[0][0]["crop_box"] == [7.0, 5.0, 32.0, 25.0]
    assert np.array_equal(levels(res.images[0]), image[5:25, 7:32])


@pytest.mark.parametrize("backend", wb.get_op("Pad").backends)
def test_pad_places_the_whole_image_at_a_random_reported_offset(backend):
    images = noise(12, 20, 30)
    res = run("Pad", images, backend, size=[32, 36], fill=0.2)
    offsets = set()
    for image, out, rows in zip(images, res.images, res.params):
        row = rows[0]
        # The shortfall (12 rows, 6 columns) is padded on both ends, then a size window is cut.
        assert row["padding"] == [6.0, 6.0, 12.0, 12.0]
        x0, y0, x1, y1 = row["crop_box"]
        assert (x1 - x0, y1 - y0) == (36, 32)
        ox, oy = int(6 - x0), int(12 - y0)
        assert 0 <= ox <= 6 and 0 <= oy <= 12
        expected = np.full((32, 36, 3), 51, np.int64)  # fill 0.2 = 51/255
        expected[oy:oy + 20, ox:ox + 30] = image
        assert np.array_equal(levels(out), expected)
        offsets.add((ox, oy))
    assert len(offsets) > 3, "the image should land at different offsets"


@pytest.mark.parametrize("backend", wb.get_op("Pad").backends)
def test_pad_crops_a_side_longer_than_size(backend):
    images = noise(4, 30, 50, seed=1)
    res = run("Pad", images, backend, size=[40, 40])
    for image, out, rows in zip(images, res.images, res.params):
        # 10 rows short: padded by 10 above and below; 10 columns too many: cut at random.
        assert rows[0]["padding"] == [0.0, 0.0, 10.0, 10.0]
        x0, y0, x1, y1 = (int(v) for v in rows[0]["crop_box"])
        assert 0 <= x0 <= 10 and 0 <= y0 <= 10
        padded = np.pad(image, ((10, 10), (0, 0), (0, 0)))
        assert np.array_equal(levels(out), padded[y0:y1, x0:x1])


def test_pad_keeps_the_batch_one_size():
    spec = wb.get_op("Pad")
    assert spec.always_applies and spec.fixes_size and spec.output_size({"size": [32, 36], "fill": 0.0}, 90, 9) == (
        32, 36)
    with pytest.raises(wb.ChainError, match=r"Pad must apply to every sample"):
        wb.Chain().add("Pad", p=0.5)


# ----- warps ----------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", wb.get_op("Translate").backends)
def test_translate_moves_a_pixel_by_the_collapsed_fraction(backend):
    image = np.zeros((48, 64, 3), np.uint8)
    image[20, 30] = (255, 128, 7)
    res = run("Translate", [image], backend, translate_x=[0.25, 0.25], translate_y=[-0.125, -0.125])
    out = levels(res.images[0])
    # 0.25 * 64 = 16 pixels right, 0.125 * 48 = 6 pixels up; nothing else lights up.
    assert out[14, 46].tolist() == [255, 128, 7] and out.sum() == 255 + 128 + 7
    assert (res.params[0][0]["dx"], res.params[0][0]["dy"]) == (16.0, -6.0)


def test_albumentations_translates_by_whole_pixels():
    """The documented difference: Albumentations truncates fraction * size to whole pixels."""
    image = noise(1, 40, 45)[0]
    kornia = run("Translate", [image], "kornia", translate_x=[0.1, 0.1], translate_y=[0.0, 0.0])
    albumentations = run("Translate", [image], "albumentations", translate_x=[0.1, 0.1], translate_y=[0.0, 0.0])
    assert kornia.params[0][0]["dx"] == pytest.approx(4.5) and albumentations.params[0][0]["dx"] == 4.0
    assert np.array_equal(levels(albumentations.images[0])[:, 4:], image[:, :-4])
    assert "whole pixels" in wb.get_op("Translate").albumentations.note


@pytest.mark.parametrize("backend", wb.get_op("Shear").backends)
def test_shear_moves_pixels_as_documented(backend):
    """tan 45 = 1 about the centre (15, 10) of a 21x31 image: shear_x moves a pixel 4 rows
    below the centre 4 columns left; shear_y moves a pixel 5 columns right of it 5 rows up."""
    image = np.zeros((21, 31, 3), np.uint8)
    image[14, 15] = 200
    image[10, 20] = 100
    for params, expected in ((dict(shear_x=[45.0, 45.0]), {(14, 11): 200, (10, 20): 100}),
                             (dict(shear_x=[0.0, 0.0], shear_y=[45.0, 45.0]), {(14, 15): 200, (5, 20): 100})):
        out = levels(run("Shear", [image], backend, **params).images[0])[..., 0]
        assert {(int(y), int(x)): int(out[y, x]) for y, x in zip(*np.nonzero(out > 20))} == expected


def test_shear_on_both_axes_kornia_and_dali_agree_albumentations_is_the_documented_exception(sample_images):
    photos = sample_images[:4]
    params = dict(shear_x=[10.0, 10.0], shear_y=[8.0, 8.0])
    k, d, a = ([unit(x)[4:-4, 4:-4] for x in run("Shear", photos, b, **params).images]
               for b in ("kornia", "dali", "albumentations"))
    assert mean_abs(k, d) <= wb.get_op("Shear").parity.mae
    assert mean_abs(k, a) > 5 / 255  # x then y (Kornia, DALI) against both at once (Albumentations)
    assert "both axes at once" in wb.get_op("Shear").albumentations.note


def test_affine_with_rotation_and_shear_kornia_and_dali_agree(sample_images):
    """The parity case leaves shear out (Albumentations composes the other way round): Kornia
    and DALI are checked with both here, within the op's stated tolerance."""
    photos = sample_images[:4]
    params = dict(degrees=[25.0, 25.0], translate=[0.0, 0.0], scale=[0.8, 0.8], shear=[15.0, 15.0])
    k, d, a = ([unit(x)[4:-4, 4:-4] for x in run("Affine", photos, b, **params).images]
               for b in ("kornia", "dali", "albumentations"))
    diff = np.concatenate([np.ravel(x - y) for x, y in zip(k, d)])
    spec = wb.get_op("Affine")
    assert np.abs(diff).mean() <= spec.parity.mae and 10 * np.log10(1 / np.mean(diff ** 2)) >= spec.parity.psnr
    assert mean_abs(k, a) > 5 / 255
    assert "shears after rotating" in spec.albumentations.note


def kornia_affine(image, row) -> np.ndarray:
    """The workbench's Affine convention from a sample's reported draws, with OpenCV:
    p' = R(angle, clockwise) diag(sx, sy) Shear_x (p - c) + c + t about the pixel-centre centre c."""
    h, w = image.shape[:2]
    theta, k = math.radians(row["angle"]), math.tan(math.radians(row["shear"]))
    lin = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]) @ \
        np.diag(row["scale"]) @ np.array([[1.0, -k], [0.0, 1.0]])
    centre = np.array([(w - 1) / 2, (h - 1) / 2])
    matrix = np.hstack([lin, (centre + np.asarray(row["translate_px"]) - lin @ centre)[:, None]])
    return cv2.warpAffine(image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                          borderValue=0).astype(np.float64) / 255.0


@pytest.mark.parametrize("keep_ratio", [True, False])
@pytest.mark.parametrize("backend", wb.get_op("Affine").backends)
def test_affine_reported_draws_rebuild_the_output(backend, keep_ratio, small_images):
    """Angle, scale, shift and shear mean the same on every backend: OpenCV fed one sample's
    reported values gives that sample's image. keep_ratio=False draws the x and y zoom apart."""
    shear = [0.0, 0.0] if backend == "albumentations" else [-12.0, 12.0]
    res = run("Affine", small_images, backend, seed=5, degrees=[-30.0, 30.0], translate=[0.2, 0.1],
              scale=[0.7, 1.3], shear=shear, keep_ratio=keep_ratio)
    angles = set()
    for image, out, rows in zip(small_images, res.images, res.params):
        row = rows[0]
        assert abs(row["translate_px"][0]) <= 0.2 * 128 + 1e-6 and abs(row["translate_px"][1]) <= 0.1 * 96 + 1e-6
        assert all(0.7 - 1e-6 <= s <= 1.3 + 1e-6 for s in row["scale"])
        assert (row["scale"][0] == pytest.approx(row["scale"][1])) is keep_ratio, row["scale"]
        expected = kornia_affine(image, row)
        assert np.abs(unit(out) - expected)[4:-4, 4:-4].mean() < 0.6 / 255, row
        angles.add(round(row["angle"], 3))
    assert len(angles) == len(small_images)


@pytest.mark.parametrize("backend", wb.get_op("Rotate").backends)
def test_rotate_reported_angle_rebuilds_the_output(backend, small_images):
    res = run("Rotate", small_images, backend, seed=2, degrees=[-40.0, 40.0])
    for image, out, rows in zip(small_images, res.images, res.params):
        matrix = cv2.getRotationMatrix2D((63.5, 47.5), rows[0]["angle"], 1.0)  # counter-clockwise
        expected = cv2.warpAffine(image, matrix, (128, 96), flags=cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_CONSTANT).astype(np.float64) / 255.0
        assert np.abs(unit(out) - expected)[4:-4, 4:-4].mean() < 0.6 / 255, rows[0]["angle"]


@pytest.mark.parametrize("backend", wb.get_op("Perspective").backends)
def test_perspective_moves_each_corner_inwards_within_the_distortion(backend, small_images):
    res = run("Perspective", small_images, backend, seed=4, distortion=0.4)
    ends = []
    for image, out, rows in zip(small_images, res.images, res.params):
        start = np.asarray(rows[0]["start_points"]).reshape(4, 2)
        end = np.asarray(rows[0]["end_points"]).reshape(4, 2)
        assert np.array_equal(start, [[0, 0], [127, 0], [127, 95], [0, 95]])
        inwards = (end - start) * np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]])
        assert (inwards >= 0).all() and (inwards <= np.array([0.4 * 128 / 2, 0.4 * 96 / 2]) + 1e-4).all()
        # The warp takes the corners to the reported points: OpenCV agrees.
        matrix = cv2.getPerspectiveTransform(start.astype(np.float32), end.astype(np.float32))
        expected = cv2.warpPerspective(image, matrix, (128, 96), flags=cv2.INTER_LINEAR,
                                       borderMode=cv2.BORDER_CONSTANT).astype(np.float64) / 255.0
        assert np.abs(unit(out) - expected)[4:-4, 4:-4].mean() < 0.5 / 255
        ends.append(end)
    assert len({e.tobytes() for e in ends}) == len(ends)


@pytest.mark.parametrize("backend", wb.get_op("Perspective").backends)
def test_perspective_without_distortion_is_the_identity(backend, small_images):
    out = run("Perspective", small_images, backend, distortion=0.0).images
    assert max(np.abs(unit(o) - unit(i)).max() for o, i in zip(out, small_images)) < 1.01 / 255


# ----- Albumentations import (from_transform inverts args) -------------------------------------
def build_transform(spec, params):
    """The transform the Albumentations export writes for `params` (dict arguments are source text): A's
    class, or the workbench's subclass of it where the export writes one (WbSmallestMaxSize, ...)."""
    args = {k: ast.literal_eval(str.__str__(v)) if isinstance(v, Name) else v
            for k, v in spec.albumentations.args(params).items()}
    local = LOCAL_TRANSFORMS.get(spec.albumentations.transform)
    return (getattr(albumentations_transforms, local) if local else getattr(A, spec.albumentations.transform))(
        **args, p=1.0)


@pytest.mark.parametrize("op,params", [("Resize", {"size": [40, 30]}), ("LongestMaxSize", {"max_size": 40}),
                                       ("SmallestMaxSize", {"max_size": 30})])
def test_exported_resizes_shrink_with_pils_triangle_filter(op, params):
    """The export writes WbResize (WbLongestMaxSize, ...) for A.Resize: with area_for_downscale (antialias) it
    shrinks with PIL's BILINEAR (the triangle filter Kornia and DALI use), on uint8 and, per channel, on
    floats; nearest unfiltered; enlarging, or without antialias, exactly A's own."""
    from PIL import Image

    from workbench.codegen import emit, load_module

    spec = wb.get_op(op)
    source = emit(wb.Chain().add(op, **params), "albumentations")
    assert f"Wb{op}(" in source and f"A.{op}(" not in source
    module = load_module(source, "albumentations")

    def pair(**settings):
        full = spec.validate_params(op, {**params, **settings})
        args = spec.albumentations.args(full)
        return getattr(module, "Wb" + op)(**args, p=1.0), getattr(A, op)(**args, p=1.0)

    image = noise(1, 64, 48, seed=4)[0]
    ours, theirs = pair(antialias=True)
    shrunk = ours(image=image)["image"]
    h, w = shrunk.shape[:2]
    assert (h, w) == theirs(image=image)["image"].shape[:2] and h < 64
    assert np.array_equal(shrunk, np.asarray(Image.fromarray(image).resize((w, h), Image.BILINEAR)))
    assert not np.array_equal(shrunk, theirs(image=image)["image"])  # not OpenCV's area filter
    floats = (image / 255.0).astype(np.float32)
    expected = np.stack([np.asarray(Image.fromarray(floats[:, :, k]).resize((w, h), Image.BILINEAR))
                         for k in range(3)], axis=2)
    out = module.wb_pil_resize(floats, h, w)
    assert out.dtype == np.float32 and np.array_equal(out, expected)
    assert np.abs(out * 255.0 - shrunk).max() <= 1.0  # the 8-bit path only rounds
    small = noise(1, 12, 10, seed=5)[0]
    assert np.array_equal(ours(image=small)["image"], theirs(image=small)["image"])  # enlarging: A's own
    ours, theirs = pair(antialias=False)
    assert np.array_equal(ours(image=image)["image"], theirs(image=image)["image"])
    ours, _ = pair(antialias=True, interpolation="nearest")
    assert np.array_equal(ours(image=image)["image"], cv2.resize(image, (w, h), interpolation=cv2.INTER_NEAREST))


# (Pad lowers to the workbench's own WbPad: no Albumentations class of its own to import.)
@pytest.mark.parametrize("op", [op for op in GEOMETRIC if REGISTRY[op].albumentations is not None
                                and REGISTRY[op].albumentations.from_transform is not None])
def test_from_transform_inverts_the_lowering(op):
    spec = wb.get_op(op)
    rng = np.random.default_rng(7)
    for _ in range(10):
        params = spec.validate_params("t", {p.name: p.random(rng) for p in spec.params})
        assert spec.albumentations.from_transform(build_transform(spec, params)) == params


def test_affine_transforms_map_to_the_op_that_expresses_them():
    chain = wb.Chain.from_albumentations([
        A.Affine(rotate=(-15, 15), scale=(0.9, 1.1), border_mode=cv2.BORDER_CONSTANT, fill=0, p=0.5),
        A.Affine(translate_percent={"x": (0.0, 0.2), "y": (-0.1, 0.0)}, border_mode=cv2.BORDER_CONSTANT, p=1.0),
        A.Affine(shear={"x": (0, 0), "y": (-5, 5)}, interpolation=cv2.INTER_NEAREST, border_mode=0, p=0.3),
        A.Rotate(limit=(-20, 10), border_mode=cv2.BORDER_CONSTANT, p=1.0),
        A.Resize(60, 80, area_for_downscale="image"),
        A.RandomCrop(32, 48),
    ])
    assert [s.op for s in chain.steps] == ["Affine", "Translate", "Shear", "Rotate", "Resize", "RandomCrop"]
    assert chain.steps[0].params["degrees"] == [-15.0, 15.0] and chain.steps[0].params["scale"] == [0.9, 1.1]
    assert chain.steps[1].params["translate_x"] == [0.0, 0.2] and chain.steps[1].params["translate_y"] == [-0.1, 0.0]
    assert chain.steps[2].params == {"shear_x": [0.0, 0.0], "shear_y": [-5.0, 5.0], "interpolation": "nearest"}
    assert chain.steps[3].params["degrees"] == [-20.0, 10.0] and chain.steps[4].params["antialias"] is True
    assert chain.steps[5].params["size"] == [32, 48] and not chain.unmapped


@pytest.mark.parametrize("transform,reason", [
    (A.Rotate(limit=10, border_mode=cv2.BORDER_REFLECT_101), r"border_mode=4: the op fills outside the image with 0"),
    (A.Affine(translate_px=(-5, 5), border_mode=0), r"translate_px shifts by pixels"),
    (A.Affine(rotate=(-10, 10), shear={"x": (0, 0), "y": (3, 3)}, border_mode=0), r"Affine shears along x only"),
    (A.Rotate(limit=10, border_mode=0, interpolation=cv2.INTER_CUBIC), r"interpolation=2 \(an OpenCV flag\)"),
    (A.RandomCrop(10, 10, pad_if_needed=True), r"pad_if_needed=True pads small images"),
])
def test_settings_no_op_expresses_are_listed_with_the_reason(transform, reason):
    with pytest.warns(UserWarning, match="left out"):
        chain = wb.Chain.from_albumentations([transform])
    assert chain.steps == [] and len(chain.unmapped) == 1
    assert re.search(reason, chain.unmapped[0].reason), chain.unmapped[0].reason


# ----- invalid settings -------------------------------------------------------------------------
@pytest.mark.parametrize("op,params,message", [
    ("Translate", {"translate_x": [0.3, -0.2]},
     r"step 1 \(Translate\): parameter 'translate_x' has lo > hi \(0.3 > -0.2\); write it as \[-0.2, 0.3\]"),
    ("Translate", {"translate_y": [-1.5, 0.0]}, r"step 1 \(Translate\): parameter 'translate_y' must lie within "
                                                r"\[-1.0, 1.0\]"),
    ("Shear", {"shear_y": [-90, 0]}, r"step 1 \(Shear\): parameter 'shear_y' must lie within \[-80.0, 80.0\]"),
    ("Perspective", {"distortion": 1.5}, r"step 1 \(Perspective\): parameter 'distortion' must be in \[0.0, 1.0\], "
                                         r"got 1.5"),
    ("Pad", {"fill": -0.1}, r"step 1 \(Pad\): parameter 'fill' must be in \[0.0, 1.0\]"),
    ("Pad", {"size": [0, 10]}, r"step 1 \(Pad\): parameter 'size' sides must be in \[1, 8192\] pixels"),
    ("RandomCrop", {"size": [10.5, 3]}, r"step 1 \(RandomCrop\): parameter 'size' must be an integer, got 10.5"),
    ("Perspective", {"corners": 4}, r"step 1 \(Perspective\): unknown parameter 'corners'; Perspective takes: "
                                    r"distortion, interpolation"),
])
def test_invalid_settings_name_the_op_and_the_parameter(op, params, message):
    with pytest.raises(wb.ChainError, match=message):
        wb.Chain.from_dict({"steps": [{"op": op, "params": params}]})


# ----- A.ShiftScaleRotate, PadIfNeeded, LongestMaxSize, SmallestMaxSize -----------------------------
def shift_scale_rotate(**kwargs):
    with pytest.warns(UserWarning, match="special case of Affine"):
        return A.ShiftScaleRotate(**kwargs)


def test_shift_scale_rotate_imports_into_affine():
    """A.ShiftScaleRotate is an A.Affine in 2.0.8: scale_limit is added to 1, shift_limit becomes the
    largest shift, the counter-clockwise rotate_limit is negated, x and y zoom are drawn apart."""
    affine = wb.get_op("Affine").albumentations.from_transform
    assert affine(shift_scale_rotate()) == {
        "degrees": [-45.0, 45.0], "translate": [0.0625, 0.0625], "scale": [0.9, 1.1], "shear": [0.0, 0.0],
        "interpolation": "bilinear", "keep_ratio": False}
    params = affine(shift_scale_rotate(shift_limit_x=0.2, shift_limit_y=0.1, scale_limit=(-0.3, 0.0),
                                       rotate_limit=(-10, 30), interpolation=cv2.INTER_NEAREST))
    assert params["translate"] == [0.2, 0.1] and params["scale"] == pytest.approx([0.7, 1.0])
    assert params["degrees"] == [-30.0, 10.0] and params["interpolation"] == "nearest"
    with pytest.raises(ValueError, match=r"shift_limit_x \[0.0, 0.1\] / shift_limit_y .* not symmetric"):
        affine(shift_scale_rotate(shift_limit_x=(0.0, 0.1)))
    with pytest.raises(ValueError, match=r"border_mode=4: the op fills outside the image with 0"):
        affine(shift_scale_rotate(border_mode=cv2.BORDER_REFLECT_101))
    with pytest.raises(ValueError, match=r"balanced_scale=True"):
        affine(A.Affine(scale=(0.5, 2.0), balanced_scale=True))
    # A default A.Affine is the identity, imported without negative zeros.
    assert affine(A.Affine())["degrees"] == [0.0, 0.0] and str(affine(A.Affine())["degrees"][0]) == "0.0"


def test_shift_scale_rotate_runs_like_albumentations_through_the_affine_op(small_images):
    """The imported parameters on Kornia give what A.ShiftScaleRotate itself gives (collapsed ranges)."""
    transform = shift_scale_rotate(shift_limit=0.0, scale_limit=(-0.2, -0.2), rotate_limit=(30, 30), p=1.0)
    params = wb.get_op("Affine").albumentations.from_transform(transform)
    chain = wb.Chain(seed=1).add("Affine", p=1.0, **params)
    original = [transform(image=image)["image"] for image in small_images]
    kornia = chain.run(small_images, backend="kornia").images
    assert mean_abs([unit(x)[4:-4, 4:-4] for x in kornia], [unit(x)[4:-4, 4:-4] for x in original]) < 0.4 / 255


@pytest.mark.parametrize("position", ["center", "top_left", "top_right", "bottom_left", "bottom_right"])
@pytest.mark.parametrize("backend", wb.get_op("PadIfNeeded").backends)
def test_pad_if_needed_places_the_image_as_albumentations_does(backend, position):
    """Short sides are padded with the fill, long ones kept; the padding is the one A.PadIfNeeded
    uses (centred: the odd pixel after the image) and is reported as [left, right, top, bottom]."""
    images = noise(3, 20, 30, seed=4)
    res = run("PadIfNeeded", images, backend, min_size=[25, 27], position=position, fill=0.2)
    reference = A.PadIfNeeded(25, 27, position=position, border_mode=0, fill=51, p=1.0)
    for image, out, rows in zip(images, res.images, res.params):
        assert np.array_equal(levels(out), reference(image=image)["image"])
        left, right, top, bottom = rows[0]["padding"]
        assert (left, right) == (0.0, 0.0) and top + bottom == 5.0
        assert top == {"center": 2.0, "top_left": 0.0, "top_right": 0.0}.get(position, 5.0)
        assert np.array_equal(levels(out)[int(top):int(top) + 20], image)
    assert wb.get_op("PadIfNeeded").output_size(wb.get_op("PadIfNeeded").defaults(), 300, 200) == (300, 256)


def test_pad_if_needed_keeps_mixed_sizes_apart_and_a_later_crop_sees_the_padded_size(sample_images):
    photos = sample_images[2:5]  # 300x451, 300x400, 400x600
    chain = wb.Chain().add("PadIfNeeded", min_size=[420, 420]).add("CenterCrop", size=[420, 420])
    for backend in ("kornia", "dali", "albumentations"):
        out = chain.run(photos, backend=backend).images
        assert np.asarray(out).shape == (3, 420, 420, 3)
    with pytest.raises(wb.InputError, match=r"step 2 \(CenterCrop\): size \[430, 430\] is larger than image 1 "
                                            r"\(420x451 at that step\)"):
        wb.Chain().add("PadIfNeeded", min_size=[420, 420]).add("CenterCrop", size=[430, 430]).run(photos)


@pytest.mark.parametrize("transform,reason", [
    (A.PadIfNeeded(64, 64, position="random"), r"position='random': the op places the image at one of center"),
    (A.PadIfNeeded(None, None, pad_height_divisor=32, pad_width_divisor=32), r"pad_height_divisor"),
    (A.PadIfNeeded(64, 64, border_mode=cv2.BORDER_REFLECT_101, position="random"), r"position='random'"),
    (A.PadIfNeeded(64, 64, fill=(0, 10, 20)), r"differs per channel"),
    (A.LongestMaxSize(max_size=[256, 320]), r"picks a size per image from a list"),
    (A.SmallestMaxSize(max_size_hw=(256, None)), r"max_size_hw=\(256, None\)"),
    (A.LongestMaxSize(256, interpolation=cv2.INTER_LANCZOS4), r"interpolation=4 \(an OpenCV flag\)"),
])
def test_size_dependent_settings_no_op_expresses_are_listed(transform, reason):
    with pytest.warns(UserWarning, match="left out"):
        chain = wb.Chain.from_albumentations([transform])
    assert chain.steps == [] and re.search(reason, chain.unmapped[0].reason), chain.unmapped[0].reason


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("op", ["LongestMaxSize", "SmallestMaxSize"])
def test_max_size_rounds_the_other_side_as_albumentations(op, backend):
    """The other side is round(side * scale), half to even (20x5 to a longest side of 10: 2.5 -> 2; 40x14:
    3.5 -> 4; 3x4: 7.5 -> 8): every backend gives A's size, and output_size predicts it."""
    sizes = [(20, 5), (40, 14), (3, 4), (7, 11)]
    target = 10 if op == "LongestMaxSize" else 2
    images = [noise(1, h, w, seed=h)[0] for h, w in sizes]
    reference = getattr(A, op)(max_size=target, p=1.0)
    expected = [reference(image=image)["image"] for image in images]
    res = run(op, images, backend, max_size=target, antialias=False)
    spec = wb.get_op(op)
    for image, out, want, rows in zip(images, res.images, expected, res.params):
        size = spec.output_size({**spec.defaults(), "max_size": target}, *image.shape[:2])
        assert out.shape == want.shape == (*size, 3)
        assert rows[0]["scale"] == pytest.approx(target / (max if op == "LongestMaxSize" else min)(image.shape[:2]))
    assert expected[0].shape[:2] == ((10, 2) if op == "LongestMaxSize" else (8, 2))


@pytest.mark.parametrize("op", ["LongestMaxSize", "SmallestMaxSize"])
def test_max_size_matches_albumentations_on_photos_and_keeps_the_aspect_ratio(op, sample_images):
    photos = sample_images[2:6]
    chain = wb.Chain().add(op, max_size=160)
    reference = getattr(A, op)(max_size=160, p=1.0)
    expected = [reference(image=image)["image"] for image in photos]
    for backend in ("kornia", "dali"):
        out = chain.run(photos, backend=backend).images
        assert [o.shape for o in out] == [e.shape for e in expected]
        assert mean_abs([unit(o) for o in out], [unit(e) for e in expected]) < 1.0 / 255
    for image, e in zip(photos, expected):
        assert (max if op == "LongestMaxSize" else min)(e.shape[:2]) == 160
        assert e.shape[0] / e.shape[1] == pytest.approx(image.shape[0] / image.shape[1], abs=0.01)


def test_a_detection_recipe_imports_and_runs_on_the_gpu_engines(sample_images):
    """LongestMaxSize + PadIfNeeded + ShiftScaleRotate's Affine: the letterbox recipe runs on Kornia and
    DALI at one size, and equals Albumentations' own pipeline on Albumentations."""
    pipeline = A.Compose([A.LongestMaxSize(max_size=128), A.PadIfNeeded(128, 128, border_mode=0, fill=0),
                          A.HorizontalFlip(p=0.5)], seed=2)
    chain = wb.Chain.from_albumentations(pipeline)
    assert [s.op for s in chain.steps] == ["LongestMaxSize", "PadIfNeeded", "HorizontalFlip"] and not chain.unmapped
    photos = sample_images[:5]
    for backend in ("kornia", "dali"):
        assert np.asarray(chain.run(photos, backend=backend).images).shape == (5, 128, 128, 3)
    unflipped = chain.copy()
    unflipped.steps.pop()
    original = [A.Compose(pipeline.transforms[:2])(image=image)["image"] for image in photos]
    assert np.array_equal(unflipped.run(photos, backend="albumentations").images, np.stack(original))


# ----- RandomRotate90 and Transpose (square images) -----------------------------------------------
@pytest.mark.parametrize("backend", wb.get_op("RandomRotate90").backends)
def test_random_rotate90_turns_each_image_by_its_reported_k_counter_clockwise(backend):
    images = noise(24, 9, 9, seed=5)
    res = run("RandomRotate90", images, backend, seed=1)
    ks = []
    for image, out, rows in zip(images, res.images, res.params):
        k = rows[0]["k"]
        assert k in (0.0, 1.0, 2.0, 3.0)
        assert np.array_equal(levels(out), np.rot90(image, int(k)))
        ks.append(int(k))
    # Counter-clockwise: with k = 1 the top row becomes the left column, read bottom to top.
    first = next(n for n, k in enumerate(ks) if k == 1)
    assert np.array_equal(levels(res.images[first])[::-1, 0], images[first][0])
    assert set(ks) == {0, 1, 2, 3}, f"k should be drawn per image from 0..3, got {ks}"


@pytest.mark.parametrize("backend", wb.get_op("Transpose").backends)
def test_transpose_swaps_rows_and_columns_where_it_applies(backend):
    images = noise(16, 7, 7, seed=6)
    res = wb.Chain(seed=2).add("Transpose", p=0.5).run(images, backend=backend)
    applied = [rows[0]["applied"] for rows in res.params]
    for image, out, done in zip(images, res.images, applied):
        assert np.array_equal(levels(out), image.transpose(1, 0, 2) if done else image)
    assert 0 < sum(applied) < len(images)


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("op", ["RandomRotate90", "Transpose", "D4"])
def test_quarter_turns_refuse_non_square_images_and_name_the_fix(op, backend, small_images):
    with pytest.raises(wb.InputError, match=rf"step 1 \({op}\) swaps height and width on some samples only, so "
                                            r"its input must be square, but image 1 is 96x128 there; add a square "
                                            r"crop or Resize \(e.g. CenterCrop \[96, 96\]\) before step 1"):
        wb.Chain().add(op).run(small_images, backend=backend)
    # After a square crop the same chain runs, one size for the whole batch.
    out = wb.Chain().add("CenterCrop", size=[96, 96]).add(op, p=1.0).run(small_images, backend=backend).images
    assert np.asarray(out).shape == (6, 96, 96, 3)


def test_random_rotate90_runs_on_square_photos_of_several_sizes(square_images):
    photos = square_images[:4]
    assert len({p.shape for p in photos}) > 1
    for backend in ("kornia", "dali"):
        res = run("RandomRotate90", photos, backend, seed=4)
        for image, out, rows in zip(photos, res.images, res.params):
            assert np.array_equal(levels(out), np.rot90(image, int(rows[0]["k"])))


def test_kornia_quarter_turn_matrices_say_where_each_pixel_went():
    """The modules' transformation matrices (pixel centres at integers) move a pixel where the image moved it:
    Kornia uses them for boxes and keypoints."""
    import torch
    from workbench.runtime.kornia_modules.geometric import WbD4, WbRandomRotate90, WbTranspose

    torch.manual_seed(0)
    x = torch.rand(8, 3, 5, 5)
    for module in (WbRandomRotate90(p=1.0), WbTranspose(p=1.0), WbD4(p=1.0)):
        out = module(x)
        matrix = module.transform_matrix
        for n in range(8):
            for (px, py) in ((0, 0), (1, 3), (4, 2)):
                qx, qy, _ = (matrix[n] @ torch.tensor([px, py, 1.0])).round().long().tolist()
                assert torch.equal(out[n, :, qy, qx], x[n, :, py, px])


def test_quarter_turns_import_from_albumentations_and_run_like_it():
    pipeline = A.Compose([A.Resize(32, 32), A.RandomRotate90(p=0.5), A.Transpose(p=0.3)], seed=3)
    chain = wb.Chain.from_albumentations(pipeline)
    assert [(s.op, s.p) for s in chain.steps] == [("Resize", 1.0), ("RandomRotate90", 0.5), ("Transpose", 0.3)]
    assert not chain.unmapped
    images = noise(12, 20, 40, seed=8)
    for backend in ("kornia", "dali", "albumentations"):
        res = chain.run(images, backend=backend)
        resized = wb.Chain().add("Resize", **chain.steps[0].params).run(images, backend=backend).images
        for before, out, rows in zip(resized, res.images, res.params):
            turned = np.rot90(levels(before), int(rows[1]["k"])) if rows[1]["applied"] else levels(before)
            expected = turned.transpose(1, 0, 2) if rows[2]["applied"] else turned
            assert np.array_equal(levels(out), expected), backend


# ----- PerspectiveZoom (A.Perspective) ------------------------------------------------------------
def frame_corners(row, height, width) -> np.ndarray:
    """The input quadrilateral a sample zoomed into: the reported matrix's inverse at the frame's corners."""
    inverse = np.linalg.inv(np.asarray(row["matrix"], dtype=np.float64).reshape(3, 3))
    frame = np.array([[0, 0, 1], [width, 0, 1], [width, height, 1], [0, height, 1]], dtype=np.float64)
    points = frame @ inverse.T
    return points[:, :2] / points[:, 2:]


@pytest.mark.parametrize("backend", wb.get_op("PerspectiveZoom").backends)
def test_perspective_zoom_draws_corners_as_albumentations(backend):
    """Each corner moves inwards by |N(0, sigma)| mod 0.32 of the size; the matrix and max_size are what
    A.Perspective computes from those corners (its own compute_perspective_params)."""
    from albumentations.augmentations.geometric import functional as fgeometric

    height, width, sigma = 40, 50, 0.05
    images = noise(48, height, width, seed=9)
    res = run("PerspectiveZoom", images, backend, seed=5, scale=[sigma, sigma])
    jitters = []
    for rows in res.params:
        points = frame_corners(rows[0], height, width)
        jitter = np.abs(points / [width, height] - [[0, 0], [1, 0], [1, 1], [0, 1]])
        assert (jitter < 0.32 + 1e-4).all()
        jitters.append(jitter)
        matrix, max_w, max_h = fgeometric.compute_perspective_params(points.astype(np.float32), (height, width))
        np.testing.assert_allclose(np.asarray(rows[0]["matrix"]).reshape(3, 3), matrix, rtol=1e-4, atol=1e-4)
        assert rows[0]["max_size"] == [float(max_h), float(max_w)]
    # |N(0, sigma)| has mean sigma * sqrt(2 / pi) (384 draws: about 3% standard error).
    assert np.mean(jitters) == pytest.approx(sigma * math.sqrt(2 / math.pi), rel=0.12)
    assert len({tuple(np.round(j.ravel(), 4)) for j in jitters}) == len(jitters), "corners repeat between images"


@pytest.mark.parametrize("backend", wb.get_op("PerspectiveZoom").backends)
def test_perspective_zoom_output_is_albumentations_warp_at_the_reported_draws(backend, small_images):
    """Albumentations' own warp (its functional `perspective`, keep_size=True) at each sample's reported
    matrix and max_size gives the image, within 8-bit rounding."""
    from albumentations.augmentations.geometric import functional as fgeometric

    res = run("PerspectiveZoom", small_images, backend, seed=2, scale=[0.05, 0.1])
    for image, out, rows in zip(small_images, res.images, res.params):
        max_h, max_w = (int(s) for s in rows[0]["max_size"])
        expected = fgeometric.perspective(image.astype(np.float32), np.asarray(rows[0]["matrix"]).reshape(3, 3),
                                          max_w, max_h,
                                          0, cv2.BORDER_CONSTANT, True, cv2.INTER_LINEAR)
        assert np.abs(unit(out) - expected / 255.0)[2:-2, 2:-2].mean() < 0.35 / 255
        assert max_h < 96 and max_w < 128  # a zoom into an inner quadrilateral, never out


def test_perspective_imports_from_albumentations_and_refuses_what_the_op_cannot_do():
    chain = wb.Chain.from_albumentations([A.Perspective(), A.Perspective(scale=0.2, interpolation=cv2.INTER_NEAREST,
                                                                         p=1.0)])
    assert [(s.op, s.p) for s in chain.steps] == [("PerspectiveZoom", 0.5), ("PerspectiveZoom", 1.0)]
    assert chain.steps[0].params == {"scale": [0.05, 0.1], "interpolation": "bilinear"}
    assert chain.steps[1].params == {"scale": [0.0, 0.2], "interpolation": "nearest"}
    for transform, reason in [(A.Perspective(keep_size=False), r"keep_size=False returns an image of the "
                                                                r"quadrilateral's own size"),
                              (A.Perspective(fit_output=True), r"fit_output=True grows the canvas"),
                              (A.Perspective(border_mode=cv2.BORDER_REFLECT_101), r"border_mode=4")]:
        with pytest.warns(UserWarning, match="left out"):
            chain = wb.Chain.from_albumentations([transform])
        assert chain.steps == [] and re.search(reason, chain.unmapped[0].reason), chain.unmapped[0].reason



# ----- D4 (A.D4: the 8 symmetries of the square) ---------------------------------------------------
D4_NAMES = ("e", "r90", "r180", "r270", "v", "hvt", "h", "t")  # the reported element's meaning, A's order


@pytest.mark.parametrize("backend", wb.get_op("D4").backends)
def test_d4_applies_to_each_image_the_symmetry_it_reports(backend):
    """Each image is Albumentations' own d4 at the reported element (its index in A's order), and all 8
    elements are drawn."""
    from albumentations.augmentations.geometric import functional as fgeometric

    images = noise(40, 7, 7, seed=9)
    res = run("D4", images, backend, seed=3)
    elements = []
    for image, out, rows in zip(images, res.images, res.params):
        element = rows[0]["element"]
        assert element in range(8)
        assert np.array_equal(levels(out), fgeometric.d4(image, D4_NAMES[int(element)]))
        elements.append(int(element))
    assert set(elements) == set(range(8)), f"every symmetry should be drawn, got {elements}"
    # The meaning of two indices, spelled out: 4 ("v") mirrors top to bottom, 5 ("hvt") over the anti-diagonal.
    n = elements.index(4)
    assert np.array_equal(levels(res.images[n]), images[n][::-1])
    n = elements.index(5)
    assert np.array_equal(levels(res.images[n]), images[n][::-1, ::-1].transpose(1, 0, 2))


def test_d4_imports_from_albumentations_and_runs_like_it():
    pipeline = A.Compose([A.Resize(24, 24), A.D4(p=0.75), A.SquareSymmetry(p=1.0)], seed=5)
    chain = wb.Chain.from_albumentations(pipeline)
    assert [(s.op, s.p) for s in chain.steps] == [("Resize", 1.0), ("D4", 0.75), ("D4", 1.0)]
    assert not chain.unmapped
    images = noise(10, 20, 30, seed=1)
    for backend in ("kornia", "dali", "albumentations"):
        res = chain.run(images, backend=backend)
        resized = wb.Chain().add("Resize", **chain.steps[0].params).run(images, backend=backend).images
        for before, out, rows in zip(resized, res.images, res.params):
            expected = levels(before)
            for row in rows[1:]:
                if row["applied"]:
                    expected = np.round(wb.get_op("D4").parity.reference(expected.astype(np.uint8), row)
                                        * 255.0).astype(np.int64)
            assert np.array_equal(levels(out), expected), backend


def test_albumentations_runner_keeps_a_string_draw_from_a_known_set_as_its_index():
    """A.D4 draws its element as a string: the runner reports its index in A's order; other strings
    (settings, not draws) are left out as before."""
    from workbench.codegen import emit, load_module

    recorded = load_module(emit(wb.Chain().add("D4"), "albumentations"), "albumentations")._recorded
    for index, name in enumerate(D4_NAMES):
        assert recorded({"group_element": np.str_(name), "shape": (7, 7, 3)}) == {"group_element": float(index)}
    assert recorded({"group_element": "r45", "mode": "reflect", "angle": 3.0}) == {"angle": 3.0}

# ----- PadBorderIfNeeded (A.PadIfNeeded with a border made from the image) ---------------------------
@pytest.mark.parametrize("mode,flag", [("reflect_101", cv2.BORDER_REFLECT_101), ("reflect", cv2.BORDER_REFLECT),
                                       ("replicate", cv2.BORDER_REPLICATE), ("wrap", cv2.BORDER_WRAP)])
@pytest.mark.parametrize("backend", wb.get_op("PadBorderIfNeeded").backends)
def test_pad_border_if_needed_equals_albumentations_even_wider_than_the_image(backend, mode, flag):
    """Sides padded by several times their length (7 -> 27) repeat the reflection as OpenCV does."""
    images = noise(3, 5, 7, seed=3) + noise(1, 30, 9, seed=4)
    for position in ("center", "top_right"):
        res = run("PadBorderIfNeeded", images, backend, min_size=[25, 27], position=position, border_mode=mode)
        reference = A.PadIfNeeded(25, 27, position=position, border_mode=flag, p=1.0)
        for image, out, rows in zip(images, res.images, res.params):
            expected = reference(image=image)["image"]
            assert np.array_equal(levels(out), expected)
            left, right, top, bottom = (int(v) for v in rows[0]["padding"])
            assert np.array_equal(levels(out)[top:top + image.shape[0], left:left + image.shape[1]], image)


def test_pad_if_needed_imports_to_the_op_for_its_border_mode():
    chain = wb.Chain.from_albumentations([
        A.PadIfNeeded(min_height=40, min_width=40, border_mode=cv2.BORDER_REFLECT_101),
        A.PadIfNeeded(min_height=40, min_width=48, border_mode=cv2.BORDER_REPLICATE, position="bottom_left"),
        A.PadIfNeeded(min_height=40, min_width=40, border_mode=cv2.BORDER_CONSTANT, fill=51)])
    assert [s.op for s in chain.steps] == ["PadBorderIfNeeded", "PadBorderIfNeeded", "PadIfNeeded"]
    assert chain.steps[0].params == {"min_size": [40, 40], "position": "center", "border_mode": "reflect_101"}
    assert chain.steps[1].params == {"min_size": [40, 48], "position": "bottom_left", "border_mode": "replicate"}
    assert chain.steps[2].params["fill"] == 0.2 and not chain.unmapped
    # The imported chain runs on DALI too, as Albumentations runs it.
    images = noise(2, 32, 30, seed=6)
    dali = chain.run(images, backend="dali").images
    albumentations = chain.run(images, backend="albumentations").images
    assert np.asarray(dali).shape == (2, 40, 48, 3) and np.array_equal(dali, albumentations)


@pytest.mark.parametrize("mode,flag", [("reflect_101", cv2.BORDER_REFLECT_101), ("reflect", cv2.BORDER_REFLECT),
                                       ("replicate", cv2.BORDER_REPLICATE), ("wrap", cv2.BORDER_WRAP)])
def test_pad_border_if_needed_on_dali_pads_each_image_of_a_mixed_batch_by_its_own_size(mode, flag):
    """One DALI batch of images of several sizes (a 1-pixel side and sides 20 times shorter than the pad
    among them): each is padded by its own shortfall, every pixel as OpenCV's copyMakeBorder makes it,
    and the reported padding is each image's."""
    rng = np.random.default_rng(8)
    images = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in [(5, 1), (2, 6), (2, 2), (7, 3),
                                                                           (50, 60), (41, 70)]]
    res = run("PadBorderIfNeeded", images, "dali", min_size=[41, 45], position="bottom_right", border_mode=mode)
    for image, out, rows in zip(images, res.images, res.params):
        h, w = image.shape[:2]
        dh, dw = max(41 - h, 0), max(45 - w, 0)
        assert rows[0]["padding"] == [float(dw), 0.0, float(dh), 0.0]
        assert np.array_equal(out, cv2.copyMakeBorder(image, dh, 0, dw, 0, flag))


def test_pad_border_if_needed_on_dali_after_a_normalize_pads_the_float_values():
    """After a Normalize the values are floats: the border copies them as they are, as on Kornia."""
    images = noise(2, 9, 11, seed=2)
    chain = wb.Chain().add("Normalize", mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.3]).add(
        "PadBorderIfNeeded", min_size=[30, 12], border_mode="reflect")
    dali, kornia = (np.asarray(chain.run(images, backend=b).images) for b in ("dali", "kornia"))
    assert dali.dtype == np.float32 and dali.shape == (2, 30, 12, 3)
    assert np.abs(dali - kornia).max() < 1e-6
