"""A step's draws for a batch, as its own forward_parameters makes them, the same values from the same random
stream, where Kornia's generic path costs more than the step's work on a small batch.

Kornia's RandomResizedCrop draws ten candidate windows per sample and keeps the first that fits, in about forty
tensor operations on tensors of a few dozen values: 1.1 ms for 8 samples on a CPU core, about what cropping and
resizing 8 images of 256 x 256 into 224 x 224 takes; 0.4 ms here (bench/cpu_kernels.py). resized_crop_draws takes the
same draws from torch's generator, in the same order and shapes, and does the arithmetic on them in numpy's
float32, operation for operation as Kornia does it in torch's (IEEE float32: the same values), with torch's exp.
tests/test_draws.py holds it to Kornia's values and to the generator's state after, bit for bit.
"""
from __future__ import annotations

import kornia.augmentation as K
import numpy as np
import torch


def step_draws(module, shape):
    """The draws of a step `module` for a batch of `shape` (N, C, H, W): resized_crop_draws where it applies, else
    gated_draws where it applies, else the module's own forward_parameters. The same values and random stream
    either way.
    Example: step_draws(K.RandomGrayscale(), torch.Size((8, 3, 32, 32)))["batch_prob"].shape == (8,)."""
    shape = torch.Size(shape)
    if fast_resized_crop(module):
        return resized_crop_draws(module, shape)
    if plainly_gated(module):
        return gated_draws(module, shape)
    return module.forward_parameters(shape)


def plainly_gated(module):
    """Whether gated_draws gives the draws of `module`: a Kornia augmentation whose forward_parameters and gate are
    Kornia's own, with p_batch 1, that draws on a CPU in float32.
    Example: plainly_gated(K.RandomGrayscale(p=0.5)) is True."""
    kind = type(module)
    return (isinstance(module, K.AugmentationBase2D)
            and kind.forward_parameters is K.AugmentationBase2D.forward_parameters
            and kind.__batch_prob_generator__ is K.AugmentationBase2D.__batch_prob_generator__
            and module.p_batch == 1 and module.dtype in (None, torch.float32)
            and torch.device(module.device or "cpu").type == "cpu")


def gated_draws(module, shape):
    """Kornia's forward_parameters for a module that plainly_gated takes: its gate (each sample's coin, from one
    torch.rand of the batch where 0 < p < 1; one coin for all with same_on_batch), then its own parameters
    (center_crop_draws for a CenterCrop, else its generate_parameters), then the batch's shape; the same values
    from the same draws without Kornia's generic steps around them (its constant tensors, its gate's several
    operations), which a batch of 8 small images pays for each of its steps.
    Example: gated_draws(K.RandomInvert(p=1.0), torch.Size((2, 3, 4, 4)))["batch_prob"].tolist() == [1.0, 1.0]"""
    count, p = int(shape[0]), float(module.p)
    if p == 1 or p == 0:
        gate = torch.full((count,), p)
    elif module.same_on_batch:
        gate = (torch.rand(1) < p).to(torch.float32).repeat(count)
    else:
        gate = (torch.rand(count) < p).to(torch.float32)
    if type(module).generate_parameters is K.CenterCrop.generate_parameters:
        params = center_crop_draws(module, shape)
    else:
        params = module.generate_parameters(shape)
        params = {} if params is None else params
    params["batch_prob"] = gate
    params["forward_input_shape"] = torch.from_numpy(np.array(shape, np.int64))
    return params


def center_crop_draws(module, shape):
    """A CenterCrop's parameters (Kornia's center_crop_generator, which draws nothing) for a batch of `shape`: the
    window's corners src and the output's dst (N x 4 x 2, clockwise from the top left, (x, y), int64),
    input_size and output_size (N x 2). Kornia's own where the crop does not fit (its error).
    Example: center_crop_draws(K.CenterCrop((2, 2)), (1, 3, 4, 5))["src"].tolist() == [[[1, 1], [2, 1], [2, 2],
    [1, 2]]]"""
    count, height, width = int(shape[0]), int(shape[-2]), int(shape[-1])
    crop_h, crop_w = (int(side) for side in module.size)
    if count <= 0 or not (height >= crop_h > 0 and width >= crop_w > 0):
        return module.generate_parameters(torch.Size(shape))
    # (Python floats halved, then truncated: Kornia's arithmetic)
    x0, y0 = int(width / 2 - crop_w / 2), int(height / 2 - crop_h / 2)
    x1, y1 = x0 + crop_w - 1, y0 + crop_h - 1
    src = torch.tensor([[[x0, y0], [x1, y0], [x1, y1], [x0, y1]]], dtype=torch.long)
    dst = torch.tensor([[[0, 0], [crop_w - 1, 0], [crop_w - 1, crop_h - 1], [0, crop_h - 1]]], dtype=torch.long)
    return {"src": src.expand(count, -1, -1), "dst": dst.expand(count, -1, -1),
            "input_size": torch.tensor([height, width], dtype=torch.long).expand(count, -1),
            "output_size": torch.tensor([crop_h, crop_w], dtype=torch.long).expand(count, -1)}


