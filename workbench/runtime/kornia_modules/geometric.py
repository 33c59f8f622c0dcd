"""The workbench's own Kornia modules for geometric ops and distortions."""
from __future__ import annotations

import kornia
import kornia.augmentation as K
import torch

from ..targets import BOXES_NEEDED, drawn_sides, iou_crop_window, scaled_sides, zoom_out_padding
from .arguments import RecordsArguments


def pad_to_at_least(height, width, min_height, min_width, position):
    """[left, right, top, bottom] padding that brings an image to at least min_height x
    min_width, the image placed at `position` (A.PadIfNeeded's rule: centred, the odd pixel
    after the image; at a corner, all the padding on the other sides)."""
    dh, dw = max(min_height - height, 0), max(min_width - width, 0)
    top, left = dh // 2, dw // 2
    if position != "center":
        top = dh if position.startswith("bottom") else 0
        left = dw if position.endswith("right") else 0
    return [left, dw - left, top, dh - top]


class PadToAtLeast(K.GeometricAugmentationBase2D, RecordsArguments):
    """Pad with a constant `fill` to at least `min_size` (height, width), the image at `position`
    ("center", "top_left", "top_right", "bottom_left", "bottom_right"); a side already that large
    is left alone. Reports the padding [left, right, top, bottom] per sample."""

    def __init__(self, min_size, position="center", fill=0.0, p=1.0):
        super().__init__(p=p)
        self.flags = {"min_size": (int(min_size[0]), int(min_size[1])), "position": str(position),
                      "fill": float(fill)}

    def generate_parameters(self, batch_shape):
        padding = pad_to_at_least(int(batch_shape[-2]), int(batch_shape[-1]), *self.flags["min_size"],
                                  self.flags["position"])
        return {"padding": torch.tensor([padding], dtype=torch.float32).repeat(batch_shape[0], 1)}

    def compute_transformation(self, input, params, flags):
        matrix = torch.eye(3, device=input.device, dtype=input.dtype).repeat(input.shape[0], 1, 1)
        matrix[:, 0, 2] = params["padding"][:, 0].to(input.device, input.dtype)
        matrix[:, 1, 2] = params["padding"][:, 2].to(input.device, input.dtype)
        return matrix

    def apply_transform(self, input, params, flags, transform=None):
        left, right, top, bottom = pad_to_at_least(int(input.shape[-2]), int(input.shape[-1]), *flags["min_size"],
                                                   flags["position"])
        return torch.nn.functional.pad(input, (left, right, top, bottom), value=flags["fill"])


def max_size_scale(height, width, max_size, longest, rounding="nearest"):
    """(scale, new height, new width) of A.LongestMaxSize (longest=True) / A.SmallestMaxSize:
    scale = max_size / the longest (shortest) side, sides as scaled_sides rounds them (nearest:
    Python's round, half to even, in float64; down: torchvision's Resize), at least 1."""
    reference = max(height, width) if longest else min(height, width)
    return (max_size / reference, *scaled_sides(height, width, max_size, reference, rounding))


def wb_resize_matrix(input, height, width):
    """Per-sample forward maps of a resize of `input` to height x width, pixel centres at
    integers (half-pixel convention: x' = (x + 0.5) * width / W - 0.5)."""
    matrix = torch.eye(3, device=input.device, dtype=input.dtype).repeat(input.shape[0], 1, 1)
    matrix[:, 0, 0] = width / input.shape[-1]
    matrix[:, 1, 1] = height / input.shape[-2]
    matrix[:, 0, 2] = 0.5 * (width / input.shape[-1] - 1.0)
    matrix[:, 1, 2] = 0.5 * (height / input.shape[-2] - 1.0)
    return matrix


