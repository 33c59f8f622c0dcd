"""CUDA paths: run only where torch sees a GPU (skipped on CPU-only machines and in CI)."""
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import workbench as wb
from conftest import _loaded_from, save_annotated
from workbench.examples import example_chain
from workbench.runtime.annotations import targets_from_arrays

cuda = pytest.mark.cuda


@cuda
def test_auto_picks_cuda_and_collapsed_ranges_match_cpu(small_images):
    # Every range collapsed: only the kernels' last bits may differ (random ranges: the test below).
    chain = wb.Chain(seed=1).add("Rotate", degrees=[12, 12]).add("Brightness", factor=[1.2, 1.2]) \
        .add("HorizontalFlip", p=1.0).add("GaussianBlur", sigma=[1.0, 1.0])
    gpu = chain.run(small_images, device="auto")
    cpu = chain.run(small_images, device="cpu")
    assert gpu.device == "cuda" and gpu.params == cpu.params
    np.testing.assert_allclose(gpu.images, cpu.images, atol=1e-4)


@cuda
def test_random_draws_give_the_cpu_run_on_cuda(small_images):
    """Kornia draws on the CPU generator on every device (place): with random ranges, fused
    geometry and colour runs and unfused steps, the GPU gives the CPU run's draws and, to float
    rounding, its pixels."""
    chain = example_chain().add("ColorJitter", p=0.8, brightness=[0.6, 1.4], contrast=[0.6, 1.4],
                                saturation=[0.6, 1.4], hue=[-0.1, 0.1]).add("GaussianBlur", sigma=[0.5, 2.0])
    gpu = chain.run(small_images, device="cuda")
    cpu = chain.run(small_images, device="cpu")
    assert gpu.params == cpu.params
    np.testing.assert_allclose(gpu.images, cpu.images, atol=2e-3)


@cuda
def test_cuda_runs_are_reproducible(small_images, design_chain):
    a = design_chain.run(small_images, device="cuda")
    b = design_chain.run(small_images, device="cuda")
    assert np.array_equal(a.images, b.images)


def test_cuda_request_without_gpu_is_refused_clearly(small_images, design_chain):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(wb.WorkbenchError, match=r"device 'cuda:0' asked for, but torch sees no GPU"):
        design_chain.run(small_images, device="cuda:0")


@cuda
def test_dali_gpu_matches_cpu_with_collapsed_ranges(small_images):
    chain = wb.Chain(seed=1).add("Rotate", degrees=[12, 12]).add("Brightness", factor=[1.2, 1.2]) \
        .add("HorizontalFlip", p=1.0).add("GaussianBlur", sigma=[1.0, 1.0])
    gpu = chain.run(small_images, backend="dali", device="cuda")
    cpu = chain.run(small_images, backend="dali", device="cpu")
    assert gpu.params == cpu.params
    diff = np.abs(gpu.images.astype(np.int16) - cpu.images.astype(np.int16))
    assert diff.mean() < 0.5 and diff.max() <= 2  # uint8 rounding of GPU vs CPU kernels


@cuda
@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_estimate_on_the_gpu_has_the_copy_stage_where_it_exists(backend):
    chain = wb.Chain(seed=1).add("HorizontalFlip").add("Brightness", factor=[0.8, 1.2])
    est = chain.estimate(backend=backend, device="cuda", batch_size=8, image_size=64, workers=1, runs=2, batches=2,
                         progress=False)
    assert est.device == "cuda" and est.images_per_s > 0 and est.machine["device"] != "cpu"
    if backend == "kornia":
        assert list(est.stages) == ["decode", "host_to_device", "augment"]
    else:  # DALI's mixed decoder copies while it decodes
        assert list(est.stages) == ["decode", "augment"] and any("mixed decoder" in n for n in est.notes)
    assert [s.op for s in est.steps] == ["HorizontalFlip", "Brightness"]


