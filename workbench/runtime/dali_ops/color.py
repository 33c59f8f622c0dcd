"""DALI colour functions: the colour ops of ops/color.py and ops/color_adjust.py (factors,
HSV shifts, grey, value maps, histogram stretches, sharpness, channel order), Kornia's
arithmetic written out so that DALI gives Kornia's values.

Images come in the pipeline's units: 0-255 uint8 before a Normalize (`uint8=True`), floats
after it; every function returns them in the same units. On uint8 the value maps compute in
float and round back once; after a Normalize they clamp the input (and the result) to [0, 1],
as Kornia clamps them.
"""
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert


@do_not_convert
def to_unit(images, uint8):
    """The images as [0, 1] floats (uint8 / 255, or clamped after a Normalize)."""
    return images / 255.0 if uint8 else dmath.clamp(images, 0.0, 1.0)


@do_not_convert
def from_unit(values, uint8):
    """[0, 1] values back in the images' units (truncated to uint8 before a Normalize)."""
    if uint8:
        return fn.cast(dmath.clamp(values, 0.0, 1.0) * 255.0, dtype=types.UINT8)
    return dmath.clamp(values, 0.0, 1.0)


@do_not_convert
def colour_brightness(images, factor, uint8):
    """The images with every value scaled by `factor` (torchvision's brightness)."""
    if uint8:
        return fn.brightness(images, brightness=factor)
    return dmath.clamp(fn.brightness(dmath.clamp(images, 0.0, 1.0), brightness=factor), 0.0, 1.0)


@do_not_convert
def colour_contrast(images, factor, uint8):
    """The images blended with their mean grey by `factor` (torchvision's contrast: the centre is
    the mean of the BT.601 grey image). The centre enters arithmetic, never `fn.contrast`: a GPU
    node cannot be an operator's named argument."""
    x = images if uint8 else dmath.clamp(images, 0.0, 1.0)
    means = fn.reductions.mean(x, axes=(0, 1))
    centre = (means[0] * 0.299 + means[1] * 0.587 + means[2] * 0.114) * (1.0 - factor)
    if uint8:
        return fn.cast(dmath.clamp(x * factor + centre, 0.0, 255.0), dtype=types.UINT8)
    return dmath.clamp(x * factor + centre, 0.0, 1.0)


@do_not_convert
def colour_saturation(images, factor, uint8):
    """The images blended with their greyscale by `factor` (0 = grey, 1 = unchanged)."""
    if uint8:
        return fn.saturation(images, saturation=factor)
    return dmath.clamp(fn.saturation(dmath.clamp(images, 0.0, 1.0), saturation=factor), 0.0, 1.0)


def _colour_mod6(values):
    """`values` modulo 6 (floored, as Python's %), the wrap of a hue in sextants."""
    return values - dmath.floor(values / 6.0) * 6.0


@do_not_convert
def colour_hsv_shift(images, hue, uint8, saturation=None, value=None):
    """The images with their hue rotated by `hue` sextants (1 = 60 degrees) and, when given,
    `saturation` and `value` ([0, 1] units) added to HSV saturation and value, clamped to [0, 1].

    Kornia's adjust_hue (and torchvision's) exactly: H in sextants from the first largest channel
    (R, then G, then B, as torch's max picks), S = chroma / max, V = max; back to RGB by
    v - v * s * clamp(min(k, 4 - k), 0, 1), k = (h + n) mod 6 with n = 5, 3, 1 for R, G, B."""
    f = to_unit(images, uint8)
    r, g, b = f[:, :, 0], f[:, :, 1], f[:, :, 2]
    top = dmath.max(dmath.max(r, g), b)
    span = top - dmath.min(dmath.min(r, g), b)
    safe = span + (span <= 0.0)  # 1 where the pixel is grey (its hue is 0 then)
    is_r = r >= top
    is_g = (g >= top) * (1 - is_r)
    h = is_r * _colour_mod6((g - b) / safe) + is_g * ((b - r) / safe + 2.0) + (1 - is_r - is_g) * ((r - g) / safe + 4.0)
    h = _colour_mod6(h + hue)
    chroma = span / (top + (top <= 0.0))  # 0 on black, as Kornia's divisor guard
    s = chroma if saturation is None else (span > 0.0) * dmath.clamp(chroma + saturation, 0.0, 1.0)
    v = top if value is None else dmath.clamp(top + value, 0.0, 1.0)
    channels = []
    for n in (5.0, 3.0, 1.0):
        k = _colour_mod6(h + n)
        channels.append(v - v * s * dmath.clamp(dmath.min(k, 4.0 - k), 0.0, 1.0))
    return from_unit(fn.reshape(fn.stack(*channels, axis=2), layout="HWC"), uint8)


