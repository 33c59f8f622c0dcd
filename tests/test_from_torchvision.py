"""Chain.from_torchvision: torchvision v2 pipelines become chains (skipped without torchvision)."""
import importlib
import os
import re

import pytest

# CI must compare with the real thing, never skip it: scripts/test.sh installs torchvision.
torchvision = importlib.import_module("torchvision") if os.environ.get("CI") else pytest.importorskip("torchvision")
import torch  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

import workbench as wb  # noqa: E402


def test_a_reference_recipe_imports_with_its_settings():
    pipeline = v2.Compose([
        v2.ToImage(), v2.RandomResizedCrop(160, scale=(0.3, 1.0), antialias=True), v2.RandomHorizontalFlip(p=0.4),
        v2.ColorJitter(brightness=0.3), v2.RandomSolarize(threshold=192, p=0.2), v2.RandomPosterize(bits=5, p=0.3),
        v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean=[0.5, 0.5, 0.5], std=[0.25, 0.25, 0.25]),
        v2.RandomErasing(p=0.25, value=0)])
    chain = wb.Chain.from_torchvision(pipeline, seed=5)
    assert [s.op for s in chain.steps] == ["RandomResizedCrop", "HorizontalFlip", "Brightness", "Solarize", "Posterize",
                                           "Normalize", "Erase"]
    assert chain.seed == 5 and not chain.unmapped
    crop, flip, bright, solarize, posterize, _, erase = chain.steps
    assert crop.params["size"] == [160, 160] and crop.params["scale"] == [0.3, 1.0]
    assert flip.p == 0.4 and bright.params["factor"] == pytest.approx([0.7, 1.3])
    assert solarize.params["threshold"] == pytest.approx([192 / 255, 192 / 255]) and solarize.p == 0.2
    assert posterize.params["bits"] == [5, 5] and erase.p == 0.25
    assert any("uint8 level" in note for note in chain.notes)


def test_containers_become_groups():
    chain = wb.Chain.from_torchvision(v2.Compose([
        v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
        v2.RandomChoice([v2.RandomRotation(10), v2.RandomVerticalFlip(p=1.0)], p=[1.0, 3.0])]))
    jitter, choice = chain.steps
    assert jitter.op == "ColorJitter" and jitter.p == 0.8
    data = chain.to_dict()["steps"][1]
    assert choice.op == "OneOf" and data["params"]["weights"] == pytest.approx([0.25, 0.75])
    assert [s["op"] for s in data["steps"]] == ["Rotate", "VerticalFlip"]


def test_unmapped_transforms_are_listed_and_strict_raises():
    pipeline = v2.Compose([v2.RandomHorizontalFlip(), v2.Resize(256, max_size=300), v2.FiveCrop(32)])
    with pytest.warns(UserWarning, match=r"from_torchvision: 2 transform\(s\) left out"):
        chain = wb.Chain.from_torchvision(pipeline)
    assert [s.op for s in chain.steps] == ["HorizontalFlip"]
    assert [u.position for u in chain.unmapped] == ["2", "3"]
    assert "no bound on the long side" in chain.unmapped[0].reason
    assert "v2.FiveCrop" in chain.unmapped[1].reason and "nearest op is CenterCrop" in chain.unmapped[1].reason
    with pytest.raises(wb.WorkbenchError, match=r"2 transform\(s\) could not be mapped"):
        wb.Chain.from_torchvision(pipeline, strict=True)


def test_policies_map_to_torchvisions_own_policies():
    """torchvision's policies import as the ops of its semantics (not Kornia's RandAugment & co.), with their
    settings, and no note: they do what torchvision does (tests/test_torchvision_policies.py)."""
    chain = wb.Chain.from_torchvision([
        v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10), v2.RandAugment(num_ops=3, magnitude=9),
        v2.TrivialAugmentWide(num_magnitude_bins=20, interpolation=v2.InterpolationMode.BILINEAR),
        v2.RandAugment(magnitude=3, num_magnitude_bins=11)])
    assert not chain.unmapped and not chain.notes
    assert [(s.op, s.params) for s in chain.steps] == [
        ("TorchvisionAutoAugment", {"policy": "cifar10", "interpolation": "nearest"}),
        ("TorchvisionRandAugment", {"num_ops": 3, "magnitude": 9, "interpolation": "nearest"}),
        ("TorchvisionTrivialAugmentWide", {"num_magnitude_bins": 20, "interpolation": "bilinear"}),
        ("TorchvisionRandAugment", {"num_ops": 2, "magnitude": 9, "interpolation": "nearest"})]  # 3/10 = 9/30


