"""Exported DALI pipelines: idiomatic, importable, and their --save reproduces chain.run bit for bit."""
import ast

import numpy as np
import pytest

import workbench as wb

from conftest import class_folder, import_export, assert_bench_output, DESIGN_CHAIN, ROOT, assert_save_equals_run, random_step_dict, run_script

DALI_OPS = wb.list_ops(backend="dali")


@pytest.mark.parametrize("op", DALI_OPS)
def test_every_dali_op_save_equals_run(op, small_folder, square_folder, tmp_path):
    folder = square_folder if wb.get_op(op).square_input else small_folder
    rng = np.random.default_rng(abs(hash(op)) % 2**32)
    step = random_step_dict(op, rng, p=None if wb.get_op(op).always_applies else 0.7)
    chain = wb.Chain.from_dict({"seed": 11, "steps": [step, {"op": "HorizontalFlip", "p": 0.5}]})
    assert_save_equals_run(chain, folder, tmp_path, seeds=(0, 2024), backend="dali")


def test_design_chain_on_mixed_size_photos(tmp_path):
    assert_save_equals_run(wb.Chain.from_dict(DESIGN_CHAIN), ROOT / "sample_data", tmp_path, seeds=(7, 8),
                           backend="dali")


def test_long_random_chain(small_folder, tmp_path):
    rng = np.random.default_rng(8)
    ops = [op for op in DALI_OPS if not wb.get_op(op).fixes_size
           and not wb.get_op(op).square_input]
    steps = [random_step_dict(str(op), rng) for op in rng.choice(ops, size=7, replace=False)]
    steps.insert(2, {"op": "Resize", "params": {"size": [72, 80]}})
    steps[4]["enabled"] = False
    assert_save_equals_run(wb.Chain.from_dict({"seed": 5, "steps": steps}), small_folder, tmp_path,
                           seeds=(1, 2), backend="dali")


def test_source_is_idiomatic_dali(design_chain):
    design_chain.steps[2].p = 0.5
    src = design_chain.export("dali")
    tree = ast.parse(src)
    assert "SEED = 7" in src
    for needle in ("@pipeline_def(enable_conditionals=True)", "fn.readers.file(", "shard_id=shard_id",
                   "num_shards=num_shards", 'decoder = "mixed" if gpu else "cpu"', "DALIGenericIterator(",
                   # The chain starts with RandomResizedCrop: the loader decodes only its window.
                   "REGION_DECODE = decode_step_1_random_resized_crop", "fn.decoders.image_slice(encoded",
                   "fn.random.coin_flip(probability=0.5, seed=op_seed(seed, 3, 0))",
                   "fn.random.uniform(range=(-20.0, 20.0), seed=op_seed(seed, 3, 1))", "def step_3_rotate(images, seed):",
                   "if s3_applied:", "fn.crop_mirror_normalize(", "WORLD_SIZE"):
        assert needle in src, needle
    for i, step in enumerate(design_chain.steps):
        assert f"# {i + 1}. {step.describe()}" in src
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"augment", "preview_pipeline", "training_pipeline", "augment_images", "make_loader", "main"} <= functions


def test_bench_and_training_loop(tmp_path, design_chain):
    script = tmp_path / "aug.py"
    design_chain.export("dali", path=script.name, folder=tmp_path)
    bench = run_script(script, "--images", str(ROOT / "sample_data"), "--bench", "--batch-size", "4",
                       "--batches", "3", "--runs", "3", "--warmup", "1", "--workers", "1")
    assert_bench_output(bench.stdout, runs=3)
    train = run_script(script, "--images", str(ROOT / "sample_data"), "--epochs", "2", "--batch-size", "4")
    assert "rank 0/1: 24 augmented images over 2 epoch(s)" in train.stdout


