"""The workbench's own Kornia modules for weather ops (rain, fog, sun flare, shadow).

Each follows Albumentations 2.0.8's algorithm (augmentations/pixel/transforms.py and
functional.py) on float images in [0, 1], batched, with the parameters in Albumentations'
units (colours 0-255, positions in pixels). Kornia's own K.RandomRain is another effect
(white rectangles of a random count, no blur, no darkening), so it is not used.

Rain drops and fog particles are as many as the image size (and the fog's intensity) say, so
their positions cannot be a tensor with the batch first that stays one shape across image
sizes: those modules draw a per-sample `seed` in generate_parameters and place the drops from
it in apply_transform with a generator of their own (deterministic: replaying the recorded
params gives the same image). `weather_rain_drops` / `weather_fog_particles` give the
positions for a seed, so anyone can list them from the reported draws.
"""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch

from .arguments import RecordsArguments


def weather_uniform(shape, lo, hi, device, dtype):
    """Uniform draws in [lo, hi] from torch's global generator on `device` (the workbench's CPU)."""
    return lo + (hi - lo) * torch.rand(shape, device=device, dtype=dtype)


def weather_randint(shape, lo, hi, device, dtype):
    """Whole numbers in [lo, hi) drawn per element (lo, hi tensors broadcast to `shape`), as floats."""
    return torch.floor(lo + (hi - lo) * torch.rand(shape, device=device, dtype=dtype)).clamp_max(hi - 1)


def weather_seeds(batch, device):
    """One generator seed per sample, for draws whose count depends on the image size."""
    return torch.randint(0, 2 ** 31 - 1, (batch,), device=device, dtype=torch.int64)


# --------------------------------------------------------------------------------------------
# Shadow

def weather_polygon_mask(vertices, height, width):
    """(..., H, W) float masks of the polygons `vertices` (..., D, 2) in pixels (x, y), even-odd
    rule at the pixel centres (integer coordinates), as cv2.fillPoly fills self-crossing ones."""
    device = vertices.device
    ys = torch.arange(height, device=device, dtype=vertices.dtype).view(height, 1)
    xs = torch.arange(width, device=device, dtype=vertices.dtype).view(1, width)
    x0, y0 = vertices[..., 0, None, None], vertices[..., 1, None, None]
    nxt = torch.roll(vertices, shifts=-1, dims=-2)
    x1, y1 = nxt[..., 0, None, None], nxt[..., 1, None, None]
    crosses = (y0 > ys) != (y1 > ys)
    span = torch.where(y1 == y0, torch.ones_like(y1), y1 - y0)
    at = x0 + (ys - y0) * (x1 - x0) / span
    toggles = (crosses & (xs < at)).sum(dim=-3)
    # Points on an edge count as inside (fillPoly draws the outline too).
    on_edge = ((xs - x0) * (y1 - y0) == (ys - y0) * (x1 - x0)) & (torch.minimum(x0, x1) <= xs) & \
        (xs <= torch.maximum(x0, x1)) & (torch.minimum(y0, y1) <= ys) & (ys <= torch.maximum(y0, y1))
    return ((toggles % 2 == 1) | on_edge.any(dim=-3)).to(vertices.dtype)


