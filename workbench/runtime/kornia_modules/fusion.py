"""One pass for runs of steps: the Kornia export's fusion of consecutive geometric steps and of
consecutive pointwise colour steps.

A run of geometric steps (flips, crops, RandomResizedCrop, rotations, affine warps, translations,
shears, perspective, plain resizes, quarter turns) composes the steps' per-sample matrices, which
Kornia's modules compute in pixel space (pixel centres at integers, half-pixel sampling), and
resamples the image once with one `grid_sample`; a run of pointwise colour steps (ColorJitter and
its single-factor ops, Normalize, invert, solarize, posterize, gamma...) runs as one function over
the whole batch, which torch.compile turns into one kernel. Every step still draws its values with
its own `forward_parameters`, in chain order, so the draws, what the workbench reports of them and
the p gating are those of the step-by-step run; only the arithmetic that applies them changes.

One resampling instead of several is also sharper: each bilinear pass blurs a little. Where a
step brought pixels in from outside its input (a rotation after a crop), the step-by-step run
shows the zeros it padded with; the fused run checks every such intermediate frame and samples
0 outside it too (a hard edge where the step-by-step run blends over half a pixel).
"""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch


def fusion_geometry(module):
    """(resample, moves_in) for a geometric step that a fused resampling can carry, else None.

    `resample` is "bilinear" or "nearest", or None for an exact map of whole pixels (flips, crops,
    quarter turns), which joins a run of either mode; `moves_in`: the step can bring in points
    from outside its input (rotations, warps), so the frame before it must be checked.
    Example: fusion_geometry(K.RandomRotation(10.0, align_corners=False)) == ("bilinear", True).
    """
    name, flags = type(module).__name__, getattr(module, "flags", None) or {}
    if name in ("RandomHorizontalFlip", "RandomVerticalFlip", "WbRandomRotate90", "WbTranspose", "WbD4"):
        return None, False
    if name in ("CenterCrop", "RandomCrop") and flags.get("cropping_mode") == "slice" \
            and not flags.get("pad_if_needed") and flags.get("padding") is None:
        return None, False
    resample = str(getattr(flags.get("resample"), "name", flags.get("resample"))).lower()
    if resample not in ("bilinear", "nearest"):
        return None
    if name == "RandomResizedCrop" and flags["cropping_mode"] == "slice" and not flags["align_corners"]:
        return resample, False
    # An antialiased shrink filters before it samples: one resampling of the whole run cannot.
    if name == "WbResize" and not (flags["antialias"] and resample == "bilinear"):
        return resample, False
    if name in ("RandomRotation", "RandomAffine", "RandomTranslate", "RandomShear", "RandomPerspective") \
            and not flags.get("align_corners", True) \
            and str(getattr(flags.get("padding_mode", "zeros"), "name", "zeros")).lower() == "zeros":
        return resample, True
    return None


def fusion_colour(module):
    """Whether `module` is a pointwise colour step whose `apply_transform` treats every sample
    of a batch on its own (a per-sample mean at most), so that a run of them fuses."""
    name = type(module).__name__
    return name in ("ColorJitter", "Normalize", "RandomInvert", "RandomSolarize", "RandomPosterize",
                    "RandomGamma", "RandomChannelShuffle", "RandomBrightnessContrast", "RandomChannelShift",
                    "RandomHueSaturationValue")


def fusion_segments(steps):
    """The steps cut into runs, in order: ("geometry" or "colour", [modules]) for a run that
    fuses, (None, [module]) for a step that runs alone.

    A geometric run needs at least two resampling steps of one resample mode (with one, the exact
    steps around it stay exact, run as they are); a colour run at least two steps.
    Example: [flip, resize, rotate, ColorJitter, Normalize, GaussianBlur] ->
    [("geometry", [flip, resize, rotate]), ("colour", [ColorJitter, Normalize]),
     (None, [GaussianBlur])].
    """
    steps, segments, start = list(steps), [], 0
    while start < len(steps):
        end, mode = start + 1, None
        if fusion_geometry(steps[start]) is not None:
            mode = fusion_geometry(steps[start])[0]
            resamplings = int(mode is not None)
            while end < len(steps) and fusion_geometry(steps[end]) is not None:
                other = fusion_geometry(steps[end])[0]
                if mode is not None and other is not None and other != mode:
                    break
                mode = mode or other
                resamplings += int(other is not None)
                end += 1
            # With one resampling step, fusing saves nothing worth the exactness of the others:
            # flips, crops and quarter turns on their own move whole pixels bit for bit.
            kind = "geometry" if resamplings > 1 else None
        elif fusion_colour(steps[start]):
            while end < len(steps) and fusion_colour(steps[end]):
                end += 1
            kind = "colour" if end - start > 1 else None
        else:
            kind = None
        if kind is None:
            segments += [(None, [module]) for module in steps[start:end]]
        else:
            segments.append((kind, steps[start:end]))
        start = end
    return segments


