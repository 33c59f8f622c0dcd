"""Batch mixing (MixUp, CutMix) for the Albumentations export. Albumentations transforms one image
at a time, so WbMixUp and WbCutMix stand in the chain's Compose where their steps are (seeded by
seed_transforms and recorded by position like every other step) but mix a whole batch, in numpy:
`mix_batch(images)`. `split_at_mixing` cuts the Compose there: the steps before a mixing step run
per image, the mixing step on the batch, the steps after it per image again (`run_stages`);
augment_images runs them all, the training loader the first stretch in its workers' __getitem__
and the rest in its collate.

Conventions (workbench/ops/batch.py, as the Kornia and DALI exports run them): p gates the whole
batch; the partner is a random permutation of the batch (a sample may draw itself; torchvision's
MixUp and CutMix pair each sample with the one before it); every draw
comes from the transform's own numpy Generator (`random_generator`), drawn whether or not the
batch is mixed; labels are float32 soft targets, mixed with the weights the images were.

Example:
    >>> mixup = WbMixUp(weight=(0.25, 0.25), p=1.0)
    >>> mixup.set_random_seed(1)
    >>> images, draws = mixup.mix_batch(np.stack([np.zeros((2, 2, 3), np.uint8), np.full((2, 2, 3), 200, np.uint8)]))
    >>> draws["partner"].tolist(), draws["weight"].tolist(), images[:, 0, 0, 0].tolist()
    ([1.0, 0.0], [0.25, 0.25], [50, 150])
"""
import albumentations as A
import numpy as np

from .torchvision_mixing import tv_cutmix_box, tv_roll_partners


class WbBatchMixing(A.ImageOnlyTransform):
    """A step that blends each sample of a batch with a partner drawn from the same batch; it runs
    on a whole batch (`mix_batch`), never on one image. Subclasses draw what they need
    (`draw(count, height, width)`) and blend (`blend(images, draws)`)."""

    mixes_batch = True

    def apply(self, img, **params):
        raise TypeError(f"{type(self).__name__} mixes the samples of a batch: call its mix_batch(images) on the "
                        "whole batch (as augment_images and the training loader's collate do), not one image")

    def mix_batch(self, images):
        """(mixed images, draws) for an N x H x W x C batch (uint8 0-255 or float), in its dtype.

        draws: per-sample float64 arrays: `batch_prob` (1 where mixed: every sample or none),
        `partner` (batch index), `weight` (the partner's share of image and label, a float32 value)
        and what the subclass adds (CutMix's `box`)."""
        count, height, width = images.shape[:3]
        applied = bool(self.random_generator.random() < self.p)
        draws = {"batch_prob": np.full(count, float(applied)), "partner": self.partners(count)}
        draws.update(self.draw(count, height, width))
        self.params = draws
        return (self.blend(images, draws) if applied else images), draws

    def partners(self, count):
        """Each sample's partner (float64 batch indices): a random permutation of the batch."""
        return self.random_generator.permutation(count).astype(np.float64)

    def draw(self, count, height, width):
        raise NotImplementedError

    def blend(self, images, draws):
        raise NotImplementedError


class WbMixUp(WbBatchMixing):
    """MixUp: each image becomes (1 - w) * itself + w * its partner, w drawn per sample uniformly
    in `weight` (or from Beta(alpha, alpha) with alpha > 0), in float32; uint8 images are rounded
    back to uint8 (to nearest, halves to even: np.rint), float images stay float32."""

    def __init__(self, weight=(0.0, 0.5), alpha=0.0, p=1.0):
        super().__init__(p=p)
        self.weight, self.alpha = (float(weight[0]), float(weight[1])), float(alpha)

    def draw(self, count, height, width):
        if self.alpha > 0:
            weight = self.random_generator.beta(self.alpha, self.alpha, count)
        else:
            weight = self.random_generator.uniform(self.weight[0], self.weight[1], count)
        return {"weight": weight.astype(np.float32).astype(np.float64)}

    def blend(self, images, draws):
        x = images.astype(np.float32)
        w = draws["weight"].astype(np.float32).reshape((-1,) + (1,) * (images.ndim - 1))
        mixed = x * (np.float32(1.0) - w) + x[draws["partner"].astype(np.int64)] * w
        if images.dtype == np.uint8:
            return np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
        return mixed.astype(images.dtype)

    def get_transform_init_args_names(self):
        return ("weight", "alpha")


