"""runtime/torchvision_policy_ops.py, the NumPy / OpenCV policy ops of the Albumentations backend, give
torchvision's own pixels: for each of the 15 ops, at magnitudes of both signs up to the extremes the
policies draw, `wb_tv_policy_op` on a uint8 HWC photo equals, bit for bit, what
`v2.RandAugment()._apply_image_or_video_transform` gives on the same photo as a uint8 CHW tensor (fill
None, nearest or bilinear), on sample photos at their own sizes, resized to 150 x 200 and to 97 x 131,
and on a 5 x 7 image. Contrast, whose float32 mean and blend depend on torch's thread count and the
tensor's memory order, is also checked for both layouts and for one and two threads, on a photo built
so that a mean rounded once (not as torch sums) would miss thousands of pixels, and on small images
where torch's unfused tail rounds. The module keeps the export's rules (wb_tv_ names, three imports).
"""
import ast
import contextlib
import doctest
import importlib
import math
import os
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import pytest

# CI must compare with the real thing, never skip it: scripts/test.sh installs torchvision.
torchvision = importlib.import_module("torchvision") if os.environ.get("CI") else pytest.importorskip("torchvision")
import torch  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.runtime import torchvision_policy_ops as ops  # noqa: E402
from workbench.runtime.torchvision_policy_ops import wb_tv_contrast, wb_tv_policy_op  # noqa: E402

NAN = float("nan")
TRANSFORM_IDS = {
    "identity": "Identity", "shear_x": "ShearX", "shear_y": "ShearY", "translate_x": "TranslateX",
    "translate_y": "TranslateY", "rotate": "Rotate", "brightness": "Brightness", "color": "Color",
    "contrast": "Contrast", "sharpness": "Sharpness", "posterize": "Posterize", "solarize": "Solarize",
    "auto_contrast": "AutoContrast", "equalize": "Equalize", "invert": "Invert",
}
GEOMETRIC = ("shear_x", "shear_y", "translate_x", "translate_y", "rotate")
FACTORS = [0.01, 0.1, 0.5, 0.97, 1.0, 1.03, 1.27, 1.5, 1.9, 1.99]
# Shear angles of torchvision magnitudes up to 0.99 (44.7 deg), both signs; 0.2 and 0.1 put many
# sampling points on exact rounding ties, which torch's float32 arithmetic decides.
SHEARS = [math.degrees(math.atan(m)) for m in (0.99, -0.99, 0.3, -0.3, 0.2, -0.2, 0.1, -0.033)]
MAGNITUDES = {
    "identity": [NAN], "auto_contrast": [NAN], "equalize": [NAN], "invert": [NAN],
    "shear_x": SHEARS, "shear_y": SHEARS,
    # 150/331 of the side (RandAugment's and AutoAugment's largest), 32 px (TrivialAugmentWide's), and
    # fractions int() truncates toward 0.
    "translate_x": [1.0, -1.0, 32.0, -32.0, 14.7, -3.9, "150/331", "-150/331"],
    "translate_y": [1.0, -1.0, 32.0, -32.0, 14.7, -3.9, "150/331", "-150/331"],
    # 90 on a photo of mixed parity puts every pixel on a tie; 90 on a square one is torch's rot90.
    "rotate": [1.0, -1.0, 4.5, 30.0, -30.0, 45.0, 90.0, -90.0, 135.0, -135.0, 180.0],
    "brightness": FACTORS, "color": FACTORS, "contrast": FACTORS, "sharpness": FACTORS,
    "posterize": [0, 1, 2, 4, 6, 7, 8, 4.9],
    # 128.000001 / 255 inverts 128: torch compares in float32, where it is 128.0.
    "solarize": [0.0, 1.0, 0.5, 0.25, 0.999, 128.000001 / 255],
}