@do_not_convert
def colour_luma_grey(images, applied):
    """The images' BT.601 luma in all three channels where `applied` (a 0/1 node, or 1), else the
    images: saturation 0 or 1 per sample."""
    return fn.saturation(images, saturation=1.0 - applied)


def _colour_grey_mix(images, grey, applied, uint8):
    """The one-channel `grey` (float) in all three channels where `applied` (a 0/1 node, or 1),
    else the images; the grey rounded to a level on uint8."""
    if uint8:
        grey = fn.cast(grey, dtype=types.UINT8)
    grey = fn.reshape(fn.stack(grey, grey, grey, axis=2), layout="HWC")
    mix = applied * grey + (1 - applied) * images
    return fn.cast(mix, dtype=types.UINT8) if uint8 else mix


def _colour_rgb(images):
    """The images' three channels as floats."""
    f = fn.cast(images, dtype=types.FLOAT)
    return f[:, :, 0], f[:, :, 1], f[:, :, 2]


@do_not_convert
def colour_grey_average(images, applied, uint8):
    """The images' channel mean as grey where `applied` (see _colour_grey_mix)."""
    r, g, b = _colour_rgb(images)
    return _colour_grey_mix(images, (r + g + b) / 3.0, applied, uint8)


@do_not_convert
def colour_grey_max(images, applied, uint8):
    """The images' largest channel as grey where `applied` (see _colour_grey_mix)."""
    r, g, b = _colour_rgb(images)
    return _colour_grey_mix(images, dmath.max(dmath.max(r, g), b), applied, uint8)


@do_not_convert
def colour_grey_desaturation(images, applied, uint8):
    """The images' mid-range (max + min) / 2 as grey where `applied` (see _colour_grey_mix)."""
    r, g, b = _colour_rgb(images)
    return _colour_grey_mix(images, (dmath.max(dmath.max(r, g), b) + dmath.min(dmath.min(r, g), b)) / 2.0, applied,
                            uint8)


@do_not_convert
def colour_invert(images, uint8):
    """1 - v in [0, 1] units (255 - v on uint8); not clamped after a Normalize."""
    if uint8:
        return fn.cast(255 - images, dtype=types.UINT8)  # int arithmetic promotes to int32
    return 1.0 - images


@do_not_convert
def colour_solarize(images, threshold, uint8):
    """The images with every value at or above `threshold` ([0, 1] units) inverted; compared in
    [0, 1] units as Kornia compares (float32 v / 255 >= t), so a threshold that falls on a level
    splits the same pixels."""
    if uint8:
        on = images / 255.0 >= threshold
        return fn.cast(images + on * (255 - 2 * images), dtype=types.UINT8)
    # A 0/1 mask selects exactly: 1 * (1 - v) + 0 * v is 1 - v to the last bit.
    v = dmath.clamp(images, 0.0, 1.0)
    on = v >= threshold
    return on * (1.0 - v) + (1 - on) * v


@do_not_convert
def colour_posterize(images, bits, uint8):
    """The images with the top `bits` bits of each 8-bit level kept: flooring to a multiple of
    2 ** (8 - bits), exact in float."""
    step = dmath.pow(2.0, 8.0 - bits)
    if uint8:
        return fn.cast(dmath.floor(images / step) * step, dtype=types.UINT8)
    # Kornia's float path: levels by truncation (x * 255 to uint8), then the same flooring.
    return dmath.floor(dmath.floor(dmath.clamp(images, 0.0, 1.0) * 255.0) / step) * step / 255.0


@do_not_convert
def colour_gamma(images, gamma, uint8):
    """The images in [0, 1] units raised to the power `gamma`."""
    if uint8:
        return fn.cast(dmath.pow(images / 255.0, gamma) * 255.0, dtype=types.UINT8)
    return dmath.pow(dmath.clamp(images, 0.0, 1.0), gamma)


@do_not_convert
def colour_equalize(images, uint8, rounded):
    """OpenCV's histogram equalisation of each channel. fn.equalize takes uint8 only: after a
    Normalize, on the 8-bit levels the Kornia module uses (x * 255 truncated, or rounded when
    `rounded`, mode cv), back to [0, 1]."""
    if uint8:
        return fn.equalize(images)
    scaled = dmath.clamp(images, 0.0, 1.0) * 255.0
    levels = fn.cast(dmath.floor(scaled + 0.5 if rounded else scaled), dtype=types.UINT8)
    return fn.cast(fn.equalize(levels), dtype=types.FLOAT) / 255.0


