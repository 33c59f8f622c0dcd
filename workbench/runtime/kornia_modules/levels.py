"""Steps on a CPU batch that is still uint8 levels, with OpenCV, as Albumentations runs them.

Colour: K.ColorJitter's four adjustments (brightness, contrast, saturation, hue; alone they are the
Brightness, Contrast, Saturation and Hue ops) on each image's 8-bit levels, instead of on float32
copies of the batch: 9.6 ms against 45.0 ms for 32 images of 224 x 224 with all four, on 2 cores
(bench/cpu_kernels.py). Gamma, Invert, Solarize and Posterize look their values up in a table of
their own float arithmetic on the 256 levels (LOOKUP_STEPS). Each result is rounded to a level:
brightness, contrast, hue and the tables to half a level of Kornia's float arithmetic (hue through
OpenCV's float HSV), saturation to three quarters (cv2.transform's fixed point); a ColorJitter's
branches after the first start from rounded levels, as Albumentations' do.

Floats from levels: where a colour run ends in steps that map each channel's level to a value on its own
(tabled_on_levels: LOOKUP_STEPS and a Normalize), and one of them leaves floats (a Normalize), those steps'
float arithmetic on the 256 levels is looked up with cv2.LUT (float_tables_levels): the values of converting
the levels and running the steps, in one pass that writes the float batch as augment_images returns it.

Filters: GaussianBlur by cv2.GaussianBlur (fixed-point 8-bit kernels, within 1.5 levels), the luma
Grayscale by cv2.cvtColor (OpenCV's luma, which Kornia's rgb_to_grayscale gives a uint8 image).

Geometry: a fused geometric run (fusion.py: one matrix per sample) resamples the levels with cv2.warpAffine
(bilinear or nearest) instead of grid_sample on floats, 2 to 2.4 times faster from outputs of 192^2, and the
steps after it stay on levels (a smaller warp alone is faster on floats, 1.4 against 2.2 ms for 8 of 128^2 in
bench/cpu_kernels.py, but the steps after it then ran on floats: detection_style at 128^2 ran 1.5 to 1.9 times as
fast with its warp on levels, bench/RESULTS.md's CPU sweep); OpenCV weighs its
samples in fixed point and rounds to a level: within 0.6 of a level of the float warp. A resize's window
clamps as F.interpolate does (the window's edge pixels repeated: BORDER_REPLICATE on the window), a frame
a later warp reads from gives 0 outside it (a nearest warp of the frame's mask). Runs with a perspective,
or with more than one resize window or frame, stay floats.

tests/test_kornia_levels.py holds each step to its bound against Kornia's float step on the same
draws. Kornia's modules on floats stay what fuse=False and a GPU run.
"""
from __future__ import annotations

import cv2
import kornia
import numpy as np
import torch

from .fusion import fused_colour, fusion_channel_stats, fusion_frame
from .threads import each_sample

# BT.601 luma, the weights of kornia.color.rgb_to_grayscale (and of OpenCV's RGB2GRAY).
LUMA = np.array([0.299, 0.587, 0.114])
IDENTITY = np.eye(3)
LUMA_ROWS = np.tile(LUMA, (3, 1))  # (each output channel's share of the luma)


def opencv_levels(batch):
    """Whether `batch` is what the OpenCV functions here take: uint8 levels of 1 to 4 channels on a CPU.
    Example: opencv_levels(torch.zeros(1, 3, 4, 4, dtype=torch.uint8)) is True."""
    return batch.dtype == torch.uint8 and batch.device.type == "cpu" and 1 <= batch.shape[-3] <= 4


def jitter_on_levels(module, batch):
    """Whether a colour run's `module` runs on the levels of `batch`: a K.ColorJitter with Kornia's
    own four adjustments, on a 3-channel uint8 batch on a CPU.
    Example: jitter_on_levels(K.ColorJitter(0.2), torch.zeros(1, 3, 4, 4, dtype=torch.uint8)) is True."""
    if type(module).__name__ != "ColorJitter" or batch.dtype != torch.uint8 or batch.device.type != "cpu" \
            or batch.shape[-3] != 3:
        return False
    return (module._brightness_fn is kornia.enhance.adjust_brightness_accumulative
            and module._contrast_fn is kornia.enhance.adjust_contrast_with_mean_subtraction
            and module._saturation_fn is kornia.enhance.adjust_saturation_with_gray_subtraction
            and module._hue_fn is kornia.enhance.adjust_hue)


