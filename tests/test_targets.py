"""Masks, boxes and keypoints move with the pixels: on every backend, through every geometric op
that has a map, with the chain's target settings; bad targets get errors naming image and target."""
from __future__ import annotations

import numpy as np
import pytest

import workbench as wb
from workbench.errors import ChainError, InputError, UnsupportedOpError

from conftest import ROOT

H, W = 96, 128
# The filled shape: a 40 x 30 rectangle, its box, and keypoints well inside it.
SHAPE = (30, 20, 70, 50)
POINTS = [[34.0, 24.0], [65.0, 45.0], [50.0, 35.0]]


def shape_image(height=H, width=W, box=SHAPE):
    image = np.zeros((height, width, 3), np.uint8)
    mask = np.zeros((height, width), np.uint8)
    x0, y0, x1, y1 = box
    mask[y0:y1, x0:x1] = 1
    image[mask == 1] = 255
    return image, mask


def shape_of(res, n=0):
    """The augmented shape: output pixels brighter than half."""
    out = np.asarray(res.images[n], dtype=np.float64)
    out = out / 255.0 if res.images[n].dtype == np.uint8 else out
    return out.mean(axis=-1) > 0.5


def iou(a, b):
    return (a & b).sum() / max((a | b).sum(), 1)


def tight_box(shape):
    ys, xs = np.nonzero(shape)
    return np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], np.float64)


def backends_of(op):
    """The backends that run `op` on the CPU (where these tests run)."""
    return [b for b in wb.BACKENDS if wb.get_op(op).supports(b, "cpu")]


# Ops with a map, each with parameters that move the shape visibly and keep it in the image.
GEOMETRIC = {
    "HorizontalFlip": {}, "VerticalFlip": {}, "Rotate": {"degrees": [-30, 30]},
    "Affine": {"degrees": [-20, 20], "scale": [0.8, 1.1], "translate": [0.1, 0.1]},
    "RandomResizedCrop": {"size": [64, 80], "scale": [0.6, 1.0]}, "Resize": {"size": [72, 100]},
    "CenterCrop": {"size": [80, 110]}, "RandomCrop": {"size": [80, 110]}, "Pad": {"size": [110, 140]},
    "Translate": {}, "Shear": {"shear_x": [-15, 15], "shear_y": [-5, 5]}, "Perspective": {"distortion": 0.4},
    "PadIfNeeded": {"min_size": [120, 140]}, "LongestMaxSize": {"max_size": 100}, "SmallestMaxSize": {"max_size": 80},
    "RandomShortestSize": {"sizes": [90, 110], "max_size": 180}, "RandomResize": {"size": [96, 140]},
    "ScaleJitter": {"target_size": [128, 128], "scale": [0.5, 1.3]}, "RandomZoomOut": {"side_range": [1.1, 1.6]},
    "PerspectiveZoom": {}, "PadBorderIfNeeded": {"min_size": [110, 140]},
    "RandomIoUCrop": {"sampler_options": [0.0, 0.3], "scale": [0.5, 1.0]},
    "RandomSizedCrop": {"height": [60, 90], "size": [70, 80], "w2h_ratio": 1.3},
    "GridDistortion": {"num_steps": 5, "distort_limit": [-0.5, 0.5]},
    "ElasticTransform": {"alpha": 60.0, "sigma": 6.0},
    "OpticalDistortion": {"distort_limit": [-0.3, 0.3], "mode": "camera"},
    # Policies with their geometric ops only: a colour op (invert, solarize) would hide the shape the test
    # looks for; AutoAugment's fixed sub-policies are tested on their own below.
    "RandAugment": {"n": 2, "magnitude": 25, "ops": {"rotate": [-30, 30], "shear_x": [-16.7, 16.7],
                                                      "shear_y": [-16.7, 16.7], "translate_x": [-0.2, 0.2],
                                                      "translate_y": [-0.2, 0.2]}},
    "TrivialAugment": {"ops": {"rotate": [-30, 30], "shear_x": [-16.7, 16.7], "shear_y": [-16.7, 16.7],
                               "translate_x": [-0.2, 0.2], "translate_y": [-0.2, 0.2]}},
}
SQUARE = ("RandomRotate90", "Transpose", "D4")


def step(op, params):
    spec = wb.get_op(op)
    known = {p.name for p in spec.params}
    return {"op": op, "params": {k: v for k, v in params.items() if k in known},
            **({} if spec.always_applies else {"p": 1.0})}