# The settings issue 29 added, which the per-op CUDA tests (default settings) do not reach: local
# Kornia variants (WbRandomResizedCrop, WbPaddedCrop, WbRandomSizedCrop, WbGridMask, WbBetaMixUp),
# bicubic resizes, DALI's border slice and Beta draws, sizes drawn per sample, ColorJitter's random order.
ISSUE_29_STEPS = [
    ("RandomResizedCrop", {"size": [48, 64], "antialias": True, "interpolation": "bicubic"}),
    ("Resize", {"size": [60, 70], "interpolation": "bicubic"}),
    ("SmallestMaxSize", {"max_size": 61, "rounding": "down"}),
    ("Pad", {"size": [100, 120], "padding": 3, "padding_mode": "reflect"}),
    ("RandomSizedCrop", {"height": [40, 80], "size": [50, 50], "w2h_ratio": 1.2}),
    ("GridMask", {"tile": 16, "ratio": 0.4, "random_offset": True}),
    ("MixUp", {"weight": [0.0, 1.0], "alpha": 0.3}),
    ("CutMix", {"area": [0.0, 1.0], "alpha": 0.5}),
    # torchvision's pairing (the image before each; DALI's from an external source of the batch size).
    ("TorchvisionMixUp", {"alpha": 0.4}),
    ("TorchvisionCutMix", {"alpha": 1.0}),
    # Sizes drawn per sample: Kornia's head runs image by image on the GPU too.
    ("RandomShortestSize", {"sizes": [40, 56, 72], "max_size": 90}),
    ("RandomResize", {"size": [40, 80]}),
    ("ScaleJitter", {"target_size": [64, 64], "scale": [0.4, 1.4]}),
    # A colour order drawn per sample (Kornia's WbColorJitter, DALI's select over the 24 orders).
    ("ColorJitter", {"brightness": [0.6, 1.4], "contrast": [0.6, 1.4], "saturation": [0.6, 1.4], "hue": [-0.1, 0.1],
                     "order": "random"}),
    # torchvision's policies: its exact resampling and equalize, built from torch's and DALI's operators.
    ("TorchvisionRandAugment", {"num_ops": 3, "magnitude": 20}),
    ("TorchvisionTrivialAugmentWide", {"interpolation": "bilinear"}),
    ("TorchvisionAutoAugment", {"policy": "svhn"}),
]


@cuda
@pytest.mark.parametrize("op, params", ISSUE_29_STEPS, ids=[op for op, _ in ISSUE_29_STEPS])
def test_new_settings_give_the_cpu_run_on_the_gpu(small_images, op, params):
    """Kornia on cuda draws what it draws on the CPU and gives its pixels to float rounding, or within a
    level where the CPU resizes the images' uint8 levels (a first Resize, RandomResizedCrop: LEVEL_STEPS);
    DALI's GPU graph draws the CPU graph's values and its pixels within uint8 rounding."""
    chain = wb.Chain(seed=3).add(op, **params, **({} if wb.get_op(op).always_applies else {"p": 1.0}))
    gpu, cpu = chain.run(small_images, device="cuda"), chain.run(small_images, device="cpu")
    assert gpu.params == cpu.params
    for g, c in zip(gpu.images, cpu.images):
        np.testing.assert_allclose(g, c, atol=1 / 255 + 1e-4)
    gpu = chain.run(small_images, backend="dali", device="cuda")
    cpu = chain.run(small_images, backend="dali", device="cpu")
    assert gpu.params == cpu.params
    for g, c in zip(gpu.images, cpu.images):
        diff = np.abs(g.astype(np.int16) - c.astype(np.int16))
        assert diff.mean() < 0.5 and diff.max() <= 2


@cuda
@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_iou_crops_give_the_cpu_run_on_the_gpu(backend, tmp_path):
    """SSD's geometry (zoom out, RandomIoUCrop, flip) with the sample photos' boxes on cuda: the windows the
    CPU run draws (Kornia's from torch's CPU generator, DALI's on the host from the moved boxes), its
    pixels (a crop copies them) and its boxes; the export's `--save --coco --device cuda` saves the GPU run."""
    images, targets = wb.load_annotated()
    chain = wb.Chain(seed=4).add("RandomZoomOut", side_range=[1.0, 2.0]).add("RandomIoUCrop").add("HorizontalFlip")
    gpu = chain.run(images, backend=backend, device="cuda", boxes=targets["boxes"], box_labels=targets["box_labels"])
    cpu = chain.run(images, backend=backend, device="cpu", boxes=targets["boxes"], box_labels=targets["box_labels"])
    assert gpu.params == cpu.params and any(rows[1]["applied"] for rows in cpu.params)
    for g, c in zip(gpu.images, cpu.images):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(c, np.float64), atol=1e-6)
    for g, c in zip(gpu.targets.boxes, cpu.targets.boxes):
        assert np.array_equal(g, c)
    script, out = tmp_path / f"ssd_{backend}.py", tmp_path / "saved.npz"
    chain.export(backend, path=script)
    done = save_annotated(script, out, "--device", "cuda")
    assert done.returncode == 0, done.stderr[-2000:]
    saved = dict(np.load(out))
    for n, image in enumerate(gpu.images):
        assert np.array_equal(saved[f"image_{n:05d}"], np.asarray(image)), n
    for a, b in zip(targets_from_arrays(saved)["boxes"], gpu.targets.boxes):
        assert np.array_equal(a, b)


