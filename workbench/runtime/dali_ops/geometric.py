"""DALI geometric functions: flips, turns, affine and perspective warps about the image centre (Kornia's
conventions), crop windows (decoded alone in the training pipeline), pads and resizes.

Sizes and coordinates are float nodes in pixels (DALI's pixel-edge coordinates unless said otherwise);
`interp_type` is DALI's filter (types.INTERP_LINEAR or types.INTERP_NN). Every function gives exactly the
values the lowerings' former inline code gave: the same operations in the same order.
"""
import math

import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert

# Degrees to radians, as Python folds it (the angles are drawn in degrees).
_GEOMETRIC_DEG = math.pi / 180.0


# ----- flips, turns, the transpose ----------------------------------------------------------------
@do_not_convert
def flip_left_right(images, applied):
    """The images mirrored left to right where `applied` is 1 (a per-sample coin, or 1 for all)."""
    return fn.flip(images, horizontal=applied)


@do_not_convert
def flip_top_bottom(images, applied):
    """The images mirrored top to bottom where `applied` is 1 (a per-sample coin, or 1 for all)."""
    return fn.flip(images, horizontal=0, vertical=applied)


@do_not_convert
def swap_rows_and_columns(images):
    """The images mirrored over their main diagonal (A.Transpose; square images keep their size)."""
    return fn.transpose(images, perm=(1, 0, 2), transpose_layout=False)


@do_not_convert
def _geometric_dihedral_rows(k, side, transposed):
    """The 2 x 3 output-to-input map of k quarter turns (np.rot90) of a square of `side` pixels, then a
    transpose where `transposed` (a node) is 1 (None: none): entries 0, +-1 and `side`, which map pixel
    centres onto pixel centres. s = k mod 2 transposes, h and v flip (k = 1: s, v; 2: h, v; 3: s, h)."""
    h = dmath.floor(k * 0.5)
    s = k - 2.0 * h
    f = dmath.abs(s - h)
    if transposed is None:
        return [(1.0 - s) * (1.0 - 2.0 * h), s * (1.0 - 2.0 * f), ((1.0 - s) * h + s * f) * side,
                s * (1.0 - 2.0 * h), (1.0 - s) * (1.0 - 2.0 * f), (s * h + (1.0 - s) * f) * side]
    t = transposed
    # The transpose swaps the first two columns, blended by t in {0, 1} (products grouped left to right).
    return [(1.0 - t) * (1.0 - s) * (1.0 - 2.0 * h) + t * s * (1.0 - 2.0 * f),
            (1.0 - t) * s * (1.0 - 2.0 * f) + t * (1.0 - s) * (1.0 - 2.0 * h),
            ((1.0 - s) * h + s * f) * side,
            (1.0 - t) * s * (1.0 - 2.0 * h) + t * (1.0 - s) * (1.0 - 2.0 * f),
            (1.0 - t) * (1.0 - s) * (1.0 - 2.0 * f) + t * s * (1.0 - 2.0 * h),
            (s * h + (1.0 - s) * f) * side]


@do_not_convert
def _geometric_gather(images, rows):
    """The images resampled through the exact whole-pixel output-to-input map `rows` (nearest
    neighbour, so every pixel is copied)."""
    matrix = fn.reshape(fn.stack(*rows), shape=[2, 3])
    return fn.warp_affine(images, matrix=matrix, inverse_map=True, fill_value=0.0, interp_type=types.INTERP_NN)


@do_not_convert
def quarter_turn_images(images, k, side):
    """The square images turned by k quarter turns counter-clockwise (np.rot90), copied exactly."""
    return _geometric_gather(images, _geometric_dihedral_rows(k, side, None))


@do_not_convert
def square_symmetry_images(images, element, side):
    """The square images moved by A.D4's element (its index in A's order), copied exactly: k quarter
    turns then a transpose where t = floor(element / 4) is 1, k = element, or 7 - element there."""
    t = dmath.floor(element * 0.25)
    k = element + t * (7.0 - 2.0 * element)
    return _geometric_gather(images, _geometric_dihedral_rows(k, side, t))


# ----- warps about the centre ---------------------------------------------------------------------
@do_not_convert
def rotate_in_frame(images, angle, interp_type):
    """The images turned about their centre by `angle` degrees, keeping their size, 0 outside."""
    return fn.rotate(images, angle=angle, keep_size=True, fill_value=0.0,
                     interp_type=interp_type)


