"""torchvision's augmentation-policy ops (v2.RandAugment, v2.TrivialAugmentWide, v2.AutoAugment) for DALI,
bit for bit what torchvision's `_AutoAugmentBase._apply_image_or_video_transform` gives on the same image as
a uint8 CHW tensor on the CPU (the policies run before ToDtype / Normalize). dali_policies.py is the Kornia
version of the same idea; like it, each op is a function that DALI's auto_aug `select(ops, op_index, images,
magnitude)` calls for the samples that drew it (conditional execution).

The op contract: `tv_policy_<name>(images, magnitude, interpolation="nearest")`, `images` a DataNode of uint8
HWC RGB samples (CPU or GPU), `magnitude` one float32 scalar per sample on the CPU, in reported units: shears
take the shear ANGLE in degrees (torchvision's magnitude m is its tangent), translations pixels (truncated
toward 0, as int() does), rotations degrees counter-clockwise, brightness / color / contrast / sharpness the
FACTOR 1 + m, posterize the bits kept (truncated), solarize the threshold as a fraction of 255; identity,
auto_contrast, equalize and invert ignore it (NaN). `interpolation` is "nearest" (torchvision's default for
the policies) or "bilinear"; the colour ops accept it and ignore it. Outside the image the warps fill 0 (the
policies' fill=None). `select` hands its keyword arguments to every op it calls, so a caller picks bilinear
warps with `select(ops, op_index, images, magnitude, interpolation="bilinear")`.

Why the arithmetic looks as it does: torch computes in float32 and converts back to uint8 by truncation
(colour ops) or by rounding half to even (warps), so the last bit of a float32 step decides a level now and
then. Each step here is the float32 operation torch's CPU kernel performs, in its order; where torch's
vectorised kernels fuse a multiply-add (add with alpha, the blends, grid_sample's unnormalisation and its
bilinear sum) the sum is formed in float64, where it is exact, and rounded once (`_tv_policy_fma32`). DALI
keeps constants as float32, so the one float64 constant, pi / 180, is built from three float32 parts.

The warps emulate torch's sampling grid itself: affine_grid's float32 matrix product (not fused), then
grid_sample's coordinates (align_corners=False) and its nearest rounding (half to even, which decides the
many exact ties of a quarter turn of an image whose height and width differ by an odd number) or its
bilinear weights. DALI has no per-pixel gather on the CPU, so `fn.warp_affine` (nearest) samples a canvas
holding the image shifted by 0, 1 (and 2) pixels in x and y beside each pixel's own coordinates: the
coordinates tell which pixel DALI's own float arithmetic picked, and the shifted copies give torch's pick,
at most one or two pixels on. Translations move by whole pixels, which one warp does exactly. Coordinates
come from a constant ramp: images up to 32768 pixels a side.

Torch's contrast alone depends on its intra-op thread count, through its float32 mean (the lanes of its
vectorised sum, added in float32 once the total passes 2**24) and through the blend with that mean (not
fused in part of the last 16 elements of each thread's chunk); it is emulated for one thread, as torch runs
in DataLoader workers, and exactly for images under half a megapixel (beyond that torch's lanes themselves
round). Equalize builds its histogram and applies its table through a one-hot of the levels, 256 bytes a
value (about 200 MB for a 512 x 512 image, twice over). The export copies these definitions into one file
beside dali_policies.py and other modules: every top-level name starts with `tv_policy_` or `_tv_policy_`,
and only numpy and DALI are imported.

Example (ops called directly; a policy step calls them through `select`):
    >>> from nvidia.dali import pipeline_def
    >>> @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    ... def two_ops():
    ...     image = types.Constant(np.array([[[10, 200, 30], [0, 5, 255]]], dtype=np.uint8), layout="HWC")
    ...     return (tv_policy_brightness(image, fn.constant(fdata=[1.5], shape=[])),
    ...             tv_policy_posterize(image, fn.constant(fdata=[2.0], shape=[])))
    >>> pipe = two_ops()
    >>> pipe.build()
    >>> [np.array(out[0]).tolist() for out in pipe.run()]
    [[[[15, 255, 45], [0, 7, 255]]], [[[0, 192, 0], [0, 0, 192]]]]
"""
import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types

