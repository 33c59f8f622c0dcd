"""Chain.from_torchvision: torchvision v2 pipelines become chains (skipped without torchvision)."""
import pytest

torchvision = pytest.importorskip("torchvision")
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
    pipeline = v2.Compose([v2.RandomHorizontalFlip(), v2.Resize(256), v2.ElasticTransform()])
    with pytest.warns(UserWarning, match=r"from_torchvision: 2 transform\(s\) left out"):
        chain = wb.Chain.from_torchvision(pipeline)
    assert [s.op for s in chain.steps] == ["HorizontalFlip"]
    assert [u.position for u in chain.unmapped] == ["2", "3"]
    assert "short side" in chain.unmapped[0].reason and "v2.ElasticTransform" in chain.unmapped[1].reason
    with pytest.raises(wb.WorkbenchError, match=r"2 transform\(s\) could not be mapped"):
        wb.Chain.from_torchvision(pipeline, strict=True)


def test_policies_map_with_notes():
    chain = wb.Chain.from_torchvision([v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10), v2.RandAugment(num_ops=2,
                                                                                                   magnitude=9)])
    auto, rand = chain.steps
    assert auto.params == {"policy": "cifar10"} and rand.params["n"] == 2 and rand.params["magnitude"] == 9
    assert "invert" not in rand.params["ops"] and len(chain.notes) == 2
