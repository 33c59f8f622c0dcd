"""The torch policy ops (workbench/runtime/kornia_modules/torchvision_policy_ops.py) are bit for bit torchvision's:
each of the 15 ops of v2.RandAugment / v2.TrivialAugmentWide / v2.AutoAugment, run by `tv_policy_op` on a uint8
CHW tensor, equals torchvision's `_apply_image_or_video_transform` on the same tensor, with nearest and bilinear
resampling, at every magnitude those policies draw (both signs) and at a few more (rotations by multiples of 90
degrees, posterize 0 to 8 bits, solarize at 0 and 1), on sample photos at their own sizes, at 150 x 200, at
97 x 131, at 5 x 7, and on flat and two-valued images (the histogram ops' corner cases). The magnitudes are also
passed the other way round, from the reported units (shear angle, factor) to torchvision's. Exact equality is
asserted for every op: the module repeats torchvision's float32 arithmetic call for call, so not even a rounding
tie may differ.
"""
import ast
import importlib
import math
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

# CI must compare with the real thing, never skip it: scripts/test.sh installs torchvision.
torchvision = importlib.import_module("torchvision") if os.environ.get("CI") else pytest.importorskip("torchvision")
import torch  # noqa: E402
from torchvision.transforms import v2  # noqa: E402
from torchvision.transforms import InterpolationMode  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.runtime.kornia_modules import torchvision_policy_ops as ops  # noqa: E402
from workbench.runtime.kornia_modules.torchvision_policy_ops import tv_policy_op  # noqa: E402

# Our op name -> torchvision's transform_id.
TRANSFORM_IDS = {"identity": "Identity", "shear_x": "ShearX", "shear_y": "ShearY", "translate_x": "TranslateX",
                 "translate_y": "TranslateY", "rotate": "Rotate", "brightness": "Brightness", "color": "Color",
                 "contrast": "Contrast", "sharpness": "Sharpness", "posterize": "Posterize", "solarize": "Solarize",
                 "auto_contrast": "AutoContrast", "equalize": "Equalize", "invert": "Invert"}
GEOMETRIC = ("shear_x", "shear_y", "translate_x", "translate_y", "rotate")
FACTORS = ("brightness", "color", "contrast", "sharpness")
POLICIES = ((v2.RandAugment, 31), (v2.TrivialAugmentWide, 31), (v2.AutoAugment, 10))
# Magnitudes beyond the policies' bins: the rotations torchvision does by index shuffles, every posterize depth,
# solarize's ends, and the colour factors' extremes of the contract (0.01 and 1.99).
EXTRA = {"Rotate": (90.0, -90.0, 180.0, -180.0, 270.0, 360.0, 0.5), "Posterize": tuple(range(9)),
         "Solarize": (0.0, 1.0, 0.5, 1.0 / 3.0), "Brightness": (-0.99, 0.99), "Color": (-0.99, 0.99),
         "Contrast": (-0.99, 0.99), "Sharpness": (-0.99, 0.99)}


def _chw(image):
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()


def _resized(image, height, width):
    return cv2.resize(np.asarray(image), (width, height), interpolation=cv2.INTER_AREA)


@pytest.fixture(scope="module")
def images():
    """(label, uint8 CHW tensor): the smallest photo at its own size, photos resized (to a square too, where
    torchvision turns by 90 degrees with an index shuffle), tiny, flat and two-valued."""
    photos = [np.asarray(p) for p in wb.load_images("sample_data")]
    smallest = min(range(len(photos)), key=lambda i: photos[i].size)
    out = [(f"photo{smallest} {photos[smallest].shape[:2]}", _chw(photos[smallest]))]
    out += [(f"photo{i} 150x200", _chw(_resized(photos[i], 150, 200))) for i in range(2, 4)]
    out += [("photo0 128x128", _chw(_resized(photos[0], 128, 128)))]
    out += [("photo4 97x131", _chw(_resized(photos[4], 97, 131)))]
    out += [("photo0 5x7", _chw(_resized(photos[0], 5, 7)))]
    two = np.zeros((6, 9, 3), np.uint8)
    two[:, 4:, 0], two[3:, :, 1] = 200, 31
    out += [("flat", torch.full((3, 8, 10), 77, dtype=torch.uint8)), ("two-valued", _chw(two))]
    return out