_tv_policy_interpolations = ("nearest", "bilinear")
# torchvision's rgb_to_grayscale weights, as float32 (torch multiplies float32 by them).
_tv_policy_gray_weights = (float(np.float32(0.2989)), float(np.float32(0.587)), float(np.float32(0.114)))
# torchvision's sharpness kernel ([[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13) times 13: integer sums, exact.
_tv_policy_smoothing = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32)
# posterize's masks by the bits kept, 0 to 8.
_tv_policy_posterize_masks = np.array([256 - (1 << (8 - bits)) for bits in range(9)], dtype=np.uint8)
_tv_policy_levels = np.arange(256, dtype=np.int32)
_tv_policy_below = np.triu(np.ones((256, 256), dtype=np.uint8), 1)[None]  # [0, j, k]: 1 where j < k
# Pixel coordinates 0, 1, ... (float32) for images up to this many pixels a side.
_tv_policy_coordinates = np.arange(1 << 15, dtype=np.float32)
_tv_policy_pad = 2  # the canvas' border: a bilinear tap may lie two pixels before DALI's nearest pick
_tv_policy_sum_lanes = 8  # float32 lanes of torch's vectorised sum (its AVX2 kernel, which AVX-512 runs too)
_tv_policy_blend_step = 16  # elements per step of torch's vectorised binary loop (two 8-float vectors)


def _tv_policy_f32_parts(value):
    """Three float32 numbers whose float64 sum is `value` exactly (DALI keeps constants as float32).

    >>> parts = _tv_policy_f32_parts(np.pi / 180)
    >>> (parts[0] + parts[1]) + parts[2] == np.pi / 180
    True
    """
    hi = float(np.float32(value))
    mid = float(np.float32(value - hi))
    lo = float(np.float32(value - hi - mid))
    if (hi + mid) + lo != value:
        raise ValueError(f"{value!r} is not the sum of three float32 numbers")
    return hi, mid, lo


_tv_policy_degree_parts = _tv_policy_f32_parts(np.pi / 180)  # math.radians' factor


def _tv_policy_on_device(value, images):
    """A per-sample value where arithmetic with `images` can use it (the same device)."""
    return value.gpu() if images.device == "gpu" else value


def _tv_policy_check(interpolation):
    """A ValueError for an interpolation torchvision's policies do not take on tensors (or not here)."""
    if interpolation not in _tv_policy_interpolations:
        raise ValueError(f"interpolation must be one of {_tv_policy_interpolations}, got {interpolation!r}")


def _tv_policy_to_uint8(values):
    """torch's `.clamp_(0, 255).to(torch.uint8)` of float values: clamped, then truncated."""
    return fn.cast(dmath.floor(dmath.clamp(values, 0.0, 255.0)), dtype=types.UINT8)


def _tv_policy_fma32(a, b, c):
    """float32 a * b + c rounded once, as torch's fused multiply-add gives it: formed in float64, where the
    product of a level (or a float32 value) and a float32 value plus a float32 value is exact."""
    return fn.cast(fn.cast(a, dtype=types.FLOAT64) * b + c, dtype=types.FLOAT)


def _tv_policy_where(mask, a, b):
    """a where `mask` (bool) holds, else b; exact (a difference b - a may round, a product by 0 or 1 does not)."""
    return a * mask + b * (1.0 - mask)


def _tv_policy_rint(values):
    """float64 values rounded to the nearest integer, ties to even (torch's round and nearbyint)."""
    v = fn.cast(values, dtype=types.FLOAT64)
    r = dmath.floor(v + 0.5)
    odd = (r - dmath.floor(r * 0.5) * 2.0) == 1.0
    return r - (((r - v) == 0.5) & odd)