@do_not_convert
def _geometric_centred(l00, l01, l10, l11, tx, ty, height, width):
    """The 2 x 3 forward map p' = L (p - c) + c + t about the image centre c, in DALI's pixel-edge
    coordinates (c = (W/2, H/2)), for L = [[l00, l01], [l10, l11]] (nodes or numbers)."""
    cx = width * 0.5
    cy = height * 0.5
    return fn.reshape(fn.stack(l00, l01, cx + tx - l00 * cx - l01 * cy,
                               l10, l11, cy + ty - l10 * cx - l11 * cy), shape=[2, 3])


@do_not_convert
def warp_affine_forward(images, matrix, interp_type):
    """The images warped by the forward 2 x 3 map `matrix`, 0 outside."""
    return fn.warp_affine(images, matrix=matrix, inverse_map=False, fill_value=0.0,
                          interp_type=interp_type)


@do_not_convert
def affine_warp_matrix(angle, shear, sx, sy, tx, ty, height, width):
    """(translate_px, scale, matrix) of Kornia's RandomAffine: A = R(angle) diag(sx, sy) Shear_x(shear)
    (degrees), then the shift (tx, ty) given as fractions of the width and height."""
    tx = tx * width
    ty = ty * height
    translate_px = fn.stack(tx, ty)
    scale = fn.stack(sx, sy)
    cos = dmath.cos(angle * _GEOMETRIC_DEG)
    sin = dmath.sin(angle * _GEOMETRIC_DEG)
    k = dmath.tan(shear * _GEOMETRIC_DEG)
    a = fn.stack(sx * cos, 0.0 - k * sx * cos - sy * sin, sx * sin, sy * cos - k * sx * sin)
    return translate_px, scale, _geometric_centred(a[0], a[1], a[2], a[3], tx, ty, height, width)


@do_not_convert
def translation_warp_matrix(fx, fy, height, width):
    """(dx, dy, matrix): the shift by the fractions fx of the width and fy of the height, in pixels."""
    dx = fx * width
    dy = fy * height
    return dx, dy, _geometric_centred(1.0, 0.0, 0.0, 1.0, dx, dy, height, width)


@do_not_convert
def shear_images(images, shear_x, shear_y, height, width, interp_type):
    """The images sheared about their centre as Kornia's RandomShear: x first, then y (degrees),
    [[1, -tan x], [-tan y, 1 + tan x tan y]]; 0 outside."""
    kx = dmath.tan(shear_x * _GEOMETRIC_DEG)
    ky = dmath.tan(shear_y * _GEOMETRIC_DEG)
    matrix = _geometric_centred(1.0, (0.0 - kx), (0.0 - ky), (1.0 + kx * ky), 0.0, 0.0, height, width)
    return warp_affine_forward(images, matrix, interp_type)


@do_not_convert
def _geometric_unit_square(x0, y0, x1, y1, x2, y2, x3, y3):
    """(g, h) of the homography taking the unit square's corners (0, 0), (1, 0), (1, 1), (0, 1) to
    (x0, y0) .. (x3, y3) in closed form (Heckbert 1989): its last row is [g, h, 1]."""
    sx = x0 - x1 + x2 - x3
    sy = y0 - y1 + y2 - y3
    den = (x1 - x2) * (y3 - y2) - (x3 - x2) * (y1 - y2)
    g = (sx * (y3 - y2) - (x3 - x2) * sy) / den
    h = ((x1 - x2) * sy - sx * (y1 - y2)) / den
    return g, h


@do_not_convert
def _geometric_to_pixel_edges(m00, m01, m02, m10, m11, m12, m20, m21):
    """The 3 x 3 map [[m00, m01, m02], [m10, m11, m12], [m20, m21, 1]] in pixel centres at integers
    moved to DALI's pixel-edge coordinates: T(0.5) M T(-0.5), T moving both axes."""
    last0 = (m02 - 0.5 * (m00 + m01))
    last1 = (m12 - 0.5 * (m10 + m11))
    last2 = (1.0 - 0.5 * (m20 + m21))
    return fn.reshape(fn.stack(m00 + 0.5 * m20, m01 + 0.5 * m21, last0 + 0.5 * last2,
                               m10 + 0.5 * m20, m11 + 0.5 * m21, last1 + 0.5 * last2,
                               m20, m21, last2), shape=[3, 3])


