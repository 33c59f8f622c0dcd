"""torchvision's augmentation policies (v2.RandAugment, v2.TrivialAugmentWide, v2.AutoAugment) as Kornia
modules, in torchvision's own semantics: what each draws (runtime/torchvision_policy_space.py) and what
each op does to uint8 images (torchvision_policy_ops.py here), per image as torchvision draws them.

The modules take the batch in [0, 1] as every Kornia step does, run the ops on its 8-bit levels (as
torchvision runs them on uint8 tensors, truncating where it truncates) and give the levels back in
[0, 1]. They report per sample what every backend reports for a policy: `policy_choice` (the drawn
candidates, by position), `op_applied` and `op_magnitude` (in the units of torchvision_policy_space).
"""
from __future__ import annotations

import kornia.augmentation as K
import numpy as np
import torch

from ..targets import torchvision_policy, translation
from ..torchvision_policy_space import TV_SPACE_OPS, tv_space_reported, tv_space_sub_policies
from .arguments import RecordsArguments
from .torchvision_policy_ops import tv_policy_op


class WbTorchvisionPolicy(K.GeometricAugmentationBase2D):
    """What the three policies share: the ops their draws name (`op_names`), run in order where
    `op_applied`, on each image's 8-bit levels; the map of each image's rotations, shears and shifts."""

    def __init__(self, interpolation="nearest", p=1.0):
        super().__init__(p=p)
        self.interpolation = str(interpolation)

    def op_names(self, choice):
        """The op names the drawn candidates `choice` (one sample's positions) stand for, in order."""
        raise NotImplementedError

    def _ran(self, params):
        """Per sample, the (op, magnitude) pairs that ran, in order."""
        rows = zip(params["policy_choice"].tolist(), params["op_applied"].tolist(), params["op_magnitude"].tolist())
        return [[(name, magnitude) for name, ran, magnitude in zip(self.op_names(choice), applied, magnitudes)
                 if ran > 0.5] for choice, applied, magnitudes in rows]

    def compute_transformation(self, input, params, flags):
        height, width = input.shape[-2:]
        maps = []
        for ran in self._ran(params):
            row = {"ops": [name for name, _ in ran], "magnitudes": [magnitude for _, magnitude in ran]}
            edges = torchvision_policy({}, row, height, width, height, width)
            maps.append(translation(-0.5, -0.5) @ edges @ translation(0.5, 0.5))  # pixel centres at integers
        return torch.as_tensor(np.stack(maps), device=input.device, dtype=input.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        levels = (input * 255.0).round_().clamp_(0.0, 255.0).to(torch.uint8)
        out = []
        for image, ran in zip(levels, self._ran(params)):
            for name, magnitude in ran:
                image = tv_policy_op(image, name, magnitude, self.interpolation)
            out.append(image)
        return torch.stack(out).to(input.dtype).div_(255.0)

    @staticmethod
    def reports(choice, applied, magnitudes):
        """The per-sample report from lists of rows (one per sample)."""
        return {"policy_choice": torch.tensor(choice, dtype=torch.int64),
                "op_applied": torch.tensor(applied, dtype=torch.float32),
                "op_magnitude": torch.tensor(magnitudes, dtype=torch.float64)}


class WbTorchvisionRandAugment(WbTorchvisionPolicy, RecordsArguments):
    """v2.RandAugment: `num_ops` ops per image drawn with replacement from torchvision's 14 (identity
    included), each at bin `magnitude` of 31, the signed ones negated at a coin flip."""

    def __init__(self, num_ops=2, magnitude=9, interpolation="nearest", p=1.0):
        super().__init__(interpolation=interpolation, p=p)
        self.num_ops, self.magnitude = int(num_ops), int(magnitude)

    def generate_parameters(self, batch_shape):
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        ops = torch.randint(len(TV_SPACE_OPS), (count, self.num_ops))
        coins = torch.rand(count, self.num_ops) <= 0.5
        magnitudes = [[tv_space_reported("rand", TV_SPACE_OPS[op], self.magnitude, 31, height, width, negate=coin)
                       for op, coin in zip(row_ops, row_coins)] for row_ops, row_coins in
                      zip(ops.tolist(), coins.tolist())]
        return self.reports(ops.tolist(), [[1.0] * self.num_ops] * count, magnitudes)

    def op_names(self, choice):
        return [TV_SPACE_OPS[int(k)] for k in choice]


class WbTorchvisionTrivialAugmentWide(WbTorchvisionPolicy, RecordsArguments):
    """v2.TrivialAugmentWide: one op per image of torchvision's 14 (identity included) at a bin drawn
    uniformly of `num_magnitude_bins`, the signed ones negated at a coin flip."""

    def __init__(self, num_magnitude_bins=31, interpolation="nearest", p=1.0):
        super().__init__(interpolation=interpolation, p=p)
        self.num_magnitude_bins = int(num_magnitude_bins)

    def generate_parameters(self, batch_shape):
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        ops = torch.randint(len(TV_SPACE_OPS), (count,)).tolist()
        bins = torch.randint(self.num_magnitude_bins, (count,)).tolist()
        coins = (torch.rand(count) <= 0.5).tolist()
        magnitudes = [[tv_space_reported("wide", TV_SPACE_OPS[op], b, self.num_magnitude_bins, height, width,
                                         negate=coin)] for op, b, coin in zip(ops, bins, coins)]
        return self.reports([[op] for op in ops], [[1.0]] * count, magnitudes)

    def op_names(self, choice):
        return [TV_SPACE_OPS[int(choice[0])]]


class WbTorchvisionAutoAugment(WbTorchvisionPolicy, RecordsArguments):
    """v2.AutoAugment: one of `sub_policies` per image (each a sequence of (op, probability, bin or
    None)), each stage run where a uniform draw is at most its probability, at its bin of 10 in
    RandAugment's space, the signed ops negated at a coin flip."""

    def __init__(self, sub_policies=(), interpolation="nearest", p=1.0):
        super().__init__(interpolation=interpolation, p=p)
        self.sub_policies = tv_space_sub_policies(sub_policies)

    def generate_parameters(self, batch_shape):
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        stages = max(len(sub) for sub in self.sub_policies)
        chosen = torch.randint(len(self.sub_policies), (count,)).tolist()
        gates, coins = torch.rand(count, stages).tolist(), (torch.rand(count, stages) <= 0.5).tolist()
        applied, magnitudes = [], []
        for index, sample_gates, sample_coins in zip(chosen, gates, coins):
            sub = self.sub_policies[index]
            applied.append([1.0 if gate <= prob else 0.0 for (_, prob, _), gate in zip(sub, sample_gates)])
            magnitudes.append([float("nan") if b is None else
                               tv_space_reported("rand", name, b, 10, height, width, negate=coin)
                               for (name, _, b), coin in zip(sub, sample_coins)])
        return self.reports([[index] for index in chosen], applied, magnitudes)

    def op_names(self, choice):
        return [stage[0] for stage in self.sub_policies[int(choice[0])]]