def jitter_levels(batch, drawn, gate, moved):
    """A ColorJitter's draws `drawn` applied to the uint8 N x 3 x H x W `batch` (any memory layout):
    each sample's moved branches (`moved`, see fusion_jitter_branches: 0 brightness, 1 contrast, 2
    saturation, 3 hue, in order) on its levels; samples the gate (N x 1 x 1 x 1 bool, or None for all)
    leaves out keep theirs. Returns a new uint8 batch laid out N x H x W x C in memory (channels_last).

    Example:
        >>> grey = torch.full((1, 3, 2, 2), 100, dtype=torch.uint8)
        >>> drawn = {"brightness_factor": torch.tensor([1.5])}
        >>> jitter_levels(grey, drawn, None, (0,)).flatten().tolist()[:3]
        [150, 150, 150]
    """
    return adjusted_levels(batch, [jitter_adjustment(drawn, gate, moved, len(batch))])


def jitter_adjustment(drawn, gate, moved, count):
    """A ColorJitter's draws as adjusted_levels takes them: (image, n) -> sample n's HxWx3 uint8 image adjusted
    (see jitter_levels), or None where its gate leaves sample n out, or it moves no branch."""
    keys = ("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor")
    factors = {k: drawn[keys[k]].double().tolist() for k in moved}
    applies = [True] * count if gate is None else gate.to(torch.bool).flatten().tolist()

    def adjust(image, n):
        if not (applies[n] and moved):
            return None
        for k in moved:
            image = LEVEL_ADJUSTMENTS[k](image, factors[k][n])
        return image
    return adjust


def adjusted_levels(batch, adjustments):
    """Colour steps on the uint8 N x C x H x W `batch` (any memory layout), each an adjustment (image, n) -> sample
    n's new HxWxC image or None (see jitter_adjustment, lookup_adjustment), in turn, image by image: one copy of
    the batch for a run of them, laid out N x H x W x C in memory (channels_last), not one per step.
    Example: a ColorJitter then a Gamma on levels, adjusted_levels(batch, [jitter_adjustment(drawn, gate, moved,
    len(batch)), lookup_adjustment(batch, gamma, drawn, gate)]), is jitter_levels, then lookup_levels."""
    out, results, images, _ = writable_levels(batch, None)

    def adjust_images(start, stop):
        for n in range(start, stop):
            image = images[n]
            for adjust in adjustments:
                adjusted = adjust(image, n)
                image = image if adjusted is None else adjusted
            results[n] = image.reshape(results[n].shape)
    each_sample(len(results), adjust_images)
    return out


def writable_levels(batch, applied):
    """(a new uint8 batch of the shape of `batch` laid out N x H x W x C, its numpy view of N HxWxC images to write
    every sample into, the numpy views of the images of `batch` laid out so, for OpenCV to read, whether each
    sample applies by `applied`: a gate, a batch_prob, or None for all). The caller writes each sample, image by
    image (numpy's copy of an image it leaves as it is): torch's clone of the batch took about as long as flipping
    its images, and its threads then spun on the core OpenCV's wanted next (see threads.py)."""
    images = channels_last_levels(batch).permute(0, 2, 3, 1).numpy()
    out = torch.empty(batch.shape, dtype=torch.uint8, memory_format=torch.channels_last)
    applies = [True] * len(batch) if applied is None else applied.to(torch.bool).flatten().tolist()
    return out, out.permute(0, 2, 3, 1).numpy(), images, applies


def channels_last_levels(batch):
    """The uint8 N x C x H x W `batch` laid out N x H x W x C in memory (torch.channels_last): itself where it
    lies so, else a copy that cv2.merge interleaves image by image (torch's transposing copy of uint8 took
    six to seven times as long for 8 images of 224 x 224, on 2 cores: bench/cpu_kernels.py).
    Example: channels_last_levels(torch.zeros(2, 3, 4, 5, dtype=torch.uint8)).stride() == (60, 1, 15, 3)."""
    if batch.is_contiguous(memory_format=torch.channels_last):
        return batch
    if batch.stride(-1) != 1 or not 1 < batch.shape[1] <= 4:  # (planes OpenCV cannot take as they lie)
        return batch.contiguous(memory_format=torch.channels_last)
    out = torch.empty(batch.shape, dtype=torch.uint8, memory_format=torch.channels_last)
    images, planes = out.permute(0, 2, 3, 1).numpy(), batch.numpy()

    def merge(start, stop):
        for n in range(start, stop):
            cv2.merge(list(planes[n]), dst=images[n])
    each_sample(len(images), merge)
    return out


