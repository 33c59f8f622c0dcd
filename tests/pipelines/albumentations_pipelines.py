"""Albumentations pipelines as public training code writes them (Albumentations 2.0 API)."""
import os

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
import albumentations as A  # noqa: E402
import cv2  # noqa: E402
from albumentations.pytorch import ToTensorV2  # noqa: E402


# Source kind: a YOLO-style object-detection trainer's photometric Albumentations block
# (letterbox to a square canvas first, then light colour and blur jitter at small p).
def detection_yolo():
    return A.Compose([
        A.LongestMaxSize(max_size=320),
        A.PadIfNeeded(min_height=320, min_width=320, border_mode=cv2.BORDER_CONSTANT, fill=114),
        A.HorizontalFlip(p=0.5),
        A.Blur(blur_limit=(3, 7), p=0.01),
        A.MedianBlur(blur_limit=(3, 7), p=0.01),
        A.ToGray(p=0.01),
        A.CLAHE(p=0.01),
        A.RandomBrightnessContrast(p=0.2),
        A.RandomGamma(p=0.1),
        A.ImageCompression(quality_range=(75, 100), p=0.1),
    ], seed=0)


# Source kind: ImageNet classification training scripts ported to Albumentations
# (RandomResizedCrop + flip + colour jitter + ImageNet normalisation).
def classification_imagenet():
    return A.Compose([
        A.RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0)),
        A.HorizontalFlip(p=0.5),
        A.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.0, p=0.8),
        A.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
        ToTensorV2(),
    ], seed=1)


# Source kind: the semantic-segmentation tutorials (road scenes / satellite tiles): resize, a
# shift-scale-rotate expressed with Affine, colour shifts, normalisation.
def segmentation_tutorial():
    return A.Compose([
        A.Resize(height=256, width=256),
        A.Affine(translate_percent=(-0.0625, 0.0625), scale=(0.9, 1.1), rotate=(-15, 15), p=0.5),
        A.RGBShift(r_shift_limit=15, g_shift_limit=15, b_shift_limit=15, p=0.5),
        A.RandomBrightnessContrast(p=0.5),
        A.Normalize(),
        ToTensorV2(),
    ], seed=2)


# Source kind: self-supervised (SimCLR / BYOL style) view generation, written with Albumentations.
def self_supervised_simclr():
    return A.Compose([
        A.RandomResizedCrop(size=(96, 96), scale=(0.2, 1.0)),
        A.HorizontalFlip(p=0.5),
        A.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1, p=0.8),
        A.ToGray(p=0.2),
        A.GaussianBlur(blur_limit=(9, 9), sigma_limit=(0.1, 2.0), p=0.5),
        A.Solarize(threshold_range=(0.5, 0.5), p=0.2),
        A.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    ], seed=3)


# Source kind: robustness / autonomous-driving augmentation with weather effects picked one at a time.
def robustness_weather():
    return A.Compose([
        A.Resize(height=192, width=256),
        A.OneOf([
            A.RandomRain(p=1.0),
            A.RandomFog(p=1.0),
            A.RandomSnow(p=1.0),
            A.RandomSunFlare(p=1.0),
            A.RandomShadow(p=1.0),
        ], p=0.5),
        A.MotionBlur(blur_limit=(3, 7), p=0.2),
        A.GaussNoise(std_range=(0.02, 0.08), p=0.2),
        A.HorizontalFlip(p=0.5),
    ], seed=4)


