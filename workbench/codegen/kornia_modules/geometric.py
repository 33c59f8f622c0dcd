"""The workbench's own Kornia modules for geometric ops and distortions."""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch


def pad_to_at_least(height, width, min_height, min_width, position):
    """[left, right, top, bottom] padding that brings an image to at least min_height x
    min_width, the image placed at `position` (A.PadIfNeeded's rule: centred, the odd pixel
    after the image; at a corner, all the padding on the other sides)."""
    dh, dw = max(min_height - height, 0), max(min_width - width, 0)
    top, left = dh // 2, dw // 2
    if position != "center":
        top = dh if position.startswith("bottom") else 0
        left = dw if position.endswith("right") else 0
    return [left, dw - left, top, dh - top]


class PadToAtLeast(K.GeometricAugmentationBase2D):
    """Pad with a constant `fill` to at least `min_size` (height, width), the image at `position`
    ("center", "top_left", "top_right", "bottom_left", "bottom_right"); a side already that large
    is left alone. Reports the padding [left, right, top, bottom] per sample."""

    def __init__(self, min_size, position="center", fill=0.0, p=1.0):
        super().__init__(p=p)
        self.flags = {"min_size": (int(min_size[0]), int(min_size[1])), "position": str(position),
                      "fill": float(fill)}

    def generate_parameters(self, batch_shape):
        padding = pad_to_at_least(int(batch_shape[-2]), int(batch_shape[-1]), *self.flags["min_size"],
                                  self.flags["position"])
        return {"padding": torch.tensor([padding], dtype=torch.float32).repeat(batch_shape[0], 1)}

    def compute_transformation(self, input, params, flags):
        matrix = torch.eye(3, device=input.device, dtype=input.dtype).repeat(input.shape[0], 1, 1)
        matrix[:, 0, 2] = params["padding"][:, 0].to(input.device, input.dtype)
        matrix[:, 1, 2] = params["padding"][:, 2].to(input.device, input.dtype)
        return matrix

    def apply_transform(self, input, params, flags, transform=None):
        left, right, top, bottom = pad_to_at_least(int(input.shape[-2]), int(input.shape[-1]), *flags["min_size"],
                                                   flags["position"])
        return torch.nn.functional.pad(input, (left, right, top, bottom), value=flags["fill"])


def max_size_scale(height, width, max_size, longest):
    """(scale, new height, new width) of A.LongestMaxSize (longest=True) / A.SmallestMaxSize:
    scale = max_size / the longest (shortest) side, sides round(side * scale) (Python's round,
    half to even, in float64), at least 1."""
    scale = max_size / (max(height, width) if longest else min(height, width))
    return scale, max(1, round(height * scale)), max(1, round(width * scale))


class ResizeSideTo(K.GeometricAugmentationBase2D):
    """Resize keeping the aspect ratio so that the longest (longest=True) or the shortest side
    becomes `max_size`, the other side rounded as A.LongestMaxSize / A.SmallestMaxSize round it
    (half-pixel centres, as Kornia's Resize). Reports the scale factor per sample."""

    def __init__(self, max_size, longest=True, resample="bilinear", antialias=False, p=1.0):
        super().__init__(p=p)
        self.flags = {"max_size": int(max_size), "longest": bool(longest), "resample": str(resample).lower(),
                      "antialias": bool(antialias)}

    def generate_parameters(self, batch_shape):
        scale, _, _ = max_size_scale(int(batch_shape[-2]), int(batch_shape[-1]), self.flags["max_size"],
                                     self.flags["longest"])
        return {"scale": torch.full((batch_shape[0],), scale, dtype=torch.float64)}

    def compute_transformation(self, input, params, flags):
        _, height, width = max_size_scale(int(input.shape[-2]), int(input.shape[-1]), flags["max_size"],
                                          flags["longest"])
        matrix = torch.eye(3, device=input.device, dtype=input.dtype).repeat(input.shape[0], 1, 1)
        matrix[:, 0, 0] = width / input.shape[-1]
        matrix[:, 1, 1] = height / input.shape[-2]
        matrix[:, 0, 2] = 0.5 * (width / input.shape[-1] - 1.0)
        matrix[:, 1, 2] = 0.5 * (height / input.shape[-2] - 1.0)
        return matrix

    def apply_transform(self, input, params, flags, transform=None):
        _, height, width = max_size_scale(int(input.shape[-2]), int(input.shape[-1]), flags["max_size"],
                                          flags["longest"])
        if (height, width) == tuple(input.shape[-2:]):
            return input
        nearest = flags["resample"] == "nearest"  # pixel centres, as Kornia's Resize and OpenCV
        return kornia.geometry.transform.resize(input, (height, width),
                                                interpolation="nearest-exact" if nearest else flags["resample"],
                                                align_corners=None if nearest else False,
                                                antialias=flags["antialias"])
