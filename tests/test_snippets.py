"""The snippet form of an export (codegen/snippets.py): the chain in the library's own terms, short,
seeded, one line per step, and what its docstring claims about the preview holds: Kornia's snippet
draws what the preview draws and gives the program's step-by-step pixels bit for bit (the fused
preview within the stated tolerance); Albumentations' and DALI's give the preview's pixels bit for bit."""
import ast
import subprocess
import sys

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.errors import ExportError

from conftest import _loaded_from

# The docstring's figures (codegen/snippets.py): the fused preview against these modules' step-by-step run.
FUSED_MEAN_MAX = 1.5 / 255  # after two or more resampling steps in a row
LEVELS_MEAN_MAX = 2 / 255  # a first resize and a ColorJitter on uint8 levels, then a Normalize
ONE_RESAMPLING_MAX = 1e-4
ONE_LEVEL_MAX = 1 / 255 + 1e-4  # a first resize run on the CPU's uint8 levels, steps that never amplify after it

CHAINS = {
    "imagenet": lambda: wb.Chain(seed=1).add("RandomResizedCrop", size=[96, 96]).add("HorizontalFlip", p=0.5)
    .add("ColorJitter", p=0.8, brightness=[0.6, 1.4], contrast=[0.6, 1.4], saturation=[0.6, 1.4], hue=[-0.1, 0.1])
    .add("Rotate").add("Normalize"),
    "own_classes": lambda: wb.Chain(seed=2).add("Resize", size=[120, 120]).add("GaussianBlur", p=0.5)
    .add("Grayscale", p=0.3).add("GaussianNoise", p=0.5),
    "group": lambda: wb.Chain(seed=3)
    .add("OneOf", steps=[wb.Step.create("Rotate"), wb.Step.create("VerticalFlip", p=1.0)]).add("Brightness"),
    "fused_warps": lambda: wb.Chain(seed=4).add("Rotate", degrees=[-20, 20]).add("Affine").add("Contrast"),
}
RESAMPLES_TWICE_IN_A_ROW = {"fused_warps"}
# Chains whose preview on a CPU resizes the uint8 levels first (the program's LEVEL_STEPS): "imagenet" then
# jitters colours on those levels too (and a hue moves far for a level's change near grey: the mean bound),
# "own_classes" blurs and greys them too and adds noise (which never widen a difference: the one-level bound).
FIRST_RESIZE_ON_LEVELS = {"imagenet": "mean", "own_classes": "max"}


@pytest.fixture(scope="module")
def cuts(sample_images):
    return [np.ascontiguousarray(i[:200, :200]) for i in sample_images[:4]]


def _namespace(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<snippet>", "exec"), namespace)
    return namespace


def _kornia_snippet_run(chain, images) -> np.ndarray:
    augmentation = _namespace(chain.export("kornia", form="snippet"))["augmentation"]
    batch = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).float() / 255.0
    torch.manual_seed(chain.seed)
    with torch.no_grad():
        return augmentation(batch).permute(0, 2, 3, 1).numpy()


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_kornia_snippet_gives_the_step_by_step_run_bit_for_bit_and_the_preview_within_its_tolerance(name, cuts):
    chain = CHAINS[name]()
    ours = _kornia_snippet_run(chain, cuts)
    # The program form, a separate source loaded on its own: its unfused run draws as the preview draws.
    program = load_module(emit(chain, "kornia"), "kornia")
    step_by_step, _ = program.augment_images(cuts, seed=chain.seed, fuse=False)
    assert ours.shape == step_by_step.shape and np.array_equal(ours, step_by_step)
    preview = chain.run(cuts, backend="kornia").images
    if name in RESAMPLES_TWICE_IN_A_ROW or FIRST_RESIZE_ON_LEVELS.get(name) == "mean":
        difference = np.abs(ours - preview).mean()
        bound = FUSED_MEAN_MAX if name in RESAMPLES_TWICE_IN_A_ROW else LEVELS_MEAN_MAX
        assert 0 < difference <= bound, difference * 255  # fused there: must differ, within the bound
    elif name in FIRST_RESIZE_ON_LEVELS:
        difference = np.abs(ours - preview).max()
        assert 0 < difference <= ONE_LEVEL_MAX, difference * 255
    else:
        assert np.abs(ours - preview).max() <= ONE_RESAMPLING_MAX