class WorkbenchRandomShadow(K.IntensityAugmentationBase2D, RecordsArguments):
    """Darken random polygons, as A.RandomShadow: `num_shadows_limit` polygons of
    `shadow_dimension` vertices drawn in whole pixels inside `shadow_roi` (x_min, y_min, x_max,
    y_max as fractions), each multiplying the pixels inside it by 1 - its intensity."""

    def __init__(self, shadow_roi=(0.0, 0.5, 1.0, 1.0), num_shadows_limit=(1, 2), shadow_dimension=5,
                 shadow_intensity_range=(0.5, 0.5), p=0.5):
        super().__init__(p=p)
        self.shadow_roi = tuple(float(v) for v in shadow_roi)
        self.num_shadows_limit = (int(num_shadows_limit[0]), int(num_shadows_limit[1]))
        self.shadow_dimension = int(shadow_dimension)
        self.shadow_intensity_range = tuple(float(v) for v in shadow_intensity_range)

    def generate_parameters(self, batch_shape):
        batch, height, width = batch_shape[0], batch_shape[-2], batch_shape[-1]
        device, dtype = self.device, self.dtype
        lo, hi = self.num_shadows_limit
        x0, y0, x1, y1 = self.shadow_roi
        # int(fraction * side) as Albumentations; its integers(lo, hi) needs hi > lo.
        x_lo, x_hi = int(x0 * width), int(x1 * width)
        y_lo, y_hi = int(y0 * height), int(y1 * height)
        shape = (batch, hi, self.shadow_dimension)
        xs = weather_randint(shape, x_lo, max(x_hi, x_lo + 1), device, dtype)
        ys = weather_randint(shape, y_lo, max(y_hi, y_lo + 1), device, dtype)
        count = weather_randint((batch,), lo, hi + 1, device, dtype)
        intensity = weather_uniform((batch, hi), *self.shadow_intensity_range, device, dtype)
        return {"num_shadows": count, "vertices": torch.stack([xs, ys], dim=-1), "intensity": intensity}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        vertices = params["vertices"].to(input.device, input.dtype)
        masks = weather_polygon_mask(vertices, height, width)  # (B, S, H, W)
        slots = torch.arange(vertices.shape[1], device=input.device)
        used = (slots[None] < params["num_shadows"].to(input.device)[:, None]).to(input.dtype)
        darkness = 1.0 - masks * (params["intensity"].to(input.device, input.dtype) * used)[..., None, None]
        return input * torch.prod(darkness, dim=1, keepdim=True)


# --------------------------------------------------------------------------------------------
# Sun flare

