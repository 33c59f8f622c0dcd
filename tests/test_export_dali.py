"""Exported DALI pipelines: idiomatic, importable, and their --save reproduces chain.run bit for bit."""
import ast

import numpy as np
import pytest
from PIL import Image

import workbench as wb
from workbench.codegen import load_module
from workbench.codegen.dali import DALI_OPS as RUNTIME_DALI_FILES, straight_functions
from workbench.codegen.source_copy import definitions

from export_ast import parse_export
from conftest import (class_folder, comment_text, import_export, assert_bench_output, DESIGN_CHAIN, ROOT,
                      assert_save_equals_run, random_step_dict, op_rng, run_script, saves_without_boxes)

# The ops these tests run on DALI's CPU (tests/test_gpu_paths.py runs the GPU-only ones on a GPU).
DALI_OPS = [op for op in wb.list_ops(backend="dali")
            if wb.get_op(op).supports("dali", "cpu") and saves_without_boxes(op)]


def affordable(step: dict) -> dict:
    """The step with its repeated parts capped where each repeat adds operators to DALI's graph
    and every repeat runs the same code: GridDistortion's cells at 12 a side (a resize and its
    windows a cell and axis: at the 54-58 cells the draws give, building and running the
    pipelines took 80-130 s of a test; test_ops_distortion checks the grid itself), RandomShadow's
    shadows at 3 and RandomSunFlare's circles at 10 (at the 8 shadows and 35 circles drawn here, a
    run took 2.5 s and 1.3 s on 48x64 images; test_ops_weather checks the shadows and circles)."""
    params = step["params"]
    if step["op"] == "GridDistortion":
        params["num_steps"] = min(params["num_steps"], 12)
    capped = {"RandomShadow": ("num_shadows_limit", 3.0), "RandomSunFlare": ("num_flare_circles_range", 10.0)}
    if step["op"] in capped:
        name, cap = capped[step["op"]]
        low, high = params[name]
        params[name] = [min(low, cap - 1.0), min(high, cap)]
    return step


@pytest.mark.parametrize("op", DALI_OPS)
def test_every_dali_op_save_equals_run(op, small_folder, square_folder, tmp_path):
    folder = square_folder if wb.get_op(op).square_input else small_folder
    rng = op_rng(op)
    step = affordable(random_step_dict(op, rng, p=None if wb.get_op(op).always_applies else 0.7))
    chain = wb.Chain.from_dict({"seed": 11, "steps": [step, {"op": "HorizontalFlip", "p": 0.5}]})
    assert_save_equals_run(chain, folder, tmp_path, seeds=(0, 2024), backend="dali", fresh=0)


def test_design_chain_on_mixed_size_photos(tmp_path):
    assert_save_equals_run(wb.Chain.from_dict(DESIGN_CHAIN), ROOT / "sample_data", tmp_path, seeds=(7, 8),
                           backend="dali")


def test_long_random_chain(small_folder, tmp_path):
    rng = np.random.default_rng(8)
    ops = [op for op in DALI_OPS if not wb.get_op(op).fixes_size
           and not wb.get_op(op).square_input]
    steps = [affordable(random_step_dict(str(op), rng)) for op in rng.choice(ops, size=7, replace=False)]
    steps.insert(2, {"op": "Resize", "params": {"size": [72, 80]}})
    steps[4]["enabled"] = False
    assert_save_equals_run(wb.Chain.from_dict({"seed": 5, "steps": steps}), small_folder, tmp_path,
                           seeds=(1, 2), backend="dali")


def test_conditionals_only_where_a_step_branches_on_its_draws():
    # DALI's conditionals rewrite the pipeline functions each time a pipeline is defined (the
    # preview defines one per draw): a chain without an `if` on a draw does without them, and
    # runs as it does with them.
    straight = wb.Chain(seed=4).add("Resize", size=[48, 48]).add("HorizontalFlip").add("Rotate").add("Brightness")
    assert "CONDITIONALS = False" in straight.export("dali")
    gated = wb.Chain.from_dict({**straight.to_dict(), "steps": [*straight.to_dict()["steps"][:2],
                                                                {"op": "Rotate", "p": 0.5}]})
    grouped = wb.Chain.from_dict({"seed": 4, "steps": [{"op": "OneOf", "steps": [{"op": "HorizontalFlip"},
                                                                                  {"op": "Rotate"}]}]})
    images = [np.full((40, 40, 3), 9 * k, np.uint8) for k in range(1, 7)]
    for chain, size in ((gated, 48), (grouped, 40)):  # (an `if` on a draw fails without conditionals)
        assert "CONDITIONALS = True" in chain.export("dali")
        assert chain.run(images, backend="dali").images.shape == (6, size, size, 3)
    images = wb.load_images()[:3]
    run = straight.run(images, backend="dali")
    module = load_module(straight.export("dali"), "dali")
    with_conditionals = module.preview_pipeline(
        aug_seed=4, batch_size=3, num_threads=1, device_id=None, seed=4, prefetch_queue_depth=1,
        enable_conditionals=True)
    with_conditionals.build()
    with_conditionals.feed_input("images", [np.ascontiguousarray(a) for a in images])
    assert np.array_equal(np.stack([np.array(t) for t in with_conditionals.run()[0]]), run.images)


