"""The workbench's own Kornia modules for non-rigid distortions (elastic, grid, optical).

Each follows Albumentations 2.0.8's algorithm (augmentations/geometric/distortion.py and
functional.py), batched: it builds per sample the maps of source coordinates that
Albumentations hands to cv2.remap (pixel centres at integers) and resamples with
grid_sample (align_corners=False, so the same pixel-centre convention; zeros outside, as
cv2.BORDER_CONSTANT with 0). Kornia's own K.RandomElasticTransform works in normalised units
and blurs dx and dy apart, so it is not used.

The elastic noise field is as large as the image, so it cannot be a sampled tensor with the
batch first that stays one shape across image sizes: WbElasticTransform draws a per-sample
`seed` in generate_parameters and draws the noise from it in apply_transform with NumPy's
generator, as Albumentations does (deterministic: replaying the recorded params gives the same
image, on every device; and runtime/targets.py rebuilds the same field from the seed to move
masks, boxes and keypoints). `distortion_elastic_noise` gives the noise for a seed.
"""
from __future__ import annotations

import kornia.augmentation as K
import torch

from ..targets import elastic_noise, gaussian_kernel

from .arguments import RecordsArguments


def distortion_remap(input, map_x, map_y, mode):
    """cv2.remap(input, map_x, map_y, BORDER_CONSTANT, 0) in torch: `input` (B, C, H, W), the maps
    (B, H, W) the source x and y of every output pixel (pixel centres at integers); `mode`
    "bilinear" or "nearest"."""
    height, width = input.shape[-2:]
    gx = (2.0 * map_x + 1.0) / width - 1.0
    gy = (2.0 * map_y + 1.0) / height - 1.0
    grid = torch.stack([gx, gy], dim=-1).to(input.device, input.dtype)
    return torch.nn.functional.grid_sample(input, grid, mode=mode, padding_mode="zeros", align_corners=False)


def distortion_uniform(lo, hi, shape, device):
    """Uniform draws in [lo, hi] in float64 (as Albumentations' Python draws) from torch's global
    generator on `device` (the workbench keeps samplers on the CPU)."""
    return lo + (hi - lo) * torch.rand(shape, dtype=torch.float64, device=device)


class _DistortionBase(K.GeometricAugmentationBase2D, RecordsArguments):
    """A non-rigid warp: no matrix describes it (compute_transformation gives the identity)."""

    def compute_transformation(self, input, params, flags):
        return torch.eye(3, device=input.device, dtype=input.dtype).repeat(input.shape[0], 1, 1)


# --------------------------------------------------------------------------------------------
# ElasticTransform

def distortion_gaussian_kernel(sigma, size):
    """OpenCV's Gaussian kernel (float64) as a tensor: runtime/targets.py's gaussian_kernel (`size`
    taps, 0 = OpenCV's automatic size for float images)."""
    return torch.from_numpy(gaussian_kernel(sigma, size))


def distortion_blur_axis(x, kernel, dim):
    """`x` (N, 1, A, B) filtered along `dim` (-2 or -1) by the symmetric `kernel`, with the edge
    pixels repeated beyond the border (cv2.BORDER_REPLICATE); long kernels through the FFT."""
    radius = (kernel.numel() - 1) // 2
    pad = (0, 0, radius, radius) if dim == -2 else (radius, radius, 0, 0)
    padded = torch.nn.functional.pad(x, pad, mode="replicate")
    kernel = kernel.to(x.device, x.dtype)
    if kernel.numel() <= 63:
        shape = (1, 1, -1, 1) if dim == -2 else (1, 1, 1, -1)
        return torch.nn.functional.conv2d(padded, kernel.view(shape))
    length = padded.shape[dim]
    size = length + kernel.numel() - 1
    spectrum = torch.fft.rfft(padded, n=size, dim=dim)
    shape = [1, 1, 1, 1]
    shape[dim] = -1
    spectrum = spectrum * torch.fft.rfft(kernel, n=size).view(shape)
    full = torch.fft.irfft(spectrum, n=size, dim=dim)
    return full.narrow(dim, kernel.numel() - 1, length - kernel.numel() + 1)


def distortion_elastic_noise(seed, fields, height, width, distribution):
    """The (fields, H, W) float32 noise of the sample with `seed`, on the CPU: runtime/targets.py's
    elastic_noise (the counter-based hash every backend computes, with A.ElasticTransform's
    distributions), so that the targets rebuild the same field from the reported seed."""
    return torch.from_numpy(elastic_noise(seed, fields, height, width, distribution))


