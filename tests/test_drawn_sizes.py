"""Ops that draw each sample's output size (RandomShortestSize, RandomResize, ScaleJitter): the
sizes as torchvision computes them, every sample at its own size through chain.run, the preview
and the three exported training loaders, targets moved to the drawn size, and the errors where a
later step needs one size or a larger image.
"""
import importlib
import os

import numpy as np
import pytest
import torch

import workbench as wb
from conftest import _loaded_from
from workbench.backends.kornia_cache import PrefixCache
from workbench.runtime.targets import drawn_sides, zoom_out_padding

BACKENDS = ["kornia", "dali", "albumentations"]
CASES = [
    ("RandomShortestSize", {"sizes": [40, 56, 72, 88], "max_size": 0}),
    ("RandomShortestSize", {"sizes": [60, 90], "max_size": 100}),
    ("RandomResize", {"size": [40, 88]}),
    ("ScaleJitter", {"target_size": [64, 64], "scale": [0.4, 1.6]}),
]
IDS = ["shortest", "shortest-bounded", "resize", "jitter"]


def _draw(op, params, value, height, width):
    spec = wb.get_op(op)
    bound = params.get("max_size", 0)
    target = tuple(params.get("target_size", (0, 0)))
    return drawn_sides(spec.rule, value, height, width, bound, target)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op, params", CASES, ids=IDS)