def wb_resize(input, height, width, resample="bilinear", antialias=False):
    """`input` (N x C x H x W) resized to height x width with half-pixel centres. With antialias,
    bilinear shrinking low-passes with a triangle filter stretched by the shrink factor (PIL's
    BILINEAR; DALI's linear resize with antialias does the same) instead of Kornia's Gaussian;
    nearest never filters (DALI's nearest cannot). Enlarging is plain bilinear either way. Bicubic is
    torch's (and torchvision's), with or without antialias.

    Example:
        >>> wb_resize(torch.ones(1, 3, 8, 6), 4, 3, antialias=True).shape
        torch.Size([1, 3, 4, 3])
    """
    if (height, width) == tuple(input.shape[-2:]):
        return input
    if resample == "nearest":  # pixel centres, as OpenCV's and DALI's nearest
        return torch.nn.functional.interpolate(input, size=(height, width), mode="nearest-exact")
    if resample == "bicubic":
        # torch's antialias=True resamples with PIL's kernel (a = -0.5), stretched when shrinking, and
        # enlarging too; without it, the a = -0.75 kernel (OpenCV's): torchvision's Resize either way.
        return torch.nn.functional.interpolate(input, size=(height, width), mode="bicubic", align_corners=False,
                                               antialias=bool(antialias))
    shrinks = height < input.shape[-2] or width < input.shape[-1]
    return torch.nn.functional.interpolate(input, size=(height, width), mode="bilinear", align_corners=False,
                                           antialias=bool(antialias and shrinks))


class WbResize(K.GeometricAugmentationBase2D, RecordsArguments):
    """Resize to exactly `size` (height, width), half-pixel centres; with `antialias`, bilinear
    shrinking low-passes with the triangle filter of `wb_resize` (Kornia's own Resize uses a
    Gaussian, which no other backend has)."""

    def __init__(self, size, resample="bilinear", antialias=True, p=1.0):
        super().__init__(p=p)
        self.flags = {"size": (int(size[0]), int(size[1])), "resample": str(resample).lower(),
                      "antialias": bool(antialias)}
        self.wb_args = dict(self.flags)

    def generate_parameters(self, batch_shape):
        return {}

    def compute_transformation(self, input, params, flags):
        return wb_resize_matrix(input, *flags["size"])

    def apply_transform(self, input, params, flags, transform=None):
        return wb_resize(input, *flags["size"], resample=flags["resample"], antialias=flags["antialias"])