@pytest.mark.parametrize("p", [0.5, 1.0])
def test_every_step_leaves_autograph_only_its_own_if(p):
    # DALI's autograph rewrites every function with an `if` on a draw each time a pipeline is
    # defined, in time growing faster than its length (RandomShadow's 350 lines of step: 11 s). The
    # DALI code is in runtime/dali_ops/ and marked @do_not_convert; a step function is a few calls
    # and its gate. Only a function that branches per sample itself is left to autograph.
    branching = {"clahe_at_levels"}  # one fn.clahe per clip level, each sample through one
    straight = straight_functions()
    for op in wb.list_ops(backend="dali"):
        spec = wb.get_op(op)
        chain = wb.Chain(seed=3).add("Resize", size=[64, 64]).add(op, p=None if spec.always_applies else p)
        tree = parse_export(chain.export("dali"))
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        step = next(n for name, n in functions.items() if name.startswith("step_2_"))
        statements = sum(isinstance(n, ast.stmt) for n in ast.walk(step))  # lines: a long call takes several
        assert statements <= 20, (op, statements)
        called = {n.func.id for n in ast.walk(step) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        runtime = called & set(definitions(tuple(map(str, RUNTIME_DALI_FILES))))
        assert runtime <= straight | branching, (op, runtime - straight)
        # A function marked @do_not_convert never tests a draw in an `if` (it would branch on a node).
        for name in runtime & straight:
            tests = [ast.unparse(n.test) for n in ast.walk(functions[name]) if isinstance(n, ast.If)]
            assert not any("applied" in test for test in tests), (op, name, tests)
    chain = wb.Chain(seed=3).add("RandomShadow", p=0.5).add("Rotate", p=0.5)
    images = [np.asarray(Image.fromarray(a).resize((64, 48))) for a in wb.load_images()[:4]]
    assert not np.array_equal(chain.run(images, backend="dali", seed=1).images, np.stack(images))


def test_source_is_idiomatic_dali(design_chain):
    design_chain.steps[2].p = 0.5
    src = design_chain.export("dali")
    tree = ast.parse(src)
    assert "SEED = 7" in src
    for needle in ("@pipeline_def(enable_conditionals=CONDITIONALS)", "CONDITIONALS = True", "fn.readers.file(",
                   "shard_id=shard_id",
                   "num_shards=num_shards", 'decoder = "mixed" if gpu else "cpu"', "(DALIGenericIterator):",
                   # The chain starts with RandomResizedCrop: the loader decodes only its window.
                   "REGION_DECODE = decode_step_1_random_resized_crop", "fn.decoders.image_slice(encoded",
                   "fn.random.coin_flip(probability=0.5, seed=op_seed(seed, 3, 0))",
                   "fn.random.uniform(range=(-20.0, 20.0), seed=op_seed(seed, 3, 1))",
                   "def step_3_rotate(images, seed):",
                   "if s3_applied:", "fn.crop_mirror_normalize(", "WORLD_SIZE"):
        assert needle in src, needle
    for i, step in enumerate(design_chain.steps):
        assert f"{i + 1}. {step.describe()}" in comment_text(src)
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
    plain = wb.Chain.from_dict({**chain.to_dict(), "steps": chain.to_dict()["steps"][1:]}).run(small_images,
                                                                                            backend="dali")
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


# ---------------------------------------------------------------------------------------
# Folders of mixed sizes in the training loader (a batch must be one tensor).
# ---------------------------------------------------------------------------------------
def tiny_folder(root, sizes):
    """PNG files of random pixels, one per (height, width), in a class folder each (the label
    then tells which file a sample came from)."""
    rng = np.random.default_rng(3)
    for k, (h, w) in enumerate(sizes):
        (root / f"c{k}").mkdir(parents=True)
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(root / f"c{k}" / f"img_{k}.png")
    return root


MIXED = [(40, 48), (36, 52), (40, 48), (30, 30)]
# Normalize with mean 0 and std 1: the loader's output is the (resized) image / 255, checkable.
PLAIN = wb.Chain(seed=2).add("Normalize", mean=[0.0, 0.0, 0.0], std=[1.0, 1.0, 1.0])


def loader_batches(mod, root, batch_size=2, **kwargs):
    loader = mod.make_loader(root, batch_size, seed=1, gpu=False, threads=1, **kwargs)
    return [(b[0]["images"].numpy().copy(), b[0]["labels"].numpy().ravel().tolist()) for b in loader]


def test_mixed_sizes_without_a_size_fixing_step_is_a_clear_error(tmp_path):
    import re

    root = tiny_folder(tmp_path / "mixed", MIXED)
    chain = wb.Chain(seed=2).add("HorizontalFlip", p=0.5).add("Brightness").add("Normalize")
    src = chain.export("dali")
    # Said up front, next to the steps and in --help.
    assert "\n# Output size: not fixed: no step sets it, so each image keeps its own size. A folder of one" in src
    assert "FIXES_SIZE = False" in src and "RESIZE_AT = 3" in src
    mod = import_export(chain, "dali", tmp_path, "aug_dali_mixed")
    with pytest.raises(ValueError) as error:
        loader_batches(mod, root)
    message = str(error.value)
    named = re.findall(r"(\S+\.png) is (\d+)x(\d+)", message)
    assert len(named) == 2 and named[0][1:] != named[1][1:]
    for path, h, w in named:  # the sizes said are the files' own
        assert Image.open(path).size == (int(w), int(h)) and str(root) in path
    for fix in ("add a RandomResizedCrop, Resize, CenterCrop, RandomCrop, Pad or RandomSizedCrop step to the chain in "
                "the workbench",
                "--resize HxW", "make_loader's resize=(224, 224)", "at the end of the chain"):
        assert fix in message
    # A step that mixes samples needs one size before it: the error says so (from inside the pipeline for CutMix).
    mixing = import_export(wb.Chain(seed=2).add("CutMix").add("Resize", size=[20, 20]), "dali", tmp_path,
                           "aug_dali_mixed_cutmix")
    assert mixing.RESIZE_AT == 0 and not mixing.FIXES_SIZE
    with pytest.raises(ValueError, match=r"before step 1 in the workbench.*right before step 1"):
        loader_batches(mixing, root)


def test_resize_trains_a_folder_of_mixed_sizes(tmp_path, capsys):
    root = tiny_folder(tmp_path / "mixed", MIXED)
    mod = import_export(PLAIN, "dali", tmp_path, "aug_dali_resize")
    src = (tmp_path / "aug_dali_resize.py").read_text()
    assert "images = fn.resize(images, size=list(resize), interp_type=types.INTERP_LINEAR, antialias=True)" in src
    batches = loader_batches(mod, root, resize=(24, 32))
    assert len(batches) == 2 and sorted(sum((labels for _, labels in batches), [])) == [0, 1, 2, 3]
    for images, labels in batches:
        assert images.shape == (2, 24, 32, 3) and images.dtype == np.float32
        for image, label in zip(images, labels):
            # DALI's antialiased linear resize is PIL's BILINEAR (a triangle filter widened when shrinking).
            source = Image.open(root / f"c{label}" / f"img_{label}.png")
            expected = np.asarray(source.resize((32, 24), Image.BILINEAR), dtype=np.float32) / 255
            assert np.abs(image - expected).mean() < 2 / 255
    with pytest.raises(ValueError, match="resize must be"):
        mod.make_loader(root, 2, gpu=False, threads=1, resize=(24,))
    # The command line takes it as HxW, and --help says what the chain does with sizes.
    assert mod.size_argument("24x32") == (24, 32) and mod.size_argument("24") == (24, 24)
    with pytest.raises(SystemExit):
        mod.main(["--images", str(root), "--help"])
    assert "--resize HxW" in capsys.readouterr().out.replace("\n", " ")


def test_one_size_folder_and_size_fixing_chains_need_no_resize(tmp_path):
    one_size = tiny_folder(tmp_path / "one", [(40, 48)] * 4)
    mod = import_export(PLAIN, "dali", tmp_path, "aug_dali_one_size")
    for images, labels in loader_batches(mod, one_size):
        assert images.shape == (2, 40, 48, 3)
        for image, label in zip(images, labels):
            source = np.asarray(Image.open(one_size / f"c{label}" / f"img_{label}.png"), dtype=np.float32) / 255
            assert np.abs(image - source).max() < 1e-6
    mixed = tiny_folder(tmp_path / "mixed", MIXED)
    crop = wb.Chain(seed=2).add("CenterCrop", size=[24, 24]).add("MixUp").add("Brightness")
    assert "# Output size: 24x24, fixed by step 1 (CenterCrop): folders of mixed sizes train as they are." \
        in crop.export("dali")
    fixed = import_export(crop, "dali", tmp_path, "aug_dali_fixed")
    assert fixed.FIXES_SIZE
    batches = loader_batches(fixed, mixed)
    assert len(batches) == 2 and all(images.shape == (2, 24, 24, 3) for images, _ in batches)


def test_resize_defines_on_the_gpu():
    """The resize and the steps around it (a mixing step after it) define on the GPU graph."""
    from workbench.codegen import emit, load_module

    module = load_module(emit(wb.Chain(seed=2).add("Brightness").add("MixUp").add("Normalize"), "dali"), "dali")
    assert module.RESIZE_AT == 1
    module.training_pipeline(["a.jpg", "b.jpg"], [0, 1], gpu=True, resize=(32, 32), batch_size=4, num_threads=1,
                             device_id=None)
