"""The workbench's own Kornia modules for batch mixing that kornia.augmentation lacks."""
from __future__ import annotations

import kornia.augmentation as K
import torch

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
