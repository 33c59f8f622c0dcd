"""The workbench's own Kornia modules for occlusion ops that kornia.augmentation lacks."""
from __future__ import annotations

import kornia.augmentation as K
import torch

from .arguments import RecordsArguments
from .color import uniform_draws


class WbGridMask(K.IntensityAugmentationBase2D, RecordsArguments):
    """GridMask as DALI's fn.grid_mask draws it (angle 0): a pixel (x, y) is zeroed where
    (x - sx) mod tile < ratio x tile and (y - sy) mod tile < ratio x tile, the grid's shift
    (sx, sy) = floor(u x tile), floor(v x tile) drawn per sample with `random_offset`, else 0.
    Reports the shift as x and y."""

    def __init__(self, tile=64, ratio=0.5, random_offset=True, same_on_batch=False, p=1.0, keepdim=False):
        super().__init__(p=p, same_on_batch=same_on_batch, keepdim=keepdim)
        self.tile, self.ratio, self.random_offset = int(tile), float(ratio), bool(random_offset)

    def generate_parameters(self, batch_shape):
        reach = 1.0 if self.random_offset else 0.0
        draws = uniform_draws((("x", (0.0, reach)), ("y", (0.0, reach))), batch_shape, self.same_on_batch,
                              self.device, self.dtype)
        return {key: torch.floor(value * self.tile) for key, value in draws.items()}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        side = self.ratio * self.tile

        def covered(length, shift):  # (N, length): the grid's squares along one axis
            index = torch.arange(length, device=input.device, dtype=torch.float64)
            return torch.remainder(index[None] - shift.to(input.device, torch.float64).view(-1, 1), self.tile) < side

        zero = covered(height, params["y"])[:, :, None] & covered(width, params["x"])[:, None, :]
        return input.masked_fill(zero[:, None], 0.0)
