"""DALI degradation functions (ops/degrade.py): box blur, Downscale, ISONoise, Sharpen, Emboss, UnsharpMask and
Defocus, as Albumentations (OpenCV) computes them, each sample with its own kernel or factor.

Images come in the pipeline's units: 0-255 uint8 before a Normalize (`scale` 255.0 or `uint8` True),
[0, 1]-based floats after it. Borders mirror without repeating the edge pixel (reflect_101).
"""
import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert

# --------------------------------------------------------------------------------------------
# Blur (box)


@do_not_convert
def degrade_box_blur(images, sizes, k):
    """The mean of each sample's drawn odd `sizes` x `sizes` window: its box (weights 1 / size^2) in the
    middle of one k x k grid (k the range's largest size), zero outside, in one fn.filter (DALI has no
    box filter that takes a size per sample)."""
    grid = np.abs(np.arange(float(k), dtype=np.float32) - float(k // 2))
    u = types.Constant(np.tile(grid, (k, 1)))
    v = types.Constant(np.tile(grid[:, None], (1, k)))
    half = dmath.floor(sizes / 2.0)
    kernel = fn.cast((u <= half) & (v <= half), dtype=types.FLOAT) / (sizes * sizes)
    return fn.filter(images, kernel, border="reflect_101")


# --------------------------------------------------------------------------------------------
# Downscale

@do_not_convert
def _degrade_round_even(t):
    """`t` rounded to the nearest integer, ties to even, as OpenCV's cvRound sizes the small image."""
    return (dmath.floor(t + 0.5) - fn.cast(dmath.floor(t + 0.5) - (t) == 0.5, dtype=types.FLOAT)
            * (dmath.floor(t + 0.5) - 2.0 * dmath.floor(dmath.floor(t + 0.5) * 0.5)))


@do_not_convert
def _degrade_resize(source, out_h, out_w, step_h, step_w, interp):
    """`source` resized to out_h x out_w as cv2.resize does (`interp` types.INTERP_NN or INTERP_LINEAR),
    `step_h`, `step_w` source pixels an output pixel: output pixel i samples source coordinate
    (i + 0.5) x step (DALI's pixel centres) through a region of interest; nearest picks floor(i x step),
    the pixel containing (i + 0.5) x step - 0.5 x step (plus 1/1000 of a pixel: a float32 i x step just
    below a whole number picks as exact arithmetic does); no antialiasing."""
    shift = 0.5 if interp == types.INTERP_NN else 0.0
    nudge = 0.001 if interp == types.INTERP_NN else 0.0
    start = fn.stack(nudge - shift * step_h, nudge - shift * step_w)
    end = fn.stack(out_h * step_h - shift * step_h + nudge, out_w * step_w - shift * step_w + nudge)
    return fn.resize(source, size=fn.stack(out_h, out_w), roi_start=start, roi_end=end, roi_relative=False,
                     antialias=False, interp_type=interp)


@do_not_convert
def degrade_downscale(images, scale, height, width, down, up):
    """The images shrunk by each sample's `scale` to round(side x scale) pixels (ties to even, as
    cvRound; at least 1) with resampling `down`, then resized back to height x width with `up` (each
    types.INTERP_NN or types.INTERP_LINEAR)."""
    small_h = dmath.max(_degrade_round_even(height * scale), 1.0)
    small_w = dmath.max(_degrade_round_even(width * scale), 1.0)
    small = _degrade_resize(images, small_h, small_w, (1.0 / scale), (1.0 / scale), down)
    return _degrade_resize(small, height, width, (small_h / height), (small_w / width), up)


# --------------------------------------------------------------------------------------------
# ISONoise

@do_not_convert
def degrade_iso_noise(images, color_shift, intensity, scale, shot_seed, hue_seed):
    """Albumentations' ISONoise in OpenCV's HLS (see wb_rgb_to_hls / wb_hls_to_rgb, the Kornia module's):
    each pixel's lightness L grows by n x intensity x (1 - L), n Poisson counts from fn.noise.shot of mean
    intensity x the std of L (a map of the per-sample value, so the image's own statistic never becomes a
    named argument, which a GPU node cannot be), and its hue (degrees) by normal draws of standard
    deviation color_shift x intensity (fn.random.normal shaped like the lightness map)."""
    xf = dmath.clamp(fn.cast(images, dtype=types.FLOAT) / float(scale), 0.0, 1.0)
    r, g, b = xf[:, :, 0], xf[:, :, 1], xf[:, :, 2]
    high = dmath.max(dmath.max(r, g), b)
    low = dmath.min(dmath.min(r, g), b)
    light = (high + low) * 0.5
    diff = high - low
    # OpenCV leaves hue and saturation 0 where max - min is below FLT_EPSILON.
    some = fn.cast(diff > 1.1920929e-07, dtype=types.FLOAT)
    lower = fn.cast(light < 0.5, dtype=types.FLOAT)
    den = lower * (high + low) + (1.0 - lower) * (2.0 - high - low) + (1.0 - some)
    sat = some * diff / den
    is_r = fn.cast(high == r, dtype=types.FLOAT)
    is_g = fn.cast(high == g, dtype=types.FLOAT) * (1.0 - is_r)
    is_b = 1.0 - is_r - is_g
    hue = ((is_r * (g - b) + is_g * (b - r) + is_b * (r - g)) * 60.0 / (diff + 1.0 - some) + is_g * 120.0
           + is_b * 240.0)
    hue = some * (hue + 360.0 * fn.cast(hue < 0.0, dtype=types.FLOAT))
    rate = fn.reductions.std_dev(light, fn.reductions.mean(light)) * intensity
    counts = fn.noise.shot(light * 0.0 + rate, factor=1.0, seed=shot_seed)
    hue_noise = fn.random.normal(light, stddev=color_shift * intensity, seed=hue_seed)
    light = dmath.clamp(light + counts * intensity * (1.0 - light), 0.0, 1.0)
    hue = hue + hue_noise
    a = sat * dmath.min(light, 1.0 - light)
    channels = []
    for n in (0.0, 8.0, 4.0):
        k = (n + hue / 30.0)
        k = (k - 12.0 * dmath.floor(k / 12.0))
        channels.append(light - a * dmath.clamp(dmath.min(k - 3.0, 9.0 - k), -1.0, 1.0))
    rgb = dmath.clamp(fn.reshape(fn.stack(*channels, axis=2), layout="HWC"), 0.0, 1.0)
    if scale == 255.0:
        return fn.cast(rgb * 255.0, dtype=types.UINT8)
    return rgb


# --------------------------------------------------------------------------------------------
# Sharpen, Emboss: Albumentations' 3x3 kernels blended with the identity by a per-image alpha

_DEGRADE_IDENTITY3 = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


@do_not_convert
def _degrade_constant3(rows):
    """A 3x3 float32 constant node."""
    return types.Constant(np.array(rows, dtype=np.float32))


@do_not_convert
def _degrade_kernel3(images, alpha, base, ramp, amount, uint8):
    """The images correlated with each sample's 3x3 kernel (1 - alpha) x identity + (base + ramp x amount)
    x alpha (mirrored borders), clipped to the value range as OpenCV's filter2D into uint8 saturates
    (fn.filter rounds and saturates on uint8 itself)."""
    kernel = (_degrade_constant3(_DEGRADE_IDENTITY3) * (1.0 - alpha)
              + (_degrade_constant3(base) + _degrade_constant3(ramp) * amount) * alpha)
    if uint8:
        return fn.filter(images, kernel, border="reflect_101")
    return dmath.clamp(fn.filter(images, kernel, border="reflect_101"), 0.0, 1.0)


@do_not_convert
def degrade_sharpen(images, alpha, lightness, uint8):
    """Albumentations' Sharpen: the kernel [[-1, -1, -1], [-1, 8 + lightness, -1], [-1, -1, -1]] blended
    with the identity by alpha."""
    effect = [[-1.0, -1.0, -1.0], [-1.0, 8.0, -1.0], [-1.0, -1.0, -1.0]]
    centre = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    return _degrade_kernel3(images, alpha, effect, centre, lightness, uint8)


@do_not_convert
def degrade_emboss(images, alpha, strength, uint8):
    """Albumentations' Emboss: the relief kernel [[-1 - s, -s, 0], [-s, 1, s], [0, s, 1 + s]] (lit from
    the top left, s the strength) blended with the identity by alpha."""
    base = [[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    ramp = [[-1.0, -1.0, 0.0], [-1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]
    return _degrade_kernel3(images, alpha, base, ramp, strength, uint8)


# --------------------------------------------------------------------------------------------
# UnsharpMask, Defocus: OpenCV's Gaussian kernels built per sample (see wb_cv_gaussian_taps, the
# Kornia modules' twin of this arithmetic)

# cv2.getGaussianKernel's fixed kernels for sigma <= 0 at sizes 3 to 9.
_DEGRADE_CV_SMALL = {
    3: (0.25, 0.5, 0.25),
    5: (0.0625, 0.25, 0.375, 0.25, 0.0625),
    7: (0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125),
    9: (0.015625, 0.05078125, 0.1171875, 0.19921875, 0.234375, 0.19921875, 0.1171875, 0.05078125, 0.015625),
}


@do_not_convert
def _degrade_constant(values, shape):
    """A float32 constant node of `values` shaped `shape`."""
    return types.Constant(np.reshape(np.array([float(v) for v in values], dtype=np.float32), shape))


@do_not_convert
def _degrade_cv_taps(size, sigma, width, shape):
    """Each sample's OpenCV 1-D Gaussian kernel (cv2.getGaussianKernel) of odd size `size` and `sigma`
    (per-sample nodes) in the middle of `width` taps, zero outside its own size, shaped `shape` ((width, 1)
    or (1, width)); a sigma <= 0 is OpenCV's choice for the size (its fixed kernels at 3 to 9, sigma
    0.3 ((size - 1) / 2 - 1) + 0.8 above)."""
    half = width // 2
    offsets = [float(i - half) for i in range(width)]
    x = _degrade_constant([o * o for o in offsets], shape)
    inside = fn.cast(_degrade_constant([abs(o) for o in offsets], shape) <= (size - 1.0) / 2.0, dtype=types.FLOAT)
    pos = fn.cast(sigma > 0.0, dtype=types.FLOAT)
    spread = pos * sigma + (1.0 - pos) * (0.3 * ((size - 1.0) * 0.5 - 1.0) + 0.8)
    # (a sigma of 0 reads 1 here; its taps are replaced by the fixed ones below)
    taps = dmath.exp(-x / (2.0 * dmath.max(spread, 1e-3) * dmath.max(spread, 1e-3))) * inside
    taps = taps / fn.reductions.sum(taps)
    for n, values in _DEGRADE_CV_SMALL.items():
        if n <= width:
            fixed = [0.0] * (half - n // 2) + list(values) + [0.0] * (half - n // 2)
            use = (1.0 - pos) * fn.cast(size == float(n), dtype=types.FLOAT)
            taps = taps * (1.0 - use) + _degrade_constant(fixed, shape) * use
    return taps


@do_not_convert
def degrade_unsharp_mask(images, sizes, sigma, alpha, width, threshold, scale):
    """A.UnsharpMask's arithmetic (fpixel.unsharp_mask) on each sample's own kernel (odd size `sizes`,
    `sigma`, in the middle of `width` taps): the blur is two fn.filter passes with the per-sample 1-D
    kernels in float; residuals above `threshold` grey levels make a mask, blurred the same way, that
    blends the sharpened image over the original; rounded to uint8 at the end before a Normalize, as
    Albumentations rounds its float result."""
    col = _degrade_cv_taps(sizes, sigma, width, (width, 1))
    row = _degrade_cv_taps(sizes, sigma, width, (1, width))

    def blur(source):
        return fn.filter(fn.filter(source, col, border="reflect_101", dtype=types.FLOAT), row,
                         border="reflect_101", dtype=types.FLOAT)

    xf = fn.cast(images, dtype=types.FLOAT)
    residual = xf - blur(images)
    sharp = dmath.clamp(xf + alpha * residual, 0.0, float(scale))
    soft = blur(fn.cast(dmath.abs(residual) * (255.0 / scale) > float(threshold), dtype=types.FLOAT))
    out = sharp * soft + xf * (1.0 - soft)
    if scale == 255.0:
        return fn.cast(dmath.clamp(dmath.floor(out + 0.5), 0.0, 255.0), dtype=types.UINT8)
    return out


@do_not_convert
def degrade_defocus(images, radius, alias_blur, half):
    """Albumentations' defocus (wb_defocus_kernels): each sample's disk of its drawn `radius`, blurred by
    OpenCV's 3- or 5-tap Gaussian of sigma `alias_blur`, on one grid of 2 half + 1 taps (half = max(8,
    the range's largest radius)), then one fn.filter, mirrored borders. The blurred disk is the weighted
    sum of the disk moved by each tap, the moved coordinates mirrored at the sample's own grid edge
    g = max(8, r) (reflect-101); zero outside that grid."""
    grid = [float(i - half) for i in range(2 * half + 1)]
    width = 2 * half + 1
    u = types.Constant(np.tile(np.array(grid, dtype=np.float32), (width, 1)))
    v = types.Constant(np.tile(np.array(grid, dtype=np.float32)[:, None], (1, width)))
    r2 = radius * radius
    g = dmath.max(radius, 8.0)
    big = fn.cast(radius > 8.0, dtype=types.FLOAT)
    pos = fn.cast(alias_blur > 0.0, dtype=types.FLOAT)
    sig = dmath.max(alias_blur, 1e-3)
    e1 = dmath.exp(-1.0 / (2.0 * sig * sig))
    e2 = dmath.exp(-4.0 / (2.0 * sig * sig)) * big
    # Gaussian taps for sigma > 0; OpenCV's fixed (0.25, 0.5, 0.25) or (1, 4, 6, 4, 1) / 16 for 0.
    w0 = pos / (1.0 + 2.0 * e1 + 2.0 * e2) + (1.0 - pos) * (0.5 - 0.125 * big)
    w1 = pos * e1 / (1.0 + 2.0 * e1 + 2.0 * e2) + (1.0 - pos) * 0.25
    w2 = pos * e2 / (1.0 + 2.0 * e1 + 2.0 * e2) + (1.0 - pos) * 0.0625 * big
    count = fn.reductions.sum(fn.cast(u * u + v * v <= r2, dtype=types.FLOAT))
    weights = {0: w0, 1: w1, -1: w1, 2: w2, -2: w2}
    moved = {}
    for axis, base in (("y", v), ("x", u)):
        for k in range(-2, 3):
            t = (base + float(k))
            m = t - 2.0 * dmath.max(t - g, 0.0) + 2.0 * dmath.max(-g - t, 0.0)
            moved[axis, k] = m * m
    disk = None
    for i in range(-2, 3):
        for j in range(-2, 3):
            term = weights[i] * weights[j] * fn.cast(moved["y", i] + moved["x", j] <= r2, dtype=types.FLOAT)
            disk = term if disk is None else disk + term
    kernel = disk * fn.cast((dmath.abs(u) <= g) & (dmath.abs(v) <= g), dtype=types.FLOAT) / count
    return fn.filter(images, kernel, border="reflect_101")