def test_every_pixel_moving_op_says_how_targets_follow():
    specs = [wb.get_op(name) for name in wb.list_ops()]
    for spec in specs:
        if spec.family in ("geometric", "policies"):
            assert spec.targets.geometry or spec.targets.field or spec.targets.unsupported, spec.name
        if spec.family in ("color", "blur/noise", "weather", "normalize"):
            assert spec.targets.geometry is None and spec.targets.field is None and not spec.targets.unsupported, \
                spec.name
    covered = set(GEOMETRIC) | set(SQUARE) | {op for op, _ in POLICIES_ON_THEIR_OWN}
    assert covered == {s.name for s in specs if s.targets.geometry or s.targets.field}


@pytest.mark.parametrize("op", sorted(GEOMETRIC) + list(SQUARE))
def test_targets_sit_on_the_shape_after_each_geometric_op_on_every_backend(op):
    square = op in SQUARE
    image, mask = shape_image(H, H if square else W)
    for backend in backends_of(op):
        for seed in (1, 2, 3):
            chain = wb.Chain.from_dict({"seed": seed, "steps": [step(op, GEOMETRIC.get(op, {}))]})
            res = chain.run([image], backend=backend, masks=[mask], boxes=[[SHAPE]], keypoints=[POINTS])
            shape = shape_of(res)
            assert res.masks[0].shape == shape.shape
            assert iou(res.masks[0] == 1, shape) > 0.93, (op, backend, seed)
            assert np.abs(res.boxes[0][0] - tight_box(shape)).max() <= 1.5, (op, backend, seed, res.boxes[0])
            for (x, y), visible in zip(res.keypoints[0], res.keypoints_visible[0]):
                if visible:
                    assert shape[int(round(y)), int(round(x))], (op, backend, seed, x, y)


# Policies whose sub-policies or op sets hold colour ops that hide the shape: tested sample by sample.
POLICIES_ON_THEIR_OWN = [("AutoAugment", {"policy": "svhn"}), ("TorchvisionAutoAugment", {"policy": "svhn"}),
                         ("TorchvisionRandAugment", {"num_ops": 2, "magnitude": 25}),
                         ("TorchvisionTrivialAugmentWide", {})]
_MOVING = {"rotate", "shear_x", "shear_y", "translate_x", "translate_y"}


@pytest.mark.parametrize("backend", ["kornia", "dali", "albumentations"])
@pytest.mark.parametrize("op, params", POLICIES_ON_THEIR_OWN, ids=[op for op, _ in POLICIES_ON_THEIR_OWN])
def test_policies_move_targets_with_the_geometric_ops_of_each_sample(backend, op, params):
    """The samples whose ops moved pixels and changed no colour: the mask, box and keypoints sit on the
    shape where the sample's own ops put it (Kornia's policies about the centre, torchvision's shearing
    about the corner)."""
    image, mask = shape_image()
    checked = 0
    for seed in range(6):
        chain = wb.Chain.from_dict({"seed": seed, "steps": [{"op": op, "params": params}]})
        res = chain.run([image] * 8, backend=backend, masks=[mask] * 8, boxes=[[SHAPE]] * 8, keypoints=[POINTS] * 8)
        for n in range(8):
            ops = set(res.params[n][0]["ops"])
            # Only samples whose shape stays findable (colour ops change which pixels are bright).
            if not ops & _MOVING or ops - _MOVING - {"identity", "equalize", "auto_contrast", "sharpness"}:
                continue
            shape = shape_of(res, n)
            # A box of a shape the border cuts is the cut parallelogram's, not the visible part's.
            if shape[[0, -1]].any() or shape[:, [0, -1]].any():
                continue
            checked += 1
            assert iou(res.masks[n] == 1, shape) > 0.93, (backend, seed, n, ops)
            assert np.abs(res.boxes[n][0] - tight_box(shape)).max() <= 1.6, (backend, seed, n, ops)
            for (x, y), visible in zip(res.keypoints[n], res.keypoints_visible[n]):
                if visible:
                    assert shape[int(round(y)), int(round(x))], (op, backend, seed, x, y)
    assert checked >= 6


