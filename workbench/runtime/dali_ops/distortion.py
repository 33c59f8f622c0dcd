"""DALI distortion functions: A.GridDistortion's separable grid (map_x depends on x alone, map_y on y alone,
linear within each cell), resampled cell by cell with fn.resize, since DALI has no CPU operator that
resamples through per-pixel maps; and A.OpticalDistortion's radial maps, built per sample on the CPU
from DALI operators and resampled on the GPU by fn.experimental.remap (which DALI 2.4 has on the GPU only);
and A.ElasticTransform's field, its noise the counter-based hash of runtime/targets.py computed in DALI's
uint32 arithmetic, blurred by fn.gaussian_blur and resampled by the same remap.

Sizes and coordinates are float nodes in pixels (`height`, `width`: each sample's size).
"""
import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert

from ..targets import HASH_MULTIPLIERS, HASH_STREAM


@do_not_convert
def _grid_distortion_axis(u, size, num_steps, normalized):
    """(steps, cells) of one axis of `size` pixels with num_steps cells. steps: the num_steps + 1 factors
    1 + u[i], normalised as A.GridDistortion normalises them (see kornia_modules.distortion_grid_steps).
    cells: (counts, ds, los, reach, padded) as generate_grid's cells say: cell i (pixels [i c,
    min((i + 1) c, size)), at least one) is a resize of the source span [prev, cur] (pixel centres) to its
    `counts[i]` pixels with both ends sampled, as np.linspace, `ds[i]` source pixels per output pixel; `los[i]`
    starts its window in the image padded with `reach` zeros before it (fn.resize must stay inside its
    input), `padded` the padded side."""
    cell = dmath.max(dmath.floor(size / float(num_steps)), 1.0)
    steps = [1.0 + u[i] for i in range(num_steps + 1)]
    if normalized:
        last = (dmath.min(size, float(num_steps + 1) * cell) - float(num_steps) * cell) / cell
        steps[-1] = steps[-1] * last
        total = steps[0]
        for step in steps[1:]:
            total = total + step
        scale = (size / cell) / total
        steps = [step * scale for step in steps]
    counts, ds, curs = [], [], []
    prev = 0.0
    for i in range(num_steps + 1):
        count = dmath.max(dmath.min(cell * float(i + 1), size) - cell * float(i), 1.0)
        cur = prev + cell * steps[i]
        # Source pixels per output pixel; a one-pixel cell samples `prev` whatever it is: 1 keeps its window small.
        d = (cur - prev) / dmath.max(count - 1.0, 1.0) * fn.cast(count > 1.0, dtype=types.FLOAT) \
            + fn.cast(count <= 1.0, dtype=types.FLOAT)
        counts.append(count)
        ds.append(d)
        curs.append(cur)
        prev = cur
    widest = ds[0]
    for d in ds[1:]:
        widest = dmath.max(widest, d)
    reach = dmath.ceil(0.5 * widest) + 2.0
    end = prev
    # The window [lo, lo + d count) in pixel-edge coordinates of the padded image: its pixel j's centre
    # samples prev + (cur - prev) j / (count - 1), pixel centres at integers in the image.
    los = []
    prev = 0.0
    for d, cur in zip(ds, curs):
        los.append(reach + prev + 0.5 - 0.5 * d)
        prev = cur
    padded = reach + dmath.max(size, dmath.ceil(end) + reach)
    return steps, (counts, ds, los, reach, padded)


@do_not_convert
def grid_distortion_plan(ux, uy, height, width, num_steps, normalized):
    """(steps_x, steps_y, grid) of A.GridDistortion with num_steps cells a side and the draws ux, uy
    (num_steps + 1 each): the steps the grid uses per axis (what the op reports), and what
    grid_distortion_images needs: each axis's cells and the shift onto the zero-padded canvas."""
    steps_x, cells_x = _grid_distortion_axis(ux, width, num_steps, normalized)
    steps_y, cells_y = _grid_distortion_axis(uy, height, num_steps, normalized)
    shift = fn.reshape(fn.stack(1.0, 0.0, cells_x[3], 0.0, 1.0, cells_y[3]), shape=[2, 3])
    return fn.stack(*steps_x), fn.stack(*steps_y), (cells_x, cells_y, shift)