def brightness_levels(image, factor):
    """Kornia's multiplicative brightness (x * factor, clamped) on an HxWx3 uint8 image, rounded to levels
    (cv2.convertScaleAbs: |x * factor| rounded and saturated, vectorised where cv2.LUT is not: the same
    levels as a table of rint(level * factor))."""
    return cv2.convertScaleAbs(image, alpha=factor)


def contrast_levels(image, factor):
    """Kornia's contrast (blended with the image's mean luma, clamped) on an HxWx3 uint8 image, rounded
    to levels (cv2.addWeighted of the image with nothing: x * factor + mean * (1 - factor), rounded and
    saturated); the mean is exact (the luma's mean is the weighted mean of the channels' means)."""
    mean = float(LUMA @ np.asarray(cv2.mean(image)[:3]))
    return cv2.addWeighted(image, factor, image, 0.0, mean * (1.0 - factor))


def saturation_levels(image, factor):
    """Kornia's saturation (blended with each pixel's luma, clamped) on an HxWx3 uint8 image, rounded to levels:
    the blend is one 3 x 3 matrix on each pixel's channels (factor * I + (1 - factor) * the luma's weights in
    each row), which cv2.transform applies in floats, rounded and saturated: one pass instead of three (a grey
    image, its three channels, a blend), and no rounded grey in between."""
    return cv2.transform(image, factor * IDENTITY + (1.0 - factor) * LUMA_ROWS)


def hue_levels(image, turns):
    """Kornia's hue rotation by `turns` on an HxWx3 uint8 image, rounded to levels: OpenCV's float HSV
    (hue in degrees), so that only the rounding differs (8-bit HSV, a 256th of a turn per step, moved
    saturated colours by up to 5 levels, for 2 ms less per 32 images of 224 x 224)."""
    # One float image, converted in place both ways: a new array for each of the four passes is fresh pages to
    # fault in each time (600 kB each for 224 x 224), more than the arithmetic.
    hsv = np.multiply(image, np.float32(1.0 / 255.0), dtype=np.float32)
    cv2.cvtColor(hsv, cv2.COLOR_RGB2HSV, dst=hsv)
    # A shift in [0, 360): OpenCV's HSV2RGB takes a hue below 720 round the circle itself (not one below 0).
    hsv[..., 0] += np.float32((turns % 1.0) * 360.0)
    return cv2.convertScaleAbs(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB, dst=hsv), alpha=255.0)


LEVEL_ADJUSTMENTS = (brightness_levels, contrast_levels, saturation_levels, hue_levels)


# Colour steps that map each channel's level to a level on its own (no mean, no other channel): a lookup
# table of the step's float arithmetic on the 256 levels gives their values, rounded.
LOOKUP_STEPS = ("RandomGamma", "RandomInvert", "RandomSolarize", "RandomPosterize")


def colour_keeps_levels(module, batch):
    """Whether a colour run's `module` runs on the levels of `batch` (a uint8 batch on a CPU) and leaves
    levels: a ColorJitter (jitter_on_levels) or one of LOOKUP_STEPS.
    Example: colour_keeps_levels(K.RandomGamma((0.5, 1.5)), torch.zeros(1, 3, 4, 4, dtype=torch.uint8)) is
    True (K: kornia.augmentation)."""
    if jitter_on_levels(module, batch):
        return True
    return type(module).__name__ in LOOKUP_STEPS and opencv_levels(batch)


def lookup_levels(batch, module, drawn, gate):
    """A step of LOOKUP_STEPS with its draws `drawn` on the uint8 N x C x H x W `batch`: its own float
    arithmetic (fused_colour's) on a ramp of the 256 levels, rounded, looked up per sample and channel with
    cv2.LUT: within half a level of the float step. Samples the gate leaves out keep their levels. A new
    uint8 batch laid out N x H x W x C in memory.

    Example:
        >>> import kornia.augmentation as K
        >>> batch = torch.tensor([0, 100, 255], dtype=torch.uint8).view(1, 1, 1, 3)
        >>> lookup_levels(batch, K.RandomInvert(p=1.0), {}, None).flatten().tolist()
        [255, 155, 0]
    """
    return adjusted_levels(batch, [lookup_adjustment(batch, module, drawn, gate)])