def random_chain(rng, seed):
    """A random chain of up to 4 geometric steps (one size-fixing step keeps the batch one size)
    and a colour step, which must leave targets alone."""
    ops = [o for o in GEOMETRIC if o not in ("RandomResizedCrop", "CenterCrop", "RandomCrop", "Pad", "Resize",
                                             "PerspectiveZoom", "RandomSizedCrop")]
    steps = [step(str(o), GEOMETRIC[str(o)]) for o in rng.choice(ops, size=rng.integers(1, 4), replace=False)]
    steps.insert(int(rng.integers(0, len(steps) + 1)), {"op": "Brightness", "params": {"factor": [0.9, 1.1]}})
    steps.append(step("Resize", {"size": [96, 128]}))
    return wb.Chain.from_dict({"seed": seed, "steps": steps})


@pytest.mark.parametrize("backend", wb.BACKENDS)
def test_property_targets_stay_on_the_shape_through_random_chains(backend):
    rng = np.random.default_rng(11)
    image, mask = shape_image()
    checked = 0
    for k in range(12):
        chain = random_chain(rng, k)
        if chain.unsupported_ops(backend, "cpu"):
            continue
        res = chain.run([image, image], backend=backend, masks=[mask, mask], boxes=[[SHAPE], [SHAPE]],
                        keypoints=[POINTS, POINTS])
        for n in range(2):
            shape = shape_of(res, n)
            if shape.sum() < 50:  # moved (nearly) out of the image
                continue
            checked += 1
            # Two resizes in a row blur the shape the test finds in the pixels: PadIfNeeded, Resize to
            # 128x149, Resize to 96x128 gives 0.897 with the mask moved exactly (the draws' sizes).
            assert iou(res.masks[n] == 1, shape) > 0.88, chain.to_dict()
            # Enclosing boxes of warped boxes may grow past the shape, never cut into it.
            box, tight = res.boxes[n][0], tight_box(shape)
            assert box[0] <= tight[0] + 1.5 and box[1] <= tight[1] + 1.5, chain.to_dict()
            assert box[2] >= tight[2] - 1.5 and box[3] >= tight[3] - 1.5, chain.to_dict()
            for (x, y), visible in zip(res.keypoints[n], res.keypoints_visible[n]):
                if visible:
                    assert shape[int(round(y)), int(round(x))], chain.to_dict()
    assert checked >= 10


def collapsed(spec):
    return {"seed": 0, "steps": [{"op": spec.name, "params": dict(spec.parity.params),
                                  **({} if spec.always_applies else {"p": 1.0})}]}


# Ranges that pin the draws down where the parity test's do not: equal cells, one k.
COLLAPSED = {"GridDistortion": {"num_steps": 4, "distort_limit": [0.3, 0.3], "normalized": False},
             "OpticalDistortion": {"distort_limit": [0.15, 0.15], "mode": "camera"}}


@pytest.mark.parametrize("op", ["HorizontalFlip", "VerticalFlip", "Rotate", "Affine", "Resize", "CenterCrop",
                                "Shear", "PadIfNeeded", "LongestMaxSize", "SmallestMaxSize", "Transpose",
                                *COLLAPSED])
def test_targets_agree_across_backends_at_collapsed_ranges(op):
    spec = wb.get_op(op)
    image, mask = shape_image(H, H if spec.square_input else W)
    chain = wb.Chain.from_dict(collapsed(spec))
    chain.steps[0].params.update(COLLAPSED.get(op, {}))
    if op == "CenterCrop":
        chain.steps[0].params["size"] = [80, 100]
    results = [chain.run([image], backend=b, masks=[mask], boxes=[[SHAPE]], keypoints=[POINTS])
               for b in backends_of(op)]
    assert len(results) >= 2
    for other in results[1:]:
        assert np.abs(other.boxes[0] - results[0].boxes[0]).max() <= 1.0
        assert iou(other.masks[0] == 1, results[0].masks[0] == 1) >= 0.99
        assert np.abs(other.keypoints[0] - results[0].keypoints[0]).max() <= 1.0


def test_colour_blur_and_normalize_steps_leave_targets_alone():
    image, mask = shape_image()
    chain = wb.Chain(seed=3).add("ColorJitter").add("GaussianBlur", p=1.0).add("GaussianNoise", p=1.0) \
        .add("Normalize", mean=[0.5] * 3, std=[0.25] * 3)
    res = chain.run([image], masks=[mask], boxes=[[SHAPE]], box_labels=[[7]], keypoints=[POINTS])
    assert np.array_equal(res.masks[0], mask)
    assert res.boxes[0].tolist() == [list(map(float, SHAPE))] and res.box_labels[0].tolist() == [7]
    assert res.keypoints[0].tolist() == POINTS and res.keypoints_visible[0].all()