@do_not_convert
def colour_auto_contrast(images, uint8):
    """Each channel stretched so that its minimum becomes 0 and its maximum 1 (255 on uint8); a
    constant channel becomes 0, as Kornia's (x - min) / (max - min + 1e-6) makes it."""
    lo = fn.reductions.min(images, axes=(0, 1))
    span = fn.reductions.max(images, axes=(0, 1)) - lo
    if uint8:
        return fn.cast((images - lo) * (255.0 / dmath.max(span, 1)), dtype=types.UINT8)
    return dmath.clamp((images - lo) / (span + 1e-6), 0.0, 1.0)


@do_not_convert
def colour_sharpness(images, factor, height, width, uint8):
    """torchvision's sharpness: the images blended with their 3x3-smoothed copy (PIL's SMOOTH:
    centre 5, neighbours 1, over 13) by `factor`; the one-pixel border keeps its values (a 0/1
    `edge` mask selects them exactly). `height` and `width` are float nodes of the size."""
    top = 255.0 if uint8 else 1.0
    x = dmath.clamp(fn.cast(images, dtype=types.FLOAT), 0.0, top)
    smooth = fn.constant(fdata=[1 / 13] * 4 + [5 / 13] + [1 / 13] * 4, shape=[3, 3])
    blur = dmath.clamp(fn.filter(x, smooth), 0.0, top)  # its border is replaced below
    edge = fn.erase(x * 0.0 + 1.0, anchor=(1.0, 1.0), shape=fn.stack(height - 2.0, width - 2.0), axis_names="HW",
                    fill_value=0.0)
    sharp = dmath.clamp(blur + (x - blur) * factor, 0.0, top)
    out = edge * x + (1.0 - edge) * sharp
    return fn.cast(out, dtype=types.UINT8) if uint8 else out


@do_not_convert
def colour_permutation(k):
    """The k-th (0..5) of the six orders of three channels, one per row (k drawn per sample)."""
    return fn.constant(idata=[0, 1, 2, 0, 2, 1, 1, 0, 2, 1, 2, 0, 2, 0, 1, 2, 1, 0], shape=[6, 3])[k]


@do_not_convert
def colour_channel_shuffle(images, permutation):
    """The images with their channels reordered: output channel c is input channel permutation[c]."""
    channels = [images[:, :, permutation[c]] for c in range(3)]
    return fn.reshape(fn.stack(*channels, axis=2), layout="HWC")  # stack leaves no layout


@do_not_convert
def colour_brightness_contrast(images, brightness, contrast, by_max, uint8):
    """Albumentations' RandomBrightnessContrast in [0, 1] units: x * (1 + contrast) + brightness
    (brightness times the image's mean when not `by_max`), clamped."""
    f = to_unit(images, uint8)
    offset = brightness if by_max else brightness * fn.reductions.mean(f)
    return from_unit(f * (1.0 + contrast) + offset, uint8)


@do_not_convert
def colour_rgb_shift(images, r_shift, g_shift, b_shift, uint8):
    """Albumentations' RGBShift: the three shifts (levels of 255) added to the red, green and blue
    channels, clamped."""
    return from_unit(to_unit(images, uint8) + fn.stack(r_shift, g_shift, b_shift) / 255.0, uint8)


@do_not_convert
def jitter_order(keys):
    """(ranks, order) of ColorJitter's per-sample random order from four uniform `keys`, one per
    kind (0 brightness, 1 contrast, 2 saturation, 3 hue): a kind's rank is how many keys are
    smaller than its own (its position in the order), and `order` lists the kinds by position
    (what the step reports, as Kornia's WbColorJitter does)."""
    ranks = [sum(fn.cast(other < key, dtype=types.INT32) for other in keys if other is not key) for key in keys]
    order = fn.stack(*(sum(fn.cast(rank == position, dtype=types.INT32) * kind for kind, rank in enumerate(ranks))
                       for position in range(4)))
    return ranks, fn.cast(order, dtype=types.FLOAT)


@do_not_convert
def colour_jitter_in_order(images, brightness, contrast, saturation, hue, ranks, uint8):
    """Brightness, contrast, saturation and hue (as the single-kind functions; hue in turns) in each
    sample's own order (`ranks`, see jitter_order): at every position each kind is computed and a
    sample keeps the one of its rank there, an exact select (four times the work of a fixed order)."""
    adjust = (lambda x: colour_brightness(x, brightness, uint8), lambda x: colour_contrast(x, contrast, uint8),
              lambda x: colour_saturation(x, saturation, uint8), lambda x: colour_hsv_shift(x, hue * 6.0, uint8))
    for position in range(4):
        kept = None
        for rank, step in zip(ranks, adjust):
            chosen = fn.cast(rank == position, dtype=types.FLOAT)
            term = chosen * step(images)
            kept = term if kept is None else kept + term
        images = fn.cast(kept, dtype=types.UINT8) if uint8 else kept
    return images