def _tv_policy_radians(degrees):
    """math.radians of float32 degrees, in float64: degrees * (pi / 180)."""
    hi, mid, lo = _tv_policy_degree_parts
    degrees = fn.cast(degrees, dtype=types.FLOAT64)
    return degrees * (((degrees * 0.0 + hi) + mid) + lo)  # each sum exact: pi / 180 to the last bit


def _tv_policy_ramp(ramp, length, layout_shape):
    """The coordinates 0 .. length - 1 (float32) shaped as `layout_shape` (one -1) with layout HWC."""
    return fn.reshape(fn.slice(ramp, start=[0], shape=fn.stack(length), axes=[0]), shape=layout_shape, layout="HWC")


# ---- colour ops ------------------------------------------------------------------------------------------


def _tv_policy_gray(images):
    """torchvision's grayscale of uint8 RGB, floored as its saturation and contrast floor it (HxWx1 float32):
    r * 0.2989 rounded, then + g * 0.587 and + b * 0.114 each fused (torch's add with alpha)."""
    x = fn.cast(images, dtype=types.FLOAT64)
    wr, wg, wb = _tv_policy_gray_weights
    gray = fn.cast(x[:, :, 0:1] * wr, dtype=types.FLOAT)
    gray = _tv_policy_fma32(x[:, :, 1:2], wg, gray)
    return dmath.floor(_tv_policy_fma32(x[:, :, 2:3], wb, gray))


def _tv_policy_blend(images, other, factor):
    """torchvision's _blend on uint8: images * factor rounded to float32, + other * (1 - factor) fused,
    clamped and truncated. `factor` is on the images' device."""
    scaled = fn.cast(images, dtype=types.FLOAT) * factor
    return _tv_policy_to_uint8(_tv_policy_fma32(other, 1.0 - factor, scaled))


def tv_policy_identity(images, magnitude, interpolation="nearest"):
    """The images as they are (torchvision's Identity)."""
    return images


def tv_policy_brightness(images, factor, interpolation="nearest"):
    """adjust_brightness: each level times `factor` in float32, clamped and truncated."""
    return _tv_policy_to_uint8(fn.cast(images, dtype=types.FLOAT) * _tv_policy_on_device(factor, images))


def tv_policy_color(images, factor, interpolation="nearest"):
    """adjust_saturation: blend with the floored grayscale by `factor` (0: gray, 1: unchanged)."""
    return _tv_policy_blend(images, _tv_policy_gray(images), _tv_policy_on_device(factor, images))


def _tv_policy_torch_mean(gray, images, count):
    """The float32 mean torch takes of the floored grayscale (HxWx1) with one thread: the exact sums of its
    sum kernel's 8 lanes (every 8th value; integers below 2**24 for images under half a megapixel), added in
    float32 after the values left over past the last whole vector, then divided by the pixel count."""
    flat = fn.cast(fn.reshape(gray, shape=[-1]), dtype=types.INT32)
    head = fn.slice(flat, start=[0], shape=fn.stack(count - count % _tv_policy_sum_lanes), axes=[0])
    lanes = fn.reductions.sum(fn.reshape(head, shape=[-1, _tv_policy_sum_lanes]), axes=0, dtype=types.INT64)
    rest = fn.reductions.sum(flat, dtype=types.INT64) - fn.reductions.sum(lanes)  # small, exact in float32
    total = fn.cast(rest, dtype=types.FLOAT)
    lanes = fn.cast(lanes, dtype=types.FLOAT)
    for lane in range(_tv_policy_sum_lanes):
        total = total + lanes[lane]
    return total / _tv_policy_on_device(fn.cast(count, dtype=types.FLOAT), images)