def test_formats_come_back_as_given_and_inputs_are_not_changed():
    image, mask = shape_image()
    stack = np.stack([mask, mask])
    boxes = [np.array([SHAPE], np.float32), np.zeros((0, 4), np.float32)]
    before = (stack.copy(), [b.copy() for b in boxes])
    res = wb.Chain(seed=1).add("HorizontalFlip", p=1.0).run([image, image], masks=stack, boxes=boxes)
    assert isinstance(res.masks, np.ndarray) and res.masks.shape == (2, H, W) and res.masks.dtype == np.uint8
    assert res.boxes[0].dtype == np.float32 and res.boxes[0].shape == (1, 4) and res.boxes[1].shape == (0, 4)
    assert res.box_labels[0].tolist() == [0]  # no labels given: each box's index
    assert np.array_equal(stack, before[0]) and all(np.array_equal(a, b) for a, b in zip(boxes, before[1]))
    assert res.keypoints is None and wb.Chain().add("HorizontalFlip").run([image]).masks is None
    listed = wb.Chain(seed=1).add("HorizontalFlip", p=1.0).run([image], masks=[mask.astype(np.int32)])
    assert isinstance(listed.masks, list) and listed.masks[0].dtype == np.int32


def test_boxes_leaving_the_image_are_clipped_and_dropped_below_min_visibility_with_their_labels():
    image, _ = shape_image()
    boxes = [[[0, 0, 20, 10], [100, 80, 128, 96], [60, 40, 70, 50]]]
    for visibility, kept in ((0.0, [1, 2, 3]), (0.5, [1, 3]), (0.42, [1, 2, 3])):
        chain = wb.Chain(seed=0).add("Translate", p=1.0, translate_x=[0.125, 0.125], translate_y=[0, 0])
        chain.targets.min_visibility = visibility
        res = chain.run([image], backend="dali", boxes=boxes, box_labels=[[1, 2, 3]])
        assert res.box_labels[0].tolist() == kept, visibility
    # Shifted 16 px right: [100, 80, 128, 96] keeps 12 of its 28 columns (0.43), clipped at the border.
    assert res.boxes[0].tolist() == [[16.0, 0.0, 36.0, 10.0], [116.0, 80.0, 128.0, 96.0], [76.0, 40.0, 86.0, 50.0]]


def test_keypoints_that_leave_the_image_are_kept_and_flagged():
    image, _ = shape_image()
    chain = wb.Chain(seed=0).add("Translate", p=1.0, translate_x=[0.25, 0.25], translate_y=[0, 0])
    res = chain.run([image], backend="dali", keypoints=[[[10, 10], [120, 10]]])
    assert res.keypoints[0].tolist() == [[42.0, 10.0], [152.0, 10.0]]
    assert res.keypoints_visible[0].tolist() == [True, False]
    # Once out, a keypoint stays flagged even when a later step brings it back.
    back = chain.copy()
    back.add("Translate", p=1.0, translate_x=[-0.25, -0.25], translate_y=[0, 0])
    res = back.run([image], backend="dali", keypoints=[[[10, 10], [120, 10]]])
    assert res.keypoints[0].tolist() == [[10.0, 10.0], [120.0, 10.0]]
    assert res.keypoints_visible[0].tolist() == [True, False]