class WbCutMix(WbBatchMixing):
    """CutMix: each image gets the box of its partner pasted at the same place; the box as Kornia's
    CutmixGenerator makes it (and the DALI export's cutmix_box), in float32: lambda = U(0, 1) (or
    Beta(alpha, alpha) with alpha > 0) clamped to [1 - area_hi, 1 - area_lo], sides
    floor(sqrt(1 - lambda) * side), start floor(u * (side - cut side + 1)) within the image. Reports
    `box` [x0, y0, x1, y1) and `weight`, the pasted area fraction."""

    def __init__(self, area=(0.0, 1.0), alpha=0.0, p=1.0):
        super().__init__(p=p)
        self.area, self.alpha = (float(area[0]), float(area[1])), float(alpha)

    def draw(self, count, height, width):
        rng = self.random_generator
        cut = rng.beta(self.alpha, self.alpha, count) if self.alpha > 0 else rng.uniform(0.0, 1.0, count)
        ux, uy = rng.uniform(0.0, 1.0, count).astype(np.float32), rng.uniform(0.0, 1.0, count).astype(np.float32)
        lam = np.clip(cut.astype(np.float32), np.float32(1.0 - self.area[1]), np.float32(1.0 - self.area[0]))
        side = np.sqrt(np.float32(1.0) - lam)
        h, w = np.floor(side * np.float32(height)), np.floor(side * np.float32(width))
        x = np.minimum(np.floor(ux * (np.float32(width) - w + np.float32(1.0))), np.float32(width) - w)
        y = np.minimum(np.floor(uy * (np.float32(height) - h + np.float32(1.0))), np.float32(height) - h)
        weight = (w * h) / np.float32(width * height)
        return {"weight": weight.astype(np.float64), "box": np.stack([x, y, x + w, y + h], axis=1).astype(np.float64)}

    def blend(self, images, draws):
        out = images.copy()
        for n, (partner, box) in enumerate(zip(draws["partner"].astype(np.int64), draws["box"].astype(np.int64))):
            x0, y0, x1, y1 = box
            out[n, y0:y1, x0:x1] = images[partner, y0:y1, x0:x1]
        return out

    def get_transform_init_args_names(self):
        return ("area", "alpha")


class RollPartners:
    """torchvision's pairing for a WbBatchMixing: each sample with the one before it (tv_roll_partners)."""

    def partners(self, count):
        return np.asarray(tv_roll_partners(count), dtype=np.float64)


class WbTorchvisionMixUp(RollPartners, WbMixUp):
    """torchvision's MixUp (v2.MixUp): each image mixed with the one before it (RollPartners), one
    lambda ~ Beta(alpha, alpha) for the batch from the transform's generator; the partner's share
    w = 1 - lambda (WbMixUp's blend)."""

    def __init__(self, alpha=1.0, p=1.0):
        super().__init__(alpha=alpha, p=p)

    def draw(self, count, height, width):
        return tv_mixup_draw(self.random_generator, self.alpha, count)

    def get_transform_init_args_names(self):
        return ("alpha",)


class WbTorchvisionCutMix(RollPartners, WbCutMix):
    """torchvision's CutMix (v2.CutMix): one lambda ~ Beta(alpha, alpha) and one centre for the batch
    from the transform's generator, one box (tv_cutmix_box) pasted into each image from the one before
    it (RollPartners; WbCutMix's paste); `weight` the pasted area fraction."""

    def __init__(self, alpha=1.0, p=1.0):
        super().__init__(alpha=alpha, p=p)

    def draw(self, count, height, width):
        return tv_cutmix_draw(self.random_generator, self.alpha, count, height, width)

    def get_transform_init_args_names(self):
        return ("alpha",)


