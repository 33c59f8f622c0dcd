"""Exported Albumentations scripts: a Compose in a multi-worker DataLoader, seeded per worker,
and their --save reproduces chain.run bit for bit."""
import ast

import numpy as np
import pytest
import torch

import workbench as wb

from conftest import (class_folder, comment_text, import_export, imported_modules, ROOT, assert_bench_output,
                      assert_save_equals_run, random_step_dict, run_script, saves_without_boxes)

ALBUMENTATIONS_OPS = [op for op in wb.list_ops(backend="albumentations") if saves_without_boxes(op)]
# Albumentations refuses these on the 96x128 test images (a grid tile as large as the shorter
# side; an erased rectangle that fits nowhere crashes A.Erasing in 2.0.8): settings that fit.
FITTING = {"GridMask": {"tile": 32}, "Erase": {"scale": [0.02, 0.2], "ratio": [0.5, 2.0]}}
LIGHT_CHAIN = {"seed": 7, "steps": [
    {"op": "HorizontalFlip", "p": 0.5},
    {"op": "VerticalFlip", "p": 0.5},
    {"op": "Normalize", "params": {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}]}


@pytest.fixture
def light_chain():
    return wb.Chain.from_dict(LIGHT_CHAIN)


@pytest.mark.parametrize("op", ALBUMENTATIONS_OPS)
def test_every_albumentations_op_save_equals_run(op, small_folder, square_folder, tmp_path):
    folder = square_folder if wb.get_op(op).square_input else small_folder
    # Seeded by the op's name (PYTHONHASHSEED varies `hash`): the same parameters every run.
    rng = np.random.default_rng(sum(op.encode()))
    step = random_step_dict(op, rng, p=None if wb.get_op(op).always_applies else 0.7)
    step["params"] = {**step.get("params", {}), **FITTING.get(op, {})}
    steps = [step] + ([{"op": "HorizontalFlip", "p": 0.5}] if wb.get_op("HorizontalFlip").supports("albumentations")
                      else [])
    chain = wb.Chain.from_dict({"seed": 11, "steps": steps})
    assert_save_equals_run(chain, folder, tmp_path, seeds=(0, 2024), backend="albumentations", fresh=0)


def test_mixed_size_photos(tmp_path, light_chain):
    """Albumentations augments one image at a time: mixed sizes come back as a list."""
    script = tmp_path / "aug.py"
    light_chain.export("albumentations", path=script.name, folder=tmp_path)
    run_script(script, "--images", str(ROOT / "sample_data"), "--seed", "8", "--save", str(tmp_path / "out.npz"))
    saved = np.load(tmp_path / "out.npz")
    out = light_chain.run(wb.load_images(), backend="albumentations", seed=8).images
    assert isinstance(out, list) and {o.dtype for o in out} == {np.dtype(np.float32)}
    assert len({o.shape for o in out}) > 1
    assert all(np.array_equal(saved[f"image_{i:05d}"], o) for i, o in enumerate(out))


def test_transforms_draw_independently(small_images, light_chain):
    """Compose(seed=...) alone gives every transform the same stream (both flips would always
    fall together); the export seeds each transform on its own."""
    images = small_images * 8
    res = light_chain.run(images, backend="albumentations")
    flips = np.array([[row[0]["applied"], row[1]["applied"]] for row in res.params])
    assert 0 < flips[:, 0].sum() < len(images) and 0 < flips[:, 1].sum() < len(images)
    assert (flips[:, 0] != flips[:, 1]).any()
    # The reported coins match the images.
    for image, out, (h, v) in zip(images, res.images, flips):
        expected = image[::-1] if v else image
        expected = expected[:, ::-1] if h else expected
        normalize = LIGHT_CHAIN["steps"][2]["params"]
        mean, std = np.array(normalize["mean"]), np.array(normalize["std"])
        assert np.allclose(out, (expected / 255.0 - mean) / std, atol=1e-5)


def test_same_seed_same_output_other_seed_differs(small_images, light_chain):
    a = light_chain.run(small_images * 4, backend="albumentations", seed=1).images
    b = light_chain.run(small_images * 4, backend="albumentations", seed=1).images
    c = light_chain.run(small_images * 4, backend="albumentations", seed=2).images
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.gpu_aware
def test_gpu_device_is_refused_clearly(small_images, light_chain):
    if torch.cuda.is_available():
        with pytest.raises(wb.WorkbenchError, match="albumentations backend runs on the CPU; use device='cpu'"):
            light_chain.run(small_images, backend="albumentations", device="cuda")
    src = light_chain.export("albumentations")
    module = {}
    exec(compile(src, "<albumentations-export>", "exec"), module)
    with pytest.raises(ValueError, match="Albumentations runs on the CPU"):
        module["augment_images"](small_images, device="cuda")


def test_source_is_readable_and_safe(light_chain):
    src = light_chain.export("albumentations")
    tree = ast.parse(src)
    assert "SEED = 7" in src
    for i, step in enumerate(light_chain.steps):
        assert f"{i + 1}. {step.describe()}" in comment_text(src)
    imports = imported_modules(tree)
    assert {"albumentations", "numpy", "torch", "torch.utils.data", "PIL"} <= imports
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"build_compose", "seed_transforms", "augment_images", "make_loader", "training_batches",
            "bench_rates", "main"} <= functions
    for needle in ("A.Compose([", "EpochSampler(", "set_epoch(epoch, start_batch",
                   "num_workers=workers", "derive_seed(self.seed, rank, epoch, batch)"):
        assert needle in src


