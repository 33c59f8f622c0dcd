"""DALI weather functions: Kornia's weather modules (runtime/kornia_modules/weather.py) as per-pixel
arithmetic over pixel-coordinate grids, which DALI broadcasts (xs is (1, W, 1), ys (H, 1, 1)).

Images come in the pipeline's units: 0-255 uint8 before a Normalize (`scale` 255.0), [0, 1]-based
floats after it (`scale` 1.0); `height` and `width` are float nodes of each sample's size.
"""
import math

import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert

# lowbias32's multipliers placing the rain drops: the same as workbench/ops/weather.py's _HASH_MULTIPLIERS,
# with which _hash_drops lists the drops in numpy for the reports.
RAIN_HASH_MULTIPLIERS = (0x9E3779B9, 0x7FEB352D, 0x846CA68B, 0x68E31DA4)


@do_not_convert
def weather_ramp(images, side, along_x):
    """Whole float pixel coordinates 0, 1, ... along one side, on the images' device: (1, W, 1) along x,
    (H, 1, 1) along y. DALI has no per-sample iota: a two-pixel ramp [0, 1] resized (linear, no
    antialiasing) onto `side` pixels over the window [0.5 - 0.5 / side, 1.5 - 0.5 / side) reads i / side
    at pixel i (within 1e-4 x side), so rounding its `side`-fold gives exactly i, for any size."""
    if along_x:
        shape, size = [1, 2, 1], fn.stack(1.0, side)
        start, end = fn.stack(0.0, 0.5 - 0.5 / side), fn.stack(1.0, 1.5 - 0.5 / side)
    else:
        shape, size = [2, 1, 1], fn.stack(side, 1.0)
        start, end = fn.stack(0.5 - 0.5 / side, 0.0), fn.stack(1.5 - 0.5 / side, 1.0)
    ramp = fn.resize(fn.constant(fdata=[0.0, 1.0], shape=shape, layout="HWC", device=images.device), size=size,
                     roi_start=start, roi_end=end, interp_type=types.INTERP_LINEAR, antialias=False, dtype=types.FLOAT)
    return dmath.floor(ramp * side + 0.5)


@do_not_convert
def weather_pixel_grids(images, height, width):
    """(xs, ys): the pixel coordinates of the images, xs (1, W, 1) and ys (H, 1, 1)."""
    return weather_ramp(images, width, True), weather_ramp(images, height, False)


@do_not_convert
def weather_to_images(values, scale):
    """Float `values` in the images' units written back as the images' type (clamped and truncated to
    uint8 before a Normalize)."""
    if scale != 1.0:
        return fn.cast(dmath.clamp(values, 0.0, scale), dtype=types.UINT8)
    return values


@do_not_convert
def weather_trunc(values):
    """`values` rounded towards zero, as Python's int() does to the positions Kornia's modules compute."""
    return dmath.floor(dmath.abs(values)) * (fn.cast(values >= 0.0, dtype=types.FLOAT) * 2.0 - 1.0)


# --------------------------------------------------------------------------------------------
# RandomShadow

@do_not_convert
def shadow_vertices(height, width, u, v, roi):
    """(vx, vy, vertices): each polygon's vertices as whole pixels of the region `roi` (x_min, y_min,
    x_max, y_max as fractions of the image), from the uniform draws u and v in [0, 1), as Kornia's
    module bounds them by int(fraction x side); `vertices` stacks them as (count, dimension, 2)."""
    x0, y0, x1, y1 = roi
    xlo = dmath.floor(x0 * width)
    xhi = dmath.max(dmath.floor(x1 * width), xlo + 1.0)
    ylo = dmath.floor(y0 * height)
    yhi = dmath.max(dmath.floor(y1 * height), ylo + 1.0)
    vx = dmath.min(dmath.floor(xlo + (xhi - xlo) * u), xhi - 1.0)
    vy = dmath.min(dmath.floor(ylo + (yhi - ylo) * v), yhi - 1.0)
    return vx, vy, fn.stack(vx, vy, axis=2)


