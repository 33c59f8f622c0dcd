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
import numpy as np
import torch

from .color import IN_PLACE_ADJUSTMENTS, gamma_in_place, jitter_functions, per_sample
from .draws import step_draws


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


# Colour steps that run as a colour run even alone (see fusion_segments).
LONE_COLOUR_RUNS = ("ColorJitter", "Normalize", "RandomGamma", "RandomInvert", "RandomSolarize", "RandomPosterize")


def fusion_segments(steps):
    """The steps cut into runs, in order: ("geometry" or "colour", [modules]) for a run that
    fuses, (None, [module]) for a step that runs alone.

    A geometric run needs two steps and one resample mode, and either two resampling steps or
    a warp (a rotation, affine, shear, translation or perspective); a resize alone among exact
    steps leaves them exact, run as they are. A colour run needs at least two steps, or one of
    LONE_COLOUR_RUNS: a ColorJitter (whose hue a colour run moves in a third of Kornia's time:
    hue_turns), a Normalize (in place), or a step a CPU's levels look up.
    Example: [flip, resize, rotate, ColorJitter, Normalize, GaussianBlur] ->
    [("geometry", [flip, resize, rotate]), ("colour", [ColorJitter, Normalize]),
     (None, [GaussianBlur])].
    """
    steps, segments, start = list(steps), [], 0
    while start < len(steps):
        end, mode = start + 1, None
        if fusion_geometry(steps[start]) is not None:
            mode, warps = fusion_geometry(steps[start])
            resamplings = int(mode is not None)
            while end < len(steps) and fusion_geometry(steps[end]) is not None:
                other, moves_in = fusion_geometry(steps[end])
                if mode is not None and other is not None and other != mode:
                    break
                mode = mode or other
                resamplings += int(other is not None)
                warps = warps or moves_in
                end += 1
            # One resize among exact steps stays unfused: its flips, crops and quarter turns then
            # copy the resized pixels bit for bit. A warp's pixels are never copies, so exact
            # steps composed into it change only float rounding.
            kind = "geometry" if resamplings > 1 or (resamplings == 1 and warps and end - start > 1) else None
        elif fusion_colour(steps[start]):
            while end < len(steps) and fusion_colour(steps[end]):
                end += 1
            # A lone ColorJitter runs as a colour run too: its hue then moves by hue_turns; so does
            # a lone Normalize, which a run computes in place, a chunk at a time, and a lone step that a
            # CPU's uint8 levels look up (levels.py's LOOKUP_STEPS).
            kind = "colour" if end - start > 1 or type(steps[start]).__name__ in LONE_COLOUR_RUNS else None
        else:
            kind = None
        if kind is None:
            segments += [(None, [module]) for module in steps[start:end]]
        else:
            segments.append((kind, steps[start:end]))
        start = end
    return segments


def fused_output_size(module, size):
    """(height, width) after a fusable geometric step on images of `size`."""
    if type(module).__name__ in ("RandomResizedCrop", "CenterCrop", "RandomCrop", "WbResize"):
        return int(module.flags["size"][0]), int(module.flags["size"][1])
    return size