def _tv_policy_unfused_tail(images, height, width, count):
    """True where torch's blend with a broadcast scalar does not fuse its multiply-add (HxWx3 bool):
    with one thread, in the last r = (3 * pixels) % 16 elements of the CHW image its scalar loop keeps the
    first fused, rounds the product apart in the next 4 * ((r - 1) // 4), and fuses the rest."""
    total = count * 3
    rest = total % _tv_policy_blend_step
    first = total - rest + 1
    last = first + (rest - 1) // 4 * 4
    bounds = _tv_policy_on_device(fn.cast(fn.stack(count, width, first, last), dtype=types.FLOAT), images)
    ramp = types.Constant(_tv_policy_coordinates, device=images.device)
    rows = _tv_policy_ramp(ramp, height, [-1, 1, 1])
    cols = _tv_policy_ramp(ramp, width, [1, -1, 1])
    channel = types.Constant(np.array([[[0.0, 1.0, 2.0]]], dtype=np.float32), device=images.device)
    index = (rows * bounds[1] + cols) + channel * bounds[0]  # position in CHW order, exact below 2**24
    return (index >= bounds[2]) & (index < bounds[3])


def tv_policy_contrast(images, factor, interpolation="nearest"):
    """adjust_contrast: blend with the float32 mean of the floored grayscale by `factor` (torch with one
    intra-op thread: see _tv_policy_torch_mean and _tv_policy_unfused_tail)."""
    hw = images.shape(dtype=types.INT32)
    height, width = hw[0], hw[1]
    count = height * width
    mean = _tv_policy_torch_mean(_tv_policy_gray(images), images, count)
    factor = _tv_policy_on_device(factor, images)
    alpha = 1.0 - factor
    scaled = fn.cast(images, dtype=types.FLOAT) * factor
    fused = _tv_policy_fma32(mean, alpha, scaled)
    apart = scaled + mean * alpha
    return _tv_policy_to_uint8(_tv_policy_where(_tv_policy_unfused_tail(images, height, width, count), apart, fused))


def tv_policy_sharpness(images, factor, interpolation="nearest"):
    """adjust_sharpness: blend the inside with torch's rounded 3x3 smoothing (1s around a 5, / 13) by
    `factor`; the one-pixel border, and images of 2 pixels or fewer across, are kept. The smoothing k / 13
    (k the integer weighted sum) is at least 1/26 from a rounding tie, so its rounding is exact; the blend
    inside + (1 - factor) * (smooth - inside) is torch's fused add."""
    x = fn.cast(images, dtype=types.FLOAT)
    hw = images.shape(dtype=types.INT32)
    kernel = types.Constant(_tv_policy_smoothing, device=images.device)
    smooth = dmath.floor(fn.filter(x, kernel, mode="same") / 13.0 + 0.5)  # the border's is not used
    blended = _tv_policy_fma32(smooth - x, 1.0 - _tv_policy_on_device(factor, images), x)
    height, width = hw[0], hw[1]
    last = _tv_policy_on_device(fn.cast(fn.stack(height - 2, width - 2), dtype=types.FLOAT), images)
    ramp = types.Constant(_tv_policy_coordinates, device=images.device)
    rows, cols = _tv_policy_ramp(ramp, height, [-1, 1, 1]), _tv_policy_ramp(ramp, width, [1, -1, 1])
    inside = (rows >= 1.0) & (rows <= last[0]) & (cols >= 1.0) & (cols <= last[1])
    return _tv_policy_to_uint8(_tv_policy_where(inside, blended, x))


def tv_policy_posterize(images, bits, interpolation="nearest"):
    """posterize: keep the top int(bits) bits of each level (0: black; 8 and more: unchanged)."""
    kept = fn.cast(dmath.floor(dmath.clamp(bits, 0.0, 8.0)), dtype=types.INT32)
    mask = types.Constant(_tv_policy_posterize_masks)[kept]
    return images & _tv_policy_on_device(mask, images)


def tv_policy_solarize(images, threshold, interpolation="nearest"):
    """solarize: invert the levels at or above 255 * threshold (compared in float32, as torch compares)."""
    level = _tv_policy_on_device(threshold * 255.0, images)
    flip = fn.cast(images >= level, dtype=types.UINT8) * types.Constant(255, dtype=types.UINT8)
    return images ^ flip


