"""Masks, boxes and keypoints moved with the pixels, from each sample's reported draws.

Every backend reports what it drew for each sample (a rotation's angle, a crop's window, a
flip's coin); the functions here turn those draws into the forward map each geometric step
applied to the pixels (a 3 x 3 matrix), and move the targets through it. The same code runs
for every backend, so targets agree across backends exactly as far as the draws do.

Coordinates: one continuous space per image, in pixels, with pixel (row i, column j)
covering [j, j + 1) x [i, i + 1) ("pixel edges", as COCO and Pascal VOC boxes and DALI's
warps). Boxes are [x1, y1, x2, y2] in that space; keypoints are given with pixel centres at
integers (the centre of column j is x = j, as OpenCV's and Albumentations' keypoints), so
they are moved as the points k + 0.5. Masks are resampled at output pixel centres with the
nearest input pixel. Pure numpy: an exported file can carry this module as it stands.

Example:
    >>> import numpy as np
    >>> flip = horizontal_flip({}, {"applied": True}, 4, 10, 4, 10)
    >>> move_boxes(np.array([[0.0, 1.0, 3.0, 2.0]]), flip, 4, 10, 0.0)[0].tolist()
    [[7.0, 1.0, 10.0, 2.0]]
"""
import math

import numpy as np


# ----- matrices ---------------------------------------------------------------------------------
def translation(dx, dy):
    """The 3 x 3 map p' = p + (dx, dy)."""
    return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy], [0.0, 0.0, 1.0]])


def scaling(sx, sy):
    """The 3 x 3 map p' = (sx x, sy y)."""
    return np.array([[sx, 0.0, 0.0], [0.0, sy, 0.0], [0.0, 0.0, 1.0]])


def about_centre(linear, shift, height, width):
    """p' = L (p - c) + c + t about the image centre c = (W / 2, H / 2) in pixel edges (the
    centre pixel-centre convention's (W - 1) / 2 names the same point): how Kornia, DALI and
    Albumentations place rotations, shears and affine warps."""
    cx, cy = width / 2.0, height / 2.0
    m = np.eye(3)
    m[:2, :2] = np.asarray(linear, dtype=np.float64)
    m[:2, 2] = (cx + shift[0] - m[0, 0] * cx - m[0, 1] * cy, cy + shift[1] - m[1, 0] * cx - m[1, 1] * cy)
    return m


def centres_to_edges(matrix):
    """A map written with pixel centres at integers, rewritten in pixel edges: T(0.5) M T(-0.5)."""
    return translation(0.5, 0.5) @ np.asarray(matrix, dtype=np.float64) @ translation(-0.5, -0.5)


def homography(source, target):
    """The 3 x 3 projective map taking 4 source points (x, y) to 4 target points."""
    rows, values = [], []
    for (x, y), (u, v) in zip(np.asarray(source, dtype=np.float64), np.asarray(target, dtype=np.float64)):
        rows.append([x, y, 1.0, 0.0, 0.0, 0.0, -u * x, -u * y])
        rows.append([0.0, 0.0, 0.0, x, y, 1.0, -v * x, -v * y])
        values += [u, v]
    return np.append(np.linalg.solve(np.array(rows), np.array(values)), 1.0).reshape(3, 3)


def apply_matrix(matrix, points):
    """Points (K x 2) through a 3 x 3 map (projective division included). Written out term by
    term, each product and sum rounded on its own, so that the masks moved on a device
    (warp_masks_on_device) compute the very same floats."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    x, y = points[:, 0], points[:, 1]
    out = np.stack([x * matrix[0, 0] + y * matrix[0, 1] + matrix[0, 2],
                    x * matrix[1, 0] + y * matrix[1, 1] + matrix[1, 2]], axis=1)
    if matrix[2, 0] or matrix[2, 1]:
        out = out / (x * matrix[2, 0] + y * matrix[2, 1] + matrix[2, 2])[:, None]
    return out


# ----- the forward map of each geometric op, from one sample's draws ----------------------------
# Each takes (params, row, height, width, out_height, out_width): the step's parameters, the
# sample's reported row (RunResult.params[n][step]), the input and the output size; and returns
# the 3 x 3 map from input to output pixel edges.
def horizontal_flip(params, row, height, width, out_height, out_width):
    return np.array([[-1.0, 0.0, float(width)], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def vertical_flip(params, row, height, width, out_height, out_width):
    return np.array([[1.0, 0.0, 0.0], [0.0, -1.0, float(height)], [0.0, 0.0, 1.0]])


def _turn(degrees):
    """Counter-clockwise as seen on screen (y pointing down): [[cos, sin], [-sin, cos]]."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return [[c, s], [-s, c]]


def rotation(params, row, height, width, out_height, out_width):
    return about_centre(_turn(float(row["angle"])), (0.0, 0.0), height, width)


def affine(params, row, height, width, out_height, out_width):
    """Kornia's RandomAffine (and DALI's lowering of it): R(angle) diag(sx, sy) Shear_x, the
    angle clockwise on screen, then the shift; or the reported matrix (pixel centres at integers),
    where the backend composes its own way (Albumentations shears after rotating)."""
    if "matrix" in row:
        return centres_to_edges(np.asarray(row["matrix"], dtype=np.float64).reshape(3, 3))
    rad = math.radians(float(row["angle"]))
    c, s = math.cos(rad), math.sin(rad)
    sx, sy = (float(v) for v in np.asarray(row["scale"], dtype=np.float64).reshape(-1)[:2])
    k = math.tan(math.radians(float(row.get("shear", 0.0))))
    linear = [[sx * c, -k * sx * c - sy * s], [sx * s, sy * c - k * sx * s]]
    return about_centre(linear, [float(v) for v in row["translate_px"]], height, width)


def shift(params, row, height, width, out_height, out_width):
    return translation(float(row["dx"]), float(row["dy"]))


def shear(params, row, height, width, out_height, out_width):
    """x sheared first, then y: [[1, -tan x], [-tan y, 1 + tan x tan y]] about the centre; or the
    reported matrix, where the backend shears both axes at once (Albumentations)."""
    if "matrix" in row:
        return centres_to_edges(np.asarray(row["matrix"], dtype=np.float64).reshape(3, 3))
    kx = math.tan(math.radians(float(row["shear_x"])))
    ky = math.tan(math.radians(float(row["shear_y"])))
    return about_centre([[1.0, -kx], [-ky, 1.0 + kx * ky]], (0.0, 0.0), height, width)


def window(params, row, height, width, out_height, out_width):
    """The reported crop_box [x0, y0, x1, y1) stretched onto the output (a crop, or a crop and
    resize)."""
    x0, y0, x1, y1 = (float(v) for v in row["crop_box"])
    return scaling(out_width / (x1 - x0), out_height / (y1 - y0)) @ translation(-x0, -y0)


def resize(params, row, height, width, out_height, out_width):
    return scaling(out_width / width, out_height / height)


def padding(params, row, height, width, out_height, out_width):
    """The reported padding [left, right, top, bottom]."""
    return translation(float(row["padding"][0]), float(row["padding"][2]))