@do_not_convert
def perspective_corner_warp(shifts, distortion, height, width):
    """(start_points, end_points, matrix) of Kornia's RandomPerspective: each corner (pixel centres 0 and
    W - 1) moves inwards by `shifts` (4 x 2, in [0, 1]) times distortion * size / 2, and `matrix` (forward,
    pixel edges) takes the corners there. A side of 1 pixel has nothing to distort: Kornia spans it with a
    unit extent and no offset."""
    xe = dmath.max(width - 1.0, 1.0)
    ye = dmath.max(height - 1.0, 1.0)
    fx = distortion * 0.5 * width * dmath.min(width - 1.0, 1.0)
    fy = distortion * 0.5 * height * dmath.min(height - 1.0, 1.0)
    x0 = 0.0 + fx * shifts[0, 0]
    y0 = 0.0 + fy * shifts[0, 1]
    x1 = xe - fx * shifts[1, 0]
    y1 = 0.0 + fy * shifts[1, 1]
    x2 = xe - fx * shifts[2, 0]
    y2 = ye - fy * shifts[2, 1]
    x3 = 0.0 + fx * shifts[3, 0]
    y3 = ye - fy * shifts[3, 1]
    start_points = fn.stack(fn.stack(0.0, 0.0), fn.stack(xe, 0.0), fn.stack(xe, ye), fn.stack(0.0, ye))
    end_points = fn.stack(fn.stack(x0, y0), fn.stack(x1, y1), fn.stack(x2, y2), fn.stack(x3, y3))
    g, h = _geometric_unit_square(x0, y0, x1, y1, x2, y2, x3, y3)
    # The unit-square map, its columns divided by the corner extents: start corners -> end corners.
    matrix = _geometric_to_pixel_edges((x1 - x0 + g * x1) / xe, (x3 - x0 + h * x3) / ye, x0,
                                       (y1 - y0 + g * y1) / xe, (y3 - y0 + h * y3) / ye, y0, g / xe, h / ye)
    return start_points, end_points, matrix


@do_not_convert
def perspective_zoom_warp(z, sigma, height, width):
    """(matrix, max_size, inverse) of A.Perspective (keep_size=True) as WbPerspectiveZoom draws it:
    corner jitter |z * sigma| mod 0.32 (z standard normal, 4 x 2), the corners tl, tr, br, bl inwards
    from the frame's, max_size [max_h, max_w] the longer opposite sides floored. `inverse` (pixel
    edges, output to input) is the unit-square map Q onto those corners after diag(max_w / W^2,
    max_h / H^2); `matrix` (corners -> frame, pixel centres, as A reports it) is diag(W, H, 1) adj(Q)
    scaled to a last entry of 1."""
    jitter = dmath.abs(z * sigma)
    jitter = jitter - 0.32 * dmath.floor(jitter / 0.32)
    x0, y0 = jitter[0, 0] * width, jitter[0, 1] * height
    x1, y1 = (1.0 - jitter[1, 0]) * width, jitter[1, 1] * height
    x2, y2 = (1.0 - jitter[2, 0]) * width, (1.0 - jitter[2, 1]) * height
    x3, y3 = jitter[3, 0] * width, (1.0 - jitter[3, 1]) * height
    xs, ys = (x0, x1, x2, x3), (y0, y1, y2, y3)

    def side(i, j):
        return dmath.sqrt((xs[i] - xs[j]) * (xs[i] - xs[j]) + (ys[i] - ys[j]) * (ys[i] - ys[j]))

    max_w = dmath.floor(dmath.max(side(1, 0), side(2, 3)))
    max_h = dmath.floor(dmath.max(side(2, 1), side(3, 0)))
    max_size = fn.stack(max_h, max_w)
    g, h = _geometric_unit_square(x0, y0, x1, y1, x2, y2, x3, y3)
    # Q = [[a, b, c], [d, e, f], [g, h, 1]]: the unit square onto the corners.
    a, b, c = (x1 - x0 + g * x1), (x3 - x0 + h * x3), x0
    d, e, f = (y1 - y0 + g * y1), (y3 - y0 + h * y3), y0
    adj = [(e - f * h), (c * h - b), (b * f - c * e),
           (f * g - d), (a - c * g), (c * d - a * f),
           (d * h - e * g), (b * g - a * h), (a * e - b * d)]
    norm = adj[8]
    scaled = [width * v / norm for v in adj[:3]] + [height * v / norm for v in adj[3:6]] + \
        [v / norm for v in adj[6:8]] + [1.0]
    matrix = fn.reshape(fn.stack(*scaled), shape=[3, 3])
    # Output to input in pixel centres: Q diag(kx, ky, 1).
    kx = max_w / (width * width)
    ky = max_h / (height * height)
    inverse = _geometric_to_pixel_edges(a * kx, b * ky, c, d * kx, e * ky, f, g * kx, h * ky)
    return matrix, max_size, inverse