def test_flip_pairs_swap_left_and_right_keypoints_on_mirroring_steps():
    image, _ = shape_image()
    points = [[34.0, 24.0], [65.0, 24.0], [50.0, 35.0]]  # left eye, right eye, nose
    chain = wb.Chain(seed=0).add("HorizontalFlip", p=1.0)
    plain = chain.run([image], keypoints=[points]).keypoints[0]
    chain.targets.flip_pairs = [[0, 1]]
    swapped = chain.run([image], keypoints=[points]).keypoints[0]
    assert plain.tolist() == [[93.0, 24.0], [62.0, 24.0], [77.0, 35.0]]
    assert swapped.tolist() == [[62.0, 24.0], [93.0, 24.0], [77.0, 35.0]]
    # Two mirrorings make a half turn: swapped twice, each id is back on its own point, turned.
    chain.add("VerticalFlip", p=1.0)
    assert chain.run([image], keypoints=[points]).keypoints[0].tolist() == [[93.0, 71.0], [62.0, 71.0], [77.0, 60.0]]
    # Two instances of three keypoints each: the pairs swap within each instance.
    chain = wb.Chain(seed=0).add("HorizontalFlip", p=1.0)
    chain.targets.flip_pairs = [[0, 1]]
    chain.targets.keypoints_per_instance = 3
    two = chain.run([image], keypoints=[points + [[10.0, 5.0], [20.0, 5.0], [15.0, 9.0]]]).keypoints[0]
    assert two[:, 0].tolist() == [62.0, 93.0, 77.0, 107.0, 117.0, 112.0]
    with pytest.raises(ChainError, match="flip_pairs name keypoint id 3, but an instance has keypoints_per_instance=3"):
        wb.Chain.from_dict({"steps": [{"op": "HorizontalFlip"}], "targets": {"flip_pairs": [[0, 3]],
                                                                              "keypoints_per_instance": 3}})
    rotated = wb.Chain(seed=0).add("Rotate", degrees=[90, 90])
    rotated.targets.flip_pairs = [[0, 1]]
    out = rotated.run([image], keypoints=[points]).keypoints[0]
    assert out[0, 1] > out[1, 1]  # not swapped: the left eye is now below the right one


def test_occlusion_leaves_boxes_and_marks_masks_only_when_asked():
    image, mask = shape_image()
    chain = wb.Chain(seed=4).add("Erase", p=1.0, scale=[0.2, 0.2])
    res = chain.run([image], backend="dali", masks=[mask], boxes=[[SHAPE]])
    assert np.array_equal(res.masks[0], mask) and res.boxes[0].tolist() == [list(map(float, SHAPE))]
    chain.targets.mark_erased = 255
    res = chain.run([image], backend="dali", masks=[mask], boxes=[[SHAPE]])
    row = res.params[0][0]
    x, y, w, h = (int(row[k]) for k in ("x", "y", "width", "height"))
    expected = mask.copy()
    expected[y:y + h, x:x + w] = 255
    assert np.array_equal(res.masks[0], expected) and (res.masks[0] == 255).sum() == w * h > 0
    dropout = wb.Chain(seed=4).add("CoarseDropout", p=1.0)
    dropout.targets.mark_erased = 9
    res = dropout.run([image], masks=[mask])
    erased = res.masks[0] == 9
    assert erased.any() and np.all(np.asarray(res.images[0])[erased] == 0)
    grid = wb.Chain(seed=4).add("GridMask", p=1.0)
    grid.targets.mark_erased = 9
    with pytest.raises(UnsupportedOpError, match="GridMask cannot mark the pixels it erases"):
        grid.run([image], backend="dali", masks=[mask])
    assert grid.run([image], backend="dali", boxes=[[SHAPE]]).boxes[0].shape == (1, 4)


def test_mixup_keeps_both_images_boxes_and_the_dominant_mask():
    a, mask_a = shape_image()
    b, mask_b = shape_image(box=(80, 60, 120, 90))
    chain = wb.Chain(seed=2).add("MixUp", weight=[0.7, 0.7])
    res = chain.run([a, b], masks=[mask_a, mask_b * 2], boxes=[[SHAPE], [[80, 60, 120, 90]]], box_labels=[[1], [2]])
    for n in range(2):
        partner = res.params[n][0]["partner"]
        assert res.box_labels[n].tolist() == [n + 1, partner + 1]
        assert np.array_equal(res.masks[n], [mask_a, mask_b * 2][partner])  # the partner's share is 0.7


def test_cutmix_pastes_the_partners_mask_and_boxes_inside_its_box():
    a, mask_a = shape_image()
    b, mask_b = shape_image(box=(80, 60, 120, 90))
    chain = wb.Chain(seed=5).add("CutMix", area=[0.3, 0.3])
    chain.targets.min_visibility = 0.2
    res = chain.run([a, b], masks=[mask_a, mask_b * 2], boxes=[[SHAPE], [[80, 60, 120, 90]]], box_labels=[[1], [2]],
                    keypoints=[POINTS, POINTS])
    for n in range(2):
        row = res.params[n][0]
        x0, y0, x1, y1 = (int(v) for v in row["box"])
        own, other = [mask_a, mask_b * 2][n], [mask_a, mask_b * 2][row["partner"]]
        expected = own.copy()
        expected[y0:y1, x0:x1] = other[y0:y1, x0:x1]
        assert np.array_equal(res.masks[n], expected)
        # The masks follow the pixels: where the output shows the partner's shape, the mask says so.
        assert iou(res.masks[n] > 0, shape_of(res, n)) > 0.99
        for (x, y), visible in zip(res.keypoints[n], res.keypoints_visible[n]):
            assert visible == (not (x0 <= x + 0.5 < x1 and y0 <= y + 0.5 < y1))
        for box in res.boxes[n]:
            assert box[0] >= 0 and box[2] <= W


