"""GPU paths of every op on both GPU backends.

Without a GPU (CI): every op's DALI GPU graphs are *defined* (DALI checks where each
operator's inputs and arguments live when the graph is defined, so the class of bug where a
GPU node feeds a CPU-only argument shows here), the training pipeline's region decoding is
checked against decode-then-crop, and Kornia's placement helpers are checked on the meta
device. With a GPU: every op runs through chain.run and the exported script on CUDA, and
export == run holds there bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.codegen import emit, load_module
from workbench.codegen.dali import region_steps
from workbench.ops import get_op

from conftest import (ROOT, assert_same_images, boxes_for, change_statistics, run_script, saved_images,
                      saves_without_boxes)
from dali_graph_check import merged_cpu_inputs_of_gpu_operators

cuda = pytest.mark.cuda

DALI_OPS = [op for op in wb.list_ops() if get_op(op).supports("dali")]
# DALI's GPU-only ops (OpSpec.gpu_only) have no CPU run to compare with: tests/test_ops_distortion.py
# compares them with Kornia on the GPU.
DALI_CPU_OPS = [op for op in DALI_OPS if get_op(op).supports("dali", "cpu")]
KORNIA_OPS = [op for op in wb.list_ops() if get_op(op).supports("kornia")]
REGION_OPS = [op for op in DALI_OPS if get_op(op).dali.decodes_region]


def one_op_chain(op: str, p: float = 1.0) -> wb.Chain:
    """`op` alone, after a Resize where it needs one size or a large enough input (mixing, crops)."""
    spec = get_op(op)
    chain = wb.Chain(seed=5)
    if spec.mixes_batch or spec.input_at_least:
        chain.add("Resize", size=[240, 240])
    params = {"size": [200, 200]} if spec.input_at_least else {}
    return chain.add(op, p=p, **params)


def probabilities(op: str) -> list[float]:
    return [1.0] if get_op(op).always_applies else [1.0, 0.5]


def define_gpu_graphs(chain: wb.Chain) -> None:
    """Define (never build) the export's preview and training pipelines on the GPU, the training
    pipeline also as it runs with targets (its draws and the files' sizes as outputs), and check that
    no identical CPU operators feed GPU ones there (dali_graph_check: DALI merges them and then fails
    to build the GPU pipeline)."""
    module = load_module(emit(chain, "dali"), "dali")
    mixing = any(step.spec.mixes_batch for _, step in chain.enabled_steps())
    pipes = [
        module.preview_pipeline(aug_seed=1, gpu=True, keep=True, labelled=mixing, batch_size=4, num_threads=1,
                                device_id=None),
        module.training_pipeline(["a.jpg", "b.jpg"], [0, 1], gpu=True, batch_size=4, num_threads=1, device_id=None),
        module.training_pipeline(["a.jpg", "b.jpg"], [0, 1], gpu=True, annotated=True, resize=(64, 64),
                                 batch_size=4, num_threads=1, device_id=None)]
    for pipe in pipes:
        merged = merged_cpu_inputs_of_gpu_operators(pipe)
        assert not merged, f"{chain.steps}: identical CPU operators feed GPU ones (the GPU build fails): {merged}"


@pytest.mark.parametrize("op", DALI_OPS)
def test_every_dali_op_defines_its_gpu_graphs(op):
    for p in probabilities(op):
        define_gpu_graphs(one_op_chain(op, p))


def test_colour_steps_in_series_define_on_the_gpu():
    # ColorJitter after a Normalize works on floats; each contrast centre must stay on the GPU there too.
    chain = wb.Chain(seed=2).add("Contrast", p=0.5).add("ColorJitter", p=0.5).add(
        "Normalize", mean=[0.5, 0.5, 0.5], std=[0.25, 0.25, 0.25]).add("ColorJitter", p=0.7).add("Contrast")
    define_gpu_graphs(chain)


@pytest.mark.parametrize("op", REGION_OPS)
def test_a_leading_crop_decodes_its_region_on_the_gpu(op):
    chain = wb.Chain(seed=4).add(op, size=[64, 64]).add("HorizontalFlip").add("Brightness")
    source = emit(chain, "dali")
    assert region_steps(chain) == (0,) and "fn.decoders.image_slice(encoded" in source
    define_gpu_graphs(chain)
    if get_op(op).dali.follows_resize:
        resized = wb.Chain(seed=4).add("Resize", size=[80, 96]).add(op, size=[64, 64]).add("Brightness")
        assert region_steps(resized) == (0, 1) and "REGION_STEPS = 2" in emit(resized, "dali")
        define_gpu_graphs(resized)


def test_region_decoding_applies_only_to_leading_crops_applied_to_every_sample():
    crop = {"op": "RandomResizedCrop", "params": {"size": [64, 64]}}
    center = {"op": "CenterCrop", "params": {"size": [64, 64]}}
    resize = {"op": "Resize", "params": {"size": [72, 72]}}
    steps = lambda *s: region_steps(wb.Chain.from_dict({"seed": 1, "steps": list(s)}))  # noqa: E731
    assert steps(crop) == (0,) and steps(center, crop) == (0,)
    assert steps({"op": "HorizontalFlip"}, crop) == ()
    assert steps({"op": "HorizontalFlip", "enabled": False}, crop) == (1,)
    assert steps(resize) == () and steps(resize, {"op": "HorizontalFlip"}, center) == ()
    assert steps(resize, center) == (0, 1) and steps(resize, {"op": "HorizontalFlip", "enabled": False}, center) \
        == (0, 2)
    assert steps(resize, crop) == ()  # a random-area crop takes no pending Resize
    assert "REGION_DECODE = None" in emit(wb.Chain(seed=1).add("HorizontalFlip"), "dali")


def _both_ways(chain: wb.Chain, seed: int = 11):
    """(region-decoded images, decoded-then-stepped images, their draws) on the sample photos."""
    import nvidia.dali.fn as fn
    import nvidia.dali.types as types
    from nvidia.dali import pipeline_def

    module = load_module(emit(chain, "dali"), "dali")
    files = [str(f) for f in module.list_image_files(ROOT / "sample_data")]

    @pipeline_def
    def both_ways():
        encoded, _ = fn.readers.file(files=files, random_shuffle=False)
        region, region_draws = module.REGION_DECODE(encoded, seed, "cpu")
        images, draws = fn.decoders.image(encoded, device="cpu", output_type=types.RGB), []
        for step in module.STEP_FUNCTIONS[:module.REGION_STEPS]:
            images, step_draws = step(images, seed)
            draws += step_draws
        return region, images, region_draws[-1], draws[-1]

    pipe = both_ways(batch_size=len(files), num_threads=1, device_id=None, seed=1)
    pipe.build()
    return [out.as_array() for out in pipe.run()]


@pytest.mark.parametrize("op,size", [("RandomResizedCrop", [64, 80]), ("CenterCrop", [100, 120]),
                                     ("RandomCrop", [100, 120])])
def test_region_decoding_gives_what_decoding_then_cropping_gives(op, size):
    """The window comes from the file's header through the step's own sampler and seed: the
    same windows and, on the sample photos (JPEG and PNG), the same pixels."""
    region, cropped, region_boxes, boxes = _both_ways(wb.Chain(seed=3).add(op, size=size))
    assert region.shape == (12, *size, 3)
    assert np.array_equal(region_boxes, boxes)
    if op != "CenterCrop":  # windows drawn per sample
        assert len({tuple(b) for b in boxes}) > 1
    assert np.array_equal(region, cropped)


@pytest.mark.parametrize("op", ["CenterCrop", "RandomCrop"])
@pytest.mark.parametrize("resize", [{"size": [256, 256]}, {"size": [256, 320], "antialias": False},
                                    {"size": [700, 650]}, {"size": [700, 650], "interpolation": "nearest"}],
                         ids=["antialias", "plain", "up", "up-nearest"])
def test_resize_then_crop_decodes_only_what_the_window_needs(op, resize):
    """Resize-then-crop from the file's header: the same windows, and the same pixels as resizing
    whole and cutting up to float rounding of the region's coordinates: bilinear within one level
    (measured: under 1% of values), nearest picking the neighbouring pixel where a sampling point
    falls on a pixel edge (measured: under 1.5% of values when enlarging)."""
    chain = wb.Chain(seed=5).add("Resize", **resize).add(op, size=[224, 200])
    region, cropped, region_boxes, boxes = _both_ways(chain)
    assert np.array_equal(region_boxes, boxes)
    difference = np.abs(region.astype(np.int16) - cropped.astype(np.int16))
    if resize.get("interpolation") == "nearest":
        assert (difference > 0).mean() < 0.02
    else:
        assert difference.max() <= 1 and (difference > 0).mean() < 0.01, (difference.max(), difference.mean())


def test_the_exported_training_loader_decodes_regions_on_the_cpu(tmp_path):
    # A mixed-size folder (the sample photos) through the region-decoding loader, images and labels.
    chain = wb.Chain(seed=9).add("RandomResizedCrop", size=[48, 64]).add("HorizontalFlip")
    module = load_module(emit(chain, "dali"), "dali")
    loader = module.make_loader(ROOT / "sample_data", 4, gpu=False, threads=1)
    batch = next(iter(loader))[0]
    assert tuple(batch["images"].shape) == (4, 48, 64, 3) and batch["images"].dtype == torch.uint8
    assert batch["images"].float().std() > 10  # real photo content, not a fill


def test_kornia_draws_stay_on_the_cpu_generator_wherever_the_modules_go():
    # The meta device stands in for CUDA: moving a module moves Kornia's samplers with it;
    # place() keeps them on the CPU (the same draws on every device).
    for op in ("HorizontalFlip", "CenterCrop", "Translate", "Equalize", "GaussianNoise", "Normalize"):
        module = load_module(emit(wb.Chain(seed=1).add(op), "kornia"), "kornia")
        moved = module.build_augmentation().to("meta")
        placed = module.place(module.build_augmentation(), "meta")
        samplers = lambda aug: {str(m.device) for m in aug.modules()  # noqa: E731
                                if hasattr(m, "set_rng_device_and_dtype") and hasattr(m, "device")}
        assert samplers(moved) == {"meta"} and samplers(placed) == {"cpu"}, op


@pytest.mark.parametrize("op", ["RandAugment", "AutoAugment", "MixUp", "CutMix", "RandomResizedCrop"])
def test_kornia_params_move_to_the_batch_device_policies_included(op):
    module = load_module(emit(one_op_chain(op), "kornia"), "kornia")
    step = module.build_augmentation()[-1]
    params = step.forward_parameters(torch.Size([4, 3, 64, 64]))
    moved = module.on_device(params, torch.device("meta"))

    def tensors(value):
        if torch.is_tensor(value):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from tensors(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                yield from tensors(v)

    before, after = list(tensors(params)), list(tensors(moved))
    assert len(before) == len(after) > 0
    assert {t.device.type for t in before} == {"cpu"} and {t.device.type for t in after} == {"meta"}
    assert type(moved) is type(params)


# --- on a GPU -------------------------------------------------------------------------------

def gpu_images(count: int = 4) -> list[np.ndarray]:
    return [np.ascontiguousarray(image[:240, :240]) for image in wb.load_images(ROOT / "sample_data")[:count]]


@cuda
@pytest.mark.parametrize("backend,op", [("kornia", op) for op in KORNIA_OPS] + [("dali", op) for op in DALI_OPS])
def test_every_op_runs_on_cuda(backend, op):
    """Both GPU backends run every op they claim; Kornia draws on the CPU, so its draws on CUDA
    are the CPU's (DALI's random operators are CPU operators on both devices)."""
    images = gpu_images()
    for p in probabilities(op):
        chain = one_op_chain(op, p)
        gpu = chain.run(images, backend=backend, device="cuda", **boxes_for(chain, images))
        if not get_op(op).supports(backend, "cpu"):  # GPU only: the CPU refuses it (tested without a GPU)
            assert [a.shape for a in list(gpu.images)] == [a.shape for a in images], f"{op} p={p}"
            continue
        cpu = chain.run(images, backend=backend, device="cpu", **boxes_for(chain, images))
        # Drawn-size ops leave a list of images at sizes of their own; the rest, one batch array.
        on_gpu, on_cpu = (list(r.images) if isinstance(r.images, list) else [r.images] for r in (gpu, cpu))
        assert gpu.device == "cuda" and isinstance(gpu.images, list) == isinstance(cpu.images, list)
        assert [(a.shape, a.dtype) for a in on_gpu] == [(a.shape, a.dtype) for a in on_cpu], f"{op} p={p}"
        assert all(np.isfinite(np.asarray(a, dtype=np.float64)).all() for a in on_gpu)
        if backend == "kornia":
            assert gpu.params == cpu.params, f"{op} p={p}: the draws depend on the device"


def unit_images(images) -> list[np.ndarray]:
    """A run's images (a batch array or a list at sizes of their own) as float64 in [0, 1]."""
    return [np.asarray(a, np.float64) / (255.0 if a.dtype == np.uint8 else 1.0) for a in list(images)]