def fusion_bounds(steps):
    """Where runs end (indices into `steps`, the last being len(steps)): the points at which a
    fused run of these steps can be paused and resumed with the same result."""
    bounds, end = [], 0
    for _, modules in fusion_segments(steps):
        end += len(modules)
        bounds.append(end)
    return bounds


def fused_output_size(module, size):
    """(height, width) after a fusable geometric step on images of `size`."""
    if type(module).__name__ in ("RandomResizedCrop", "CenterCrop", "RandomCrop", "WbResize"):
        return int(module.flags["size"][0]), int(module.flags["size"][1])
    return size


def fusion_frame(height, width):
    """The map from pixel indices (centres at integers) of a height x width frame to
    grid_sample's coordinates with align_corners=False: -1 and 1 at the frame's outer edges."""
    return torch.tensor([[2.0 / width, 0.0, 1.0 / width - 1.0], [0.0, 2.0 / height, 1.0 / height - 1.0],
                         [0.0, 0.0, 1.0]], dtype=torch.float64)


def fused_geometry_plan(steps, shape):
    """Draw each step's values in chain order and compose their matrices, for a batch of `shape`
    (N, C, H, W). Returns (draws per step, output (height, width), theta, frames, boxes, clamps, mode, affine): theta
    maps the output's grid coordinates to the input's (float64, on the CPU, N x 3 x 3). Each
    intermediate frame that a later step could move points in from is either a box of the
    input's grid coordinates (`boxes`: N x K x 4, x from, x to, y from, y to; None without any)
    or, after a rotation, a map like theta in `frames`. `clamps` (N x K x 4 like boxes, or None):
    the boxes between the edge pixels' centres of each resize's window, where the grid is clamped
    as F.interpolate clamps. affine: whether no step was a perspective."""
    count, channels, size = int(shape[0]), int(shape[1]), (int(shape[-2]), int(shape[-1]))
    identity = torch.eye(3, dtype=torch.float64)
    draws, matrices, sizes, checks, resizes, mode = [], [], [size], [], [], None
    for position, module in enumerate(steps):
        resample, moves_in = fusion_geometry(module)
        mode = mode or resample
        batch_shape = torch.Size((count, channels, *size))
        drawn = module.forward_parameters(batch_shape)
        # compute_transformation only reads the input's shape, device and dtype: a stand-in
        # that allocates nothing.
        stand_in = torch.zeros(1, dtype=torch.float64).expand(batch_shape)
        matrix = module.compute_transformation(stand_in, drawn, module.flags).to(torch.float64).expand(count, 3, 3)
        applied = drawn["batch_prob"].to(torch.bool).reshape(-1, 1, 1) if "batch_prob" in drawn else True
        matrices.append(torch.where(applied, matrix, identity))
        if moves_in and position > 0:
            checks.append(position)  # the frame this step reads from (the output of the step before)
        if type(module).__name__ in ("RandomResizedCrop", "WbResize"):
            resizes.append((position, fusion_window(module, drawn, size, count)))
        size = fused_output_size(module, size)
        sizes.append(size)
        draws.append(drawn)
    # Inverse maps from the output back to the frame before step k, for every k: suffix products.
    back = [None] * (len(steps) + 1)
    back[len(steps)] = identity.expand(count, 3, 3)
    # Maps from the input to the frame before step k, composed forwards (exact zeros stay zeros).
    ahead = [identity.expand(count, 3, 3)]
    for matrix in matrices:
        ahead.append(matrix @ ahead[-1])
    for k in range(len(steps) - 1, -1, -1):
        back[k] = torch.linalg.inv(matrices[k]) @ back[k + 1]
    to_output = torch.linalg.inv(fusion_frame(*size))
    theta = fusion_frame(*sizes[0]) @ back[0] @ to_output
    frames, boxes = [], []
    for k in checks:
        # Frame k seen from the input: when the steps before it only crop, scale and flip, it is
        # a box there, checked on the sampling grid itself (no second grid).
        before = ahead[k]
        from_frame = fusion_frame(*sizes[0]) @ torch.linalg.inv(before) @ torch.linalg.inv(fusion_frame(*sizes[k]))
        if bool((from_frame[:, 0, 1] == 0).all() and (from_frame[:, 1, 0] == 0).all()) \
                and fusion_is_affine(from_frame):
            xs = from_frame[:, 0, 2, None] + from_frame[:, 0, 0, None] * torch.tensor([-1.0, 1.0], dtype=torch.float64)
            ys = from_frame[:, 1, 2, None] + from_frame[:, 1, 1, None] * torch.tensor([-1.0, 1.0], dtype=torch.float64)
            boxes.append(torch.cat([xs.sort(-1).values, ys.sort(-1).values], -1))
        else:
            frames.append(fusion_frame(*sizes[k]) @ back[k] @ to_output)
    boxes = torch.stack(boxes, 1) if boxes else None
    # A resize samples only between the centres of its window's edge pixels (F.interpolate repeats
    # the edge pixels beyond them): clamp the grid there, where the window is a box of the input.
    clamps = []
    for k, window in resizes:
        before = ahead[k]
        to_input = fusion_frame(*sizes[0]) @ torch.linalg.inv(before)
        if bool((to_input[:, 0, 1] == 0).all() and (to_input[:, 1, 0] == 0).all()) and fusion_is_affine(to_input):
            xs = to_input[:, 0, 2, None] + to_input[:, 0, 0, None] * window[:, :2]
            ys = to_input[:, 1, 2, None] + to_input[:, 1, 1, None] * window[:, 2:]
            clamps.append(torch.cat([xs.sort(-1).values, ys.sort(-1).values], -1))
    clamps = torch.stack(clamps, 1) if clamps else None
    return draws, size, theta, frames, boxes, clamps, mode, fusion_is_affine(theta)