def test_groups_move_targets_with_the_children_that_ran():
    image, mask = shape_image(H, H)
    chain = wb.Chain.from_dict({"seed": 3, "steps": [{"op": "OneOf", "steps": [
        {"op": "HorizontalFlip", "p": 1.0}, {"op": "VerticalFlip", "p": 1.0}, {"op": "Transpose", "p": 1.0}]}]})
    for backend in wb.BACKENDS:
        res = chain.run([image] * 6, backend=backend, masks=[mask[:, :H]] * 6, boxes=[[SHAPE]] * 6)
        for n in range(6):
            assert iou(res.masks[n] == 1, shape_of(res, n)) == 1.0
            assert res.boxes[n][0].tolist() == tight_box(shape_of(res, n)).tolist()


def test_ops_that_cannot_move_targets_are_refused_by_name(unfollowed_op):
    op = unfollowed_op
    image, mask = shape_image()
    chain = wb.Chain(seed=0).add(op)
    with pytest.raises(UnsupportedOpError, match=f"{op} cannot move masks, boxes"):
        chain.run([image], masks=[mask], boxes=[[SHAPE]])
    assert chain.run([image]).images.shape[0] == 1  # without targets it runs as before


@pytest.mark.parametrize("kwargs, message", [
    ({"boxes": [[[10, 5, 4, 20]]]}, r"boxes of image 1: box 1 \[10.0, 5.0, 4.0, 20.0\] has x2 < x1"),
    ({"boxes": [[[0, 0, 10, 97]]]}, r"boxes of image 1: entry 1 .* lies outside the 96x128 image"),
    ({"boxes": [[[0, 0, 10]]]}, r"boxes of image 1: must be a \(K, 4\)"),
    ({"boxes": [[[0, 0, np.nan, 3]]]}, r"boxes of image 1: entry 1 .* NaN"),
    ({"masks": [np.zeros((95, 128), np.uint8)]}, r"mask of image 1 is 95x128 but image 1 is 96x128"),
    ({"masks": [np.zeros((96, 128), np.float32)]}, r"mask of image 1: must be an H x W array of integer labels"),
    ({"masks": [np.zeros((96, 128), np.uint8)] * 2}, r"masks: expected one entry per image \(1 image"),
    ({"keypoints": [[[np.nan, 3.0]]]}, r"keypoints of image 1: entry 1 .* NaN"),
    ({"keypoints": [[[-3.0, 3.0]]]}, r"keypoints of image 1: entry 1 \[-3.0, 3.0\] lies outside"),
    ({"boxes": [[[0, 0, 4, 4]]], "box_labels": [[1, 2]]}, r"box_labels of image 1: expected one entry per box \(1\)"),
    ({"box_labels": [[1]]}, r"box_labels were given without boxes"),
])
def test_bad_targets_get_an_error_naming_image_and_target(kwargs, message):
    image, _ = shape_image()
    chain = wb.Chain(seed=0).add("HorizontalFlip")
    with pytest.raises(InputError, match=message):
        chain.run([image], **kwargs)
    assert chain.to_dict()["steps"][0]["op"] == "HorizontalFlip"  # the chain is untouched


def test_target_settings_round_trip_and_are_checked(tmp_path):
    chain = wb.Chain(seed=1).add("HorizontalFlip")
    assert "targets" not in chain.to_dict() and chain.to_dict()["version"] == 1
    chain.targets.min_visibility = 0.25
    chain.targets.flip_pairs = [[0, 1], [3, 4]]
    chain.targets.mark_erased = 255
    data = chain.to_dict()
    assert data["version"] == 3 and data["targets"] == {"min_visibility": 0.25, "mark_erased": 255,
                                                        "flip_pairs": [[0, 1], [3, 4]]}
    for name in ("c.yaml", "c.json"):
        assert wb.Chain.load(chain.save(tmp_path / name)) == chain
    assert wb.Chain.from_dict(data) != wb.Chain(seed=1).add("HorizontalFlip")
    for bad, message in (({"min_visibility": 1.5}, "min_visibility must be a number in"),
                         ({"flip_pairs": [[0, 0]]}, "flip_pairs must be a list of"),
                         ({"flip_pairs": [[0, 1], [1, 2]]}, "appears in two flip_pairs"),
                         ({"mark_erased": -1}, "mark_erased must be a mask label"),
                         ({"colour": 1}, "unknown key")):
        with pytest.raises(ChainError, match=message):
            wb.Chain.from_dict({**data, "targets": bad})