def _policy_magnitudes(transform_id, height, width):
    """torchvision's magnitudes for `transform_id` on an image of this size: a spread of the bins of each policy
    (the first, the middle and the last), negated too where the policy signs them, and EXTRA's."""
    values = set(EXTRA.get(transform_id, ()))
    for policy, bins in POLICIES:
        space = policy._AUGMENTATION_SPACE
        if transform_id not in space:
            continue
        magnitudes_of, signed = space[transform_id]
        magnitudes = magnitudes_of(bins, height, width)
        if magnitudes is None:
            values.add(0.0)
            continue
        for index in (0, bins // 2, bins - 1):
            value = float(magnitudes[index])
            values.update((value, -value) if signed else (value,))
    return sorted(values)


def _ours(name, tv_magnitude):
    """The magnitude in reported units of torchvision's `tv_magnitude`."""
    if name in ("shear_x", "shear_y"):
        return math.degrees(math.atan(tv_magnitude))
    if name in FACTORS:
        return 1.0 + tv_magnitude
    if name in ("identity", "auto_contrast", "equalize", "invert"):
        return math.nan
    return tv_magnitude


def _torchvision(image, name, tv_magnitude, interpolation):
    # The enum, not its string: torchvision 0.26 (the GPU machines') takes no string here.
    mode = InterpolationMode(interpolation)
    policy = v2.RandAugment(interpolation=mode)
    return policy._apply_image_or_video_transform(image, TRANSFORM_IDS[name], tv_magnitude,
                                                  interpolation=mode, fill=policy._fill)


def _mismatch(ours, theirs):
    """'' when equal, else the max abs difference, the share of differing pixels and the MAE in levels."""
    assert ours.dtype == torch.uint8 and ours.shape == theirs.shape, (ours.dtype, ours.shape, theirs.shape)
    if torch.equal(ours, theirs):
        return ""
    diff = (ours.int() - theirs.int()).abs()
    share = float(diff.amax(dim=0).ne(0).double().mean())
    return f"max {int(diff.max())}, {share:.2%} of pixels, MAE {float(diff.double().mean()):.4f}"


def _failures(images, name, pairs_of, interpolation):
    """'image, magnitudes: mismatch' for each (image, magnitude) where ours and torchvision's differ."""
    failures = []
    for label, image in images:
        for tv_magnitude, our_magnitude in pairs_of(image):
            ours = tv_policy_op(image, name, our_magnitude, interpolation=interpolation)
            mismatch = _mismatch(ours, _torchvision(image, name, tv_magnitude, interpolation))
            if mismatch:
                failures.append(f"{label} torchvision {tv_magnitude!r} ours {our_magnitude!r}: {mismatch}")
    return failures


# (name, interpolation): only the geometric ops resample.
CASES = [(n, "nearest") for n in TRANSFORM_IDS] + [(n, "bilinear") for n in GEOMETRIC]


@pytest.mark.parametrize("name, interpolation", CASES)
def test_policy_magnitudes_match_torchvision(images, name, interpolation):
    def pairs(image):
        height, width = image.shape[-2:]
        return [(m, _ours(name, m)) for m in _policy_magnitudes(TRANSFORM_IDS[name], height, width)]

    failures = _failures(images, name, pairs, interpolation)
    assert not failures, "\n".join(failures[:20])


# Magnitudes in reported units, turned into torchvision's as the contract says.
REPORTED = {"shear_x": (0.5, -16.7, 44.7, -44.7), "shear_y": (0.5, -16.7, 44.7, -44.7),
            "translate_x": (0.9, -1.5, 31.99, -67.8), "translate_y": (0.9, -1.5, 31.99, -67.8),
            "rotate": (-0.25, 7.5, -135.0, 200.0), "posterize": (0.0, 2.9, 7.99),
            **{n: (0.01, 0.3, 1.05, 1.99) for n in FACTORS}}


def _tv_magnitude(name, ours):
    if name in ("shear_x", "shear_y"):
        return math.tan(math.radians(ours))
    if name in FACTORS:
        return ours - 1.0
    return ours


@pytest.mark.parametrize("name, interpolation", [c for c in CASES if c[0] in REPORTED])
def test_reported_units_match_torchvision(images, name, interpolation):
    some = [images[1], images[3], images[-3]]
    failures = _failures(some, name, lambda image: [(_tv_magnitude(name, m), m) for m in REPORTED[name]],
                         interpolation)
    assert not failures, "\n".join(failures)


def test_strided_input_matches_torchvision(images):
    """A CHW view of an HWC array (what torch.from_numpy(...).permute gives) is handled as torchvision does."""
    image = images[4][1].permute(1, 2, 0).contiguous().permute(2, 0, 1)
    assert not image.is_contiguous()
    for name, magnitude in (("sharpness", 1.7), ("color", 0.2), ("equalize", math.nan), ("rotate", 33.0),
                            ("shear_y", -20.0)):
        for interpolation in ("nearest", "bilinear"):
            ours = tv_policy_op(image, name, magnitude, interpolation)
            theirs = _torchvision(image, name, _tv_magnitude(name, magnitude) if name != "equalize" else 0.0,
                                  interpolation)
            assert torch.equal(ours, theirs), (name, interpolation)


def test_known_values():
    """A few results worked out by hand (torchvision's quirks included)."""
    white = torch.full((3, 1, 1), 255, dtype=torch.uint8)
    assert tv_policy_op(white, "color", 0.0).flatten().tolist() == [254, 254, 254]  # the weights add up to 0.9999
    row = torch.tensor([[[0, 100, 200, 255]]], dtype=torch.uint8).expand(3, 1, 4)
    assert tv_policy_op(row, "brightness", 1.3)[0].tolist() == [[0, 130, 255, 255]]
    assert tv_policy_op(row, "posterize", 3.9)[0].tolist() == [[0, 96, 192, 224]]  # int(3.9) = 3 bits
    assert tv_policy_op(row, "solarize", 0.0)[0].tolist() == [[255, 155, 55, 0]]
    assert tv_policy_op(row, "solarize", 1.0)[0].tolist() == [[0, 100, 200, 0]]
    ramp = torch.arange(12, dtype=torch.uint8).view(1, 3, 4).expand(3, 3, 4)
    assert tv_policy_op(ramp, "translate_x", -1.9)[0].tolist() == [[1, 2, 3, 0], [5, 6, 7, 0], [9, 10, 11, 0]]
    assert tv_policy_op(ramp, "translate_y", 1.0)[0].tolist() == [[0, 0, 0, 0], [0, 1, 2, 3], [4, 5, 6, 7]]
    # ShearX about the top-left corner (an edge, not a pixel centre): row y is read from x + (y + 0.5) * tan.
    assert tv_policy_op(ramp, "shear_x", math.degrees(math.atan(0.5)))[0].tolist() == [
        [0, 1, 2, 3], [5, 6, 7, 0], [9, 10, 11, 0]]
    # At tan = 1 every read falls half-way between two pixels: grid_sample's nearest rounds half to even.
    assert tv_policy_op(ramp, "shear_x", math.degrees(math.atan(1.0)))[0].tolist() == [
        [0, 2, 2, 0], [6, 6, 0, 0], [10, 0, 0, 0]]


def test_contract_errors():
    image = torch.zeros((3, 4, 4), dtype=torch.uint8)
    for call in (lambda: tv_policy_op(image, "blur", 1.0), lambda: tv_policy_op(image, "rotate", 3.0, "bicubic"),
                 lambda: tv_policy_op(image, "posterize", 9.0), lambda: tv_policy_op(image, "contrast", -0.5),
                 lambda: tv_policy_op(image, "solarize", 1.5)):
        with pytest.raises(ValueError):
            call()
    for bad in (image.float(), image[None]):
        with pytest.raises(TypeError):
            tv_policy_op(bad, "invert", math.nan)


def test_module_names_and_imports():
    """Every top-level name is tv_policy_* / TV_POLICY_* (the Kornia export pastes all kornia_modules into one
    file), the module imports only math and torch, and it offers exactly the 15 ops of the contract."""
    tree = ast.parse(Path(ops.__file__).read_text(encoding="utf-8"))
    names, imported = [], []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets]
        elif isinstance(node, ast.Import):
            imported += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            imported.append(f"from {node.module}")
    assert names and all(n.startswith(("tv_policy_", "TV_POLICY_")) for n in names), names
    assert sorted(imported) == ["math", "torch"]
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and n not in tree.body]
    assert sorted(ops.TV_POLICY_OP_NAMES) == sorted(TRANSFORM_IDS)


@pytest.mark.cuda
def test_cuda_matches_torchvision_on_cuda(images):
    """On CUDA the same calls run there: uint8 results on the input's device, equal to torchvision's on CUDA."""
    for label, image in images[:6]:
        image = image.cuda()
        for name in TRANSFORM_IDS:
            for interpolation in ("nearest", "bilinear"):
                tv_magnitude = {"Posterize": 3.0, "Solarize": 0.4, "Rotate": -27.0, "TranslateX": 11.0,
                                "TranslateY": -7.0, "ShearX": 0.3, "ShearY": -0.5}.get(TRANSFORM_IDS[name], 0.4)
                tv_magnitude = 0.0 if name in ("identity", "auto_contrast", "equalize", "invert") else tv_magnitude
                ours = tv_policy_op(image, name, _ours(name, tv_magnitude), interpolation)
                assert ours.device == image.device and ours.dtype == torch.uint8
                theirs = _torchvision(image, name, tv_magnitude, interpolation)
                assert torch.equal(ours, theirs), (label, name, interpolation, _mismatch(ours, theirs))