@pytest.fixture(scope="module")
def photos():
    """Sample photos at their own sizes (a square one, one of mixed parity, a wide one), the first three
    resized to 150 x 200 and to 97 x 131 (odd), and a 5 x 7 image."""
    images = [np.asarray(i) for i in wb.load_images("sample_data")]
    own = [images[0], images[2], images[4]]
    resized = [cv2.resize(i, (w, h), interpolation=cv2.INTER_AREA)
               for i in images[:3] for h, w in ((150, 200), (97, 131))]
    tiny = cv2.resize(images[1], (7, 5), interpolation=cv2.INTER_AREA)
    assert own[1].shape[:2] == (300, 451) and own[0].shape[:2] == (512, 512)
    return own + resized + [tiny]


@contextlib.contextmanager
def torch_threads(n):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def torchvision_op(image, name, magnitude, interpolation="nearest", contiguous=False):
    """torchvision's op on the image as a uint8 CHW tensor (a view of the HWC array unless `contiguous`),
    at torchvision's magnitude for our reported one."""
    if name.startswith("shear"):
        tv_magnitude = math.tan(math.radians(magnitude))
    elif name in ("brightness", "color", "contrast", "sharpness"):
        tv_magnitude = magnitude - 1.0
    elif name in ("translate_x", "translate_y", "rotate", "posterize", "solarize"):
        tv_magnitude = magnitude
    else:
        tv_magnitude = 0.0
    t = v2.RandAugment(interpolation=interpolation)
    x = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)
    if contiguous:
        x = x.contiguous()
    out = t._apply_image_or_video_transform(x, TRANSFORM_IDS[name], tv_magnitude, interpolation=t.interpolation,
                                            fill=t._fill)
    return out.permute(1, 2, 0).numpy()


def magnitude_for(name, magnitude, image):
    """Translations given as a fraction of the side are that many pixels of this image."""
    if isinstance(magnitude, str):
        sign = -1.0 if magnitude.startswith("-") else 1.0
        side = image.shape[1] if name == "translate_x" else image.shape[0]
        return sign * 150 / 331 * side
    return magnitude


def assert_same(ours, theirs, label):
    assert ours.shape == theirs.shape and ours.dtype == np.uint8, label
    diff = np.abs(ours.astype(np.int16) - theirs.astype(np.int16))
    assert not diff.any(), (f"{label}: {np.count_nonzero(diff) / diff.size:.2e} of the values differ, "
                            f"at most by {diff.max()}, mean {diff.mean():.2e} levels")


CASES = [(name, mode) for name in MAGNITUDES
         for mode in (("nearest", "bilinear") if name in GEOMETRIC else ("nearest",))]


@pytest.mark.parametrize("name, interpolation", CASES, ids=[f"{n}-{m}" for n, m in CASES])
def test_each_op_gives_torchvisions_pixels(photos, name, interpolation):
    with torch_threads(1):  # contrast's reference depends on it (as run in DataLoader workers)
        for image in photos:
            for magnitude in MAGNITUDES[name]:
                magnitude = magnitude_for(name, magnitude, image)
                ours = wb_tv_policy_op(image, name, magnitude, interpolation)
                theirs = torchvision_op(image, name, magnitude, interpolation)
                assert_same(ours, theirs, f"{name} {interpolation} at {magnitude} on {image.shape}")


@pytest.mark.parametrize("name", ["color", "contrast", "sharpness", "auto_contrast", "equalize", "rotate", "shear_y"])
def test_one_channel_images_and_contiguous_tensors(photos, name):
    """HxWx1 images as torchvision's 1-channel tensors; contiguous CHW tensors as well as HWC views."""
    magnitude = {"rotate": 30.0, "shear_y": -20.0}.get(name, 1.5)
    with torch_threads(1):
        for image in photos[3:]:
            gray = np.ascontiguousarray(image[:, :, 1:2])
            for contiguous in (False, True):
                for interpolation in ("nearest", "bilinear") if name in GEOMETRIC else ("nearest",):
                    for x in (image, gray):
                        if name == "contrast":
                            ours = wb_tv_contrast(x, magnitude, channels_last=not contiguous)
                        else:
                            ours = wb_tv_policy_op(x, name, magnitude, interpolation)
                        theirs = torchvision_op(x, name, magnitude, interpolation, contiguous=contiguous)
                        assert_same(ours, theirs, f"{name} on {x.shape}, contiguous={contiguous}")


