"""The workbench's own Kornia modules for blur, noise and degradation ops.

Kornia's blurs take one kernel size per batch; Albumentations draws one per image. These
modules draw the size per sample (an odd size, uniformly among the odd sizes of the range, as
Albumentations' sample_odd_from_range does) and run Kornia's own filter once per drawn size on
the samples that drew it. Values are float [0, 1]; borders mirror without the edge pixel. Also the
modules of ISONoise (OpenCV's HLS in torch), Sharpen and Emboss (per-sample 3x3 kernels), and JPEG coded
by libjpeg (JpegCompression's "libjpeg" codec).
"""
from __future__ import annotations

import cv2
import kornia
import kornia.augmentation as K
import numpy as np
import torch

from ..libjpeg import libjpeg_round_trip
from .arguments import RecordsArguments
from .threads import each_sample, sample_threads


def wb_odd_sizes(low, high, count, device):
    """`count` odd kernel sizes, each uniform among the odd integers of [low, high]."""
    choices = (int(high) - int(low)) // 2 + 1
    return (int(low) + 2 * torch.randint(0, choices, (count,), device=device)).float()


def wb_uniform(low, high, count, device):
    """`count` values uniform in [low, high]."""
    return float(low) + torch.rand(count, device=device) * (float(high) - float(low))


def wb_by_size(input, params, sizes, blur):
    """`blur(samples, size, index)` on the applied samples, grouped by their drawn size;
    the other samples are returned unchanged (the base class keeps them anyway)."""
    applied = params["batch_prob"].to(sizes.device) > 0.5
    drawn, every = torch.unique(sizes[applied]).tolist(), bool(applied.all())
    if len(drawn) == 1 and every:  # (every sample, one size: apply_to_rows hands the applied rows)
        return blur(input, int(drawn[0]), torch.arange(len(sizes), device=input.device))
    out = torch.empty_like(input) if every else input.clone()
    for size in drawn:
        index = torch.nonzero(applied & (sizes == size)).reshape(-1).to(input.device)
        out[index] = blur(input.index_select(0, index), int(size), index)
    return out