def distortion_elastic_field(noise, alpha, sigma, approximate):
    """Albumentations' displacement (dx, dy) (each (N, H, W)) from noise (N, F, H, W), F = 1 (the
    same field for both) or 2: the fields stacked one above the other into one (F H, W) image,
    blurred together (so dx's last rows mix with dy's first), edges replicated, then times alpha."""
    count, fields, height, width = noise.shape
    kernel = distortion_gaussian_kernel(float(sigma), 17 if approximate else 0)
    stacked = noise.reshape(count, 1, fields * height, width)
    stacked = distortion_blur_axis(distortion_blur_axis(stacked, kernel, -1), kernel, -2)
    out = stacked.reshape(count, fields, height, width) * alpha
    return out[:, 0], out[:, -1]


class WbElasticTransform(_DistortionBase):
    """A.ElasticTransform: per sample a random displacement field (noise from `noise_distribution`,
    Gaussian noise divided by its largest magnitude), blurred by a Gaussian of `sigma` (a 17-tap
    kernel when `approximate`), times `alpha` pixels; one field for both axes when `same_dxdy`.
    Reports the `seed` each sample's noise is drawn from (see distortion_elastic_noise)."""

    def __init__(self, alpha=1.0, sigma=50.0, approximate=False, same_dxdy=False, noise_distribution="gaussian",
                 resample="bilinear", p=0.5):
        super().__init__(p=p)
        self.alpha, self.sigma = float(alpha), float(sigma)
        self.approximate, self.same_dxdy = bool(approximate), bool(same_dxdy)
        self.noise_distribution, self.resample = str(noise_distribution), str(resample)
        self.wb_args = {"alpha": self.alpha, "sigma": self.sigma, "approximate": self.approximate,
                        "same_dxdy": self.same_dxdy, "noise_distribution": self.noise_distribution,
                        "resample": self.resample}

    def generate_parameters(self, batch_shape):
        return {"seed": torch.randint(0, 2 ** 31 - 1, (batch_shape[0],), device=self.device, dtype=torch.int64)}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        fields = 1 if self.same_dxdy else 2
        noise = torch.stack([distortion_elastic_noise(seed, fields, height, width, self.noise_distribution)
                             for seed in params["seed"].cpu().tolist()])
        dx, dy = distortion_elastic_field(noise.to(input.device), self.alpha, self.sigma, self.approximate)
        xs = torch.arange(width, device=input.device, dtype=dx.dtype).view(1, 1, width)
        ys = torch.arange(height, device=input.device, dtype=dx.dtype).view(1, height, 1)
        return distortion_remap(input, xs + dx, ys + dy, self.resample)


# --------------------------------------------------------------------------------------------
# GridDistortion

def distortion_grid_steps(steps, size, num_steps):
    """A.GridDistortion's `normalized` rule on (B, num_steps + 1) float64 steps along a side of
    `size` pixels: the last step shrinks to the share of its shorter cell, then all are scaled so
    that the grid ends at the image's far edge."""
    cell = size // num_steps
    if cell == 0:
        return steps
    last = min(size, (num_steps + 1) * cell) - num_steps * cell
    steps = torch.cat([steps[:, :-1], steps[:, -1:] * (last / cell)], dim=1)
    return steps * ((size / cell) / steps.sum(dim=1, keepdim=True))


def distortion_grid_axis(steps, size, num_steps):
    """(B, size) float64 source coordinates along one side for (B, num_steps + 1) steps, as
    A.GridDistortion's generate_grid: cell i covers pixels [i c, min((i + 1) c, size)), c = size //
    num_steps, and runs linearly (np.linspace, both ends included) from the sum of the previous
    cells' c x step to that plus its own; pixels past the last cell stay at 0."""
    cell = size // num_steps
    count = steps.shape[0]
    pixel = torch.arange(size, dtype=torch.float64)
    if cell == 0:
        return torch.zeros((count, size), dtype=torch.float64)
    index = torch.div(pixel, cell, rounding_mode="floor").long()
    start = index * cell
    length = (torch.clamp(start + cell, max=size) - start).to(torch.float64)
    inside = index <= num_steps
    index = index.clamp(max=num_steps)
    edges = torch.cat([torch.zeros((count, 1), dtype=torch.float64), torch.cumsum(cell * steps, dim=1)], dim=1)
    prev, cur = edges[:, index], edges[:, index + 1]
    t = torch.where(length > 1, (pixel - start) / (length - 1).clamp(min=1.0), torch.zeros_like(pixel))
    return torch.where(inside, prev + (cur - prev) * t, torch.zeros_like(prev))


