"""The workbench's own Kornia modules for batch mixing that kornia.augmentation lacks."""
from __future__ import annotations

import kornia.augmentation as K
import torch

from ..torchvision_mixing import tv_cutmix_box, tv_roll_partners
from .arguments import RecordsArguments


class WbBetaMixUp(K.RandomMixUpV2, RecordsArguments):
    """Kornia's RandomMixUpV2 (its partners, p and records) whose partner share is drawn from
    Beta(alpha, alpha), as torchvision's MixUp and the paper draw lambda (Kornia's own draws it
    uniformly from lambda_val); drawn with torch's generator after the partners."""

    def __init__(self, lambda_val=(0.0, 1.0), alpha=1.0, p=1.0):
        super().__init__(lambda_val=lambda_val, p=p)
        self.alpha = float(alpha)

    def generate_parameters(self, batch_shape):
        params = super().generate_parameters(batch_shape)
        concentration = torch.tensor([self.alpha], dtype=torch.float64)
        draws = torch.distributions.Beta(concentration, concentration).sample((int(batch_shape[0]),))[:, 0]
        params["mixup_lambdas"] = draws.to(params["mixup_lambdas"])
        return params


def tv_lambda(alpha):
    """torchvision's MixUp and CutMix draw: one lambda ~ Beta(alpha, alpha) from a float32 distribution,
    sampled with torch's generator as torchvision samples it (the same value for the same seed)."""
    concentration = torch.tensor([float(alpha)])
    return float(torch.distributions.Beta(concentration, concentration).sample(()))


class WbTorchvisionMixUp(K.RandomMixUpV2, RecordsArguments):
    """torchvision's MixUp (v2.MixUp) on a batch: each image becomes lambda x itself + (1 - lambda) x
    the image before it (its partner, see tv_roll_partners), one lambda ~ Beta(alpha, alpha) for the
    batch (tv_lambda); reported as Kornia's MixUp is, partner and weight = 1 - lambda."""

    def __init__(self, alpha=1.0, p=1.0):
        super().__init__(p=p)
        self.alpha = float(alpha)

    def generate_parameters(self, batch_shape):
        count = int(batch_shape[0])
        weight = 1.0 - tv_lambda(self.alpha)
        return {"mixup_pairs": torch.tensor(tv_roll_partners(count)),
                "mixup_lambdas": torch.full((count,), weight, dtype=torch.float64)}


class WbTorchvisionCutMix(K.RandomCutMixV2, RecordsArguments):
    """torchvision's CutMix (v2.CutMix) on a batch: one lambda ~ Beta(alpha, alpha) (tv_lambda) and one
    centre drawn as torchvision draws them, one box (tv_cutmix_box) pasted into each image from the
    image before it (tv_roll_partners); reported as Kornia's CutMix is (partner, weight, box)."""

    def __init__(self, alpha=1.0, p=1.0):
        super().__init__(p=p, use_correct_lambda=True)
        self.alpha = float(alpha)

    def generate_parameters(self, batch_shape):
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        lam = tv_lambda(self.alpha)
        r_x, r_y = int(torch.randint(width, size=(1,))), int(torch.randint(height, size=(1,)))
        x0, y0, x1, y1 = tv_cutmix_box(lam, r_x, r_y, height, width)
        # Kornia's corners, clockwise from the top left, far ones inclusive (an empty box covers nothing).
        corners = torch.tensor([[x0, y0], [x1 - 1, y0], [x1 - 1, y1 - 1], [x0, y1 - 1]], dtype=torch.float32)
        return {"mix_pairs": torch.tensor(tv_roll_partners(count)).reshape(1, count),
                "crop_src": corners.expand(1, count, 4, 2).clone(),
                "image_shape": torch.tensor([height, width], dtype=torch.float32)}


class WbTorchvisionMixUpOrCutMix(K.RandomMixUpV2, RecordsArguments):
    """torchvision's RandomChoice([MixUp, CutMix]) on a batch (its classification reference mixes each
    batch so, in the collate): one of the two per batch, drawn as RandomChoice draws it (torch.multinomial
    over its weights, in its list's order: `cutmix_first` when CutMix comes first), then that one's draws
    (WbTorchvisionMixUp, WbTorchvisionCutMix); reported as either is, with `choice` (0 MixUp, 1 CutMix)
    and CutMix's box (an empty one for MixUp)."""

    def __init__(self, mixup_alpha=1.0, cutmix_alpha=1.0, mixup_share=0.5, cutmix_first=False, p=1.0):
        super().__init__(p=p)
        self.mixup, self.cutmix = WbTorchvisionMixUp(mixup_alpha), WbTorchvisionCutMix(cutmix_alpha)
        self.mixup_share, self.cutmix_first = float(mixup_share), bool(cutmix_first)

    def generate_parameters(self, batch_shape):
        share = self.mixup_share
        weights = [1.0 - share, share] if self.cutmix_first else [share, 1.0 - share]
        index = int(torch.multinomial(torch.tensor(weights), 1))
        cutmix = index == (0 if self.cutmix_first else 1)
        params = (self.cutmix if cutmix else self.mixup).generate_parameters(batch_shape)
        params["choice"] = torch.full((int(batch_shape[0]),), float(cutmix), dtype=torch.float64)
        return params

    def apply_transform(self, input, params, maybe_flags=None):
        if "crop_src" in params:
            return self.cutmix.apply_transform(input, params, maybe_flags)
        return super().apply_transform(input, params, maybe_flags)