def lookup_adjustment(batch, module, drawn, gate):
    """A step of LOOKUP_STEPS with its draws as adjusted_levels takes it (see lookup_levels): (image, n) -> sample
    n's image looked up in its tables, or None where the gate leaves it out."""
    count, channels = int(batch.shape[0]), int(batch.shape[1])
    ramp = torch.arange(256, dtype=torch.float32).div_(255.0).view(1, 1, 1, 256).repeat(count, channels, 1, 1)
    values = fused_colour(ramp, [module], [drawn], [None], [None], owned=True)
    tables = values.mul(255.0).round_().clamp_(0.0, 255.0).to(torch.uint8).permute(0, 2, 3, 1).contiguous().numpy()
    applies = [True] * count if gate is None else gate.to(torch.bool).flatten().tolist()

    def adjust(image, n):
        return cv2.LUT(image, tables[n] if channels > 1 else tables[n][..., 0]) if applies[n] else None
    return adjust


def tabled_on_levels(module, batch):
    """Whether a colour run's `module` maps each channel's level of `batch` (uint8, on a CPU) to a value on its
    own, so that a table of its float arithmetic on the 256 levels gives its values exactly: one of
    LOOKUP_STEPS, or a Normalize with one mean and std per channel (or one for all).
    Example: tabled_on_levels(K.Normalize(torch.zeros(3), torch.ones(3)), torch.zeros(1, 3, 4, 4,
    dtype=torch.uint8)) is True."""
    if not opencv_levels(batch):
        return False
    name = type(module).__name__
    return name in LOOKUP_STEPS or (name == "Normalize" and fusion_channel_stats(module.flags, batch) is not None)


def float_tables_levels(batch, modules, draws, gates):
    """Steps that tabled_on_levels takes, in turn, with their draws and gates, on the uint8 N x C x H x W
    `batch`: their float arithmetic (fused_colour's) on the 256 levels as float32 (as as_unit converts them),
    one table per sample and channel, looked up with cv2.LUT. The same values as fused_colour on the converted
    batch (each value depends on its level alone), without converting it: one pass from levels to the float
    result, a new float32 batch laid out N x H x W x C in memory (the layout augment_images returns); no steps:
    the levels converted so (as_unit's values).

    Example:
        >>> import kornia.augmentation as K
        >>> batch = torch.tensor([0, 51, 255], dtype=torch.uint8).view(1, 3, 1, 1)
        >>> normalize = K.Normalize(torch.tensor([0.5, 0.5, 0.5]), torch.tensor([0.5, 0.5, 0.5]))
        >>> float_tables_levels(batch, [normalize], [{}], [None]).flatten().tolist()
        [-1.0, -0.6000000238418579, 1.0]
    """
    count, channels = int(batch.shape[0]), int(batch.shape[1])
    # (numpy's malloc, not torch's aligned blocks: with the freed memory kept (keep_freed_memory) a result of
    # torch's did not fit the hole the last one left, and the heap grew by a result a run, to 1.5 GB.)
    results = np.empty((count, *batch.shape[2:], channels), np.float32)
    out = torch.from_numpy(results).permute(0, 3, 1, 2)
    if not modules:
        # The levels alone: as_unit's own arithmetic (level / 255), a copy and a division on torch's threads,
        # 3.5 times as fast as cv2.LUT's per-channel tables (bench/cpu_kernels.py), the same values; interleaved
        # levels read where they lie (a crop's window too).
        return out.copy_(batch if batch.stride(1) == 1 else channels_last_levels(batch)).div_(255.0)
    # (a window is copied: the one table's lookup takes the batch as one tall image)
    images = channels_last_levels(batch).permute(0, 2, 3, 1).numpy()
    ramp = torch.arange(256, dtype=torch.float32).div_(255.0).view(1, 1, 1, 256).repeat(count, channels, 1, 1)
    values = fused_colour(ramp, modules, draws, gates, [None] * len(modules), owned=True)
    tables = values.permute(0, 2, 3, 1).contiguous().numpy()
    if channels == 1:
        images, results, tables = images[..., 0], results[..., 0], tables[..., 0]
    if bool((tables == tables[:1]).all()):
        # One table for every sample (a Normalize draws nothing): one call over the batch as one tall image,
        # which OpenCV splits across its threads (per image it keeps to one: half the speed on 2 cores; shared out
        # to our threads, slower in the CPU sweep at batch 8).
        cv2.LUT(images.reshape(-1, *images.shape[2:]), tables[0], dst=results.reshape(-1, *results.shape[2:]))
        return out

    def look_up(start, stop):
        for n in range(start, stop):
            cv2.LUT(images[n], tables[n], dst=results[n])
    each_sample(count, look_up)
    return out