@cuda
@pytest.mark.parametrize("backend", ["kornia", "dali"])
def test_sizes_drawn_per_sample_train_on_the_gpu(backend, sample_images, tmp_path):
    """A chain that draws each image's size through the GPU training loaders, from JPEGs of several
    sizes: Kornia (GPU decode, then the per-image head on cuda) yields a list of CUDA images at
    their drawn sizes; DALI's GPU pipeline pads each batch and gives the sizes."""
    folder = tmp_path / "train" / "cats"
    folder.mkdir(parents=True)
    for k, image in enumerate(sample_images[:6]):
        Image.fromarray(np.ascontiguousarray(image[:100 + 12 * k, :140])).save(folder / f"{k}.jpg")
    chain = wb.Chain(seed=2).add("RandomShortestSize", sizes=[48, 64, 80]).add("HorizontalFlip", p=0.5)
    script = tmp_path / f"aug_{backend}.py"
    chain.export(backend, path=script.name, folder=tmp_path, **({"gpu_decode": True} if backend == "kornia" else {}))
    module = _loaded_from(script)
    if backend == "kornia":
        _, images, _ = next(module.training_batches(str(tmp_path / "train"), 3, workers=0, device="cuda"))
        assert isinstance(images, list) and all(image.is_cuda for image in images)
        sizes = [tuple(image.shape[-2:]) for image in images]
    else:
        batch = next(iter(module.make_loader(str(tmp_path / "train"), 3, gpu=True, threads=2)))[0]
        sizes = [tuple(size) for size in batch["image_sizes"].tolist()]
        assert batch["images"].is_cuda and tuple(batch["images"].shape[1:3]) == tuple(np.max(sizes, axis=0))
    assert len(sizes) == 3 and all(min(size) in (48, 64, 80) for size in sizes), sizes


@cuda
@pytest.mark.parametrize("bad", ["empty.jpg", "notes.jpg"])
def test_the_dali_gpu_loader_names_a_file_no_decoder_reads(bad, sample_images, tmp_path):
    """On the GPU (the "mixed" decoder: nvImageCodec, whose failure names no file), a file that is no
    JPEG stops the DALI loader with the one line naming it (found by its header); --skip-bad decodes
    ahead and trains on the rest in full batches. (The CPU decoder's named failures:
    tests/test_bad_files.py.)"""
    folder = tmp_path / "train" / "cats"
    folder.mkdir(parents=True)
    for k, image in enumerate(sample_images[:6]):
        Image.fromarray(np.ascontiguousarray(image[:96, :128])).save(folder / f"{k}.jpg")
    shutil.copy(Path(__file__).parent / "data" / "bad_images" / bad, folder / f"x_{bad}")
    module = _loaded_from(_exported(wb.Chain(seed=2).add("HorizontalFlip", p=0.5), "dali", tmp_path))
    with pytest.raises(module.BadImageError, match=re.escape(f"x_{bad}: ")):
        loader = module.make_loader(str(tmp_path / "train"), 7, gpu=True, threads=2)
        list(module.training_epochs(loader, 1))
    loader = module.make_loader(str(tmp_path / "train"), 3, gpu=True, threads=2, skip_bad=True)
    batches = [batch[0]["images"] for _, batch in module.training_epochs(loader, 1)]
    assert len(batches) == 2 and all(images.is_cuda and images.shape[0] == 3 for images in batches)


def _exported(chain, backend, folder):
    script = folder / f"aug_{backend}.py"
    chain.export(backend, path=script.name, folder=folder)
    return script