def weather_flare_points(width, height):
    """How many points A.RandomSunFlare lays along the flare line (one each step_size pixels of x)."""
    diagonal = (height ** 2 + width ** 2) ** 0.5
    step = max(1, int(diagonal * 0.01))
    return -(-width // step), step


class WorkbenchRandomSunFlare(K.IntensityAugmentationBase2D, RecordsArguments):
    """A sun flare, as A.RandomSunFlare with method "overlay": flare circles of src_color-like
    colours along a line through the sun (centre drawn in `flare_roi`, direction from
    `angle_range` in turns), blended one after another, then the sun: src_radius // 10
    concentric discs blended with rising weight."""

    def __init__(self, flare_roi=(0.0, 0.0, 1.0, 0.5), angle_range=(0.0, 1.0), num_flare_circles_range=(6, 10),
                 src_radius=400, src_color=(255.0, 255.0, 255.0), p=0.5):
        super().__init__(p=p)
        self.flare_roi = tuple(float(v) for v in flare_roi)
        self.angle_range = tuple(float(v) for v in angle_range)
        self.num_flare_circles_range = (int(num_flare_circles_range[0]), int(num_flare_circles_range[1]))
        self.src_radius = int(src_radius)
        self.src_color = tuple(float(v) for v in src_color)

    def generate_parameters(self, batch_shape):
        batch, height, width = batch_shape[0], batch_shape[-2], batch_shape[-1]
        device, dtype = self.device, self.dtype
        x0, y0, x1, y1 = self.flare_roi
        lo, hi = self.num_flare_circles_range
        angle = 2 * torch.pi * weather_uniform((batch,), *self.angle_range, device, dtype)
        cx = torch.floor(width * weather_uniform((batch,), x0, x1, device, dtype))
        cy = torch.floor(height * weather_uniform((batch,), y0, y1, device, dtype))
        count = weather_randint((batch,), lo, hi + 1, device, dtype)
        points, step = weather_flare_points(width, height)
        max_radius = max(2, int(height * 0.01))
        shape = (batch, hi)
        alpha = weather_uniform(shape, 0.05, 0.2, device, dtype)
        t = weather_randint(shape, 0, points, device, dtype) * step - cx[:, None]
        x = torch.trunc(cx[:, None] + t * torch.cos(angle)[:, None])
        y = torch.trunc(cy[:, None] + t * torch.sin(angle)[:, None])
        radius = weather_randint(shape, 1, max_radius + 1, device, dtype) ** 3
        top = torch.tensor(self.src_color, device=device, dtype=dtype)
        spread = int(max(self.src_color) * 0.2)
        colour = weather_randint((batch, hi, 3), torch.clamp(top - spread, min=0), top + 1, device, dtype)
        used = torch.arange(hi, device=device)[None] < count[:, None]
        return {"flare_x": cx, "flare_y": cy, "num_circles": count,
                "circle_alpha": torch.where(used, alpha, torch.zeros_like(alpha)), "circle_x": x, "circle_y": y,
                "circle_radius": radius, "circle_color": colour}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        device, dtype = input.device, input.dtype
        get = {k: v.to(device, dtype) for k, v in params.items() if k != "forward_input_shape"}
        ys = torch.arange(height, device=device, dtype=dtype).view(1, height, 1)
        xs = torch.arange(width, device=device, dtype=dtype).view(1, 1, width)
        output, overlay = input, input
        for k in range(get["circle_alpha"].shape[1]):
            inside = ((xs - get["circle_x"][:, k, None, None]) ** 2 + (ys - get["circle_y"][:, k, None, None]) ** 2
                      <= get["circle_radius"][:, k, None, None] ** 2)[:, None]
            overlay = torch.where(inside, get["circle_color"][:, k, :, None, None] / 255.0, overlay)
            alpha = get["circle_alpha"][:, k, None, None, None]
            output = overlay * alpha + output * (1 - alpha)
        # The sun's strength: 5 x the circles' alpha weighted by their radius, at most 1.
        used = (get["circle_alpha"] > 0).to(dtype)
        weighted = (get["circle_alpha"] * get["circle_radius"]).sum(1)
        total = (get["circle_radius"] * used).sum(1).clamp_min(1e-12)
        top = torch.clamp(weighted / total * 5, max=1.0)
        steps = self.src_radius // 10
        colour = torch.tensor(self.src_color, device=device, dtype=dtype).view(1, 3, 1, 1) / 255.0
        distance2 = (xs - get["flare_x"][:, None, None]) ** 2 + (ys - get["flare_y"][:, None, None]) ** 2
        overlay = output
        for i in range(steps):
            radius = float(int(1 + (self.src_radius - 1) * i / max(steps - 1, 1)))
            overlay = torch.where((distance2 <= radius * radius)[:, None], colour, overlay)
            fraction = (steps - i - 1) / max(steps - 1, 1)
            weight = ((top * fraction) ** 3)[:, None, None, None]
            output = overlay * weight + output * (1 - weight)
        return output.clamp(0.0, 1.0)


# --------------------------------------------------------------------------------------------
# Rain

def weather_rain_count(height, rain_type):
    """Drops per image, as A.RandomRain counts them."""
    return {"drizzle": height // 4, "heavy": height, "torrential": height * 2}.get(rain_type, height // 3)


def weather_drop_length(height, drop_length):
    """A.RandomRain's drop length: drop_length, or max(1, height // 8) when it is 0 (None there)."""
    return max(1, height // 8) if drop_length == 0 else int(drop_length)


def weather_rain_drops(seed, height, width, rain_type, drop_length):
    """(count, 2) whole-pixel start points (x, y) of the drops of the sample with `seed`: x in
    [0, width), y in [0, height - drop_length)."""
    generator = torch.Generator().manual_seed(int(seed))
    count = weather_rain_count(height, rain_type)
    length = weather_drop_length(height, drop_length)
    x = torch.randint(0, width, (count,), generator=generator)
    y = torch.randint(0, max(height - length, 1), (count,), generator=generator)
    return torch.stack([x, y], dim=1)


def weather_streak_mask(drops, slant, length, height, width):
    """(H, W) mask of the 4-connected streaks from each drop (x, y) to (trunc(x + slant), y + length):
    row r of a streak covers the columns from its offset at r to its offset at r + 1."""
    x0, y0 = drops[:, 0].double(), drops[:, 1].double()
    dx = torch.trunc(x0 + float(slant)) - x0
    sign, run = torch.sign(dx), dx.abs()
    widest = int(run.max().item()) if len(drops) else 0
    r = torch.arange(length + 1, dtype=torch.float64).view(1, -1, 1)
    k = torch.arange(widest + 1, dtype=torch.float64).view(1, 1, -1)
    offset = torch.floor(run.view(-1, 1, 1) * r / length + 0.5)
    following = torch.where(r < length, torch.floor(run.view(-1, 1, 1) * (r + 1) / length + 0.5), offset)
    covered = (offset <= k) & (k <= following)
    cols = x0.view(-1, 1, 1) + sign.view(-1, 1, 1) * k
    rows = (y0.view(-1, 1, 1) + r).expand_as(covered)
    cols = cols.expand_as(covered)
    keep = covered & (cols >= 0) & (cols < width) & (rows >= 0) & (rows < height)
    mask = torch.zeros(height, width, dtype=torch.float64)
    mask[rows[keep].long(), cols[keep].long()] = 1.0
    return mask


class WorkbenchRandomRain(K.IntensityAugmentationBase2D, RecordsArguments):
    """Rain, as A.RandomRain: streaks of `drop_color` (0-255) from random whole-pixel points,
    `drop_length` long (0: height // 8) and slanted by `slant` pixels across that length (drawn
    from `slant_range`, Albumentations' unit), box-blurred over blur_value x blur_value pixels
    (mirrored border), added to the image (saturating), then the image is multiplied by
    `brightness_coefficient`. The drops' count follows `rain_type` (default: height // 3)."""

    def __init__(self, slant_range=(-10.0, 10.0), drop_length=0, drop_color=(200.0, 200.0, 200.0), blur_value=7,
                 brightness_coefficient=0.7, rain_type="default", p=0.5):
        super().__init__(p=p)
        self.slant_range = tuple(float(v) for v in slant_range)
        self.drop_length = int(drop_length)
        self.drop_color = tuple(float(v) for v in drop_color)
        self.blur_value = int(blur_value)
        self.brightness_coefficient = float(brightness_coefficient)
        self.rain_type = str(rain_type)

    def generate_parameters(self, batch_shape):
        batch = batch_shape[0]
        return {"slant": weather_uniform((batch,), *self.slant_range, self.device, self.dtype),
                "seed": weather_seeds(batch, self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        length = weather_drop_length(height, self.drop_length)
        masks = [weather_streak_mask(weather_rain_drops(seed, height, width, self.rain_type, self.drop_length),
                                     float(slant), length, height, width)
                 for seed, slant in zip(params["seed"].cpu().tolist(), params["slant"].cpu().tolist())]
        mask = torch.stack(masks)[:, None].to(input.device, input.dtype)
        colour = torch.tensor(self.drop_color, device=input.device, dtype=input.dtype).view(1, 3, 1, 1) / 255.0
        layer = mask * colour
        if self.blur_value > 1:
            layer = kornia.filters.box_blur(layer, (self.blur_value, self.blur_value), border_type="reflect")
        return torch.clamp(input + layer, 0.0, 1.0) * self.brightness_coefficient


# --------------------------------------------------------------------------------------------
# Fog

def weather_fog_particles(seed, height, width, intensity):
    """((count, 2) particle centres (x, y), (count,) radii) of the sample with `seed`, laid out
    as A.RandomFog lays them: rounds of particles in a region that shrinks by 10% a round
    around the centre (at most 10 rounds), each round area / region_size^2 x intensity x 10 of them."""
    generator = torch.Generator().manual_seed(int(seed))
    region = max(1, int(width // 3 * intensity))
    cx, cy = int(width / 2), int(height / 2)
    w, h, rounds, points = width, height, 0, []
    while w > region and h > region and rounds < 10:
        count = int(w * h / (region * region) * intensity * 10)
        x = torch.randint(cx - w // 2, cx + w // 2 + 1, (count,), generator=generator)
        y = torch.randint(cy - h // 2, cy + h // 2 + 1, (count,), generator=generator)
        points.append(torch.stack([x, y], dim=1))
        w, h, rounds = int(w * 0.9), int(h * 0.9), rounds + 1
    centres = torch.cat(points) if points else torch.zeros(0, 2, dtype=torch.int64)
    largest = max(2, int(min(height, width) * 0.1 * intensity))
    smallest = max(1, largest // 2)
    radii = torch.randint(smallest, largest, (len(centres),), generator=generator)
    return centres, radii


def weather_disc_count(centres, radii, height, width):
    """(H, W) number of the discs (x - cx)^2 + (y - cy)^2 <= r^2 covering each pixel."""
    count = torch.zeros(height * width, dtype=torch.float64)
    for r in torch.unique(radii).tolist():
        span = torch.arange(-r, r + 1)
        dy, dx = torch.meshgrid(span, span, indexing="ij")
        disc = (dx ** 2 + dy ** 2) <= r * r
        dy, dx = dy[disc], dx[disc]
        chosen = centres[radii == r]
        ys = chosen[:, 1:2] + dy[None]
        xs = chosen[:, 0:1] + dx[None]
        keep = (ys >= 0) & (ys < height) & (xs >= 0) & (xs < width)
        count.index_add_(0, (ys * width + xs)[keep], torch.ones(int(keep.sum()), dtype=torch.float64))
    return count.view(height, width)


def weather_fog_kernel(height, width):
    """A.RandomFog's closing blur: an odd kernel of max(3, min(H, W) // 30) and OpenCV's sigma for it."""
    size = max(3, min(height, width) // 30)
    size += 1 - size % 2
    return size, 0.3 * ((size - 1) * 0.5 - 1) + 0.8


class WorkbenchRandomFog(K.IntensityAugmentationBase2D, RecordsArguments):
    """Fog, as A.RandomFog: white discs placed around the centre (see weather_fog_particles), each
    blended over the image with weight alpha_coef x intensity (intensity drawn from
    `fog_coef_range`), then a Gaussian blur of about 1/30 of the shorter side."""

    def __init__(self, fog_coef_range=(0.3, 1.0), alpha_coef=0.08, p=0.5):
        super().__init__(p=p)
        self.fog_coef_range = tuple(float(v) for v in fog_coef_range)
        self.alpha_coef = float(alpha_coef)

    def generate_parameters(self, batch_shape):
        batch = batch_shape[0]
        return {"intensity": weather_uniform((batch,), *self.fog_coef_range, self.device, self.dtype),
                "seed": weather_seeds(batch, self.device)}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        counts = []
        for seed, intensity in zip(params["seed"].cpu().tolist(), params["intensity"].cpu().tolist()):
            centres, radii = weather_fog_particles(seed, height, width, intensity)
            counts.append(weather_disc_count(centres, radii, height, width))
        count = torch.stack(counts)[:, None].to(input.device, input.dtype)
        alpha = (self.alpha_coef * params["intensity"].to(input.device, input.dtype)).view(-1, 1, 1, 1)
        # Each disc blends white in with weight alpha: n of them leave (1 - alpha)^n of the rest.
        fogged = 1.0 - (1.0 - input) * torch.pow(1.0 - alpha, count)
        size, sigma = weather_fog_kernel(height, width)
        return kornia.filters.gaussian_blur2d(fogged, (size, size), (sigma, sigma), border_type="reflect").clamp(0, 1)


# --------------------------------------------------------------------------------------------
# Snow

def weather_snow_bleach(input, snow_point, brightness_coeff):
    """A.RandomSnow's "bleach" in floats: the HLS lightness L = (max + min) / 2 of the pixels with
    L < snow_point / 2 + 1/3 is multiplied by brightness_coeff (at most 1), hue and HLS saturation
    kept: each channel becomes L' + (channel - L) x (1 - |2L' - 1|) / (1 - |2L - 1|)."""
    top = input.amax(dim=-3, keepdim=True)
    bottom = input.amin(dim=-3, keepdim=True)
    lightness = (top + bottom) / 2
    threshold = (snow_point / 2 + 1.0 / 3.0).view(-1, 1, 1, 1)
    brighter = torch.clamp(lightness * brightness_coeff, max=1.0)
    lifted = torch.where(lightness < threshold, brighter, lightness)
    room = 1 - torch.abs(2 * lightness - 1)
    ratio = (1 - torch.abs(2 * lifted - 1)) / torch.clamp(room, min=1e-12)
    return torch.clamp(lifted + (input - lightness) * ratio, 0.0, 1.0)


class WorkbenchRandomSnow(K.IntensityAugmentationBase2D, RecordsArguments):
    """Snow, as A.RandomSnow with method "bleach": pixels darker than a lightness threshold
    (snow_point drawn from `snow_point_range`: threshold snow_point / 2 + 1/3) get their HLS
    lightness multiplied by `brightness_coeff`, which bleaches them towards white."""

    def __init__(self, snow_point_range=(0.1, 0.3), brightness_coeff=2.5, p=0.5):
        super().__init__(p=p)
        self.wb_args = {"snow_point_range": tuple(float(v) for v in snow_point_range),
                        "brightness_coeff": float(brightness_coeff)}
        self.snow_point_range = self.wb_args["snow_point_range"]
        self.brightness_coeff = self.wb_args["brightness_coeff"]

    def generate_parameters(self, batch_shape):
        return {"snow_point": weather_uniform((batch_shape[0],), *self.snow_point_range, self.device, self.dtype)}

    def apply_transform(self, input, params, flags, transform=None):
        snow_point = params["snow_point"].to(input.device, input.dtype)
        return weather_snow_bleach(input, snow_point, self.brightness_coeff)
