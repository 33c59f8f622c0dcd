"""Colour steps on a CPU batch that is still uint8 levels: K.ColorJitter's four adjustments
(brightness, contrast, saturation, hue; alone they are the Brightness, Contrast, Saturation and
Hue ops) computed on each image's 8-bit levels with OpenCV, as Albumentations computes them,
instead of on float32 copies of the batch: 20.0 ms against 53.8 ms for 32 images of 224 x 224 with
all four, on 2 cores (bench/cpu_kernels.py).

Each adjustment rounds its result to a level: brightness, contrast and hue are exact to half a
level (lookup tables of Kornia's formula; OpenCV's float HSV), saturation to about one (the grey is
OpenCV's rounded luma); a ColorJitter's branches after the first start from rounded levels, as
Albumentations' do. tests/test_kornia_levels.py holds each branch and their chain to its bound against
Kornia's float arithmetic on the same draws. Kornia's modules on floats stay what fuse=False and a
GPU run.
"""
from __future__ import annotations

import cv2
import kornia
import numpy as np
import torch

# BT.601 luma, the weights of kornia.color.rgb_to_grayscale (and of OpenCV's RGB2GRAY).
LUMA = np.array([0.299, 0.587, 0.114])
LEVELS = np.arange(256, dtype=np.float64)


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
    # One copy of the batch as OpenCV reads images (each HxWx3, contiguous), which a torch copy lays out
    # across layouts faster than numpy would image by image.
    images = batch.contiguous(memory_format=torch.channels_last)
    out = images.clone() if images is batch else images
    results = out.permute(0, 2, 3, 1).numpy()
    keys = ("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor")
    factors = {k: drawn[keys[k]].double().tolist() for k in moved}
    applies = [True] * len(batch) if gate is None else gate.flatten().tolist()
    for n, applied in enumerate(applies):
        if applied and moved:
            image = results[n]
            for k in moved:
                image = LEVEL_ADJUSTMENTS[k](image, factors[k][n])
            results[n] = image
    return out


def brightness_levels(image, factor):
    """Kornia's multiplicative brightness (x * factor, clamped) on an HxWx3 uint8 image, rounded to levels."""
    return cv2.LUT(image, np.clip(np.rint(LEVELS * factor), 0, 255).astype(np.uint8))


def contrast_levels(image, factor):
    """Kornia's contrast (blended with the image's mean luma, clamped) on an HxWx3 uint8 image, rounded
    to levels; the mean is exact (the luma's mean is the weighted mean of the channels' means)."""
    mean = float(LUMA @ np.asarray(cv2.mean(image)[:3]))
    return cv2.LUT(image, np.clip(np.rint(LEVELS * factor + mean * (1.0 - factor)), 0, 255).astype(np.uint8))


def saturation_levels(image, factor):
    """Kornia's saturation (blended with each pixel's luma, clamped) on an HxWx3 uint8 image: OpenCV's
    8-bit luma, blended and rounded by cv2.addWeighted."""
    grey = cv2.cvtColor(cv2.cvtColor(image, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    return cv2.addWeighted(image, factor, grey, 1.0 - factor, 0.0)


def hue_levels(image, turns):
    """Kornia's hue rotation by `turns` on an HxWx3 uint8 image, rounded to levels: OpenCV's float HSV
    (hue in degrees), so that only the rounding differs (8-bit HSV, a 256th of a turn per step, moved
    saturated colours by up to 5 levels, for 2 ms less per 32 images of 224 x 224)."""
    hsv = cv2.cvtColor(image.astype(np.float32) * np.float32(1.0 / 255.0), cv2.COLOR_RGB2HSV)
    hue = hsv[..., 0]
    hue += np.float32(turns * 360.0)
    hue[hue >= 360.0] -= 360.0
    hue[hue < 0.0] += 360.0
    return cv2.convertScaleAbs(cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB), alpha=255.0)


LEVEL_ADJUSTMENTS = (brightness_levels, contrast_levels, saturation_levels, hue_levels)


def jitters_on_levels(batch, arguments):
    """The leading ColorJitters of a colour run (its fused_colour `arguments`: modules, draws, gates,
    branches, owned) applied to the levels of `batch` where jitter_on_levels allows: (the batch they
    leave, the arguments of the run's remaining steps, which then run on floats).
    Example: a run of ColorJitter then Normalize on a uint8 CPU batch leaves uint8 levels and Normalize."""
    modules, draws, gates, branches, owned = arguments
    count = 0
    while count < len(modules) and jitter_on_levels(modules[count], batch):
        batch = jitter_levels(batch, draws[count], gates[count], branches[count])
        count += 1
    if count == 0:
        return batch, arguments
    # (The remaining steps get a float batch of their own: as_unit converts the levels into one.)
    return batch, (modules[count:], draws[count:], gates[count:], branches[count:], True)