@do_not_convert
def shadow_polygon(xs, ys, vx, vy, shadow, dimension):
    """Which pixels polygon `shadow` covers (a boolean grid): the even-odd test at the pixel centres,
    edge by edge, with the outline's own pixels included (cv2.fillPoly fills them)."""
    inside = xs < -1.0
    edge = inside
    # Each vertex subscripted once, each difference taken once: DALI 2.4 merges identical CPU nodes, and
    # a merged one that feeds a GPU operator leaves that operator naming an input the graph no longer
    # has (the GPU pipeline fails to build).
    corners = [(vx[shadow, k], vy[shadow, k]) for k in range(dimension)]
    for k in range(dimension):
        (ax, ay), (bx, by) = corners[k], corners[(k + 1) % dimension]
        dx, dy, below = bx - ax, by - ay, ys - ay
        at = ax + below * dx / (dy + fn.cast(by == ay, dtype=types.FLOAT))
        inside = inside != (((ys < ay) != (ys < by)) & (xs < at))
        edge = edge | (((xs - ax) * dy == below * dx) & (dmath.min(ax, bx) <= xs)
                       & (xs <= dmath.max(ax, bx)) & (dmath.min(ay, by) <= ys) & (ys <= dmath.max(ay, by)))
    return inside | edge


@do_not_convert
def shadow_darkness(images, height, width, vx, vy, intensity, num_shadows, most, dimension):
    """The factor each pixel is darkened by: 1 - intensity for every polygon covering it, multiplied;
    every sample has `most` polygons, those beyond its `num_shadows` darkening nothing."""
    xs, ys = weather_pixel_grids(images, height, width)
    dark = 1.0
    for shadow in range(most):
        covered = shadow_polygon(xs, ys, vx, vy, shadow, dimension)
        dark = dark * (1.0 - fn.cast(covered, dtype=types.FLOAT) * intensity[shadow]
                       * fn.cast(num_shadows > float(shadow), dtype=types.FLOAT))
    return dark


@do_not_convert
def shadow_darken(images, dark, scale):
    """The images darkened by the factor `dark`, in their units."""
    return weather_to_images(images * dark, scale)


# --------------------------------------------------------------------------------------------
# RandomRain