@cuda
@pytest.mark.parametrize("op", DALI_CPU_OPS)
def test_dali_gpu_operators_give_the_cpu_operators_pixels(op):
    """DALI's GPU operators are other kernels than its CPU ones (warp_affine, warp_perspective, CLAHE,
    resize, filters, ...): at the op's parity settings, where DALI draws on its CPU operators on both
    devices, the GPU run draws alike, gives the same sizes and is within the op's cross-backend parity
    tolerance of the CPU run (at least 1/255, torchvision's bound), border pixels left out. A noise op
    (`Parity.statistics`) draws its per-pixel noise on the device, where each device's generator draws
    its own: there the change's mean and spread agree instead."""
    spec = get_op(op)
    photos = [np.ascontiguousarray(i[:300, :300]) for i in wb.load_images(ROOT / "sample_data")[:4]]
    images = [np.ascontiguousarray(i[:96, :128]) for i in photos] if spec.parity.same_size else photos
    chain = wb.Chain(seed=3)
    if spec.mixes_batch:
        chain.add("Resize", size=[96, 96])
    chain.add(op, p=1.0, **dict(spec.parity.params))
    cpu = chain.run(images, backend="dali", device="cpu", **boxes_for(chain, images))
    gpu = chain.run(images, backend="dali", device="cuda", **boxes_for(chain, images))
    assert gpu.params == cpu.params, f"{op}: DALI's draws depend on the device"
    a, b = unit_images(cpu.images), unit_images(gpu.images)
    assert [x.shape for x in a] == [x.shape for x in b], f"{op}: sizes differ between the devices"
    if spec.parity.statistics:
        before = unit_images(images)
        gap = np.abs(change_statistics(a, before) - change_statistics(b, before)).max()
        assert gap <= spec.parity.mae + 1e-9, \
            f"{op}: the change's mean and std differ by {gap * 255:.2f}/255 between the devices"
        return
    border = spec.parity.border
    inner = [x[border:x.shape[0] - border, border:x.shape[1] - border] for x in a]
    inner_gpu = [x[border:x.shape[0] - border, border:x.shape[1] - border] for x in b]
    mae = float(np.mean([np.abs(x - y).mean() for x, y in zip(inner, inner_gpu)]))
    bound = max(spec.parity.mae, 1.0 / 255)
    assert mae <= bound + 1e-9, \
        f"{op}: DALI on the GPU is {mae * 255:.3f}/255 from DALI on the CPU (> {bound * 255:.2f})"


@cuda
@pytest.mark.parametrize("backend,op", [("kornia", op) for op in KORNIA_OPS if saves_without_boxes(op)]
                         + [("dali", op) for op in DALI_OPS if saves_without_boxes(op)])
def test_export_equals_run_on_cuda_for_every_op(backend, op, tmp_path):
    """One test per op (each runs the exported script in a process of its own): the GPU check's
    workers share them out, where one test looping over every op ran past its time cap. An op that
    draws from the boxes saves with --coco in tests/test_cuda.py."""
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    for i, image in enumerate(gpu_images()):
        Image.fromarray(image).save(folder / f"img_{i:02d}.png")
    chain = one_op_chain(op)
    script = tmp_path / f"{backend}_{op}.py"
    chain.export(backend, path=script.name, folder=tmp_path)
    out = tmp_path / f"{backend}_{op}.npz"
    run_script(script, "--images", str(folder), "--save", str(out), "--device", "cuda")
    expected = chain.run(wb.load_images(folder), backend=backend, device="cuda")
    assert_same_images(saved_images(np.load(out), expected.images), expected.images,
                       f"{op}: --save on CUDA differs from chain.run")
