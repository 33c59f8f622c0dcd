"""RandAugment, TrivialAugment and AutoAugment as Albumentations transforms, in Kornia's conventions
(kornia.augmentation.auto, the workbench's reference: see ops/policies.py), which Albumentations 2.0.8
has no class for. The export writes WbRandAugment, WbTrivialAugment and WbAutoAugment (OWN_TRANSFORMS in
codegen/albumentations.py) and copies them, with what they use, from here.

Each draws per image from the transform's own generator (`py_random`, seeded as every transform of the
chain is), as DALI's lowering draws per sample (Kornia draws a policy's ops once per batch), and reports
what it drew as every backend does: `policy_choice` (the chosen candidates, by position), `op_applied`
(1 per op of those that ran) and `op_magnitude` (the magnitude each used, NaN for ops without one;
rotate and shear in degrees, translations in pixels, posterize in whole bits).

The ops run in float32 on values in [0, 1] as Kornia's do (uint8 levels / 255; a float image, after a
Normalize, clamped to [0, 1] first, as Kornia's ops clamp), one after the other, and the result is
rounded to the image's levels once at the end. Rotations, shears and translations are Kornia's warps
with align_corners=True (about the centre of the pixel centres), bilinear, zero outside, resampled by
OpenCV from the very matrices runtime/targets.py moves boxes, keypoints and masks with; equalize is
Kornia's (PIL's) on 8-bit levels.

Example (seed 0 draws the second op, posterize to 2 bits: 200 keeps 128 + 64):
    >>> t = WbTrivialAugment(ops={"invert": None, "posterize": [2.0, 2.0]}, p=1.0)
    >>> t.set_random_seed(0)
    >>> out = t(image=np.full((4, 4, 3), 200, np.uint8))["image"]
    >>> t.params["policy_choice"], t.params["op_magnitude"], int(out[0, 0, 0])
    ([1], [2.0], 192)
"""
import math
import os

# Importing Albumentations otherwise asks PyPI for a newer version (see albumentations_program).
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import albumentations as A
import cv2
import numpy as np

from .targets import policy, translation

# Kornia's (and PIL's) smoothing kernel for sharpness.
WB_POLICY_SHARPNESS_KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / np.float32(13)


def wb_policy_to_unit(img):
    """An image as float32 values in [0, 1]: uint8 levels / 255 (as Kornia's policies see them), a
    float image (after a Normalize) clamped to [0, 1]."""
    if img.dtype == np.uint8:
        return img.astype(np.float32) / np.float32(255)
    return np.clip(img.astype(np.float32), 0.0, 1.0)


def wb_policy_from_unit(x, dtype):
    """Values in [0, 1] back as an image of `dtype`: uint8 rounded to the nearest level, floats as they are."""
    if dtype == np.uint8:
        return np.rint(np.clip(x, 0.0, 1.0) * np.float32(255)).astype(np.uint8)
    return x.astype(dtype, copy=False)


