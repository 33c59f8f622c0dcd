"""DALI functions for CLAHE: OpenCV's CLAHE on OpenCV's 8-bit Lab lightness, with Kornia's Lab round trip.

Images come in the pipeline's units: 0-255 uint8 before a Normalize (`uint8=True`), [0, 1]-based
floats after it; every function returns them in the same units.
"""
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert

from ..opencv_lab import opencv_lab_tables
from .color import from_unit, to_unit


@do_not_convert
def clahe_clip(draw, levels):
    """(index, clip limit) of each sample's drawn clip limit `draw` rounded to the nearest of
    `levels` (fn.clahe takes one clip limit per operator); index None for one level."""
    if len(levels) == 1:
        return None, draw
    middles = [(low + high) / 2.0 for low, high in zip(levels, levels[1:])]
    above = (draw > middles[0]) * 1
    for middle in middles[1:]:
        above = above + (draw > middle) * 1
    index = fn.cast(above, dtype=types.INT32)
    return index, fn.lookup_table(index, keys=[*range(len(levels))], values=levels, dtype=types.FLOAT)


@do_not_convert
def opencv_lightness(images, uint8):
    """OpenCV's 8-bit Lab L of the images (one uint8 channel), as cv2.cvtColor(COLOR_RGB2LAB) gives
    it for uint8: the sRGB table, the fixed-point luminance (871, 2929, 296 of 4096, rounded half
    up), then the lightness table."""
    gamma, lightness = opencv_lab_tables()
    levels = images if uint8 else fn.cast(dmath.clamp(images * 255.0, 0.0, 255.0), dtype=types.UINT8)
    linear = fn.lookup_table(levels, keys=[*range(256)], values=[int(g) for g in gamma], dtype=types.FLOAT)
    y = fn.cast(dmath.floor((linear[:, :, 0:1] * 871.0 + linear[:, :, 1:2] * 2929.0 + linear[:, :, 2:3] * 296.0
                             + 2048.0) / 4096.0), dtype=types.INT32)
    return fn.lookup_table(y, keys=[*range(2041)], values=[int(v) for v in lightness], dtype=types.UINT8)


@do_not_convert
def on_whole_tiles(lightness, height, width, tiles_x, tiles_y):
    """The lightness padded at the bottom and right to whole tiles, mirrored without repeating the edge
    (reflect-101), as cv2's CLAHE pads it before it counts the tiles' histograms. DALI's CPU fn.clahe pads so
    itself; its GPU kernel makes the last tiles smaller instead and blends the tables over the unpadded
    size (1.95/255 from the CPU on an H200, 300 x 300 photos, 8 x 8 tiles): on whole tiles both compute
    OpenCV's CLAHE. An image whose pad would not fit inside it (a side shorter than a tile) is left as it
    is: cv2 mirrors such an image more than once, and the CPU kernel gives cv2's result on it unpadded."""
    # cv2 pads each side by tiles - (side % tiles) unless both sides divide: a whole tile more where
    # one side divides and the other does not.
    pad_h = tiles_y - (height - dmath.floor(height / tiles_y) * tiles_y)
    pad_w = tiles_x - (width - dmath.floor(width / tiles_x) * tiles_x)
    padding = ((pad_h < tiles_y) | (pad_w < tiles_x)) & (pad_h <= height - 1.0) & (pad_w <= width - 1.0)
    pad_h, pad_w = pad_h * padding, pad_w * padding
    below = fn.flip(_rows_or_columns(lightness, height - 1.0 - pad_h, pad_h, 0), horizontal=0, vertical=1)
    lightness = fn.cat(lightness, below, axis=0)
    right = fn.flip(_rows_or_columns(lightness, width - 1.0 - pad_w, pad_w, 1), horizontal=1, vertical=0)
    return fn.cat(lightness, right, axis=1)


@do_not_convert
def _rows_or_columns(image, start, count, axis):
    """`count` rows (axis 0) or columns (axis 1) of the image from `start` (float nodes, in pixels)."""
    return fn.slice(image, fn.stack(start), fn.stack(count), axes=[axis], normalized_anchor=False,
                    normalized_shape=False)


@do_not_convert
def cut_to_size(image, height, width):
    """The top-left height x width of the image (what on_whole_tiles added, cut away)."""
    return fn.slice(image, fn.stack(0.0 * height, 0.0 * width), fn.stack(height, width), axes=[0, 1],
                    normalized_anchor=False, normalized_shape=False)


@do_not_convert
def clahe_at_level(lightness, level, tiles_x, tiles_y):
    """fn.clahe of the lightness at one clip level for every sample."""
    return fn.clahe(lightness, tiles_x=tiles_x, tiles_y=tiles_y, clip_limit=level)


def clahe_at_levels(lightness, index, levels, tiles_x, tiles_y):
    """fn.clahe of the lightness at each sample's clip level `levels[index]`: one fn.clahe per level
    under DALI's conditional execution, every sample through exactly one."""
    equalised = lightness
    for k, level in enumerate(levels):
        if index == k:
            equalised = fn.clahe(lightness, tiles_x=tiles_x, tiles_y=tiles_y, clip_limit=level)
    return equalised


@do_not_convert
def with_lab_lightness(images, lightness, uint8):
    """The images with their Lab L replaced by `lightness` (8-bit L levels): a and b as
    kornia.color.rgb_to_lab computes them, L = lightness * 100 / 255, and back to RGB as
    kornia.color.lab_to_rgb does (clamped)."""
    f = to_unit(images, uint8)
    lin = [dmath.pow((f[:, :, k] + 0.055) / 1.055, 2.4) * (f[:, :, k] > 0.04045) + f[:, :, k] / 12.92
           * (f[:, :, k] <= 0.04045) for k in range(3)]
    rows = ((0.412453, 0.357580, 0.180423), (0.212671, 0.715160, 0.072169), (0.019334, 0.119193, 0.950227))
    white = (0.95047, 1.0, 1.08883)
    fx, fy, fz = [(dmath.pow(dmath.max(t, 0.008856), 1.0 / 3.0) * (t > 0.008856) + (t * 7.787 + 4.0 / 29.0)
                   * (t <= 0.008856))
                  for t in [(lin[0] * row[0] + lin[1] * row[1] + lin[2] * row[2]) / w for row, w in zip(rows, white)]]
    lab_a, lab_b = 500.0 * (fx - fy), 200.0 * (fy - fz)
    gy = (lightness[:, :, 0] * (100.0 / 255.0) + 16.0) / 116.0
    g = [lab_a / 500.0 + gy, gy, dmath.max(gy - lab_b / 200.0, 0.0)]
    g = [(t * t * t * (t > 0.2068966) + (t - 4.0 / 29.0) / 7.787 * (t <= 0.2068966)) * w for t, w in zip(g, white)]
    inverse = ((3.2404813432005266, -1.5371515162713185, -0.4985363261688878),
               (-0.9692549499965682, 1.8759900014898907, 0.0415559265582928),
               (0.0556466391351772, -0.2040413383665112, 1.0573110696453443))
    rgb = []
    for row in inverse:
        t = g[0] * row[0] + g[1] * row[1] + g[2] * row[2]
        rgb.append(dmath.clamp((1.055 * dmath.pow(dmath.max(t, 0.0031308), 1.0 / 2.4) - 0.055) * (t > 0.0031308)
                               + 12.92 * t * (t <= 0.0031308), 0.0, 1.0))
    return from_unit(fn.reshape(fn.stack(*rgb, axis=2), layout="HWC"), uint8)