def levels_plan(modules, batch):
    """How colours_on_levels runs a colour run of `modules` on the levels of `batch` (uint8, on a CPU):
    (kept, tabled), the number of leading steps that keep levels (colour_keeps_levels, one at a time), and
    whether the steps from there to the run's end are looked up in float tables (floats_from), leaving floats.
    The steps after `kept` run on floats where `tabled` is False.
    Example: levels_plan([K.ColorJitter(0.2), K.Normalize(torch.zeros(3), torch.ones(3))], torch.zeros(1, 3,
    4, 4, dtype=torch.uint8)) is (1, True) (K: kornia.augmentation)."""
    for k, module in enumerate(modules):
        if floats_from(modules[k:], batch):
            return k, True
        if not colour_keeps_levels(module, batch):
            return k, False
    return len(modules), False


def floats_from(modules, batch):
    """Whether colours_on_levels looks the colour steps `modules` (a run's rest) up in float tables: each is
    tabled_on_levels, and one of them (a Normalize) does not keep levels."""
    return all(tabled_on_levels(module, batch) for module in modules) \
        and not all(colour_keeps_levels(module, batch) for module in modules)


def colours_on_levels(batch, arguments):
    """The leading steps of a colour run (its fused_colour `arguments`: modules, draws, gates, branches,
    owned) that levels_plan takes, applied to the levels of `batch`: (the batch they leave, the
    arguments of the run's remaining steps, which then run on floats). Where the rest of the run is steps
    of one channel's level each (tabled_on_levels) and ends in floats (a Normalize), the rest is looked up
    in float tables (float_tables_levels): the batch then leaves as floats, and no step remains.
    Example: a run of ColorJitter, Gamma, Normalize on a uint8 CPU batch leaves floats: the ColorJitter on
    levels, Gamma and Normalize through one float table per sample."""
    modules, draws, gates, branches, owned = arguments
    kept, tabled = levels_plan(modules, batch)
    if kept:
        batch = adjusted_levels(batch, [
            jitter_adjustment(draws[k], gates[k], branches[k], len(batch)) if jitter_on_levels(modules[k], batch)
            else lookup_adjustment(batch, modules[k], draws[k], gates[k]) for k in range(kept)])
    if tabled:
        batch = float_tables_levels(batch, modules[kept:], draws[kept:], gates[kept:])
    count = len(modules) if tabled else kept
    if count == 0:
        return batch, arguments
    # (The remaining steps get a float batch of their own: as_unit converts the levels into one.)
    return batch, (modules[count:], draws[count:], gates[count:], branches[count:], True)


INTERPOLATIONS = {"bilinear": cv2.INTER_LINEAR, "nearest": cv2.INTER_NEAREST}


def resample_levels(batch, theta, frames, boxes, clamps, size, mode, affine):
    """A fused geometric run (fused_resample's arguments, see fused_geometry_plan) on the uint8 levels of
    `batch` with cv2.warpAffine: a new uint8 batch laid out N x H x W x C in memory; None where OpenCV
    cannot give it or would not be faster (see level_warp_plan), and the run resamples floats instead.

    Example:
        >>> batch = torch.arange(256, dtype=torch.uint8).repeat(256, 1).view(1, 1, 256, 256)
        >>> flip = torch.tensor([[[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])
        >>> resample_levels(batch, flip, [], None, None, (256, 256), "bilinear", True)[0, 0, 0, :4].tolist()
        [255, 254, 253, 252]
    """
    plan = level_warp_plan(batch, theta, frames, boxes, clamps, size, mode, affine)
    if plan is None:
        return None
    maps, windows, masks = plan
    images = channels_last_levels(batch).permute(0, 2, 3, 1).numpy()
    out = torch.empty((batch.shape[0], batch.shape[1], *size), dtype=torch.uint8, memory_format=torch.channels_last)
    results = out.permute(0, 2, 3, 1).numpy()
    flags = INTERPOLATIONS[mode] | cv2.WARP_INVERSE_MAP

    def warp(start, stop):
        for n in range(start, stop):
            source, matrix, border = images[n], maps[n], cv2.BORDER_CONSTANT
            if windows is not None:  # positions clamped into the window: its edge pixels repeated
                source, matrix, border = window_source(images[n], windows[n], matrix,
                                                       None if masks is None else masks[n], size)
            warped = cv2.warpAffine(source, matrix[:2], (size[1], size[0]), flags=flags, borderMode=border,
                                    borderValue=0).reshape(results[n].shape)
            if masks is not None:  # 0 where a position falls outside the frame (its pixels' outer edges)
                x0, x1, y0, y1 = masks[n]
                inside = cv2.warpAffine(np.full((y1 - y0 + 1, x1 - x0 + 1), 255, np.uint8),
                                        shifted(maps[n], x0, y0)[:2], (size[1], size[0]),
                                        flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP,
                                        borderMode=cv2.BORDER_CONSTANT, borderValue=0)
                warped = cv2.bitwise_and(warped, warped, mask=inside).reshape(results[n].shape)
            results[n] = warped
    each_sample(len(images), warp)
    return out