def test_bench_and_training_loop(tmp_path, light_chain):
    script = tmp_path / "aug.py"
    light_chain.export("albumentations", path=script.name, folder=tmp_path)
    bench = run_script(script, "--images", str(ROOT / "sample_data"), "--bench", "--batch-size", "4",
                       "--batches", "2", "--runs", "3", "--warmup", "1", "--workers", "1")
    assert_bench_output(bench.stdout, runs=3)


def test_loader_labels_and_worker_seeding(tmp_path, small_folder):
    """Labels come from sub-folders; 2 workers repeat exactly for a seed, per epoch."""
    root = class_folder(tmp_path / "data", small_folder,
                        {"cats": ["img_00.png", "img_01.png"], "dogs": ["img_02.png", "img_03.png", "img_04.png"]})
    chain = wb.Chain.from_dict({**LIGHT_CHAIN, "steps": LIGHT_CHAIN["steps"][:2]})
    module = import_export(chain, "albumentations", tmp_path, "aug_alb_labels")
    ds = module.AugmentedImageFolder(root)
    assert ds.classes == ["cats", "dogs"] and ds.labels.tolist() == [0, 0, 1, 1, 1]

    def run(seed):
        batches = module.training_batches(root, 2, epochs=2, workers=2, seed=seed, device="cpu", num_samples=8)
        return [(e, x.numpy().copy(), y.tolist()) for e, x, y in batches]

    a, b, c = run(5), run(5), run(6)
    assert len(a) == 8 and [e for e, _, _ in a] == [0] * 4 + [1] * 4
    assert a[0][1].dtype == np.uint8 and a[0][1].shape == (2, 3, 96, 128)
    assert all(np.array_equal(x1, x2) and y1 == y2 for (_, x1, y1), (_, x2, y2) in zip(a, b))
    assert not all(np.array_equal(x1, x2) for (_, x1, _), (_, x2, _) in zip(a, c))
    # Each sample's output is its input, flipped or not: the labels travel with their images.
    inputs = {label: [] for label in (0, 1)}
    for f, label in zip(ds.files, ds.labels):
        inputs[label].append(module.decode_image(f))
    for _, x, y in a:
        for image, label in zip(x.transpose(0, 2, 3, 1), y):
            variants = [v for i in inputs[label] for v in (i, i[::-1], i[:, ::-1], i[::-1, ::-1])]
            assert any(np.array_equal(image, v) for v in variants)
