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
    """Points (K x 2) through a 3 x 3 map (projective division included)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    out = points @ matrix[:2, :2].T + matrix[:2, 2]
    if matrix[2, 0] or matrix[2, 1]:
        out = out / (points @ matrix[2, :2] + matrix[2, 2])[:, None]
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


def output_size(kind, params, row, height, width):
    """A step's output size (height, width): "same" as its input, "fixed" at params["size"],
    "padding" grown by the reported padding [left, right, top, bottom], "scale" resized by the
    reported scale (each side round(side * scale), half to even, at least 1, as A.LongestMaxSize)."""
    if kind == "fixed":
        return int(params["size"][0]), int(params["size"][1])
    if kind == "padding":
        left, right, top, bottom = (int(round(float(v))) for v in row["padding"])
        return height + top + bottom, width + left + right
    if kind == "scale":
        scale = float(row["scale"])
        return max(1, round(height * scale)), max(1, round(width * scale))
    return height, width


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


def move_sample(sample, matrix, out_height, out_width, settings):
    """One sample's targets (a dict: mask, boxes, labels, keypoints, visible) through a step's
    map. A mirroring map swaps the keypoints of settings["flip_pairs"] (left/right ids) within each
    instance of settings["keypoints_per_instance"] keypoints (0: the whole list is one)."""
    if sample.get("mask") is not None:
        sample["mask"] = warp_mask(sample["mask"], matrix, out_height, out_width, settings["mask_fill"])
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


def erase_sample(sample, rectangles, settings):
    """Write settings["mark_erased"] into the mask where an occlusion step erased pixels."""
    if sample.get("mask") is None or settings["mark_erased"] is None:
        return
    for x0, y0, x1, y1 in rectangles:
        sample["mask"][int(y0):int(y1), int(x0):int(x1)] = settings["mark_erased"]


def mix_samples(samples, rows, kind, settings):
    """The targets after a batch-mixing step: `kind` "mixup" or "cutmix", rows[n] the sample's
    draws (partner, weight, and CutMix's box [x0, y0, x1, y1)).

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
        if kind == "mixup":
            if sample.get("mask") is not None and float(row["weight"]) > 0.5:
                sample["mask"] = other["mask"].copy()
            if sample.get("boxes") is not None:
                sample["boxes"] = np.concatenate([sample["boxes"], other["boxes"]])
                sample["labels"] = np.concatenate([sample["labels"], other["labels"]])
            continue
        x0, y0, x1, y1 = (float(v) for v in row["box"])
        if sample.get("mask") is not None:
            mask = sample["mask"].copy()
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
    above) with "size" (a kind of output_size), or "erase" (a function giving the
    erased rectangles), or "mix" ("mixup" / "cutmix"), or "steps" (a group's children, run in
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
        for sample, sample_rows in zip(samples, rows):
            move_step(entry, sample_rows[k], sample, settings)


def move_step(entry, row, sample, settings):
    """One sample's targets through one step (see move_steps), given its row for that step."""
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
        move_sample(sample, matrix, out_height, out_width, settings)
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
             "erase": None, "mix": None}
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
            sample["mask"] = np.array(given["masks"][n])
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