@do_not_convert
def warp_perspective_forward(images, matrix, interp_type):
    """The images warped by the forward 3 x 3 map `matrix`, 0 outside."""
    return fn.experimental.warp_perspective(images, matrix=matrix, inverse_map=False, fill_value=0.0,
                                            interp_type=interp_type)


@do_not_convert
def warp_perspective_inverse(images, matrix, interp_type):
    """The images resampled through the output-to-input 3 x 3 map `matrix`, 0 outside."""
    return fn.experimental.warp_perspective(images, matrix=matrix, inverse_map=True, fill_value=0.0,
                                            interp_type=interp_type)


# ----- crop windows -------------------------------------------------------------------------------
@do_not_convert
def center_crop_window(size, height, width):
    """(x0, y0, crop_box) of the central `size` (h, w) window, the offset floored as Kornia and
    Albumentations floor it (DALI's crop_pos would round it)."""
    h, w = size
    x0 = dmath.floor((width - w) * 0.5)
    y0 = dmath.floor((height - h) * 0.5)
    return x0, y0, fn.stack(x0, y0, x0 + w, y0 + h)


@do_not_convert
def random_crop_window(u, v, size, height, width):
    """(x0, y0, crop_box) of Kornia's RandomCrop window of `size` (h, w): start = floor(u * (room + 1))
    on each axis, u and v uniform in [0, 1] (min(): a draw of exactly 1 stays inside)."""
    h, w = size
    room_x, room_y = width - w, height - h
    x0 = dmath.min(dmath.floor(u * (room_x + 1.0)), room_x)
    y0 = dmath.min(dmath.floor(v * (room_y + 1.0)), room_y)
    return x0, y0, fn.stack(x0, y0, x0 + w, y0 + h)


@do_not_convert
def padded_random_window(u, v, size, height, width, margin=0.0):
    """(padding, crop_box, shift) of torchvision's RandomCrop with padding and pad_if_needed: `margin`
    on every side, then a side still shorter than `size` (h, w) padded by the shortfall on both ends
    (padding [left, right, top, bottom]); the window is drawn in that canvas as random_crop_window
    draws it, and `shift` is the whole-pixel 2 x 3 map putting the image where the window has it."""
    h, w = size
    pad_w = margin + dmath.max(w - (width + 2.0 * margin), 0.0)
    pad_h = margin + dmath.max(h - (height + 2.0 * margin), 0.0)
    padding = fn.stack(pad_w, pad_w, pad_h, pad_h)
    room_x, room_y = width + 2.0 * pad_w - w, height + 2.0 * pad_h - h
    x0 = dmath.min(dmath.floor(u * (room_x + 1.0)), room_x)
    y0 = dmath.min(dmath.floor(v * (room_y + 1.0)), room_y)
    crop_box = fn.stack(x0, y0, x0 + w, y0 + h)
    return padding, crop_box, fn.reshape(fn.stack(1.0, 0.0, pad_w - x0, 0.0, 1.0, pad_h - y0), shape=[2, 3])


@do_not_convert
def padded_window_start(padding, crop_box):
    """Where padded_random_window's window starts in the image itself ((y, x) int32, outside it where
    the window reaches into the padding), for slice_with_border."""
    return fn.cast(fn.stack(crop_box[1] - padding[2], crop_box[0] - padding[0]), dtype=types.INT32)


@do_not_convert
def slice_window(images, x0, y0, shape):
    """The window of `shape` (h, w) at (x0, y0) of the images."""
    return fn.slice(images, start=window_start(x0, y0), shape=shape, axis_names="HW")