def wb_policy_warp(x, name, magnitude):
    """Rotate (degrees, counter-clockwise), shear_x / shear_y (degrees) or translate_x / translate_y
    (pixels) about the centre, as Kornia's RandomRotation / RandomShear / RandomTranslate with
    align_corners=True: bilinear, 0 outside. The map is targets.policy's (pixel edges), rewritten
    with pixel centres at integers for OpenCV."""
    height, width = x.shape[:2]
    edges = policy({}, {"ops": [name], "magnitudes": [magnitude]}, height, width, height, width)
    centres = translation(-0.5, -0.5) @ edges @ translation(0.5, 0.5)
    out = cv2.warpAffine(x, centres[:2], (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                         borderValue=0)
    return out.reshape(x.shape)


def wb_policy_color(x, factor):
    """Kornia's adjust_saturation (HSV): each pixel's saturation times `factor` (at most 1), its hue
    and value kept; written without the round trip through HSV."""
    high = x.max(axis=2, keepdims=True)
    low = x.min(axis=2, keepdims=True)
    spread = high - low
    saturation = np.clip(spread / np.where(high == 0, np.float32(1), high) * np.float32(factor), 0.0, 1.0)
    kept = high * saturation
    return np.clip((x - low) * (kept / np.where(spread == 0, np.float32(1), spread)) + (high - kept), 0.0, 1.0)


def wb_policy_sharpness(x, factor):
    """Kornia's sharpness: blend with the 3x3 smoothing (clamped to [0, 1]; the one-pixel border keeps
    its values) by `factor` (0 smoothed, 1 unchanged), clamped to [0, 1]."""
    if x.shape[0] < 3 or x.shape[1] < 3:
        return x
    smooth = x.copy()
    blurred = cv2.filter2D(x, -1, WB_POLICY_SHARPNESS_KERNEL, borderType=cv2.BORDER_REFLECT_101).reshape(x.shape)
    smooth[1:-1, 1:-1] = np.clip(blurred[1:-1, 1:-1], 0.0, 1.0)
    return np.clip(smooth + (x - smooth) * np.float32(factor), 0.0, 1.0)


def wb_policy_levels(x):
    """The 8-bit level each value is counted in, as Kornia's posterize and equalize read it:
    int(value * 255)."""
    return np.clip(x * np.float32(255), 0, 255).astype(np.uint8)


def wb_policy_posterize(x, bits):
    """Keep the top int(bits) bits of each 8-bit level (0 bits: black), as Kornia's posterize."""
    bits = int(bits)
    if bits >= 8:
        return x
    mask = np.uint8(0 if bits <= 0 else 256 - 2 ** (8 - bits))
    return (wb_policy_levels(x) & mask).astype(np.float32) / np.float32(255)


def wb_policy_equalize(x):
    """Kornia's equalize (PIL's ImageOps.equalize), channel by channel on the 8-bit levels: the
    lookup (cumulative count + step // 2) // step of the histogram shifted by one level, step =
    (pixels - the last level's count) // 255; a channel whose step is 0 is left as it is."""
    levels = wb_policy_levels(x)
    out = x.copy()
    for c in range(x.shape[2]):
        histogram = np.bincount(levels[:, :, c].ravel(), minlength=256).astype(np.int64)
        last = histogram[np.flatnonzero(histogram)[-1]]
        step = (int(histogram.sum()) - int(last)) // 255
        if step == 0:
            continue
        lut = np.concatenate([[0], (np.cumsum(histogram) + step // 2) // step])[:256]
        out[:, :, c] = np.clip(lut, 0, 255).astype(np.float32)[levels[:, :, c]] / np.float32(255)
    return out


def wb_policy_auto_contrast(x):
    """Kornia's RandomAutoContrast: each channel stretched to [0, 1] by its own minimum and maximum,
    (x - min) / (max - min + 1e-6)."""
    low = x.min(axis=(0, 1), keepdims=True)
    high = x.max(axis=(0, 1), keepdims=True)
    return np.clip((x - low) / (high - low + np.float32(1e-6)), 0.0, 1.0)


def wb_policy_op(x, name, magnitude):
    """Op `name` of the policies' op set on float32 HWC values in [0, 1] at `magnitude` (in the
    reported units; ignored by the ops without one)."""
    if name in ("rotate", "shear_x", "shear_y", "translate_x", "translate_y"):
        return wb_policy_warp(x, name, magnitude)
    if name == "brightness":
        return np.clip(x + np.float32(magnitude - 1.0), 0.0, 1.0)  # Kornia's brightness adds
    if name == "contrast":
        return np.clip(x * np.float32(magnitude), 0.0, 1.0)  # ... and its contrast multiplies, no mean
    if name == "color":
        return wb_policy_color(x, magnitude)
    if name == "sharpness":
        return wb_policy_sharpness(x, magnitude)
    if name == "posterize":
        return wb_policy_posterize(x, magnitude)
    if name == "solarize":
        return np.where(x < np.float32(magnitude), x, np.float32(1) - x)
    if name == "equalize":
        return wb_policy_equalize(x)
    if name == "auto_contrast":
        return wb_policy_auto_contrast(x)
    if name == "invert":
        return np.float32(1) - x
    raise ValueError(f"policy op {name!r} is not one of the workbench's policy ops")


def wb_policy_apply(img, names, magnitudes, applied):
    """`img` (HWC, uint8 or float) through the ops `names` whose `applied` flag is 1, in order, each at
    its magnitude; the image's dtype back."""
    x = wb_policy_to_unit(img)
    for name, magnitude, ran in zip(names, magnitudes, applied):
        if ran > 0.5:
            x = wb_policy_op(x, name, magnitude)
    return wb_policy_from_unit(x, img.dtype)


def wb_policy_magnitude(name, value, negate, height, width):
    """A drawn magnitude `value` in the reported units: NaN for an op without one (`value` None), whole
    bits for posterize (floored), pixels for translations (`value` is a fraction of the width or the
    height), negated where `negate`."""
    if value is None:
        return math.nan
    value = float(value)
    if name == "posterize":
        value = float(math.floor(value))
    elif name == "translate_x":
        value *= width
    elif name == "translate_y":
        value *= height
    return -value if negate else value


class WbPolicy(A.ImageOnlyTransform):
    """What the three policies share: their draws read the image's size (translations in pixels), and
    they apply the ops their draws name (`op_names(policy_choice)`) at the drawn magnitudes, those that
    ran (op_applied) in order."""

    @property
    def targets_as_params(self):
        return ["image"]

    def op_names(self, policy_choice):
        raise NotImplementedError

    def apply(self, img, policy_choice, op_applied, op_magnitude, **params):
        return wb_policy_apply(img, self.op_names(policy_choice), op_magnitude, op_applied)


class WbRandAugment(WbPolicy):
    """Kornia's RandAugment, drawn per image: `n` different ops of `ops` ({op: its magnitude at the
    chain's strength, None for ops without one; translations as fractions of the size}), in the order
    drawn, each at its magnitude, negated at a coin flip for the ops in `signed`."""

    def __init__(self, ops, n=2, signed=(), p=1.0):
        super().__init__(p=p)
        self.ops = {str(name): (None if value is None else float(value)) for name, value in dict(ops).items()}
        self.n, self.signed = min(int(n), len(self.ops)), tuple(str(name) for name in signed)

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        names = list(self.ops)
        chosen = self.py_random.sample(range(len(names)), self.n)
        magnitudes = []
        for position in chosen:
            name = names[position]
            coin = self.py_random.random() < 0.5  # drawn for every op, signed or not
            magnitudes.append(wb_policy_magnitude(name, self.ops[name], coin and name in self.signed, height, width))
        return {"policy_choice": chosen, "op_applied": [1.0] * len(chosen), "op_magnitude": magnitudes}

    def op_names(self, policy_choice):
        names = list(self.ops)
        return [names[k] for k in policy_choice]

    def get_transform_init_args_names(self):
        return ("ops", "n", "signed")


class WbTrivialAugment(WbPolicy):
    """Kornia's TrivialAugment, drawn per image: one op of `ops` ({op: [lo, hi], None for ops without
    a magnitude; translations as fractions of the size}) at a magnitude uniform in [lo, hi], negated at
    a coin flip for the ops in `signed` (whose range runs from 0)."""

    def __init__(self, ops, signed=(), p=1.0):
        super().__init__(p=p)
        self.ops = {str(name): (None if value is None else (float(value[0]), float(value[1])))
                    for name, value in dict(ops).items()}
        self.signed = tuple(str(name) for name in signed)

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        names = list(self.ops)
        position = self.py_random.randrange(len(names))
        u, coin = self.py_random.random(), self.py_random.random() < 0.5
        name, span = names[position], self.ops[names[position]]
        value = None if span is None else span[0] + (span[1] - span[0]) * u
        magnitude = wb_policy_magnitude(name, value, coin and name in self.signed, height, width)
        return {"policy_choice": [position], "op_applied": [1.0], "op_magnitude": [magnitude]}

    def op_names(self, policy_choice):
        return [list(self.ops)[policy_choice[0]]]

    def get_transform_init_args_names(self):
        return ("ops", "signed")


class WbAutoAugment(WbPolicy):
    """Kornia's AutoAugment, drawn per image: one of `sub_policies` (each a sequence of (op,
    probability, [lo, hi] or None) stages), each stage run with its probability at a magnitude uniform
    in [lo, hi] (the magnitude bin's interval; translations as fractions of the size)."""

    def __init__(self, sub_policies, p=1.0):
        super().__init__(p=p)
        self.sub_policies = tuple(tuple((str(name), float(prob), None if span is None else
                                         (float(span[0]), float(span[1]))) for name, prob, span in sub)
                                  for sub in sub_policies)

    def get_params_dependent_on_data(self, params, data):
        height, width = params["shape"][:2]
        index = self.py_random.randrange(len(self.sub_policies))
        applied, magnitudes = [], []
        for name, prob, span in self.sub_policies[index]:
            gate, u = self.py_random.random(), self.py_random.random()
            value = None if span is None else span[0] + (span[1] - span[0]) * u
            applied.append(1.0 if gate < prob else 0.0)
            magnitudes.append(wb_policy_magnitude(name, value, False, height, width))
        return {"policy_choice": [index], "op_applied": applied, "op_magnitude": magnitudes}

    def op_names(self, policy_choice):
        return [stage[0] for stage in self.sub_policies[policy_choice[0]]]

    def get_transform_init_args_names(self):
        return ("sub_policies",)
