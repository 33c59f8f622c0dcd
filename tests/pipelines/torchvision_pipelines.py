"""torchvision.transforms.v2 pipelines as reference training scripts write them. torchvision is
imported when a pipeline is built (it is optional)."""


# Source kind: the classification reference recipe (random resized crop, flip, a policy,
# normalisation, random erasing).
def classification_reference():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.ToImage(),
        v2.RandomResizedCrop(224, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.TrivialAugmentWide(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        v2.RandomErasing(p=0.1),
    ])


# Source kind: SimCLR / MoCo v2 style two-view augmentation written with torchvision.
def self_supervised_views():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomResizedCrop(96, scale=(0.2, 1.0)),
        v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8),
        v2.RandomGrayscale(p=0.2),
        v2.RandomApply([v2.GaussianBlur(9, sigma=(0.1, 2.0))], p=0.5),
        v2.RandomHorizontalFlip(),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
    ])


# Source kind: evaluation + fine-tuning transforms of model zoos (resize, centre crop,
# light geometric jitter picked one at a time).
def finetune_eval_style():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.Resize((256, 256), antialias=True),
        v2.CenterCrop(224),
        v2.RandomChoice([v2.RandomRotation(10), v2.RandomAffine(0, translate=(0.05, 0.05))]),
        v2.RandomAdjustSharpness(2.0, p=0.3),
        v2.RandomAutocontrast(p=0.2),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])


# Source kind: the classification reference's training presets with its other --auto-augment
# choices (RandAugment, AutoAugment, AugMix), and its evaluation preset.
def classification_randaugment():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.PILToTensor(),
        v2.RandomResizedCrop(176, interpolation=v2.InterpolationMode.BILINEAR, antialias=True),
        v2.RandomHorizontalFlip(0.5),
        v2.RandAugment(interpolation=v2.InterpolationMode.BILINEAR, magnitude=9),
        v2.ToDtype(torch.float, scale=True),
        v2.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
        v2.RandomErasing(p=0.25),
        v2.ToPureTensor(),
    ])


def classification_autoaugment():
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomResizedCrop(224, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.AutoAugment(v2.AutoAugmentPolicy.IMAGENET, interpolation=v2.InterpolationMode.BILINEAR),
        v2.ToImage(),
    ])


def classification_augmix():
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomResizedCrop(224, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.AugMix(interpolation=v2.InterpolationMode.BILINEAR),
        v2.ToImage(),
    ])


# Source kind: the classification reference's training with --mixup-alpha 0.2 --cutmix-alpha 1.0: its
# collate mixes each batch with RandomChoice([MixUp, CutMix]) after the per-image preset.
def classification_batch_mixing():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.ToImage(),
        v2.RandomResizedCrop(176, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
        v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=1000), v2.CutMix(alpha=1.0, num_classes=1000)]),
    ])


def classification_eval():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.Resize(256, interpolation=v2.InterpolationMode.BILINEAR, antialias=True),
        v2.CenterCrop(224),
        v2.PILToTensor(),
        v2.ToDtype(torch.float, scale=True),
        v2.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
    ])


# Source kind: the detection reference's data-augmentation presets (hflip, multiscale, lsj, ssd,
# ssdlite), each followed by the same box housekeeping.
def _detection(*augmentations):
    import torch
    from torchvision.transforms import v2

    return v2.Compose([v2.ToImage(), *augmentations, v2.ToDtype(torch.float, scale=True),
                       v2.ConvertBoundingBoxFormat("XYXY"), v2.SanitizeBoundingBoxes(), v2.ToPureTensor()])


def detection_hflip():
    from torchvision.transforms import v2

    return _detection(v2.RandomHorizontalFlip(p=0.5))


def detection_multiscale():
    from torchvision.transforms import v2

    return _detection(v2.RandomShortestSize(min_size=(480, 512, 544, 576, 608, 640, 672, 704, 736, 768, 800),
                                            max_size=1333), v2.RandomHorizontalFlip(p=0.5))


def detection_lsj():
    from torchvision.transforms import v2

    return _detection(v2.ScaleJitter(target_size=(1024, 1024), antialias=True),
                      v2.RandomCrop(1024, pad_if_needed=True), v2.RandomHorizontalFlip(p=0.5))