def test_sample_annotations_load_and_sit_on_their_images():
    images, targets = wb.load_annotated()
    assert len(images) >= 4 and set(targets) == {"masks", "boxes", "box_labels", "keypoints", "keypoints_visible"}
    for image, mask, boxes in zip(images, targets["masks"], targets["boxes"]):
        assert mask.shape == image.shape[:2] and len(boxes) >= 1
        for x0, y0, x1, y1 in boxes:  # every box holds labelled pixels, and is their tight box per object
            assert mask[int(y0):int(y1), int(x0):int(x1)].any()
    # The sample folder by any name that leads to it comes with its annotations (the repository's
    # sample_data is a link to the package's).
    for name in (wb.SAMPLE_DATA, str(wb.SAMPLE_DATA), ROOT / "sample_data"):
        again, _ = wb.load_annotated(name)
        assert [a.source for a in again] == [i.source for i in images], name
    res = wb.Chain(seed=0).add("HorizontalFlip", p=1.0).run(images, **targets)
    for n, image in enumerate(images):
        width = image.shape[1]
        assert np.array_equal(res.masks[n], targets["masks"][n][:, ::-1])
        assert np.allclose(res.boxes[n][:, [2, 0]], width - targets["boxes"][n][:, [0, 2]])


def test_load_annotated_reads_coco_and_mask_folders(tmp_path):
    import json

    from PIL import Image

    image, mask = shape_image()
    (tmp_path / "images" / "a").mkdir(parents=True)
    (tmp_path / "masks").mkdir()
    Image.fromarray(image).save(tmp_path / "images" / "a" / "one.png")
    Image.fromarray(image).save(tmp_path / "images" / "two.png")
    Image.fromarray(mask).save(tmp_path / "masks" / "one.png")
    coco = {"images": [{"id": 5, "file_name": "a/one.png", "width": W, "height": H}],
            "annotations": [{"id": 1, "image_id": 5, "category_id": 3, "bbox": [30, 20, 40, 30],
                             "keypoints": [34, 24, 2, 0, 0, 0]}],
            "categories": [{"id": 3, "name": "shape"}]}
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    images, targets = wb.load_annotated(tmp_path / "images", coco=tmp_path / "coco.json", masks=tmp_path / "masks")
    assert len(images) == 1 and targets["boxes"][0].tolist() == [list(map(float, SHAPE))]
    assert targets["box_labels"][0].tolist() == [3] and targets["keypoints_visible"][0].tolist() == [True, False]
    assert np.array_equal(targets["masks"][0], mask)
    res = wb.Chain(seed=0).add("VerticalFlip", p=1.0).run(images, **targets)
    assert res.boxes[0].tolist() == [[30.0, 46.0, 70.0, 76.0]]
    only_masks, t = wb.load_annotated(tmp_path / "images", masks=tmp_path / "masks")
    assert len(only_masks) == 1 and set(t) == {"masks"}
    with pytest.raises(InputError, match="no image in .* has a mask"):
        wb.load_annotated(tmp_path / "images" / "two.png", masks=tmp_path / "masks")
    coco["images"].append({"id": 6, "file_name": "two.png", "width": W, "height": H})
    (tmp_path / "coco.json").write_text(json.dumps(coco))
    with pytest.raises(InputError, match=r"two.png' has no mask: .*two.png' is missing"):
        wb.load_annotated(tmp_path / "images", coco=tmp_path / "coco.json", masks=tmp_path / "masks")
    (tmp_path / "bad.json").write_text("{\"images\": 3}")
    with pytest.raises(InputError, match="is not a COCO instances file"):
        wb.load_annotated(tmp_path / "images", coco=tmp_path / "bad.json")