def image_whose_sum_torch_rounds(seed):
    """A 512 x 512 one-channel image whose levels add up to exactly 197 per pixel, with a level of 100 now
    and then, which torch's float32 cascade sum (one thread) misses by a few units: a mean rounded once
    would be 197.0, torch's is a unit in the last place off, and at factors near 2 a level of 100 lands
    on the other side of an integer."""
    rng = np.random.default_rng(seed)
    levels = rng.integers(150, 251, (512, 512, 1)).astype(np.int64)
    levels[::7, ::5] = 100
    short = 197 * levels.size - int(levels.sum())
    nudged = rng.choice(np.flatnonzero(levels.ravel() > 150), abs(short), replace=False)
    levels.reshape(-1)[nudged] += np.sign(short)
    return levels.astype(np.uint8)


def test_contrast_mean_is_torchs_cascade_sum():
    image = image_whose_sum_torch_rounds(5)
    assert int(image.sum(dtype=np.int64)) == 197 * image.size
    with torch_threads(1):
        torch_sum = torch.from_numpy(image.astype(np.float32)).sum().item()
        assert torch_sum != 197 * image.size  # the case this test is for: torch's sum is not exact
        assert float(ops.wb_tv_torch_sum32(image, 1)) == torch_sum
        missed = {}
        for factor in (1.99, 1.9, 1.5, 0.01):
            theirs = torchvision_op(image, "contrast", factor)
            assert_same(wb_tv_contrast(image, factor, threads=1), theirs, f"contrast {factor}")
            exact = ops.wb_tv_to_uint8(ops.wb_tv_fma32(np.float32(197), np.float32(1 - factor),
                                                       image.astype(np.float32) * np.float32(factor)))
            missed[factor] = np.count_nonzero(exact != theirs)
        # The exactly rounded mean would not do: at 1.9 and 0.01 it misses thousands of pixels.
        assert missed[1.9] > 1000 and missed[0.01] > 1000, missed


def few_levels(seed, shape):
    """An image of the levels 10, 70, 130 and 190, whose blends often land on integers."""
    return (np.random.default_rng(seed).integers(0, 4, shape) * 60 + 10).astype(np.uint8)


@pytest.mark.parametrize("threads", [1, 2])
def test_contrast_follows_torchs_threads_and_unfused_tail(photos, threads):
    """Small images of few levels, where torch's unfused tail rounds otherwise than the fused rest (with
    seeds 12, 14 and 0 of these shapes, either model alone misses, and so does the other memory order);
    large ones split across threads (at least 32768 values each)."""
    images = [few_levels(seed, shape) for shape in ((5, 3, 1), (9, 2, 3)) for seed in range(60)]
    images += [few_levels(1, (97, 131, 3)), image_whose_sum_torch_rounds(5), photos[1]]
    with torch_threads(threads):
        assert torch.get_num_threads() == threads
        for image in images:
            for factor in (0.5, 1.1, 1.3) if image.size < 1000 else (0.1, 1.1, 1.27, 1.99):
                for contiguous in (False, True):
                    ours = wb_tv_contrast(image, factor, threads=threads, channels_last=not contiguous)
                    theirs = torchvision_op(image, "contrast", factor, contiguous=contiguous)
                    assert_same(ours, theirs, f"contrast {factor} on {image.shape}, {threads} threads, "
                                              f"contiguous={contiguous}")