@do_not_convert
def window_start(x0, y0):
    """The window's corner as the (y, x) int32 start that slicing and region decoding take."""
    return fn.cast(fn.stack(y0, x0), dtype=types.INT32)


@do_not_convert
def resized_window_source(encoded, x0, y0, resized, size):
    """(first, extent, roi_start, roi_end) for cutting the `size` (h, w) window at (x0, y0) of the
    files resized to `resized` (h, w) while decoding only its source: that window comes from the
    file's pixels [x0, x0 + w) * (file width / resized width) (the same per axis); those, with a margin
    wide enough for the resize's filter, are the (y, x) int32 `first` and `extent` to decode, and
    roi_start, roi_end the window in them, so that resizing that region samples exactly where
    resizing the whole file and cutting the window would."""
    source = fn.cast(fn.peek_image_shape(encoded), dtype=types.FLOAT)[0:2]
    scale = source / fn.constant(fdata=list(resized))  # file pixels per resized pixel
    start = fn.stack(y0, x0) * scale
    end = start + fn.constant(fdata=list(size)) * scale
    # The filter reaches `scale` file pixels each side when shrinking (antialias), 1 otherwise.
    low = dmath.max(dmath.floor(start - dmath.max(scale, 1.0)) - 1.0, 0.0)
    high = dmath.min(dmath.ceil(end + dmath.max(scale, 1.0)) + 1.0, source)
    return (fn.cast(low, dtype=types.INT32), fn.cast(high - low, dtype=types.INT32), start - low, end - low)


@do_not_convert
def random_area_window(shape, area, aspect_ratio, seed):
    """(anchor, shape, crop_box) of DALI's own window sampler (the one inside fn.random_resized_crop),
    for an input of `shape` (H, W, C): area a fraction in `area`, width / height in `aspect_ratio`;
    anchor and shape (y, x) integers, crop_box [x0, y0, x1, y1] floats."""
    anchor, extent = fn.random_crop_generator(shape, random_area=area, random_aspect_ratio=aspect_ratio, seed=seed)
    crop_box = fn.cast(fn.stack(anchor[1], anchor[0], anchor[1] + extent[1], anchor[0] + extent[0]),
                       dtype=types.FLOAT)
    return anchor, extent, crop_box


@do_not_convert
def sized_window(draw, u, v, ratio, height, width):
    """(roi_start, roi_end, crop_box) of A.RandomSizedCrop's window: height floor(draw) (a whole number
    drawn uniformly), width int(height x ratio), both cut to the image; start int((side - crop + 1) x u)
    on each axis (u and v uniform in [0, 1]); roi as (y, x) floats, crop_box [x0, y0, x1, y1]."""
    drawn = dmath.floor(draw)
    h = dmath.min(drawn, height)
    w = dmath.min(dmath.floor(drawn * ratio), width)
    y0 = dmath.min(dmath.floor((height - h + 1.0) * u), height - h)
    x0 = dmath.min(dmath.floor((width - w + 1.0) * v), width - w)
    return (fn.cast(fn.stack(y0, x0), dtype=types.FLOAT), fn.cast(fn.stack(y0 + h, x0 + w), dtype=types.FLOAT),
            fn.stack(x0, y0, x0 + w, y0 + h))


# ----- resizes ------------------------------------------------------------------------------------
@do_not_convert
def resize_exactly(images, size, interp_type, antialias):
    """The images resized to `size` (h, w: numbers or a node), low-passed when shrinking with
    `antialias` (the triangle filter)."""
    return fn.resize(images, size=size, interp_type=interp_type, antialias=antialias)


@do_not_convert
def resize_region(images, size, roi_start, roi_end, interp_type, antialias):
    """The region [roi_start, roi_end) ((y, x) float pixels) of the images resized to `size` (h, w)."""
    return fn.resize(images, size=size, roi_start=roi_start, roi_end=roi_end, roi_relative=False,
                     interp_type=interp_type, antialias=antialias)


@do_not_convert
def resize_anchored_window(images, anchor, shape, size, interp_type, antialias=False):
    """The window [anchor, anchor + shape) ((y, x) integers) of the images resized to `size` (h, w),
    unfiltered as fn.random_resized_crop, or low-passed when shrinking with `antialias`."""
    return resize_region(images, size, fn.cast(anchor, dtype=types.FLOAT), fn.cast(anchor + shape, dtype=types.FLOAT),
                         interp_type, antialias)