def test_each_sample_of_one_size_leaves_at_the_size_drawn_for_it(small_images, op, params, backend):
    chain = wb.Chain(seed=5).add(op, **params).add("HorizontalFlip", p=0.5)
    result = chain.run(small_images * 3, backend=backend, device="cpu")
    assert isinstance(result.images, list)
    sizes = [image.shape[:2] for image in result.images]
    reported = [tuple(int(v) for v in row[0]["out_size"]) for row in result.params]
    assert sizes == reported
    assert len(set(sizes)) > 1, "18 samples of one size drew one size: the draw is not per sample"
    smallest, largest = wb.get_op(op).size_bounds(chain.steps[0].params, 96, 128)
    assert all(smallest <= size <= largest for size in sizes), (smallest, largest, sizes)
    if op == "RandomShortestSize":  # each size is one the list allows, and each is drawn
        allowed = {_draw(op, params, v, 96, 128) for v in params["sizes"]}
        assert set(sizes) <= allowed and len(set(sizes)) >= len(allowed) - 1
    if op == "RandomResize":  # the shorter side is a whole number of the span, both ends included
        shorter = {size[0] for size in sizes}
        assert shorter <= set(range(params["size"][0], params["size"][1] + 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_later_crop_makes_one_batch_again(small_images, backend):
    chain = wb.Chain(seed=2).add("RandomResize", size=[50, 90]).add("CenterCrop", size=[48, 48]).add("Brightness")
    images = chain.run(small_images, backend=backend, device="cpu").images
    assert isinstance(images, np.ndarray) and images.shape == (6, 48, 48, 3)


def test_the_preview_cache_gives_the_run_and_resumes_at_a_later_step(small_images):
    chain = wb.Chain(seed=4).add("HorizontalFlip", p=0.5).add("RandomShortestSize", sizes=[50, 70, 90]) \
        .add("Brightness", factor=[0.6, 1.4])
    cache = PrefixCache()
    first = cache.run(chain, small_images)
    expected = chain.run(small_images, backend="kornia", device="cpu")
    assert all(np.array_equal(a, b) for a, b in zip(first.images, expected.images))
    edited = wb.Chain.from_dict(chain.to_dict())
    edited.steps[2] = wb.Step.create("Brightness", factor=[0.9, 1.1])
    again = cache.run(edited, small_images)
    fresh = edited.run(small_images, backend="kornia", device="cpu")
    assert [a.shape for a in again.images] == [a.shape for a in fresh.images]
    assert all(np.array_equal(a, b) for a, b in zip(again.images, fresh.images))


@pytest.mark.parametrize("backend", BACKENDS)
def test_boxes_masks_and_keypoints_follow_the_drawn_size(small_images, backend):
    chain = wb.Chain(seed=8).add("ScaleJitter", target_size=[64, 64], scale=[0.5, 1.5])
    boxes = [np.array([[10.0, 20.0, 60.0, 80.0]], np.float32)] * len(small_images)
    keypoints = [np.array([[32.0, 48.0]], np.float32)] * len(small_images)
    masks = [np.pad(np.ones((40, 40), np.uint8), ((28, 28), (44, 44))) for _ in small_images]
    result = chain.run(small_images, backend=backend, device="cpu", boxes=boxes, keypoints=keypoints, masks=masks)
    for image, box, point, mask in zip(result.images, result.boxes, result.keypoints, result.masks):
        height, width = image.shape[:2]
        sx, sy = width / 128, height / 96
        assert mask.shape == (height, width)
        np.testing.assert_allclose(box[0], [10 * sx, 20 * sy, 60 * sx, 80 * sy], rtol=1e-5)
        # Keypoints are pixel centres: the half-pixel convention of a resize.
        np.testing.assert_allclose(point[0], [(32.5 * sx) - 0.5, (48.5 * sy) - 0.5], rtol=1e-5)
        rows, cols = np.nonzero(mask)
        assert abs(rows.mean() - (47.5 + 0.5) * sy + 0.5) < 1.0 and abs(cols.mean() - (63.5 + 0.5) * sx + 0.5) < 1.0


def test_a_mixing_step_after_a_drawn_size_is_refused_naming_both_steps(small_images):
    chain = wb.Chain().add("RandomResize", size=[50, 90]).add("MixUp")
    with pytest.raises(wb.InputError, match=r"step 2 \(MixUp\).*as step 1 \(RandomResize\) draws each image's size"):
        chain.run(small_images, backend="kornia")


def test_a_crop_larger_than_the_smallest_draw_is_refused_before_running(small_images):
    chain = wb.Chain().add("RandomShortestSize", sizes=[40, 90]).add("CenterCrop", size=[64, 64])
    for backend in BACKENDS:
        with pytest.raises(wb.InputError, match=r"step 2 \(CenterCrop\).*40x53 at that step, the smallest size step 1 "
                                                r"\(RandomShortestSize\) can draw"):
            chain.run(small_images, backend=backend)


@pytest.fixture(scope="module")
def exported(tmp_path_factory, sample_images):
    """A folder of JPEGs of several sizes and a drawn-size chain exported to every backend."""
    from PIL import Image

    tmp = tmp_path_factory.mktemp("drawn_loaders")
    folder = tmp / "train" / "cats"
    folder.mkdir(parents=True)
    for k, image in enumerate(sample_images[:6]):
        Image.fromarray(np.ascontiguousarray(image[:100 + 12 * k, :140])).save(folder / f"{k}.jpg")
    chain = wb.Chain(seed=2).add("RandomShortestSize", sizes=[48, 64, 80]).add("HorizontalFlip", p=0.5)
    modules = {}
    for backend in BACKENDS:
        script = tmp / f"aug_{backend}.py"
        chain.export(backend, path=script.name, folder=tmp)
        modules[backend] = _loaded_from(script)
    return tmp / "train", modules


def _assert_drawn(sizes):
    assert all(min(size) in (48, 64, 80) for size in sizes), sizes


def test_the_kornia_loader_yields_a_list_of_images_at_their_drawn_sizes(exported):
    root, modules = exported
    for _, images, labels in modules["kornia"].training_batches(str(root), 3, workers=0, device="cpu"):
        assert isinstance(images, list) and len(images) == 3 and labels.tolist() == [0, 0, 0]
        _assert_drawn([tuple(image.shape[-2:]) for image in images])
        assert all(image.dtype == torch.float32 and image.shape[0] == 3 for image in images)


def test_the_kornia_loader_runs_a_first_random_resized_crop_per_image_before_a_drawn_size(exported):
    """A chain starting with RandomResizedCrop crops a batch of mixed sizes in one batched op, unless a
    later step draws each image's size: then every step runs image by image."""
    root, _ = exported
    chain = wb.Chain(seed=2).add("RandomResizedCrop", size=[64, 64]).add("RandomShortestSize", sizes=[40, 56, 72])
    script = root.parent / "aug_crop_then_drawn.py"
    chain.export("kornia", path=script.name, folder=root.parent)
    _, images, _ = next(_loaded_from(script).training_batches(str(root), 4, workers=0, device="cpu"))
    assert [tuple(image.shape) for image in images] == [(3, side, side) for side in
                                                        (image.shape[-1] for image in images)]
    assert {image.shape[-1] for image in images} <= {40, 56, 72}


def test_the_albumentations_loader_yields_a_list_of_images_at_their_drawn_sizes(exported):
    root, modules = exported
    for _, images, labels in modules["albumentations"].training_batches(str(root), 3, workers=0, device="cpu"):
        assert isinstance(images, list) and len(images) == 3
        _assert_drawn([tuple(image.shape[-2:]) for image in images])


def test_the_dali_loader_pads_each_batch_and_gives_the_sizes(exported):
    root, modules = exported
    module = modules["dali"]
    assert module.DRAWN_SIZES and "padded with zeros" in module.SIZE_NOTE
    loader = module.make_loader(str(root), 3, gpu=False, threads=1)
    batch = next(iter(loader))[0]
    images, sizes = batch["images"], batch["image_sizes"].tolist()
    _assert_drawn([tuple(size) for size in sizes])
    assert tuple(images.shape[1:3]) == (max(h for h, _ in sizes), max(w for _, w in sizes))
    for image, (height, width) in zip(images, sizes):
        assert float(image[height:].abs().sum()) == 0.0 and float(image[:, width:].abs().sum()) == 0.0
        assert float(image[:height, :width].float().std()) > 0.0


def test_the_dali_loader_with_resize_gives_one_size_and_no_sizes(exported):
    root, modules = exported
    batch = next(iter(modules["dali"].make_loader(str(root), 3, gpu=False, threads=1, resize=(32, 40))))[0]
    assert tuple(batch["images"].shape) == (3, 32, 40, 3) and "image_sizes" not in batch


# The sizes are torchvision's: make_params at settings that fix the draw, over many image sizes.
torchvision = importlib.import_module("torchvision") if os.environ.get("CI") else None


@pytest.fixture(scope="module")
def v2():
    if torchvision is None:
        pytest.importorskip("torchvision")
    from torchvision.transforms import v2 as transforms

    return transforms


# (height, width, scale, target [height, width]) where ScaleJitter's float32 sides differ from
# float64's (found by search: about 1 in 30,000 draws).
FLOAT32_CASES = [(662, 240, 1.0517394542694092, (1121, 911)), (923, 564, 1.6633529663085938, (610, 416)),
                 (632, 503, 1.415204644203186, (342, 1364)), (273, 1015, 1.9888293743133545, (71, 274))]


def test_scale_jitter_computes_in_float32_as_torchvision(v2):
    for height, width, scale, target in FLOAT32_CASES:
        image = torch.zeros(3, height, width, dtype=torch.uint8)
        transform = v2.ScaleJitter(target_size=(target[1], target[0]), scale_range=(scale, scale))
        r = min(target[0] / height, target[1] / width) * scale
        ours = drawn_sides("jitter", scale, height, width, target=target)
        assert ours != (int(height * r), int(width * r)) and ours == tuple(transform.make_params([image])["size"])


def test_the_sizes_are_torchvisions_for_every_rule(v2):
    rng = np.random.default_rng(0)
    for height, width in rng.integers(17, 1400, size=(300, 2)).tolist():
        image = torch.zeros(3, height, width, dtype=torch.uint8)
        short = int(rng.integers(8, 1500))
        bound = int(rng.integers(short, 2500))
        scale = float(np.float32(rng.uniform(0.1, 2.0)))
        target = tuple(int(v) for v in rng.integers(64, 1400, size=2))
        cases = [
            (v2.RandomShortestSize(min_size=[short]), drawn_sides("shortest", short, height, width)),
            (v2.RandomShortestSize(min_size=[short], max_size=bound),
             drawn_sides("shortest", short, height, width, bound)),
            (v2.RandomResize(short, short + 1), drawn_sides("resize", short, height, width)),
            # torchvision reads target_size as (width, height): the op's target is [height, width].
            (v2.ScaleJitter(target_size=target, scale_range=(scale, scale)),
             drawn_sides("jitter", scale, height, width, target=(target[1], target[0]))),
        ]
        for transform, ours in cases:
            theirs = transform.make_params([image])["size"]
            theirs = tuple(theirs) if len(theirs) == 2 else None
            if theirs is None:  # RandomResize: [shorter side], the other as its F.resize rounds it
                theirs = tuple(transform(image).shape[-2:])
            assert ours == theirs, (type(transform).__name__, height, width, ours, theirs)


@pytest.mark.parametrize("make, op", [
    (lambda v2: v2.RandomShortestSize(min_size=[70]), "RandomShortestSize"),
    (lambda v2: v2.RandomShortestSize(min_size=[120], max_size=130), "RandomShortestSize"),
    (lambda v2: v2.RandomResize(67, 68), "RandomResize"),
    (lambda v2: v2.ScaleJitter(target_size=(160, 120), scale_range=(0.55, 0.55)), "ScaleJitter"),
    (lambda v2: v2.ScaleJitter(target_size=(160, 120), scale_range=(1.3, 1.3), antialias=False), "ScaleJitter"),
], ids=["shortest", "shortest-bounded", "resize", "jitter-shrink", "jitter-enlarge"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_imported_transforms_give_torchvisions_pixels(v2, small_images, make, op, backend):
    transform = make(v2)
    chain = wb.Chain.from_torchvision([transform], seed=3)
    assert [s.op for s in chain.steps] == [op] and not chain.unmapped
    ours = chain.run(small_images, backend=backend, device="cpu").images
    for image, out in zip(small_images, ours):
        theirs = transform(torch.from_numpy(image).permute(2, 0, 1).float() / 255.0).permute(1, 2, 0).numpy()
        assert out.shape == theirs.shape
        out = np.asarray(out, np.float64) / (255.0 if out.dtype == np.uint8 else 1.0)  # (DALI and A keep uint8)
        mae = float(np.abs(out - theirs).mean())
        assert mae <= 1.0 / 255, f"{backend}: {mae * 255:.3f}/255"



def test_dali_computes_the_sizes_as_drawn_sides_does():
    """DALI's drawn_size (float64 arithmetic nodes, float32 for ScaleJitter) against the Python rule,
    at the float32-sensitive cases and at random ones."""
    from nvidia.dali import fn, pipeline_def

    from workbench.runtime.dali_ops.geometric import drawn_size

    rng = np.random.default_rng(3)
    rows = [("jitter", h, w, s, 0, t) for h, w, s, t in FLOAT32_CASES]
    for height, width in rng.integers(17, 1400, size=(60, 2)).tolist():
        rows += [("shortest", height, width, float(rng.integers(8, 1500)), int(rng.integers(0, 2) * 900), (0, 0)),
                 ("resize", height, width, float(rng.integers(8, 1500)) + 0.7, 0, (0, 0)),
                 ("jitter", height, width, float(np.float32(rng.uniform(0.1, 2.0))), 0,
                  tuple(int(v) for v in rng.integers(64, 1400, size=2)))]
    for rule, height, width, value, bound, target in rows:
        kind = np.float32 if rule == "jitter" else np.float64  # (DALI's uniform draws float32)

        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def pipe():
            h = fn.external_source(lambda: [np.array(height, np.int64)], batch=True)
            w = fn.external_source(lambda: [np.array(width, np.int64)], batch=True)
            v = fn.external_source(lambda: [np.array(value, kind)], batch=True)
            return drawn_size(rule, v, h, w, bound, target)

        p = pipe()
        p.build()
        got = tuple(int(x) for x in np.asarray(p.run()[0][0]))
        expected = drawn_sides(rule, int(value) if rule == "resize" else value, height, width, bound, target)
        assert got == expected, (rule, height, width, value, bound, target)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_estimate_times_a_chain_that_draws_sizes(backend):
    """The loader and every step are timed (Kornia's head image by image, as augment_batch runs it)."""
    chain = wb.Chain(seed=1).add("RandomShortestSize", sizes=[40, 56]).add("HorizontalFlip", p=0.5).add("Normalize")
    est = chain.estimate(backend=backend, batch_size=4, workers=0, runs=1, batches=1, progress=False, image_size=64)
    assert est.images_per_s > 0 and [s.op for s in est.steps] == ["RandomShortestSize", "HorizontalFlip", "Normalize"]
    # (Times are not judged here; DALI's, a difference of two segments, may even read 0 on a busy machine.)
    assert all(s.ms_per_batch >= 0 for s in est.steps)
    assert est.steps[0].output_size == (56, 56)  # the largest size the step can draw


def test_the_preview_captions_each_draw_with_its_size(sample_images):
    """Tiles are letterboxed to one cell, which hides a drawn size: the caption gives it."""
    from workbench.render import preview_grid, size_caption

    chain = wb.Chain(seed=1).add("RandomShortestSize", sizes=[100, 300])
    run = chain.run(sample_images[:2], seed=1)
    assert [size_caption(chain, image) for image in run.images] == ["{}x{}".format(*i.shape[:2]) for i in run.images]
    assert size_caption(wb.Chain().add("SmallestMaxSize", max_size=100), run.images[0]) == ""
    plain = preview_grid(wb.Chain(seed=1).add("SmallestMaxSize", max_size=100, antialias=True, rounding="down"),
                         sample_images[:1], draws=1, cell=64)
    captioned = preview_grid(wb.Chain(seed=1).add("RandomShortestSize", sizes=[100]), sample_images[:1], draws=1,
                             cell=64)
    # Same pixels (one size to draw), but the caption strip along the tile's bottom edge.
    assert np.array_equal(plain[:50], captioned[:50]) and not np.array_equal(plain[52:], captioned[52:])


# RandomZoomOut: a canvas drawn per sample (p gates it per sample: a skipped one keeps its size).
def test_zoom_out_pads_as_torchvision_from_torchvisions_own_draws(v2):
    """torchvision's make_params and zoom_out_padding on the draws it makes (the same generator
    sequence: the ratio, then the place), over many image sizes and ranges."""
    rng = np.random.default_rng(4)
    for k, (height, width) in enumerate(rng.integers(5, 900, size=(200, 2)).tolist()):
        side_range = tuple(sorted(float(v) for v in rng.uniform(1.0, 4.0, size=2)))
        transform = v2.RandomZoomOut(side_range=side_range, p=1.0)
        torch.manual_seed(k)
        theirs = transform.make_params([torch.zeros(3, height, width)])["padding"]  # [left, top, right, bottom]
        torch.manual_seed(k)
        ratio = side_range[0] + torch.rand(1) * (side_range[1] - side_range[0])
        u, v = torch.rand(2).tolist()
        left, right, top, bottom = zoom_out_padding(float(ratio), u, v, height, width)
        assert [left, top, right, bottom] == list(theirs), (height, width, side_range)


@pytest.mark.parametrize("backend", BACKENDS)
def test_imported_zoom_out_gives_torchvisions_pixels_at_its_own_canvas(v2, small_images, backend):
    transform = v2.RandomZoomOut(fill=(123, 117, 104), side_range=(1.3, 2.2), p=1.0)
    chain = wb.Chain.from_torchvision([transform], seed=3)
    assert [s.op for s in chain.steps] == ["RandomZoomOut"] and chain.steps[0].params["fill"] == pytest.approx(
        [123 / 255, 117 / 255, 104 / 255], abs=1e-6)
    result = chain.run(small_images, backend=backend, device="cpu")
    from torchvision.transforms.v2 import functional as F

    for image, out, rows in zip(small_images, result.images, result.params):
        left, right, top, bottom = (int(v) for v in rows[0]["padding"])
        theirs = F.pad(torch.from_numpy(image).permute(2, 0, 1), [left, top, right, bottom], fill=[123, 117, 104])
        ours = np.asarray(out, np.float64) * (1.0 if out.dtype == np.uint8 else 255.0)
        assert out.shape[:2] == tuple(theirs.shape[-2:])
        assert np.abs(ours - theirs.permute(1, 2, 0).numpy()).max() <= 0.5, backend


def _constant(value, dtype):
    """An external_source callback giving a batch of one sample, `value`."""
    return lambda: [np.array(value, dtype)]


def test_dali_places_the_canvas_as_zoom_out_padding_does():
    from nvidia.dali import fn, pipeline_def

    from workbench.runtime.dali_ops.geometric import zoom_out_window

    rng = np.random.default_rng(6)
    for height, width in rng.integers(5, 900, size=(60, 2)).tolist():
        ratio, u, v = (float(np.float32(x)) for x in (rng.uniform(1.0, 4.0), rng.random(), rng.random()))

        @pipeline_def(batch_size=1, num_threads=1, device_id=None)
        def pipe():
            h = fn.external_source(lambda: [np.array(height, np.int64)], batch=True)
            w = fn.external_source(lambda: [np.array(width, np.int64)], batch=True)
            # (A callback with a parameter would be given the iteration's number: one without each.)
            draws = [fn.external_source(_constant(x, np.float32), batch=True) for x in (ratio, u, v)]
            return zoom_out_window(*draws, h, w)[0]

        p = pipe()
        p.build()
        assert [int(x) for x in np.asarray(p.run()[0][0])] == zoom_out_padding(ratio, u, v, height, width)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_group_with_size_changing_children_leaves_each_sample_at_its_childs_size(small_images, backend):
    """OneOf of a crop and a pad (a tile pipeline's), and of a drawn size: the chain runs per image
    from the group (Kornia's PER_IMAGE), a later Resize makes one batch again, targets follow."""
    group = {"op": "OneOf", "steps": [{"op": "RandomSizedCrop", "params": {"height": [40, 90], "size": [64, 64]}},
                                      {"op": "PadIfNeeded", "params": {"min_size": [120, 140]}},
                                      {"op": "RandomZoomOut", "params": {"side_range": [1.2, 1.5]}, "p": 1.0}]}
    chain = wb.Chain.from_dict({"seed": 4, "steps": [group, {"op": "HorizontalFlip", "p": 0.5}]})
    assert chain.steps[0].draws_sizes() and chain.steps[0].size_bounds(96, 128) == ((64, 64), (144, 192))
    result = chain.run(small_images * 3, backend=backend, device="cpu", boxes=[[[30.0, 20.0, 60.0, 50.0]]] * 18)
    for image, rows, boxes in zip(result.images, result.params, result.boxes):
        chosen = rows[0]["chosen"][0] - 1
        if chosen == 0:
            assert image.shape[:2] == (64, 64)
        elif chosen == 1:
            assert image.shape[:2] == (120, 140) and boxes.shape[0] == 1
            assert abs(float(boxes[0][1]) - 32.0) < 1e-4  # moved down by the pad's 12 rows
        else:
            left, right, top, bottom = (int(v) for v in rows[0]["steps"][2]["padding"])
            assert image.shape[:2] == (96 + top + bottom, 128 + left + right)
    assert {rows[0]["chosen"][0] for rows in result.params} == {1, 2, 3}  # every child ran on some sample
    again = wb.Chain.from_dict({"seed": 4, "steps": [group, {"op": "Resize", "params": {"size": [48, 48]}}]})
    assert again.run(small_images * 3, backend=backend, device="cpu").images.shape == (18, 48, 48, 3)


def test_a_kornia_module_refuses_a_batch_whose_samples_drew_several_sizes():
    """The modules run image by image (augment_batch's PER_IMAGE): a batch of several draws would
    otherwise be resized to one of them silently."""
    from workbench.runtime.kornia_modules.geometric import WbRandomSize, WbRandomZoomOut

    torch.manual_seed(0)
    with pytest.raises(ValueError, match="WbRandomSize drew 4 sizes for one batch.*run it image by image"):
        WbRandomSize("resize", span=(10, 40))(torch.rand(4, 3, 20, 30))
    with pytest.raises(ValueError, match="WbRandomZoomOut drew 4 canvases for one batch"):
        WbRandomZoomOut(side_range=(1.5, 3.0), p=1.0)(torch.rand(4, 3, 20, 30))
    assert WbRandomSize("resize", span=(12, 12))(torch.rand(4, 3, 20, 30)).shape == (4, 3, 12, 18)


def test_a_crop_in_a_group_larger_than_the_image_is_refused_naming_its_place(small_images):
    chain = wb.Chain.from_dict({"steps": [{"op": "HorizontalFlip"}, {"op": "OneOf", "steps": [
        {"op": "Invert"}, {"op": "CenterCrop", "params": {"size": [100, 100]}}]}]})
    for backend in BACKENDS:
        with pytest.raises(wb.InputError, match=r"step 2.2 \(CenterCrop\): size \[100, 100\] is larger than image 1 "
                                                r"\(96x128 at that step\)"):
            chain.run(small_images, backend=backend)