def test_unfused_span_and_parallel_chunks():
    assert [ops.wb_tv_unfused_span(16 + t) for t in (0, 1, 4, 5, 8, 9, 12, 13, 15)] == [
        (16, 16), (17, 17), (17, 17), (17, 21), (17, 21), (17, 25), (17, 25), (17, 29), (17, 29)]
    assert ops.wb_tv_parallel_chunks(32767, 8) == [(0, 32767)]
    assert ops.wb_tv_parallel_chunks(38121, 4) == [(0, 19061), (19061, 38121)]


def nearest_float32(value):
    """The float32 nearest the exact rational `value`, ties to the even one: an oracle by exhaustion."""
    guess = np.float32(float(value))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    distances = [abs(Fraction(float(c)) - value) for c in candidates]
    best = min(distances)
    ties = [c for c, d in zip(candidates, distances) if d == best]
    return min(ties, key=lambda c: int(np.array(c).view(np.int32)) & 1)


def test_fused_multiply_add_rounds_once():
    a = np.float32(1 + 2 ** -12)
    c = np.float32(-(1 + 2 ** -11))
    # a * a = 1 + 2**-11 + 2**-24: rounded first it is 1 + 2**-11 and the sum 0; fused, 2**-24.
    assert float(ops.wb_tv_fma32(a, a, c)) == 2.0 ** -24
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(3000).astype(np.float32) for _ in range(2))
    # Addends near the product's magnitude, and exactly at midpoints between float32 values, where
    # rounding the float64 sum first would round twice.
    z = np.concatenate([rng.standard_normal(1000), -(x * y)[1000:2000] * (1 + rng.integers(-8, 9, 1000) * 2.0 ** -20),
                        rng.standard_normal(1000) * 1e-6]).astype(np.float32)
    exact = [nearest_float32(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r))) for p, q, r in zip(x, y, z)]
    assert np.array_equal(ops.wb_tv_fma32(x, y, z), np.array(exact, np.float32))


def test_contract_details():
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    out = wb_tv_policy_op(image, "identity", NAN)
    assert out is not image and np.array_equal(out, image)
    assert np.array_equal(wb_tv_policy_op(image, "posterize", 8.9), image)  # int(8.9) = 8 bits: unchanged
    assert not wb_tv_policy_op(image, "posterize", 0).any()
    assert np.array_equal(wb_tv_policy_op(image, "translate_x", 0.99), image)  # int(0.99) = 0
    assert np.array_equal(wb_tv_policy_op(image, "solarize", 0.0), 255 - image)
    for bad in [("blur", 1.0, "nearest"), ("rotate", 10.0, "bicubic"), ("posterize", 9, "nearest"),
                ("solarize", 1.01, "nearest")]:
        with pytest.raises(ValueError):
            wb_tv_policy_op(image, *bad)
    with pytest.raises(ValueError):
        wb_tv_policy_op(image.astype(np.float32), "invert", NAN)
    with pytest.raises(ValueError):
        wb_tv_policy_op(np.zeros((4, 4, 2), np.uint8), "invert", NAN)


def test_docstring_examples():
    result = doctest.testmod(ops, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 20 and result.failed == 0


def test_module_keeps_the_exports_rules():
    """The Albumentations export copies the module's definitions into one file: every top-level name
    wb_tv_ / WB_TV_, imports only math, numpy as np and cv2 at the top, none inside a function."""
    tree = ast.parse(Path(ops.__file__).read_text())
    imports = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            assert isinstance(node, ast.Import), "no from-imports, relative or not"
            imports += [(a.name, a.asname) for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            assert node.name.startswith("wb_tv_"), node.name
        elif isinstance(node, ast.Assign):
            assert all(t.id.startswith("WB_TV_") for t in node.targets), ast.dump(node)
        else:
            assert isinstance(node, ast.Expr) and node is tree.body[0], ast.dump(node)  # the docstring
    assert sorted(imports) == [("cv2", None), ("math", None), ("numpy", "np")]
    nested = [n for f in tree.body if isinstance(f, ast.FunctionDef) for n in ast.walk(f)
              if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not nested
