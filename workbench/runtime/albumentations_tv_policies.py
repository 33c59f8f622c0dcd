"""torchvision's augmentation policies (v2.RandAugment, v2.TrivialAugmentWide, v2.AutoAugment) as
Albumentations transforms, in torchvision's own semantics: what each draws (torchvision_policy_space.py)
and what each op does to uint8 images (torchvision_policy_ops.py). The export writes
WbTorchvisionRandAugment, WbTorchvisionTrivialAugmentWide and WbTorchvisionAutoAugment and copies them,
with what they use, from here.

Each draws per image, as torchvision does, from the transform's own generator (`py_random`, seeded as
every transform of the chain is), and reports what every backend reports for a policy (see
albumentations_policies.WbPolicy). The ops run on the image's 8-bit levels, as torchvision runs them on
uint8 tensors; a float image (after a Normalize) is taken as levels / 255, clamped, and given back so.

Example (seed 19 draws posterize, position 10 of the 14, at bin 9 of 31: 7 bits kept, 201 becomes 200):
    >>> t = WbTorchvisionRandAugment(num_ops=1, magnitude=9, p=1.0)
    >>> t.set_random_seed(19)
    >>> out = t(image=np.full((4, 4, 3), 201, np.uint8))["image"]
    >>> t.params["policy_choice"], t.params["op_magnitude"], int(out[0, 0, 0])
    ([10], [7.0], 200)
"""
import math

import numpy as np

from .albumentations_policies import WbPolicy
from .torchvision_policy_ops import wb_tv_policy_op
from .torchvision_policy_space import TV_SPACE_OPS, tv_space_reported, tv_space_sub_policies


def wb_tv_policy_apply(img, names, magnitudes, applied, interpolation):
    """`img` (HWC, uint8, or float in [0, 1]) through the ops `names` whose `applied` flag is 1, in order,
    each at its magnitude, on 8-bit levels; the image's dtype back."""
    if img.dtype == np.uint8:
        levels = img
    else:
        levels = np.rint(np.clip(img.astype(np.float32), 0.0, 1.0) * np.float32(255)).astype(np.uint8)
    for name, magnitude, ran in zip(names, magnitudes, applied):
        if ran > 0.5:
            levels = wb_tv_policy_op(levels, name, magnitude, interpolation)
    if img.dtype == np.uint8:
        return levels
    return (levels.astype(np.float32) / np.float32(255)).astype(img.dtype, copy=False)


class WbTorchvisionPolicy(WbPolicy):
    """The three policies' common part: WbPolicy's draws and reports, torchvision's ops."""

    def __init__(self, interpolation="nearest", p=1.0):
        super().__init__(p=p)
        self.interpolation = str(interpolation)

    def apply(self, img, policy_choice, op_applied, op_magnitude, **params):
        return wb_tv_policy_apply(img, self.op_names(policy_choice), op_magnitude, op_applied, self.interpolation)


class WbTorchvisionRandAugment(WbTorchvisionPolicy):
    """v2.RandAugment, per image: `num_ops` ops drawn with replacement from torchvision's 14 (identity
    included), each at bin `magnitude` of 31, the signed ones negated at a coin flip."""

    def __init__(self, num_ops=2, magnitude=9, interpolation="nearest", p=1.0):
        super().__init__(interpolation=interpolation, p=p)
        self.num_ops, self.magnitude = int(num_ops), int(magnitude)

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        chosen, magnitudes = [], []
        for _ in range(self.num_ops):
            position = self.py_random.randrange(len(TV_SPACE_OPS))
            coin = self.py_random.random() <= 0.5
            chosen.append(position)
            magnitudes.append(tv_space_reported("rand", TV_SPACE_OPS[position], self.magnitude, 31, height, width,
                                                negate=coin))
        return {"policy_choice": chosen, "op_applied": [1.0] * self.num_ops, "op_magnitude": magnitudes}

    def op_names(self, policy_choice):
        return [TV_SPACE_OPS[int(k)] for k in policy_choice]

    def get_transform_init_args_names(self):
        return ("num_ops", "magnitude", "interpolation")


class WbTorchvisionTrivialAugmentWide(WbTorchvisionPolicy):
    """v2.TrivialAugmentWide, per image: one op of torchvision's 14 (identity included) at a bin drawn
    uniformly of `num_magnitude_bins`, the signed ones negated at a coin flip."""

    def __init__(self, num_magnitude_bins=31, interpolation="nearest", p=1.0):
        super().__init__(interpolation=interpolation, p=p)
        self.num_magnitude_bins = int(num_magnitude_bins)

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        position = self.py_random.randrange(len(TV_SPACE_OPS))
        magnitude_bin = self.py_random.randrange(self.num_magnitude_bins)
        coin = self.py_random.random() <= 0.5
        magnitude = tv_space_reported("wide", TV_SPACE_OPS[position], magnitude_bin, self.num_magnitude_bins,
                                      height, width, negate=coin)
        return {"policy_choice": [position], "op_applied": [1.0], "op_magnitude": [magnitude]}

    def op_names(self, policy_choice):
        return [TV_SPACE_OPS[int(policy_choice[0])]]

    def get_transform_init_args_names(self):
        return ("num_magnitude_bins", "interpolation")


class WbTorchvisionAutoAugment(WbTorchvisionPolicy):
    """v2.AutoAugment, per image: one of `sub_policies` (each a sequence of (op, probability, bin or
    None)), each stage run where a uniform draw is at most its probability, at its bin of 10 in
    RandAugment's space, the signed ops negated at a coin flip."""

    def __init__(self, sub_policies=(), interpolation="nearest", p=1.0):
        super().__init__(interpolation=interpolation, p=p)
        self.sub_policies = tv_space_sub_policies(sub_policies)

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        index = self.py_random.randrange(len(self.sub_policies))
        applied, magnitudes = [], []
        for name, prob, magnitude_bin in self.sub_policies[index]:
            gate, coin = self.py_random.random(), self.py_random.random() <= 0.5
            applied.append(1.0 if gate <= prob else 0.0)
            magnitudes.append(math.nan if magnitude_bin is None else
                              tv_space_reported("rand", name, magnitude_bin, 10, height, width, negate=coin))
        return {"policy_choice": [index], "op_applied": applied, "op_magnitude": magnitudes}

    def op_names(self, policy_choice):
        return [stage[0] for stage in self.sub_policies[int(policy_choice[0])]]

    def get_transform_init_args_names(self):
        return ("sub_policies", "interpolation")
