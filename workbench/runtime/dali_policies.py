"""Augmentation policies (RandAugment, TrivialAugment, AutoAugment) for DALI in Kornia's conventions
(kornia.augmentation.auto), so that a DALI export and a Kornia export mean the same: each
policy_<op> takes uint8 HWC images and one magnitude per sample (NaN for ops without one); DALI's
auto_aug `select` runs each sample through the op it drew (conditional execution), with auto_aug's
ops where they agree. An export copies what its policy steps call (ops/policies.py writes them):
the ops, and the helpers that pick, measure and report them.
"""
import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.auto_aug import augmentations as auto_aug
from nvidia.dali.pipeline import do_not_convert


# Kornia's (and PIL's) smoothing kernel for sharpness.
_SHARPNESS_KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13


def _on_device(value, images):
    """A per-sample value where arithmetic with `images` can use it (the same device)."""
    return value.gpu() if images.device == "gpu" else value


def _to_uint8(values):
    return fn.cast(dmath.clamp(values, 0.0, 255.0), dtype=types.UINT8)


def policy_rotate(images, degrees):
    return auto_aug.rotate.op(images, degrees, fill_value=0, interp_type=types.INTERP_LINEAR)


def _shear(images, shear):
    """Shear about the image centre, as Kornia does (PIL shears about the corner)."""
    hw = fn.cast(images.shape(), dtype=types.FLOAT)
    matrix = fn.transforms.shear(shear=shear, center=fn.stack(hw[1] * 0.5, hw[0] * 0.5))
    return fn.warp_affine(images, matrix=matrix, fill_value=0, interp_type=types.INTERP_LINEAR, inverse_map=False)


def policy_shear_x(images, degrees):
    factor = 0.0 - dmath.tan(degrees * 0.017453292519943295)  # Kornia's x' = x - tan(angle) * (y - cy)
    return _shear(images, fn.stack(factor, factor * 0.0))


def policy_shear_y(images, degrees):
    factor = 0.0 - dmath.tan(degrees * 0.017453292519943295)
    return _shear(images, fn.stack(factor * 0.0, factor))


def policy_translate_x(images, pixels):
    return auto_aug.translate_x_no_shape.op(images, fn.stack(pixels, pixels * 0.0), fill_value=0,
                                            interp_type=types.INTERP_LINEAR)


def policy_translate_y(images, pixels):
    return auto_aug.translate_y_no_shape.op(images, fn.stack(pixels * 0.0, pixels), fill_value=0,
                                            interp_type=types.INTERP_LINEAR)


def policy_brightness(images, factor):
    return fn.brightness(images, brightness=1.0, brightness_shift=factor - 1.0)  # Kornia's is additive


def policy_contrast(images, factor):
    return fn.contrast(images, contrast=factor, contrast_center=0.0)  # Kornia scales values, no mean


def policy_color(images, factor):
    """Kornia's HSV saturation: scale each pixel's saturation, keep its hue and value."""
    x = fn.cast(images, dtype=types.FLOAT)
    high = fn.reductions.max(x, axis_names="C", keep_dims=True)
    low = fn.reductions.min(x, axis_names="C", keep_dims=True)
    spread = high - low
    saturation = dmath.clamp(spread / (high + (high == 0.0)) * _on_device(factor, images), 0.0, 1.0)
    kept = high * saturation
    return _to_uint8((x - low) * (kept / (spread + (spread == 0.0))) + (high - kept))


def policy_sharpness(images, factor):
    """Blend with the smoothed image (factor 0: smoothed, 1: unchanged); the one-pixel border
    stays as it is, as in Kornia and PIL."""
    x = fn.cast(images, dtype=types.FLOAT)
    hw = images.shape(dtype=types.INT32)
    kernel = types.Constant(_SHARPNESS_KERNEL, device=images.device)
    smooth = dmath.clamp(fn.filter(x, kernel, mode="valid"), 0.0, 255.0)
    inner = fn.slice(x, start=[1, 1], shape=fn.stack(hw[0] - 2, hw[1] - 2), axis_names="HW")
    change = (inner - smooth) * _on_device(factor, images) + smooth - inner
    change = fn.slice(change, start=[-1, -1], shape=fn.stack(hw[0], hw[1]), axis_names="HW",
                      out_of_bounds_policy="pad", fill_values=0.0)
    return _to_uint8(x + change)


