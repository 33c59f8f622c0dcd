"""Shared fixtures: small real photographs and the DESIGN.md example chain."""
from __future__ import annotations

import contextlib
import dataclasses
import html
import importlib
import io
import json
import re
import os
import subprocess
import sys
import types
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # no PyPI version check on import

try:
    from nvidia.dali._utils import dali_trace
except ImportError:  # DALI is optional
    dali_trace = None
if dali_trace is not None and hasattr(dali_trace, "set_tracing"):
    # DALI keeps the Python stack that defined each operator, for its error messages. That was half
    # the time of defining the graphs the suite defines by the hundred (MedianBlur's has 4,000
    # operators), and no test reads it. The graphs are the same either way (DALI's private switch).
    dali_trace.set_tracing(enabled=False)

import workbench as wb
from torchvision_beside_cpu_torch import tolerate_missing_torchvision_kernels
from workbench.codegen.compiler import compile_source
from workbench.targets import SAMPLE_TARGETS
from workbench.examples import IMAGENET_TRAIN
from workbench.ops import REGISTRY
from workbench.ops.spec import TargetRule
from workbench.ui.preview import jpeg_of

tolerate_missing_torchvision_kernels()  # before any test imports torchvision

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: needs a CUDA GPU; skipped without one. bench/gpu_check.py runs every "
                            "test so marked on a GPU machine")
    config.addinivalue_line("markers", "gpu_aware: runs with and without a GPU and checks something else on each; "
                            "bench/gpu_check.py runs it on the GPU too")


def pytest_collection_modifyitems(config, items):
    # One marker, one skip: the GPU check selects the CUDA tests by marker (-m "cuda or gpu_aware"), so a test
    # that skips itself some other way would never be run on a GPU.
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (bench/gpu_check.py runs it on one)")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)

DESIGN_CHAIN = IMAGENET_TRAIN


@pytest.fixture(scope="session")
def sample_images() -> list[np.ndarray]:
    return wb.load_images(ROOT / "sample_data")