@do_not_convert
def _grid_distortion_cell(images, count, d, lo, other, horizontal):
    """One cell's window of the padded images resized onto its `count` pixels along the axis (bilinear,
    as cv2.remap), `other` pixels across it."""
    if horizontal:
        size, start, end = fn.stack(other, count), fn.stack(0.0 * lo, lo), fn.stack(other, lo + d * count)
    else:
        size, start, end = fn.stack(count, other), fn.stack(lo, 0.0 * lo), fn.stack(lo + d * count, other)
    return fn.resize(images, size=size, roi_start=start, roi_end=end, roi_relative=False,
                     interp_type=types.INTERP_LINEAR, antialias=False, dtype=types.FLOAT)


@do_not_convert
def grid_distortion_images(images, grid, height, width, uint8):
    """The images through the grid of grid_distortion_plan: the columns, then the rows, each resampled cell
    by cell, on the image padded with 0 around it as far as the cells' windows reach, so that sources past
    the edges are 0 as cv2.remap's constant border makes them; back to uint8 levels where `uint8`."""
    (counts_x, ds_x, los_x, _, pad_w), (counts_y, ds_y, los_y, _, pad_h), shift = grid
    # Whole-pixel shifts onto other canvases, nearest neighbour (exact), 0 around: the padding, and at the
    # end the image's own size cut out (filled with 0 where the cells fall short of it).
    images = fn.warp_affine(images, matrix=shift, size=fn.stack(pad_h, pad_w), inverse_map=False, fill_value=0.0,
                            interp_type=types.INTERP_NN)
    images = fn.cat(*[_grid_distortion_cell(images, count, d, lo, pad_h, True)
                      for count, d, lo in zip(counts_x, ds_x, los_x)], axis=1)
    images = fn.cat(*[_grid_distortion_cell(images, count, d, lo, width, False)
                      for count, d, lo in zip(counts_y, ds_y, los_y)], axis=0)
    images = fn.warp_affine(images, matrix=fn.constant(fdata=[1.0, 0.0, 0.0, 0.0, 1.0, 0.0], shape=[2, 3]),
                            size=fn.stack(height, width), inverse_map=False, fill_value=0.0,
                            interp_type=types.INTERP_NN)
    return fn.cast(images, dtype=types.UINT8) if uint8 else images


# The longest side remap_distortion takes (its maps' coordinates are cut from one ramp of this length).
REMAP_MAX_SIDE = 32768
# Zero pixels remap_distortion puts around the image: sources past the edges then read zeros, blended as
# cv2.remap's BORDER_CONSTANT blends them, well inside the padded image (NPP, under DALI's remap, leaves
# output pixels whose source is outside its input unwritten).
_REMAP_PAD = 2.0


class RemapFrame:
    """The padded frame remap_distortion resamples in, built once per step (remap_frame) and shared by the
    step's maps and its resampling: DALI merges identical CPU operators, and a GPU operator fed by one
    that was merged away fails to build, so no step may build the same corner or size twice. `zero`: a
    per-sample 0 of the step's own; `start`: the frame's corner [-2, -2] (_REMAP_PAD outside the image);
    `height`, `width`: the frame's sides (H + 4, W + 4); `size`: [height, width]."""

    def __init__(self, zero, start, height, width, size):
        self.zero, self.start, self.height, self.width, self.size = zero, start, height, width, size


@do_not_convert
def remap_frame(height, width):
    """The RemapFrame of images `height` x `width` (float nodes)."""
    zero = width * 0.0
    corner = zero - _REMAP_PAD
    pad_h, pad_w = height + 2.0 * _REMAP_PAD, width + 2.0 * _REMAP_PAD
    return RemapFrame(zero, fn.stack(corner, corner), pad_h, pad_w, fn.stack(pad_h, pad_w))


@do_not_convert
def _remap_ramp(size, zero):
    """-2, -1, ..., size + 1 (float, one value per pixel of a side padded by _REMAP_PAD): the pixel centres
    (at integers) of a side of `size` pixels with its padding. `zero` is a per-sample 0 of the step's own
    (DALI merges identical CPU operators, which breaks GPU graphs they feed: no shared constant)."""
    ramp = types.Constant(np.arange(REMAP_MAX_SIDE + 2 * int(_REMAP_PAD), dtype=np.float32))
    cut = fn.slice(ramp, fn.stack(zero), fn.stack(size + 2.0 * _REMAP_PAD), axes=[0], normalized_anchor=False,
                   normalized_shape=False)
    return cut - _REMAP_PAD


