"""DALI occlusion functions: the rectangles Erase, GridMask and CoarseDropout cut out, placed as Kornia
and Albumentations place them, and the fills.

Sizes and positions are float nodes in whole pixels (`height`, `width`: each sample's size); a fill is
in the images' units (0-255 before a Normalize, [0, 1]-based after it).
"""
import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert


@do_not_convert
def erase_rectangle(area, ratio, u, v, height, width):
    """(height, width, x, y) of Kornia's random-erasing rectangle: sides from the area fraction and the
    aspect ratio (height / width), rounded and kept within the image, top-left corner uniform over the
    whole pixels where it fits."""
    h = dmath.clamp(dmath.floor(dmath.sqrt(area * height * width * ratio) + 0.5), 1.0, height)
    w = dmath.clamp(dmath.floor(dmath.sqrt(area * height * width / ratio) + 0.5), 1.0, width)
    x = dmath.floor(u * (width - w + 1.0))
    y = dmath.floor(v * (height - h + 1.0))
    return h, w, x, y


@do_not_convert
def erase_one(images, y, x, height, width, fill):
    """The images with one rectangle per sample (top-left y, x; height, width) filled with `fill`."""
    return fn.erase(images, anchor=fn.stack(y, x), shape=fn.stack(height, width), axis_names="HW", fill_value=fill)


@do_not_convert
def grid_mask_offset(u, v, tile):
    """(x, y): the grid's shift in whole pixels, u and v of a `tile`-pixel cell (GridMask's random offset)."""
    return dmath.floor(u * float(tile)), dmath.floor(v * float(tile))


@do_not_convert
def grid_mask_images(images, tile, ratio, x, y):
    """The images with a square of side ratio x tile zeroed at the top-left of every tile x tile cell of
    the grid shifted by (x, y)."""
    return fn.grid_mask(images, tile=tile, ratio=ratio, angle=0.0, shift_x=x, shift_y=y)


@do_not_convert
def coarse_holes(holes, height_fraction, width_fraction, u, v, height, width, most):
    """(height, width, y, x) of each of the `most` holes, as Albumentations draws them: sides
    floor(fraction x image side), top-left corner uniform over the whole pixels where the hole fits;
    the holes past the sample's count `holes` get sides 0."""
    active = fn.cast(types.Constant(np.arange(float(most), dtype=np.float32)) < holes, dtype=types.FLOAT)
    h = dmath.floor(height_fraction * height) * active
    w = dmath.floor(width_fraction * width) * active
    y = dmath.floor(v * (height - h + 1.0))
    x = dmath.floor(u * (width - w + 1.0))
    return h, w, y, x


@do_not_convert
def erase_many(images, y, x, height, width, fill):
    """The images with every hole (per sample, one entry per hole of y, x, height, width) filled with `fill`
    (fn.erase takes them all as one flat list of (y, x) anchors and (height, width) shapes)."""
    return fn.erase(images, anchor=fn.reshape(fn.stack(y, x, axis=1), shape=[-1]),
                    shape=fn.reshape(fn.stack(height, width, axis=1), shape=[-1]), axis_names="HW", fill_value=fill)