def level_warp_plan(batch, theta, frames, boxes, clamps, size, mode, affine):
    """How resample_levels warps a fused geometric run (fused_resample's arguments) on the levels of `batch`
    (only its shape, dtype and device are read): (maps into each image's pixels, N x 3 x 3 float64 numpy; the
    resize windows, inclusive pixels x0, x1, y0, y1 per image, or None; the frames' pixels likewise, or None).
    None where OpenCV cannot warp it (floats, a GPU, a perspective, a frame that is no box, more than one
    window or box, windows off the pixel grid).
    Example: a rotation of a uint8 CPU batch into 256 x 256 has a plan, a perspective none."""
    if not opencv_levels(batch) or frames or not affine or mode not in INTERPOLATIONS \
            or any(extra is not None and extra.shape[1] > 1 for extra in (boxes, clamps)):
        return None
    height, width = int(batch.shape[-2]), int(batch.shape[-1])
    maps = np.linalg.inv(fusion_frame(height, width)) @ theta.double().cpu().numpy() @ fusion_frame(*size)
    windows = None if clamps is None else pixel_windows(clamps[:, 0], height, width, 0.0)
    masks = None if boxes is None else pixel_windows(boxes[:, 0], height, width, 0.5)
    if (clamps is not None and windows is None) or (boxes is not None and masks is None):
        return None
    return maps, windows, masks


def window_source(image, window, matrix, mask, size):
    """(source, matrix, border) that warp the HxWxC `image` through `matrix` (3 x 3 into its pixels) with
    positions clamped into the inclusive pixel `window` (x0, x1, y0, y1), the edge pixels repeated beyond
    it. Where every position read lies within half a pixel of the window (the outputs inside the frame
    `mask`, same form, or every output of `size`), the window gets a rim of one pixel of its edge pixels and
    a constant border: BORDER_REPLICATE's values on the window but for rare roundings a level apart (the map
    shifted by another whole pixel rounds to OpenCV's fixed point a little differently), and OpenCV's
    constant-border warp is 1.3 to 1.5 times as fast, the rim's copy included (bench/cpu_kernels.py). Else
    the window and BORDER_REPLICATE.
    Example: window_source(np.zeros((8, 8, 3), np.uint8), (2, 5, 2, 5), np.array([[1.0, 0, 2], [0, 1, 2], [0, 0,
    1]]), None, (4, 4))[0].shape is (6, 6, 3): the 4 x 4 window and its rim."""
    x0, x1, y0, y1 = window
    if mask is not None:
        near = x0 <= mask[0] and mask[1] <= x1 and y0 <= mask[2] and mask[3] <= y1
    else:
        corners = matrix[:2] @ np.array([[0, size[1] - 1, 0, size[1] - 1], [0, 0, size[0] - 1, size[0] - 1],
                                          [1, 1, 1, 1]], np.float64)
        near = corners[0].min() >= x0 - 0.5 and corners[0].max() <= x1 + 0.5 \
            and corners[1].min() >= y0 - 0.5 and corners[1].max() <= y1 + 0.5
    crop = image[y0:y1 + 1, x0:x1 + 1]
    if not near:
        return crop, shifted(matrix, x0, y0), cv2.BORDER_REPLICATE
    rimmed = cv2.copyMakeBorder(crop, 1, 1, 1, 1, cv2.BORDER_REPLICATE).reshape(y1 - y0 + 3, x1 - x0 + 3, -1)
    return rimmed, shifted(matrix, x0 - 1, y0 - 1), cv2.BORDER_CONSTANT


