"""Chain.from_albumentations: a CPU pipeline moves to the GPU engines in two lines."""
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402
import cv2  # noqa: E402
from albumentations.pytorch import ToTensorV2  # noqa: E402

import workbench as wb  # noqa: E402

from conftest import ROOT, run_script  # noqa: E402


def realistic_pipeline():
    """An ImageNet-style training pipeline as people write it for Albumentations."""
    return A.Compose([
        A.RandomResizedCrop(size=(160, 160), scale=(0.35, 1.0)),
        A.HorizontalFlip(p=0.5),
        A.Affine(rotate=(-15, 15), scale=(0.9, 1.1), border_mode=cv2.BORDER_CONSTANT, fill=0, p=0.5),
        A.ColorJitter(brightness=0.2, contrast=0.2, saturation=0.2, hue=0.05, p=0.8),
        A.ToGray(p=0.1),
        A.GaussianBlur(blur_limit=(5, 5), sigma_limit=(0.1, 2.0), p=0.2),
        A.GaussNoise(std_range=(0.02, 0.1), p=0.2),
        A.OneOf([A.MotionBlur(), A.MedianBlur()], p=0.2),
        A.Erasing(p=0.25),
        A.Normalize(),
        ToTensorV2(),
    ], seed=137)


MAPPED = ["RandomResizedCrop", "HorizontalFlip", "Affine", "ColorJitter", "Grayscale", "GaussianBlur", "GaussianNoise",
          "OneOf", "Erase", "Normalize"]


@pytest.fixture(scope="module")
def imported():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is left out, so nothing is warned about
        return wb.Chain.from_albumentations(realistic_pipeline())


def test_realistic_pipeline_maps_every_transform(imported):
    assert [s.op for s in imported.steps] == MAPPED and imported.unmapped == []
    assert imported.seed == 137
    assert [s.p for s in imported.steps] == [1.0, 0.5, 0.5, 0.8, 0.1, 0.2, 0.2, 0.2, 0.25, 1.0]
    assert imported.steps[0].params["size"] == [160, 160] and imported.steps[0].params["scale"] == [0.35, 1.0]
    assert imported.steps[3].params["brightness"] == pytest.approx([0.8, 1.2])
    assert imported.steps[6].params["std"] == pytest.approx([0.02, 0.1])  # drawn per image, as A does
    assert imported.steps[-1].params["mean"] == pytest.approx([0.485, 0.456, 0.406])
    # The OneOf is a group: the chosen child is forced (A's OneOf ignores the children's p), and
    # A.MotionBlur's default kernel shift comes along.
    one_of = imported.steps[7]
    assert [(s.op, s.p) for s in one_of.steps] == [("MotionBlur", 1.0), ("MedianBlur", 1.0)]
    assert one_of.params == {"weights": []} and one_of.steps[0].params["allow_shifted"] is True
    # The chain is a normal chain: it round-trips and validates.
    assert wb.Chain.from_dict(imported.to_dict()).to_dict() == imported.to_dict()


@pytest.mark.parametrize("backend", ["dali", "kornia"])
def test_imported_pipeline_exports_and_runs_on_the_sample_images(imported, backend, tmp_path):
    """Export the imported chain and run the file on the bundled photos: its --save equals
    chain.run, and the images are what the pipeline promises (160x160, normalised)."""
    script = tmp_path / f"from_albumentations_{backend}.py"
    imported.export(backend, path=script.name, folder=tmp_path)
    out = tmp_path / "out.npz"
    run_script(script, "--images", str(ROOT / "sample_data"), "--seed", "3", "--save", str(out))
    saved = np.load(out)["images"]
    expected = imported.run(wb.load_images(), backend=backend, device="cpu", seed=3).images
    assert saved.shape == (12, 160, 160, 3) and saved.dtype == np.float32
    assert np.array_equal(saved, expected)
    # Normalised photos: roughly zero mean, unit spread, not constant.
    assert -1.0 < float(saved.mean()) < 1.0 and 0.5 < float(saved.std()) < 2.0


def test_the_imported_chain_agrees_with_the_original_on_deterministic_steps():
    """With p = 1 and collapsed ranges, the imported chain on Kornia gives what the original
    Albumentations pipeline gives (within the ops' stated parity)."""
    pipeline = A.Compose([A.Resize(height=120, width=160), A.ColorJitter(brightness=(1.2, 1.2), contrast=(1, 1),
                                                                          saturation=(1, 1), hue=(0, 0), p=1.0),
                          A.Normalize()], seed=0)
    chain = wb.Chain.from_albumentations(pipeline)
    assert [s.op for s in chain.steps] == ["Resize", "Brightness", "Normalize"] and not chain.unmapped
    images = wb.load_images()[:4]
    original = np.stack([pipeline(image=i)["image"] for i in images])
    kornia = chain.run(images, backend="kornia").images
    albumentations = chain.run(images, backend="albumentations").images
    assert np.array_equal(original, albumentations)
    assert np.abs(kornia - original).mean() < 0.05  # normalised units: about 3/255 before the std


