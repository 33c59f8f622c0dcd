"""DALI batch-mixing functions: MixUp's blend and CutMix's box and paste, each sample with its partner
(`partner`: the batch index fn.batch_permutation drew for it, or for torchvision's MixUp and CutMix the
sample before it: roll_partners).

Images come in the pipeline's units: 0-255 uint8 before a Normalize (`uint8=True`), [0, 1]-based floats
after it; every function returns them in the same units. The labels are mixed by the step (mix_labels).
"""
import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import Pipeline
from nvidia.dali.pipeline import do_not_convert

from ..torchvision_mixing import tv_roll_partners


@do_not_convert
def mixup_images(images, partner, weight, uint8):
    """(1 - weight) x each image + weight x its partner's, in float; rounded back to uint8 while the
    values are 0-255."""
    partner_images = fn.permute_batch(images, indices=partner)
    mixed = images * (1.0 - weight) + partner_images * weight
    return fn.cast(mixed, dtype=types.UINT8) if uint8 else mixed


@do_not_convert
def cutmix_box(cut, ux, uy, height, width, lo, hi):
    """(box, weight, anchor, shape) of Kornia's CutmixGenerator: lambda = clamp(cut, lo, hi) (its
    Beta(1, 1)), sides floor(sqrt(1 - lambda) x side), start floor(u x (side - cut side + 1)) within
    the image; box (x0, y0, x1, y1), weight the pasted area fraction, anchor (y, x) and shape
    (height, width) for fn.erase."""
    lam = dmath.clamp(cut, lo, hi)
    side = dmath.sqrt(1.0 - lam)
    h = dmath.floor(side * height)
    w = dmath.floor(side * width)
    x = dmath.min(dmath.floor(ux * (width - w + 1.0)), width - w)
    y = dmath.min(dmath.floor(uy * (height - h + 1.0)), height - h)
    box = fn.stack(x, y, x + w, y + h)
    weight = w * h / (width * height)
    return box, weight, fn.stack(y, x), fn.stack(h, w)


@do_not_convert
def cutmix_patch(images, partner, anchor, shape):
    """The partner's box on zeros: the partner minus the partner with the box erased (exact on uint8
    and float alike)."""
    partner_images = fn.permute_batch(images, indices=partner)
    return partner_images - fn.erase(partner_images, anchor=anchor, shape=shape, axis_names="HW", fill_value=0.0)


@do_not_convert
def cutmix_paste(images, patch, anchor, shape):
    """The images with the box erased and the partner's patch added into it."""
    return fn.erase(images, anchor=anchor, shape=shape, axis_names="HW", fill_value=0.0) + patch


@do_not_convert
def roll_partners():
    """Each sample's partner for torchvision's MixUp and CutMix, the sample before it (tv_roll_partners),
    as int32 batch indices: from the pipeline's batch size, which every batch has (the preview's is its
    images, a training batch is always full)."""
    partners = [np.array(n, dtype=np.int32) for n in tv_roll_partners(Pipeline.current().max_batch_size)]
    return fn.external_source(source=lambda: partners, batch=True, dtype=types.INT32)


@do_not_convert
def batch_value(value):
    """Sample 0's `value` for every sample of the batch (one draw per batch, as torchvision draws)."""
    return fn.permute_batch(value, indices=fn.cast(value * 0, dtype=types.INT32))


@do_not_convert
def tv_cutmix_window(lam, u_x, u_y, height, width):
    """(box, weight, anchor, shape) of torchvision's CutMix (tv_cutmix_box) for its Beta draw `lam` and the
    centre (floor(u_x x width), floor(u_y x height)), u in [0, 1): half-sides floor(0.5 sqrt(1 - lam) x
    side), cut at the borders; box (x0, y0, x1, y1), weight the pasted area fraction, anchor (y, x) and
    shape (height, width) for fn.erase."""
    r = dmath.sqrt(1.0 - lam) * 0.5
    r_x, r_y = dmath.floor(u_x * width), dmath.floor(u_y * height)
    half_w, half_h = dmath.floor(r * width), dmath.floor(r * height)
    x0, y0 = dmath.max(r_x - half_w, 0.0), dmath.max(r_y - half_h, 0.0)
    x1, y1 = dmath.min(r_x + half_w, width), dmath.min(r_y + half_h, height)
    weight = (x1 - x0) * (y1 - y0) / (width * height)
    return fn.stack(x0, y0, x1, y1), weight, fn.stack(y0, x0), fn.stack(y1 - y0, x1 - x0)