def test_kornia_snippet_draws_differ_with_another_seed(cuts):
    # Guards the test above against a chain that draws nothing: another seed moves the pixels.
    chain = CHAINS["imagenet"]()
    other = wb.Chain.from_dict({**chain.to_dict(), "seed": 99})
    assert not np.array_equal(_kornia_snippet_run(chain, cuts), _kornia_snippet_run(other, cuts))


@pytest.mark.parametrize("name", sorted(set(CHAINS) - {"fused_warps"}))
def test_albumentations_snippet_gives_the_preview_bit_for_bit(name, cuts):
    chain = CHAINS[name]()
    augmentation = _namespace(chain.export("albumentations", form="snippet"))["augmentation"]
    ours = [augmentation(image=image)["image"] for image in cuts]
    preview = chain.run(cuts, backend="albumentations").images
    assert all(o.dtype == p.dtype and np.array_equal(o, p) for o, p in zip(ours, preview))


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["imagenet", "own_classes"])
def test_kornia_snippet_on_cuda_gives_the_step_by_step_cuda_run(name, cuts):
    # The docstring's claim on a GPU: the modules moved there draw as the preview's do (on the CPU generator).
    chain = CHAINS[name]()
    augmentation = _namespace(chain.export("kornia", form="snippet"))["augmentation"].to("cuda")
    batch = (torch.from_numpy(np.stack(cuts)).permute(0, 3, 1, 2).float() / 255.0).to("cuda")
    torch.manual_seed(chain.seed)
    with torch.no_grad():
        ours = augmentation(batch).permute(0, 2, 3, 1).cpu().numpy()
    program = load_module(emit(chain, "kornia"), "kornia")
    step_by_step, _ = program.augment_images(cuts, seed=chain.seed, device="cuda", fuse=False)
    assert np.array_equal(ours, step_by_step)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["imagenet", "group"])
def test_dali_snippet_on_the_gpu_gives_the_gpu_preview(name, cuts, tmp_path):
    chain = CHAINS[name]()
    path = tmp_path / f"{name}.py"
    chain.export("dali", path=path, form="snippet")
    ours = _dali_snippet_run(_loaded_from(path), cuts, device="cuda")
    preview = chain.run(cuts, backend="dali", device="cuda").images
    assert all(o.dtype == p.dtype and np.array_equal(o, p) for o, p in zip(ours, preview))


def _dali_snippet_run(module, images, device="cpu"):
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(enable_conditionals=module.CONDITIONALS)
    def fed():
        batch = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
        return module.augment(batch.gpu() if device != "cpu" else batch)

    pipe = fed(batch_size=len(images), num_threads=1, device_id=0 if device != "cpu" else None, seed=123)
    pipe.build()
    pipe.feed_input("images", [np.ascontiguousarray(image) for image in images])
    (out,) = pipe.run()
    out = out.as_cpu() if device != "cpu" else out
    return [np.asarray(out[k]) for k in range(len(images))]


@pytest.mark.parametrize("name", sorted(set(CHAINS) - {"own_classes"}) + ["dali_own"])
def test_dali_snippet_gives_the_preview_bit_for_bit(name, cuts, tmp_path):
    pytest.importorskip("nvidia.dali")
    chain = CHAINS[name]() if name in CHAINS else wb.Chain(seed=6).add("Resize", size=[120, 120]).add("GaussianBlur")
    path = tmp_path / f"{name}.py"
    chain.export("dali", path=path, form="snippet")
    ours = _dali_snippet_run(_loaded_from(path), cuts)
    preview = chain.run(cuts, backend="dali").images
    assert len(ours) == len(preview)
    assert all(o.dtype == p.dtype and np.array_equal(o, p) for o, p in zip(ours, preview))


def test_dali_snippets_pipeline_reads_decodes_and_augments_a_folder(small_folder, tmp_path):
    pytest.importorskip("nvidia.dali")
    chain = wb.Chain(seed=2).add("CenterCrop", size=[48, 48]).add("HorizontalFlip", p=0.5)
    root = tmp_path / "data"
    (root / "cats").mkdir(parents=True)
    for image in sorted(small_folder.iterdir()):
        (root / "cats" / image.name).write_bytes(image.read_bytes())
    path = tmp_path / "aug.py"
    chain.export("dali", path=path, form="snippet")
    module = _loaded_from(path)
    pipe = module.augmentation_pipeline(str(root), gpu=False, batch_size=2, num_threads=1, device_id=None)
    pipe.build()
    images, labels = pipe.run()
    assert [np.asarray(images[k]).shape for k in range(2)] == [(48, 48, 3)] * 2
    assert [int(np.asarray(labels[k])[0]) for k in range(2)] == [0, 0]