def test_unmapped_transforms_are_listed_with_the_reason():
    pipeline = A.Compose([A.HorizontalFlip(p=0.5), A.RingingOvershoot(p=1.0),
                          A.SomeOf([A.VerticalFlip(), A.HorizontalFlip()], n=2, replace=True, p=1.0)])
    with pytest.warns(UserWarning) as caught:
        chain = wb.Chain.from_albumentations(pipeline)
    assert [s.op for s in chain.steps] == ["HorizontalFlip"]
    assert [(u.position, u.transform) for u in chain.unmapped] == [("2", "A.RingingOvershoot(p=1.0)"),
                                                                   ("3", "A.SomeOf(p=1.0)")]
    assert "no workbench op runs A.RingingOvershoot; the nearest op is Sharpness" in chain.unmapped[0].reason
    assert "replace=True" in chain.unmapped[1].reason
    assert "A.RingingOvershoot" in str(caught[0].message) and "chain.unmapped" in str(caught[0].message)
    with pytest.raises(wb.WorkbenchError, match=r"2 transform\(s\) could not be mapped:\n  2 A.RingingOvershoot"):
        wb.Chain.from_albumentations(pipeline, strict=True)


def test_containers_become_groups_with_albumentations_semantics():
    pipeline = A.Compose([
        A.OneOf([A.VerticalFlip(p=1.0), A.InvertImg(p=0.5)], p=0.6),  # weights 1 : 0.5
        A.SomeOf([A.HorizontalFlip(p=0.3), A.Solarize(p=1.0), A.InvertImg(p=1.0)], n=2, p=0.9),
        A.Sequential([A.VerticalFlip(p=1.0), A.OneOf([A.InvertImg(), A.HorizontalFlip()])], p=0.5),
        A.OneOf([A.Resize(32, 32), A.InvertImg()], p=1.0),
    ])
    chain = wb.Chain.from_albumentations(pipeline)
    one_of, some_of, sequential, sized = chain.steps
    # OneOf: its children's p become its weights, and the chosen child is forced (p = 1).
    assert one_of.op == "OneOf" and one_of.p == 0.6 and one_of.params == {"weights": [1.0, 0.5]}
    assert [(s.op, s.p) for s in one_of.steps] == [("VerticalFlip", 1.0), ("Invert", 1.0)]
    # SomeOf: uniform choice of n, each chosen child keeps its own p.
    assert some_of.op == "SomeOf" and some_of.params == {"n": 2} and some_of.p == 0.9
    assert [(s.op, s.p) for s in some_of.steps] == [("HorizontalFlip", 0.3), ("Solarize", 1.0), ("Invert", 1.0)]
    # Sequential with p < 1 gates its children together; groups nest.
    assert sequential.op == "Sequential" and sequential.p == 0.5
    assert [s.op for s in sequential.steps] == ["VerticalFlip", "OneOf"]
    # A size-changing child: the samples that chose it leave the group at its size.
    assert [s.op for s in sized.steps] == ["Resize", "Invert"] and not chain.unmapped
    images = [np.ascontiguousarray(i[:64, :64]) for i in wb.load_images()[:3]] * 4
    for backend in ("kornia", "dali", "albumentations"):
        result = chain.run(images, backend=backend)
        resized = [rows[3]["chosen"] == [1] for rows in result.params]
        assert [image.shape[:2] for image in result.images] == [(32, 32) if r else (64, 64) for r in resized]
        assert 0 < sum(resized) < len(images), backend


def test_nested_sequences_open_up_and_other_inputs_are_refused():
    chain = wb.Chain.from_albumentations([A.Sequential([A.HorizontalFlip(p=1.0), A.VerticalFlip(p=0.3)], p=1.0)],
                                         seed=4)
    assert [(s.op, s.p) for s in chain.steps] == [("HorizontalFlip", 1.0), ("VerticalFlip", 0.3)] and chain.seed == 4
    with pytest.raises(wb.WorkbenchError, match="takes an albumentations Compose, a transform or a list"):
        wb.Chain.from_albumentations("A.HorizontalFlip()")


def test_out_of_range_settings_are_reported_not_crashing():
    """A setting the op's spec refuses (a 0.001 px blur sigma is below its range) becomes an
    unmapped entry naming the parameter."""
    with pytest.warns(UserWarning):
        chain = wb.Chain.from_albumentations([A.GaussianBlur(blur_limit=(5, 5), sigma_limit=(0.001, 0.002))])
    assert chain.steps == [] and "sigma" in chain.unmapped[0].reason


def test_color_jitter_imports_in_a_random_order_per_image_as_albumentations_applies_it():
    chain = wb.Chain.from_albumentations([A.ColorJitter(brightness=0.3, contrast=0.3, saturation=0.3, hue=0.05, p=1.0)])
    assert chain.steps[0].op == "ColorJitter" and chain.steps[0].params["order"] == "random"
    single = wb.Chain.from_albumentations([A.ColorJitter(brightness=0.3, contrast=0, saturation=0, hue=0, p=1.0)])
    assert single.steps[0].op == "Brightness"  # one kind: its order cannot matter
    images = [np.ascontiguousarray(i[:48, :64]) for i in wb.load_images()[:4]] * 6
    orders = {tuple(row[0]["order"]) for row in chain.run(images, backend="kornia").params}
    assert len(orders) >= 8