@pytest.fixture(scope="session")
def small_images(sample_images) -> list[np.ndarray]:
    """Six sample photos cut to the same 96x128 size (centre crops of downscaled photos)."""
    out = []
    for img in sample_images[:6]:
        pil = Image.fromarray(img)
        scale = 144 / min(pil.size)
        pil = pil.resize((round(pil.width * scale), round(pil.height * scale)), Image.BILINEAR)
        w, h = pil.size
        out.append(np.asarray(pil)[(h - 96) // 2:(h - 96) // 2 + 96, (w - 128) // 2:(w - 128) // 2 + 128].copy())
    return out


@pytest.fixture(scope="session")
def small_folder(tmp_path_factory, small_images) -> Path:
    """The small images as lossless PNG files, names in the same order as the list."""
    folder = tmp_path_factory.mktemp("small_images")
    for i, img in enumerate(small_images):
        Image.fromarray(img).save(folder / f"img_{i:02d}.png")
    return folder


@pytest.fixture(scope="session")
def square_images(sample_images) -> list[np.ndarray]:
    """The first eight sample photos cut to their central square (sizes differ between photos),
    for ops with `square_input` (RandomRotate90, Transpose)."""
    out = []
    for img in sample_images[:8]:
        h, w = img.shape[:2]
        side = min(h, w)
        out.append(img[(h - side) // 2:(h - side) // 2 + side, (w - side) // 2:(w - side) // 2 + side].copy())
    return out


@pytest.fixture(scope="session")
def square_folder(tmp_path_factory, small_images) -> Path:
    """The small images cut to their central 96x96 square, as lossless PNG files in the same
    order (for ops with `square_input`)."""
    folder = tmp_path_factory.mktemp("square_images")
    for i, img in enumerate(small_images):
        Image.fromarray(np.ascontiguousarray(img[:, 16:112])).save(folder / f"img_{i:02d}.png")
    return folder


@pytest.fixture
def unfollowed_op(monkeypatch) -> str:
    """The name of an op whose targets cannot follow: ElasticTransform's lowerings with a TargetRule
    that refuses. Every op of the catalogue moves targets; the refusal must still hold for the next
    op that cannot (a spec without geometry must say why)."""
    spec = dataclasses.replace(wb.get_op("ElasticTransform"), name="UnfollowedWarp",
                               targets=TargetRule(unsupported="its field is not reported"))
    monkeypatch.setitem(REGISTRY, spec.name, spec)
    return spec.name


@pytest.fixture
def design_chain() -> wb.Chain:
    return wb.Chain.from_dict(DESIGN_CHAIN)


def op_rng(op: str) -> np.random.Generator:
    """A generator seeded by the op's name, the same in every process (str's hash() is salted per
    process, which would test other parameters on every run and make a failure unrepeatable)."""
    return np.random.default_rng(zlib.crc32(op.encode()))


def random_step_dict(op: str, rng: np.random.Generator, p: float | None = None) -> dict:
    """A valid step for `op` with every parameter drawn at random from its valid domain."""
    spec = wb.get_op(op)
    if p is None:
        p = 1.0 if spec.always_applies else round(float(rng.uniform(0, 1)), 3)
    return {"op": op, "params": {prm.name: prm.random(rng) for prm in spec.params}, "p": p,
            "enabled": bool(rng.integers(2)) or True}


ENV = {**os.environ, "KORNIA_INSTALLATION_MODE": "RAISE", "PYTHONHASHSEED": "0"}


def class_folder(root: Path, small_folder: Path, classes: dict[str, list[str]]) -> Path:
    """An ImageFolder-style tree under `root`: one sub-folder per class holding copies of
    `small_folder`'s files, e.g. {"cats": ["img_00.png"], "dogs": ["img_01.png"]}."""
    for cls, names in classes.items():
        (root / cls).mkdir(parents=True)
        for name in names:
            (root / cls / name).write_bytes((small_folder / name).read_bytes())
    return root


def import_export(chain: wb.Chain, backend: str, folder: Path, name: str, **options):
    """Export `chain` to `folder/name.py` (with the export `options`: targets=, shards=, gpu_decode=)
    and import it as a module, as a training script would."""
    chain.export(backend, path=f"{name}.py", folder=folder, **options)
    sys.path.insert(0, str(folder))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(folder))


def imported_modules(tree) -> set[str]:
    """The module names a parsed source imports (`import a` and `from b import c` give a, b)."""
    import ast

    return {a.name if isinstance(n, ast.Import) else n.module for n in ast.walk(tree)
            if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}


def run_script(path: Path, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def assert_save_equals_run(chain: wb.Chain, folder: Path, tmp_path: Path, seeds, backend: str = "kornia",
                           fresh: int = 1) -> None:
    """The exported script's --save output equals chain.run(...) bit for bit, draws included.

    The first `fresh` seeds run the file as a user does (a fresh Python: it must import all it
    uses, and its `__main__` block runs); the others call the same file's main() here, which spares
    a process start (3-5 s of imports, nearly all of a one-op export test) and runs the same code.
    The per-op tests pass fresh=0: every file's header is the same template, which the chains of
    many ops (design chain, long random chains, --bench) run in fresh processes."""
    script = tmp_path / f"aug_{backend}.py"
    chain.export(backend, path=script.name, folder=tmp_path)
    images = wb.load_images(folder)
    main = None
    for k, seed in enumerate(seeds):
        out = tmp_path / f"out_{seed}.npz"
        argv = ["--images", str(folder), "--seed", str(seed), "--save", str(out)]
        if k < fresh:
            run_script(script, *argv)
        else:
            main = main or _loaded_from(script).main
            with contextlib.redirect_stdout(io.StringIO()):
                main(argv)
        saved = np.load(out)
        expected = chain.run(images, backend=backend, device="cpu", seed=seed)
        assert_same_images(saved_images(saved, expected.images), expected.images,
                           f"seed {seed}: --save differs from chain.run")
        # The saved draws are the ones chain.run reports.
        for i, step in chain.enabled_steps():
            key = f"params.step{i + 1}_{step.op}." + ("applied" if backend == "dali" else "batch_prob")
            if key in saved:  # DALI saves no coin for steps with p = 1
                assert [bool(v > 0.5) for v in saved[key]] == [row[i]["applied"] for row in expected.params]


def saved_images(saved, expected):
    """What an export's --save wrote, in chain.run's form: one array, or one array per image when
    the chain left the images at sizes of their own (then --save names them image_00000, ...)."""
    if isinstance(expected, list):
        return [saved[f"image_{i:05d}"] for i in range(len(expected))]
    return saved["images"]


def assert_same_images(got, expected, message: str) -> None:
    """Equal pixels, dtypes and sizes, for a batch array or a list of images at sizes of their own."""
    if isinstance(expected, list):
        assert isinstance(got, list), f"{message}: one array where a list of images was expected"
        assert [a.shape for a in got] == [a.shape for a in expected], f"{message}: sizes differ"
        assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(got, expected)), message
    else:
        assert got.dtype == expected.dtype and np.array_equal(got, expected), message


def _loaded_from(script: Path):
    """The module of an exported file (the file's text as it is on disk), loaded under a name of its
    own (not __main__) into a namespace of its own.

    Compiled a top-level block at a time as the workbench compiles what it runs
    (codegen/compiler.py): a function whose text and place equal another export's, or the module
    chain.run executes, is the same code, so DALI's autograph rewrites it once per session rather
    than once per file (about 0.4 s an export). Compilation is deterministic: the same text
    compiled twice runs the same either way."""
    module = types.ModuleType(f"_export_{abs(hash(str(script)))}")
    module.__file__ = str(script)
    for code in compile_source(script.read_text(encoding="utf-8"), str(script)):
        exec(code, module.__dict__)
    return module


def assert_bench_output(stdout: str, runs: int) -> float:
    """An export's --bench output: the timed runs, then "images/s: <median of the runs>" last."""
    *_, runs_line, last = stdout.strip().splitlines()
    assert last.startswith("images/s: ") and float(last.split(": ")[1]) > 0
    rates = sorted(float(r) for r in runs_line.split(": ")[1].split(", "))
    assert len(rates) == runs and float(last.split(": ")[1]) == pytest.approx(float(np.median(rates)), abs=0.051)
    return float(last.split(": ")[1])


def save_annotated(script, out, *more):
    """The exported `script`'s --save to `out` on the sample photos with their COCO file and masks
    (`more`: further arguments, such as "--device", "cuda")."""
    return subprocess.run([sys.executable, str(script), "--images", str(wb.SAMPLE_DATA), "--coco",
                           str(SAMPLE_TARGETS / "instances.json"), "--masks", str(SAMPLE_TARGETS / "masks"),
                           "--save", str(out), *more], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def v2():
    """torchvision.transforms.v2, to compare with. CI must compare with the real thing, never skip it
    (scripts/test.sh installs torchvision); elsewhere the test is skipped without it."""
    if not os.environ.get("CI"):
        pytest.importorskip("torchvision")
    return importlib.import_module("torchvision.transforms.v2")


def boxes_for(chain, images) -> dict:
    """{"boxes": one box per image over its middle half} for a chain with a step that draws from the
    boxes (RandomIoUCrop: a run without them is refused), else {}: what the every-op tests hand
    chain.run so that such a step runs like any other."""
    if not any(step.spec.reads_boxes for _, step in chain.enabled_steps()):
        return {}
    return {"boxes": [[[w / 4, h / 4, 3 * w / 4, 3 * h / 4]] for h, w in (np.shape(i)[:2] for i in images)]}


def change_statistics(images: list[np.ndarray], before: list[np.ndarray]) -> np.ndarray:
    """Per-channel mean and standard deviation of the change each image underwent (images in [0, 1]):
    what two runs of a noise op (`Parity.statistics`) that draw their noise apart can agree on."""
    diff = np.concatenate([(x - y).reshape(-1, x.shape[-1]) for x, y in zip(images, before, strict=True)])
    return np.concatenate([diff.mean(axis=0), diff.std(axis=0)])


def saves_without_boxes(op: str) -> bool:
    """Whether the every-op `--save` tests can run `op` on a folder without annotations: an op that
    draws from the boxes saves with --coco in tests/test_iou_crop.py."""
    return not wb.get_op(op).reads_boxes


def shape_box(n, height, width):
    """A rectangle well inside the image, placed differently in each image: [x0, y0, x1, y1)."""
    x0, y0 = width // 5 + 3 * n % 7, height // 4 + 2 * n % 5
    return x0, y0, x0 + width // 2, y0 + height // 3


def annotated_folder(root, sizes, keypoints=True, suffix=".png"):
    """Images (PNG, or JPEG with suffix ".jpg") with one bright rectangle each, its mask (label 1)
    and a COCO file with its box and 3 keypoints inside it. Returns (images folder, COCO path,
    masks folder)."""
    images, masks = root / "images", root / "masks"
    images.mkdir()
    masks.mkdir()
    coco = {"images": [], "annotations": [], "categories": [{"id": 1, "name": "shape"}]}
    for n, (height, width) in enumerate(sizes):
        x0, y0, x1, y1 = shape_box(n, height, width)
        mask = np.zeros((height, width), np.uint8)
        mask[y0:y1, x0:x1] = 1
        Image.fromarray(np.repeat(mask[:, :, None] * 255, 3, axis=2)).save(images / f"img{n}{suffix}", quality=95)
        Image.fromarray(mask).save(masks / f"img{n}.png")
        coco["images"].append({"id": n, "file_name": f"img{n}{suffix}", "height": height, "width": width})
        annotation = {"id": n, "image_id": n, "category_id": 1, "bbox": [x0, y0, x1 - x0, y1 - y0]}
        if keypoints:
            annotation["keypoints"] = [x0 + 3, y0 + 3, 2, x1 - 4, y0 + 3, 2, (x0 + x1) // 2, y1 - 4, 2]
        coco["annotations"].append(annotation)
    (root / "instances.json").write_text(json.dumps(coco))
    return images, root / "instances.json", masks


def said(app, line: str = "message") -> str:
    """What one of the app's message lines says, as the user reads it (message, notice,
    preview_error; or a panel's: said(app.exports), said(app.estimates))."""
    return html.unescape(re.sub(r"<[^>]+>", "", getattr(app, line).value))


def tile(app, backend: str, image: int, draw: int) -> np.ndarray:
    """Decoded pixels of one preview tile, as the page shows them: draw 0 is image `image`'s
    original, draw k its k-th draw on `backend`, cut from the sheet of strips."""
    if draw == 0:
        return np.asarray(Image.open(io.BytesIO(bytes(app.preview.originals[image].value))))
    line, x = app.preview.tile_position(backend, image, draw - 1)
    sheet = np.asarray(Image.open(io.BytesIO(jpeg_of(app.preview.sheet.value))))
    top = app.preview.strip_top(image, line)
    return sheet[top:top + app.cell, x:x + app.cell]


def comment_text(source: str) -> str:
    """The comments of generated source as one text, a comment broken over lines (codegen/layout.py)
    joined again: where a test looks for a step's description."""
    return " ".join(line.strip()[1:].strip() for line in source.splitlines() if line.strip().startswith("#"))
