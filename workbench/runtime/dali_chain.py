"""The empty chain, in the names a DALI export defines for its chain (codegen/dali.py writes them):
dali_program imports them from here, so that the program runs on its own and a test can run it,
and an export defines them in its chain section instead (this file is never copied).

Example:
    >>> STEP_FUNCTIONS, CONDITIONALS
    ((), False)
"""
from .rows import records_from_draws, sample_rows
from .targets import move_batch, with_resize

SEED = 0
# The chain's enabled steps, in order (each a function of a batch node and the seed), and those
# that blend samples of one batch (they take and return the labels too).
STEP_FUNCTIONS = ()
MIXING_STEPS = ()
# (position, name) of the first mixing step with no size-fixing step before it, or None.
ONE_SIZE_BEFORE = None
# The training pipeline's first REGION_STEPS steps as a function of the encoded files (region
# decoding), or None.
REGION_DECODE = None
REGION_STEPS = 0
# The names of the per-sample draws each step returns, and all of them in order.
STEP_DRAWS = ()
DRAWS = ()
# Whether a step branches on its per-sample draws (then the pipelines run with DALI's conditionals).
CONDITIONALS = False
# (position in STEP_FUNCTIONS, "OpName (step N) runs on DALI's GPU only (why)") of each op that DALI runs
# on the GPU only: the pipelines refuse to run those steps on the CPU.
GPU_ONLY = ()
# (position in STEP_FUNCTIONS, chain step, settings) of each step whose window augment_images draws on
# the host from the boxes (RandomIoUCrop) and feeds.
WINDOW_STEPS = ()
# What the training loader does with images of several sizes (see --help), and the end of its
# error at a batch of several sizes (codegen/loader_sizes.py words them for each chain).
SIZE_NOTE = ("Output size: not fixed: no step sets it, so each image keeps its own size. A folder of one size "
             "trains as it is. On a folder of mixed sizes (ImageNet is one) the training loader stops at the "
             "first batch of several sizes with an error that names two of its files, unless it is given a "
             "size: --resize HxW (make_loader's resize=(224, 224)) resizes every image at the end of the chain "
             "(bilinear, antialiased). --save and augment_images are not affected.")
SIZE_FIX = ("add a RandomResizedCrop, Resize, CenterCrop, RandomCrop, Pad or RandomSizedCrop step to the chain in the "
            "workbench and export it again, or pass --resize HxW, e.g. --resize 224x224 (make_loader's "
            "resize=(224, 224)), which resizes every image at the end of the chain")
# Whether a step fixes the image size before the batch must be one tensor.
FIXES_SIZE = False
# Where the training loader's `resize` goes: before this many of the chain's enabled steps.
RESIZE_AT = 0
# Whether the chain ends with each image at a size drawn for it: the training loader then pads
# each batch to its largest image and hands over their sizes.
DRAWN_SIZES = False
# The chain's plan for masks, boxes and keypoints (codegen/targets_source.py).
TARGET_ROWS = []
TARGET_PLAN = []
TARGET_SETTINGS = {"min_visibility": 0.0, "mask_fill": 0, "mark_erased": None, "flip_pairs": [],
                   "keypoints_per_instance": 0}
# Why this chain cannot move targets (None: it can).
TARGETS_REFUSED = None


def augment_targets(records, sizes, targets, resize=None, until=None):
    """The targets of a batch after the chain (see the export's own, which codegen/targets_source.py
    writes): the empty chain moves nothing but the loader's `resize`."""
    if TARGETS_REFUSED:
        raise ValueError(TARGETS_REFUSED)
    rows = sample_rows(TARGET_ROWS[:until], records_from_draws(TARGET_ROWS, records, len(sizes)), len(sizes))
    plan = TARGET_PLAN[:until]
    if resize is not None and (until is None or RESIZE_AT < sum(entry["enabled"] for entry in plan)):
        plan, rows = with_resize(plan, rows, RESIZE_AT, resize)
    return move_batch(plan, rows, sizes, targets, TARGET_SETTINGS)