@do_not_convert
def side_scale(max_size, longest, height, width, round_down=False):
    """(scale, size) of A.LongestMaxSize (`longest`) or A.SmallestMaxSize in float64 as Python computes
    them: scale = max_size / side, each side round(side * scale), half to even, at least 1; or with
    `round_down` torchvision's Resize, floor(max_size * side / reference side) (exact in float64:
    runtime/targets.py's scaled_sides); size the float (h, w) node to resize to."""
    h = fn.cast(height, dtype=types.FLOAT64)
    w = fn.cast(width, dtype=types.FLOAT64)
    reference = dmath.max(h, w) if longest else dmath.min(h, w)
    scale = fn.cast(max_size, dtype=types.FLOAT64) / reference
    out = []
    for side in (h, w):
        if round_down:
            out.append(dmath.max(dmath.floor(fn.cast(max_size, dtype=types.FLOAT64) * side / reference), 1.0))
            continue
        x = side * scale
        r = dmath.floor(x + 0.5)
        # A tie (x + 0.5 whole) goes to the even neighbour, as Python's round.
        out.append(dmath.max(r - fn.cast(r - x == 0.5, dtype=types.FLOAT64) * (r - 2.0 * dmath.floor(r * 0.5)), 1.0))
    return scale, fn.cast(fn.stack(out[0], out[1]), dtype=types.FLOAT)


@do_not_convert
def drawn_size(rule, value, height, width, bound=0, target=(0, 0)):
    """The size each sample's draw `value` gives it, as runtime/targets.py's drawn_sides computes it
    ("shortest", "resize" or "jitter"), in the same float64 (float32 for "jitter") arithmetic: the
    float (h, w) node to resize to, which the step reports as out_size."""
    h = fn.cast(height, dtype=types.FLOAT64)
    w = fn.cast(width, dtype=types.FLOAT64)
    value = fn.cast(value, dtype=types.FLOAT64)
    if rule == "jitter":
        r = fn.cast(dmath.min(float(target[0]) / h, float(target[1]) / w), dtype=types.FLOAT) * fn.cast(
            value, dtype=types.FLOAT)
        sides = [dmath.floor(fn.cast(side, dtype=types.FLOAT) * r) for side in (h, w)]
    elif rule == "resize":
        # value is uniform in [lo, hi + 1): its floor is the whole number drawn.
        short = dmath.floor(value)
        sides = [dmath.floor(short * side / dmath.min(h, w)) for side in (h, w)]
    else:
        r = value / dmath.min(h, w)
        if bound > 0:
            r = dmath.min(r, float(bound) / dmath.max(h, w))
        sides = [dmath.floor(side * r) for side in (h, w)]
    return fn.cast(fn.stack(*(dmath.max(side, 1.0) for side in sides)), dtype=types.FLOAT)


@do_not_convert
def zoom_out_window(ratio, u, v, height, width):
    """(padding, start, shape) of RandomZoomOut from its draws, as runtime/targets.py's
    zoom_out_padding computes them (float32): the padding [left, right, top, bottom] and the canvas
    as a window of the image, [-top, canvas_h - top) x [-left, canvas_w - left) ((y, x) int32)."""
    ratio, u, v = (fn.cast(x, dtype=types.FLOAT) for x in (ratio, u, v))
    h, w = fn.cast(height, dtype=types.FLOAT), fn.cast(width, dtype=types.FLOAT)
    canvas_h, canvas_w = dmath.floor(h * ratio), dmath.floor(w * ratio)
    left, top = dmath.floor((canvas_w - w) * u), dmath.floor((canvas_h - h) * v)
    padding = fn.stack(left, canvas_w - w - left, top, canvas_h - h - top)
    start = fn.cast(fn.stack(0.0 - top, 0.0 - left), dtype=types.INT32)
    return padding, start, fn.cast(fn.stack(canvas_h, canvas_w), dtype=types.INT32)


def window_input(step):
    """The name of the pipeline input that feeds chain step `step`'s (1-based) windows (fed_window)."""
    return f"step{step}_window"


