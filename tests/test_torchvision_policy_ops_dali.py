"""The DALI ops of torchvision's augmentation policies (workbench/runtime/dali_tv_policies.py) give, bit for
bit, what torchvision's `_AutoAugmentBase._apply_image_or_video_transform` gives on the same uint8 CHW tensor,
run by a real torchvision (scripts/test.sh installs it; see tests/torchvision_beside_cpu_torch.py): on the
sample photos, on them resized to 150x200 and to 97x131, and on a 5x7 crop, at magnitudes of both signs up to
the policies' extremes, with nearest and bilinear warps. DALI runs the ops on the CPU here, in one pipeline per
op (and through auto_aug's `select`, as the policies call them); on the GPU their graphs are only defined,
and checked for the identical CPU operators DALI would merge (tests/dali_graph_check.py).

torch's contrast depends on its intra-op thread count (its float32 mean, and the blend with it); the ops
emulate one thread, as torch runs in DataLoader workers, so the references run with one thread.
"""
import ast
import contextlib
import importlib
import math
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

# CI must compare with the real thing, never skip it: scripts/test.sh installs torchvision.
torchvision = importlib.import_module("torchvision") if os.environ.get("CI") else pytest.importorskip("torchvision")
import torch  # noqa: E402
import nvidia.dali.fn as fn  # noqa: E402
import nvidia.dali.types as types  # noqa: E402
from nvidia.dali import pipeline_def  # noqa: E402
from nvidia.dali.auto_aug.core import select  # noqa: E402
from torchvision.transforms import v2  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.runtime import dali_tv_policies as tvp  # noqa: E402
from dali_graph_check import merged_cpu_inputs_of_gpu_operators  # noqa: E402

NAMES = ("identity", "shear_x", "shear_y", "translate_x", "translate_y", "rotate", "brightness", "color",
         "contrast", "sharpness", "posterize", "solarize", "auto_contrast", "equalize", "invert")
GEOMETRIC = ("shear_x", "shear_y", "translate_x", "translate_y", "rotate")
TRANSFORM_IDS = {"identity": "Identity", "shear_x": "ShearX", "shear_y": "ShearY", "translate_x": "TranslateX",
                 "translate_y": "TranslateY", "rotate": "Rotate", "brightness": "Brightness", "color": "Color",
                 "contrast": "Contrast", "sharpness": "Sharpness", "posterize": "Posterize",
                 "solarize": "Solarize", "auto_contrast": "AutoContrast", "equalize": "Equalize",
                 "invert": "Invert"}


def _shears(*tangents):
    return [math.degrees(math.atan(t)) for t in tangents]


# Magnitudes in reported units. Shears up to atan(0.99) = 44.7 degrees, with tangents whose rows or columns
# fall on rounding ties (0.2, 0.04, 0.5); rotations up to 135 degrees, with the quarter turns that put every
# pixel of a photo with an odd height-width difference on a tie; translations up to 150/331 of the size
# (added per image) and 32 pixels; factors 0.01 to 1.99; posterize 0 to 8 bits; solarize thresholds 0 to 1.
FACTORS = [0.01, 0.1, 0.5, 0.95, 1.0, 1.05, 1.6, 1.7, 1.99]
MAGNITUDES = {
    "identity": [math.nan], "auto_contrast": [math.nan], "equalize": [math.nan], "invert": [math.nan],
    "shear_x": _shears(0.99, -0.99, 0.3, -0.3, 0.2, -0.2, 0.04, 0.5, -0.231),
    "shear_y": _shears(0.99, -0.99, 0.3, -0.3, 0.2, -0.2, 0.04, 0.5, -0.231),
    "translate_x": [0.0, 1.0, -1.9, 14.5, 32.0, -32.0, 100.7],
    "translate_y": [0.0, 1.0, -1.9, 14.5, 32.0, -32.0, 100.7],
    "rotate": [135.0, -135.0, 90.0, -90.0, 180.0, 45.0, 30.0, -13.5, 4.5, 0.0],
    "brightness": FACTORS, "color": FACTORS, "contrast": FACTORS, "sharpness": FACTORS,
    "posterize": [0.0, 1.0, 2.0, 3.0, 4.0, 4.7, 5.0, 6.0, 7.0, 8.0],
    "solarize": [0.0, 1.0, 0.5, 128 / 255, 0.3, 0.999],
}
BATCH = 4  # samples per DALI run: a full-size photo's bilinear warp or equalize holds a few hundred MB
CPU_PIPELINE = {"batch_size": BATCH, "num_threads": 2, "device_id": None, "prefetch_queue_depth": 1}