def pixel_windows(limits, height, width, edge):
    """Boxes of grid_sample coordinates (N x 4: x from, x to, y from, y to) as inclusive pixel windows
    (x0, x1, y0, y1) of a height x width image, where the boxes lie `edge` pixels outside pixel centres
    (0 for a resize's clamp between its window's edge pixels, 0.5 for a frame's outer edges); None if
    one does not, or leaves the image."""
    # (numpy: a handful of small tensor operations took a third of a millisecond a call)
    limits = limits.double().cpu().numpy()
    xs = (limits[:, :2] + 1.0) * (width / 2.0) - 0.5 + np.array([edge, -edge])
    ys = (limits[:, 2:] + 1.0) * (height / 2.0) - 0.5 + np.array([edge, -edge])
    pixels = np.concatenate([xs, ys], 1)
    rounded = np.round(pixels)
    if (np.abs(pixels - rounded) > 1e-3).any():
        return None
    rounded = rounded.astype(np.int64)
    if (rounded[:, :2] < 0).any() or (rounded[:, :2] >= width).any() or (rounded[:, 2:] < 0).any() \
            or (rounded[:, 2:] >= height).any() or (rounded[:, 1] < rounded[:, 0]).any() \
            or (rounded[:, 3] < rounded[:, 2]).any():
        return None
    return [tuple(int(v) for v in row) for row in rounded.tolist()]


def shifted(matrix, x0, y0):
    """A map into an image's pixels (3 x 3, float64 numpy) as a map into its window starting at (x0, y0)."""
    out = matrix.copy()
    out[0] -= x0 * out[2]
    out[1] -= y0 * out[2]
    return out


def flips_levels(batch, rows, horizontal, owned=False):
    """A flip (`horizontal`, else vertical) of the samples `rows` (an index tensor) of the uint8 levels `batch`
    by cv2.flip, the other samples kept: a new uint8 batch laid out N x H x W x C in memory, or, where the batch is
    `owned` (made by a step before, not the caller's) and laid out so, the batch itself, its `rows` flipped in
    place (OpenCV's flip swaps the two ends of a row, or two rows, as it goes). (Kornia's flip of the rows made
    them N x C x H x W, and writing them back into the interleaved batch took a transposing copy each, most of
    the step.)

    Example:
        >>> batch = torch.tensor([[[[1, 2, 3]]], [[[4, 5, 6]]]], dtype=torch.uint8)
        >>> flips_levels(batch, torch.tensor([1]), True).flatten().tolist()
        [1, 2, 3, 6, 5, 4]
    """
    code = 1 if horizontal else 0
    if owned and batch.is_contiguous(memory_format=torch.channels_last):
        images, flipped = batch.permute(0, 2, 3, 1).numpy(), rows.tolist()

        def flip_in_place(start, stop):
            for n in flipped[start:stop]:
                cv2.flip(images[n], code, dst=images[n])
        each_sample(len(flipped), flip_in_place)
        return batch
    out, results, images, _ = writable_levels(batch, None)
    flipped = set(rows.tolist())

    def flip(start, stop):
        for n in range(start, stop):
            if n in flipped:
                results[n] = cv2.flip(images[n], code).reshape(results[n].shape)
            else:
                results[n] = images[n]
    each_sample(len(images), flip)
    return out


# The steps whose windows sliced_crops_levels may resize (see sliced_crop_on_levels).
SLICED_CROPS = ("RandomResizedCrop", "WbRandomResizedCrop")


def centre_crop_levels(batch, drawn):
    """A CenterCrop's window of the uint8 `batch` (its `drawn` corners, one window for all samples) as Kornia's
    slice mode cuts it, as a view: Kornia copies it; on levels the copy is made where the window is read, and
    nothing writes into levels that are not its own (apply_to_rows' and flips_levels' `owned`).
    Example: centre_crop_levels(torch.zeros(1, 3, 4, 6, dtype=torch.uint8), {"src": torch.tensor([[[1, 1], [4, 1],
    [4, 2], [1, 2]]])}).shape == (1, 3, 2, 4)"""
    (left, top), (right, bottom) = drawn["src"][0, 0].tolist(), drawn["src"][0, 2].tolist()
    return batch[..., top:bottom + 1, left:right + 1]


def sliced_crop_on_levels(module, batch):
    """Whether `module` is a RandomResizedCrop whose windows Kornia slices and resizes unfiltered
    (crop_by_indices: Kornia's own, or the workbench's without antialias), bilinearly with half-pixel centres
    (align_corners False) or nearest, on a uint8 batch of 1 to 4 channels on a CPU: sliced_crops_levels
    resizes those windows with OpenCV.
    Example: sliced_crop_on_levels(K.RandomResizedCrop((8, 8), align_corners=False), torch.zeros(1, 3, 9, 9,
    dtype=torch.uint8)) is True (K: kornia.augmentation)."""
    if not opencv_levels(batch) or type(module).__name__ not in SLICED_CROPS:
        return False
    flags = module.flags
    if flags.get("cropping_mode") != "slice" or flags.get("antialias"):
        return False
    resample = flags["resample"].name.lower()
    return resample == "nearest" or (resample == "bilinear" and not flags["align_corners"])


