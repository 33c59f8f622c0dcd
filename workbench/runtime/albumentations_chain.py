"""The empty chain, in the names an Albumentations export defines for its chain
(codegen/albumentations.py writes them): albumentations_program imports them from here, so that
the program runs on its own and a test can run it, and an export defines them in its chain section
instead (this file is never copied).

Example:
    >>> len(build_compose().transforms), STEPS
    (0, ())
"""
import os

# Importing Albumentations otherwise asks PyPI for a newer version (see albumentations_program).
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import albumentations as A  # noqa: E402

from .rows import sample_rows  # noqa: E402
from .targets import move_batch  # noqa: E402

SEED = 0
# (op name, position in the chain) of each enabled step, in order.
STEPS = ()
# The chain's plan for masks, boxes and keypoints (codegen/targets_source.py).
TARGET_ROWS = []
TARGET_PLAN = []
TARGET_SETTINGS = {"min_visibility": 0.0, "mask_fill": 0, "mark_erased": None, "flip_pairs": [],
                   "keypoints_per_instance": 0}
# Why this chain cannot move targets (None: it can).
TARGETS_REFUSED = None


def build_compose():
    """The chain's enabled steps as one Albumentations pipeline: none."""
    return A.Compose([])


def augment_targets(records, sizes, targets, until=None):
    """The targets of a batch after the chain (see the export's own, which codegen/targets_source.py
    writes): the empty chain moves nothing."""
    if TARGETS_REFUSED:
        raise ValueError(TARGETS_REFUSED)
    rows = sample_rows(TARGET_ROWS[:until], records, len(sizes))
    return move_batch(TARGET_PLAN[:until], rows, sizes, targets, TARGET_SETTINGS)