@do_not_convert
def optical_distortion_maps(k, height, width, fisheye, frame):
    """A.OpticalDistortion's maps (map_x, map_y: the source x and y of each output pixel, pixel centres at
    integers) for coefficient `k` per sample, over the image and _REMAP_PAD pixels around it (what
    remap_distortion takes): runtime/targets.py's optical_maps, in float32 on the CPU. "camera" (fisheye
    False) is OpenCV's model with k1 = k2 = k about ((W - 1) / 2, (H - 1) / 2) in units of W and H, read about
    (W / 2, H / 2); fisheye scales the radius about (W / 2, H / 2) by 1 + k (r / r_max)^2. `frame`: the
    step's remap_frame."""
    u = fn.expand_dims(_remap_ramp(width, frame.zero), axes=[0])  # 1 x (W + 4): broadcast along the rows
    v = fn.expand_dims(_remap_ramp(height, frame.zero), axes=[1])  # (H + 4) x 1
    if fisheye:
        x, y = u - width * 0.5, v - height * 0.5
        radial = (x * x + y * y) * (k / (width * width * 0.25 + height * height * 0.25)) + 1.0
        return x * radial + width * 0.5, y * radial + height * 0.5
    x, y = (u - (width - 1.0) * 0.5) / width, (v - (height - 1.0) * 0.5) / height
    r2 = x * x + y * y
    radial = (r2 * r2 + r2) * k + 1.0
    return x * radial * width + width * 0.5, y * radial * height + height * 0.5


@do_not_convert
def remap_distortion(images, map_x, map_y, height, width, frame, interp, uint8):
    """cv2.remap(images, map_x, map_y, interp, BORDER_CONSTANT, 0) on the GPU with fn.experimental.remap
    (pixel_origin="center": a map value of i reads pixel i's centre, as OpenCV reads it). The maps are
    over the step's `frame` (remap_frame: the image padded by _REMAP_PAD): the image is padded with zeros, every
    source moved into the padded image and clamped half a pixel inside it (a source past the edges reads only
    zeros there: 0, as cv2.remap's constant border gives), and the image cut out again. Resampled in float,
    rounded back to uint8 levels where `uint8`."""
    if images.device != "gpu":
        raise ValueError("DALI's fn.experimental.remap runs on the GPU only: run this chain with device=\"cuda\" "
                         "(the exported script's --device cuda), or export it for Kornia or Albumentations")
    padded, map_x, map_y, inside = remap_padded(images, map_x, map_y, frame)
    out = fn.experimental.remap(padded, map_x.gpu(), map_y.gpu(), interp=interp, pixel_origin="center")
    out = fn.slice(out, fn.stack(inside, inside), fn.stack(height, width), axes=[0, 1], normalized_anchor=False,
                   normalized_shape=False)
    return fn.cast(out, dtype=types.UINT8) if uint8 else out


@do_not_convert
def remap_padded(images, map_x, map_y, frame):
    """(padded, map_x, map_y, inside): what remap_distortion resamples (on either device): the images as
    float with _REMAP_PAD zero pixels around them (`frame`, remap_frame's), the maps (over that padded
    frame) moved into it and clamped half a pixel inside it, and where the image starts in it (`inside`
    pixels down and right)."""
    map_x = fn.reshape(dmath.clamp(map_x + _REMAP_PAD, 0.5, frame.width - 1.5), layout="HW")
    map_y = fn.reshape(dmath.clamp(map_y + _REMAP_PAD, 0.5, frame.height - 1.5), layout="HW")
    padded = fn.slice(fn.cast(images, dtype=types.FLOAT), frame.start, frame.size, axes=[0, 1],
                      normalized_anchor=False, normalized_shape=False, out_of_bounds_policy="pad", fill_values=0.0)
    return padded, map_x, map_y, frame.zero + _REMAP_PAD


# ElasticTransform -------------------------------------------------------------------------------------
# The longest side elastic_field_dali's index ramps cover: two stacked fields of REMAP_MAX_SIDE rows and
# the blur's reach (at most 800 pixels: sigma 200) on both ends.
_ELASTIC_RAMP = 2 * REMAP_MAX_SIDE + 1602