@do_not_convert
def fed_window(step):
    """(applied, crop_box, start, shape) of the window fed per sample to chain step `step` (1-based)
    through the input window_input(step) as [applied, x0, y0, x1, y1] (float32): RandomIoUCrop's, which
    augment_images draws on the host from each image's boxes as they stand at the step; crop_box
    [x0, y0, x1, y1), start and shape (y, x) int32 as slice_with_fill takes them."""
    fed = fn.external_source(name=window_input(step), dtype=types.FLOAT)
    applied = fed[0]
    start = fn.cast(fn.stack(fed[2], fed[1]), dtype=types.INT32)
    shape = fn.cast(fn.stack(fed[4] - fed[2], fed[3] - fed[1]), dtype=types.INT32)
    return applied, fn.stack(fed[1], fed[2], fed[3], fed[4]), start, shape


@do_not_convert
def slice_with_fill(images, start, shape, fill):
    """The window [start, start + shape) ((y, x) int32) of the images, the pixels outside them
    `fill` (one value per channel): fn.slice's "pad" policy, exact."""
    return fn.slice(images, start=start, shape=shape, axis_names="HW", out_of_bounds_policy="pad",
                    fill_values=fill)


# ----- pads ---------------------------------------------------------------------------------------
@do_not_convert
def _geometric_before(pad, share):
    """The padding before the image on one axis, of `pad` in all: none (share 0), all (share 1), or
    half, floored (share 0.5: the odd pixel goes after the image)."""
    if share == 0.5:
        return dmath.floor(pad * 0.5)
    return pad if share == 1.0 else 0.0 * pad


@do_not_convert
def _geometric_padding(min_size, placement, height, width):
    """(pad_h, pad_w, top, left, padding) of kornia_modules.pad_to_at_least: a side shorter than
    `min_size` (h, w) by d pixels gets d, the share `placement` (top, left) of it before the image
    (0.5: split evenly, as at the "center" position; 0 or 1 at a corner); padding [left, right, top,
    bottom]."""
    min_h, min_w = min_size
    pad_h = dmath.max(min_h - height, 0.0)
    pad_w = dmath.max(min_w - width, 0.0)
    top, left = _geometric_before(pad_h, placement[0]), _geometric_before(pad_w, placement[1])
    return pad_h, pad_w, top, left, fn.stack(left, pad_w - left, top, pad_h - top)


@do_not_convert
def padding_with_fill(min_size, placement, height, width):
    """(padding, shift, canvas) of PadIfNeeded: the padding (see _geometric_padding), the whole-pixel
    2 x 3 map putting the image on the padded canvas, and the canvas size (h, w)."""
    pad_h, pad_w, top, left, padding = _geometric_padding(min_size, placement, height, width)
    shift = fn.reshape(fn.stack(1.0, 0.0, left, 0.0, 1.0, top), shape=[2, 3])
    return padding, shift, fn.stack(height + pad_h, width + pad_w)


@do_not_convert
def padding_from_image(min_size, placement, height, width):
    """(padding, start, shape) of PadBorderIfNeeded: the padding (see _geometric_padding) and the
    padded window [-top, H + pad_h - top) x [-left, W + pad_w - left) as (y, x) int32 start and shape."""
    pad_h, pad_w, top, left, padding = _geometric_padding(min_size, placement, height, width)
    start = fn.cast(fn.stack(0.0 - top, 0.0 - left), dtype=types.INT32)
    return padding, start, fn.cast(fn.stack(height + pad_h, width + pad_w), dtype=types.INT32)


@do_not_convert
def shift_onto_canvas(images, shift, size, fill):
    """The images moved by the whole-pixel map `shift` onto a canvas of `size` (h, w) filled with `fill`:
    nearest neighbour, so exact."""
    return fn.warp_affine(images, matrix=shift, size=size, inverse_map=False, fill_value=fill,
                          interp_type=types.INTERP_NN)


@do_not_convert
def slice_with_border(images, start, shape, policy):
    """The window [start, start + shape) ((y, x) int32) of the images, the pixels outside them made by
    fn.slice's out-of-bounds `policy` (reflect_101, reflect_1001, edge or wrap: OpenCV's borders, however
    far outside)."""
    return fn.slice(images, start=start, shape=shape, axis_names="HW", out_of_bounds_policy=policy)