def sliced_crops_levels(batch, src, size, resample):
    """Kornia's crop_by_indices(batch, src, size) for a RandomResizedCrop that sliced_crop_on_levels takes (each
    sample's window, corner points `src` N x 4 x 2, sliced and resized to `size` by F.interpolate: bilinear with
    half-pixel centres, or "nearest-exact") on the uint8 levels of `batch`, by cv2.resize a sample at a time
    (INTER_LINEAR, INTER_NEAREST_EXACT): within a level of torch's uint8 resize, and 1.2 to 1.3 times as fast
    on the N x H x W x C levels augment_images makes (bench/cpu_kernels.py). A new uint8 batch laid out
    N x H x W x C in memory.

    Example:
        >>> batch = torch.arange(16, dtype=torch.uint8).view(1, 1, 4, 4)
        >>> src = torch.tensor([[[1, 1], [2, 1], [2, 2], [1, 2]]])  # the window of rows and columns 1 and 2
        >>> sliced_crops_levels(batch, src, (2, 2), "nearest").flatten().tolist()
        [5, 6, 9, 10]
    """
    corners = torch.as_tensor(src).long().tolist()  # (whole pixels, as Kornia truncates them)
    images = channels_last_levels(batch).permute(0, 2, 3, 1).numpy()
    out = torch.empty((batch.shape[0], batch.shape[1], *size), dtype=torch.uint8, memory_format=torch.channels_last)
    results = out.permute(0, 2, 3, 1).numpy()
    interpolation = cv2.INTER_NEAREST_EXACT if resample == "nearest" else cv2.INTER_LINEAR

    def crop(start, stop):
        for n in range(start, stop):
            box = corners[n]
            window = images[n, box[0][1]:box[3][1] + 1, box[0][0]:box[1][0] + 1]
            results[n] = cv2.resize(window, (size[1], size[0]), interpolation=interpolation).reshape(results[n].shape)
    each_sample(len(corners), crop)
    return out


def filter_on_levels(module, batch):
    """Whether a step that runs on its own runs on the levels of `batch` (uint8, on a CPU) with OpenCV: a
    GaussianBlur (WbGaussianBlur) on 1 to 4 channels, or the luma Grayscale (weighted_average) of 3.
    Example: filter_on_levels(WbGaussianBlur((3, 3)), torch.zeros(1, 3, 8, 8, dtype=torch.uint8)) is True."""
    if batch.dtype != torch.uint8 or batch.device.type != "cpu":
        return False
    name = type(module).__name__
    if name == "WbGaussianBlur":
        return opencv_levels(batch)
    return name == "RandomGrayscaleMethod" and module.method == "weighted_average" and batch.shape[-3] == 3


def filter_levels(batch, module, drawn):
    """A step that filter_on_levels takes, with its draws `drawn`, on the uint8 N x C x H x W `batch`: a blur
    by cv2.GaussianBlur (each sample's size and sigma, Kornia's "reflect" borders: BORDER_REFLECT_101), a grey
    by cv2.cvtColor (the luma rgb_to_grayscale gives uint8 images). Samples its p left out keep their levels.

    Example:
        >>> from workbench.runtime.kornia_modules.filters import WbGaussianBlur
        >>> batch = torch.full((1, 3, 6, 6), 90, dtype=torch.uint8)
        >>> drawn = {"sigma": torch.tensor([1.0]), "kernel_size": torch.tensor([3.0])}
        >>> int(filter_levels(batch, WbGaussianBlur((3, 3), p=1.0), drawn).max())   # a flat image stays flat
        90
    """
    out, results, images, applies = writable_levels(batch, drawn.get("batch_prob"))
    blur = type(module).__name__ == "WbGaussianBlur"
    if blur:
        sizes, sigmas = drawn["kernel_size"].flatten().tolist(), drawn["sigma"].double().flatten().tolist()

    def filter_images(start, stop):
        for n in range(start, stop):
            if not applies[n]:
                results[n] = images[n]
            elif blur:
                size = int(round(sizes[n]))
                results[n] = cv2.GaussianBlur(images[n], (size, size), sigmas[n], sigmaY=sigmas[n],
                                              borderType=cv2.BORDER_REFLECT_101).reshape(results[n].shape)
            else:
                grey = cv2.cvtColor(cv2.cvtColor(images[n], cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
                results[n] = grey.reshape(results[n].shape)
    each_sample(len(images), filter_images)
    return out