class WbGridDistortion(_DistortionBase):
    """A.GridDistortion: the image cut into num_steps cells per side (plus a last, shorter one),
    each cell's width and height scaled by 1 + a value drawn from `distort_limit` per cell, line
    and sample; with `normalized` the steps are rescaled so that the grid spans the image exactly.
    Reports the steps the grid uses (after normalising): steps_x and steps_y, num_steps + 1 each."""

    def __init__(self, num_steps=5, distort_limit=(-0.3, 0.3), normalized=True, resample="bilinear", p=0.5):
        super().__init__(p=p)
        self.num_steps, self.normalized, self.resample = int(num_steps), bool(normalized), str(resample)
        self.distort_limit = (float(distort_limit[0]), float(distort_limit[1]))
        self.wb_args = {"num_steps": self.num_steps, "distort_limit": self.distort_limit,
                        "normalized": self.normalized, "resample": self.resample}

    def generate_parameters(self, batch_shape):
        count, height, width = batch_shape[0], int(batch_shape[-2]), int(batch_shape[-1])
        shape = (count, self.num_steps + 1)
        steps_x = 1.0 + distortion_uniform(*self.distort_limit, shape, self.device)
        steps_y = 1.0 + distortion_uniform(*self.distort_limit, shape, self.device)
        if self.normalized:
            steps_x = distortion_grid_steps(steps_x.cpu(), width, self.num_steps).to(self.device)
            steps_y = distortion_grid_steps(steps_y.cpu(), height, self.num_steps).to(self.device)
        return {"steps_x": steps_x, "steps_y": steps_y}

    def apply_transform(self, input, params, flags, transform=None):
        count, height, width = input.shape[0], input.shape[-2], input.shape[-1]
        xs = distortion_grid_axis(params["steps_x"].cpu().double(), width, self.num_steps)
        ys = distortion_grid_axis(params["steps_y"].cpu().double(), height, self.num_steps)
        map_x = xs.to(input.device, input.dtype)[:, None, :].expand(count, height, width)
        map_y = ys.to(input.device, input.dtype)[:, :, None].expand(count, height, width)
        return distortion_remap(input, map_x, map_y, self.resample)


# --------------------------------------------------------------------------------------------
# OpticalDistortion

def distortion_optical_maps(k, height, width, mode, device, dtype):
    """A.OpticalDistortion's maps (B, H, W) for coefficients k (B,). "camera": OpenCV's
    initUndistortRectifyMap with camera matrix [[W, 0, W/2], [0, H, H/2]], k1 = k2 = k and its
    default new camera matrix (principal point ((W - 1) / 2, (H - 1) / 2): half a pixel off the
    original one, so k = 0 shifts the image by half a pixel, as in Albumentations); "fisheye":
    r -> r (1 + k (r / r_max)^2) about (W/2, H/2)."""
    k = k.to(device, dtype).view(-1, 1, 1)
    u = torch.arange(width, device=device, dtype=dtype).view(1, 1, width)
    v = torch.arange(height, device=device, dtype=dtype).view(1, height, 1)
    if mode == "camera":
        x = (u - (width - 1) / 2.0) / width
        y = (v - (height - 1) / 2.0) / height
        r2 = x * x + y * y
        radial = 1.0 + k * r2 + k * r2 * r2
        return width / 2.0 + width * x * radial, height / 2.0 + height * y * radial
    x, y = u - width / 2.0, v - height / 2.0
    largest = ((width / 2.0) ** 2 + (height / 2.0) ** 2) ** 0.5
    radial = 1.0 + k * (x * x + y * y) / (largest * largest)
    return width / 2.0 + x * radial, height / 2.0 + y * radial


class WbOpticalDistortion(_DistortionBase):
    """A.OpticalDistortion: radial lens distortion with the coefficient k drawn per sample from
    `distort_limit`: k > 0 takes each pixel from further out (the picture shrinks towards the
    centre, black comes in at the corners), k < 0 from further in (it swells); see
    distortion_optical_maps for the camera and fisheye models. Reports k."""

    def __init__(self, distort_limit=(-0.05, 0.05), mode="camera", resample="bilinear", p=0.5):
        super().__init__(p=p)
        self.distort_limit = (float(distort_limit[0]), float(distort_limit[1]))
        self.mode, self.resample = str(mode), str(resample)
        self.wb_args = {"distort_limit": self.distort_limit, "mode": self.mode, "resample": self.resample}

    def generate_parameters(self, batch_shape):
        return {"k": distortion_uniform(*self.distort_limit, (batch_shape[0],), self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        map_x, map_y = distortion_optical_maps(params["k"], height, width, self.mode, input.device, input.dtype)
        return distortion_remap(input, map_x, map_y, self.resample)