def detection_ssd():
    from torchvision.transforms import v2

    return _detection(v2.RandomPhotometricDistort(p=1), v2.RandomZoomOut(fill=(123, 117, 104)), v2.RandomIoUCrop(),
                      v2.RandomHorizontalFlip(p=0.5))


def detection_ssdlite():
    from torchvision.transforms import v2

    return _detection(v2.RandomIoUCrop(), v2.RandomHorizontalFlip(p=0.5))


# Source kind: the segmentation reference's training and evaluation presets (base size 520, crop 480).
def segmentation_train():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.ToImage(),
        v2.RandomResize(min_size=260, max_size=1040),
        v2.RandomHorizontalFlip(0.5),
        v2.RandomCrop(480, pad_if_needed=True),
        v2.ToDtype(torch.float, scale=True),
        v2.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
        v2.ToPureTensor(),
    ])


def segmentation_eval():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([v2.ToImage(), v2.Resize(520), v2.ToDtype(torch.float, scale=True),
                       v2.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))])


# Source kind: CIFAR-10 training as the tutorials and ResNet-on-CIFAR repositories write it.
def cifar_train():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.ToImage(),
        v2.RandomCrop(32, padding=4),
        v2.RandomHorizontalFlip(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize((0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)),
    ])


# Source kind: self-supervised recipes: a DINO global view, an MAE pre-training view (both resample
# bicubically), a BYOL view.
def dino_global_view():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomResizedCrop(224, scale=(0.4, 1.0), interpolation=v2.InterpolationMode.BICUBIC),
        v2.RandomHorizontalFlip(p=0.5),
        v2.RandomApply([v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)], p=0.8),
        v2.RandomGrayscale(p=0.2),
        v2.RandomApply([v2.GaussianBlur(23, sigma=(0.1, 2.0))], p=0.1),
        v2.RandomSolarize(threshold=128, p=0.2),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ])


def mae_pretrain():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomResizedCrop(224, scale=(0.2, 1.0), interpolation=v2.InterpolationMode.BICUBIC),
        v2.RandomHorizontalFlip(),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])


def byol_view():
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomResizedCrop(224, antialias=True),
        v2.RandomHorizontalFlip(),
        v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
        v2.RandomGrayscale(p=0.2),
        v2.GaussianBlur(23, sigma=(0.1, 2.0)),
        v2.RandomSolarize(0.5, p=0.2),
    ])


# Source kind: hand-written robustness and medical-imaging pipelines (light geometry, photometric
# noise, elastic deformation, compression).
def robustness_handwritten():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.ToImage(),
        v2.Resize((256, 256)),
        v2.RandomRotation(15),
        v2.RandomAffine(degrees=0, translate=(0.1, 0.1), scale=(0.9, 1.1)),
        v2.RandomPerspective(distortion_scale=0.2, p=0.3),
        v2.RandomApply([v2.ElasticTransform(alpha=30.0, sigma=5.0)], p=0.3),
        v2.ColorJitter(brightness=0.2, contrast=0.2),
        v2.RandomChoice([v2.GaussianBlur(5, sigma=(0.1, 1.5)), v2.GaussianNoise(sigma=0.03)]),
        v2.ToDtype(torch.float32, scale=True),
        v2.RandomChannelPermutation(),
        v2.RandomErasing(p=0.2, scale=(0.02, 0.1)),
    ])


def grayscale_documents():
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.Grayscale(num_output_channels=3),
        v2.RandomRotation(3, fill=0),
        v2.RandomAdjustSharpness(2.0, p=0.5),
        v2.RandomAutocontrast(p=0.5),
        v2.JPEG((60, 95)),
        v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True),
    ])


TORCHVISION = {f.__name__: f for f in (
    classification_reference, classification_randaugment, classification_autoaugment, classification_augmix,
    classification_batch_mixing, classification_eval, detection_hflip, detection_multiscale, detection_lsj,
    detection_ssd, detection_ssdlite, segmentation_train, segmentation_eval, cifar_train, self_supervised_views,
    dino_global_view, mae_pretrain, byol_view, finetune_eval_style, robustness_handwritten, grayscale_documents)}