@pytest.fixture(scope="module")
def images():
    """The sample photos, the same resized to 150x200 and to 97x131 (INTER_AREA), and a 5x7 crop."""
    photos = [np.ascontiguousarray(p) for p in wb.load_images("sample_data")]
    resized = [cv2.resize(p, size, interpolation=cv2.INTER_AREA) for size in ((200, 150), (131, 97)) for p in photos]
    return photos + resized + [np.ascontiguousarray(photos[0][200:205, 200:207])]


@contextlib.contextmanager
def one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def torchvision_magnitude(name, magnitude):
    """torchvision's magnitude for ours (reported units)."""
    if name.startswith("shear"):
        return math.tan(math.radians(magnitude))
    if name in ("brightness", "color", "contrast", "sharpness"):
        return magnitude - 1.0
    if name in ("translate_x", "translate_y", "rotate", "posterize", "solarize"):
        return magnitude
    return 0.0


def reference(name, image, magnitude, interpolation):
    """torchvision's op on the image as a uint8 CHW tensor, back as HWC."""
    t = v2.RandAugment(interpolation=interpolation)
    chw = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()
    with one_torch_thread():
        out = t._apply_image_or_video_transform(chw, TRANSFORM_IDS[name], torchvision_magnitude(name, magnitude),
                                                interpolation=t.interpolation, fill=t._fill)
    return out.permute(1, 2, 0).numpy()


def cases(name, images):
    """(image, magnitude) pairs: each photo once (the magnitudes in turn), the resized photos at a third of
    the magnitudes each (every magnitude on several), the 5x7 crop at all of them; translations also move
    by 150/331 of the size (either sign). Equalize leaves the full photos out."""
    out = []
    for k, image in enumerate(images):
        if name == "equalize" and image.shape[0] >= 300:
            continue  # its one-hot of every value: 200 MB a full photo, kept by DALI's pool (the others test them)
        mags = list(MAGNITUDES[name])
        if name in ("translate_x", "translate_y"):
            size = image.shape[1] if name == "translate_x" else image.shape[0]
            mags += [150 / 331 * size, -150 / 331 * size]
        if image.shape[0] >= 300:
            chosen = [mags[k % len(mags)]]
        elif image.shape[0] > 5:
            chosen = [m for j, m in enumerate(mags) if (j + k) % 3 == 0]
        else:
            chosen = mags
        out += [(image, float(np.float32(m))) for m in chosen]
    return out


@pipeline_def(enable_conditionals=False)
def one_op(name, interpolation, gpu=False):
    images = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
    magnitude = fn.external_source(name="magnitude", dtype=types.FLOAT)
    if gpu:
        images = images.gpu()
    return getattr(tvp, f"tv_policy_{name}")(images, magnitude, interpolation=interpolation), magnitude


@pipeline_def(enable_conditionals=True)
def selected(interpolation, gpu=False):
    """Each sample through the op at its "index" (NAMES' order), as a policy step calls them."""
    images = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
    index = fn.external_source(name="index", dtype=types.INT32)
    magnitude = fn.external_source(name="magnitude", dtype=types.FLOAT)
    if gpu:
        images = images.gpu()
    ops = [getattr(tvp, f"tv_policy_{name}") for name in NAMES]
    return select(ops, index, images, magnitude, interpolation=interpolation)


def run_batches(pipe, samples, **extra):
    """The pipeline's first output for (image, magnitude) samples, fed BATCH at a time; `extra` names
    other inputs (one value per sample)."""
    pipe.build()
    outputs = []
    for start in range(0, len(samples), BATCH):
        chunk = samples[start:start + BATCH]
        pipe.feed_input("images", [image for image, _ in chunk])
        pipe.feed_input("magnitude", [np.array(m, dtype=np.float32) for _, m in chunk])
        for input_name, values in extra.items():
            pipe.feed_input(input_name, [np.array(v, dtype=np.int32) for v in values[start:start + BATCH]])
        outputs += [np.array(t) for t in pipe.run()[0]]
    return outputs


def differences(ours, theirs):
    """(max abs difference, share of differing pixels, mean abs difference in levels) over all samples."""
    diffs = [np.abs(o.astype(np.int16) - t.astype(np.int16)) for o, t in zip(ours, theirs)]
    pixels = sum(d.shape[0] * d.shape[1] for d in diffs)
    worst = max(int(d.max()) for d in diffs)
    differing = sum(int(d.any(axis=2).sum()) for d in diffs) / pixels
    mae = sum(float(d.sum()) for d in diffs) / sum(d.size for d in diffs)
    return worst, differing, mae


# The colour ops ignore the interpolation: they run once (and through select with bilinear).
@pytest.mark.parametrize("name, interpolation", [(name, "nearest") for name in NAMES] +
                         [(name, "bilinear") for name in GEOMETRIC])