@do_not_convert
def rain_mix(h):
    """lowbias32's mixing of uint32 nodes (shifts written as divisions: DALI's arithmetic has no shift)."""
    h = h ^ (h // types.Constant(np.uint32(65536)))
    h = h * types.Constant(np.uint32(RAIN_HASH_MULTIPLIERS[1]))
    h = h ^ (h // types.Constant(np.uint32(32768)))
    h = h * types.Constant(np.uint32(RAIN_HASH_MULTIPLIERS[2]))
    return h ^ (h // types.Constant(np.uint32(65536)))


@do_not_convert
def rain_drops(height, width, drop_hash, count, length):
    """(x, y): the start points of a sample's drops, one a row (count, 1), placed by a hash of the
    drop's index and the sample's `drop_hash` (workbench/ops/weather.py's _hash_drops lists the same
    in numpy): height // count drops, started at least `length` above the bottom. The drop count
    follows each image's height, which a per-sample random operator's shape could not."""
    drops = dmath.max(dmath.floor(height / count), 1.0)
    span = fn.cast(dmath.max(height - length, 1.0), dtype=types.UINT32)
    # Drop indices 0 .. drops - 1 from a resized two-pixel ramp (see weather_ramp), one drop a row.
    ramp = fn.resize(fn.constant(fdata=[0.0, 1.0], shape=[2, 1, 1], layout="HWC"), size=fn.stack(drops, 1.0),
                     roi_start=fn.stack(0.5 - 0.5 / drops, 0.0), roi_end=fn.stack(1.5 - 0.5 / drops, 1.0),
                     interp_type=types.INTERP_LINEAR, antialias=False, dtype=types.FLOAT)
    index = fn.reshape(dmath.floor(ramp * drops + 0.5), shape=[-1, 1])
    h = fn.cast(index, dtype=types.UINT32) * types.Constant(np.uint32(RAIN_HASH_MULTIPLIERS[0])) + fn.cast(
        drop_hash, dtype=types.UINT32)
    h = rain_mix(h)
    g = rain_mix(h + types.Constant(np.uint32(RAIN_HASH_MULTIPLIERS[3])))
    x = fn.cast(h - (h // fn.cast(width, dtype=types.UINT32)) * fn.cast(width, dtype=types.UINT32), dtype=types.FLOAT)
    y = fn.cast(g - (g // span) * span, dtype=types.FLOAT)
    return x, y


@do_not_convert
def random_rain(images, height, width, slant, drop_hash, count, drop_length, widest, drop_color, blur_value,
                brightness_coefficient, scale):
    """Kornia's rain: streaks of `drop_color` (0-255 levels) from the hashed drops (see rain_drops), each
    written as its vertical runs (column k of a streak with |dx| = run covers rows ceil((k - 0.5) L / run)
    - 1 to ceil((k + 0.5) L / run) - 1 of 0..L, Kornia's 4-connected raster) erased onto a blank layer
    (fn.erase clips them to the image), box-blurred with mirrored borders, added, darkened by
    `brightness_coefficient`. Every drop gets `widest` + 1 runs, as many as the widest slant needs.
    `count`: image rows per drop (rain_type); `drop_length` 0 means height // 8."""
    length = dmath.max(dmath.floor(height / 8.0), 1.0) if drop_length == 0 else float(drop_length)
    x, y = rain_drops(height, width, drop_hash, count, length)
    # A drop's run: trunc(x + slant) - x; the height's own weather_rain_count drops (the ramp has one
    # row when there are none: it is erased with height 0).
    dx = weather_trunc(x + slant) - x
    sign = fn.cast(dx >= 0.0, dtype=types.FLOAT) * 2.0 - 1.0
    run = dmath.abs(dx)
    k = types.Constant(np.arange(widest + 1, dtype=np.float32).reshape(1, -1))
    first = dmath.max(dmath.ceil((k - 0.5) * length / dmath.max(run, 0.5)) - 1.0, 0.0)
    last = dmath.min(dmath.ceil((k + 0.5) * length / dmath.max(run, 0.5)) - 1.0, length) * fn.cast(
        k < run, dtype=types.FLOAT) + length * fn.cast(k >= run, dtype=types.FLOAT)
    rows = (last - first + 1.0) * fn.cast(k <= run, dtype=types.FLOAT)
    if count not in (1.0, 0.5):  # fewer rows than `count`: no drop
        rows = rows * fn.cast(height >= count, dtype=types.FLOAT)
    col = x + sign * k
    top = y + first
    unit = float(scale) / 255.0
    layer = fn.erase(fn.cast(images, dtype=types.FLOAT) * 0.0,
                     anchor=fn.reshape(fn.stack(top, col, axis=2), shape=[-1]),
                     shape=fn.reshape(fn.stack(rows, rows * 0.0 + 1.0, axis=2), shape=[-1]), axis_names="HW",
                     fill_value=[float(v) * unit for v in drop_color])
    if blur_value > 1:
        layer = fn.filter(layer, np.full((blur_value, blur_value), 1.0 / blur_value ** 2, dtype=np.float32),
                          border="reflect_101")
    return weather_to_images(dmath.clamp(images + layer, 0.0, float(scale)) * brightness_coefficient, scale)


# --------------------------------------------------------------------------------------------
# RandomFog

@do_not_convert
def fog_squares_below(n):
    """0^2 + 1^2 + ... + (n - 1)^2, of a float node of whole numbers."""
    return (n - 1.0) * n * (2.0 * n - 1.0) / 6.0


@do_not_convert
def random_fog(images, height, width, intensity, alpha_coef, noise_seed, scale):
    """A.RandomFog without placing discs (DALI has no scatter-add): the discs are independent, so a
    pixel's expected transmission over their placements is exactly T = prod_j (1 - alpha P_j), P_j the
    chance that disc j covers the pixel, and the transmission's variance is
    prod_j (1 - (2 alpha - alpha^2) P_j) - T^2. Each of Albumentations' ten rounds (its counts,
    shrinking regions and centre, computed as it does) adds count x log(1 - alpha P) to log T (and
    likewise to the variance's product), with P for a square of the mean disc area (pi E[r^2] over the
    radii it draws; a radius-1 disc counts its 5 pixels) overlapping the round's region of centres.
    The discs' texture: the fog's amount 1 - T times a log-normal factor of mean 1 that gives the
    variance above, driven by Gaussian noise (seeded `noise_seed`) blurred to about the disc size (so it
    never darkens); then Albumentations' closing blur."""
    xs, ys = weather_pixel_grids(images, height, width)
    i = intensity
    alpha = alpha_coef * i
    region = dmath.max(dmath.floor(dmath.floor(width / 3.0) * i), 1.0)
    cx = dmath.floor(width / 2.0 - 0.5)
    cy = dmath.floor(height / 2.0 - 0.5)
    big = dmath.max(dmath.floor(dmath.min(height, width) * 0.1 * i), 2.0)
    small = dmath.max(dmath.floor(big / 2.0), 1.0)
    disc = (math.pi * (fog_squares_below(big) - fog_squares_below(small)) + (5.0 - math.pi) * fn.cast(
        small == 1.0, dtype=types.FLOAT)) / (big - small)
    half = dmath.sqrt(disc) / 2.0
    zero = xs * 0.0 + ys * 0.0
    log1, log2, w, h = zero, zero, width, height
    for _ in range(10):
        # int(w * h / region^2 * intensity * 10) discs while both sides exceed the region.
        n = dmath.floor(w * h / (region * region) * i * 10.0) * fn.cast((w > region) & (h > region),
                                                                         dtype=types.FLOAT)
        halfw = dmath.floor(w / 2.0)
        halfh = dmath.floor(h / 2.0)
        p = dmath.max(dmath.min(xs + half, cx + halfw + 0.5) - dmath.max(xs - half, cx - halfw - 0.5), 0.0) * dmath.max(
            dmath.min(ys + half, cy + halfh + 0.5) - dmath.max(ys - half, cy - halfh - 0.5), 0.0) / (
            (2.0 * halfw + 1.0) * (2.0 * halfh + 1.0))
        log1 = log1 + n * dmath.log(dmath.max(1.0 - alpha * p, 1e-30))
        log2 = log2 + n * dmath.log(dmath.max(1.0 - (2.0 - alpha) * alpha * p, 1e-30))
        # int(w * 0.9), exact in float32 as w * 9 / 10.
        w = dmath.floor(w * 9.0 / 10.0)
        h = dmath.floor(h * 9.0 / 10.0)
    t = dmath.exp(log1)
    # The fog's amount 1 - T, log-normal about its mean with the transmission's variance.
    amount = 1.0 - t
    tau2 = dmath.log(1.0 + dmath.max(dmath.exp(log2) - t * t, 0.0) / dmath.max(amount * amount, 1e-12))
    z = fn.reshape(fn.random.normal(zero, seed=noise_seed), layout="HWC")
    z = fn.gaussian_blur(z, sigma=dmath.max(half * 0.9, 0.5))
    mean = fn.reductions.mean(z)
    z = (z - mean) / dmath.max(fn.reductions.std_dev(z, mean), 1e-6)
    amount = dmath.min(amount * dmath.exp(dmath.sqrt(tau2) * z - tau2 / 2.0), 1.0)
    xf = fn.cast(images, dtype=types.FLOAT)
    white = float(scale)
    fog = xf + (white - xf) * amount
    # A.RandomFog's closing blur: an odd side of max(3, min(H, W) // 30), OpenCV's sigma for it.
    size = dmath.max(dmath.floor(dmath.min(height, width) / 30.0), 3.0)
    size = size + 1.0 - (size - dmath.floor(size / 2.0) * 2.0)
    fog = fn.gaussian_blur(fn.reshape(fog, layout="HWC"), window_size=fn.cast(size, dtype=types.INT32),
                           sigma=0.3 * ((size - 1.0) * 0.5 - 1.0) + 0.8)
    return weather_to_images(dmath.clamp(fog, 0.0, white), scale)


# --------------------------------------------------------------------------------------------
# RandomSunFlare

@do_not_convert
def flare_circles(height, width, angle, fx, fy, num_circles, alpha, t, r, c, most, src_color):
    """Kornia's module's sun and circles from the uniform draws (angle in turns, fx, fy in the region,
    alpha in [0.05, 0.2), t, r, c in [0, 1)): (flare_x, flare_y, circle_alpha, circle_x, circle_y,
    circle_radius, circle_color, strength). Every sample has `most` circles, those beyond its
    `num_circles` with alpha 0; `strength` is the sun's, from the circles' radii and alphas."""
    top = [float(v) for v in src_color]
    spread = int(max(top) * 0.2)
    lowest = [max(v - spread, 0.0) for v in top]
    angle = 2 * math.pi * angle
    flare_x = dmath.floor(width * fx)
    flare_y = dmath.floor(height * fy)
    step = dmath.max(dmath.floor(dmath.sqrt(height * height + width * width) * 0.01), 1.0)
    points = dmath.ceil(width / step)
    largest = dmath.max(dmath.floor(height * 0.01), 2.0)
    used = fn.cast(types.Constant(np.arange(most, dtype=np.float32)) < num_circles, dtype=types.FLOAT)
    circle_alpha = alpha * used
    t = dmath.min(dmath.floor(points * t), points - 1.0) * step - flare_x
    circle_x = weather_trunc(flare_x + t * dmath.cos(angle))
    circle_y = weather_trunc(flare_y + t * dmath.sin(angle))
    circle_radius = dmath.min(dmath.floor(1.0 + largest * r), largest)
    circle_radius = circle_radius * circle_radius * circle_radius
    low, high = np.array(lowest, dtype=np.float32), np.array(top, dtype=np.float32)
    circle_color = dmath.min(dmath.floor(types.Constant(low) + types.Constant(high + 1.0 - low) * c),
                             types.Constant(high))
    weighted = fn.reductions.sum(circle_alpha * circle_radius)
    strength = dmath.min(weighted / dmath.max(fn.reductions.sum(circle_radius * used), 1e-12) * 5.0, 1.0)
    return flare_x, flare_y, circle_alpha, circle_x, circle_y, circle_radius, circle_color, strength


@do_not_convert
def flare_overlay(images, height, width, flare_x, flare_y, circle_alpha, circle_x, circle_y, circle_radius,
                  circle_color, strength, most, src_radius, src_color, scale):
    """The images with the flare blended over them as floats in their units (clamped after a Normalize):
    each circle, then the sun as src_radius // 10 concentric discs of src_color, disc i of radius r_i
    blending with weight (strength x f_i)^3, as Kornia's module does."""
    unit = float(scale) / 255.0
    top = [float(v) for v in src_color]
    steps = src_radius // 10
    sun = [(float(int(1 + (src_radius - 1) * i / max(steps - 1, 1))) ** 2, (steps - i - 1) / max(steps - 1, 1))
           for i in range(steps)]
    xs, ys = weather_pixel_grids(images, height, width)
    out = fn.cast(images, dtype=types.FLOAT)
    overlay = out
    for k in range(most):
        # One subscript per value (see shadow_polygon: duplicated CPU nodes break GPU graphs).
        x, y, radius, alpha = circle_x[k], circle_y[k], circle_radius[k], circle_alpha[k]
        inside = fn.cast((xs - x) * (xs - x) + (ys - y) * (ys - y) <= radius * radius, dtype=types.FLOAT)
        overlay = overlay + inside * (fn.reshape(circle_color[k], shape=[1, 1, 3]) * unit - overlay)
        out = overlay * alpha + out * (1.0 - alpha)
    distance2 = (xs - flare_x) * (xs - flare_x) + (ys - flare_y) * (ys - flare_y)
    overlay = out
    colour = fn.reshape(types.Constant(np.array([v * unit for v in top], dtype=np.float32)), shape=[1, 1, 3])
    for radius2, fraction in sun:
        overlay = overlay + fn.cast(distance2 <= radius2, dtype=types.FLOAT) * (colour - overlay)
        weight = dmath.pow(strength * float(fraction), 3.0)
        out = overlay * weight + out * (1.0 - weight)
    return out if scale != 1.0 else dmath.clamp(out, 0.0, 1.0)


# --------------------------------------------------------------------------------------------
# RandomSnow

@do_not_convert
def random_snow(images, snow_point, brightness_coeff, scale):
    """Kornia's weather_snow_bleach: each pixel's HLS lightness (the mean of its max and min over the
    channels) multiplied by `brightness_coeff` (at most white) where it lies below snow_point / 2 + 1/3,
    the channels moved with it so that hue and saturation stay."""
    f = fn.cast(images, dtype=types.FLOAT) / float(scale)
    top = fn.reductions.max(f, axes=[2], keep_dims=True)
    bottom = fn.reductions.min(f, axes=[2], keep_dims=True)
    lightness = (top + bottom) * 0.5
    lifted = lightness + fn.cast(lightness < snow_point * 0.5 + 1.0 / 3.0, dtype=types.FLOAT) * (
        dmath.min(lightness * brightness_coeff, 1.0) - lightness)
    ratio = (1.0 - dmath.abs(2.0 * lifted - 1.0)) / dmath.max(1.0 - dmath.abs(2.0 * lightness - 1.0), 1e-12)
    return weather_to_images(dmath.clamp(lifted + (f - lightness) * ratio, 0.0, 1.0) * float(scale), scale)