def _uint32(value):
    return types.Constant(np.uint32(value % 2 ** 32), dtype=types.UINT32)


def _hash_mix(h):
    """runtime/targets.py's hash_mix on uint32 nodes (floor divisions for the shifts DALI lacks)."""
    h = h ^ (h // _uint32(65536))
    h = h * _uint32(HASH_MULTIPLIERS[0])
    h = h ^ (h // _uint32(32768))
    h = h * _uint32(HASH_MULTIPLIERS[1])
    return h ^ (h // _uint32(65536))


def _hash_uniform(seed, stream, rows, columns):
    """runtime/targets.py's hash_uniform: (0, 1) float32 per (row, column) from a uint32 seed node."""
    start = _hash_mix(seed + _uint32(stream * HASH_STREAM))
    h = _hash_mix(_hash_mix(start ^ rows) ^ columns)
    return (fn.cast(h // _uint32(256), dtype=types.FLOAT) + 0.5) * (1.0 / 16777216.0)


@do_not_convert
def _replicated_indices(count, reach, zero):
    """The pixel indices of a side of `count` pixels with `reach` more on both ends, those repeating the
    edge pixel's index (cv2.BORDER_REPLICATE), as uint32: 0 (reach + 1 times), 1, ..., count - 1 (reach
    + 1 times). `zero` is a per-sample 0 of the step's own (see _remap_ramp)."""
    ramp = types.Constant(np.arange(_ELASTIC_RAMP, dtype=np.float32))
    cut = fn.slice(ramp, fn.stack(zero), fn.stack(count + 2.0 * reach), axes=[0], normalized_anchor=False,
                   normalized_shape=False)
    return fn.cast(dmath.clamp(cut - float(reach), zero, count - 1.0), dtype=types.UINT32)


@do_not_convert
def elastic_maps_dali(images, seed, height, width, frame, alpha, sigma, taps, fields, distribution):
    """(map_x, map_y) over the step's `frame` (what remap_distortion takes), on the images' device: each
    pixel's position plus runtime/targets.py's elastic_field for the sample's `seed`. The noise of the
    stacked fields ((fields H) x W, elastic_noise_at's hash) is computed over a canvas `taps` // 2 pixels
    wider on every side whose outer pixels repeat the edge ones, divided by its largest magnitude (Gaussian
    noise), blurred by fn.gaussian_blur with `taps` taps (whose own border is never read), and cut to the
    frame of each field (the frame's outer pixels are cut away after the remap), times alpha."""
    reach = (taps - 1) // 2
    rows = fn.expand_dims(_replicated_indices(height * float(fields), reach, frame.zero), axes=[1])
    columns = fn.expand_dims(_replicated_indices(width, reach, frame.zero), axes=[0])
    u = fn.expand_dims(_remap_ramp(width, frame.zero), axes=[0])
    v = fn.expand_dims(_remap_ramp(height, frame.zero), axes=[1])
    if images.device == "gpu":
        rows, columns, u, v = rows.gpu(), columns.gpu(), u.gpu(), v.gpu()
    seed = fn.cast(seed, dtype=types.UINT32)
    if distribution == "gaussian":
        u1, u2 = _hash_uniform(seed, 0, rows, columns), _hash_uniform(seed, 1, rows, columns)
        noise = dmath.sqrt(dmath.log(u1) * -2.0) * dmath.cos(u2 * float(2.0 * np.pi))
        largest = fn.reductions.max(dmath.abs(noise))
        big = largest > 1e-6
        noise = noise * (big / dmath.max(largest, 1e-6) + (1.0 - big))
    else:
        noise = _hash_uniform(seed, 0, rows, columns) * 2.0 - 1.0
    blurred = fn.gaussian_blur(fn.reshape(noise, layout="HW"), sigma=float(sigma), window_size=int(taps))
    # The frame starts _REMAP_PAD pixels before the image, which starts `reach` pixels into the canvas.
    left = frame.zero - float(_REMAP_PAD - reach)
    dx = fn.slice(blurred, fn.stack(left, left), frame.size, axes=[0, 1], normalized_anchor=False,
                  normalized_shape=False)
    dy = dx if fields == 1 else fn.slice(blurred, fn.stack(left + height, left), frame.size, axes=[0, 1],
                                         normalized_anchor=False, normalized_shape=False)
    return u + dx * float(alpha), v + dy * float(alpha)