def test_a_five_step_chain_of_kornias_own_modules_is_a_short_snippet_with_one_line_per_step():
    chain = CHAINS["imagenet"]()
    source = chain.export("kornia", form="snippet")
    lines = source.splitlines()
    assert len(lines) <= 40, len(lines)
    assert "has no class" not in source
    sequential = next(node.value for node in ast.parse(source).body
                      if isinstance(node, ast.Assign) and node.targets[0].id == "augmentation")
    assert [ast.unparse(arg.func) for arg in sequential.args] == [
        "K.RandomResizedCrop", "K.RandomHorizontalFlip", "K.ColorJitter", "K.RandomRotation", "K.Normalize"]
    assert "    # 2. HorizontalFlip p=0.5" in lines and "SEED = 1" in lines


def test_a_snippet_says_which_classes_are_the_workbenchs_own_and_brings_them():
    source = CHAINS["own_classes"]().export("kornia", form="snippet")
    assert "Kornia has no class for RandomGrayscaleMethod, WbGaussianBlur, WbGaussianNoise, WbResize" in source
    assert "class WbGaussianBlur(" in source and "class WbResize(" in source
    source = CHAINS["imagenet"]().export("albumentations", form="snippet")
    assert "class WbRandomResizedCrop(A.RandomResizedCrop)" in source and "def seed_transforms(" in source
    assert "def window(" not in source  # a local variable named like a targets helper copies nothing


@pytest.mark.parametrize("backend", ["kornia", "albumentations", "dali"])
def test_every_ops_snippet_defines_what_it_uses_and_imports_only_what_it_uses(backend, tmp_path):
    # ruff's pyflakes rules over one snippet per op (mixing ops refuse, below): the copied classes
    # brought everything they use, and nothing more is imported.
    paths = []
    for op in wb.list_ops(backend=backend):
        chain = wb.Chain(seed=1).add("Resize", size=[64, 64]).add(op)
        if any(step.spec.mixes_batch or step.spec.reads_boxes for step in chain.steps):
            continue
        paths.append(tmp_path / f"{op}.py")
        paths[-1].write_text(chain.export(backend, form="snippet"))
    assert len(paths) > 40
    # The project's own rules (pyproject.toml's ruff settings): pyflakes, pycodestyle, 120 columns.
    found = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "E,F,W",
                            "--line-length", "120", "--output-format", "concise", *map(str, paths)],
                           capture_output=True, text=True)
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-2000:]


def test_snippet_runs_as_a_file_of_its_own(tmp_path, cuts):
    # Pasted into a file and run by Python: nothing from the workbench is imported.
    chain = CHAINS["own_classes"]()
    path = tmp_path / "aug.py"
    chain.export("kornia", path=path, form="snippet")
    np.save(tmp_path / "cuts.npy", np.stack(cuts))
    script = (f"import numpy as np, torch, sys; sys.modules.pop('workbench', None); exec(open({str(path)!r}).read())\n"
              f"batch = torch.from_numpy(np.load({str(tmp_path / 'cuts.npy')!r})).permute(0, 3, 1, 2).float() / 255\n"
              "torch.manual_seed(SEED)\n"
              f"np.save({str(tmp_path / 'out.npy')!r}, augmentation(batch).permute(0, 2, 3, 1).numpy())\n"
              "assert not any(m.startswith('workbench') for m in sys.modules), 'the snippet imported the workbench'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert np.array_equal(np.load(tmp_path / "out.npy"), _kornia_snippet_run(chain, cuts))


def test_mixing_steps_and_unknown_forms_are_refused_with_the_fix():
    chain = wb.Chain().add("Resize", size=[32, 32]).add("MixUp")
    for backend in ("kornia", "albumentations", "dali"):
        with pytest.raises(ExportError, match=r"MixUp mixes the samples of a batch .*form='program'"):
            chain.export(backend, form="snippet")
    with pytest.raises(ExportError, match=r"RandomIoUCrop draws its window from each image's boxes.*--coco"):
        wb.Chain().add("RandomIoUCrop").export("kornia", form="snippet")
    with pytest.raises(ExportError, match=r"unknown export form 'page'; choose 'program' .* or 'snippet'"):
        wb.Chain().add("Invert").export("kornia", form="page")
    assert "def main(" in wb.Chain().add("Invert").export("kornia")  # the default stays the program
