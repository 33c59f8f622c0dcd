"""The workbench's own Kornia modules for blur, noise and degradation ops.

Kornia's blurs take one kernel size per batch; Albumentations draws one per image. These
modules draw the size per sample (an odd size, uniformly among the odd sizes of the range, as
Albumentations' sample_odd_from_range does) and run Kornia's own filter once per drawn size on
the samples that drew it. Values are float [0, 1]; borders mirror without the edge pixel.
"""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch


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
    out = input.clone()
    applied = params["batch_prob"].to(sizes.device) > 0.5
    for size in torch.unique(sizes[applied]).tolist():
        index = torch.nonzero(applied & (sizes == size)).reshape(-1).to(input.device)
        out[index] = blur(input.index_select(0, index), int(size), index)
    return out


class WbMedianBlur(K.IntensityAugmentationBase2D):
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


class WbBoxBlur(K.IntensityAugmentationBase2D):
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


class WbMotionBlur(K.IntensityAugmentationBase2D):
    """Kornia's motion blur (kornia.filters.motion_blur, nearest kernel resampling, mirrored
    borders) with the odd kernel size, the angle (degrees, counter-clockwise) and the
    direction drawn per sample."""

    def __init__(self, kernel_size=(3, 7), angle=(0.0, 360.0), direction=(-1.0, 1.0), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.kernel_range = (int(kernel_size[0]), int(kernel_size[1]))
        self.angle_range, self.direction_range = tuple(angle), tuple(direction)

    def generate_parameters(self, batch_shape):
        count = batch_shape[0]
        return {"kernel_size": wb_odd_sizes(*self.kernel_range, count, self.device),
                "angle": wb_uniform(*self.angle_range, count, self.device),
                "direction": wb_uniform(*self.direction_range, count, self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        def blur(x, k, index):
            angle = params["angle"].to(x.device, x.dtype).index_select(0, index)
            direction = params["direction"].to(x.device, x.dtype).index_select(0, index)
            return kornia.filters.motion_blur(x, k, angle, direction, border_type="reflect", mode="nearest")

        return wb_by_size(input, params, params["kernel_size"].cpu(), blur)


class WbGaussianNoise(K.IntensityAugmentationBase2D):
    """Zero-mean Gaussian noise, its standard deviation drawn per sample from `std` (low, high),
    one value per pixel and channel; nothing is clamped (as Kornia's RandomGaussianNoise)."""

    def __init__(self, std=(0.2, 0.44), p=0.5):
        super().__init__(p=p, same_on_batch=False, p_batch=1.0, keepdim=False)
        self.std_range = (float(std[0]), float(std[1]))

    def generate_parameters(self, batch_shape):
        std = wb_uniform(*self.std_range, batch_shape[0], self.device)
        return {"std": std, "gaussian_noise": torch.randn(tuple(batch_shape), device=self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        noise = params["gaussian_noise"].to(input.device, input.dtype)
        return input + noise * params["std"].to(input.device, input.dtype).view(-1, 1, 1, 1)


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


class WbDownscale(K.IntensityAugmentationBase2D):
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


class WbCoarseDropout(K.IntensityAugmentationBase2D):
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
