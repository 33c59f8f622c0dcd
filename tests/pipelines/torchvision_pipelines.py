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


TORCHVISION = {f.__name__: f for f in (classification_reference, self_supervised_views, finetune_eval_style)}
