"""DALI distortion functions: A.GridDistortion's separable grid (map_x depends on x alone, map_y on y alone,
linear within each cell), resampled cell by cell with fn.resize, since DALI has no CPU operator that
resamples through per-pixel maps.

Sizes and coordinates are float nodes in pixels (`height`, `width`: each sample's size).
"""
import nvidia.dali.fn as fn
import nvidia.dali.math as dmath
import nvidia.dali.types as types
from nvidia.dali.pipeline import do_not_convert


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