def test_each_op_is_torchvisions_bit_for_bit(name, interpolation, images):
    samples = cases(name, images)
    ours = run_batches(one_op(name, interpolation, **CPU_PIPELINE), samples)
    theirs = [reference(name, image, m, interpolation) for image, m in samples]
    assert [o.shape for o in ours] == [t.shape for t in theirs] and all(o.dtype == np.uint8 for o in ours)
    worst, differing, mae = differences(ours, theirs)
    pixels = sum(o.shape[0] * o.shape[1] for o in ours)
    print(f"{name} {interpolation}: {len(samples)} samples, {pixels} pixels, max abs diff {worst}, "
          f"differing pixels {differing:.2e}, MAE {mae:.4f} levels")
    bad = [(image.shape, m) for (image, m), o, t in zip(samples, ours, theirs) if not np.array_equal(o, t)]
    assert not bad, f"{name} {interpolation}: differs from torchvision for (shape, magnitude) {bad[:5]}"


def gray_ties():
    """The colours whose floored grayscale differs between torch's sums (r * 0.2989 rounded, then + g * 0.587
    and + b * 0.114 each fused) and the same sums rounded step by step: their weighted sum is within a float32
    rounding of an integer (21 of the 2**24 colours), as an N x 1 x 3 image."""
    w = [np.float64(np.float32(v)) for v in (0.2989, 0.587, 0.114)]
    rg = np.arange(65536)
    r, g = (rg >> 8).astype(np.float64), (rg & 255).astype(np.float64)
    red = (r * w[0]).astype(np.float32).astype(np.float64)
    fused = (g * w[1] + red).astype(np.float32).astype(np.float64)
    apart = ((g * w[1]).astype(np.float32).astype(np.float64) + red).astype(np.float32).astype(np.float64)
    colours = []
    for b in range(256):
        one = np.floor((b * w[2] + fused).astype(np.float32))
        other = np.floor(((b * w[2]).astype(np.float32).astype(np.float64) + apart).astype(np.float32))
        colours += [(k >> 8, k & 255, b) for k in np.nonzero(one != other)[0]]
    return np.array(colours, dtype=np.uint8)[:, None, :]


def test_grayscale_rounds_as_torchs_fused_sums():
    ties = gray_ties()
    assert len(ties) > 10
    samples = [(ties, f) for f in (0.01, 0.5, 1.5)]
    for name in ("color", "contrast"):
        ours = run_batches(one_op(name, "nearest", **CPU_PIPELINE), samples)
        for (image, factor), out in zip(samples, ours):
            assert np.array_equal(out, reference(name, image, factor, "nearest")), (name, factor)


def _torch_gray_mean(image):
    """torch's float32 mean of torchvision's floored grayscale, with one thread, and the exact mean."""
    chw = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).contiguous()
    gray = v2.functional.rgb_to_grayscale(chw.float()).floor()
    with one_torch_thread():
        mean = np.float32(torch.mean(gray).item())
    return mean, np.float32(float(gray.double().sum()) / gray.numel())


def _blend_levels(levels, mean, factors, fused):
    """torch's contrast blend of float32 `levels` (one row per factor): fused, or the product rounded apart."""
    factors = np.asarray(factors, np.float32)[:, None]
    alpha = (np.float32(1) - factors).astype(np.float32)
    scaled = (np.asarray(levels, np.float32)[None] * factors).astype(np.float32)
    if fused:
        out = (np.float64(mean) * alpha.astype(np.float64) + scaled).astype(np.float32)
    else:
        out = (scaled + (mean * alpha).astype(np.float32)).astype(np.float32)
    return np.clip(out, 0, 255).astype(np.uint8)


