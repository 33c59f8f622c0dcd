"""DALI blur and noise functions (ops/filters.py): the Gaussian blur and noise, salt and pepper, JPEG coding,
Kornia's motion blur and an exact median blur, where DALI has no one operator or none that runs on the CPU.

Images come in the pipeline's units: 0-255 uint8 before a Normalize (`scale` 255.0), [0, 1]-based floats
after it (`scale` 1.0). Borders mirror without repeating the edge pixel (reflect_101), as Kornia's.
"""
import math

import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert


@do_not_convert
def blur_gaussian(images, sigma, window_size):
    """The images blurred by each sample's `sigma` in a window_size x window_size kernel: one odd size (a
    number) for every sample, or each sample's drawn size (a float node)."""
    if not isinstance(window_size, (int, float)):
        window_size = fn.cast(window_size, dtype=types.INT32)
    return fn.gaussian_blur(images, sigma=sigma, window_size=window_size)


@do_not_convert
def noise_gaussian(images, std, scale, seed):
    """The images plus zero-mean Gaussian noise of each sample's `std` ([0, 1] units, so x `scale`)."""
    return fn.noise.gaussian(images, stddev=std * scale, seed=seed)


@do_not_convert
def noise_salt_and_pepper(images, amount, salt_vs_pepper, scale, seed):
    """The images with a share `amount` of the pixels (all channels alike) set to white, the share
    `salt_vs_pepper` of them, or black: the white of the images' units (1.0 x `scale`), as Kornia's 1.0."""
    return fn.noise.salt_and_pepper(images, prob=amount, salt_vs_pepper=salt_vs_pepper, salt_val=1.0 * scale,
                                    pepper_val=0.0, per_channel=False, seed=seed)


@do_not_convert
def jpeg_quality(draw):
    """The whole-number quality DALI codes with nearest to each sample's drawn one (halves up)."""
    return dmath.floor(draw + 0.5)


@do_not_convert
def jpeg_compress(images, quality, uint8):
    """The images coded and decoded as JPEG at each sample's whole-number `quality`. DALI codes 8-bit
    images only: after a Normalize the values are coded as Kornia does, clamped to [0, 1] and rounded to
    8 bits, and come back as [0, 1] floats."""
    if uint8:
        return fn.jpeg_compression_distortion(images, quality=fn.cast(quality, dtype=types.INT32))
    levels = fn.cast(dmath.floor(dmath.clamp(images, 0.0, 1.0) * 255.0 + 0.5), dtype=types.UINT8)
    coded = fn.jpeg_compression_distortion(levels, quality=fn.cast(quality, dtype=types.INT32))
    return fn.cast(coded, dtype=types.FLOAT) / 255.0


# --------------------------------------------------------------------------------------------
# MotionBlur

@do_not_convert
def _blur_round_even(t):
    """`t` (float64) rounded to the nearest integer, ties to even, as torch.round in Kornia's kernel."""
    r = dmath.floor(t + 0.5)
    return r - fn.cast(t + 0.5 == r, dtype=types.FLOAT64) * (r - 2.0 * dmath.floor(r * 0.5))


