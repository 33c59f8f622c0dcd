"""torchvision's MixUp and CutMix (transforms.v2): each image mixed with the one before it in the batch
(`images.roll(1, 0)`), one lambda ~ Beta(alpha, alpha) for the whole batch, and CutMix's box around a
drawn centre, cut at the borders. The Kornia modules, the Albumentations transforms and the DALI
functions of the workbench's TorchvisionMixUp and TorchvisionCutMix share these.

Example:
    >>> tv_roll_partners(4), tv_cutmix_box(0.75, 10, 0, 20, 40)
    ([3, 0, 1, 2], [0, 0, 20, 5])
"""
import math


def tv_roll_partners(count):
    """Each sample's partner: the one before it, the first's the last (torchvision's roll by one)."""
    return [count - 1] + list(range(count - 1))


def tv_cutmix_box(lam, r_x, r_y, height, width):
    """The [x1, y1, x2, y2) box torchvision's CutMix pastes for `lam` (its Beta draw) and the centre
    (r_x, r_y) it drew: half-sides int(0.5 sqrt(1 - lam) x side), cut at the image's borders."""
    r = 0.5 * math.sqrt(1.0 - lam)
    half_w, half_h = int(r * width), int(r * height)
    return [max(r_x - half_w, 0), max(r_y - half_h, 0), min(r_x + half_w, width), min(r_y + half_h, height)]