def test_axis_aligned_mask_warps_take_a_shortcut_to_the_same_pixels():
    from workbench.runtime import targets as runtime

    rng = np.random.default_rng(0)
    for k in range(200):
        h, w, oh, ow = (int(v) for v in rng.integers(1, 40, 4))
        mask = rng.integers(0, 5, (h, w)).astype(np.uint8)
        matrix = runtime.translation(*rng.uniform(-15, 15, 2)) @ runtime.scaling(
            *(rng.uniform(0.2, 3, 2) * rng.choice([-1, 1], 2)))
        # The general path: the same map with a shear too small to move any pixel centre.
        sheared = matrix @ np.array([[1.0, 1e-300, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        assert np.array_equal(runtime.warp_mask(mask, matrix, oh, ow, 7), runtime.warp_mask(mask, sheared, oh, ow, 7))


def test_masks_moved_as_tensors_are_the_host_masks_bit_for_bit():
    """The training loaders move masks on the GPU (warp_masks_on_device, a step's masks at once):
    the same float64 arithmetic term for term, so the same labels as on the host, through maps,
    projective maps, fields, policies, groups, erasing and mixing; here with CPU tensors."""
    import torch

    from workbench.plans import target_plan, target_settings
    from workbench.runtime import targets as runtime

    images, targets = wb.load_annotated()
    steps = [
        [{"op": "Rotate", "p": 1.0, "params": {"degrees": [-40, 40]}}, {"op": "Perspective", "p": 1.0},
         {"op": "RandomResizedCrop", "params": {"size": [200, 200]}}, {"op": "HorizontalFlip"},
         {"op": "CoarseDropout", "p": 1.0}, {"op": "CutMix"}, {"op": "MixUp"}],
        [{"op": "LongestMaxSize", "params": {"max_size": 256}},
         {"op": "PadIfNeeded", "params": {"min_size": [256, 256]}},
         {"op": "OneOf", "steps": [{"op": "Rotate", "p": 1.0}, {"op": "Affine", "p": 1.0}]},
         {"op": "GridDistortion", "p": 1.0},
         {"op": "ElasticTransform", "p": 1.0, "params": {"alpha": 50.0, "sigma": 6.0}},
         {"op": "TrivialAugment"}, {"op": "D4"}, {"op": "Shear", "p": 1.0}],
    ]
    for seed, chain_steps in enumerate(steps):
        chain = wb.Chain.from_dict({"seed": seed, "steps": chain_steps})
        chain.targets.mark_erased, chain.targets.mask_fill = 255, 9
        res = chain.run(images, **targets)
        plan, settings = target_plan(chain.steps), target_settings(chain)
        sizes = [image.shape[:2] for image in images]
        on_host = runtime.move_batch(plan, res.params, sizes, targets, settings)
        tensors = [torch.tensor(mask) for mask in targets["masks"]]
        moved = runtime.move_batch(plan, res.params, sizes, {**targets, "masks": tensors}, settings)
        assert all(torch.is_tensor(m) for m in moved["masks"])
        for a, b, given, out in zip(on_host["masks"], moved["masks"], tensors, res.masks):
            assert a.dtype == b.numpy().dtype and np.array_equal(a, b.numpy()) and np.array_equal(a, out)
        assert all(np.array_equal(a, b) for a, b in zip(on_host["boxes"], moved["boxes"]))
        assert all(np.array_equal(t.numpy(), m) for t, m in zip(tensors, targets["masks"]))  # inputs untouched
    # Many random maps at once, of one size: projective or not, mirrored, partly outside.
    rng = np.random.default_rng(1)
    masks = [rng.integers(0, 6, (31, 45)).astype(np.uint8) for _ in range(24)]
    matrices = []
    for n in range(24):
        m = runtime.rotation({}, {"angle": rng.uniform(-180, 180)}, 31, 45, 31, 45) @ runtime.scaling(
            *rng.uniform(0.5, 2.0, 2))
        if n % 3 == 0:
            m = runtime.homography([[0, 0], [45, 0], [45, 31], [0, 31]],
                                   rng.uniform(-6, 6, (4, 2)) + [[0, 0], [45, 0], [45, 31], [0, 31]]) @ m
        matrices.append(runtime.horizontal_flip({}, {}, 31, 45, 31, 45) @ m if n % 2 else m)
    moved = runtime.warp_masks_on_device([torch.tensor(m) for m in masks], matrices, 40, 37, 7)
    for mask, matrix, out in zip(masks, matrices, moved):
        assert np.array_equal(runtime.warp_mask(mask, matrix, 40, 37, 7), out.numpy())
