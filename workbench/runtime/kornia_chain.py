"""The empty chain, in the names a Kornia export defines for its chain (codegen/kornia.py writes
them): kornia_program imports them from here, so that the program runs on its own and a test can
run it, and an export defines them in its chain section instead (this file is never copied).

Example:
    >>> len(build_augmentation()), STEPS, FIXES_SIZE
    (0, (), False)
"""
from __future__ import annotations

import torch

from .rows import sample_rows
from .targets import move_batch, with_resize

SEED = 0
# With mixed input sizes the first HEAD_STEPS steps run per image (the last one fixes the size);
# with PER_IMAGE (a step draws each sample's size) every batch runs them so.
HEAD_STEPS = 0
PER_IMAGE = False
# (op name, position in the chain) of each enabled step, in order.
STEPS = ()
# The first step's RandomResizedCrop arguments, or None (see resized_crop_windows).
RESIZED_CROP = None
# What the training loader does with images of several sizes (see --help), and the end of its
# error at a batch of several sizes (codegen/loader_sizes.py words them for each chain).
SIZE_NOTE = ("Output size: not fixed: no step sets it, so each image keeps its own size. A folder of one size "
             "trains as it is. On a folder of mixed sizes (ImageNet is one) the training loader stops at the "
             "first batch of several sizes with an error that names two of its files, unless it is given a "
             "size: --resize HxW (training_batches' resize=(224, 224)) resizes every image at the end of the "
             "chain (bilinear, antialiased). --save and augment_images are not affected.")
SIZE_FIX = ("add a RandomResizedCrop, Resize, CenterCrop, RandomCrop, Pad or RandomSizedCrop step to the chain in the "
            "workbench and export it again, or pass --resize HxW, e.g. --resize 224x224 (training_batches' "
            "resize=(224, 224)), which resizes every image at the end of the chain")
# Whether a step fixes the image size before the batch must be one tensor.
FIXES_SIZE = False
# Where the training loader's `resize` goes: before this many of the chain's enabled steps.
RESIZE_AT = 0
# The chain's plan for masks, boxes and keypoints (codegen/targets_source.py).
TARGET_ROWS = []
TARGET_PLAN = []
TARGET_SETTINGS = {"min_visibility": 0.0, "mask_fill": 0, "mark_erased": None, "flip_pairs": [],
                   "keypoints_per_instance": 0}
# Why this chain cannot move targets (None: it can).
TARGETS_REFUSED = None


def build_augmentation():
    """The chain's enabled steps as Kornia modules: none."""
    return torch.nn.Sequential()


def augment_targets(records, sizes, targets, resize=None, until=None):
    """The targets of a batch after the chain (see the export's own, which codegen/targets_source.py
    writes): the empty chain moves nothing but the loader's `resize`."""
    if TARGETS_REFUSED:
        raise ValueError(TARGETS_REFUSED)
    rows = sample_rows(TARGET_ROWS[:until], records, len(sizes))
    plan = TARGET_PLAN[:until]
    if resize is not None and (until is None or RESIZE_AT < sum(entry["enabled"] for entry in plan)):
        plan, rows = with_resize(plan, rows, RESIZE_AT, resize)
    return move_batch(plan, rows, sizes, targets, TARGET_SETTINGS)