def padded_window(params, row, height, width, out_height, out_width):
    """Pad by the reported padding, then cut the reported crop_box of the padded image."""
    return window(params, row, height, width, out_height, out_width) @ padding(params, row, height, width,
                                                                               out_height, out_width)


def _quarter_turns(turns, height, width):
    """np.rot90's k counter-clockwise quarter turns: each takes (x, y) to (y, W - x)."""
    m = np.eye(3)
    for _ in range(int(turns) % 4):
        m = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, float(width)], [0.0, 0.0, 1.0]]) @ m
        height, width = width, height
    return m


def quarter_turns(params, row, height, width, out_height, out_width):
    return _quarter_turns(round(float(row["k"])), height, width)


def transposition(params, row, height, width, out_height, out_width):
    return np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def dihedral(params, row, height, width, out_height, out_width):
    """A.D4's element: 0-3 are np.rot90 turns, 4-7 are 7 - element turns and a transpose."""
    element = int(round(float(row["element"])))
    turns = element if element < 4 else 7 - element
    m = _quarter_turns(turns, height, width)
    return transposition(params, row, height, width, out_height, out_width) @ m if element >= 4 else m


def corner_perspective(params, row, height, width, out_height, out_width):
    """The homography taking the reported start_points to end_points (pixel centres at integers)."""
    start = np.asarray(row["start_points"], dtype=np.float64).reshape(4, 2)
    end = np.asarray(row["end_points"], dtype=np.float64).reshape(4, 2)
    return centres_to_edges(homography(start, end))


def zoom_perspective(params, row, height, width, out_height, out_width):
    """A.Perspective's reported matrix, taken to the output size: diag(W / max_width, H / max_height)."""
    max_h, max_w = (float(v) for v in row["max_size"])
    matrix = scaling(width / max_w, height / max_h) @ np.asarray(row["matrix"], dtype=np.float64).reshape(3, 3)
    return centres_to_edges(matrix)


def policy_ops(params, row):
    """The ops a policy step ran on a sample and their magnitudes: its row's `ops` and `magnitudes`
    where the workbench named them, else from the raw draws (the chosen candidates' positions
    `policy_choice`, which of their ops ran `op_applied`, `op_magnitude`), named by
    params["op_names"] (the op names each candidate holds, in order).

    Example:
        >>> draws = {"policy_choice": [1.0, 0.0], "op_magnitude": [0.0, 9.0]}
        >>> policy_ops({"op_names": [["rotate"], ["invert"]]}, draws)
        (['invert', 'rotate'], [0.0, 9.0])
    """
    if "ops" in row:
        return list(row["ops"]), list(row["magnitudes"])

    def listed(value):
        return [float(v) for v in np.atleast_1d(np.asarray(value, dtype=np.float64))]
    names = [name for c in listed(row.get("policy_choice", [])) for name in params["op_names"][int(c)]]
    applied = listed(row["op_applied"]) if "op_applied" in row else [1.0] * len(names)
    magnitudes = listed(row["op_magnitude"]) if "op_magnitude" in row else [math.nan] * len(names)
    ran = [j for j in range(len(names)) if applied[j] > 0.5]
    return [names[j] for j in ran], [magnitudes[j] for j in ran]


def _policy_map(params, row, height, width, shear_map):
    """A policy's ops at their magnitudes (policy_ops), composed in the order they ran: rotate (degrees,
    counter-clockwise) about the centre, shear_x / shear_y by `shear_map(name, degrees, height, width)`,
    translate_x / translate_y in pixels; the colour ops move nothing."""
    m = np.eye(3)
    for name, magnitude in zip(*policy_ops(params, row)):
        if name == "rotate":
            m = rotation(params, {"angle": magnitude}, height, width, height, width) @ m
        elif name in ("shear_x", "shear_y"):
            m = shear_map(name, float(magnitude), height, width) @ m
        elif name == "translate_x":
            m = translation(float(magnitude), 0.0) @ m
        elif name == "translate_y":
            m = translation(0.0, float(magnitude)) @ m
    return m


def _shear_about_centre(name, degrees, height, width):
    sheared = {"shear_x": 0.0, "shear_y": 0.0, name: degrees}
    return shear({}, sheared, height, width, height, width)