class WbTorchvisionMixUpOrCutMix(RollPartners, WbBatchMixing):
    """torchvision's RandomChoice([MixUp, CutMix]): one of the two per batch, MixUp with probability
    `mixup_share`, from the transform's generator, then that one's draws (tv_mixup_draw, tv_cutmix_draw)
    and blend; `choice` 0 for MixUp, 1 for CutMix, and CutMix's `box` (an empty one for MixUp).
    `cutmix_first` (torchvision's list order) only matters to the Kornia module's torch stream."""

    def __init__(self, mixup_alpha=1.0, cutmix_alpha=1.0, mixup_share=0.5, cutmix_first=False, p=1.0):
        super().__init__(p=p)
        self.mixup_alpha, self.cutmix_alpha = float(mixup_alpha), float(cutmix_alpha)
        self.mixup_share, self.cutmix_first = float(mixup_share), bool(cutmix_first)

    def draw(self, count, height, width):
        rng = self.random_generator
        cutmix = bool(rng.random() >= self.mixup_share)
        if cutmix:
            draws = tv_cutmix_draw(rng, self.cutmix_alpha, count, height, width)
        else:
            draws = {**tv_mixup_draw(rng, self.mixup_alpha, count), "box": np.zeros((count, 4))}
        return {**draws, "choice": np.full(count, float(cutmix))}

    def blend(self, images, draws):
        return (WbCutMix.blend if draws["choice"][0] else WbMixUp.blend)(self, images, draws)

    def get_transform_init_args_names(self):
        return ("mixup_alpha", "cutmix_alpha", "mixup_share", "cutmix_first")


def tv_mixup_draw(rng, alpha, count):
    """torchvision's MixUp draws from numpy's `rng`: one lambda ~ Beta(alpha, alpha) for the batch, the
    partner's share `weight` = 1 - lambda (as float32) for each of `count` samples."""
    lam = float(rng.beta(alpha, alpha))
    return {"weight": np.full(count, np.float32(1.0 - lam), dtype=np.float64)}


def tv_cutmix_draw(rng, alpha, count, height, width):
    """torchvision's CutMix draws from numpy's `rng`: one lambda and one centre for the batch, its box
    (tv_cutmix_box) and the pasted area fraction `weight`, for each of `count` samples."""
    lam = float(rng.beta(alpha, alpha))
    box = tv_cutmix_box(lam, int(rng.integers(width)), int(rng.integers(height)), height, width)
    weight = (box[2] - box[0]) * (box[3] - box[1]) / (width * height)
    return {"weight": np.full(count, weight, dtype=np.float64), "box": np.tile(np.asarray(box, np.float64), (count, 1))}


def mixes_batch(transform):
    """Whether `transform` mixes the samples of a batch (WbMixUp, WbCutMix)."""
    return bool(getattr(transform, "mixes_batch", False))


def stages_mix(stages):
    """Whether split_at_mixing's `stages` hold a mixing step (then a batch, not an image, is the unit)."""
    return any(mixes_batch(stage) for _, stage in stages)


def reads_boxes(transform):
    """Whether `transform` draws from the image's boxes (WbRandomIoUCrop): it runs on its own, given
    each image's boxes as they stand at its step."""
    return bool(getattr(transform, "reads_boxes", False))


def split_at_mixing(compose):
    """The chain's Compose as stages in order, each (index of its first step in compose.transforms,
    what runs): an A.Compose of a stretch of per-image steps, or a transform that runs on its own (a
    mixing transform, or one that reads boxes). A chain without such steps is one stage, the Compose
    itself. Split before seed_transforms: a new Compose reseeds its transforms (at random) when it is made.

    Example: Compose([flip, WbMixUp(), blur]) -> [(0, Compose([flip])), (1, WbMixUp()), (2, Compose([blur]))]."""
    if not any(mixes_batch(t) or reads_boxes(t) for t in compose.transforms):
        return [(0, compose)]
    stages, first = [], 0
    for k, transform in enumerate(list(compose.transforms) + [None]):
        if transform is None or mixes_batch(transform) or reads_boxes(transform):
            if k > first:
                stages.append((first, A.Compose(compose.transforms[first:k])))
            if transform is not None:
                stages.append((k, transform))
            first = k + 1
    return stages


def mix_labels(labels, draws):
    """Soft targets mixed as a mixing step mixed the images: (1 - w) * own + w * the partner's, in
    float32, w = 0 where the batch was not mixed (nothing to do without labels)."""
    if labels is None:
        return None
    weight = (draws["weight"] * draws["batch_prob"]).astype(np.float32)[:, None]
    return labels * (np.float32(1.0) - weight) + labels[draws["partner"].astype(np.int64)] * weight
