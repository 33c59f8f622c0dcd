"""The workbench's own Kornia modules for colour ops (Albumentations' colour transforms on float
images in [0, 1]: inputs are clamped to [0, 1] first and results clamped to it, as Kornia's
own intensity ops do)."""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch

from ..opencv_lab import opencv_lab_tables

from .arguments import RecordsArguments


def uniform_draws(ranges, batch_shape, same_on_batch, device, dtype):
    """One uniform draw per sample for each (key, (lo, hi)) of `ranges`, on torch's generator
    (a collapsed range gives its value exactly)."""
    count = 1 if same_on_batch else batch_shape[0]
    out = {}
    for key, (lo, hi) in ranges:
        draw = torch.rand(count, device=device, dtype=dtype) * (hi - lo) + lo
        out[key] = draw.expand(batch_shape[0]).clone() if same_on_batch else draw
    return out


class RandomBrightnessContrast(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' RandomBrightnessContrast: x * (1 + c) + b, c drawn from `contrast`, b from
    `brightness` (in [0, 1] units; times the image's mean value when `by_max` is False), clamped
    to [0, 1]. There is no contrast centre: contrast scales around 0, as Albumentations does."""

    def __init__(self, brightness=(-0.2, 0.2), contrast=(-0.2, 0.2), by_max=True, same_on_batch=False, p=1.0,
                 keepdim=False):
        super().__init__(p=p, same_on_batch=same_on_batch, keepdim=keepdim)
        self.ranges = (("brightness", (float(brightness[0]), float(brightness[1]))),
                       ("contrast", (float(contrast[0]), float(contrast[1]))))
        self.by_max = bool(by_max)

    def generate_parameters(self, batch_shape):
        return uniform_draws(self.ranges, batch_shape, self.same_on_batch, self.device, self.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        x = input.clamp(0.0, 1.0)
        alpha = (1.0 + params["contrast"]).to(x).view(-1, 1, 1, 1)
        beta = params["brightness"].to(x).view(-1, 1, 1, 1)
        if not self.by_max:
            beta = beta * x.mean(dim=(1, 2, 3), keepdim=True)
        return (x * alpha + beta).clamp(0.0, 1.0)


def shift_hsv(x, hue, sat, val):
    """OpenCV's HSV (H in sextants, S = (max - min) / max, V = max) of RGB `x` in [0, 1], hue
    shifted by `hue` sextants, `sat` and `val` added to S and V (clamped to [0, 1]; grey pixels
    keep S = 0), back to RGB. The per-sample shifts are (N, 1, 1) tensors."""
    r, g, b = x[:, 0], x[:, 1], x[:, 2]
    top = torch.maximum(torch.maximum(r, g), b)
    span = top - torch.minimum(torch.minimum(r, g), b)
    safe = torch.where(span > 0, span, torch.ones_like(span))
    is_r = top == r
    is_g = (top == g) & ~is_r
    h = torch.where(is_r, torch.remainder((g - b) / safe, 6.0),
                    torch.where(is_g, (b - r) / safe + 2.0, (r - g) / safe + 4.0))
    h = torch.where(span > 0, h, torch.zeros_like(h))
    s = torch.where(top > 0, span / torch.where(top > 0, top, torch.ones_like(top)), torch.zeros_like(top))
    h = torch.remainder(h + hue, 6.0)
    s = torch.where(s > 0, (s + sat).clamp(0.0, 1.0), s)
    v = (top + val).clamp(0.0, 1.0)
    channels = []
    for n in (5.0, 3.0, 1.0):
        k = torch.remainder(h + n, 6.0)
        channels.append(v - v * s * torch.minimum(k, 4.0 - k).clamp(0.0, 1.0))
    return torch.stack(channels, dim=1)


class RandomHueSaturationValue(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' HueSaturationValue in its 8-bit units: hue shifted by a draw from `hue`
    (OpenCV's hue units, 180 per turn), saturation and value by draws from `sat` and `val` (levels
    of 255 added to S and V), all per sample."""

    def __init__(self, hue=(-20.0, 20.0), sat=(-30.0, 30.0), val=(-20.0, 20.0), same_on_batch=False, p=1.0,
                 keepdim=False):
        super().__init__(p=p, same_on_batch=same_on_batch, keepdim=keepdim)
        self.ranges = (("hue_shift", (float(hue[0]), float(hue[1]))), ("sat_shift", (float(sat[0]), float(sat[1]))),
                       ("val_shift", (float(val[0]), float(val[1]))))

    def generate_parameters(self, batch_shape):
        return uniform_draws(self.ranges, batch_shape, self.same_on_batch, self.device, self.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        x = input.clamp(0.0, 1.0)

        def per_sample(key, unit):
            return (params[key].to(x) / unit).view(-1, 1, 1)

        return shift_hsv(x, per_sample("hue_shift", 30.0), per_sample("sat_shift", 255.0),
                         per_sample("val_shift", 255.0)).clamp(0.0, 1.0)


class RandomChannelShift(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' RGBShift: a value drawn per sample from `r`, `g` and `b` (levels of 255)
    added to the red, green and blue channels, clamped to [0, 1]."""

    def __init__(self, r=(-20.0, 20.0), g=(-20.0, 20.0), b=(-20.0, 20.0), same_on_batch=False, p=1.0,
                 keepdim=False):
        super().__init__(p=p, same_on_batch=same_on_batch, keepdim=keepdim)
        self.ranges = (("r_shift", (float(r[0]), float(r[1]))), ("g_shift", (float(g[0]), float(g[1]))),
                       ("b_shift", (float(b[0]), float(b[1]))))

    def generate_parameters(self, batch_shape):
        return uniform_draws(self.ranges, batch_shape, self.same_on_batch, self.device, self.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        x = input.clamp(0.0, 1.0)
        shift = torch.stack([params[k].to(x) for k in ("r_shift", "g_shift", "b_shift")], dim=1) / 255.0
        return (x + shift.view(-1, 3, 1, 1)).clamp(0.0, 1.0)


class RandomGrayscaleMethod(K.IntensityAugmentationBase2D, RecordsArguments):
    """Grey by one of Albumentations' ToGray methods, kept as three channels: "weighted_average"
    (ITU-R 601 luma, Kornia's rgb_to_grayscale), "average" ((R + G + B) / 3), "max" (max of R, G, B)
    or "desaturation" ((max + min) / 2)."""

    def __init__(self, method="weighted_average", same_on_batch=False, p=1.0, keepdim=False):
        super().__init__(p=p, same_on_batch=same_on_batch, keepdim=keepdim)
        if method not in ("weighted_average", "average", "max", "desaturation"):
            raise ValueError(f"unknown grey method {method!r}")
        self.method = method

    def apply_transform(self, input, params, flags, transform=None):
        if self.method == "weighted_average":
            grey = kornia.color.rgb_to_grayscale(input)
        elif self.method == "average":
            grey = input.mean(dim=1, keepdim=True)
        elif self.method == "max":
            grey = input.amax(dim=1, keepdim=True)
        else:
            grey = (input.amax(dim=1, keepdim=True) + input.amin(dim=1, keepdim=True)) / 2.0
        return grey.expand_as(input).clone()


def equalize_opencv(x):
    """OpenCV's equalizeHist on each channel of float images in [0, 1] (8-bit levels by rounding):
    level i maps to round((cdf(i) - cdf(first used level)) * 255 / (pixels - cdf(first used level)))
    in float32, as OpenCV computes it; a channel of one level is left as it is."""
    n, c, h, w = x.shape
    levels = (x.clamp(0.0, 1.0) * 255.0).round().long().reshape(n * c, h * w)
    offsets = torch.arange(n * c, device=x.device).view(-1, 1) * 256
    hist = torch.bincount((levels + offsets).reshape(-1), minlength=n * c * 256).view(n * c, 256)
    cdf = hist.cumsum(dim=1)
    first = torch.where(hist > 0, cdf, torch.full_like(cdf, h * w + 1)).amin(dim=1, keepdim=True)
    spread = (h * w - first).clamp(min=1)
    scale = 255.0 / spread.to(torch.float32)
    lut = ((cdf - first).clamp(min=0).to(torch.float32) * scale).round().clamp(0.0, 255.0)
    identity = torch.arange(256, device=x.device, dtype=torch.float32).expand_as(lut)
    lut = torch.where(first >= h * w, identity, lut)
    out = torch.gather(lut, 1, levels) / 255.0
    return out.reshape(n, c, h, w).to(x.dtype)


class RandomEqualizeMode(K.IntensityAugmentationBase2D, RecordsArguments):
    """Histogram equalisation of each channel: PIL's algorithm (mode "pil", Kornia's equalize) or
    OpenCV's equalizeHist (mode "cv")."""

    def __init__(self, mode="pil", same_on_batch=False, p=1.0, keepdim=False):
        super().__init__(p=p, same_on_batch=same_on_batch, keepdim=keepdim)
        if mode not in ("pil", "cv"):
            raise ValueError(f"unknown equalisation mode {mode!r}")
        self.mode = mode

    def apply_transform(self, input, params, flags, transform=None):
        x = input.clamp(0.0, 1.0)
        return kornia.enhance.equalize(x) if self.mode == "pil" else equalize_opencv(x)


def opencv_lab_tables_on(device):
    """OpenCV's 8-bit RGB -> Lab tables for L (runtime/opencv_lab.py, which the DALI export looks up
    too) on `device`: gamma as float32, lightness as long, for `opencv_lab_lightness`."""
    gamma, lightness = opencv_lab_tables()
    return (torch.as_tensor(gamma).to(device=device, dtype=torch.float32),
            torch.as_tensor(lightness).to(device=device, dtype=torch.long))


def opencv_lab_lightness(levels):
    """OpenCV's 8-bit Lab L (L * 255 / 100, as cv2.cvtColor(..., COLOR_RGB2LAB) gives it for uint8)
    of RGB levels (N, 3, H, W) of integers 0-255: y = round-half-up of the fixed-point luminance
    (weights 871, 2929, 296 of 4096), then the table. Exact in float32 (every sum stays below 2**24)."""
    gamma, lightness = opencv_lab_tables_on(levels.device)
    linear = gamma[levels]
    y = torch.floor((linear[:, 0] * 871.0 + linear[:, 1] * 2929.0 + linear[:, 2] * 296.0 + 2048.0) / 4096.0)
    return lightness[y.long()]


def reflect101_index(size, total, device):
    """Indices 0..total-1 folded into 0..size-1 as OpenCV's BORDER_REFLECT_101 pads (any length)."""
    i = torch.arange(total, device=device)
    if size == 1:
        return torch.zeros_like(i)
    period = 2 * (size - 1)
    i = torch.remainder(i, period)
    return torch.where(i > size - 1, period - i, i)


def clahe_opencv(levels, clip_limit, tiles_x, tiles_y):
    """OpenCV's CLAHE (cv2.createCLAHE(clip_limit, (tiles_x, tiles_y)).apply) of 8-bit images given
    as integer levels (N, H, W), one clip limit per image (N,); returns float levels (N, H, W).

    As OpenCV does it: when a side is not a multiple of its tile count, the image is padded at the
    bottom and right (BORDER_REFLECT_101) by tiles - (side % tiles) on BOTH sides; each tile's
    256-bin histogram is clipped at max(int(clip * tile_pixels / 256), 1), the excess spread evenly
    with the remainder going one count each to every (256 // remainder)-th bin from 0; the lookup
    table is round(cumulative count * float32(255 / tile_pixels)); each pixel blends the tables of
    its four nearest tile centres bilinearly in float32 and is rounded (half to even)."""
    n, h, w = levels.shape
    device = levels.device
    if h % tiles_y or w % tiles_x:
        hh, ww = h + tiles_y - h % tiles_y, w + tiles_x - w % tiles_x
        ext = levels[:, reflect101_index(h, hh, device)][:, :, reflect101_index(w, ww, device)]
    else:
        ext, hh, ww = levels, h, w
    th, tw = hh // tiles_y, ww // tiles_x
    area = th * tw
    count = n * tiles_y * tiles_x
    tiles = ext.reshape(n, tiles_y, th, tiles_x, tw).permute(0, 1, 3, 2, 4).reshape(count, area)
    offsets = torch.arange(count, device=device).view(-1, 1) * 256
    hist = torch.bincount((tiles + offsets).reshape(-1), minlength=count * 256).view(n, tiles_y * tiles_x, 256)
    limit = torch.floor(clip_limit.to(device=device, dtype=torch.float64) * area / 256.0).long()
    limit = limit.clamp(min=1).view(n, 1, 1)
    excess = (hist - limit).clamp(min=0).sum(dim=2, keepdim=True)
    hist = torch.minimum(hist, limit) + excess // 256
    residual = excess % 256
    bins = torch.arange(256, device=device).view(1, 1, 256)
    step = (256 // residual.clamp(min=1)).clamp(min=1)
    hist = hist + ((bins % step == 0) & (bins // step < residual)).long()
    scale = torch.tensor(255.0 / area, dtype=torch.float32, device=device)
    lut = (hist.cumsum(dim=2).to(torch.float32) * scale).round().clamp(0.0, 255.0).reshape(n, -1)

    def centres(size, tile, tiles):
        # OpenCV: t = x * float32(1 / tile) - 0.5, the two tables floor(t) and floor(t) + 1 (clamped).
        t = torch.arange(size, device=device, dtype=torch.float32) * (
            1.0 / torch.tensor(float(tile), dtype=torch.float32, device=device)) - 0.5
        first = torch.floor(t)
        weight = t - first
        first = first.long()
        return first.clamp(min=0), (first + 1).clamp(max=tiles - 1), weight

    y1, y2, ya = centres(h, th, tiles_y)
    x1, x2, xa = centres(w, tw, tiles_x)
    flat = levels.reshape(n, h * w)

    def table(ty, tx):
        index = ((ty.view(-1, 1) * tiles_x + tx.view(1, -1)) * 256).reshape(1, -1) + flat
        return torch.gather(lut, 1, index).view(n, h, w)

    xa, ya = xa.view(1, 1, w), ya.view(1, h, 1)
    xa1, ya1 = 1.0 - xa, 1.0 - ya
    out = (table(y1, x1) * xa1 + table(y1, x2) * xa) * ya1 + (table(y2, x1) * xa1 + table(y2, x2) * xa) * ya
    return out.round().clamp(0.0, 255.0)


class RandomCLAHE(K.IntensityAugmentationBase2D, RecordsArguments):
    """Albumentations' CLAHE: OpenCV's CLAHE (`clahe_opencv`) on the L channel of Lab, with a clip
    limit drawn per sample from `clip_limit` and a grid of `tiles_x` by `tiles_y` tiles. The image
    is read as 8-bit levels (round(x * 255)); L is OpenCV's 8-bit L (`opencv_lab_lightness`), so the
    equalised L levels are OpenCV's; the result is rebuilt from them (L = level * 100 / 255) and
    Kornia's float a and b (kornia.color.rgb_to_lab), with kornia.color.lab_to_rgb, clamped."""

    def __init__(self, clip_limit=(1.0, 4.0), tiles_x=8, tiles_y=8, same_on_batch=False, p=1.0, keepdim=False):
        super().__init__(p=p, same_on_batch=same_on_batch, keepdim=keepdim)
        self.ranges = (("clip_limit", (float(clip_limit[0]), float(clip_limit[1]))),)
        self.tiles_x, self.tiles_y = int(tiles_x), int(tiles_y)
        self.wb_args = {"clip_limit": self.ranges[0][1], "tiles_x": self.tiles_x, "tiles_y": self.tiles_y}

    def generate_parameters(self, batch_shape):
        return uniform_draws(self.ranges, batch_shape, self.same_on_batch, self.device, self.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        x = input.clamp(0.0, 1.0)
        levels = (x * 255.0).round().long()
        lightness = clahe_opencv(opencv_lab_lightness(levels), params["clip_limit"], self.tiles_x, self.tiles_y)
        lab = kornia.color.rgb_to_lab(x)
        lab = torch.stack([lightness.to(x.dtype) * (100.0 / 255.0), lab[:, 1], lab[:, 2]], dim=1)
        return kornia.color.lab_to_rgb(lab).clamp(0.0, 1.0)


def per_sample(values, image):
    """One value per sample of `image` (N x C x H x W, or C x H x W with one value) on its device and
    in its dtype, shaped to broadcast over the sample. Example: per_sample(torch.ones(4), x).shape ==
    (4, 1, 1, 1) for a 4-sample batch x."""
    return values.to(image.device, image.dtype).reshape(-1, *([1] * (image.dim() - 1)))


def hue_turns(image, turns):
    """Kornia's adjust_hue(image, turns x 2 pi) (RGB to HSV, the hue moved, back), in a third of its time
    on the CPU: HSV's sextant hue h in [0, 6) of each pixel, moved by 6 x turns, and each channel rebuilt
    as max - (max - min) x clamp(min(k, 4 - k), 0, 1) with k = (n + h) mod 6 (n = 5, 3, 1 for R, G, B),
    the closed form of HSV to RGB; within 2e-6 of Kornia's (float32). `image`: N x 3 x H x W in [0, 1];
    `turns`: one per sample.

    Example:
        >>> red = torch.tensor([1.0, 0.0, 0.0]).view(1, 3, 1, 1)
        >>> hue_turns(red, torch.tensor([1 / 3])).flatten().tolist()    # a third of a turn: green
        [0.0, 1.0, 0.0]
    """
    # Elementwise arithmetic on one plane per channel, no torch.where, amax over channels or broadcast
    # remainder: those took two thirds of the time on the CPU (torch.profiler, 6 x 3 x 224 x 224).
    r, g, b = (channel.unsqueeze(-3) for channel in image.unbind(-3))
    high = torch.maximum(torch.maximum(r, g), b)
    chroma = high - torch.minimum(torch.minimum(r, g), b)
    # Grey pixels (chroma 0) divide 0 by the smallest normal number: hue 0, as Kornia gives them.
    safe = chroma.clamp_min(torch.finfo(image.dtype).tiny)
    # The sextant of the first maximal channel, as Kornia's rgb_to_hsv picks it: masks of 0 and 1
    # pick one of the three candidates exactly. sign(x - high) + 1 is 1 where x is the maximum, else 0
    # (x - high is 0 exactly then): a third of the time of (x == high) made floats on a CPU.
    is_r = torch.sub(r, high).sign_().add_(1.0)
    is_g = torch.sub(g, high).sign_().add_(1.0).mul_(1.0 - is_r)
    is_b = (1.0 - is_r).sub_(is_g)
    sextant = ((g - b).div_(safe).mul_(is_r)
               .addcmul_((b - r).div_(safe).add_(2.0), is_g)
               .addcmul_((r - g).div_(safe).add_(4.0), is_b))
    sextant = sextant.add_(per_sample(turns, image) * 6.0)
    sextant = sextant.sub_(sextant.div(6.0).floor_().mul_(6.0))  # mod 6, as torch.remainder computes it
    out, k, weight = torch.empty_like(image), torch.empty_like(sextant), torch.empty_like(sextant)
    for channel, offset in enumerate((5.0, 3.0, 1.0)):
        torch.add(sextant, offset, out=k)
        k.add_(k.ge(6.0), alpha=-6.0)  # k in [1, 11): mod 6 is one subtraction
        torch.minimum(k, torch.neg(k, out=weight).add_(4.0), out=weight).clamp_(0.0, 1.0)
        torch.sub(high, weight.mul_(chroma), out=out.narrow(-3, channel, 1))
    return out


def contrast_in_place(image, factor):
    """Kornia's adjust_contrast_with_mean_subtraction (each sample blended with its grey mean, then
    clamped) written into `image` (N x 3 x H x W, float in [0, 1]), the same arithmetic in the same
    order: the same values, without Kornia's three new batches.
    Example: contrast_in_place(torch.full((1, 3, 2, 2), 0.8), torch.tensor([0.5])) leaves 0.8 (flat)."""
    factor = per_sample(factor, image)
    mean = kornia.color.rgb_to_grayscale(image).mean((-2, -1), True)
    return image.mul_(factor).add_(mean * (1 - factor)).clamp_(0.0, 1.0)


def saturation_in_place(image, factor):
    """Kornia's adjust_saturation_with_gray_subtraction ((1 - factor) x grey + factor x image, clamped)
    written into `image` (N x 3 x H x W), the same values (a sum and products in either order are the
    same floats). Example: saturation_in_place(x, torch.zeros(len(x))) turns x grey."""
    factor = per_sample(factor, image)
    grey = kornia.color.rgb_to_grayscale(image).mul_(1 - factor)
    return image.mul_(factor).add_(grey).clamp_(0.0, 1.0)


def gamma_in_place(image, gamma, gain):
    """K.RandomGamma's transform (clamped into [0, 1], gain x image ** gamma, clamped) written into
    `image` (N x C x H x W), one gamma and gain per sample: Kornia's values, without its three new
    batches. Example: gamma_in_place(torch.full((1, 3, 1, 1), 0.25), torch.tensor([0.5]),
    torch.tensor([1.0])) gives 0.5."""
    return image.clamp_(0.0, 1.0).pow_(per_sample(gamma, image)).mul_(per_sample(gain, image)).clamp_(0.0, 1.0)


# Kornia's adjustments that a colour run may apply in place, on a batch of its own (see fused_colour).
IN_PLACE_ADJUSTMENTS = {kornia.enhance.adjust_contrast_with_mean_subtraction: contrast_in_place,
                        kornia.enhance.adjust_saturation_with_gray_subtraction: saturation_in_place}


def jitter_functions(module):
    """K.ColorJitter's four adjustments of `module` (brightness, contrast, saturation, hue in turns), the
    hue by hue_turns where the module's is Kornia's adjust_hue."""
    hue = hue_turns if module._hue_fn is kornia.enhance.adjust_hue else module._adjust_hue_turns
    return module._brightness_fn, module._contrast_fn, module._saturation_fn, hue


class WbColorJitter(K.ColorJitter, RecordsArguments):
    """K.ColorJitter (brightness, contrast, saturation, hue; Kornia's factors and arithmetic) with
    the four adjustments in an order drawn per sample, as torchvision's ColorJitter draws one per
    image (K.ColorJitter draws one order per batch). Reports each sample's order (`sample_order`,
    the kinds as 0 brightness, 1 contrast, 2 saturation, 3 hue, in the order applied)."""

    def __init__(self, brightness=0.0, contrast=0.0, saturation=0.0, hue=0.0, p=1.0):
        super().__init__(brightness=brightness, contrast=contrast, saturation=saturation, hue=hue, p=p)

    def generate_parameters(self, batch_shape):
        params = super().generate_parameters(batch_shape)
        params["sample_order"] = torch.rand(int(batch_shape[0]), 4).argsort(dim=1)
        return params

    def apply_transform(self, input, params, flags, transform=None):
        steps = jitter_functions(self)
        factors = [params[f"{kind}_factor"].to(input.device, input.dtype)
                   for kind in ("brightness", "contrast", "saturation", "hue")]
        order = params["sample_order"].to(input.device)
        out = input.clamp(0.0, 1.0)
        for position in range(4):
            for kind, (step, factor) in enumerate(zip(steps, factors)):
                rows = (order[:, position] == kind).nonzero().flatten()
                if len(rows):
                    out = out.index_copy(0, rows, step(out.index_select(0, rows), factor.index_select(0, rows)))
        return out.clamp(0.0, 1.0)