def _shear_about_corner(name, degrees, height, width):
    k = math.tan(math.radians(degrees))
    return np.array([[1.0, -k, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] if name == "shear_x"
                    else [[1.0, 0.0, 0.0], [-k, 1.0, 0.0], [0.0, 0.0, 1.0]])


def policy(params, row, height, width, out_height, out_width):
    """A policy's (RandAugment, TrivialAugment, AutoAugment) ops (_policy_map), shears in degrees about
    the centre, as Rotate and Shear. (Kornia runs them with align_corners=True, which is exact in pixel
    centres, and DALI's policy ops follow it.)"""
    return _policy_map(params, row, height, width, _shear_about_centre)


def torchvision_policy(params, row, height, width, out_height, out_width):
    """A torchvision policy's (TorchvisionRandAugment, ...TrivialAugmentWide, ...AutoAugment) ops
    (_policy_map) as torchvision's affine places them: shear_x / shear_y (degrees) about the image's
    top-left corner (x' = x - tan(angle) y, or y' = y - tan(angle) x); its translations are whole pixels.

    Example:
        >>> torchvision_policy({}, {"ops": ["shear_x"], "magnitudes": [45.0]}, 10, 10, 10, 10).round(6)[0].tolist()
        [1.0, -1.0, 0.0]
    """
    return _policy_map(params, row, height, width, _shear_about_corner)


def scaled_sides(height, width, max_size, reference, rounding="nearest"):
    """(height, width) scaled so that the `reference` side (one of the two) becomes `max_size`:
    rounding "nearest" is A.LongestMaxSize / A.SmallestMaxSize's round(side * max_size / reference),
    half to even; "down" is torchvision's Resize, int(max_size * side / reference), here in whole
    numbers (the same result: an exact quotient is a whole float, any other is at least
    1 / reference from the next one). At least 1.

    Example:
        >>> scaled_sides(375, 500, 256, 375), scaled_sides(375, 500, 200, 375, "down")
        ((256, 341), (200, 266))
        >>> scaled_sides(375, 500, 200, 375)  # 266.67 rounds up
        (200, 267)
    """
    if rounding == "down":
        return max(1, max_size * height // reference), max(1, max_size * width // reference)
    scale = max_size / reference
    return max(1, round(height * scale)), max(1, round(width * scale))


def drawn_sides(rule, value, height, width, bound=0, target=(0, 0)):
    """(height, width) that a per-sample size op gives an image of height x width, from the sample's
    draw `value`, as torchvision computes them (at least 1 pixel):
    "shortest" (RandomShortestSize): r = value / the shorter side, at most `bound` / the longer side
    when `bound` > 0, each side int(side * r) in float64; "resize" (RandomResize): the shorter side
    becomes `value`, the other int(value * side / shorter side) (scaled_sides, down); "jitter"
    (ScaleJitter): r = min(target height / height, target width / width) * value in float32, each
    side int(side * r) in float32.

    Example:
        >>> drawn_sides("shortest", 300, 375, 500), drawn_sides("shortest", 600, 375, 500, bound=700)
        ((300, 400), (525, 700))
        >>> drawn_sides("resize", 301, 375, 500), drawn_sides("jitter", 0.5, 375, 500, target=(1024, 1024))
        ((301, 401), (384, 512))
    """
    if rule == "resize":
        return scaled_sides(height, width, int(value), min(height, width), "down")
    if rule == "jitter":
        r = np.float32(min(target[0] / height, target[1] / width)) * np.float32(value)
        return max(1, int(np.float32(height) * r)), max(1, int(np.float32(width) * r))
    r = float(value) / min(height, width)
    if bound > 0:
        r = min(r, bound / max(height, width))
    return max(1, int(height * r)), max(1, int(width * r))


def zoom_out_padding(ratio, u, v, height, width):
    """torchvision's RandomZoomOut padding [left, right, top, bottom] of an image of height x width
    from its draws (all float32, as torchvision computes them): a canvas int(side x ratio) on each
    axis, the image at int(room x u) from the left and int(room x v) from the top.

    Example:
        >>> zoom_out_padding(2.0, 0.25, 0.5, 100, 200)
        [50, 150, 50, 50]
    """
    ratio, u, v = np.float32(ratio), np.float32(u), np.float32(v)
    canvas_h, canvas_w = int(np.float32(height) * ratio), int(np.float32(width) * ratio)
    left, top = int(np.float32(canvas_w - width) * u), int(np.float32(canvas_h - height) * v)
    return [left, canvas_w - width - left, top, canvas_h - height - top]


# Why a chain with RandomIoUCrop cannot run without boxes, and what to give it.
BOXES_NEEDED = ("RandomIoUCrop draws its window from each image's boxes as they stand at its step: give the images' "
                "boxes (Chain.run(images, boxes=...), augment_images(images, boxes=...), or --coco for --save, "
                "--bench and the training loader)")


def centres_inside(boxes, window):
    """Which boxes (K x 4, [x1, y1, x2, y2]) have their centre strictly inside `window` [left, top,
    right, bottom], the centres computed in float32 as torchvision's RandomIoUCrop computes them.

    Example:
        >>> centres_inside(np.array([[0.0, 0.0, 4.0, 4.0], [6.0, 0.0, 8.0, 2.0]]), [0, 0, 5, 5]).tolist()
        [True, False]
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    cx = np.float32(0.5) * (boxes[:, 0] + boxes[:, 2])
    cy = np.float32(0.5) * (boxes[:, 1] + boxes[:, 3])
    left, top, right, bottom = window
    return (left < cx) & (cx < right) & (top < cy) & (cy < bottom)


def iou_crop_window(boxes, height, width, settings, draw_option, draw_pair, rounds=1000):
    """The window [left, top, right, bottom] that torchvision's RandomIoUCrop (SSD's) cuts from an
    image of height x width with `boxes` (K x 4, [x1, y1, x2, y2]), or None to leave the image as it
    is: draw a minimum IoU among settings["sampler_options"] (`draw_option(n)`: an index below n; a
    value >= 1 leaves the image as it is), then up to settings["trials"] times draw the sides
    (int(side x r), r = lo + (hi - lo) x `draw_pair()` in float32 from settings["scale"], their
    ratio within settings["aspect_ratio"]) and the place (int(room x u)), and keep the first window
    holding a box centre (centres_inside) whose box overlaps it by at least that IoU. torchvision
    draws options until one succeeds; after `rounds` options this leaves the image as it is, and a
    side of 0 fails its trial where torchvision would divide by zero. `draw_pair()`: two float32
    values in [0, 1), which torch.rand(2) gives in torchvision's order.

    Example:
        >>> pairs = iter([np.float32([0.5, 0.5]), np.float32([0.5, 0.5])])
        >>> settings = {"sampler_options": [0.0], "trials": 1, "scale": [0.0, 1.0], "aspect_ratio": [0.5, 2.0]}
        >>> iou_crop_window(np.array([[0.0, 0.0, 20.0, 20.0]]), 20, 20, settings, lambda n: 0, lambda: next(pairs))
        [5, 5, 15, 15]
    """
    boxes = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    options = [float(v) for v in settings["sampler_options"]]
    lo, hi = (np.float32(v) for v in settings["scale"])
    spread = np.float32(float(settings["scale"][1]) - float(settings["scale"][0]))
    least, most = (float(v) for v in settings["aspect_ratio"])
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    for _ in range(rounds):
        least_iou = options[int(draw_option(len(options)))]
        if least_iou >= 1.0:
            return None
        for _ in range(int(settings["trials"])):
            r = lo + spread * np.asarray(draw_pair(), dtype=np.float32)
            new_w, new_h = int(np.float32(width) * r[0]), int(np.float32(height) * r[1])
            if new_h == 0 or not least <= new_w / new_h <= most:
                continue
            u = np.asarray(draw_pair(), dtype=np.float32)
            left, top = int(np.float32(width - new_w) * u[0]), int(np.float32(height - new_h) * u[1])
            window = [left, top, left + new_w, top + new_h]
            if new_w == 0:
                continue
            held = centres_inside(boxes, window)
            if not held.any():
                continue
            b = boxes[held]
            overlap_w = np.clip(np.minimum(b[:, 2], window[2]) - np.maximum(b[:, 0], left), 0, None)
            overlap_h = np.clip(np.minimum(b[:, 3], window[3]) - np.maximum(b[:, 1], top), 0, None)
            overlap = overlap_w * overlap_h
            union = area[held] + np.float32(new_w * new_h) - overlap
            if (overlap / union).max() < least_iou:
                continue
            return window
    return None


def output_size(kind, params, row, height, width):
    """A step's output size (height, width): "same" as its input, "fixed" at params["size"],
    "padding" grown by the reported padding [left, right, top, bottom], "crop" the reported crop_box
    [x0, y0, x1, y1)'s, "scale" resized by the
    reported scale (scaled_sides: the reference side max_size / scale, the other rounded as
    params["rounding"] says, nearest when absent), "drawn" the reported out_size [height, width]
    (ops that draw each sample's size)."""
    if kind == "drawn":
        return int(round(float(row["out_size"][0]))), int(round(float(row["out_size"][1])))
    if kind == "crop":
        x0, y0, x1, y1 = (int(round(float(v))) for v in row["crop_box"])
        return y1 - y0, x1 - x0
    if kind == "fixed":
        return int(params["size"][0]), int(params["size"][1])
    if kind == "padding":
        left, right, top, bottom = (int(round(float(v))) for v in row["padding"])
        return height + top + bottom, width + left + right
    if kind == "scale":
        scale = float(row["scale"])
        if params.get("rounding", "nearest") == "nearest":
            return max(1, round(height * scale)), max(1, round(width * scale))
        max_size = int(params["max_size"])
        return scaled_sides(height, width, max_size, int(round(max_size / scale)), params["rounding"])
    return height, width


# ----- displacement fields: each output pixel reads its own source point ---------------------------
# Each takes (params, row, height, width) and returns (to_source, to_target): functions of (K x 2)
# points (x, y), pixel centres at integers as cv2.remap's maps, giving where an output point reads
# its pixels from, and where an input point ends up (the inverse). The output keeps the input's size.
def grid_axis(steps, size, num_steps):
    """Source coordinates of the `size` pixels along one side, as A.GridDistortion's generate_grid
    lays them from the num_steps + 1 `steps` (runtime/kornia_modules/distortion.py's
    distortion_grid_axis, for one sample): cell i covers pixels [i c, min((i + 1) c, size)),
    c = size // num_steps, and runs linearly, both ends included, from the previous cells' sum of
    c x step to that plus its own; pixels past the last cell read 0.

    Example:
        >>> grid_axis([1.0, 1.0, 1.0], 4, 2).tolist()
        [0.0, 2.0, 2.0, 4.0]
    """
    steps = np.nan_to_num(np.asarray(steps, dtype=np.float64).reshape(-1))
    cell = size // num_steps
    if cell == 0:
        return np.zeros(size)
    pixel = np.arange(size, dtype=np.float64)
    index = np.arange(size) // cell
    start = index * cell
    length = (np.minimum(start + cell, size) - start).astype(np.float64)
    inside = index <= num_steps
    index = np.minimum(index, num_steps)
    edges = np.concatenate([[0.0], np.cumsum(cell * steps)])
    prev, cur = edges[index], edges[index + 1]
    t = np.where(length > 1, (pixel - start) / np.maximum(length - 1, 1.0), 0.0)
    return np.where(inside, prev + (cur - prev) * t, 0.0)


def _axis_inverse(values, points):
    """Where source coordinates land along one side whose pixels read `values` (non-decreasing over
    the cells): linear between the pixels, and moved one for one past either end."""
    pixels = np.arange(len(values), dtype=np.float64)
    out = np.interp(points, values, pixels)
    out = np.where(points < values[0], points - values[0], out)
    return np.where(points > values[-1], pixels[-1] + points - values[-1], out)


def grid_distortion(params, row, height, width):
    """A.GridDistortion's separable maps from the reported steps_x and steps_y (the column a pixel
    reads depends on its column alone, the row on its row)."""
    num_steps = int(params["num_steps"])
    covered_x, covered_y = min(width, (num_steps + 1) * (width // num_steps)), \
        min(height, (num_steps + 1) * (height // num_steps))
    xs, ys = grid_axis(row["steps_x"], width, num_steps), grid_axis(row["steps_y"], height, num_steps)

    def to_source(points):
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        pixels = np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64)
        return np.stack([np.interp(points[:, 0], pixels[0], xs), np.interp(points[:, 1], pixels[1], ys)], axis=1)

    def to_target(points):
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        return np.stack([_axis_inverse(xs[:max(covered_x, 1)], points[:, 0]),
                         _axis_inverse(ys[:max(covered_y, 1)], points[:, 1])], axis=1)
    return to_source, to_target


def optical_maps(k, height, width, mode, points):
    """Where A.OpticalDistortion's output points (K x 2, pixel centres) read from, for coefficient k
    (runtime/kornia_modules/distortion.py's distortion_optical_maps, at any point): "camera" is
    OpenCV's model with k1 = k2 = k about ((W - 1) / 2, (H - 1) / 2) in units of W and H, read
    about (W / 2, H / 2); "fisheye" scales the radius about (W / 2, H / 2) by 1 + k (r / r_max)^2.

    Example:
        >>> optical_maps(0.0, 4, 4, "fisheye", np.array([[1.0, 3.0]])).tolist()
        [[1.0, 3.0]]
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if mode == "camera":
        x, y = (points[:, 0] - (width - 1) / 2.0) / width, (points[:, 1] - (height - 1) / 2.0) / height
        r2 = x * x + y * y
        radial = 1.0 + k * r2 + k * r2 * r2
        return np.stack([width / 2.0 + width * x * radial, height / 2.0 + height * y * radial], axis=1)
    x, y = points[:, 0] - width / 2.0, points[:, 1] - height / 2.0
    radial = 1.0 + k * (x * x + y * y) / ((width / 2.0) ** 2 + (height / 2.0) ** 2)
    return np.stack([width / 2.0 + x * radial, height / 2.0 + y * radial], axis=1)


def _radius_inverse(reach, c1, c2):
    """r >= 0 with r (1 + c1 r^2 + c2 r^4) = reach, by Newton's method from r = reach (the radial
    map is near the identity); where the lens folds (the map turns back), the fold's radius."""
    r = reach.copy()
    for _ in range(50):
        slope = 1.0 + 3.0 * c1 * r * r + 5.0 * c2 * r ** 4
        step = (r * (1.0 + c1 * r * r + c2 * r ** 4) - reach) / np.where(np.abs(slope) > 1e-9, slope, 1e-9)
        r = np.maximum(r - np.clip(step, -0.5 * r - 1e-12, None), 0.0)
        if np.abs(step).max(initial=0.0) < 1e-12:
            break
    return r


def optical_distortion(params, row, height, width):
    """A.OpticalDistortion's radial map at the reported k; its inverse solved per point along the
    radius (the map scales each point's offset from the centre by a function of its length)."""
    k, mode = float(np.asarray(row["k"], dtype=np.float64).reshape(-1)[0]), params["mode"]

    def to_source(points):
        return optical_maps(k, height, width, mode, points)

    def to_target(points):
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        if mode == "camera":
            units, centre, c1, c2 = np.array([width, height], np.float64), np.array([width / 2.0, height / 2.0]), k, k
            back = np.array([(width - 1) / 2.0, (height - 1) / 2.0])
        else:
            largest = (width / 2.0) ** 2 + (height / 2.0) ** 2
            units, centre, c1, c2 = np.ones(2), np.array([width / 2.0, height / 2.0]), k / largest, 0.0
            back = centre
        offset = (points - centre) / units
        reach = np.hypot(offset[:, 0], offset[:, 1])
        radius = _radius_inverse(reach, c1, c2)
        scale = np.where(reach > 0, radius / np.where(reach > 0, reach, 1.0), 1.0)
        return back + offset * scale[:, None] * units
    return to_source, to_target


# The integer hash behind the elastic noise: a counter-based stream (a value per (seed, stream, row,
# column), in any order) rather than a generator's, because DALI's graph computes the same values from its
# uint32 arithmetic (runtime/dali_ops/distortion.py) where no DALI operator draws NumPy's stream.
HASH_MULTIPLIERS = (0x7FEB352D, 0x846CA68B)
HASH_STREAM = 0x9E3779B9


def hash_mix(h):
    """A uint32 avalanche (an xor-shift-multiply finaliser: each input bit flips each output bit about
    half the time), written with floor divisions where a shift would do, as DALI has no shift.

    Example:
        >>> int(hash_mix(np.uint32(1)))
        1753845952
    """
    h = np.asarray(h, dtype=np.uint32)
    with np.errstate(over="ignore"):  # uint32 products wrap, as they do in DALI
        h = h ^ (h // np.uint32(65536))
        h = h * np.uint32(HASH_MULTIPLIERS[0])
        h = h ^ (h // np.uint32(32768))
        h = h * np.uint32(HASH_MULTIPLIERS[1])
        return h ^ (h // np.uint32(65536))


def hash_uniform(seed, stream, rows, columns):
    """Uniform values in (0, 1), float32, one per (row, column) of `rows` (a column of uint32 indices) and
    `columns` (a row of them) for (seed, stream): the top 24 bits of the hash, centred in their step.

    Example:
        >>> u = hash_uniform(3, 0, np.arange(4, dtype=np.uint32)[:, None], np.arange(5, dtype=np.uint32)[None])
        >>> u.shape, bool((u > 0).all() and (u < 1).all())
        ((4, 5), True)
    """
    start = hash_mix(np.uint32((int(seed) + int(stream) * HASH_STREAM) % 2 ** 32))
    h = hash_mix(hash_mix(start ^ rows) ^ columns)
    return ((h // np.uint32(256)).astype(np.float32) + np.float32(0.5)) * np.float32(1.0 / 16777216.0)


def elastic_noise_at(seed, rows, columns, distribution):
    """The elastic noise at the (stacked) `rows` x `columns` uint32 indices: uniform in [-1, 1), or
    standard normal by Box-Muller from two streams (before elastic_noise divides it by its largest
    magnitude), float32."""
    if distribution == "gaussian":
        u1, u2 = hash_uniform(seed, 0, rows, columns), hash_uniform(seed, 1, rows, columns)
        return np.sqrt(np.float32(-2.0) * np.log(u1)) * np.cos(np.float32(2.0 * math.pi) * u2)
    return hash_uniform(seed, 0, rows, columns) * np.float32(2.0) - np.float32(1.0)


def elastic_noise(seed, fields, height, width, distribution):
    """The (fields, H, W) float32 noise of an elastic sample with `seed`, the fields stacked one above
    the other ((fields H) rows): standard normal divided by its largest magnitude, or uniform in
    [-1, 1), from the counter-based hash (elastic_noise_at), as Albumentations' distributions.

    Example:
        >>> noise = elastic_noise(3, 2, 4, 5, "gaussian")
        >>> noise.shape, float(np.abs(noise).max())
        ((2, 4, 5), 1.0)
    """
    rows = np.arange(fields * height, dtype=np.uint32)[:, None]
    noise = elastic_noise_at(seed, rows, np.arange(width, dtype=np.uint32)[None], distribution)
    if distribution == "gaussian":
        largest = np.abs(noise).max()
        noise = noise / largest if largest > 1e-6 else noise
    return noise.reshape(fields, height, width).astype(np.float32)


def gaussian_kernel(sigma, size):
    """OpenCV's Gaussian kernel: `size` taps (0: round(8 sigma + 1) made odd, OpenCV's size for
    float images), exp(-x^2 / (2 sigma^2)) normalised to sum 1."""
    if size <= 0:
        size = int(round(sigma * 8 + 1)) | 1
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2.0
    kernel = np.exp(-(x * x) / (2.0 * sigma * sigma))
    return kernel / kernel.sum()


def blur_axis(values, kernel, axis):
    """A 2-d array filtered along `axis` by the symmetric `kernel`, the edge pixels repeated beyond
    the border (cv2.BORDER_REPLICATE), through the FFT."""
    radius = (len(kernel) - 1) // 2
    padded = np.pad(values, [(radius, radius) if a == axis else (0, 0) for a in range(2)], mode="edge")
    size = padded.shape[axis] + len(kernel) - 1
    spectrum = np.fft.rfft(padded, n=size, axis=axis)
    spectrum = spectrum * np.fft.rfft(kernel, n=size).reshape([-1 if a == axis else 1 for a in range(2)])
    full = np.fft.irfft(spectrum, n=size, axis=axis)
    return np.take(full, np.arange(len(kernel) - 1, len(kernel) - 1 + values.shape[axis]), axis=axis)


def elastic_field(params, seed, height, width):
    """A.ElasticTransform's displacement (dx, dy), each H x W in pixels, for the sample whose
    noise has `seed` (elastic_noise): the fields stacked one above the other, blurred together
    by a Gaussian of sigma (17 taps when approximate), times alpha."""
    fields = 1 if params["same_dxdy"] else 2
    noise = elastic_noise(seed, fields, height, width, params["noise_distribution"]).astype(np.float64)
    kernel = gaussian_kernel(float(params["sigma"]), 17 if params["approximate"] else 0)
    stacked = blur_axis(blur_axis(noise.reshape(fields * height, width), kernel, 1), kernel, 0)
    out = stacked.reshape(fields, height, width) * float(params["alpha"])
    return out[0], out[-1]


def _bilinear(grid, points):
    """`grid` (H x W) read at (K x 2) points (x, y) in pixel centres, linearly between pixels and
    the edge values beyond."""
    height, width = grid.shape
    x = np.clip(points[:, 0], 0, width - 1)
    y = np.clip(points[:, 1], 0, height - 1)
    x0, y0 = np.minimum(np.floor(x).astype(np.int64), width - 2 if width > 1 else 0), \
        np.minimum(np.floor(y).astype(np.int64), height - 2 if height > 1 else 0)
    x1, y1 = np.minimum(x0 + 1, width - 1), np.minimum(y0 + 1, height - 1)
    fx, fy = x - x0, y - y0
    top = grid[y0, x0] * (1 - fx) + grid[y0, x1] * fx
    bottom = grid[y1, x0] * (1 - fx) + grid[y1, x1] * fx
    return top * (1 - fy) + bottom * fy


def invert_points(to_source, points, iterations=40):
    """Where `points` (K x 2) land under a warp that reads each output point q at to_source(q):
    the q with to_source(q) = p, by Newton's method from q = p with the Jacobian taken across half
    a pixel; where the warp folds (several q), the one Newton reaches from p."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    q = points.copy()
    for _ in range(iterations):
        miss = to_source(q) - points
        if np.abs(miss).max(initial=0.0) < 1e-9:
            break
        dx = (to_source(q + [0.25, 0.0]) - to_source(q - [0.25, 0.0])) / 0.5
        dy = (to_source(q + [0.0, 0.25]) - to_source(q - [0.0, 0.25])) / 0.5
        det = dx[:, 0] * dy[:, 1] - dy[:, 0] * dx[:, 1]
        safe = np.abs(det) > 1e-6
        det = np.where(safe, det, 1.0)
        step = np.stack([(dy[:, 1] * miss[:, 0] - dy[:, 0] * miss[:, 1]) / det,
                         (dx[:, 0] * miss[:, 1] - dx[:, 1] * miss[:, 0]) / det], axis=1)
        # Where the warp folds (no inverse Jacobian), step by the miss itself.
        q = q - np.clip(np.where(safe[:, None], step, miss), -4.0, 4.0)
    return q


def elastic_distortion(params, row, height, width):
    """A.ElasticTransform's field for the reported seed: each output pixel reads its own position
    plus (dx, dy), linearly between pixels (the edge values beyond); the inverse by Newton's method."""
    dx, dy = elastic_field(params, row["seed"], height, width)

    def to_source(points):
        points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        return points + np.stack([_bilinear(dx, points), _bilinear(dy, points)], axis=1)

    def to_target(points):
        return invert_points(to_source, points)
    return to_source, to_target


# ----- regions an occlusion step erased, from its draws ----------------------------------------------
def erased_rectangles(params, row):
    """[x0, y0, x1, y1) rectangles from the reported x, y, width, height (one each, or lists;
    none reported: nothing erased)."""
    if "x" not in row:
        return []
    xs, ys, ws, hs = (np.atleast_1d(np.asarray(row[k], dtype=np.float64)) for k in ("x", "y", "width", "height"))
    count = int(round(float(row["holes"]))) if "holes" in row else len(xs)
    return [[x, y, x + w, y + h] for x, y, w, h in list(zip(xs, ys, ws, hs))[:count] if w > 0 and h > 0]


# ----- moving the targets ---------------------------------------------------------------------
def clip_boxes(boxes, height, width, min_visibility, keep=None):
    """Boxes clipped to the image; returns (boxes, kept) where kept marks the boxes whose clipped
    area is above zero and at least `min_visibility` of their area before clipping (Albumentations'
    rule). `keep` (optional) is and-ed in."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    clipped = np.stack([np.clip(boxes[:, 0], 0, width), np.clip(boxes[:, 1], 0, height),
                        np.clip(boxes[:, 2], 0, width), np.clip(boxes[:, 3], 0, height)], axis=1)
    w, h = clipped[:, 2] - clipped[:, 0], clipped[:, 3] - clipped[:, 1]
    kept = (w > 0) & (h > 0) & (w * h >= min_visibility * area)
    if keep is not None:
        kept &= keep
    return clipped[kept], kept


def move_boxes(boxes, matrix, height, width, min_visibility):
    """Each box becomes the box enclosing its four transformed corners, clipped to the output
    (height x width) and dropped below `min_visibility`; returns (boxes, kept)."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    x0, y0, x1, y1 = boxes.T
    corners = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1), np.stack([x0, y1], 1)])
    moved = apply_matrix(matrix, corners.reshape(-1, 2)).reshape(4, len(boxes), 2)
    return clip_boxes(np.concatenate([moved.min(axis=0), moved.max(axis=0)], axis=1), height, width, min_visibility)


def move_keypoints(points, matrix):
    """Keypoints (pixel centres at integers) through a map written in pixel edges."""
    return apply_matrix(matrix, np.asarray(points, dtype=np.float64).reshape(-1, 2) + 0.5) - 0.5


def inside(points, height, width):
    """Which keypoints (pixel centres at integers) lie on the image: within [-0.5, W - 0.5)."""
    x, y = points[:, 0] + 0.5, points[:, 1] + 0.5
    return (x >= 0) & (x < width) & (y >= 0) & (y < height)


def warp_mask(mask, matrix, out_height, out_width, fill):
    """The mask resampled at each output pixel centre from the nearest input pixel (the input
    pixel the centre falls in); `fill` where it falls outside the input."""
    inverse = np.linalg.inv(matrix)
    if not (inverse[0, 1] or inverse[1, 0] or inverse[2, 0] or inverse[2, 1]):
        # Axis-aligned (flips, crops, resizes, pads, shifts): each output column reads one input
        # column and each row one row, so index the mask by the two, the same floats as below.
        cols = np.floor(apply_matrix(inverse, np.stack([np.arange(out_width) + 0.5, np.zeros(out_width)], 1))[:, 0])
        rows = np.floor(apply_matrix(inverse, np.stack([np.zeros(out_height), np.arange(out_height) + 0.5], 1))[:, 1])
        col_ok, row_ok = (cols >= 0) & (cols < mask.shape[1]), (rows >= 0) & (rows < mask.shape[0])
        out = np.full((out_height, out_width), fill, dtype=mask.dtype)
        out[np.ix_(row_ok, col_ok)] = mask[np.ix_(rows[row_ok].astype(np.int64), cols[col_ok].astype(np.int64))]
        return out
    ys, xs = np.mgrid[0:out_height, 0:out_width]
    source = apply_matrix(inverse, np.stack([xs.ravel() + 0.5, ys.ravel() + 0.5], axis=1))
    cols, rows = np.floor(source[:, 0]), np.floor(source[:, 1])
    ok = (cols >= 0) & (cols < mask.shape[1]) & (rows >= 0) & (rows < mask.shape[0])
    out = np.full(out_height * out_width, fill, dtype=mask.dtype)
    out[ok] = mask[rows[ok].astype(np.int64), cols[ok].astype(np.int64)]
    return out.reshape(out_height, out_width)


def is_tensor_mask(mask):
    """Whether a mask is a tensor (torch, on the images' device) rather than a numpy array."""
    return hasattr(mask, "device") and hasattr(mask, "gather")


def _copy(mask):
    return mask.clone() if is_tensor_mask(mask) else np.array(mask)


def _to_device(like, values):
    """A numpy array (float64, int64 or bool) as a tensor of its own dtype on `like`'s device."""
    values = np.asarray(values)
    # (only tensor methods here: a 0-d tensor of the wanted dtype on the device, then its new_tensor)
    cast = {"f": "double", "i": "long", "b": "bool"}[values.dtype.kind]
    return getattr(like.new_zeros(()), cast)().new_tensor(values)


def warp_masks_on_device(masks, matrices, out_height, out_width, fill):
    """Masks held as tensors (each H x W, one size, on one device) through their samples' maps,
    all at once: warp_mask's arithmetic, term for term in float64 on the device, so the result
    equals warp_mask's bit for bit (tests/test_targets.py checks it) without a trip to the host.
    Only tensor methods: this module needs no torch.

    Example:
        >>> import torch
        >>> flipped = warp_masks_on_device([torch.tensor([[1, 2, 3]])], [horizontal_flip({}, {}, 1, 3, 1, 3)], 1, 3, 0)
        >>> flipped[0].tolist()
        [[3, 2, 1]]
    """
    first = masks[0]
    count, (height, width) = len(masks), tuple(first.shape)
    stacked = first.new_empty((count, height, width))
    for n, mask in enumerate(masks):
        stacked[n].copy_(mask)
    inverse = np.stack([np.linalg.inv(m) for m in matrices])
    projective = (inverse[:, 2, 0] != 0) | (inverse[:, 2, 1] != 0)
    m = _to_device(first, inverse).reshape(count, 3, 3, 1, 1)
    xs = _to_device(first, np.arange(out_width, dtype=np.float64) + 0.5).reshape(1, 1, out_width)
    ys = _to_device(first, np.arange(out_height, dtype=np.float64) + 0.5).reshape(1, out_height, 1)
    sx = xs * m[:, 0, 0] + ys * m[:, 0, 1] + m[:, 0, 2]
    sy = xs * m[:, 1, 0] + ys * m[:, 1, 1] + m[:, 1, 2]
    if projective.any():
        scale = (xs * m[:, 2, 0] + ys * m[:, 2, 1] + m[:, 2, 2])
        # (apply_matrix divides only for projective maps: the others keep their coordinates as they are)
        keep = _to_device(first, ~projective).reshape(count, 1, 1)
        scale = scale.where(~keep, scale.new_ones(()))
        sx, sy = sx / scale, sy / scale
    cols, rows = sx.floor(), sy.floor()
    ok = (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    index = rows.clamp(0, height - 1).long() * width + cols.clamp(0, width - 1).long()
    out = stacked.reshape(count, -1).gather(1, index.reshape(count, -1)).reshape(count, out_height, out_width)
    return list(out.where(ok, out.new_full((), fill)).unbind(0))


def move_sample(sample, matrix, out_height, out_width, settings, pending=None):
    """One sample's targets (a dict: mask, boxes, labels, keypoints, visible) through a step's
    map. A mirroring map swaps the keypoints of settings["flip_pairs"] (left/right ids) within each
    instance of settings["keypoints_per_instance"] keypoints (0: the whole list is one). A mask on
    a device joins `pending` (see warp_pending), to be moved with the step's other samples."""
    if sample.get("mask") is not None:
        if not is_tensor_mask(sample["mask"]):
            sample["mask"] = warp_mask(sample["mask"], matrix, out_height, out_width, settings["mask_fill"])
        elif pending is not None:
            pending.append((sample, matrix, out_height, out_width))
        else:
            sample["mask"] = warp_masks_on_device([sample["mask"]], [matrix], out_height, out_width,
                                                  settings["mask_fill"])[0]
    if sample.get("boxes") is not None:
        sample["boxes"], kept = move_boxes(sample["boxes"], matrix, out_height, out_width, settings["min_visibility"])
        sample["labels"] = sample["labels"][kept]
    if sample.get("keypoints") is not None:
        points = move_keypoints(sample["keypoints"], matrix)
        visible = sample["visible"] & inside(points, out_height, out_width)
        if np.linalg.det(matrix[:2, :2]) < 0:
            block = settings.get("keypoints_per_instance", 0) or len(points)
            for start in range(0, len(points), max(block, 1)):
                for i, j in settings["flip_pairs"]:
                    i, j = start + i, start + j
                    if max(i, j) < min(start + block, len(points)):  # an image may have fewer keypoints
                        points[[i, j]] = points[[j, i]]
                        visible[[i, j]] = visible[[j, i]]
        sample["keypoints"], sample["visible"] = points, visible
    sample["size"] = (out_height, out_width)


def box_outlines(boxes, spacing=1.0):
    """Points along each box's four sides (pixel edges), at most `spacing` apart, corners included;
    returns (points, owner): owner[i] is the box point i belongs to. Through a displacement field
    the box's image is enclosed by its outline's image, which these points trace.

    Example:
        >>> points, owner = box_outlines(np.array([[0.0, 0.0, 2.0, 1.0]]))
        >>> len(points), int(owner.max())
        (10, 0)
    """
    points, owner = [], []
    for n, (x0, y0, x1, y1) in enumerate(np.asarray(boxes, dtype=np.float64).reshape(-1, 4)):
        xs = np.linspace(x0, x1, max(2, int(math.ceil((x1 - x0) / spacing)) + 1))
        ys = np.linspace(y0, y1, max(2, int(math.ceil((y1 - y0) / spacing)) + 1))
        outline = np.concatenate([np.stack([xs, np.full_like(xs, y0)], 1), np.stack([xs, np.full_like(xs, y1)], 1),
                                  np.stack([np.full_like(ys, x0), ys], 1), np.stack([np.full_like(ys, x1), ys], 1)])
        points.append(outline)
        owner.append(np.full(len(outline), n))
    if not points:
        return np.zeros((0, 2)), np.zeros(0, dtype=np.int64)
    return np.concatenate(points), np.concatenate(owner)


def move_sample_field(sample, field, settings):
    """One sample's targets through a displacement field's (to_source, to_target) (see
    grid_distortion): the mask read at each output pixel's source point (the input pixel it falls
    in), each box as the box enclosing its moved outline, keypoints as points. The size stays."""
    to_source, to_target = field
    height, width = sample["size"]
    if sample.get("mask") is not None:
        mask = sample["mask"]
        ys, xs = np.mgrid[0:height, 0:width]
        source = to_source(np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float64))
        cols, rows = np.floor(source[:, 0] + 0.5), np.floor(source[:, 1] + 0.5)
        ok = (cols >= 0) & (cols < mask.shape[1]) & (rows >= 0) & (rows < mask.shape[0])
        index = np.where(ok, rows * mask.shape[1] + cols, 0).astype(np.int64)
        if is_tensor_mask(mask):  # the field is rebuilt on the host; the pixels stay where they are
            read = mask.reshape(-1)[_to_device(mask, index)]
            out = read.where(_to_device(mask, ok), read.new_full((), settings["mask_fill"]))
        else:
            out = np.where(ok, mask.reshape(-1)[index], np.asarray(settings["mask_fill"], dtype=mask.dtype))
        sample["mask"] = out.reshape(height, width)
    if sample.get("boxes") is not None:
        points, owner = box_outlines(sample["boxes"])
        moved = to_target(points - 0.5) + 0.5
        count = len(sample["boxes"])
        low, high = np.full((count, 2), np.inf), np.full((count, 2), -np.inf)
        np.minimum.at(low, owner, moved)
        np.maximum.at(high, owner, moved)
        sample["boxes"], kept = clip_boxes(np.concatenate([low, high], axis=1), height, width,
                                           settings["min_visibility"])
        sample["labels"] = sample["labels"][kept]
    if sample.get("keypoints") is not None:
        points = to_target(sample["keypoints"])
        sample["keypoints"], sample["visible"] = points, sample["visible"] & inside(points, height, width)


def erase_sample(sample, rectangles, settings):
    """Write settings["mark_erased"] into the mask where an occlusion step erased pixels."""
    if sample.get("mask") is None or settings["mark_erased"] is None:
        return
    for x0, y0, x1, y1 in rectangles:
        sample["mask"][int(y0):int(y1), int(x0):int(x1)] = settings["mark_erased"]


def mix_samples(samples, rows, kind, settings):
    """The targets after a batch-mixing step: `kind` "mixup" or "cutmix", or "choice" (either, as the
    row's `choice` says: 0 MixUp, 1 CutMix), rows[n] the sample's draws (partner, weight, and CutMix's
    box [x0, y0, x1, y1)).

    MixUp shows both images at once: each sample keeps its boxes and gains its partner's (labels
    with them); its mask becomes the partner's where the partner's share is over one half (a label
    map cannot be blended); keypoints stay its own. CutMix pastes the partner's box: the mask takes
    the partner's labels inside it; the sample's boxes lose the pasted area (dropped below
    min_visibility, as a crop drops them), the partner's boxes are cut to the pasted box (the same
    rule); keypoints under the pasted box are flagged not visible.
    """
    before = [dict(s) for s in samples]
    for n, (sample, row) in enumerate(zip(samples, rows)):
        if not row.get("applied"):
            continue
        other = before[int(row["partner"])]
        if kind == "mixup" or (kind == "choice" and not row["choice"]):
            if sample.get("mask") is not None and float(row["weight"]) > 0.5:
                sample["mask"] = _copy(other["mask"])
            if sample.get("boxes") is not None:
                sample["boxes"] = np.concatenate([sample["boxes"], other["boxes"]])
                sample["labels"] = np.concatenate([sample["labels"], other["labels"]])
            continue
        x0, y0, x1, y1 = (float(v) for v in row["box"])
        if sample.get("mask") is not None:
            mask = _copy(sample["mask"])
            mask[int(y0):int(y1), int(x0):int(x1)] = other["mask"][int(y0):int(y1), int(x0):int(x1)]
            sample["mask"] = mask
        if sample.get("boxes") is not None:
            own = sample["boxes"]
            area = (own[:, 2] - own[:, 0]) * (own[:, 3] - own[:, 1])
            cover = (np.clip(np.minimum(own[:, 2], x1) - np.maximum(own[:, 0], x0), 0, None)
                     * np.clip(np.minimum(own[:, 3], y1) - np.maximum(own[:, 1], y0), 0, None))
            keep = (area - cover > 0) & (area - cover >= settings["min_visibility"] * area)
            pasted = other["boxes"].copy()
            pasted[:, 0::2] -= x0
            pasted[:, 1::2] -= y0
            pasted, kept = clip_boxes(pasted, y1 - y0, x1 - x0, settings["min_visibility"])
            pasted[:, 0::2] += x0
            pasted[:, 1::2] += y0
            sample["boxes"] = np.concatenate([own[keep], pasted])
            sample["labels"] = np.concatenate([sample["labels"][keep], other["labels"][kept]])
        if sample.get("keypoints") is not None:
            x, y = sample["keypoints"][:, 0] + 0.5, sample["keypoints"][:, 1] + 0.5
            sample["visible"] = sample["visible"] & ~((x >= x0) & (x < x1) & (y >= y0) & (y < y1))


def move_steps(plan, rows, samples, settings):
    """Move every sample's targets through the steps of `plan`, in order.

    `plan`: one entry per step of the chain: a dict with "enabled", and "geometry" (a map function
    above) with "size" (a kind of output_size) and "keep_centres" (drop the boxes whose centre falls
    outside the reported crop_box, as RandomIoUCrop), or "field" (a displacement field's function
    above), or "erase" (a function giving the
    erased rectangles), or "mix" ("mixup" / "cutmix" / "choice"), or "steps" (a group's children, run in
    their order where the sample's row says they applied), and "params". Entries with none of
    these leave targets alone (colour, blur, noise, weather, normalize). `rows[n]`: sample n's rows,
    one per step (RunResult.params[n]). `samples[n]`: its targets (see move_sample), changed in place.
    """
    for k, entry in enumerate(plan):
        if not entry["enabled"]:
            continue
        if entry.get("mix"):
            mix_samples(samples, [r[k] for r in rows], entry["mix"], settings)
            continue
        pending = []
        for sample, sample_rows in zip(samples, rows):
            move_step(entry, sample_rows[k], sample, settings, pending)
        warp_pending(pending, settings)


def warp_pending(pending, settings):
    """The device masks a step left pending (sample, map, out height, out width), moved together
    where they share their size before and after (warp_masks_on_device)."""
    groups = {}
    for item in pending:
        groups.setdefault((tuple(item[0]["mask"].shape), item[2], item[3]), []).append(item)
    for (_, out_height, out_width), items in groups.items():
        moved = warp_masks_on_device([s["mask"] for s, *_ in items], [m for _, m, *_ in items], out_height,
                                     out_width, settings["mask_fill"])
        for (sample, *_), mask in zip(items, moved):
            sample["mask"] = mask


def move_step(entry, row, sample, settings, pending=None):
    """One sample's targets through one step (see move_steps), given its row for that step; device
    masks join `pending` (a group's children move them at once: they run in turn)."""
    if not row.get("applied"):
        return
    if entry.get("steps") is not None:
        for child, child_row in zip(entry["steps"], row.get("steps", [])):
            if child["enabled"]:
                move_step(child, child_row, sample, settings)
    elif entry.get("geometry") is not None:
        height, width = sample["size"]
        out_height, out_width = output_size(entry["size"], entry["params"], row, height, width)
        matrix = entry["geometry"](entry["params"], row, height, width, out_height, out_width)
        if entry.get("keep_centres") and sample.get("boxes") is not None:
            # RandomIoUCrop: the boxes whose centre the window holds, cut to it (torchvision zeroes the
            # others for SanitizeBoundingBoxes to drop)
            held = centres_inside(sample["boxes"], [float(v) for v in row["crop_box"]])
            sample["boxes"], sample["labels"] = sample["boxes"][held], sample["labels"][held]
        if (out_height, out_width) != (height, width) or not np.array_equal(matrix, np.eye(3)):
            move_sample(sample, matrix, out_height, out_width, settings, pending)
    elif entry.get("field") is not None:
        height, width = sample["size"]
        move_sample_field(sample, entry["field"](entry["params"], row, height, width), settings)
    elif entry.get("erase") is not None:
        erase_sample(sample, entry["erase"](entry["params"], row), settings)


def with_resize(plan, rows, at, size):
    """`plan` and each sample's `rows` with a resize to `size` (height, width) before the `at`-th
    enabled step (at the end when there are fewer): the training loaders' resize= (--resize),
    which the chain does not hold.

    Example:
        >>> plan, rows = with_resize([{"enabled": True}], [[{"applied": True}]], 0, (8, 8))
        >>> plan[0]["params"], rows[0][0]
        ({'size': [8, 8]}, {'applied': True})
    """
    enabled = [k for k, entry in enumerate(plan) if entry["enabled"]]
    k = enabled[at] if at < len(enabled) else len(plan)
    entry = {"enabled": True, "params": {"size": [int(size[0]), int(size[1])]}, "size": "fixed", "geometry": resize,
             "field": None, "erase": None, "mix": None}
    return plan[:k] + [entry] + plan[k:], [list(r[:k]) + [{"applied": True}] + list(r[k:]) for r in rows]


def move_batch(plan, rows, sizes, given, settings):
    """The targets of a batch after the chain: `given` holds the lists of the kinds given, one
    entry per image ("masks", "boxes" with "box_labels", "keypoints" with "keypoints_visible"),
    `sizes` the images' (height, width) as they enter, `rows` each sample's step rows. Returns
    the same keys moved (boxes and keypoints as float32), and "sizes", where each image ended.
    The given arrays are not changed."""
    samples = []
    for n, size in enumerate(sizes):
        sample = {"size": tuple(size)}
        if given.get("masks") is not None:
            sample["mask"] = _copy(given["masks"][n])
        if given.get("boxes") is not None:
            sample["boxes"] = np.array(given["boxes"][n], dtype=np.float64).reshape(-1, 4)
            sample["labels"] = np.array(given["box_labels"][n]).reshape(-1)
        if given.get("keypoints") is not None:
            sample["keypoints"] = np.array(given["keypoints"][n], dtype=np.float64).reshape(-1, 2)
            sample["visible"] = np.array(given["keypoints_visible"][n], dtype=bool).reshape(-1)
        samples.append(sample)
    move_steps(plan, rows, samples, settings)
    out = {"sizes": [s["size"] for s in samples]}
    if given.get("masks") is not None:
        out["masks"] = [s["mask"] for s in samples]
    if given.get("boxes") is not None:
        out["boxes"] = [s["boxes"].astype(np.float32) for s in samples]
        out["box_labels"] = [s["labels"] for s in samples]
    if given.get("keypoints") is not None:
        out["keypoints"] = [s["keypoints"].astype(np.float32) for s in samples]
        out["keypoints_visible"] = [s["visible"] for s in samples]
    return out