def fusion_window(module, drawn, size, count):
    """The centres of the first and last pixels a resizing step reads, in its input's pixel
    indices (N x 4: x first, x last, y first, y last): its crop window, or the whole image."""
    if type(module).__name__ == "RandomResizedCrop":
        src = drawn["src"].to(torch.float64)
        return torch.stack([src[:, 0, 0], src[:, 1, 0], src[:, 0, 1], src[:, 2, 1]], -1)
    return torch.tensor([[0.0, size[1] - 1.0, 0.0, size[0] - 1.0]], dtype=torch.float64).expand(count, 4)


def fusion_is_affine(theta):
    """Whether every map of `theta` (N x 3 x 3) is affine (its last row 0, 0, 1): then its grid
    needs no division."""
    return bool((theta[:, 2, :2] == 0).all()) and bool((theta[:, 2, 2] == 1).all())


def fusion_grid(theta, size, affine):
    """grid_sample's sampling coordinates (x and y, N x H x W each) for the output `size` under
    the maps `theta` (N x 3 x 3, output grid coordinates to input ones; `affine`: all of them
    affine); points behind a perspective's horizon get coordinates outside [-1, 1], where the
    sampling gives 0. Affine maps are one broadcast sum per coordinate (affine_grid multiplies a
    full grid of ones: several times slower on a CPU)."""
    ys = (2.0 * torch.arange(size[0], device=theta.device, dtype=theta.dtype) + 1.0) / size[0] - 1.0
    xs = (2.0 * torch.arange(size[1], device=theta.device, dtype=theta.dtype) + 1.0) / size[1] - 1.0
    ys, xs = ys[None, :, None], xs[None, None, :]
    row = [[theta[:, i, j, None, None] for j in range(3)] for i in range(3)]
    gx = row[0][0] * xs + (row[0][1] * ys + row[0][2])
    gy = row[1][0] * xs + (row[1][1] * ys + row[1][2])
    if affine:
        return gx, gy
    depth = row[2][0] * xs + (row[2][1] * ys + row[2][2])
    behind = depth <= 0
    return (torch.where(behind, torch.full_like(gx, 2.0), gx / depth),
            torch.where(behind, torch.full_like(gy, 2.0), gy / depth))


