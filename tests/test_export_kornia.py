"""Exported Kornia scripts: readable, importable, and their --save reproduces chain.run bit for bit."""
import ast
import subprocess
import sys

import numpy as np
import pytest
import torch

import workbench as wb

from conftest import (class_folder, comment_text, import_export, imported_modules, assert_bench_output, DESIGN_CHAIN,
                      ENV, ROOT, assert_save_equals_run, random_step_dict, op_rng, run_script, saves_without_boxes)

@pytest.mark.parametrize("op", [op for op in wb.list_ops(backend="kornia") if saves_without_boxes(op)])
def test_every_op_save_equals_run(op, small_folder, square_folder, tmp_path):
    folder = square_folder if wb.get_op(op).square_input else small_folder
    rng = op_rng(op)
    step = random_step_dict(op, rng, p=None if wb.get_op(op).always_applies else 0.7)
    chain = wb.Chain.from_dict({"seed": 11, "steps": [step, {"op": "HorizontalFlip", "p": 0.5}]})
    assert_save_equals_run(chain, folder, tmp_path, seeds=(0, 2024), fresh=0)


def test_design_chain_on_mixed_size_photos(tmp_path):
    """The bundled photos have different sizes: the documented mixed-size batching holds too."""
    assert_save_equals_run(wb.Chain.from_dict(DESIGN_CHAIN), ROOT / "sample_data", tmp_path, seeds=(7, 8, 99))


def test_long_random_chains(small_folder, tmp_path):
    rng = np.random.default_rng(5)
    ops = [op for op in wb.list_ops(backend="kornia") if not wb.get_op(op).fixes_size
           and not wb.get_op(op).square_input]
    steps = [random_step_dict(str(op), rng) for op in rng.choice(ops, size=8, replace=False)]
    steps.insert(3, {"op": "Resize", "params": {"size": [72, 80]}})
    steps[5]["enabled"] = False
    chain = wb.Chain.from_dict({"seed": 3, "steps": steps})
    assert_save_equals_run(chain, small_folder, tmp_path, seeds=(1, 2, 3))


def test_source_is_readable_and_safe(design_chain):
    src = design_chain.export("kornia")
    tree = ast.parse(src)
    assert "SEED = 7" in src
    # Every step appears as a comment, in order, with its parameters.
    for i, step in enumerate(design_chain.steps):
        assert f"{i + 1}. {step.describe()}" in comment_text(src)
    assert "K.RandomRotation(degrees=(-20.0, 20.0), resample='BILINEAR', align_corners=False, p=1.0)" in src
    imports = imported_modules(tree)
    assert {"kornia.augmentation", "torch", "numpy", "PIL", "torch.utils.data"} <= imports
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"build_augmentation", "augment_images", "make_loader", "training_batches", "main"} <= functions
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    assert {"CudaPrefetcher", "ImageFolderDataset"} <= classes
    for needle in ("pin_memory=", "EpochSampler(", "worker_init_fn=seed_worker", "torch.cuda.Stream(",
                   "non_blocking=True", "WORLD_SIZE", "set_epoch(epoch, first)",
                   "derive_seed(seed, rank, epoch, number)"):
        assert needle in src


