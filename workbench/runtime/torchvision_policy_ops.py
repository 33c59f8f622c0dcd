"""The 15 ops of torchvision's augmentation policies (v2.RandAugment, v2.TrivialAugmentWide,
v2.AutoAugment) on uint8 HWC NumPy images, bit for bit what torchvision's
`_AutoAugmentBase._apply_image_or_video_transform` gives on the same image as a uint8 CHW tensor
(the policies run before ToDtype / Normalize). The Albumentations export copies these definitions
into one file beside other runtime modules, so every top-level name starts with `wb_tv_` / `WB_TV_`
and the module imports only math, numpy and cv2.

Conventions (see `wb_tv_policy_op`): the magnitude is in reported units, not torchvision's:
shears are the shear ANGLE in degrees (torchvision's magnitude m is tan of it), translations are
pixels (truncated toward 0 by int()), rotations are degrees counter-clockwise, brightness / color /
contrast / sharpness take the FACTOR 1 + m, posterize the bits kept, solarize the threshold as a
fraction of 255; the other ops ignore it (NaN). Images are RGB HxWx3 or HxWx1 uint8; the output is
a new array of the same shape. Outside the image, warps fill 0 (the policies' fill=None).

Why the arithmetic looks the way it does: torchvision computes in float32 on the CPU and converts
back to uint8 by truncation (colour ops) or by rounding half to even (warps), so the last bit of
each float32 step decides a level now and then. Each step here is the float32 operation torch's
kernel performs, in its order: products and sums rounded one by one where torch rounds them, and
fused (`wb_tv_fma32`: one rounding) where torch's vectorised CPU kernels fuse them, as they do on
x86 with AVX2 or AVX-512 (add with alpha, the blends, grid_sample's unnormalisation and bilinear
sum). The sampling grid is torch's: affine_grid's float32 matrix product (no fusion) and
grid_sample with align_corners=False, nearest rounding half to even. Contrast alone depends on
torch's intra-op thread count, through its float32 mean (a cascade sum whose partial sums round
once past 2**24) and through the blend with that mean (fused except in the last elements of each
thread's chunk); it is emulated for WB_TV_TORCH_THREADS threads, 1, as torch runs in DataLoader
workers, and `wb_tv_contrast` takes another count. Measured against torch 2.13 (CPU wheel, MKL) and
torchvision 0.28; torch built without AVX (ATEN_CPU_CAPABILITY=default) fuses nothing and differs.

Example:
    >>> img = np.array([[[10, 200, 30]]], dtype=np.uint8)
    >>> wb_tv_policy_op(img, "brightness", 1.5)[0, 0].tolist()
    [15, 255, 45]
    >>> wb_tv_policy_op(img, "posterize", 2.0)[0, 0].tolist()
    [0, 192, 0]
"""
import math

import cv2
import numpy as np

WB_TV_POLICY_OP_NAMES = (
    "identity", "shear_x", "shear_y", "translate_x", "translate_y", "rotate", "brightness", "color", "contrast",
    "sharpness", "posterize", "solarize", "auto_contrast", "equalize", "invert",
)
WB_TV_INTERPOLATIONS = ("nearest", "bilinear")
# torchvision's rgb_to_grayscale weights (as float32, as torch multiplies by them).
WB_TV_GRAY_WEIGHTS = (np.float32(0.2989), np.float32(0.587), np.float32(0.114))
# torch's intra-op threads the reductions are emulated for: 1, as in DataLoader workers (torch sets 1 there).
WB_TV_TORCH_THREADS = 1
WB_TV_GRAIN = 32768  # at::internal::GRAIN_SIZE, below which torch's loops run on one thread
WB_TV_SUM_LANES = 8  # float32 lanes of the AVX2 vectors torch's sum kernel adds in
WB_TV_BLEND_STEP = 16  # elements per step of torch's vectorised binary loop (two 8-float vectors)