def contrast_cases_that_tell(images):
    """Two (image, factor) samples where the one-thread details of torch's contrast change levels: a
    resized photo whose last CHW elements torch blends without fusing, at a factor where that gives other
    levels; and a noise image whose float32 mean (torch's lanes) differs from the exact one, at a factor where
    that does. Found here, not hard-coded, so that they stay telling."""
    factors = np.round(np.arange(0.01, 1.99, 0.001), 3).astype(np.float32)
    tail = None
    for image in (i for i in images if i.shape[0] < 300):
        total = image.size
        rest = total % 16
        first = total - rest + 1
        levels = np.ascontiguousarray(image.transpose(2, 0, 1)).ravel()[first:first + (rest - 1) // 4 * 4]
        if len(levels):
            mean = _torch_gray_mean(image)[0]
            tells = (_blend_levels(levels, mean, factors, True) != _blend_levels(levels, mean, factors, False))
            if tells.any():
                tail = (image, float(factors[np.nonzero(tells.any(axis=1))[0][0]]))
                break
    lanes, coarse = None, factors[::10]
    for seed in range(100):
        image = np.random.default_rng(seed).integers(100, 256, (300, 451, 3), dtype=np.uint8)
        mean, exact = _torch_gray_mean(image)
        if mean != exact:
            levels = np.unique(image)
            tells = _blend_levels(levels, mean, coarse, True) != _blend_levels(levels, exact, coarse, True)
            if tells.any():
                lanes = (image, float(coarse[np.nonzero(tells.any(axis=1))[0][0]]))
                break
    assert tail and lanes, "no sample tells torch's one-thread contrast from another"
    return [tail, lanes]


def test_contrast_follows_torch_on_one_thread_where_it_tells(images):
    samples = contrast_cases_that_tell(images)
    ours = run_batches(one_op("contrast", "nearest", **CPU_PIPELINE), samples)
    for (image, factor), out in zip(samples, ours):
        assert np.array_equal(out, reference("contrast", image, factor, "nearest")), (image.shape, factor)


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_select_runs_each_sample_through_its_op_with_the_interpolation_asked(interpolation, images):
    # select hands its keyword arguments to every op: interpolation="bilinear" reaches the warps, the colour
    # ops take it and ignore it.
    small = [image for image in images if image.shape[:2] == (97, 131)][:3]
    rng = np.random.default_rng(3)
    samples, index = [], []
    for k, name in enumerate(NAMES):
        for image in small:
            mags = MAGNITUDES[name]
            samples.append((image, float(np.float32(mags[rng.integers(len(mags))]))))
            index.append(k)
    order = rng.permutation(len(samples))  # the ops mixed within each batch
    samples, index = [samples[i] for i in order], [index[i] for i in order]
    ours = run_batches(selected(interpolation, **CPU_PIPELINE), samples, index=index)
    for (image, m), k, out in zip(samples, index, ours):
        assert np.array_equal(out, reference(NAMES[k], image, m, interpolation)), (NAMES[k], m)


def test_an_unknown_interpolation_is_refused():
    with pytest.raises(ValueError, match="bicubic"):
        one_op("rotate", "bicubic", batch_size=1, num_threads=1, device_id=None).build()


def _cpu_inputs_of_gpu_operators(pipe):
    """GPU operators whose regular (not argument) inputs come from the CPU: DALI would refuse them."""
    if pipe._ops is None:
        pipe._build_graph()  # what build() does first; it needs no device
    found = []
    for op in pipe._ops:
        if getattr(op._op, "device", "?") == "gpu":
            found += [f"{op._op.schema_name} <- {node.name}" for node in op._inputs[:op.spec.NumRegularInput()]
                      if node.device != "gpu"]
    return found


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_the_graphs_define_with_the_images_on_the_gpu(interpolation):
    # Defined, never built (no GPU here): no identical CPU operators that DALI would merge feed a GPU operator
    # (that breaks the GPU build), and every GPU operator reads its data from the GPU.
    pipes = [selected(interpolation, gpu=True, batch_size=4, num_threads=1, device_id=None)]
    pipes += [one_op(name, interpolation, gpu=True, batch_size=4, num_threads=1, device_id=None) for name in NAMES]
    for pipe in pipes:
        assert merged_cpu_inputs_of_gpu_operators(pipe) == []
        assert _cpu_inputs_of_gpu_operators(pipe) == []


def test_module_keeps_to_what_the_export_copies():
    # The export copies the definitions into one file beside dali_policies.py and the other DALI runtime
    # modules: prefixed, unique names; top-level imports of numpy and DALI only (no typing).
    runtime = Path(tvp.__file__).parent
    tree = ast.parse(Path(tvp.__file__).read_text(encoding="utf-8"))
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    defined += [t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    names = set(defined)
    assert len(names) == len(defined), sorted(n for n in names if defined.count(n) > 1)
    assert all(n.startswith(("tv_policy_", "_tv_policy_")) for n in names), sorted(names)
    imported = {alias.name for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names}
    modules = {node.module for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert imported <= {"numpy", "nvidia.dali.fn", "nvidia.dali.math", "nvidia.dali.types"} and not modules
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and n not in tree.body]
    others = [*runtime.glob("dali_*.py"), *(runtime / "dali_ops").glob("*.py")]
    for path in others:
        if path.name == Path(tvp.__file__).name:
            continue
        other = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in other.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        defined |= {t.id for n in other.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assert not names & defined, (path.name, names & defined)
    assert all(getattr(tvp, f"tv_policy_{name}").__doc__ for name in NAMES)