def fusion_chunk(shape, device, chunk_bytes=12 << 20):
    """How many samples of a batch of `shape` (N, C, H, W) a stretch of fused runs takes at a time
    on `device`: the whole batch on a GPU, chunks of about `chunk_bytes` of float32 on a CPU.
    Example: fusion_chunk((64, 3, 256, 256), torch.device("cpu")) == 16."""
    # On a CPU a chunk's intermediates stay in the caches and in memory the allocator reuses,
    # where a whole batch's (tens of MB each) would be fresh pages, faulted in for every pass.
    # Each chunk costs each step's Python once more: 12 MB beat 4 and 24 on 2 cores over four of
    # the sweep's chains at batch 32 and 128, 128^2 and 512^2 (bench/cpu_sweep.py).
    if device.type != "cpu":
        return int(shape[0])
    per_sample = 4 * int(shape[1]) * int(shape[-2]) * int(shape[-1])
    return max(1, min(int(shape[0]), chunk_bytes // per_sample))


def fusion_slice(value, rows, count, key=None):
    """`value` (a step's or a fused run's arguments: tensors, lists, tuples and dicts of draws,
    anything else kept) cut to the samples `rows` (a slice, or a tensor of indices) of a batch of
    `count`: every tensor whose first dimension is the batch's, except Kornia's draws that describe
    the whole batch (its order of colour steps, its input's shape).
    Example: fusion_slice({"batch_prob": torch.ones(8)}, slice(2, 4), 8)["batch_prob"].shape == (2,)."""
    if torch.is_tensor(value):
        per_sample = value.dim() > 0 and value.shape[0] == count and key not in ("order", "forward_input_shape")
        if not per_sample:
            return value
        return value[rows] if isinstance(rows, slice) else value.index_select(0, rows.to(value.device))
    if isinstance(value, dict):
        return {name: fusion_slice(item, rows, count, name) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(fusion_slice(item, rows, count) for item in value)
    return value


def fusion_frame(height, width):
    """The map from pixel indices (centres at integers) of a height x width frame to
    grid_sample's coordinates with align_corners=False: -1 and 1 at the frame's outer edges (float64 numpy)."""
    return np.array([[2.0 / width, 0.0, 1.0 / width - 1.0], [0.0, 2.0 / height, 1.0 / height - 1.0],
                     [0.0, 0.0, 1.0]])


def fused_geometry_plan(steps, shape):
    """Draw each step's values in chain order and compose their matrices, for a batch of `shape`
    (N, C, H, W). Returns (draws per step, output (height, width), theta, frames, boxes, clamps, mode, affine): theta
    maps the output's grid coordinates to the input's (float64, on the CPU, N x 3 x 3). Each
    intermediate frame that a later step could move points in from is either a box of the
    input's grid coordinates (`boxes`: N x K x 4, x from, x to, y from, y to; None without any)
    or, after a rotation, a map like theta in `frames`. `clamps` (N x K x 4 like boxes, or None):
    the boxes between the edge pixels' centres of each resize's window, where the grid is clamped
    as F.interpolate clamps. affine: whether no step was a perspective. (The 3 x 3 algebra runs in
    numpy: as a hundred small tensor operations it took two thirds of the plan, a fifth of an 8-image
    run, profiled.)"""
    count, channels, size = int(shape[0]), int(shape[1]), (int(shape[-2]), int(shape[-1]))
    identity = np.eye(3)
    draws, matrices, sizes, checks, resizes, mode = [], [], [size], [], [], None
    for position, module in enumerate(steps):
        resample, moves_in = fusion_geometry(module)
        mode = mode or resample
        batch_shape = torch.Size((count, channels, *size))
        drawn = step_draws(module, batch_shape)
        # compute_transformation only reads the input's shape, device and dtype: a stand-in
        # that allocates nothing.
        stand_in = torch.zeros(1, dtype=torch.float64).expand(batch_shape)
        matrix = module.compute_transformation(stand_in, drawn, module.flags).to(torch.float64).cpu().numpy()
        applied = drawn["batch_prob"].cpu().numpy().astype(bool).reshape(-1, 1, 1) if "batch_prob" in drawn else True
        matrices.append(np.where(applied, np.broadcast_to(matrix, (count, 3, 3)), identity))
        if moves_in and position > 0:
            checks.append(position)  # the frame this step reads from (the output of the step before)
        if type(module).__name__ in ("RandomResizedCrop", "WbResize"):
            resizes.append((position, fusion_window(module, drawn, size, count).numpy()))
        size = fused_output_size(module, size)
        sizes.append(size)
        draws.append(drawn)
    # Inverse maps from the output back to the frame before step k, for every k: suffix products.
    back = [None] * (len(steps) + 1)
    back[len(steps)] = np.broadcast_to(identity, (count, 3, 3))
    # Maps from the input to the frame before step k, composed forwards (exact zeros stay zeros).
    ahead = [np.broadcast_to(identity, (count, 3, 3))]
    for matrix in matrices:
        ahead.append(matrix @ ahead[-1])
    for k in range(len(steps) - 1, -1, -1):
        back[k] = np.linalg.inv(matrices[k]) @ back[k + 1]
    to_output = np.linalg.inv(fusion_frame(*size))
    theta = fusion_frame(*sizes[0]) @ back[0] @ to_output
    frames, boxes = [], []
    for k in checks:
        # Frame k seen from the input: when the steps before it only crop, scale and flip, it is
        # a box there, checked on the sampling grid itself (no second grid).
        from_frame = fusion_frame(*sizes[0]) @ np.linalg.inv(ahead[k]) @ np.linalg.inv(fusion_frame(*sizes[k]))
        if (from_frame[:, 0, 1] == 0).all() and (from_frame[:, 1, 0] == 0).all() and fusion_is_affine(from_frame):
            xs = from_frame[:, 0, 2, None] + from_frame[:, 0, 0, None] * np.array([-1.0, 1.0])
            ys = from_frame[:, 1, 2, None] + from_frame[:, 1, 1, None] * np.array([-1.0, 1.0])
            boxes.append(np.concatenate([np.sort(xs, -1), np.sort(ys, -1)], -1))
        else:
            frames.append(torch.from_numpy(fusion_frame(*sizes[k]) @ back[k] @ to_output))
    boxes = torch.from_numpy(np.stack(boxes, 1)) if boxes else None
    # A resize samples only between the centres of its window's edge pixels (F.interpolate repeats
    # the edge pixels beyond them): clamp the grid there, where the window is a box of the input.
    clamps = []
    for k, window in resizes:
        to_input = fusion_frame(*sizes[0]) @ np.linalg.inv(ahead[k])
        if (to_input[:, 0, 1] == 0).all() and (to_input[:, 1, 0] == 0).all() and fusion_is_affine(to_input):
            xs = to_input[:, 0, 2, None] + to_input[:, 0, 0, None] * window[:, :2]
            ys = to_input[:, 1, 2, None] + to_input[:, 1, 1, None] * window[:, 2:]
            clamps.append(np.concatenate([np.sort(xs, -1), np.sort(ys, -1)], -1))
    clamps = torch.from_numpy(np.stack(clamps, 1)) if clamps else None
    theta, affine = torch.from_numpy(np.ascontiguousarray(theta)), fusion_is_affine(theta)
    return draws, size, theta, frames, boxes, clamps, mode, affine


def fusion_window(module, drawn, size, count):
    """The centres of the first and last pixels a resizing step reads, in its input's pixel
    indices (N x 4: x first, x last, y first, y last): its crop window, or the whole image."""
    if type(module).__name__ == "RandomResizedCrop":
        src = drawn["src"].to(torch.float64)
        return torch.stack([src[:, 0, 0], src[:, 1, 0], src[:, 0, 1], src[:, 2, 1]], -1)
    return torch.tensor([[0.0, size[1] - 1.0, 0.0, size[0] - 1.0]], dtype=torch.float64).expand(count, 4)


def fusion_is_affine(theta):
    """Whether every map of `theta` (float64 numpy N x 3 x 3) is affine (its last row 0, 0, 1): then its grid
    needs no division."""
    return bool((theta[:, 2, :2] == 0).all() and (theta[:, 2, 2] == 1).all())


def fusion_grid(theta, size, affine):
    """grid_sample's sampling grid (N x H x W x 2, x then y) for the output `size` under the maps
    `theta` (N x 3 x 3, output grid coordinates to input ones; `affine`: all of them affine);
    points behind a perspective's horizon get coordinates outside [-1, 1], where the sampling
    gives 0. Each coordinate is one broadcast sum written into the grid itself (affine_grid
    multiplies a full grid of ones, and stacking two planes copies them: both several times
    slower on a CPU)."""
    ys = (2.0 * torch.arange(size[0], device=theta.device, dtype=theta.dtype) + 1.0) / size[0] - 1.0
    xs = (2.0 * torch.arange(size[1], device=theta.device, dtype=theta.dtype) + 1.0) / size[1] - 1.0
    ys, xs = ys[None, :, None], xs[None, None, :]
    row = [[theta[:, i, j, None, None] for j in range(3)] for i in range(3)]
    if torch.compiler.is_compiling():
        # The same sums stacked: Dynamo cannot trace out= into a strided view (a graph break seen on an
        # H100), and the compiler writes the stack in place anyway.
        grid = torch.stack((row[0][0] * xs + (row[0][1] * ys + row[0][2]),
                            row[1][0] * xs + (row[1][1] * ys + row[1][2])), dim=-1)
    else:
        grid = torch.empty((theta.shape[0], size[0], size[1], 2), device=theta.device, dtype=theta.dtype)
        torch.add(row[0][0] * xs, row[0][1] * ys + row[0][2], out=grid[..., 0])
        torch.add(row[1][0] * xs, row[1][1] * ys + row[1][2], out=grid[..., 1])
    if affine:
        return grid
    depth = (row[2][0] * xs + (row[2][1] * ys + row[2][2]))[..., None]
    return grid.div_(depth).masked_fill_(depth <= 0, 2.0)


def fused_resample(batch, theta, frames, boxes, clamps, size, mode, affine):
    """One resampling of `batch` (float N x C x H x W) by `theta`, 0 outside the input and outside
    every frame of `frames` and `boxes`, clamped into `clamps` (see fused_geometry_plan): the
    tensor work of a fused geometric run (compiled with --compile).

    Points outside a frame get x = 2 (where grid_sample gives 0); the grid is checked, clamped
    and moved in place."""
    grid = fusion_grid(theta, size, affine)
    gx, gy = grid[..., 0], grid[..., 1]
    outside = None
    if boxes is not None:
        for k in range(boxes.shape[1]):
            box = boxes[:, k, :, None, None]
            bad = (gx < box[:, 0]) | (gx > box[:, 1]) | (gy < box[:, 2]) | (gy > box[:, 3])
            outside = bad if outside is None else outside.logical_or_(bad)
    for frame in frames:
        bad = (fusion_grid(frame, size, affine).abs() > 1.0).any(-1)
        outside = bad if outside is None else outside.logical_or_(bad)
    if clamps is not None:
        for k in range(clamps.shape[1]):
            box = clamps[:, k, :, None, None]
            gx.clamp_(box[:, 0], box[:, 1])
            gy.clamp_(box[:, 2], box[:, 3])
    if outside is not None:
        gx.masked_fill_(outside, 2.0)  # one coordinate out of range is enough for a 0
    return torch.nn.functional.grid_sample(batch, grid, mode=mode, padding_mode="zeros", align_corners=False)


def fusion_gate(drawn):
    """Which samples a step applies to, as an N x 1 x 1 x 1 bool tensor on the CPU, or None when
    it applies to all of them (decided on the CPU draws: no wait for the GPU)."""
    applied = drawn.get("batch_prob")
    if applied is None or bool(applied.to(torch.bool).all()):
        return None
    return applied.to(torch.bool).reshape(-1, 1, 1, 1)


def fusion_jitter_branches(module, drawn):
    """For a ColorJitter: the branches (0 brightness, 1 contrast, 2 saturation, 3 hue) whose factor
    moves some sample of the batch, in the order they apply (its fixed order, else the order it
    drew), decided on the CPU draws; None for any other step. Kornia's ColorJitter computes every
    branch of a fixed order (hue's colour-space round trip too) and keeps the moved ones with
    torch.where, and skips the unmoved ones of a drawn order: running only the moved ones gives
    the same values either way."""
    if type(module).__name__ != "ColorJitter":
        return None
    order = getattr(module, "_fixed_order", None)
    order = tuple(order) if order is not None else tuple(int(k) for k in drawn["order"].tolist())
    keys, neutral = ("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor"), (1.0, 1.0, 1.0, 0.0)
    return tuple(k for k in order if bool((drawn[keys[k]] != neutral[k]).any()))


def fused_colour(batch, steps, draws, gates, branches, owned=False):
    """A run of pointwise colour steps over the whole batch: each step's values `draws`, its gate
    (see fusion_gate) on the batch's device and its ColorJitter branches (fusion_jitter_branches);
    samples a step's p left out keep their values. Eager, one call; compiled, one kernel (and one
    more per per-sample mean).

    `owned`: `batch` is the run's own buffer, not the caller's. Steps that apply to every sample
    then write into the buffer they get (brightness, gamma and Normalize here, with Kornia's
    arithmetic; clamps), where Kornia's functions would allocate a new batch for each operation."""
    keys = ("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor")
    for module, drawn, gate, moved in zip(steps, draws, gates, branches):
        in_place = owned and gate is None
        if moved is not None:
            functions = jitter_functions(module)
            out = batch.clamp_(0.0, 1.0) if in_place else batch.clamp(0.0, 1.0)
            for k in moved:  # (out is this run's: clamped above, into a new batch or its own)
                if k == 0 and functions[0] is kornia.enhance.adjust_brightness_accumulative:
                    out = out.mul_(per_sample(drawn[keys[0]], out)).clamp_(0.0, 1.0)
                elif functions[k] in IN_PLACE_ADJUSTMENTS and out.shape[-3] == 3:
                    out = IN_PLACE_ADJUSTMENTS[functions[k]](out, drawn[keys[k]])
                else:
                    out = functions[k](out, drawn[keys[k]])
            out = out.clamp_(0.0, 1.0)
        elif in_place and type(module).__name__ == "RandomGamma":
            out = gamma_in_place(batch, drawn["gamma_factor"], drawn["gain_factor"])
        elif type(module).__name__ == "Normalize" and fusion_channel_stats(module.flags, batch) is not None:
            mean, std = fusion_channel_stats(module.flags, batch)
            out = (batch.sub_(mean) if in_place else batch.sub(mean)).div_(std)
        else:
            out = module.apply_transform(batch, drawn, module.flags)
        result = out if gate is None else gated(gate, out, batch)
        owned = owned or result is not batch
        batch = result
    return batch


def gated(gate, out, batch):
    """torch.where(gate, out, batch) for a gate of one value per sample (N x 1 x 1 x 1). On the
    CPU the samples left out are copied back into `out` (a new tensor) instead: the same values,
    where torch.where took ten times an elementwise multiply there.
    Example: gated(torch.tensor([True, False]).view(2, 1, 1, 1), torch.ones(2, 1, 1, 1),
    torch.zeros(2, 1, 1, 1)).flatten().tolist() == [1.0, 0.0]."""
    # (A GPU's where is fast, and nonzero would wait for it; an `out` that shares memory with the
    # batch must not be written into; compiled, where fuses into the run's one kernel, and nonzero
    # and the storage's address would break the graph and recompile it for every new buffer.)
    if out.device.type != "cpu" or torch.compiler.is_compiling() or shares_memory(out, batch):
        return torch.where(gate, out, batch)
    kept = (~gate.flatten()).nonzero().flatten()
    return copy_rows(out, kept, batch.index_select(0, kept))


def copy_rows(out, rows, part):
    """out.index_copy_(0, rows, part) on a CPU: the samples `part` written into `out` at `rows` (an index
    tensor), one sample's copy_ at a time: 1.1 times as fast as index_copy_ there for floats, 5 times for uint8
    (torch 2.13, 2 cores: bench/cpu_kernels.py). Returns `out`.
    Example: copy_rows(torch.zeros(3, 1), torch.tensor([2]), torch.ones(1, 1)).flatten().tolist() == [0.0, 0.0, 1.0]."""
    if out.device.type != "cpu":
        return out.index_copy_(0, rows, part)
    for k, row in enumerate(rows.tolist()):
        out[row].copy_(part[k])
    return out


def shares_memory(a, b):
    """Whether tensors `a` and `b` lie in one storage (one is the other, or a view of it): then
    neither may be written into for the other's sake."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def fusion_channel_stats(flags, batch):
    """Normalize's mean and std as 1 x C x 1 x 1 tensors for `batch`, or None where they are not
    one value per channel (or one for all)."""
    mean, std = flags["mean"], flags["std"]
    if not (torch.is_tensor(mean) and torch.is_tensor(std)) or mean.numel() not in (1, batch.shape[1]) \
            or std.numel() not in (1, batch.shape[1]):
        return None
    key = (id(mean), id(std), batch.device, batch.dtype)
    held = FUSION_STATS_ON_DEVICE.get(key)
    if held is None or held[0] is not mean or held[1] is not std:
        # Copied once per device and dtype: a copy from host memory on every batch made the host wait
        # for the GPU twice per batch (torch.cuda.set_sync_debug_mode("warn") on an H100).
        held = (mean, std, mean.to(batch.device, batch.dtype).reshape(1, -1, 1, 1),
                std.to(batch.device, batch.dtype).reshape(1, -1, 1, 1))
        if len(FUSION_STATS_ON_DEVICE) >= 64:  # a long preview session builds many chains
            FUSION_STATS_ON_DEVICE.pop(next(iter(FUSION_STATS_ON_DEVICE)))
        FUSION_STATS_ON_DEVICE[key] = held
    return held[2], held[3]


# Normalize's mean and std on the devices they were used on, by the (CPU) tensors' identity; the
# tensors themselves are held too, so an id is never reused while its entry lives.
FUSION_STATS_ON_DEVICE: dict = {}