def wb_tv_fma32(a, b, c):
    """float32 a * b + c with one rounding, as a fused multiply-add (torch's AVX kernels) gives it.

    The product of two float32 values is exact in float64; the float64 sum is then rounded to odd
    (its error, from TwoSum, picks the neighbour with an odd last bit), which rounds to float32 as
    the exact sum would, with no double rounding.

    >>> float(wb_tv_fma32(np.float32(3), np.float32(0.1), np.float32(1)))
    1.2999999523162842
    """
    p = np.multiply(a, b, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    s = np.asarray(p + c, dtype=np.float64)
    back = s - p
    err = (p - (s - back)) + (c - back)
    inexact = err != 0
    bits = s.view(np.int64) - (inexact & ((err < 0) != (s < 0)))  # truncate toward 0 where the sum rounded up
    return (bits | inexact).view(np.float64).astype(np.float32)


def wb_tv_check_image(image):
    """`image` as a uint8 HxWxC array with C 1 or 3, or a ValueError saying what is wrong."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in (1, 3):
        raise ValueError(f"expected a uint8 HxWx3 or HxWx1 image, got {image.dtype} {image.shape}")
    return image


def wb_tv_apply_lut(image, lut):
    """`image` through a 256-level table: one for all channels (256,) or one per channel (256, C)."""
    lut = np.asarray(lut, dtype=np.uint8)
    if lut.ndim == 1:
        return lut[image]
    return np.take_along_axis(lut, image.reshape(-1, image.shape[2]).astype(np.intp), axis=0).reshape(image.shape)


def wb_tv_to_uint8(x):
    """float32 values back to uint8 as torch's `.clamp_(0, 255).to(torch.uint8)`: clamped, truncated."""
    return np.clip(x, np.float32(0), np.float32(255)).astype(np.uint8)


def wb_tv_blend(image, other, factor):
    """torchvision's _blend on uint8: image * factor + other * (1 - factor), the product rounded to
    float32 first and the second term fused into the sum (torch's add_ with alpha), clamped, truncated."""
    ratio = float(factor)
    scaled = image.astype(np.float32) * np.float32(ratio)
    return wb_tv_to_uint8(wb_tv_fma32(other, np.float32(1.0 - ratio), scaled))


def wb_tv_gray_floor(image):
    """torchvision's grayscale of an RGB uint8 image as float32 levels, floored as its saturation and
    contrast floor it: (r * 0.2989 rounded, + g * 0.587 fused, + b * 0.114 fused), all float32. HxWx1."""
    r, g, b = (image[:, :, k].astype(np.float32) for k in range(3))
    wr, wg, wb = WB_TV_GRAY_WEIGHTS
    gray = wb_tv_fma32(b, wb, wb_tv_fma32(g, wg, r * wr))
    return np.floor(gray)[:, :, None]


def wb_tv_brightness(image, factor):
    """adjust_brightness: each level times `factor` in float32, clamped and truncated.

    >>> wb_tv_brightness(np.array([[[100]]], np.uint8), 1.27).item()
    127
    """
    if factor < 0:
        raise ValueError(f"brightness factor {factor} is negative")
    levels = np.arange(256, dtype=np.float32) * np.float32(factor)
    return wb_tv_apply_lut(image, wb_tv_to_uint8(levels))


def wb_tv_color(image, factor):
    """adjust_saturation: blend with the floored grayscale by `factor`; a 1-channel image is returned as is.

    >>> wb_tv_color(np.array([[[200, 100, 0]]], np.uint8), 0.0)[0, 0].tolist()
    [118, 118, 118]
    """
    if factor < 0:
        raise ValueError(f"color factor {factor} is negative")
    if image.shape[2] == 1:
        return image.copy()
    return wb_tv_blend(image, wb_tv_gray_floor(image), factor)


def wb_tv_parallel_chunks(n, threads):
    """The [begin, end) ranges torch's at::parallel_for (OpenMP, grain 32768) hands its threads for n elements.

    >>> wb_tv_parallel_chunks(70000, 2), wb_tv_parallel_chunks(70000, 1)
    ([(0, 35000), (35000, 70000)], [(0, 70000)])
    """
    if n < WB_TV_GRAIN or threads <= 1:
        return [(0, n)]
    tasks = min(threads, -(-n // WB_TV_GRAIN))
    size = -(-n // tasks)
    return [(b, min(n, b + size)) for b in range(0, n, size)]


def wb_tv_sequential_sum(values, axis):
    """float32 sum along `axis` added one by one from 0 (numpy's sum would add pairwise)."""
    if values.shape[axis] == 0:
        return np.zeros(np.delete(values.shape, axis), np.float32)
    return np.cumsum(values, axis=axis, dtype=np.float32).take(-1, axis=axis)


def wb_tv_multi_row_sum(rows):
    """torch's multi_row_sum (SumKernel.cpp) of float32 rows (size, nrows, lanes): rows added in blocks of
    2**max(4, ceil(log2(size)) // 4), block sums carried up three levels of that many, then the levels added."""
    size = rows.shape[0]
    step = 1 << max(4, (1 if size <= 2 else (size - 1).bit_length()) // 4)
    tail = rows.shape[1:]
    full = size // step
    blocks = wb_tv_sequential_sum(rows[:full * step].reshape(full, step, *tail), 1)
    n1 = full // step
    level1 = wb_tv_sequential_sum(blocks[:n1 * step].reshape(n1, step, *tail), 1)
    n2 = n1 // step
    level2 = wb_tv_sequential_sum(level1[:n2 * step].reshape(n2, step, *tail), 1)
    acc0 = wb_tv_sequential_sum(rows[full * step:], 0)
    acc1 = wb_tv_sequential_sum(blocks[n1 * step:], 0)
    acc2 = wb_tv_sequential_sum(level1[n2 * step:], 0)
    return ((acc0 + acc1) + acc2) + wb_tv_sequential_sum(level2, 0)


def wb_tv_row_sum(vectors):
    """torch's row_sum of (n, lanes) float32: four interleaved multi_row_sum accumulators, the rows left over
    added to the first, then the other three added to it. Returns (lanes,)."""
    n = vectors.shape[0]
    quarter = n // 4
    partial = wb_tv_multi_row_sum(vectors[:quarter * 4].reshape(quarter, 4, vectors.shape[1]))
    total = partial[0]
    for row in vectors[quarter * 4:]:
        total = total + row
    for k in range(1, 4):
        total = total + partial[k]
    return total


def wb_tv_inner_sum(values):
    """torch's float32 sum of one contiguous run (vectorized_inner_sum, 8-float vectors as its AVX2 kernel,
    which AVX-512 machines run too): lanes summed by row_sum, the scalar rest first, then the lanes in order."""
    lanes = WB_TV_SUM_LANES
    if values.size < lanes:
        return wb_tv_row_sum(values.reshape(-1, 1))[0]
    whole = values.size // lanes
    total = np.float32(0)
    for v in values[whole * lanes:]:
        total = np.float32(total + v)
    for v in wb_tv_row_sum(values[:whole * lanes].reshape(whole, lanes)):
        total = np.float32(total + v)
    return total


def wb_tv_torch_sum32(values, threads=None):
    """The float32 sum torch's CPU sum (cascade_sum) gives for `values` with `threads` intra-op threads
    (WB_TV_TORCH_THREADS when None): one inner sum per thread's chunk, then the sum of those partials.
    Exact while partial sums stay below 2**24; beyond that its rounding is torch's, thread count included.

    >>> float(wb_tv_torch_sum32(np.full(100, 0.1, np.float32)))  # torch.full((100,), 0.1).sum()
    9.999999046325684
    """
    values = np.ascontiguousarray(values, dtype=np.float32).ravel()
    threads = WB_TV_TORCH_THREADS if threads is None else threads
    chunks = wb_tv_parallel_chunks(values.size, threads)
    if len(chunks) == 1:
        return wb_tv_inner_sum(values)
    partials = np.zeros(threads, np.float32)  # one slot per thread, the idle ones 0
    for k, (begin, end) in enumerate(chunks):
        partials[k] = wb_tv_inner_sum(values[begin:end])
    return wb_tv_inner_sum(partials)


def wb_tv_unfused_span(length):
    """The [begin, end) elements of one loop call over `length` elements in which torch's CPU add with
    alpha and a broadcast scalar (contrast's blend with its mean) rounds the product apart, where
    everywhere else it fuses the multiply-add. Its vectorised loop takes 16 elements a step, fused; the
    rest goes through the compiled scalar loop, which fuses the first and the last (rest - 1) % 4
    elements and rounds apart the 8- and 4-element groups between them (torch 2.x's x86 build, measured).

    >>> wb_tv_unfused_span(16 + 7), wb_tv_unfused_span(16 + 4), wb_tv_unfused_span(32)
    ((17, 21), (17, 17), (32, 32))
    """
    rest = length % WB_TV_BLEND_STEP
    if rest == 0:
        return length, length
    grouped = 8 * ((rest - 1) // 8) + 4 * ((rest - 1) % 8 // 4)
    return length - rest + 1, length - rest + 1 + grouped


def wb_tv_contrast(image, factor, threads=None, channels_last=True):
    """adjust_contrast: blend with the mean of the floored grayscale (of the levels for 1 channel) by `factor`.

    torch's float32 mean (its cascade sum, / the pixel count) depends on its intra-op `threads` once the
    sum passes 2**24 (WB_TV_TORCH_THREADS when None), and the blend with that broadcast mean rounds a few
    elements at the end of each thread's run apart (`wb_tv_unfused_span`), counted in the tensor's memory
    order: HWC for `channels_last` (torch.from_numpy(hwc).permute(2, 0, 1), or ToImage of a PIL image),
    CHW for a contiguous tensor (ToImage of an array, decode_image).

    >>> # The weights add up to 0.9999: grey 100 is 99 in grayscale, the mean 49.5.
    >>> wb_tv_contrast(np.array([[[0, 0, 0]], [[100, 100, 100]]], np.uint8), 0.5)[:, 0, 0].tolist()
    [24, 74]
    """
    if factor < 0:
        raise ValueError(f"contrast factor {factor} is negative")
    threads = WB_TV_TORCH_THREADS if threads is None else threads
    gray = wb_tv_gray_floor(image) if image.shape[2] == 3 else image.astype(np.float32)
    mean = wb_tv_torch_sum32(gray, threads) / np.float32(gray.size)
    ratio = float(factor)
    alpha = np.float32(1.0 - ratio)
    ordered = image if channels_last else image.transpose(2, 0, 1)
    scaled = np.ascontiguousarray(ordered).ravel().astype(np.float32) * np.float32(ratio)
    out = wb_tv_fma32(mean, alpha, scaled)
    for begin, end in wb_tv_parallel_chunks(scaled.size, threads):
        first, last = wb_tv_unfused_span(end - begin)
        out[begin + first:begin + last] = scaled[begin + first:begin + last] + mean * alpha
    out = wb_tv_to_uint8(out).reshape(ordered.shape)
    return out if channels_last else np.ascontiguousarray(out.transpose(1, 2, 0))


def wb_tv_sharpness(image, factor):
    """adjust_sharpness: blend the inside with torch's rounded 3x3 smoothing (1s around a 5, / 13) by
    `factor`; the one-pixel border, and images of 2 pixels or fewer across, are kept.

    The smoothing k / 13 (k the integer weighted sum) is at least 1/26 from a rounding tie, so its
    rounded value is exact in integers; the blend x + (1 - factor) * (smooth - x) is torch's fused add.

    >>> img = np.zeros((3, 3, 1), np.uint8); img[1, 1] = 130
    >>> wb_tv_sharpness(img, 2.0)[:, :, 0].tolist()
    [[0, 0, 0], [0, 210, 0], [0, 0, 0]]
    """
    if factor < 0:
        raise ValueError(f"sharpness factor {factor} is negative")
    height, width = image.shape[:2]
    if height <= 2 or width <= 2:
        return image.copy()
    kernel = np.ones((3, 3), np.float32)
    kernel[1, 1] = 5
    # Sums of at most 13 * 255 levels: exact in float32 in any order.
    weighted = cv2.filter2D(image.astype(np.float32), -1, kernel, borderType=cv2.BORDER_REPLICATE)
    weighted = weighted.reshape(image.shape)[1:-1, 1:-1].astype(np.int64)
    smooth = ((2 * weighted + 13) // 26).astype(np.float32)  # round(k / 13); never a tie
    inner = image[1:-1, 1:-1].astype(np.float32)
    out = image.copy()
    out[1:-1, 1:-1] = wb_tv_to_uint8(wb_tv_fma32(smooth - inner, np.float32(1.0 - float(factor)), inner))
    return out


def wb_tv_posterize(image, bits):
    """posterize: keep the top int(bits) bits of each level (0 bits: black; 8: unchanged).

    >>> wb_tv_posterize(np.array([[[200]]], np.uint8), 3).item()
    192
    """
    bits = int(bits)
    if not 0 <= bits <= 8:
        raise ValueError(f"posterize keeps 0 to 8 bits, got {bits}")
    if bits == 8:
        return image.copy()
    return image & np.uint8((0xFF << (8 - bits)) & 0xFF)


def wb_tv_solarize(image, threshold):
    """solarize: invert the levels at or above 255 * `threshold` (compared in float32, as torch does).

    >>> img = np.array([[[127, 128, 200]]], np.uint8)
    >>> wb_tv_solarize(img, 0.5)[0, 0].tolist()
    [127, 127, 55]
    >>> wb_tv_solarize(img, 128.000001 / 255)[0, 0].tolist()  # 128.0 in float32: 128 is at it
    [127, 127, 55]
    """
    bound = 255 * float(threshold)
    if bound > 255:
        raise ValueError(f"solarize threshold {threshold} is above 1")
    levels = np.arange(256, dtype=np.float32)
    return wb_tv_apply_lut(image, np.where(levels >= np.float32(bound), 255 - levels, levels))


def wb_tv_auto_contrast(image):
    """autocontrast: each channel's levels mapped by (x - min) / ((max - min) * (1 / 255)) in float32,
    clamped and truncated; a constant channel is kept.

    >>> # 20 / 0.078431375 is 254.99999 in float32: truncated, the top level is 254.
    >>> wb_tv_auto_contrast(np.array([[[10]], [[20]], [[30]]], np.uint8))[:, 0, 0].tolist()
    [0, 127, 254]
    """
    low = image.min(axis=(0, 1)).astype(np.float32)
    high = image.max(axis=(0, 1)).astype(np.float32)
    flat = high == low
    inv_scale = np.where(flat, np.float32(1), (high - low) * np.float32(1.0 / 255))
    low = np.where(flat, np.float32(0), low)
    levels = np.arange(256, dtype=np.float32)[:, None]
    return wb_tv_apply_lut(image, wb_tv_to_uint8((levels - low) / inv_scale))


def wb_tv_equalize_lut(channel):
    """torchvision's (PIL's) equalisation table for one uint8 channel, or None where it keeps the channel."""
    hist = np.bincount(channel.ravel(), minlength=256).astype(np.int64)
    cum = np.cumsum(hist)
    last = int(np.argmax(cum))  # the last level present
    step = (channel.size - int(hist[last])) // 255
    if step == 0:
        return None
    lut = np.zeros(256, np.int64)
    lut[1:] = (cum[:-1] + step // 2) // step
    return np.clip(lut, 0, 255).astype(np.uint8)


def wb_tv_equalize(image):
    """equalize, channel by channel: the lookup (cumulative count + step // 2) // step of the histogram
    shifted by one level, step = (pixels - the top level's count) // 255; a channel with step 0 is kept.

    >>> wb_tv_equalize(np.array([[[0]], [[0]], [[255]]], np.uint8))[:, 0, 0].tolist()
    [0, 0, 255]
    """
    luts = []
    for c in range(image.shape[2]):
        lut = wb_tv_equalize_lut(image[:, :, c])
        luts.append(np.arange(256, dtype=np.uint8) if lut is None else lut)
    return wb_tv_apply_lut(image, np.stack(luts, axis=1))


def wb_tv_invert(image):
    """invert: 255 - level.

    >>> wb_tv_invert(np.array([[[0, 55, 255]]], np.uint8))[0, 0].tolist()
    [255, 200, 0]
    """
    return 255 - image


def wb_tv_inverse_affine_matrix(center, angle, translate, scale, shear):
    """torchvision's _get_inverse_affine_matrix (the output-to-input map in pixel units about `center`,
    relative to the image centre), in its float64 operations and their order.

    >>> wb_tv_inverse_affine_matrix([0.0, 0.0], 0.0, [3.0, 0.0], 1.0, [0.0, 0.0])
    [1.0, 0.0, -3.0, -0.0, 1.0, 0.0]
    """
    rot = math.radians(angle)
    sx = math.radians(shear[0])
    sy = math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    cos_sy = math.cos(sy)
    tan_sx = math.tan(sx)
    rot_minus_sy = rot - sy
    cx_plus_tx = cx + tx
    cy_plus_ty = cy + ty
    a = math.cos(rot_minus_sy) / cos_sy
    b = -(a * tan_sx + math.sin(rot))
    c = math.sin(rot_minus_sy) / cos_sy
    d = math.cos(rot) - c * tan_sx
    matrix = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
    matrix[2] += cx - matrix[0] * cx_plus_tx - matrix[1] * cy_plus_ty
    matrix[5] += cy - matrix[3] * cx_plus_tx - matrix[4] * cy_plus_ty
    return matrix


def wb_tv_source_coordinates(matrix, height, width):
    """Where each output pixel samples the input, in input pixel units (pixel centres at integers), as
    torchvision's _affine_grid and grid_sample(align_corners=False) compute it in float32: the grid
    x * t0 + y * t1 + t2 rounded step by step (torch's matrix product), then (g + 1) * (size / 2) - 0.5
    fused. Returns (x, y) float32 HxW arrays."""
    theta = np.asarray(matrix, dtype=np.float32).reshape(2, 3)
    halves = np.array([0.5 * width, 0.5 * height], dtype=np.float32)
    xs = np.arange(width, dtype=np.float32) - np.float32((width - 1) * 0.5)
    ys = (np.arange(height, dtype=np.float32) - np.float32((height - 1) * 0.5))[:, None]
    coords = []
    for j, size in enumerate((width, height)):
        t0, t1, t2 = theta[j] / halves[j]
        grid = (xs * t0 + ys * t1) + t2
        coords.append(wb_tv_fma32(grid + np.float32(1), np.float32(size / 2), np.float32(-0.5)))
    return coords[0], coords[1]


def wb_tv_gather(flat, xi, yi, height, width):
    """flat[(yi, xi)] as float32 (N, C) rows, 0 where (xi, yi) is outside the image (grid_sample's zeros)."""
    inside = (xi >= 0) & (xi < width) & (yi >= 0) & (yi < height)
    index = np.where(inside, yi * width + xi, 0).ravel()
    values = flat[index].astype(np.float32)
    values[~inside.ravel()] = 0
    return values


def wb_tv_grid_sample(image, x, y, interpolation):
    """torch's grid_sample on the CPU at input coordinates (x, y) from `wb_tv_source_coordinates`:
    nearest rounds half to even; bilinear sums nw, ne, sw, se (weights as float32 products of the
    distances) with the last three fused, as torch's AVX kernel. Zeros outside; the result rounded
    half to even to uint8 as torchvision does."""
    height, width, channels = image.shape
    flat = image.reshape(-1, channels)
    if interpolation == "nearest":
        xi, yi = np.rint(x).astype(np.int64), np.rint(y).astype(np.int64)
        return wb_tv_gather(flat, xi, yi, height, width).astype(np.uint8).reshape(image.shape)
    x0, y0 = np.floor(x), np.floor(y)
    dx, dy = x - x0, y - y0
    rx, ry = np.float32(1) - dx, np.float32(1) - dy
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    corners = ((x0, y0, ry * rx), (x0 + 1, y0, ry * dx), (x0, y0 + 1, dy * rx), (x0 + 1, y0 + 1, dy * dx))
    out = None
    for xi, yi, weight in corners:
        values = wb_tv_gather(flat, xi, yi, height, width)
        weight = weight.reshape(-1, 1)
        out = values * weight if out is None else wb_tv_fma32(values, weight, out)
    return np.rint(out).astype(np.uint8).reshape(image.shape)


def wb_tv_affine(image, matrix, interpolation):
    """torchvision's affine_image / rotate_image (same size, fill=None) for the inverse `matrix`."""
    x, y = wb_tv_source_coordinates(matrix, image.shape[0], image.shape[1])
    return wb_tv_grid_sample(image, x, y, interpolation)


def wb_tv_shear(image, angle, axis, interpolation="nearest"):
    """ShearX / ShearY: shear by `angle` degrees (torchvision's magnitude is tan of it) about the
    top-left corner (torchvision's center=[0, 0]); axis "x" or "y".

    >>> img = np.arange(9, dtype=np.uint8).reshape(3, 3, 1)
    >>> wb_tv_shear(img, 45.0, "x")[:, :, 0].tolist()
    [[0, 1, 2], [4, 5, 0], [8, 0, 0]]
    """
    height, width = image.shape[:2]
    shear = [float(angle), 0.0] if axis == "x" else [0.0, float(angle)]
    # center=[0, 0] in pixels is (-w/2, -h/2) from the image centre.
    matrix = wb_tv_inverse_affine_matrix([0.0 - width * 0.5, 0.0 - height * 0.5], 0.0, [0.0, 0.0], 1.0, shear)
    return wb_tv_affine(image, matrix, interpolation)


def wb_tv_translate(image, pixels, axis, interpolation="nearest"):
    """TranslateX / TranslateY: move by int(pixels) (truncated toward 0) along axis "x" or "y".

    >>> wb_tv_translate(np.arange(1, 4, dtype=np.uint8).reshape(1, 3, 1), 1.9, "x")[0, :, 0].tolist()
    [0, 1, 2]
    """
    shift = [float(int(pixels)), 0.0] if axis == "x" else [0.0, float(int(pixels))]
    matrix = wb_tv_inverse_affine_matrix([0.0, 0.0], 0.0, shift, 1.0, [0.0, 0.0])
    return wb_tv_affine(image, matrix, interpolation)


def wb_tv_rotate(image, angle, interpolation="nearest"):
    """Rotate by `angle` degrees counter-clockwise about the image centre, same size; torchvision's
    exact quarter turns (0 and 180 always, 90 and 270 on square images) are array rotations.

    >>> wb_tv_rotate(np.arange(4, dtype=np.uint8).reshape(2, 2, 1), 90.0)[:, :, 0].tolist()
    [[1, 3], [0, 2]]
    """
    angle = float(angle) % 360
    height, width = image.shape[:2]
    if angle == 0:
        return image.copy()
    if angle == 180 or (height == width and angle in (90, 270)):
        return np.ascontiguousarray(np.rot90(image, int(angle) // 90, axes=(0, 1)))
    matrix = wb_tv_inverse_affine_matrix([0.0, 0.0], -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return wb_tv_affine(image, matrix, interpolation)


def wb_tv_policy_op(image, name, magnitude, interpolation="nearest"):
    """Apply op `name` (one of WB_TV_POLICY_OP_NAMES) at `magnitude` in reported units (see the module's
    docstring; NaN for the ops without one) to a uint8 HxWx3 / HxWx1 image, as torchvision's policies do.
    `interpolation` ("nearest", torchvision's default for the policies, or "bilinear") is for the warps.

    >>> wb_tv_policy_op(np.array([[[10, 20, 30]]], np.uint8), "invert", float("nan"))[0, 0].tolist()
    [245, 235, 225]
    """
    image = wb_tv_check_image(image)
    if interpolation not in WB_TV_INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {WB_TV_INTERPOLATIONS}, got {interpolation!r}")
    if name in ("shear_x", "shear_y", "translate_x", "translate_y"):
        warp = wb_tv_shear if name.startswith("shear") else wb_tv_translate
        return warp(image, magnitude, name[-1], interpolation)
    if name == "rotate":
        return wb_tv_rotate(image, magnitude, interpolation)
    if name in ("brightness", "color", "contrast", "sharpness", "posterize", "solarize"):
        return WB_TV_OPS_WITH_MAGNITUDE[name](image, magnitude)
    if name in ("identity", "auto_contrast", "equalize", "invert"):
        return image.copy() if name == "identity" else WB_TV_OPS_WITHOUT_MAGNITUDE[name](image)
    raise ValueError(f"unknown policy op {name!r}; expected one of {WB_TV_POLICY_OP_NAMES}")


WB_TV_OPS_WITH_MAGNITUDE = {
    "brightness": wb_tv_brightness, "color": wb_tv_color, "contrast": wb_tv_contrast, "sharpness": wb_tv_sharpness,
    "posterize": wb_tv_posterize, "solarize": wb_tv_solarize,
}
WB_TV_OPS_WITHOUT_MAGNITUDE = {"auto_contrast": wb_tv_auto_contrast, "equalize": wb_tv_equalize,
                               "invert": wb_tv_invert}