@pytest.mark.parametrize("transform, reason", [
    (lambda: v2.RandAugment(magnitude=2, num_magnitude_bins=8), "which no bin of torchvision's default 31 is"),
    (lambda: v2.RandAugment(interpolation=v2.InterpolationMode.BICUBIC), "resamples 'nearest'"),
    (lambda: v2.TrivialAugmentWide(fill=128), "fills the uncovered area with 0"),
    (lambda: v2.RandAugment(num_ops=0), "1 to 4 ops"),
])
def test_policies_refuse_settings_they_cannot_run_with_the_reason(transform, reason):
    chain = wb.Chain.from_torchvision([transform()])
    assert not chain.steps and reason in chain.unmapped[0].reason


def test_transforms_with_a_near_op_map_with_the_difference_noted():
    chain = wb.Chain.from_torchvision(v2.Compose([
        v2.Resize(256), v2.Grayscale(), v2.RandomChannelPermutation(), v2.GaussianNoise(sigma=0.05),
        v2.JPEG((40, 90)), v2.ElasticTransform(alpha=60.0, sigma=6.0), v2.RGB(), v2.SanitizeBoundingBoxes()]))
    assert not chain.unmapped
    assert [(s.op, s.p) for s in chain.steps] == [
        ("SmallestMaxSize", 1.0), ("Grayscale", 1.0), ("ChannelShuffle", 1.0), ("GaussianNoise", 1.0),
        ("JpegCompression", 1.0), ("ElasticTransform", 1.0)]
    resize, _, _, noise, jpeg, elastic = chain.steps
    assert resize.params == {"max_size": 256, "interpolation": "bilinear", "antialias": True, "rounding": "down"}
    assert noise.params["std"] == [0.05, 0.05] and jpeg.params["quality"] == [40.0, 90.0]
    # torchvision's alpha is in half-image grid units: alpha / 2 pixels, uniform noise.
    assert elastic.params["alpha"] == 30.0 and elastic.params["sigma"] == 6.0
    assert elastic.params["noise_distribution"] == "uniform"
    assert any("Grayscale(num_output_channels=1)" in n for n in chain.notes)


@pytest.mark.parametrize("transform, reason", [
    (v2.GaussianNoise(mean=0.1), "zero-mean"),
    (v2.Resize(64, interpolation=v2.InterpolationMode.NEAREST), "NEAREST_EXACT"),
    (v2.ElasticTransform(alpha=(10.0, 20.0)), "one alpha and one sigma"),
    (v2.RandomCrop(32, padding=[1, 2]), "differs per side"),
])
def test_near_misses_are_listed_with_the_reason(transform, reason):
    with pytest.warns(UserWarning):
        chain = wb.Chain.from_torchvision([transform])
    assert not chain.steps and len(chain.unmapped) == 1
    assert re.search(reason, chain.unmapped[0].reason), chain.unmapped[0].reason


def test_random_crop_with_a_margin_is_pad_and_without_one_random_crop():
    chain = wb.Chain.from_torchvision([v2.RandomCrop(32, padding=0), v2.RandomCrop(32, padding=4)])
    assert [(s.op, s.params.get("padding")) for s in chain.steps] == [("RandomCrop", None), ("Pad", 4)]


def test_batch_mixing_maps_to_torchvisions_own():
    chain = wb.Chain.from_torchvision([v2.MixUp(num_classes=10), v2.CutMix(alpha=1.0, num_classes=10),
                                       v2.MixUp(alpha=0.2, num_classes=10), v2.CutMix(alpha=0.5, num_classes=10)])
    assert [(s.op, s.params) for s in chain.steps] == [("TorchvisionMixUp", {"alpha": 1.0}),
                                                       ("TorchvisionCutMix", {"alpha": 1.0}),
                                                       ("TorchvisionMixUp", {"alpha": 0.2}),
                                                       ("TorchvisionCutMix", {"alpha": 0.5})]
    assert not chain.unmapped and not chain.notes