def test_loader_labels_shards_and_seeds(tmp_path, small_folder, design_chain):
    """Labels from sub-folders; each shard reads its own files; a seed repeats exactly."""
    root = class_folder(tmp_path / "data", small_folder,
                        {"cats": ["img_00.png", "img_01.png"], "dogs": ["img_02.png", "img_03.png"]})
    mod = import_export(design_chain, "dali", tmp_path, "aug_dali_labels")
    files, labels = mod.image_folder(root)
    assert [f.split("/")[-2] for f in files] == ["cats", "cats", "dogs", "dogs"] and labels == [0, 0, 1, 1]

    def epoch(seed, rank=0, world=1, monkey=None):
        import os
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world))
        try:
            loader = mod.make_loader(root, 2, seed=seed, gpu=False, threads=1)
            batches = [(b[0]["images"].numpy().copy(), b[0]["labels"].numpy().ravel().tolist()) for b in loader]
        finally:
            os.environ.pop("RANK"), os.environ.pop("WORLD_SIZE")
        return batches

    a, b, c = epoch(5), epoch(5), epoch(6)
    assert len(a) == 2 and all(x.shape == (2, 224, 224, 3) for x, _ in a)
    assert all(np.array_equal(x1, x2) and y1 == y2 for (x1, y1), (x2, y2) in zip(a, b))
    assert not all(np.array_equal(x1, x2) for (x1, _), (x2, _) in zip(a, c))
    shard0, shard1 = epoch(5, 0, 2), epoch(5, 1, 2)
    assert len(shard0) == len(shard1) == 1
    assert sorted(shard0[0][1] + shard1[0][1]) == [0, 0, 1, 1]


def test_dali_missing_is_a_clear_error(monkeypatch, small_images):
    import builtins

    real_import = builtins.__import__

    def no_dali(name, *args, **kwargs):
        if name.startswith("nvidia.dali"):
            raise ImportError("no DALI here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dali)
    with pytest.raises(wb.WorkbenchError, match=r"pip install nvidia-dali-cuda120"):
        wb.Chain().add("HorizontalFlip").run(small_images, backend="dali")


def test_flip_fuses_into_crop_mirror_normalize_exactly(small_images):
    """A flip followed only by mirror-invariant steps and a Normalize becomes the `mirror`
    argument of crop_mirror_normalize, with per-sample results unchanged."""
    chain = wb.Chain(seed=4).add("HorizontalFlip", p=0.5).add("Brightness", factor=[1.2, 1.2]) \
        .add("GaussianBlur", sigma=[1.0, 1.0], kernel_size=5).add("Normalize")
    src = chain.export("dali")
    # The Normalize step re-creates step 1's coin from the same seed, so each step stands alone.
    assert "mirror=s4_mirror" in src and "fn.flip(" not in src
    assert "s4_mirror = fn.random.coin_flip(probability=0.5, seed=op_seed(seed, 1, 0))" in src
    fused = chain.run(small_images, backend="dali")
    plain = wb.Chain.from_dict({**chain.to_dict(), "steps": chain.to_dict()["steps"][1:]}).run(small_images, backend="dali")
    applied = [row[0]["applied"] for row in fused.params]
    assert 0 < sum(applied) < len(applied)
    for n, flipped in enumerate(applied):
        assert np.array_equal(fused.images[n], plain.images[n][:, ::-1] if flipped else plain.images[n])
    # A Rotate in between blocks the fusion (it does not commute with a mirror).
    blocked = wb.Chain().add("HorizontalFlip").add("Rotate").add("Normalize").export("dali")
    assert "fn.flip(" in blocked and "mirror=" not in blocked


def test_bench_with_a_batch_larger_than_the_folder(tmp_path, design_chain):
    script = tmp_path / "aug.py"
    design_chain.export("dali", path=script.name, folder=tmp_path)
    bench = run_script(script, "--images", str(ROOT / "sample_data"), "--bench", "--batch-size", "16",
                       "--batches", "3", "--runs", "1", "--warmup", "1", "--workers", "1", "--device", "cpu")
    assert bench.stdout.strip().splitlines()[-1].startswith("images/s: ")