class WbRandomResizedCrop(K.RandomResizedCrop, RecordsArguments):
    """Kornia's RandomResizedCrop (its windows, draws and records) whose resize of the window
    low-passes what it shrinks, as `wb_resize` with antialias (torchvision's RandomResizedCrop with
    antialias=True, its default), and resamples bicubically as torch does; Kornia's own samples the
    window without a filter."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), resample="BILINEAR",
                 align_corners=False, antialias=True, p=1.0):
        super().__init__(size=size, scale=scale, ratio=ratio, resample=resample, align_corners=align_corners, p=p)
        self.flags["antialias"] = bool(antialias)

    def apply_transform(self, input, params, flags, transform=None):
        resample = flags["resample"].name.lower()  # nearest never filters (wb_resize)
        if not flags["antialias"] and resample != "bicubic":
            return super().apply_transform(input, params, flags, transform)
        # Each window [x0, x1] x [y0, y1] (corner pixels, clockwise from the top left) on its own.
        corners = params["src"].round().long().tolist()
        return torch.cat([wb_resize(input[i:i + 1, :, box[0][1]:box[2][1] + 1, box[0][0]:box[2][0] + 1],
                                    *flags["size"], resample=resample, antialias=True)
                          for i, box in enumerate(corners)])


class WbRandomSizedCrop(K.GeometricAugmentationBase2D, RecordsArguments):
    """A.RandomSizedCrop: a window whose height is drawn uniformly among the whole numbers of
    `height` and whose width is int(height x w2h_ratio), both cut to the image, placed at
    int((side - crop + 1) x u) on each axis, then resized to `size` unfiltered (half-pixel centres,
    as OpenCV). Reports crop_box [x0, y0, x1, y1) per sample."""

    def __init__(self, height=(128, 256), size=(224, 224), w2h_ratio=1.0, resample="bilinear", p=1.0):
        super().__init__(p=p)
        self.flags = {"height": (int(height[0]), int(height[1])), "size": (int(size[0]), int(size[1])),
                      "w2h_ratio": float(w2h_ratio), "resample": str(resample).lower()}

    def generate_parameters(self, batch_shape):
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        lo, hi = self.flags["height"]
        drawn = torch.randint(lo, hi + 1, (count,), dtype=torch.float64)
        crop_h = drawn.clamp(max=height)
        crop_w = torch.floor(drawn * self.flags["w2h_ratio"]).clamp(max=width)
        y0 = torch.floor((height - crop_h + 1.0) * torch.rand(count, dtype=torch.float64)).clamp(max=height - crop_h)
        x0 = torch.floor((width - crop_w + 1.0) * torch.rand(count, dtype=torch.float64)).clamp(max=width - crop_w)
        return {"crop_box": torch.stack([x0, y0, x0 + crop_w, y0 + crop_h], -1)}

    def compute_transformation(self, input, params, flags):
        box = params["crop_box"].to(device=input.device, dtype=input.dtype)
        out_h, out_w = flags["size"]
        sx, sy = out_w / (box[:, 2] - box[:, 0]), out_h / (box[:, 3] - box[:, 1])
        matrix = torch.eye(3, device=input.device, dtype=input.dtype).repeat(box.shape[0], 1, 1)
        matrix[:, 0, 0], matrix[:, 1, 1] = sx, sy
        matrix[:, 0, 2] = 0.5 * (sx - 1.0) - sx * box[:, 0]
        matrix[:, 1, 2] = 0.5 * (sy - 1.0) - sy * box[:, 1]
        return matrix

    def apply_transform(self, input, params, flags, transform=None):
        boxes = params["crop_box"].long().tolist()
        return torch.cat([wb_resize(input[i:i + 1, :, y0:y1, x0:x1], *flags["size"], resample=flags["resample"])
                          for i, (x0, y0, x1, y1) in enumerate(boxes)])


def border_index(length, before, after, mode, device):
    """The source index of each of before + length + after positions along an axis of `length`
    pixels padded by `mode`: "edge" repeats the edge pixel, "reflect" mirrors about it (OpenCV's
    reflect_101, torchvision's reflect), "symmetric" mirrors including it (reflect_1001), however
    far outside. Example: border_index(3, 2, 2, "reflect", "cpu").tolist() == [2, 1, 0, 1, 2, 1, 0]."""
    index = torch.arange(-before, length + after, device=device)
    if mode == "edge" or length == 1:
        return index.clamp(0, length - 1)
    if mode == "reflect":
        period = 2 * length - 2
        index = torch.remainder(index, period)
        return torch.where(index < length, index, period - index)
    period = 2 * length
    index = torch.remainder(index, period)
    return torch.where(index < length, index, period - 1 - index)


class WbPaddedCrop(K.RandomCrop, RecordsArguments):
    """Kornia's RandomCrop with pad_if_needed (its windows, draws and records) padded as torchvision's
    RandomCrop pads: `padding` pixels on every side, then a side still short of `size` by d pixels
    padded by d on both ends (Kornia pads such a side by the larger of the two instead), with `fill`
    or made from the image (`padding_mode` edge, reflect or symmetric, as torchvision's)."""

    def __init__(self, size, padding=0, pad_if_needed=True, fill=0.0, padding_mode="constant",
                 cropping_mode="slice", p=1.0):
        super().__init__(size, padding=int(padding), pad_if_needed=pad_if_needed, fill=fill,
                         padding_mode="constant", cropping_mode=cropping_mode, p=p)
        self.border = str(padding_mode)

    def precrop_padding(self, input, padding=None, flags=None):
        if self.border == "constant":
            return super().precrop_padding(input, padding, flags)
        left, right, top, bottom = self.compute_padding(input.shape, flags) if padding is None else padding
        rows = border_index(input.shape[-2], top, bottom, self.border, input.device)
        cols = border_index(input.shape[-1], left, right, self.border, input.device)
        return input.index_select(-2, rows).index_select(-1, cols)

    def compute_padding(self, shape, flags=None):
        flags = self.flags if flags is None else flags
        margin = int(flags["padding"] or 0)
        (height, width), (out_h, out_w) = shape[-2:], flags["size"]
        pad_w = margin + max(out_w - (width + 2 * margin), 0)
        pad_h = margin + max(out_h - (height + 2 * margin), 0)
        return [pad_w, pad_w, pad_h, pad_h]


class ResizeSideTo(K.GeometricAugmentationBase2D, RecordsArguments):
    """Resize keeping the aspect ratio so that the longest (longest=True) or the shortest side
    becomes `max_size`, the other side rounded as A.LongestMaxSize / A.SmallestMaxSize round it, or
    down as torchvision's Resize (`rounding`; half-pixel centres; antialias as in WbResize). Reports
    the scale factor per sample."""

    def __init__(self, max_size, longest=True, resample="bilinear", antialias=False, rounding="nearest",
                 p=1.0):
        super().__init__(p=p)
        self.flags = {"max_size": int(max_size), "longest": bool(longest), "resample": str(resample).lower(),
                      "antialias": bool(antialias), "rounding": str(rounding)}

    def generate_parameters(self, batch_shape):
        scale, _, _ = max_size_scale(int(batch_shape[-2]), int(batch_shape[-1]), self.flags["max_size"],
                                     self.flags["longest"], self.flags["rounding"])
        return {"scale": torch.full((batch_shape[0],), scale, dtype=torch.float64)}

    def compute_transformation(self, input, params, flags):
        _, height, width = max_size_scale(int(input.shape[-2]), int(input.shape[-1]), flags["max_size"],
                                          flags["longest"], flags["rounding"])
        return wb_resize_matrix(input, height, width)

    def apply_transform(self, input, params, flags, transform=None):
        _, height, width = max_size_scale(int(input.shape[-2]), int(input.shape[-1]), flags["max_size"],
                                          flags["longest"], flags["rounding"])
        return wb_resize(input, height, width, resample=flags["resample"], antialias=flags["antialias"])


def drawn_for_the_batch(module, rows, what):
    """The one row of whole numbers (a size, a padding) that every sample of a batch drew, for a
    module that gives each sample a size of its own: the chain runs it image by image, and a batch
    whose samples drew several (`what`, e.g. "sizes") is refused."""
    values = {tuple(int(v) for v in row) for row in rows.tolist()}
    if len(values) > 1:
        raise ValueError(f"{type(module).__name__} drew {len(values)} {what} for one batch; it gives each sample a "
                         "size of its own, so run it image by image (the exported chain's augment_batch does)")
    return values.pop()


class WbRandomSize(K.GeometricAugmentationBase2D, RecordsArguments):
    """Resize each sample to a size drawn for it, as torchvision's RandomShortestSize ("shortest":
    a shorter side drawn among `sizes`, the longer at most `bound` when > 0), RandomResize
    ("resize": a shorter side drawn uniformly among the whole numbers of `span`) or ScaleJitter
    ("jitter": a scale drawn uniformly in `span` times the fit into `target`); sides as
    drawn_sides computes them, resampled as wb_resize. Samples of one batch leave at sizes of
    their own, so the chain runs it image by image (a batch of one); a batch of several whose
    draws differ is refused. Reports out_size [height, width] per sample."""

    def __init__(self, rule, sizes=(), span=(0.0, 0.0), bound=0, target=(0, 0), resample="bilinear",
                 antialias=True, p=1.0):
        super().__init__(p=p)
        self.flags = {"rule": str(rule), "sizes": tuple(int(v) for v in sizes),
                      "span": (float(span[0]), float(span[1])), "bound": int(bound),
                      "target": (int(target[0]), int(target[1])), "resample": str(resample).lower(),
                      "antialias": bool(antialias)}

    def generate_parameters(self, batch_shape):
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        flags = self.flags
        if flags["rule"] == "shortest":
            values = torch.tensor(flags["sizes"], dtype=torch.float64)[torch.randint(len(flags["sizes"]), (count,))]
        elif flags["rule"] == "resize":
            values = torch.randint(int(flags["span"][0]), int(flags["span"][1]) + 1, (count,)).double()
        else:  # as ScaleJitter draws it: lo + rand * (hi - lo), in float32
            lo, hi = flags["span"]
            values = (lo + torch.rand(count) * (hi - lo)).double()
        sides = [drawn_sides(flags["rule"], value, height, width, flags["bound"], flags["target"])
                 for value in values.tolist()]
        return {"out_size": torch.tensor(sides, dtype=torch.float64).reshape(count, 2)}

    def _out_size(self, params):
        return drawn_for_the_batch(self, params["out_size"], "sizes")

    def compute_transformation(self, input, params, flags):
        return wb_resize_matrix(input, *self._out_size(params))

    def apply_transform(self, input, params, flags, transform=None):
        return wb_resize(input, *self._out_size(params), resample=flags["resample"], antialias=flags["antialias"])


def shift_matrices(input, dx, dy):
    """The batch's 3 x 3 maps p' = p + (dx, dy), one per sample, in its dtype and on its device."""
    matrix = torch.eye(3, device=input.device, dtype=input.dtype).repeat(input.shape[0], 1, 1)
    matrix[:, 0, 2], matrix[:, 1, 2] = float(dx), float(dy)
    return matrix


class WbRandomZoomOut(K.GeometricAugmentationBase2D, RecordsArguments):
    """torchvision's RandomZoomOut: the image placed on a canvas `ratio` times its size (ratio drawn
    uniformly in `side_range`, >= 1) at a drawn place, the rest filled with `fill` (one value per
    channel, in [0, 1]); sides and place as zoom_out_padding computes them. Each sample gets a size
    of its own, so the chain runs it image by image (see WbRandomSize). Reports the padding
    [left, right, top, bottom] per sample."""

    def __init__(self, side_range=(1.0, 4.0), fill=(0.0, 0.0, 0.0), p=0.5):
        super().__init__(p=p)
        self.flags = {"side_range": (float(side_range[0]), float(side_range[1])),
                      "fill": tuple(float(v) for v in fill)}

    def forward_parameters(self, batch_shape):
        # Each sample's coin, then a canvas for each sample it applies to: torchvision's draws in its
        # order (a skipped sample draws none), so a chain run image by image draws torchvision's canvases.
        batch_prob = self.__batch_prob_generator__(batch_shape, self.p, self.p_batch, self.same_on_batch)
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        lo, hi = self.flags["side_range"]
        padding = torch.zeros(count, 4, dtype=torch.float32)
        for n in range(count):
            if batch_prob[n] > 0.5:
                ratio, (u, v) = float(lo + torch.rand(1) * (hi - lo)), torch.rand(2).tolist()  # float32
                padding[n] = torch.tensor(zoom_out_padding(ratio, u, v, height, width), dtype=torch.float32)
        return {"padding": padding, "batch_prob": batch_prob,
                "forward_input_shape": torch.tensor(batch_shape, dtype=torch.long)}

    def _padding(self, params):
        return drawn_for_the_batch(self, params["padding"], "canvases")

    def compute_transformation(self, input, params, flags):
        left, _, top, _ = self._padding(params)
        return shift_matrices(input, left, top)

    def apply_transform(self, input, params, flags, transform=None):
        left, right, top, bottom = self._padding(params)
        count, channels, height, width = input.shape
        fill = torch.tensor(flags["fill"], device=input.device, dtype=input.dtype)
        fill = fill if channels == len(fill) else fill[:1].expand(channels)
        out = fill.reshape(1, channels, 1, 1).expand(count, channels, height + top + bottom,
                                                     width + left + right).clone()
        out[:, :, top:top + height, left:left + width] = input
        return out


class WbRandomIoUCrop(K.GeometricAugmentationBase2D, RecordsArguments):
    """torchvision's RandomIoUCrop (SSD's): a window holding box centres that overlap it by at least an
    IoU drawn among `sampler_options`, cut from each sample, drawn as iou_crop_window draws it with
    torch's generator in torchvision's order (the same windows as torchvision for the same seed and
    boxes). The window depends on the sample's boxes as they stand at this step: the chain's program
    sets `boxes` (one K x 4 [x1, y1, x2, y2] array per sample of the batch) before each run. Each
    sample gets a size of its own, so the chain runs it image by image (see WbRandomSize). Reports the
    crop_box [x0, y0, x1, y1) per sample; a sample left as it is (an option >= 1, or p) reports that it
    did not apply."""

    reads_boxes = True

    def __init__(self, scale=(0.3, 1.0), aspect_ratio=(0.5, 2.0),
                 sampler_options=(0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0), trials=40, p=1.0):
        super().__init__(p=p)
        self.flags = {"scale": (float(scale[0]), float(scale[1])),
                      "aspect_ratio": (float(aspect_ratio[0]), float(aspect_ratio[1])),
                      "sampler_options": tuple(float(v) for v in sampler_options), "trials": int(trials)}
        self.boxes = None

    def forward_parameters(self, batch_shape):
        if self.boxes is None or len(self.boxes) != int(batch_shape[0]):
            raise ValueError(BOXES_NEEDED)
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        batch_prob = super().forward_parameters(batch_shape)["batch_prob"]
        windows = torch.tensor([[0.0, 0.0, float(width), float(height)]], dtype=torch.float64).repeat(count, 1)
        for n in range(count):
            if batch_prob[n] > 0.5:
                window = iou_crop_window(self.boxes[n], height, width, self.flags,
                                         lambda options: int(torch.randint(low=0, high=options, size=(1,))),
                                         lambda: torch.rand(2).numpy())
                if window is None:
                    batch_prob[n] = 0.0
                else:
                    windows[n] = torch.tensor(window, dtype=torch.float64)
        return {"crop_box": windows, "batch_prob": batch_prob,
                "forward_input_shape": torch.tensor(batch_shape, dtype=torch.long)}

    def _window(self, params):
        return drawn_for_the_batch(self, params["crop_box"], "windows")

    def compute_transformation(self, input, params, flags):
        x0, y0, _, _ = self._window(params)
        return shift_matrices(input, -x0, -y0)

    def apply_transform(self, input, params, flags, transform=None):
        x0, y0, x1, y1 = self._window(params)
        return input[:, :, y0:y1, x0:x1].clone()


def wb_dihedral_matrices(turns, transposed, size, device, dtype):
    """Forward maps (pixel centres at integers) of np.rot90 by `turns` quarter turns
    (counter-clockwise), then a transpose where `transposed` is 1, on size x size images."""
    last = float(size - 1)
    quarter = torch.tensor([[0.0, 1.0, 0.0], [-1.0, 0.0, last], [0.0, 0.0, 1.0]], dtype=torch.float64)
    swap = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    powers = [torch.eye(3, dtype=torch.float64)]
    for _ in range(3):
        powers.append(quarter @ powers[-1])
    rotations = torch.stack(powers)[turns.long().cpu()]
    flips = torch.where(transposed.cpu().reshape(-1, 1, 1) > 0.5, swap, torch.eye(3, dtype=torch.float64))
    return (flips @ rotations).to(device=device, dtype=dtype)


def wb_dihedral(input, turns, transposed):
    """Each sample turned by its `turns` quarter turns (as np.rot90: counter-clockwise), then
    transposed where `transposed` is 1; square images (H == W)."""
    out = input.clone()
    turns, transposed = turns.long().cpu(), transposed.cpu() > 0.5
    for k in (1, 2, 3):
        index = torch.nonzero(turns == k).reshape(-1).to(input.device)
        if len(index):
            out[index] = torch.rot90(input.index_select(0, index), k, dims=(-2, -1))
    index = torch.nonzero(transposed).reshape(-1).to(input.device)
    if len(index):
        out[index] = out.index_select(0, index).transpose(-2, -1)
    return out


class WbRandomRotate90(K.GeometricAugmentationBase2D, RecordsArguments):
    """Turn each sample by k quarter turns counter-clockwise (np.rot90, A.RandomRotate90), k drawn
    uniformly from {0, 1, 2, 3} per sample (k = 0 leaves it as it is). Square images only: the
    other turns would swap height and width for some samples of the batch. Reports k."""

    def __init__(self, p=1.0):
        super().__init__(p=p)
        self.wb_args = {}

    def generate_parameters(self, batch_shape):
        return {"k": torch.randint(0, 4, (batch_shape[0],)).float()}

    def compute_transformation(self, input, params, flags):
        count = input.shape[0]
        return wb_dihedral_matrices(params["k"], torch.zeros(count), input.shape[-1], input.device, input.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        return wb_dihedral(input, params["k"], torch.zeros(input.shape[0]))


class WbTranspose(K.GeometricAugmentationBase2D, RecordsArguments):
    """Swap rows and columns (mirror over the main diagonal, A.Transpose). Square images only:
    height and width swap for the samples it applies to."""

    def __init__(self, p=0.5):
        super().__init__(p=p)
        self.wb_args = {}

    def generate_parameters(self, batch_shape):
        return {}

    def compute_transformation(self, input, params, flags):
        count = input.shape[0]
        return wb_dihedral_matrices(torch.zeros(count), torch.ones(count), input.shape[-1], input.device, input.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        return input.transpose(-2, -1).contiguous()


def wb_perspective_to_frame(points, height, width):
    """The homographies (float64, pixel centres at integers, as OpenCV's getPerspectiveTransform)
    taking each sample's corners `points` (N x 4 x 2: top-left, top-right, bottom-right,
    bottom-left) to (0, 0), (width, 0), (width, height), (0, height), as A.Perspective builds them."""
    src = points.to(torch.float64)
    dst = torch.tensor([[0.0, 0.0], [width, 0.0], [width, height], [0.0, height]], dtype=torch.float64)
    rows, rhs = [], []
    for i in range(4):
        x, y = src[:, i, 0], src[:, i, 1]
        u, v = float(dst[i, 0]), float(dst[i, 1])
        one, zero = torch.ones_like(x), torch.zeros_like(x)
        rows.append(torch.stack([x, y, one, zero, zero, zero, -u * x, -u * y], dim=-1))
        rows.append(torch.stack([zero, zero, zero, x, y, one, -v * x, -v * y], dim=-1))
        rhs += [torch.full_like(x, u), torch.full_like(x, v)]
    solution = torch.linalg.solve(torch.stack(rows, dim=1), torch.stack(rhs, dim=1))
    return torch.cat([solution, torch.ones_like(solution[:, :1])], dim=1).reshape(-1, 3, 3)


class WbPerspectiveZoom(K.GeometricAugmentationBase2D, RecordsArguments):
    """A.Perspective with keep_size=True: per sample, sigma drawn uniformly from `scale`, each
    corner jittered inwards by |N(0, sigma)| mod 0.32 of the width and height; the homography
    taking that inner quadrilateral to the whole frame, stretched by width / max_width and
    height / max_height (max_width: the longer of its top and bottom sides, in whole pixels;
    max_height likewise), resamples the image at its own size; 0 outside. Reports the
    homography `matrix` (before the stretch) and `max_size` [max_height, max_width]."""

    def __init__(self, scale=(0.05, 0.1), resample="bilinear", p=0.5):
        super().__init__(p=p)
        self.wb_args = {"scale": (float(scale[0]), float(scale[1])), "resample": str(resample).lower()}
        self.flags = {"resample": str(resample).lower()}

    def generate_parameters(self, batch_shape):
        count, height, width = int(batch_shape[0]), int(batch_shape[-2]), int(batch_shape[-1])
        low, high = self.wb_args["scale"]
        sigma = low + torch.rand(count, dtype=torch.float64) * (high - low)
        jitter = torch.remainder((torch.randn(count, 4, 2, dtype=torch.float64) * sigma.reshape(-1, 1, 1)).abs(), 0.32)
        # Top-left, top-right, bottom-right, bottom-left: jitter inwards from each corner (jitter < 0.32 keeps
        # this order, the one A's order_points gives), then float32 points as A keeps them.
        fx = torch.stack([jitter[:, 0, 0], 1.0 - jitter[:, 1, 0], 1.0 - jitter[:, 2, 0], jitter[:, 3, 0]], dim=1)
        fy = torch.stack([jitter[:, 0, 1], jitter[:, 1, 1], 1.0 - jitter[:, 2, 1], 1.0 - jitter[:, 3, 1]], dim=1)
        points = torch.stack([fx * width, fy * height], dim=-1).to(torch.float32)

        def side(a, b):
            return ((points[:, a] - points[:, b]) ** 2).sum(dim=-1).sqrt()

        max_width = torch.maximum(side(1, 0), side(2, 3)).floor()
        max_height = torch.maximum(side(2, 1), side(3, 0)).floor()
        return {"matrix": wb_perspective_to_frame(points, height, width),
                "max_size": torch.stack([max_height, max_width], dim=1).to(torch.float64)}

    def compute_transformation(self, input, params, flags):
        height, width = input.shape[-2:]
        stretch = torch.zeros(input.shape[0], 3, 3, dtype=torch.float64)
        max_size = params["max_size"].cpu().to(torch.float64)
        stretch[:, 0, 0] = width / max_size[:, 1]
        stretch[:, 1, 1] = height / max_size[:, 0]
        stretch[:, 2, 2] = 1.0
        return (stretch @ params["matrix"].cpu().to(torch.float64)).to(device=input.device, dtype=input.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        height, width = input.shape[-2:]
        return kornia.geometry.transform.warp_perspective(input, transform, (height, width),
                                                          mode=flags["resample"], padding_mode="zeros",
                                                          align_corners=False)


def wb_border_index(size, before, after, mode):
    """Source index of each position of a side of `size` padded by `before` and `after`, as
    OpenCV's borderInterpolate: "reflect_101" (gfedcb|abcdefgh|gfedcba), "reflect"
    (fedcba|abcdefgh|hgfedcb), "replicate" (aaaaaa|abcdefgh|hhhhhhh), "wrap" (cdefgh|abcdefgh|abcdefg),
    repeated as often as a pad wider than the side needs."""
    i = torch.arange(-int(before), int(size) + int(after))
    if mode == "replicate":
        return i.clamp(0, size - 1)
    if mode == "wrap":
        return torch.remainder(i, size)
    if mode == "reflect":
        j = torch.remainder(i, 2 * size)
        return torch.where(j < size, j, 2 * size - 1 - j)
    if size == 1:
        return torch.zeros_like(i)
    j = torch.remainder(i, 2 * size - 2)
    return torch.where(j < size, j, 2 * size - 2 - j)


class WbPadBorderToAtLeast(PadToAtLeast):
    """PadToAtLeast with the border made from the image itself (`border_mode`: "reflect_101",
    "reflect", "replicate" or "wrap", as OpenCV's) instead of a constant. Reports the padding
    [left, right, top, bottom] per sample."""

    def __init__(self, min_size, position="center", border_mode="reflect_101", p=1.0):
        super().__init__(min_size, position=position, p=p)
        self.flags["border_mode"] = str(border_mode)
        self.wb_args = {"min_size": self.flags["min_size"], "position": self.flags["position"],
                        "border_mode": self.flags["border_mode"]}

    def apply_transform(self, input, params, flags, transform=None):
        height, width = int(input.shape[-2]), int(input.shape[-1])
        left, right, top, bottom = pad_to_at_least(height, width, *flags["min_size"], flags["position"])
        rows = wb_border_index(height, top, bottom, flags["border_mode"]).to(input.device)
        cols = wb_border_index(width, left, right, flags["border_mode"]).to(input.device)
        return input.index_select(-2, rows).index_select(-1, cols)


def wb_d4_parts(element):
    """(quarter turns, transposed) of each D4 element index, in A.D4's order "e", "r90", "r180",
    "r270", "v", "hvt", "h", "t": the element is np.rot90 by the turns, then a transpose where
    transposed is 1 ("v" = transpose(rot90(x, 3)), "hvt" = transpose(rot90(x, 2)),
    "h" = transpose(rot90(x, 1)), "t" = transpose(x)); so transposed = element // 4 and
    turns = element, or 7 - element where transposed."""
    element = element.long().cpu()
    transposed = torch.div(element, 4, rounding_mode="floor")
    turns = torch.where(transposed > 0, 7 - element, element)
    return turns, transposed


class WbD4(K.GeometricAugmentationBase2D, RecordsArguments):
    """One of the 8 symmetries of the square per sample (A.D4), drawn uniformly: the element's index in
    A.D4's order ("e", "r90", "r180", "r270", "v", "hvt", "h", "t"; 0 is the identity). Square images
    only (the transposing elements swap height and width). Reports the index as `element`."""

    def __init__(self, p=1.0):
        super().__init__(p=p)
        self.wb_args = {}

    def generate_parameters(self, batch_shape):
        return {"element": torch.randint(0, 8, (batch_shape[0],)).float()}

    def compute_transformation(self, input, params, flags):
        turns, transposed = wb_d4_parts(params["element"])
        return wb_dihedral_matrices(turns, transposed, input.shape[-1], input.device, input.dtype)

    def apply_transform(self, input, params, flags, transform=None):
        turns, transposed = wb_d4_parts(params["element"])
        return wb_dihedral(input, turns, transposed)