@do_not_convert
def blur_motion_kernel(sizes, angle, direction, k):
    """Each sample's Kornia motion kernel (get_motion_kernel2d with nearest resampling) of its drawn odd
    size `sizes`, in the middle of one k x k grid (k the range's largest size), zero outside its own: a
    line of taps weighted linearly by `direction` along the middle row, turned counter-clockwise by `angle`
    degrees (each tap copied from the nearest source under the inverse rotation, in float64 snapped to
    2^-20, ties to even), normalised. No tap of a turned line of half-length r lands more than r pixels
    from the middle, so the zeros around it change nothing."""
    grid = np.arange(float(k)) - float(k // 2)
    u = types.Constant(np.tile(grid, (k, 1)))
    v = types.Constant(np.tile(grid[:, None], (1, k)))
    half = fn.cast(dmath.floor(sizes / 2.0), dtype=types.FLOAT64)
    turn = fn.cast(angle, dtype=types.FLOAT64)
    turn = (turn - 360.0 * dmath.floor(turn / 360.0)) * (math.pi / 180.0)
    cos, sin = dmath.cos(turn), dmath.sin(turn)
    snap = float(2 ** 20)
    col = _blur_round_even(_blur_round_even((cos * u - sin * v) * snap) / snap + half)
    row = _blur_round_even(_blur_round_even((sin * u + cos * v) * snap) / snap + half)
    weight0 = (dmath.clamp(direction, -1.0, 1.0) + 1.0) / 2.0
    kernel = fn.cast((row == half) & (col >= 0.0) & (col <= 2.0 * half), dtype=types.FLOAT) * (
        weight0 + (1.0 - 2.0 * weight0) / fn.cast(2.0 * half, dtype=types.FLOAT) * fn.cast(col, dtype=types.FLOAT))
    return kernel / fn.reductions.sum(kernel)


@do_not_convert
def _blur_shift_move(shift, half):
    """round(shift x half / 2) (ties to even, as torch.round): the whole pixels a kernel moves."""
    t = shift * half * 0.5
    move = dmath.floor(t + 0.5)
    return move - fn.cast(move - t == 0.5, dtype=types.FLOAT) * (move - 2.0 * dmath.floor(move * 0.5))


@do_not_convert
def blur_motion(images, sizes, angle, direction, k, shift_x=None, shift_y=None):
    """The images correlated with each sample's motion kernel (blur_motion_kernel); with shifts (draws in
    [-1, 1]) the kernel moved by round(shift x (size // 2) / 2) whole pixels along x and y, as
    fn.filter's per-sample anchor (the grid's middle less the move), as Albumentations' allow_shifted."""
    kernel = blur_motion_kernel(sizes, angle, direction, k)
    if shift_x is None:
        return fn.filter(images, kernel, border="reflect_101")
    half = dmath.floor(sizes / 2.0)
    move_y, move_x = _blur_shift_move(shift_y, half), _blur_shift_move(shift_x, half)
    middle = float(k // 2)
    anchor = fn.cast(fn.stack(middle - move_y, middle - move_x), dtype=types.INT32)
    return fn.filter(images, kernel, anchor=anchor, border="reflect_101")


# --------------------------------------------------------------------------------------------
# MedianBlur

@do_not_convert
def blur_median_network(n):
    """Compare-exchange pairs (i, j), i < j, after which position n // 2 holds the median of n values:
    Batcher's odd-even merge sort on the next power of two (the missing inputs count as larger than all,
    so pairs that touch them drop out), keeping only the pairs that feed the median (the fewer pairs,
    the fewer DALI operators)."""
    size = 1
    while size < n:
        size *= 2
    pairs = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < n:
                        pairs.append((i + j, i + j + k))
            k //= 2
        p *= 2
    needed, kept = {n // 2}, []
    for a, b in reversed(pairs):
        if a in needed or b in needed:
            kept.append((a, b))
            needed |= {a, b}
    return tuple(reversed(kept))


@do_not_convert
def blur_median(images, k):
    """The median of each value's k x k neighbourhood (per channel, mirrored borders), exactly, on uint8
    and float alike: the shifted copies come from one-tap fn.filter kernels (rows, then columns), then a
    sorting network of dmath.min/max pairs (fn.experimental.median_blur runs on the GPU only)."""
    eye = np.eye(k, dtype=np.float32)
    rows = [fn.filter(images, eye[:, i:i + 1], border="reflect_101") for i in range(k)]
    window = [fn.filter(shifted, eye[j:j + 1], border="reflect_101") for shifted in rows for j in range(k)]
    for i, j in blur_median_network(k * k):
        window[i], window[j] = dmath.min(window[i], window[j]), dmath.max(window[i], window[j])
    return window[(k * k) // 2]
