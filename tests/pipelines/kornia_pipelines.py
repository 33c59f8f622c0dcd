"""Kornia pipelines as GPU training code writes them (kornia.augmentation 0.9)."""
import os

os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")
import kornia.augmentation as K  # noqa: E402
import torch  # noqa: E402


# Source kind: the Kornia docs' / tutorials' GPU classification batch augmentation.
def classification_gpu():
    return K.AugmentationSequential(
        K.RandomResizedCrop((224, 224), scale=(0.08, 1.0)),
        K.RandomHorizontalFlip(),
        K.ColorJitter(0.4, 0.4, 0.4, 0.1, p=0.8),
        K.RandomGrayscale(p=0.2),
        K.Normalize(mean=torch.tensor([0.485, 0.456, 0.406]), std=torch.tensor([0.229, 0.224, 0.225])),
    )


# Source kind: self-supervised (SimCLR / BYOL) GPU view generation with Kornia.
def self_supervised_gpu():
    return torch.nn.Sequential(
        K.RandomResizedCrop((96, 96), scale=(0.2, 1.0)),
        K.RandomHorizontalFlip(),
        K.ColorJitter(0.4, 0.4, 0.2, 0.1, p=0.8),
        K.RandomGrayscale(p=0.2),
        K.RandomGaussianBlur((9, 9), (0.1, 2.0), p=0.5),
        K.RandomSolarize(thresholds=0.0, additions=0.0, p=0.2),
    )


# Source kind: segmentation / remote-sensing batches on the GPU: geometric jitter, blur and
# noise, one photometric op picked per batch.
def segmentation_gpu():
    return K.AugmentationSequential(
        K.Resize((256, 256)),
        K.RandomHorizontalFlip(),
        K.RandomVerticalFlip(),
        K.RandomAffine(degrees=15.0, translate=(0.1, 0.1), scale=(0.9, 1.1), p=0.5),
        K.ImageSequential(K.RandomEqualize(p=1.0), K.RandomGamma((0.8, 1.2), p=1.0), random_apply=1),
        K.RandomMotionBlur(3, 35.0, 0.5, p=0.2),
        K.RandomErasing(p=0.25),
    )


KORNIA = {f.__name__: f for f in (classification_gpu, self_supervised_gpu, segmentation_gpu)}