class WbMedianBlur(K.IntensityAugmentationBase2D, RecordsArguments):
    """Median of each kernel_size x kernel_size window (per channel, mirrored borders), the odd
    kernel size drawn per sample from `kernel_size` (low, high)."""

    def __init__(self, kernel_size=(3, 7), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.kernel_range = (int(kernel_size[0]), int(kernel_size[1]))

    def generate_parameters(self, batch_shape):
        return {"kernel_size": wb_odd_sizes(*self.kernel_range, batch_shape[0], self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        return wb_by_size(input, params, params["kernel_size"].cpu(),
                          lambda x, k, index: kornia.filters.median_blur(x, (k, k)))


class WbGaussianBlur(K.RandomGaussianBlur, RecordsArguments):
    """K.RandomGaussianBlur (sigma drawn per sample, mirrored borders) with its odd kernel size drawn
    per sample too, from `kernel_size` (low, high); each size's samples are blurred by
    kornia.filters.gaussian_blur2d. With low == high it draws nothing more and blurs as
    K.RandomGaussianBlur does: the same draws and images."""

    def __init__(self, kernel_size=(5, 5), sigma=(0.1, 2.0), p=0.5):
        low, high = int(kernel_size[0]), int(kernel_size[1])
        super().__init__((high, high), tuple(sigma), border_type="reflect", p=p)
        self.wb_args = {"kernel_size": (low, high), "sigma": tuple(sigma)}
        self.kernel_range = (low, high)

    def generate_parameters(self, batch_shape):
        params = super().generate_parameters(batch_shape)
        low, high = self.kernel_range
        if low == high:  # no draw, so that the random stream stays K.RandomGaussianBlur's
            params["kernel_size"] = torch.full((batch_shape[0],), float(low), device=self.device)
        else:
            params["kernel_size"] = wb_odd_sizes(low, high, batch_shape[0], self.device)
        return params

    def apply_transform(self, input, params, flags, transform=None):
        if self.kernel_range[0] == self.kernel_range[1]:
            return super().apply_transform(input, params, flags, transform)
        sigma = params["sigma"].to(input.device, input.dtype)

        def blur(x, k, index):
            return kornia.filters.gaussian_blur2d(x, (k, k), sigma.index_select(0, index).unsqueeze(-1).expand(-1, 2),
                                                  border_type="reflect", separable=True)

        return wb_by_size(input, params, params["kernel_size"].cpu(), blur)


class WbBoxBlur(K.IntensityAugmentationBase2D, RecordsArguments):
    """Mean of each kernel_size x kernel_size window (mirrored borders), the odd kernel size
    drawn per sample from `kernel_size` (low, high)."""

    def __init__(self, kernel_size=(3, 7), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.kernel_range = (int(kernel_size[0]), int(kernel_size[1]))

    def generate_parameters(self, batch_shape):
        return {"kernel_size": wb_odd_sizes(*self.kernel_range, batch_shape[0], self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        return wb_by_size(input, params, params["kernel_size"].cpu(),
                          lambda x, k, index: kornia.filters.box_blur(x, (k, k), border_type="reflect"))


class WbMotionBlur(K.IntensityAugmentationBase2D, RecordsArguments):
    """Kornia's motion blur (kornia.filters.motion_blur, nearest kernel resampling, mirrored
    borders) with the odd kernel size, the angle (degrees, counter-clockwise) and the
    direction drawn per sample. `allow_shifted`: each sample's kernel also moves off centre by
    round(shift x (kernel_size // 2) / 2) pixels along x (columns) and y (rows), `shift_x` and
    `shift_y` drawn uniformly in [-1, 1] (Albumentations' allow_shifted draw)."""

    def __init__(self, kernel_size=(3, 7), angle=(0.0, 360.0), direction=(-1.0, 1.0), allow_shifted=False, p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.wb_args = {"kernel_size": tuple(kernel_size), "angle": tuple(angle), "direction": tuple(direction),
                        "allow_shifted": bool(allow_shifted)}
        self.kernel_range = (int(kernel_size[0]), int(kernel_size[1]))
        self.angle_range, self.direction_range = tuple(angle), tuple(direction)
        self.allow_shifted = bool(allow_shifted)

    def generate_parameters(self, batch_shape):
        count = batch_shape[0]
        out = {"kernel_size": wb_odd_sizes(*self.kernel_range, count, self.device),
               "angle": wb_uniform(*self.angle_range, count, self.device),
               "direction": wb_uniform(*self.direction_range, count, self.device)}
        if self.allow_shifted:
            out["shift_x"] = wb_uniform(-1.0, 1.0, count, self.device)
            out["shift_y"] = wb_uniform(-1.0, 1.0, count, self.device)
        return out

    def apply_transform(self, input, params, flags, transform=None):
        def blur(x, k, index):
            angle = params["angle"].to(x.device, x.dtype).index_select(0, index)
            direction = params["direction"].to(x.device, x.dtype).index_select(0, index)
            # (Kornia's motion_blur is this kernel and filter2d: built here, so that filtered_planes may apply it.)
            kernel = motion_kernels(k, angle, direction)
            if self.allow_shifted:
                # The kernel placed in a window wide enough for the largest move, moved by whole pixels.
                half, margin = k // 2, (k // 2 + 1) // 2
                moved = torch.zeros(x.shape[0], k + 2 * margin, k + 2 * margin, device=x.device, dtype=x.dtype)
                for n, at in enumerate(index.cpu().tolist()):
                    dx = int(torch.round(params["shift_x"][at].float().cpu() * half * 0.5))
                    dy = int(torch.round(params["shift_y"][at].float().cpu() * half * 0.5))
                    moved[n, margin + dy:margin + dy + k, margin + dx:margin + dx + k] = kernel[n]
                kernel = moved
            if planes_filtered(x, kernel.shape[-1]):
                return filtered_planes(x, kernel)
            return kornia.filters.filter2d(x, kernel, border_type="reflect")

        return wb_by_size(input, params, params["kernel_size"].cpu(), blur)


def motion_kernels(size, angle, direction):
    """kornia.filters.get_motion_kernel2d(size, angle, direction, mode="nearest") for float32 CPU angles and
    directions (N,): the same N x size x size kernels, bit for bit, from Kornia's arithmetic in numpy on arrays of a
    few dozen values (the weights along the line in float32, the taps' sources in float64 from torch's cos and sin,
    snapped to 2^-20, ties to even): 0.35 against 0.56 ms for 16 kernels of 5 x 5 (bench/cpu_kernels.py); other
    inputs go to Kornia's function.
    Example: motion_kernels(3, torch.tensor([0.0]), torch.tensor([0.0]))[0, 1].tolist() == [1 / 3] * 3 (rounded)."""
    if not all(t.device.type == "cpu" and t.dtype == torch.float32 and t.dim() == 1 for t in (angle, direction)):
        return kornia.filters.get_motion_kernel2d(size, angle, direction, mode="nearest")
    f32, count, center = np.float32, int(angle.shape[0]), (size - 1) / 2
    toward = (np.clip(direction.numpy(), f32(-1.0), f32(1.0)) + f32(1.0)) / f32(2.0)
    step = (f32(1) - f32(2) * toward) / f32(size - 1)
    line = toward[:, None] + step[:, None] * np.arange(size, dtype=np.float32)
    # The weights padded with a 0 in front (index 0: a source outside the kernel), the line as the middle row.
    weights = np.zeros((count, 1 + size * size), np.float32)
    weights[:, 1 + (size // 2) * size:1 + (size // 2 + 1) * size] = line
    radians = torch.deg2rad(angle.to(torch.float64) % 360.0)
    cos, sin = radians.cos().numpy()[:, None, None], radians.sin().numpy()[:, None, None]
    offsets = np.arange(size, dtype=np.float64) - center
    v, u = np.meshgrid(offsets, offsets, indexing="ij")
    snap = 2.0 ** 20
    col = np.round(np.round((cos * u - sin * v) * snap) / snap + center)
    row = np.round(np.round((sin * u + cos * v) * snap) / snap + center)
    inside = (col >= 0) & (col < size) & (row >= 0) & (row < size)
    source = np.where(inside, row * size + col + 1, 0.0).astype(np.int64).reshape(count, -1)
    kernel = torch.from_numpy(np.take_along_axis(weights, source, 1).reshape(count, size, size))
    return kernel / kernel.sum(dim=(1, 2), keepdim=True)


# The largest kernel cv2.filter2D applies directly on a CPU: from 11 x 11 it goes through the DFT, slower than
# Kornia's convolution there.
PLANE_FILTER_MAX = 9


def planes_filtered(x, size):
    """Whether filtered_planes takes a float32 CPU batch `x` and a kernel of `size` pixels a side."""
    return x.device.type == "cpu" and x.dtype == torch.float32 and size <= PLANE_FILTER_MAX


def filtered_planes(x, kernels):
    """Kornia's filter2d(x, kernels, border_type="reflect") on a float32 CPU batch: each sample's channels
    correlated with its own odd square kernel (N x k x k) by cv2.filter2D, mirrored borders without the edge
    pixel (BORDER_REFLECT_101, what Kornia's "reflect" pads), a plane at a time: the same values to a float's
    rounding, without the grouped convolution's per-sample kernels (a sixth of blur_noise's call, profiled).
    Example: filtered_planes(torch.ones(1, 3, 8, 8), torch.full((1, 3, 3), 1 / 9)).allclose(torch.ones(1, 3, 8, 8))"""
    out = torch.empty(x.shape, dtype=torch.float32)
    planes, results = x.contiguous().numpy(), out.numpy()
    weights = kernels.to(torch.float32).cpu().numpy()
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            cv2.filter2D(planes[n, c], -1, weights[n], dst=results[n, c], borderType=cv2.BORDER_REFLECT_101)
    return out


class WbGaussianNoise(K.IntensityAugmentationBase2D, RecordsArguments):
    """Zero-mean Gaussian noise, its standard deviation drawn per sample from `std` (low, high),
    one value per pixel and channel; nothing is clamped (as Kornia's RandomGaussianNoise). The noise comes
    from OpenCV's generator (cv2.randn, as Albumentations' GaussNoise), seeded per sample from torch's."""

    def __init__(self, std=(0.2, 0.44), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.std_range = (float(std[0]), float(std[1]))

    def generate_parameters(self, batch_shape):
        return {"std": wb_uniform(*self.std_range, batch_shape[0], self.device)}

    def forward_parameters(self, batch_shape):
        """Kornia's draws (the gate, then the std), then a seed per sample from torch's generator, then the noise
        of the samples the gate applies to, each from OpenCV's generator seeded with its own seed (the others'
        noise is zero): the same noise on any thread, so the samples are shared out to the cores (sample_threads,
        from SHARED_MIN_SAMPLES: for batches of 8 the hand-over cost what sharing saved).
        torch's normal_ (7 ns a value, on one core) took a third of a blur and noise chain's time at batch 32;
        cv2.randn draws in three quarters of the time, on every core (bench/cpu_kernels.py). (Noise drawn for
        every sample, half of it thrown away at p = 0.5, had taken a third before that.)"""
        params = super().forward_parameters(batch_shape)
        count = int(batch_shape[0])
        seeds = torch.randint(0, 2 ** 31 - 1, (count,)).tolist()
        applies = params["batch_prob"].to(torch.bool).flatten().tolist()
        noise = torch.empty(tuple(batch_shape), dtype=torch.float32)
        planes = noise.numpy().reshape(count, -1, int(batch_shape[-1]))  # (one channel of rows: one cv2.randn)

        def draw(start, stop):
            for n in range(start, stop):
                if applies[n]:
                    cv2.setRNGSeed(seeds[n])  # (OpenCV's generator is the calling thread's own)
                    cv2.randn(planes[n], 0.0, 1.0)
                else:
                    planes[n].fill(0.0)
        with sample_threads(count):
            each_sample(count, draw)
        params["gaussian_noise"] = noise.to(self.device) if self.device is not None else noise
        return params

    def apply_transform(self, input, params, flags, transform=None):
        noise = params["gaussian_noise"].to(input.device, input.dtype)
        return input + noise * params["std"].to(input.device, input.dtype).view(-1, 1, 1, 1)

    def apply_rows_in_place(self, batch, rows, params):
        """apply_transform's values written into the samples `rows` (an index tensor) of a float `batch` the caller
        owns, sample by sample: no copy of the rows out of the batch and back (apply_to_rows).
        Example: a batch of zeros, its row 1 given noise of std 0.5, holds half the noise drawn for row 1."""
        std = params["std"].to(batch.device, batch.dtype)
        for n in rows.tolist():
            batch[n] += params["gaussian_noise"][n].to(batch.device, batch.dtype) * std[n]


def wb_taps(source, target, scale, nearest):
    """Source rows (or columns) and weights for resampling `source` pixels to `target` ones with
    OpenCV's conventions, `scale` source pixels per target pixel: nearest takes floor(i x scale);
    linear samples (i + 0.5) x scale - 0.5 between its two neighbours, clamped to the image."""
    i = torch.arange(target, dtype=torch.float64)
    if nearest:
        low = torch.floor(i * scale).clamp(0, source - 1).long()
        return low, low, torch.zeros(target, dtype=torch.float64)
    x = ((i + 0.5) * scale - 0.5).clamp(min=0.0)
    low = torch.floor(x).clamp(max=source - 1)
    return low.long(), (low + 1).clamp(max=source - 1).long(), x - low


def wb_resample(image, height, width, scale_y, scale_x, nearest):
    """A CHW image resampled to height x width, separably (rows, then columns)."""
    top, bottom, wy = (t.to(image.device) for t in wb_taps(image.shape[-2], height, scale_y, nearest))
    left, right, wx = (t.to(image.device) for t in wb_taps(image.shape[-1], width, scale_x, nearest))
    wy, wx = wy.to(image.dtype).view(-1, 1), wx.to(image.dtype)
    rows = image[:, top] * (1 - wy) + image[:, bottom] * wy
    return rows[..., left] * (1 - wx) + rows[..., right] * wx


class WbDownscale(K.IntensityAugmentationBase2D, RecordsArguments):
    """Shrink each sample by a factor drawn from `scale` (to round(side x scale) pixels), then
    resize it back, with OpenCV's resampling conventions (as cv2.resize with fx = fy = scale)."""

    def __init__(self, scale=(0.25, 0.25), down="nearest", up="nearest", p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.scale_range, self.down, self.up = (float(scale[0]), float(scale[1])), down, up

    def generate_parameters(self, batch_shape):
        # In float64, as Albumentations draws it: 1 / 0.3 in float32 would move nearest picks by a pixel.
        low, high = self.scale_range
        return {"scale": low + torch.rand(batch_shape[0], dtype=torch.float64, device=self.device) * (high - low)}

    def apply_transform(self, input, params, flags, transform=None):
        out = input.clone()
        height, width = input.shape[-2:]
        applied = params["batch_prob"].cpu() > 0.5
        for n, scale in enumerate(params["scale"].cpu().double().tolist()):
            if not applied[n]:
                continue
            # OpenCV's size rule (cvRound: to nearest, ties to even) and its source-per-target scale.
            small_h, small_w = max(1, round(height * scale)), max(1, round(width * scale))
            small = wb_resample(input[n], small_h, small_w, 1.0 / scale, 1.0 / scale, self.down == "nearest")
            out[n] = wb_resample(small, height, width, small_h / height, small_w / width, self.up == "nearest")
        return out


class WbCoarseDropout(K.IntensityAugmentationBase2D, RecordsArguments):
    """Fill a number of rectangles drawn per sample from `holes` (low, high) with `value`, as
    Albumentations' CoarseDropout: each side floor(fraction x image side), its fraction drawn
    per hole from `height` / `width`, the top-left corner uniform over the whole pixels where
    the hole fits. Every sample draws `holes[1]` holes; those beyond its count get sides 0."""

    def __init__(self, holes=(1, 2), height=(0.1, 0.2), width=(0.1, 0.2), value=0.0, p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.holes_range = (int(holes[0]), int(holes[1]))
        self.height_range, self.width_range, self.value = tuple(height), tuple(width), float(value)

    def generate_parameters(self, batch_shape):
        count, most = batch_shape[0], self.holes_range[1]
        height, width = float(batch_shape[-2]), float(batch_shape[-1])
        holes = torch.randint(self.holes_range[0], most + 1, (count,), device=self.device)
        active = (torch.arange(most, device=self.device)[None] < holes[:, None]).float()
        h = torch.floor(wb_uniform(*self.height_range, count * most, self.device).view(count, most) * height) * active
        w = torch.floor(wb_uniform(*self.width_range, count * most, self.device).view(count, most) * width) * active
        y = torch.floor(torch.rand(count, most, device=self.device) * (height - h + 1.0))
        x = torch.floor(torch.rand(count, most, device=self.device) * (width - w + 1.0))
        return {"holes": holes.float(), "x": x, "y": y, "width": w, "height": h}

    def apply_transform(self, input, params, flags, transform=None):
        rows = torch.arange(input.shape[-2], device=input.device, dtype=input.dtype).view(1, 1, -1, 1)
        cols = torch.arange(input.shape[-1], device=input.device, dtype=input.dtype).view(1, 1, 1, -1)
        x, y, w, h = (params[k].to(input.device, input.dtype)[..., None, None] for k in ("x", "y", "width", "height"))
        inside = ((rows >= y) & (rows < y + h) & (cols >= x) & (cols < x + w)).any(dim=1, keepdim=True)
        return torch.where(inside, torch.full_like(input, self.value), input)


def wb_rgb_to_hls(x):
    """OpenCV's float RGB -> HLS (cv2.COLOR_RGB2HLS) of a (B, 3, H, W) batch in [0, 1]: hue in
    degrees [0, 360), lightness (max + min) / 2 and saturation in [0, 1], each (B, H, W)."""
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    high = torch.maximum(torch.maximum(r, g), b)
    low = torch.minimum(torch.minimum(r, g), b)
    light, diff = (high + low) * 0.5, high - low
    some = diff > 1.1920929e-07  # OpenCV leaves hue and saturation 0 below FLT_EPSILON
    one = torch.ones_like(diff)
    denominator = torch.where(light < 0.5, high + low, 2.0 - high - low)
    sat = torch.where(some, diff / torch.where(some, denominator, one), torch.zeros_like(diff))
    scale = 60.0 / torch.where(some, diff, one)
    hue = torch.where(high == r, (g - b) * scale,
                      torch.where(high == g, (b - r) * scale + 120.0, (r - g) * scale + 240.0))
    hue = torch.where(hue < 0.0, hue + 360.0, hue)
    return torch.where(some, hue, torch.zeros_like(hue)), light, sat


def wb_hls_to_rgb(hue, light, sat):
    """HLS (hue in degrees, any value: it wraps) -> RGB (B, 3, H, W), as cv2.COLOR_HLS2RGB:
    channel n of (R, G, B) is L - a max(-1, min(k - 3, 9 - k, 1)) with a = S min(L, 1 - L),
    k = (n + hue / 30) mod 12 and n = 0, 8, 4."""
    a = sat * torch.minimum(light, 1.0 - light)
    out = []
    for n in (0.0, 8.0, 4.0):
        k = torch.remainder(n + hue / 30.0, 12.0)
        out.append(light - a * torch.clamp(torch.minimum(k - 3.0, 9.0 - k), -1.0, 1.0))
    return torch.stack(out, dim=1)


def wb_poisson(rate, uniform):
    """Poisson counts of mean `rate` (per sample, (B,)) from uniform draws (B, H, W) by the inverse
    of the distribution function: the count is the number of k >= 0 with P(X <= k) < u."""
    rate = rate.double().view(-1, 1, 1)
    u = uniform.double()
    term = torch.exp(-rate)
    cdf, count = term.clone(), torch.zeros_like(u)
    for k in range(1, 1000):
        below = u > cdf
        if not bool(below.any()):
            break
        count = count + below.to(count.dtype)
        term = term * rate / k
        cdf = cdf + term
    return count


class WbISONoise(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' ISONoise (camera sensor noise) on RGB in [0, 1]: in OpenCV's HLS, the
    lightness L of each pixel grows by n x intensity x (1 - L), n Poisson-distributed with mean
    intensity x (the image's standard deviation of L), and the hue (in degrees) moves by a normal
    draw of standard deviation color_shift x intensity; back to RGB, clipped to [0, 1].
    `color_shift` and `intensity` are drawn per sample from their (low, high) ranges."""

    def __init__(self, color_shift=(0.01, 0.05), intensity=(0.1, 0.5), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.wb_args = {"color_shift": tuple(color_shift), "intensity": tuple(intensity)}
        self.color_shift_range = (float(color_shift[0]), float(color_shift[1]))
        self.intensity_range = (float(intensity[0]), float(intensity[1]))

    def generate_parameters(self, batch_shape):
        count, height, width = batch_shape[0], batch_shape[-2], batch_shape[-1]
        return {"color_shift": wb_uniform(*self.color_shift_range, count, self.device),
                "intensity": wb_uniform(*self.intensity_range, count, self.device),
                "iso_uniform": torch.rand(count, height, width, device=self.device),
                "iso_normal": torch.randn(count, height, width, device=self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        intensity = params["intensity"].to(input.device, input.dtype)
        shift = params["color_shift"].to(input.device, input.dtype)
        hue, light, sat = wb_rgb_to_hls(input.clamp(0.0, 1.0))
        spread = light.flatten(1).std(dim=1, unbiased=False)
        counts = wb_poisson(spread * intensity, params["iso_uniform"].to(input.device)).to(input.dtype)
        light = (light + counts * intensity.view(-1, 1, 1) * (1.0 - light)).clamp(0.0, 1.0)
        hue = hue + params["iso_normal"].to(input.device, input.dtype) * (shift * intensity).view(-1, 1, 1)
        return wb_hls_to_rgb(hue, light, sat).clamp(0.0, 1.0)


def wb_blend_kernels(alpha, effect):
    """Per-sample 3x3 kernels (1 - alpha) x identity + alpha x effect, effect (B, 3, 3)."""
    identity = torch.zeros_like(effect)
    identity[:, 1, 1] = 1.0
    alpha = alpha.view(-1, 1, 1)
    return (1.0 - alpha) * identity + alpha * effect


def wb_correlate3(input, kernels):
    """Correlation of each sample with its own 3x3 kernel, mirrored borders, clipped to [0, 1]
    (OpenCV's filter2D into the image's own type, as Albumentations' convolve)."""
    return kornia.filters.filter2d(input, kernels.to(input.device, input.dtype), border_type="reflect").clamp(0.0, 1.0)


class WbSharpen(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' Sharpen (method 'kernel'): correlate with (1 - alpha) x identity + alpha x
    [[-1, -1, -1], [-1, 8 + lightness, -1], [-1, -1, -1]], alpha and lightness drawn per sample."""

    def __init__(self, alpha=(0.2, 0.5), lightness=(0.5, 1.0), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.wb_args = {"alpha": tuple(alpha), "lightness": tuple(lightness)}
        self.alpha_range, self.lightness_range = tuple(alpha), tuple(lightness)

    def generate_parameters(self, batch_shape):
        count = batch_shape[0]
        return {"alpha": wb_uniform(*self.alpha_range, count, self.device),
                "lightness": wb_uniform(*self.lightness_range, count, self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        lightness = params["lightness"].double()
        effect = -torch.ones(lightness.shape[0], 3, 3, dtype=torch.float64, device=lightness.device)
        effect[:, 1, 1] = 8.0 + lightness
        return wb_correlate3(input, wb_blend_kernels(params["alpha"].double(), effect))


class WbEmboss(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' Emboss: correlate with (1 - alpha) x identity + alpha x
    [[-1 - s, -s, 0], [-s, 1, s], [0, s, 1 + s]], alpha and the strength s drawn per sample."""

    def __init__(self, alpha=(0.2, 0.5), strength=(0.2, 0.7), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.wb_args = {"alpha": tuple(alpha), "strength": tuple(strength)}
        self.alpha_range, self.strength_range = tuple(alpha), tuple(strength)

    def generate_parameters(self, batch_shape):
        count = batch_shape[0]
        return {"alpha": wb_uniform(*self.alpha_range, count, self.device),
                "strength": wb_uniform(*self.strength_range, count, self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        s = params["strength"].double().view(-1, 1, 1)
        ramp = torch.tensor([[-1.0, -1.0, 0.0], [-1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], dtype=torch.float64,
                            device=s.device)
        base = torch.tensor([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64,
                            device=s.device)
        return wb_correlate3(input, wb_blend_kernels(params["alpha"].double(), base + s * ramp))


def wb_cv_gaussian_taps(sizes, sigmas, width):
    """OpenCV's 1-D Gaussian kernels (cv2.getGaussianKernel, what cv2.GaussianBlur uses) of odd
    `sizes` and `sigmas` (B,), each in the middle of `width` taps and zero outside its own size,
    (B, width) float64: exp(-x^2 / 2 sigma^2) normalised; a sigma <= 0 means OpenCV's choice, its
    fixed kernels at sizes 3 to 9 and sigma 0.3 ((size - 1) / 2 - 1) + 0.8 above."""
    sizes = sizes.double().reshape(-1, 1)
    sigmas = sigmas.double().reshape(-1, 1).to(sizes.device)
    x = torch.arange(width, dtype=torch.float64, device=sizes.device) - width // 2
    inside = (x.abs() <= (sizes - 1.0) / 2.0).double()
    spread = torch.where(sigmas > 0.0, sigmas, 0.3 * ((sizes - 1.0) * 0.5 - 1.0) + 0.8)
    taps = torch.exp(-x * x / (2.0 * spread * spread)) * inside
    taps = taps / taps.sum(dim=1, keepdim=True)
    # OpenCV's fixed kernels for sigma <= 0 (cv2.getGaussianKernel's table).
    small = {3: (0.25, 0.5, 0.25), 5: (0.0625, 0.25, 0.375, 0.25, 0.0625),
             7: (0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125),
             9: (0.015625, 0.05078125, 0.1171875, 0.19921875, 0.234375, 0.19921875, 0.1171875, 0.05078125,
                 0.015625)}
    for size, values in small.items():
        if size > width:
            continue
        fixed = torch.zeros(width, dtype=torch.float64, device=sizes.device)
        start = width // 2 - size // 2
        fixed[start:start + size] = torch.tensor(values, dtype=torch.float64, device=sizes.device)
        taps = torch.where((sigmas <= 0.0) & (sizes == size), fixed, taps)
    return taps


def wb_cv_gaussian_blur(input, taps):
    """Each sample blurred separably with its own 1-D kernel (B, width), mirrored borders (as
    cv2.GaussianBlur's BORDER_REFLECT_101)."""
    taps = taps.to(input.device, input.dtype)
    return kornia.filters.filter2d_separable(input, taps, taps, border_type="reflect")


class WbUnsharpMask(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' UnsharpMask on values in [0, 1]: blur = OpenCV's Gaussian blur (odd kernel size
    and sigma drawn per sample; sigma 0 = OpenCV's choice for the size), residual = x - blur;
    sharp = clip(x + alpha x residual, 0, 1); the pixels whose |residual| x 255 exceeds `threshold`
    (in grey levels) form a mask, blurred the same way (soft); out = sharp x soft + x x (1 - soft)."""

    def __init__(self, kernel_size=(3, 7), sigma=(0.0, 0.0), alpha=(0.2, 0.5), threshold=10, p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.wb_args = {"kernel_size": tuple(kernel_size), "sigma": tuple(sigma), "alpha": tuple(alpha),
                        "threshold": threshold}
        self.kernel_range = (int(kernel_size[0]), int(kernel_size[1]))
        self.sigma_range, self.alpha_range, self.threshold = tuple(sigma), tuple(alpha), float(threshold)

    def generate_parameters(self, batch_shape):
        count = batch_shape[0]
        return {"kernel_size": wb_odd_sizes(*self.kernel_range, count, self.device),
                "sigma": wb_uniform(*self.sigma_range, count, self.device),
                "alpha": wb_uniform(*self.alpha_range, count, self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        taps = wb_cv_gaussian_taps(params["kernel_size"], params["sigma"], self.kernel_range[1])
        residual = input - wb_cv_gaussian_blur(input, taps)
        alpha = params["alpha"].to(input.device, input.dtype).view(-1, 1, 1, 1)
        sharp = (input + alpha * residual).clamp(0.0, 1.0)
        soft = wb_cv_gaussian_blur((residual.abs() * 255.0 > self.threshold).to(input.dtype), taps)
        return sharp * soft + input * (1.0 - soft)


def wb_defocus_kernels(radius, alias_blur, width):
    """Albumentations' defocus kernels, (B, width, width) float64: a disk of each sample's radius r
    (pixels with x^2 + y^2 <= r^2) on a grid of 2 max(8, r) + 1 pixels, normalised, then blurred
    with OpenCV's Gaussian of sigma `alias_blur` (3 taps up to r = 8, 5 above; mirrored at the
    grid's edge), in the middle of `width` pixels."""
    out = torch.zeros(len(radius), width, width, dtype=torch.float64)
    for n, (r, sigma) in enumerate(zip(radius.cpu().tolist(), alias_blur.cpu().tolist())):
        r = int(round(r))
        half, size = max(8, r), 3 if r <= 8 else 5
        grid = torch.arange(-half, half + 1, dtype=torch.float64)
        disk = ((grid.view(-1, 1) ** 2 + grid.view(1, -1) ** 2) <= r * r).double()
        disk = disk / disk.sum()
        taps = wb_cv_gaussian_taps(torch.tensor([float(size)]), torch.tensor([float(sigma)]), size)
        blurred = kornia.filters.filter2d_separable(disk.view(1, 1, 2 * half + 1, -1), taps, taps,
                                                    border_type="reflect")
        c = width // 2
        out[n, c - half:c + half + 1, c - half:c + half + 1] = blurred[0, 0]
    return out


class WbDefocus(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' Defocus: correlate each sample with its defocus kernel (wb_defocus_kernels),
    the whole-number radius drawn uniformly from `radius` (low, high) and the kernel's blur sigma from
    `alias_blur`, per sample; mirrored borders."""

    def __init__(self, radius=(3, 10), alias_blur=(0.1, 0.5), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.wb_args = {"radius": tuple(radius), "alias_blur": tuple(alias_blur)}
        self.radius_range = (int(radius[0]), int(radius[1]))
        self.alias_blur_range = tuple(alias_blur)

    def generate_parameters(self, batch_shape):
        count = batch_shape[0]
        low, high = self.radius_range
        return {"radius": torch.randint(low, high + 1, (count,), device=self.device).float(),
                "alias_blur": wb_uniform(*self.alias_blur_range, count, self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        width = 2 * max(8, self.radius_range[1]) + 1
        kernels = wb_defocus_kernels(params["radius"], params["alias_blur"], width)
        return kornia.filters.filter2d(input, kernels.to(input.device, input.dtype), border_type="reflect")


class WbLibjpegJPEG(K.RandomJPEG, RecordsArguments):
    """Kornia's RandomJPEG draws, rounded to whole-number qualities (halves up, as DALI's), coded by libjpeg
    as torchvision's v2.JPEG codes (libjpeg_round_trip) instead of Kornia's differentiable approximation:
    each image as 8-bit levels through the host and back to where it was (one copy each way per batch on
    a GPU, and no gradient)."""

    def __init__(self, jpeg_quality=50.0, p=0.5):
        super().__init__(jpeg_quality=jpeg_quality, p=p)

    def generate_parameters(self, batch_shape):
        params = super().generate_parameters(batch_shape)
        params["jpeg_quality"] = torch.floor(params["jpeg_quality"] + 0.5)
        return params

    def apply_transform(self, input, params, flags, transform=None):
        levels = (input.clamp(0.0, 1.0) * 255.0).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        coded = [libjpeg_round_trip(image, int(q)) for image, q in zip(levels, params["jpeg_quality"].tolist())]
        if not coded:
            return input.clone()
        out = torch.from_numpy(np.stack(coded)).permute(0, 3, 1, 2)
        return out.to(device=input.device, dtype=input.dtype) / 255.0