# Source kind: medical imaging (chest X-ray / histopathology tiles): orientation-free flips and
# rotations, elastic-type distortions, local contrast and gamma.
def medical_imaging():
    return A.Compose([
        A.Resize(height=224, width=224),
        A.RandomRotate90(p=0.5),
        A.HorizontalFlip(p=0.5),
        A.VerticalFlip(p=0.5),
        A.Transpose(p=0.5),
        A.OneOf([
            A.ElasticTransform(p=1.0),
            A.GridDistortion(p=1.0),
            A.OpticalDistortion(p=1.0),
        ], p=0.3),
        A.CLAHE(clip_limit=2.0, p=0.3),
        A.RandomGamma(gamma_limit=(80, 120), p=0.3),
        A.Normalize(mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
    ], seed=5)


# Source kind: Kaggle image-classification competition kernels (leaf / skin-lesion style):
# every flip, shift-scale-rotate, HSV and brightness jitter, coarse dropout.
def kaggle_classification():
    return A.Compose([
        A.RandomResizedCrop(size=(256, 256), scale=(0.5, 1.0)),
        A.Transpose(p=0.5),
        A.HorizontalFlip(p=0.5),
        A.VerticalFlip(p=0.5),
        A.Affine(translate_percent=(-0.0625, 0.0625), scale=(0.9, 1.1), rotate=(-45, 45), p=0.5),
        A.HueSaturationValue(hue_shift_limit=20, sat_shift_limit=20, val_shift_limit=20, p=0.5),
        A.RandomBrightnessContrast(brightness_limit=(-0.1, 0.1), contrast_limit=(-0.1, 0.1), p=0.5),
        A.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
        A.CoarseDropout(num_holes_range=(1, 8), hole_height_range=(0.05, 0.1), hole_width_range=(0.05, 0.1),
                        p=0.5),
        ToTensorV2(),
    ], seed=6)


# Source kind: the "strong augmentation" block of many Kaggle kernels: OneOf noise, OneOf blur,
# OneOf sharpen/contrast, on top of flips and a shift-scale-rotate.
def kaggle_strong():
    return A.Compose([
        A.Resize(height=224, width=224),
        A.HorizontalFlip(p=0.5),
        A.OneOf([
            A.GaussNoise(std_range=(0.02, 0.1), p=1.0),
            A.ISONoise(p=1.0),
        ], p=0.2),
        A.OneOf([
            A.MotionBlur(p=1.0),
            A.MedianBlur(blur_limit=(3, 3), p=1.0),
            A.Blur(blur_limit=(3, 3), p=1.0),
        ], p=0.2),
        A.Affine(translate_percent=(-0.0625, 0.0625), scale=(0.8, 1.2), rotate=(-45, 45), p=0.2),
        A.OneOf([
            A.Sharpen(p=1.0),
            A.Emboss(p=1.0),
            A.RandomBrightnessContrast(p=1.0),
        ], p=0.3),
        A.HueSaturationValue(p=0.3),
    ], seed=7)


# Source kind: fine-grained / retail classification (CIFAR-size crops with padding, random
# erasing, as small-image recipes do).
def small_image_classification():
    return A.Compose([
        A.PadIfNeeded(min_height=40, min_width=40, border_mode=cv2.BORDER_REFLECT_101),
        A.RandomCrop(height=32, width=32),
        A.HorizontalFlip(p=0.5),
        A.Normalize(mean=(0.4914, 0.4822, 0.4465), std=(0.247, 0.243, 0.261)),
        A.Erasing(p=0.5),
    ], seed=8)


# Source kind: skin-lesion / dermoscopy competition kernels: every flip, a OneOf of blurs and
# noise, a OneOf of distortions, local contrast, HSV, a shift-scale-rotate, one large hole.
def kaggle_dermoscopy():
    return A.Compose([
        A.Transpose(p=0.5),
        A.VerticalFlip(p=0.5),
        A.HorizontalFlip(p=0.5),
        A.RandomBrightnessContrast(brightness_limit=0.2, contrast_limit=0.2, p=0.75),
        A.OneOf([
            A.MotionBlur(blur_limit=5),
            A.MedianBlur(blur_limit=5),
            A.GaussianBlur(blur_limit=(3, 5)),
            A.GaussNoise(std_range=(0.02, 0.1)),
        ], p=0.7),
        A.OneOf([
            A.OpticalDistortion(distort_limit=0.5),
            A.GridDistortion(num_steps=5, distort_limit=0.5),
            A.ElasticTransform(alpha=3),
        ], p=0.7),
        A.CLAHE(clip_limit=4.0, p=0.7),
        A.HueSaturationValue(hue_shift_limit=10, sat_shift_limit=20, val_shift_limit=10, p=0.5),
        A.ShiftScaleRotate(shift_limit=0.1, scale_limit=0.1, rotate_limit=15, border_mode=cv2.BORDER_CONSTANT, p=0.85),
        A.Resize(height=256, width=256),
        A.CoarseDropout(num_holes_range=(1, 1), hole_height_range=(0.375, 0.375), hole_width_range=(0.375, 0.375),
                        p=0.7),
        A.Normalize(),
    ], seed=9)


# Source kind: salt / seismic-style segmentation kernels on small tiles: a random-size crop or
# padding, distortions, local contrast and gamma, the crop family being where recipes differ.
def segmentation_tiles():
    return A.Compose([
        A.HorizontalFlip(p=0.5),
        A.OneOf([
            A.RandomSizedCrop(min_max_height=(50, 101), size=(101, 101), p=1.0),
            A.PadIfNeeded(min_height=101, min_width=101, p=1.0),
        ], p=1.0),
        A.OneOf([
            A.ElasticTransform(alpha=120, sigma=6, p=0.5),
            A.GridDistortion(p=0.5),
            A.OpticalDistortion(distort_limit=0.5, p=1.0),
        ], p=0.8),
        A.CLAHE(p=0.8),
        A.RandomBrightnessContrast(p=0.8),
        A.RandomGamma(p=0.8),
        A.Downscale(scale_range=(0.5, 0.9), p=0.2),
    ], seed=10)


ALBUMENTATIONS = {f.__name__: f for f in (detection_yolo, classification_imagenet, segmentation_tutorial,
                                          self_supervised_simclr, robustness_weather, medical_imaging,
                                          kaggle_classification, kaggle_strong, small_image_classification,
                                          kaggle_dermoscopy, segmentation_tiles)}