def fast_resized_crop(module):
    """Whether resized_crop_draws gives the draws of `module`: a RandomResizedCrop (Kornia's, or a subclass that
    keeps its draws) that plainly_gated takes, for every sample (p = 1), each its own window (not same_on_batch),
    its samplers on a CPU in float32.
    Example: fast_resized_crop(K.RandomResizedCrop((8, 8))) is True."""
    if not isinstance(module, K.RandomResizedCrop) or not plainly_gated(module) or module.p != 1 \
            or module.same_on_batch \
            or type(module).generate_parameters is not K.RandomResizedCrop.generate_parameters:
        return False
    generator = module._param_generator
    if type(generator).__name__ != "ResizedCropGenerator" or generator.__dict__.get("rand_sampler") is None:
        return False
    return all(s.dtype == torch.float32 and s.device.type == "cpu"
               for s in (generator.rand_sampler.low, generator.log_ratio_sampler.low))


def resized_crop_draws(module, shape):
    """RandomResizedCrop's forward_parameters for a batch of `shape` (see fast_resized_crop for which modules):
    ten candidate windows per sample (area a fraction of the image drawn in `scale`, log aspect ratio in
    log(`ratio`)), the first that fits, else the image cut to the nearest ratio (torchvision's get_params), placed
    at a drawn start on each axis. Returns its dict: src and dst (N x 4 x 2 corners), input_size, output_size,
    batch_prob, forward_input_shape.

    Example:
        >>> crop = K.RandomResizedCrop((4, 4), scale=(1.0, 1.0), ratio=(1.0, 1.0))
        >>> resized_crop_draws(crop, torch.Size((1, 3, 6, 6)))["src"].tolist()
        [[[0.0, 0.0], [5.0, 0.0], [5.0, 5.0], [0.0, 5.0]]]
    """
    generator = module._param_generator
    count, height, width = int(shape[0]), int(shape[-2]), int(shape[-1])
    if count == 0:
        return module.forward_parameters(shape)
    low, high = (np.float32(s) for s in torch.as_tensor(generator.scale, dtype=torch.float32).tolist())
    log_low = generator.log_ratio_sampler.low.numpy()
    log_high = generator.log_ratio_sampler.high.numpy()
    # Widths first, heights second, along the first axis of what follows.
    limits = np.array([[width], [height]], np.float32)
    # The draws in Kornia's order: candidate areas, candidate log ratios, x starts, y starts.
    area = torch.rand((count, 10), dtype=torch.float32).numpy()
    area = (area * (high - low) + low) * np.float32(height) * np.float32(width)
    log_ratio = log_low + torch.rand((count, 10), dtype=torch.float32).numpy() * (log_high - log_low)
    aspect = torch.exp(torch.from_numpy(log_ratio)).numpy()
    sides = np.floor(np.round(np.sqrt(np.stack((area * aspect, area / aspect)))))
    fits = (sides > 0).all(0) & (sides <= limits[..., None]).all(0)
    sides = sides[:, np.arange(count), fits.argmax(1)]  # (the first candidate that fits)
    missed = ~fits.any(1)
    if missed.any():
        sides[:, missed] = np.array(whole_ratio_window(generator.ratio, height, width)[::-1], np.float32)[:, None]
    sides = np.clip(sides, np.float32(1), limits)
    room = np.maximum(limits - sides + np.float32(1), np.float32(0))
    starts = np.floor(np.stack([torch.rand((count,), dtype=torch.float32).numpy() for _ in range(2)]) * room)
    ends = starts + sides - np.float32(1)
    # Corners clockwise from the top left, (x, y) each.
    src = np.stack([starts[0], starts[1], ends[0], starts[1], ends[0], ends[1], starts[0], ends[1]], -1)
    out_h, out_w = generator.resize_to
    corners = np.array([[0, 0], [out_w - 1, 0], [out_w - 1, out_h - 1], [0, out_h - 1]], np.float32)
    return {"src": torch.from_numpy(src.reshape(count, 4, 2)),
            "dst": torch.from_numpy(np.broadcast_to(corners, (count, 4, 2)).copy()),
            "input_size": torch.from_numpy(np.array((height, width), np.int64)).expand(count, -1),
            "output_size": torch.from_numpy(np.array((out_h, out_w), np.int64)).expand(count, -1),
            "batch_prob": torch.ones(count), "forward_input_shape": torch.from_numpy(np.array(shape, np.int64))}


def whole_ratio_window(ratio, height, width):
    """(height, width) of the window a sample gets when none of its candidates fit, in float32 as Kornia computes
    it: the whole image cut to the nearest of `ratio` (width / height) when its own lies outside, else whole.
    Example: whole_ratio_window((0.75, 1.3333), 100, 400) == (100.0, 133.0)."""
    size = (height, width)
    # (Python floats as Kornia takes them: a tuple's own values, not float32's)
    lowest, highest = (float(ratio.min()), float(ratio.max())) if torch.is_tensor(ratio) else (min(ratio), max(ratio))
    if width / height < lowest:
        w_ct = torch.full((), size[1], dtype=torch.float32)
        h_ct = torch.round(w_ct / lowest)
    elif width / height > highest:
        h_ct = torch.full((), size[0], dtype=torch.float32)
        w_ct = torch.round(h_ct * highest)
    else:
        h_ct, w_ct = torch.full((), size[0], dtype=torch.float32), torch.full((), size[1], dtype=torch.float32)
    return float(h_ct.floor()), float(w_ct.floor())