def tv_policy_auto_contrast(images, magnitude, interpolation="nearest"):
    """autocontrast: stretch each channel from its [min, max] to [0, 255] in float32, (x - min) / ((max - min)
    * (1 / 255)), truncated; a flat channel is kept."""
    low = fn.cast(fn.reductions.min(images, axis_names="HW", keep_dims=True), dtype=types.FLOAT)
    high = fn.cast(fn.reductions.max(images, axis_names="HW", keep_dims=True), dtype=types.FLOAT)
    flat = high == low
    scale = (high - low) * (1.0 / 255.0) + flat  # a flat channel: 0 + 1
    return _tv_policy_to_uint8((fn.cast(images, dtype=types.FLOAT) - (low - low * flat)) / scale)


def tv_policy_equalize(images, magnitude, interpolation="nearest"):
    """equalize, as torchvision (and PIL) do it per channel: with step = (pixels - count of the top level)
    // 255, level k maps to min((pixels below k + step // 2) // step, 255); a channel with step 0 is kept.
    The histogram and the table lookup go through a one-hot of the levels (256 bytes a value)."""
    shape = images.shape(dtype=types.INT64)
    pixels = _tv_policy_on_device(shape[0] * shape[1], images)
    device = images.device
    planar = fn.transpose(fn.reshape(images, shape=[-1, 3]), perm=[1, 0])  # 3 x pixels
    one_hot = fn.one_hot(planar, num_classes=256, axis=1, dtype=types.UINT8)  # 3 x 256 x pixels
    counts = fn.cast(fn.reductions.sum(one_hot, axes=2, dtype=types.UINT64), dtype=types.INT64)  # 3 x 256
    below = fn.reductions.sum(fn.reshape(counts, shape=[3, 256, 1]) * types.Constant(_tv_policy_below, device=device),
                              axes=1)
    levels = types.Constant(_tv_policy_levels, device=device)
    top = fn.reshape(fn.reductions.max(planar, axes=1), shape=[3, 1])
    at_top = fn.reductions.sum(counts * (levels == top), axes=1, keep_dims=True)  # 3 x 1
    step = (pixels - at_top) // 255
    table = dmath.min((below + step // 2) // dmath.max(step, 1), 255)
    table = fn.cast(levels + (table - levels) * (step != 0), dtype=types.UINT8)
    mapped = fn.reductions.max(one_hot * fn.reshape(table, shape=[3, 256, 1]), axes=1)  # 3 x pixels
    return fn.reshape(fn.transpose(mapped, perm=[1, 0]), shape=shape, layout="HWC")


def tv_policy_invert(images, magnitude, interpolation="nearest"):
    """invert: 255 - each level."""
    return images ^ types.Constant(255, dtype=types.UINT8)


# ---- geometric ops ---------------------------------------------------------------------------------------


def _tv_policy_float32(theta):
    """theta's entries as float32: a Python number stays a number (rounded to float32), each node is cast
    once (an entry may repeat)."""
    cast = {}
    for value in theta:
        if not isinstance(value, (int, float)) and id(value) not in cast:
            cast[id(value)] = fn.cast(value, dtype=types.FLOAT)
    return [float(np.float32(v)) if isinstance(v, (int, float)) else cast[id(v)] for v in theta]


def _tv_policy_nodes(values, like):
    """`values` as per-sample nodes: a Python number becomes like * 0 + the number (each number once)."""
    zero, made = like * 0.0, {}
    for v in values:
        if isinstance(v, float) and v not in made:
            made[v] = zero + v
    return [made[v] if isinstance(v, float) else v for v in values]


def _tv_policy_source(images, size, theta):
    """torch's source coordinates of each output pixel (two HxWx1 float32 nodes, in pixels from the first
    pixel's centre) for its inverse affine `theta` (6 float32 values about the image centre): affine_grid's
    base grid times theta / (size / 2), each product and sum rounded, then grid_sample's unnormalisation
    (g + 1) * size / 2 - 0.5, fused. Also the per-sample scalars, on the images' device, and the ramp."""
    height, width = size
    h, w = fn.cast(height, dtype=types.FLOAT), fn.cast(width, dtype=types.FLOAT)
    half_w, half_h = w * 0.5, h * 0.5
    t = theta
    scalars = _tv_policy_on_device(fn.stack(*_tv_policy_nodes([
        t[0] / half_w, t[1] / half_w, t[2] / half_w, t[3] / half_h, t[4] / half_h, t[5] / half_h,
        half_w, half_h, (w - 1.0) * 0.5, (h - 1.0) * 0.5, w - 1.0, h - 1.0], half_w)), images)
    ramp = types.Constant(_tv_policy_coordinates, device=images.device)
    x = _tv_policy_ramp(ramp, width, [1, -1, 1]) - scalars[8]
    y = _tv_policy_ramp(ramp, height, [-1, 1, 1]) - scalars[9]
    gx = ((x * scalars[0]) + (y * scalars[1])) + scalars[2]
    gy = ((x * scalars[3]) + (y * scalars[4])) + scalars[5]
    sx = _tv_policy_fma32(gx + 1.0, scalars[6], -0.5)
    sy = _tv_policy_fma32(gy + 1.0, scalars[7], -0.5)
    return sx, sy, scalars, ramp, (h, w, half_w, half_h)


def _tv_policy_canvas_warp(images, size, theta, sizes, ramp, shifts, bias):
    """DALI's nearest warp, `bias` pixels off torch's source, of a canvas holding the image shifted by each
    (dx, dy) of `shifts` (3 float32 channels each) and the canvas' own x and y (2 channels). Returns the
    copies at each output pixel and the pixel DALI picked (x, y in image pixels): torch's pick is then at a
    known shift from it, whatever DALI's own rounding did."""
    pad = _tv_policy_pad
    height, width = size
    h, w, half_w, half_h = sizes
    t = theta
    # DALI maps output pixel centres (u, v) to canvas coordinates; torch's source, in the same continuous
    # coordinates, is theta about the image centre (w / 2, h / 2).
    shift_x = half_w - t[0] * half_w - t[1] * half_h + (t[2] + (pad + bias))
    shift_y = half_h - t[3] * half_w - t[4] * half_h + (t[5] + (pad + bias))
    matrix = fn.reshape(fn.stack(*_tv_policy_nodes([t[0], t[1], shift_x, t[3], t[4], shift_y], half_w)), shape=[2, 3])
    padded_h, padded_w = height + 2 * pad, width + 2 * pad
    canvas_shape = fn.stack(padded_h, padded_w)
    levels = fn.cast(images, dtype=types.FLOAT)
    copies = [fn.slice(levels, start=[dy - pad, dx - pad], shape=canvas_shape, axis_names="HW",
                       out_of_bounds_policy="pad", fill_values=0.0) for dx, dy in shifts]
    cols = _tv_policy_ramp(ramp, padded_w, [1, -1, 1])
    rows = _tv_policy_ramp(ramp, padded_h, [-1, 1, 1])
    canvas = fn.cat(*copies, cols + rows * 0.0, rows + cols * 0.0, axis=2)
    warped = fn.warp_affine(canvas, matrix=matrix, size=fn.stack(h, w), fill_value=0.0,
                            interp_type=types.INTERP_NN, inverse_map=True)
    n = 3 * len(shifts)
    copies = [warped[:, :, 3 * k:3 * k + 3] for k in range(len(shifts))]
    return copies, warped[:, :, n:n + 1] - float(pad), warped[:, :, n + 1:n + 2] - float(pad)


def _tv_policy_nearest(images, size, theta):
    """grid_sample nearest: torch's source rounded half to even; outside the image, 0. DALI picks
    floor(source + 0.25), a quarter pixel back, so torch's pick is that pixel or the next, in x and in y."""
    sx, sy, scalars, ramp, sizes = _tv_policy_source(images, size, theta)
    rx, ry = _tv_policy_rint(sx), _tv_policy_rint(sy)
    shifts = [(0, 0), (1, 0), (0, 1), (1, 1)]
    (c00, c10, c01, c11), px, py = _tv_policy_canvas_warp(images, size, theta, sizes, ramp, shifts, -0.25)
    dx, dy = rx - px, ry - py  # 0 or 1
    top = c00 + (c10 - c00) * dx
    bottom = c01 + (c11 - c01) * dx
    inside = (rx >= 0.0) & (rx <= scalars[10]) & (ry >= 0.0) & (ry <= scalars[11])
    return fn.cast((top + (bottom - top) * dy) * inside, dtype=types.UINT8)


def _tv_policy_bilinear(images, size, theta):
    """grid_sample bilinear, zero padding: the four taps around torch's source weighted by its float32
    distances and summed in its order (the first product rounded, the other three fused), then rounded half
    to even. DALI picks floor(source - 0.5), so the taps floor(source) and the next are 0 to 2 pixels on."""
    sx, sy, scalars, ramp, sizes = _tv_policy_source(images, size, theta)
    x0, y0 = dmath.floor(sx), dmath.floor(sy)
    # torch's names: w and n the distances from the west and north taps, e = 1 - w, s = 1 - n.
    w, n = sx - x0, sy - y0
    e, s = 1.0 - w, 1.0 - n
    shifts = [(dx, dy) for dy in range(3) for dx in range(3)]
    copies, px, py = _tv_policy_canvas_warp(images, size, theta, sizes, ramp, shifts, -1.0)
    dx, dy = x0 - px, y0 - py  # 0 or 1
    rows = [[copies[b * 3 + k] + (copies[(b + 1) * 3 + k] - copies[b * 3 + k]) * dy for b in range(2)]
            for k in range(3)]
    taps = [[rows[a][b] + (rows[a + 1][b] - rows[a][b]) * dx for b in range(2)] for a in range(2)]
    in_x = [(x0 >= 0.0) & (x0 <= scalars[10]), (x0 >= -1.0) & (x0 <= scalars[10] - 1.0)]
    in_y = [(y0 >= 0.0) & (y0 <= scalars[11]), (y0 >= -1.0) & (y0 <= scalars[11] - 1.0)]
    value = [[taps[a][b] * (in_x[a] & in_y[b]) for b in range(2)] for a in range(2)]  # 0 outside the image
    nw, ne, sw, se = value[0][0], value[1][0], value[0][1], value[1][1]
    total = nw * (s * e)
    total = _tv_policy_fma32(ne, s * w, total)
    total = _tv_policy_fma32(sw, n * e, total)
    total = _tv_policy_fma32(se, n * w, total)
    return fn.cast(dmath.clamp(_tv_policy_rint(total), 0.0, 255.0), dtype=types.UINT8)


def _tv_policy_affine(images, theta, interpolation):
    """torchvision's affine_image / rotate_image (same size, fill None) for its inverse matrix `theta`
    (6 values: float64 nodes or numbers)."""
    _tv_policy_check(interpolation)
    hw = images.shape(dtype=types.INT32)
    size = (hw[0], hw[1])
    theta = _tv_policy_float32(theta)
    if interpolation == "nearest":
        return _tv_policy_nearest(images, size, theta)
    return _tv_policy_bilinear(images, size, theta)


def tv_policy_rotate(images, degrees, interpolation="nearest"):
    """Rotate by `degrees` counter-clockwise about the centre, same size, 0 outside. torch's matrix, from
    radians(-(degrees % 360)): [cos, sin, 0, -sin, cos, 0]."""
    d = fn.cast(degrees, dtype=types.FLOAT64)
    angle = d - dmath.floor(d / 360.0) * 360.0  # Python's degrees % 360, for angles of a few turns
    radians = _tv_policy_radians(0.0 - angle)
    cos, sin = dmath.cos(radians), dmath.sin(radians)
    return _tv_policy_affine(images, [cos, sin, 0.0, 0.0 - sin, cos, 0.0], interpolation)


def _tv_policy_sizes64(images):
    """The images' height and width as float64 (torch's matrix arithmetic is in Python floats)."""
    hw = images.shape(dtype=types.FLOAT64)
    return hw[0], hw[1]


def tv_policy_shear_x(images, degrees, interpolation="nearest"):
    """ShearX by the angle `degrees` about the top-left corner (torchvision's center=[0, 0]): torch's
    matrix about the image centre [1, t, -t * cy, 0, 1, 0], t = tan(radians(degrees)), cy = -h / 2."""
    t = dmath.tan(_tv_policy_radians(degrees))
    height, _ = _tv_policy_sizes64(images)
    return _tv_policy_affine(images, [1.0, t, 0.0 - t * (height * -0.5), 0.0, 1.0, 0.0], interpolation)


def tv_policy_shear_y(images, degrees, interpolation="nearest"):
    """ShearY by the angle `degrees` about the top-left corner: torch's matrix [1, 0, 0, c, 1, f] with
    c = sin(a) / cos(a) and f = (cy - c * cx) - cy, cx = -w / 2, cy = -h / 2, as its float64 steps give."""
    a = _tv_policy_radians(degrees)
    c = dmath.sin(a) / dmath.cos(a)
    height, width = _tv_policy_sizes64(images)
    cy = height * -0.5
    return _tv_policy_affine(images, [1.0, 0.0, 0.0, c, 1.0, (cy - c * (width * -0.5)) - cy], interpolation)


def _tv_policy_translate(images, pixels, axis):
    """Move the image by int(pixels) (truncated toward 0) along x (axis 0) or y (axis 1), 0 where it
    uncovers: whole pixels, which torch's nearest and bilinear sampling (and DALI's warp) give exactly."""
    p = fn.cast(pixels, dtype=types.FLOAT)
    back = dmath.floor(dmath.abs(p)) * (2.0 * (p < 0.0) - 1.0)  # -int(pixels)
    offsets = [back, 0.0] if axis == 0 else [0.0, back]
    matrix = fn.reshape(fn.stack(*_tv_policy_nodes([1.0, 0.0, offsets[0], 0.0, 1.0, offsets[1]], back)), shape=[2, 3])
    return fn.warp_affine(images, matrix=matrix, fill_value=0, interp_type=types.INTERP_NN, inverse_map=True)


def tv_policy_translate_x(images, pixels, interpolation="nearest"):
    """TranslateX by int(pixels) to the right (negative: left), 0 where it uncovers."""
    _tv_policy_check(interpolation)
    return _tv_policy_translate(images, pixels, 0)


def tv_policy_translate_y(images, pixels, interpolation="nearest"):
    """TranslateY by int(pixels) down (negative: up), 0 where it uncovers."""
    _tv_policy_check(interpolation)
    return _tv_policy_translate(images, pixels, 1)


def tv_policy_magnitude(images, row, table, coin):
    """Each sample's magnitude from row `row` of `table` (ops/policies_torchvision.py's magnitude_row), as
    torchvision's space gives it: base + sign x delta, the sign -1 where the op is signed and `coin` is 1;
    a translation of RandAugment's space takes as delta int(torch.linspace(0, share x side, bins)[index]),
    computed as torch computes it (a float32 step, one rounding of step x index); NaN without a magnitude."""
    rows = np.asarray(table, dtype=np.float64).reshape(-1, 9)

    def column(j, dtype=np.float32):
        return types.Constant(np.ascontiguousarray(rows[:, j].astype(dtype)))[row]

    base = types.Constant(np.where(rows[:, 8] > 0, rows[:, 0], np.nan).astype(np.float32))[row]
    axis, share = column(3), column(4, np.float64)
    hw = fn.cast(images.shape(), dtype=types.FLOAT64)
    side = (axis == 1.0) * hw[1] + (axis == 2.0) * hw[0]
    end = fn.cast(side * share, dtype=types.FLOAT)  # torch's float32 end
    step = fn.cast(end / column(7), dtype=types.FLOAT64)  # ... and float32 step
    from_end = column(6, np.float64)
    shifted = from_end * fn.cast(end, dtype=types.FLOAT64) + (1.0 - 2.0 * from_end) * step * column(5, np.float64)
    delta = column(1) + (axis > 0.0) * dmath.floor(fn.cast(shifted, dtype=types.FLOAT))
    sign = 1.0 - 2.0 * column(2) * fn.cast(coin, dtype=types.FLOAT)
    return base + sign * delta