def test_save_on_a_folder_without_images_says_so(tmp_path, design_chain):
    design_chain.export("kornia", path="aug.py", folder=tmp_path)
    (tmp_path / "empty").mkdir()
    proc = subprocess.run([sys.executable, str(tmp_path / "aug.py"), "--images", str(tmp_path / "empty"), "--save",
                           str(tmp_path / "o.npz")], capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 1 and "no image files (.bmp, .jpeg" in proc.stderr
    assert not (tmp_path / "o.npz").exists()


def test_disabled_steps_are_listed_but_not_built(design_chain):
    design_chain.steps[1].enabled = False
    src = design_chain.export("kornia")
    assert "#   2. HorizontalFlip p=0.5  [disabled]" in src
    assert "K.RandomHorizontalFlip(" not in src  # (the name alone is in fusion_geometry's list)


def test_export_writes_file_inside_folder(tmp_path, design_chain):
    src = design_chain.export("kornia", path="sub/aug.py", folder=tmp_path)
    assert (tmp_path / "sub" / "aug.py").read_text() == src
    with pytest.raises(wb.ChainError, match="unknown backend 'tensorflow' for export; choose one of kornia, dali"):
        design_chain.export("tensorflow")


def test_importable_module(tmp_path, small_images, design_chain):
    my_aug = import_export(design_chain, "kornia", tmp_path, "my_aug")
    assert my_aug.SEED == 7 and len(my_aug.build_augmentation()) == 5
    out, records = my_aug.augment_images(small_images, seed=7)
    assert np.array_equal(out, design_chain.run(small_images).images)


def test_bench_and_training_loop(tmp_path, design_chain):
    script = tmp_path / "aug.py"
    design_chain.export("kornia", path=script.name, folder=tmp_path)
    bench = run_script(script, "--images", str(ROOT / "sample_data"), "--bench", "--batch-size", "8",
                       "--batches", "3", "--runs", "3", "--warmup", "1", "--workers", "1")
    assert_bench_output(bench.stdout, runs=3)
    train = run_script(script, "--images", str(ROOT / "sample_data"), "--epochs", "2", "--batch-size", "4",
                       "--workers", "1")
    assert "rank 0/1: 24 augmented images over 2 epoch(s)" in train.stdout


def test_image_folder_labels_and_worker_seeding(tmp_path, small_folder, design_chain):
    """Labels come from sub-folders; a DataLoader with 2 workers repeats exactly for a seed."""
    root = class_folder(tmp_path / "data", small_folder,
                        {"cats": ["img_00.png", "img_01.png"], "dogs": ["img_02.png", "img_03.png", "img_04.png"]})
    aug_labels = import_export(design_chain, "kornia", tmp_path, "aug_labels")
    ds = aug_labels.ImageFolderDataset(root)
    assert ds.classes == ["cats", "dogs"] and ds.labels.tolist() == [0, 0, 1, 1, 1]

    def epoch(seed):
        batches = aug_labels.training_batches(root, 2, epochs=2, workers=2, seed=seed, device="cpu", num_samples=8)
        out = []
        for e, x, y in batches:
            assert torch.is_grad_enabled(), "the loader must not leave autograd off in the training loop"
            out.append((e, x.numpy().copy(), y.tolist()))
        return out

    a, b, c = epoch(5), epoch(5), epoch(6)
    assert len(a) == 8 and [e for e, _, _ in a] == [0] * 4 + [1] * 4
    assert all(np.array_equal(x1, x2) and y1 == y2 for (_, x1, y1), (_, x2, y2) in zip(a, b))
    assert not all(np.array_equal(x1, x2) for (_, x1, _), (_, x2, _) in zip(a, c))


def test_torchrun_shards_by_rank(tmp_path, small_folder, design_chain):
    """Under torchrun each rank reads its own shard (EpochSampler) and seeds its own stream."""
    script = tmp_path / "aug.py"
    design_chain.export("kornia", path=script.name, folder=tmp_path)
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys, torch, torch.distributed as dist\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import aug\n"
        "dist.init_process_group('gloo')\n"
        f"loader = aug.make_loader({str(small_folder)!r}, batch_size=1, workers=0, seed=3)\n"
        "files = [str(loader.dataset.files[i]) for i, _, _ in loader.sampler]\n"
        f"out = open({str(tmp_path)!r} + f'/rank{{dist.get_rank()}}.txt', 'w')\n"
        "out.write(' '.join(['RANK', str(dist.get_rank()), type(loader.sampler).__name__, ','.join(files)]))\n"
        "out.close()\n"
        "dist.destroy_process_group()\n")
    import socket

    with socket.socket() as sock:  # a free port for the rendezvous, so parallel runs cannot clash
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                           "--master-addr", "127.0.0.1", "--master-port", str(port), str(probe)],
                          capture_output=True, text=True, env=ENV, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # One file per rank: the ranks' stdout lines could interleave.
    lines = [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)]
    assert len(lines) == 2 and all("EpochSampler" in line for line in lines)
    shards = [set(line.split()[-1].split(",")) for line in lines]
    assert not shards[0] & shards[1] and len(shards[0] | shards[1]) == 6


def test_mixed_sizes_need_a_size_fixing_step_or_resize(tmp_path):
    """As the DALI loader: a clear error without a size, `resize=` resizes, one size is unchanged."""
    import re

    from PIL import Image

    from test_export_dali import MIXED, PLAIN, tiny_folder

    mixed = tiny_folder(tmp_path / "mixed", MIXED)
    one_size = tiny_folder(tmp_path / "one", [(40, 48)] * 4)
    mod = import_export(PLAIN, "kornia", tmp_path, "aug_kornia_sizes")
    assert not mod.FIXES_SIZE and mod.RESIZE_AT == 1

    def batches(root, **kwargs):
        return [(images.numpy().copy(), labels.tolist())
                for _, images, labels in mod.training_batches(root, 2, workers=0, seed=1, device="cpu", **kwargs)]

    with pytest.raises(ValueError) as error:
        batches(mixed)
    named = re.findall(r"(\S+\.png) is (\d+)x(\d+)", str(error.value))
    assert len(named) == 2 and all(Image.open(p).size == (int(w), int(h)) for p, h, w in named)
    assert "--resize HxW, e.g. --resize 224x224 (training_batches' resize=(224, 224))" in str(error.value)
    resized = batches(mixed, resize=(24, 32))
    assert sorted(sum((labels for _, labels in resized), [])) == [0, 1, 2, 3]
    for images, labels in resized:
        assert images.shape == (2, 3, 24, 32)
        for image, label in zip(images, labels):
            # Bilinear through the triangle antialias filter, as PIL's BILINEAR (and DALI's fn.resize):
            # PIL rounds to whole levels, the loader keeps floats.
            with Image.open(mixed / f"c{label}" / f"img_{label}.png") as source:
                expected = np.asarray(source.convert("RGB").resize((32, 24), Image.BILINEAR), np.float32) / 255
            error = np.abs(np.asarray(image).transpose(1, 2, 0) - expected)
            assert error.max() <= 1.01 / 255 and error.mean() < 0.4 / 255
    for images, labels in batches(one_size):
        assert images.shape == (2, 3, 40, 48)
        for image, label in zip(images, labels):
            source = np.asarray(Image.open(one_size / f"c{label}" / f"img_{label}.png"), dtype=np.float32) / 255
            assert np.abs(image.transpose(1, 2, 0) - source).max() < 1e-6
    crop = import_export(wb.Chain(seed=2).add("CenterCrop", size=[24, 24]).add("Brightness"), "kornia", tmp_path,
                         "aug_kornia_crop_sizes")
    assert crop.FIXES_SIZE
    out = [images for _, images, _ in crop.training_batches(mixed, 2, workers=0, seed=1, device="cpu")]
    assert len(out) == 2 and all(tuple(images.shape) == (2, 3, 24, 24) for images in out)