def policy_posterize(images, bits):
    mask = fn.cast(256.0 - dmath.pow(2.0, 8.0 - dmath.floor(bits)), dtype=types.UINT8)  # 0 bits: black
    return images & _on_device(mask, images)


def policy_solarize(images, threshold):
    return auto_aug.solarize.op(images, _on_device(threshold * 255.0, images))


def policy_equalize(images, _):
    return fn.equalize(images)  # auto_aug's equalize, without its deprecated alias (OpenCV's formula)


def policy_auto_contrast(images, _):
    return auto_aug.auto_contrast.op(images, None)


def policy_invert(images, _):
    return auto_aug.invert.op(images, None)


def policy_pick(keys, size, count):
    """`count` different op positions per sample from `size` uniform keys: the positions whose
    keys rank 0, 1, ... (a random permutation's first `count`, as Kornia's torch.randperm)."""
    rank = fn.reductions.sum(fn.cast(fn.reshape(keys, shape=[1, size]) < fn.reshape(keys, shape=[size, 1]),
                                     dtype=types.INT32), axes=1)
    positions = types.Constant(np.arange(size, dtype=np.int32))
    return fn.stack(*[fn.reductions.sum(positions * (rank == level), axes=0) for level in range(count)])


def policy_lookup(values, index):
    """values[index] per sample."""
    values = np.asarray(values)
    return types.Constant(values.astype(np.int32 if values.dtype.kind in "iu" else np.float32))[index]


def policy_magnitude(images, row, table, u, coin=None):
    """Each sample's magnitude from row `row` of `table`, as Kornia's policies compute it:
    low + (high - low) * u, floored where the op keeps whole bits, times the width or the height
    for translations (in pixels), negated where the op takes a random sign and `coin` is 1;
    NaN for ops without one. Columns: low, high, symmetric, axis (0 none, 1 width, 2 height),
    whole, has a magnitude."""
    rows = np.asarray(table, dtype=np.float32).reshape(-1, 6)

    def column(j):
        return types.Constant(np.ascontiguousarray(rows[:, j]))[row]

    low = types.Constant(np.where(rows[:, 5] > 0, rows[:, 0], np.nan).astype(np.float32))[row]
    value = low + (column(1) - low) * u
    value = value - column(4) * (value - dmath.floor(value))
    hw = fn.cast(images.shape(), dtype=types.FLOAT)
    axis = column(3)
    value = value * (1.0 + (axis == 1.0) * (hw[1] - 1.0) + (axis == 2.0) * (hw[0] - 1.0))
    if coin is None:
        return value
    return value * (1.0 - 2.0 * column(2) * coin)


@do_not_convert
def policy_to_levels(images, scale):
    """Images in units of `scale` (1.0 after a Normalize) as the 0-255 uint8 levels the policy ops take,
    clamped as Kornia's ops clamp values to [0, 1]."""
    return _to_uint8(images * (255.0 / scale))


@do_not_convert
def policy_from_levels(images, scale):
    """The policy's uint8 levels back in units of `scale` (float)."""
    return fn.cast(images, dtype=types.FLOAT) * (scale / 255.0)


@do_not_convert
def policy_reports(choice, magnitudes, applied=None):
    """(policy_choice, op_applied, op_magnitude), what a policy step reports per sample: the
    candidates it drew (`choice`: a node of positions, or a list of scalar nodes to stack), whether
    each of their ops ran (`applied`: a list of 0/1 nodes; None: every candidate drawn ran) and the
    magnitudes they used (a list of nodes)."""
    if isinstance(choice, list):
        choice = fn.stack(*choice)
    ran = fn.cast(choice >= 0 if applied is None else fn.stack(*applied), dtype=types.FLOAT)
    return choice, ran, fn.stack(*magnitudes)