def fused_resample(batch, theta, frames, boxes, clamps, size, mode, affine):
    """One resampling of `batch` (float N x C x H x W) by `theta`, 0 outside the input and outside
    every frame of `frames` and `boxes`, clamped into `clamps` (see fused_geometry_plan): the
    tensor work of a fused geometric run (compiled with --compile).

    A point is pushed out (to 2, where grid_sample gives 0) by either coordinate alone, so each
    box is two independent range checks, one per coordinate plane."""
    gx, gy = fusion_grid(theta, size, affine)
    out_x = out_y = None
    if boxes is not None:
        for k in range(boxes.shape[1]):
            box = boxes[:, k, :, None, None]
            bad_x, bad_y = (gx < box[:, 0]) | (gx > box[:, 1]), (gy < box[:, 2]) | (gy > box[:, 3])
            out_x = bad_x if out_x is None else out_x | bad_x
            out_y = bad_y if out_y is None else out_y | bad_y
    for frame in frames:
        fx, fy = fusion_grid(frame, size, affine)
        bad = (fx.abs() > 1.0) | (fy.abs() > 1.0)
        out_x = bad if out_x is None else out_x | bad
    if clamps is not None:
        for k in range(clamps.shape[1]):
            box = clamps[:, k, :, None, None]
            gx, gy = torch.clamp(gx, box[:, 0], box[:, 1]), torch.clamp(gy, box[:, 2], box[:, 3])
    if out_x is not None:
        gx = torch.where(out_x, torch.full_like(gx, 2.0), gx)
    if out_y is not None:
        gy = torch.where(out_y, torch.full_like(gy, 2.0), gy)
    grid = torch.stack([gx, gy], -1)
    return torch.nn.functional.grid_sample(batch, grid, mode=mode, padding_mode="zeros", align_corners=False)


def fusion_gate(drawn):
    """Which samples a step applies to, as an N x 1 x 1 x 1 bool tensor on the CPU, or None when
    it applies to all of them (decided on the CPU draws: no wait for the GPU)."""
    applied = drawn.get("batch_prob")
    if applied is None or bool(applied.to(torch.bool).all()):
        return None
    return applied.to(torch.bool).reshape(-1, 1, 1, 1)


def fusion_jitter_branches(module, drawn):
    """For a ColorJitter in its fixed order (brightness, contrast, saturation, hue): the branches
    whose factor moves some sample of the batch (0 to 3), decided on the CPU draws; None for any
    other step. Kornia's ColorJitter computes all four (hue's colour-space round trip too) and
    keeps the moved ones with torch.where: running only those gives the same values."""
    if type(module).__name__ != "ColorJitter" or tuple(getattr(module, "_fixed_order", None) or ()) != (0, 1, 2, 3):
        return None
    keys, neutral = ("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor"), (1.0, 1.0, 1.0, 0.0)
    return tuple(k for k in range(4) if bool((drawn[keys[k]] != neutral[k]).any()))


def fused_colour(batch, steps, draws, gates, branches):
    """A run of pointwise colour steps over the whole batch: each step's values `draws`, its gate
    (see fusion_gate) on the batch's device and its ColorJitter branches (fusion_jitter_branches);
    samples a step's p left out keep their values. Eager, one call; compiled, one kernel (and one
    more per per-sample mean)."""
    for module, drawn, gate, moved in zip(steps, draws, gates, branches):
        if moved is None:
            out = module.apply_transform(batch, drawn, module.flags)
        else:
            functions = (module._brightness_fn, module._contrast_fn, module._saturation_fn, module._adjust_hue_turns)
            keys = ("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor")
            out = batch.clamp(0.0, 1.0)
            for k in moved:
                out = functions[k](out, drawn[keys[k]])
            out = out.clamp(0.0, 1.0)
        batch = out if gate is None else torch.where(gate, out, batch)
    return batch
