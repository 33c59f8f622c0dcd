# The program every Kornia export carries. Its docstring, imports and code are copied into each
# exported file as they stand (codegen/source_copy.py's program_source), with the definitions it
# imports from the workbench's other runtime modules; the names it imports from kornia_chain are the
# export's chain section (kornia_chain.py here: the empty chain, so this module runs on its own).
"""Augmentation chain for Kornia (PyTorch), exported by the augmentation workbench.

Use it as a module or as a script:
  python THIS_FILE --images DIR --seed N --save out.npz      # augmented images + sampled params
  python THIS_FILE --images DIR --bench --batch-size 64      # throughput of the training loader
  torchrun --nproc-per-node 2 THIS_FILE --images DIR --epochs 1   # the loader under DDP
  python THIS_FILE --images DIR --resize 224x224             # train on a folder of mixed sizes
  torchrun --nproc-per-node 2 THIS_FILE --shards "train-{0000..0099}.tar"   # WebDataset tar shards
  python THIS_FILE --images DIR --bench --compile            # the fused steps through torch.compile
  python THIS_FILE --images DIR --epochs 90 --skip-bad --resume 3:120   # see "Unreadable files" below

Export options: a program carries masks, boxes and keypoints (--coco, --masks), WebDataset tar
shards (--shards) and the loader's GPU decoding (--decoder) only when exported with them; the
"Export options" section near the end of this file says which this one has, and a left-out
feature stops with how to export it.

Reproducibility (`augment_images`, used by --save and by the workbench preview): torch's
generator is seeded with the seed; images are decoded by PIL to RGB and taken in file-name
order. Images of one size form one batch. With mixed sizes, the steps up to the first one
that fixes the size run one image at a time in that order, then the rest as one batch.

The training loader (training_batches, --bench, training) draws each batch from (seed, rank,
epoch, batch) and each epoch's order from (seed, epoch), so --resume EPOCH:BATCH starts a run
there with the batches and draws an uninterrupted run has. It is not the preview: exported with
gpu_decode, it decodes JPEGs on the GPU when the device is CUDA (nvImageCodec or torchvision;
--decoder pil keeps PIL), and when the chain starts with RandomResizedCrop it crops a batch of
mixed sizes in one batched op whose windows come from a batched sampler: the same distribution
as Kornia's (identical windows for a batch of one size), other draws than the preview's
image-by-image crops.

Unreadable files (truncated, empty, not an image): the loader, --save and --bench stop at the
first with one line naming it. --skip-bad puts the next readable file (and its label) in its
place, so that batches stay full and every rank keeps its number of batches, and names the files
at the end of each epoch (--save leaves them out); --exclude FILE leaves out the files a list
names (`workbench check DIR --full --exclude-list FILE` writes one).

Image sizes: a training batch must be one tensor. When no step of the chain fixes the size
(see SIZE_NOTE, also in --help), a folder of mixed sizes stops at its first batch of several
sizes with an error naming two files, unless the loader is given a size (--resize HxW,
training_batches' resize=): a visible resize in augment_resized.

One pass: apply_steps fuses runs of steps (fusion_segments): consecutive geometric steps compose
their per-sample matrices and resample once, consecutive pointwise colour steps run as one
function; each step still draws its own values in order, so the draws and p are those of a
step-by-step run (fuse=False), the pixels within interpolation (one resampling, not several).
--compile (torch_compile=True) runs the fused runs through torch.compile.

Labels: a batch mixing step (MixUp, CutMix) blends each sample with a partner of its batch
and makes the labels float soft targets (one row of class weights per sample) mixed with the
same weights; the training loader yields them, `augment_images(labels=...)` returns them,
and --save writes them as "labels" (each file's label being its index).

Shards: instead of a folder (--images, root=), the training loader reads WebDataset tar shards
(--shards, shards=): a brace range "train-{0000..0099}.tar", a glob or a comma-separated list.
Members group into samples by the name before the first dot of their file name; a sample is
an image (.jpg, .png, ...) and an optional .cls member holding its class id in ASCII (0 without
one). The shards' headers are read once at the start (TarShardDataset); then each sample is one
read at its offset, so shards shuffle, shard by rank (EpochSampler) and decode (on the GPU
for JPEGs) exactly as a folder does. --save takes the shards' samples in order, shard by shard.
"""

import ctypes
import os
import random
import warnings
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from pathlib import Path

# Kornia may offer to pip-install optional extras; never wait on a prompt in a worker.
os.environ.setdefault("KORNIA_INSTALLATION_MODE", "RAISE")

import kornia.augmentation as K
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from .annotations import (annotated_inputs, batch_targets, loader_annotations, per_image,
                          sample_targets, target_arrays)
from .bad_files import (BadImageError, decode_checked, ends_whole, one_line_errors, one_line_on_bad_image,
                        read_exclusions, readable, report_skipped, save_inputs, shard_sample_name, without_excluded)
from .common import (SIZE_LOOKS, add_prefetch_argument, add_resize_argument, batch_megabytes, bench_batches,
                     box_count, check_one_size, check_resume, check_shards_argument, contract_parser, derive_seed,
                     distributed_context, forking_cleanly, index_shards, left_out, loader_resize, prefetch_line,
                     prefetch_plan, print_rates, print_seen, read_member, record_arrays, run_command, shard_paths,
                     timed_rates)
from .kornia_chain import (FIXES_SIZE, HEAD_STEPS, PER_IMAGE, RESIZE_AT, RESIZED_CROP, SEED, SIZE_FIX,
                           SIZE_NOTE, STEPS, TARGETS_REFUSED, augment_targets, build_augmentation)
from .file_table import Strings, training_files
from .sampling import EpochSampler, sample_index
from .kornia_modules.fusion import (copy_rows, fused_colour, fused_geometry_plan, fused_output_size, fused_resample,
                                    fusion_chunk, fusion_gate, fusion_jitter_branches, fusion_segments, fusion_slice,
                                    shares_memory)
from .kornia_modules.levels import (centre_crop_levels, colours_on_levels, filter_levels, filter_on_levels,
                                    flips_levels, float_tables_levels, level_warp_plan, levels_plan, resample_levels,
                                    SLICED_CROPS, sliced_crop_on_levels, sliced_crops_levels, opencv_levels)
from .kornia_modules.draws import step_draws
from .kornia_modules.threads import sample_threads, shared_parts
from .targets import BOXES_NEEDED


def augment_images(images, seed=SEED, device="cpu", labels=None, fuse=True, torch_compile=False,
                   augmentation=None, boxes=None):
    """Augment HxWx3 uint8 arrays in the given order with `seed`, as the workbench preview does.

    Returns (images, params): images as an NxHxWxC float32 array (a list when sizes differ),
    params as one dict per enabled step of arrays with the sample index first. Given `labels`
    (class ids, or soft targets N x classes), also the labels as float32 soft targets, mixed
    by the mixing steps (MixUp, CutMix) with the weights they report: (images, params, labels).
    `fuse` (one resampling per run of geometric steps, one pass per run of colour steps) and
    `torch_compile` (torch.compile those runs): see apply_steps; the draws are the same either way.
    `augmentation`: the chain as place(build_augmentation(), device) gives it, to reuse across calls
    (building Kornia's modules takes milliseconds; they keep no state from one run to the next).
    `boxes`: each image's boxes (K x 4, [x1, y1, x2, y2] pixels), which RandomIoUCrop draws its window
    from (see apply_image_steps); a chain with such a step refuses to run without them.
    """
    device = torch.device(device)
    targets = None if labels is None else soft_targets(labels).to(device)
    augmentation = place(build_augmentation(), device) if augmentation is None else augmentation
    one_size = len({np.shape(image) for image in images}) == 1
    # (leading_resize: a feature of the programs of chains that start with a Resize)
    resizes = one_size and fuse and len(augmentation) > 0 and type(augmentation[0]).__name__ == "WbResize"
    first = leading_resize(augmentation, images, device) if resizes else None
    if first is not None:
        batch = None  # (resized_images stacks the images a part at a time)
    elif one_size:
        # One copy of the images as they lie (HxWx3 each), seen as NCHW: as_unit lays the levels out
        # as NCHW floats while it converts them, a chunk at a time (stacking the CHW views copied
        # the batch across layouts first, a pass of its own).
        batch = stacked(images)
    else:
        batch = [image_tensor(image) for image in images]
    cuda = [device] if device.type == "cuda" else []
    records = []
    # fork_rng: seeding here must not change the caller's random stream.
    with torch.random.fork_rng(devices=cuda), torch.no_grad():
        seed_generators(seed, device)
        if first is not None:
            batch, augmentation = resized_images(first, images, records), list(augmentation)[1:]
        # The result leaves as N x H x W x C: a last fused run writes it so (no transposing copy after).
        out = augment_batch(augmentation, batch, device, records, targets, fuse, torch_compile, boxes,
                            channels_last=True)
    if targets is not None:
        out, targets = out
    if isinstance(out, list):
        result = [o.permute(1, 2, 0).cpu().numpy() for o in out], records
    else:
        result = out.permute(0, 2, 3, 1).contiguous().cpu().numpy(), records
    return result if targets is None else (*result, targets.cpu().numpy())


def stacked(images):
    """HxWx3 uint8 arrays of one size as one uint8 NCHW tensor laid out N x H x W x C (one copy).
    Example: stacked([np.zeros((4, 6, 3), np.uint8)] * 2).shape == (2, 3, 4, 6)."""
    return torch.from_numpy(np.stack([np.asarray(image) for image in images])).permute(0, 3, 1, 2)


def leading_resize(augmentation, images, device):
    """The chain's first step where augment_images lets resized_images stack and resize `images` (one size): a
    WbResize that shrinks every sample (p = 1, so it draws nothing), on a CPU's levels (runs_on_levels), in a
    chain that runs as one batch (not PER_IMAGE); else None.
    Example: leading_resize([WbResize((4, 4))], [np.zeros((8, 8, 3), np.uint8)], torch.device("cpu")) is the
    WbResize."""
    module = augmentation[0] if len(augmentation) and not PER_IMAGE else None
    if type(module).__name__ != "WbResize" or float(module.p) != 1.0 or device.type != "cpu" \
            or np.asarray(images[0]).dtype != np.uint8:
        return None
    height, width = module.flags["size"]
    if height * width >= np.shape(images[0])[0] * np.shape(images[0])[1]:
        return None  # (enlarging: the stacked input is the smaller copy, and the resize to its size is itself)
    return module if runs_on_levels(module, torch.empty((0, 3, 1, 1), dtype=torch.uint8)) else None


def resized_images(module, images, records=None):
    """`images` (HxWx3 uint8 arrays of one size) resized by the WbResize `module` that leading_resize gives: the
    uint8 NCHW batch laid out N x H x W x C that transformed() gives for the stacked images, sample for sample,
    each part of the images stacked and resized by a core of its own (sample_threads): one core's copying
    overlaps the other's resizing, where stacking the whole batch first kept both cores waiting on one. The
    step's draws (it draws nothing: the random stream is the stacked batch's) are appended to `records`.
    Example: resized_images(WbResize((4, 4)), [np.zeros((8, 8, 3), np.uint8)] * 2).shape == (2, 3, 4, 4)."""
    if records is not None:
        height, width, channels = np.shape(images[0])
        records.append(sampled_params(module, step_draws(module, (len(images), channels, height, width))))
    with sample_threads(len(images)):
        return shared_parts(len(images), lambda first, last: module.apply_transform(
            stacked(images[first:last]), {}, module.flags))


def seed_generators(seed, device):
    """Seed the CPU's generator (every step draws there, see place), and on a GPU all: torch.manual_seed
    on a CPU run would reseed the GPUs outside its fork_rng (and spends 0.06 ms looking for them)."""
    return torch.manual_seed(seed) if device.type == "cuda" else torch.default_generator.manual_seed(seed)


def image_tensor(image):
    """An HxWx3 uint8 array as a CHW uint8 tensor that shares its memory, a read-only array (such
    as np.asarray of a PIL image) included: nothing writes into the images a chain is given
    (augment_images stacks a batch of one size, to_float converts an image of its own), so no copy is made
    and torch's warning about read-only arrays does not apply.
    Example: image_tensor(np.zeros((4, 6, 3), np.uint8)).shape == (3, 4, 6)."""
    image = np.ascontiguousarray(image)
    if image.flags.writeable:
        return torch.from_numpy(image).permute(2, 0, 1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(image).permute(2, 0, 1)


def augment_batch(augmentation, images, device, records=None, labels=None, fuse=True, torch_compile=False,
                  boxes=None, channels_last=False):
    """Augment a uint8 NCHW tensor, or a list of uint8 CHW tensors of mixed sizes.

    Mixed sizes, or any batch with PER_IMAGE (a step draws each sample's size): the steps before
    HEAD_STEPS run per image, then the remaining steps run on the stacked batch; a list of CHW
    images comes back where the sizes still differ. With `labels` (soft targets) the result is
    (batch, mixed labels). `fuse`, `torch_compile`: see apply_steps. `boxes`: each image's boxes,
    for the steps that read them (see apply_image_steps). `channels_last`: see apply_steps.
    """
    if torch.is_tensor(images) and not PER_IMAGE:
        # uint8 as it is: a CPU's fused runs convert it a chunk at a time (see run_fused).
        return apply_steps(augmentation, images.to(device, non_blocking=True), records, labels, fuse, torch_compile,
                           channels_last)
    head, tail = augmentation[:HEAD_STEPS], augmentation[HEAD_STEPS:]
    for (name, position), module in zip(STEPS, head):
        if isinstance(module, MIXING_MODULES):  # run per image, it would mix each image with itself
            raise ValueError(f"step {position + 1} ({name}) mixes samples of one batch, but the images differ "
                             "in size there; add a Resize or a crop (CenterCrop, RandomResizedCrop) before it")
    head_records = [] if records is not None else None
    outputs = []
    for n, image in enumerate(images):
        step_records = [] if records is not None else None
        outputs.append(apply_image_steps(head, image, device, step_records, None if boxes is None else boxes[n],
                                         fuse, torch_compile))
        if head_records is not None:
            head_records.append(step_records)
    if records is not None:
        records.extend(join_records(head_records))
    if len({tuple(o.shape) for o in outputs}) > 1:
        out = [o[0] for o in outputs]  # no step made the sizes equal (HEAD_STEPS covers all steps)
        return out if labels is None else (out, labels)
    return apply_steps(tail, torch.cat(outputs), records, labels, fuse, torch_compile, channels_last)


def apply_image_steps(steps, image, device, records=None, boxes=None, fuse=True, torch_compile=False):
    """`steps` (the first of the chain's) on one uint8 CHW image, as a batch of one; its draws are
    appended to `records`. A step that reads boxes (RandomIoUCrop) is given the image's `boxes`
    (K x 4, as it entered the chain) as they stand when it starts: moved through the steps before it
    from what they drew (augment_targets' until=), as Chain.run moves them after the chain."""
    # uint8 as it is: the steps that run on levels (LEVEL_STEPS) do, the rest convert it (apply_steps).
    batch, drawn, start = image[None].to(device, non_blocking=True), [], 0
    for k, module in enumerate(steps):
        if not getattr(module, "reads_boxes", False):
            continue
        batch = apply_steps(steps[start:k], batch, drawn, fuse=fuse, torch_compile=torch_compile)
        given = None if boxes is None else {"boxes": [boxes], "box_labels": [np.arange(len(boxes))]}
        module.boxes = None if given is None else [
            augment_targets(drawn, [tuple(image.shape[-2:])], given, until=STEPS[k][1])["boxes"][0]]
        try:
            batch = apply_steps(steps[k:k + 1], batch, drawn, fuse=fuse, torch_compile=torch_compile)
        finally:
            module.boxes = None  # (the built chain is reused: no image's boxes outlive its run)
        start = k + 1
    batch = apply_steps(steps[start:], batch, drawn, fuse=fuse, torch_compile=torch_compile)
    if records is not None:
        records.extend(drawn)
    return batch


def apply_steps(steps, batch, records=None, labels=None, fuse=True, torch_compile=False, channels_last=False):
    """Run `steps` in order on an NCHW batch (float in [0, 1], or uint8 levels, converted as
    to_float converts them); append each step's draws to `records`.

    With `fuse` (the default, as the workbench preview runs) consecutive geometric steps resample
    once and consecutive colour steps run as one function (see fusion_segments); `torch_compile`
    runs those fused runs through torch.compile (see run_kernel). Mixing steps mix `labels`
    (soft targets, see soft_targets) as they mix the images; with `labels` the result is
    (batch, labels), else the batch. `channels_last`: the caller wants the batch as N x H x W x C
    (augment_images): a last fused run on a CPU then lays its chunks out so as it writes them.
    With `fuse`, a uint8 batch on a CPU stays uint8 through the chain's first crops, flips and
    resizes (see LEVEL_STEPS); without it every step runs as Kornia's module runs, on floats. The
    result is float either way."""
    segments = fusion_segments(steps) if fuse else [(None, [module]) for module in steps]
    start, given = 0, batch
    chunked = fuse and batch.device.type == "cpu"
    while start < len(segments):
        if segments[start][0] is None and not (chunked and runs_by_chunks(segments[start][1][0])):
            module = segments[start][1][0]
            batch = batch if fuse and runs_on_levels(module, batch) else as_unit(batch)
            # A batch that shares no memory with the caller's (a crop may be a view of it) may be
            # written into: see apply_to_rows.
            owned = not shares_memory(batch, given)
            batch, labels = apply_step(module, batch, records, labels, owned)
            start += 1
            continue
        # A stretch of fused runs and, on a CPU, of the steps between them that runs_by_chunks.
        end = start
        while end < len(segments) and (segments[end][0] is not None
                                       or (chunked and runs_by_chunks(segments[end][1][0]))):
            end += 1
        plans, largest = fused_plans(segments[start:end], batch.shape, batch.device, batch.dtype)
        batch = run_fused(plans, batch, torch_compile, channels_last and end == len(segments), largest)
        if records is not None:
            records.extend(sampled_params(module, drawn) for _, modules, draws, _ in plans
                           for module, drawn in zip(modules, draws))
        start = end
    # Levels left at the end, for a caller that wants N x H x W x C: converted by the float tables of no step
    # (level / 255, as as_unit converts), one pass into that layout instead of two transposing copies.
    batch = float_tables_levels(batch, [], [], []) if channels_last and opencv_levels(batch) else as_unit(batch)
    return batch if labels is None else (batch, labels)


def fused_plans(segments, shape, device, dtype):
    """Draw the values of a stretch of fused runs (see fusion_segments), and of single steps that
    runs_by_chunks, for a batch of `shape` and `dtype`, in chain order, and plan their work: one
    (kernel, modules, draws, arguments) per run or step, the draws on the CPU for the records, the
    arguments on `device`. Returns (plans, the largest shape the batch takes along the stretch)."""
    plans, largest = [], torch.Size(shape)
    # A uint8 batch is converted into a new buffer (see as_unit), which the first run may reuse.
    converted = dtype == torch.uint8
    dtype = torch.float32 if converted else dtype
    # Every step draws before any applies: none of these draws while it applies, so the random
    # stream is the step-by-step run's.
    for kind, modules in segments:
        if kind == "geometry":
            draws, size, theta, frames, boxes, clamps, mode, affine = fused_geometry_plan(modules, shape)
            arguments = (*on_device([theta, frames, boxes, clamps], device, dtype), size, mode, affine)
            plans.append((fused_resample, modules, draws, arguments))
            shape = torch.Size((*shape[:2], *size))
        elif kind == "colour":
            draws = [step_draws(module, shape) for module in modules]
            arguments = (modules, on_device(draws, device), on_device([fusion_gate(d) for d in draws], device),
                         [fusion_jitter_branches(module, d) for module, d in zip(modules, draws)],
                         converted or bool(plans))
            plans.append((fused_colour, modules, draws, arguments))
        else:
            drawn = step_draws(modules[0], shape)
            plans.append((run_step, modules, [drawn], (modules[0], on_device(drawn, device), converted or bool(plans))))
            shape = torch.Size((*shape[:2], *fused_output_size(modules[0], tuple(shape[-2:]))))
        largest = max(largest, shape, key=lambda s: s[-2] * s[-1])
    return plans, largest


def run_fused(plans, batch, torch_compile, channels_last=False, largest=None):
    """The planned fused runs (see fused_plans) applied to `batch`, as one batch on a GPU and a
    chunk of samples at a time on a CPU (see fusion_chunk, for the `largest` shape the batch takes
    along them): the same values either way, each sample's work being its own. A stretch that stays
    on levels runs on the whole batch, its images shared out to the CPU's cores (sample_threads).
    `torch_compile`: see run_kernel. `channels_last`: the chunks are gathered into a batch laid out
    N x H x W x C in memory (torch.channels_last), the same values."""
    count, chunk = int(batch.shape[0]), fusion_chunk(batch.shape if largest is None else largest, batch.device)
    if stays_on_levels(plans, batch):
        with sample_threads(count):
            return run_kernels([arguments for *_, arguments in plans], plans, batch, torch_compile)
    if chunk >= count:
        return run_kernels([arguments for *_, arguments in plans], plans, batch, torch_compile)
    # Chunks of nearly one size: fewer shapes for torch.compile, no straggler of one sample.
    chunk = -(-count // -(-count // chunk))
    out = None
    for first in range(0, count, chunk):
        last = min(count, first + chunk)
        piece = run_kernels([fusion_slice(arguments, slice(first, last), count) for *_, arguments in plans], plans,
                            batch[first:last], torch_compile)
        if out is None:
            layout = torch.channels_last if channels_last else torch.contiguous_format
            out = torch.empty((count, *piece.shape[1:]), dtype=piece.dtype, device=piece.device, memory_format=layout)
        out[first:last] = piece
    return out


def stays_on_levels(plans, batch):
    """Whether the stretch of `plans` (see fused_plans) runs on the uint8 levels of `batch` (on a CPU) from
    its first step to its last, which may leave floats (a Normalize's float tables): steps that runs_on_levels
    or filter_on_levels takes, colour runs that colours_on_levels takes whole (levels_plan; floats only at
    the end), and a first fused geometric run that resample_levels takes (level_warp_plan). Such a stretch
    runs on the whole batch at once: its values between steps are a byte each, and chunks would only copy
    the float result once more.
    Example: a Resize, a CenterCrop and a Normalize on a uint8 CPU batch stay on levels."""
    if batch.dtype != torch.uint8 or batch.device.type != "cpu":
        return False
    levels = batch[:0]
    for k, (kernel, modules, *_, arguments) in enumerate(plans):
        if kernel is run_step:
            taken = runs_on_levels(modules[0], levels) or filter_on_levels(modules[0], levels)
        elif kernel is fused_colour:
            kept, tabled = levels_plan(modules, levels)
            taken = (kept == len(modules) and not tabled) or (tabled and k == len(plans) - 1)
        else:  # a fused geometric run, first (on the batch's own size): resample_levels decides by its draws
            taken = k == 0 and level_warp_plan(levels, *arguments) is not None
        if not taken:
            return False
    return True


def apply_step(module, batch, records, labels, owned=False):
    """One step on its own: (batch, labels). `owned`: `batch` is not the caller's (see apply_to_rows)."""
    if hasattr(module, "choose_children"):  # a group (OneOf, SomeOf, Sequential), see StepGroup
        return run_group(module, batch, records), labels
    # Drawn on the CPU (see place), applied where the batch is; recorded from the CPU copy,
    # so that reporting the draws never waits for the GPU.
    drawn = step_draws(module, batch.shape)
    rows = rows_to_apply(module, drawn, batch)
    if rows is None:
        batch = transformed(module, batch, on_device(drawn, batch.device))
    else:
        batch = apply_to_rows(module, drawn, batch, rows, owned)
    draws = mix_draws(module, drawn) if isinstance(module, MIXING_MODULES) else None
    if records is not None:
        records.append(sampled_params(module, drawn) if draws is None else
                       {k: v.detach().cpu().numpy() for k, v in draws.items()})
    if labels is not None and draws is not None:
        labels = mix_labels(labels, draws)
    return batch, labels


def rows_to_apply(module, drawn, batch):
    """On the CPU, the samples (an index tensor) that a step whose p left some of the batch out
    applies to, for apply_to_rows; None where Kornia's own forward runs it: on a GPU, where every
    sample applies, and for steps other than flips and Kornia's intensity steps (whose transform
    is per sample and keeps the size; a warp also computes a matrix, a mixing step reads the batch).
    Kornia's forward transforms the whole batch and blends the left-out samples back with
    torch.where, ten times an elementwise multiply on a CPU (torch.profiler, 2 cores)."""
    applied = drawn.get("batch_prob") if isinstance(drawn, dict) else None  # (a policy draws a list)
    if batch.device.type != "cpu" or applied is None or isinstance(module, MIXING_MODULES) \
            or not isinstance(module, (K.IntensityAugmentationBase2D, K.RandomHorizontalFlip, K.RandomVerticalFlip)):
        return None
    applied = applied.to(torch.bool).flatten()
    return None if bool(applied.all()) else applied.nonzero().flatten()


def apply_to_rows(module, drawn, batch, rows, owned=False):
    """`module` applied with its draws `drawn` to the samples `rows` of `batch` only, the others
    kept as they are: what Kornia's forward gives (the same values), without transforming the
    samples it would throw away. `owned`: `batch` is not the caller's, and is written into.
    Example: a HorizontalFlip with p = 0.5 flips the samples whose coin came up."""
    if batch.dtype == torch.uint8 and isinstance(module, (K.RandomHorizontalFlip, K.RandomVerticalFlip)):
        return flips_levels(batch, rows, isinstance(module, K.RandomHorizontalFlip), owned)
    # (on a CPU: a GPU would launch kernels sample by sample)
    if owned and batch.is_floating_point() and batch.device.type == "cpu" and hasattr(module, "apply_rows_in_place"):
        module.apply_rows_in_place(batch, rows, drawn)
        return batch
    out = batch if owned else batch.clone()
    if len(rows):
        count = int(batch.shape[0])
        part = module.apply_transform(batch.index_select(0, rows), fusion_slice(drawn, rows, count), module.flags)
        copy_rows(out, rows, part)
    return out


# Steps that treat each sample on their own, from their draws alone (none draws while it applies),
# and whose output size is known from their settings: on a CPU they join the stretch of fused runs
# around them, which then runs a chunk of samples at a time (run_fused).
CHUNKED_STEPS = ("WbResize", "RandomResizedCrop", "CenterCrop", "RandomCrop", "RandomHorizontalFlip",
                 "RandomVerticalFlip", "WbGaussianBlur", "WbMotionBlur", "WbMedianBlur", "WbBoxBlur",
                 "WbGaussianNoise", "RandomGrayscaleMethod")


def runs_by_chunks(module):
    """Whether a step that runs on its own (no fused run takes it) joins a stretch of chunks on a CPU:
    one of CHUNKED_STEPS. A chain's whole batch then never lies in memory between its steps (tens of
    MB of floats, fresh pages each time), only chunks that stay in the caches."""
    return type(module).__name__ in CHUNKED_STEPS


def run_step(batch, module, drawn, owned=False):
    """One step of a stretch of chunks (runs_by_chunks) on `batch` with its draws `drawn`: Kornia's
    forward, or apply_to_rows where its p left samples out. `owned`: `batch` is the stretch's own
    (converted from uint8, or made by a step before), and is written into; otherwise the result is
    a new tensor (a colour run after it may write into it)."""
    rows = rows_to_apply(module, drawn, batch)
    out = transformed(module, batch, drawn) if rows is None else apply_to_rows(module, drawn, batch, rows, owned)
    # Levels (see LEVEL_STEPS) are converted into a new batch before anything writes into them.
    if owned or out.dtype == torch.uint8 or not shares_memory(out, batch):
        return out
    return out.clone()


# Steps a CPU runs on the images' uint8 levels while the batch is still uint8 (the chain's first steps),
# 3 to 10 times faster than in floats, as OpenCV resizes uint8 images: crops, flips and nearest copy levels;
# bilinear keeps levels between its two passes, within one level (1/255) of floats. (Bicubic: floats.)
LEVEL_STEPS = ("WbResize", "RandomResizedCrop", "WbRandomResizedCrop", "CenterCrop", "RandomCrop",
               "RandomHorizontalFlip", "RandomVerticalFlip")


def runs_on_levels(module, batch):
    """Whether `module` runs on `batch` as uint8 levels: a uint8 batch on a CPU, a step of LEVEL_STEPS that
    resamples bilinearly or nearest (or not), crops by slicing and applies to every sample (or is a flip).
    Example: runs_on_levels(K.CenterCrop((8, 8)), torch.zeros(1, 3, 9, 9, dtype=torch.uint8)) is True."""
    if batch.dtype != torch.uint8 or batch.device.type != "cpu" or type(module).__name__ not in LEVEL_STEPS:
        return False
    flags = module.flags
    resample = str(getattr(flags.get("resample", "nearest"), "name", flags.get("resample", "nearest"))).lower()
    flips = isinstance(module, (K.RandomHorizontalFlip, K.RandomVerticalFlip))
    # (A padded crop fills with a float, which levels cannot hold.)
    return (resample in ("bilinear", "nearest") and flags.get("cropping_mode", "slice") == "slice"
            and not flags.get("padding") and not flags.get("pad_if_needed") and (flips or float(module.p) == 1.0))


def transformed(module, batch, drawn):
    """`module` on every sample of `batch`: Kornia's forward; on levels its transform (the forward takes floats),
    or OpenCV's resize of the windows of a RandomResizedCrop that sliced_crop_on_levels takes."""
    if type(module).__name__ in SLICED_CROPS and sliced_crop_on_levels(module, batch):
        return sliced_crops_levels(batch, drawn["src"], module.flags["size"], module.flags["resample"].name.lower())
    if batch.dtype != torch.uint8:
        return module(batch, params=drawn)
    if type(module) is K.CenterCrop and module.flags["cropping_mode"] == "slice":
        return centre_crop_levels(batch, drawn)
    if type(module).__name__ != "WbResize" or tuple(module.flags["size"]) == tuple(batch.shape[-2:]):
        return module.apply_transform(batch, drawn, module.flags)  # (a resize to the batch's size is itself)
    # (torch's antialiased resize of uint8 N x H x W x C keeps to one core: a part of the samples a core)
    count = int(batch.shape[0])
    return shared_parts(count, lambda first, last: module.apply_transform(
        batch[first:last], fusion_slice(drawn, slice(first, last), count), module.flags))


# Groups (OneOf, SomeOf, Sequential): build_augmentation writes them as StepGroup modules.
class StepGroup(torch.nn.Module):
    """A group of steps that chooses per sample which of them run: kind "one" (OneOf) runs
    one child, chosen by `weights`; "some" (SomeOf) runs `n` children, chosen uniformly without
    replacement, in their order; "all" (Sequential) runs every child. `p` gates the whole group
    per sample; a chosen child still applies with its own p, and only to the samples that chose
    it (see run_group)."""

    def __init__(self, kind, steps, p=1.0, weights=None, n=1):
        super().__init__()
        self.kind, self.p, self.n = kind, float(p), int(n)
        self.steps = torch.nn.ModuleList(steps)
        self.weights = list(weights) if weights else [1.0] * len(steps)

    def choose_children(self, batch_size):
        """The group's draws for a batch, on the CPU generator: its coin ("batch_prob") and which
        children each sample runs ("selected", batch x children, 0 or 1)."""
        coin = (torch.rand(batch_size) < self.p).float()
        count = len(self.steps)
        if self.kind == "all":
            return {"batch_prob": coin, "selected": torch.ones(batch_size, count)}
        if self.kind == "one":
            weights = torch.tensor(self.weights, dtype=torch.float64).expand(batch_size, count)
            picks = torch.multinomial(weights, 1)
        else:
            picks = torch.rand(batch_size, count).argsort(dim=1)[:, :self.n]
        return {"batch_prob": coin, "selected": torch.zeros(batch_size, count).scatter_(1, picks, 1.0)}

    def forward(self, batch):
        return run_group(self, batch)


def run_group(group, batch, records=None):
    """Run a StepGroup on a float NCHW batch: each child on the samples that chose it (and
    passed the group's coin), in the group's order. Appends to `records` the group's draws and
    `steps`, its children's records for the whole batch (a child's values NaN and its
    batch_prob 0 where it did not run)."""
    drawn = group.choose_children(batch.shape[0])
    runs = drawn["selected"] * drawn["batch_prob"][:, None]
    children = []
    for k, child in enumerate(group.steps):
        index = runs[:, k].nonzero().flatten()
        child_records = [] if records is not None else None
        if len(index) == batch.shape[0]:  # (a child that changes the size runs so: image by image, PER_IMAGE)
            batch = apply_steps([child], batch, child_records)
        elif len(index):
            rows = index.to(batch.device)
            batch = batch.index_copy(0, rows, apply_steps([child], batch.index_select(0, rows), child_records))
        if records is not None:
            children.append(spread_record(child_records[0], index, batch.shape[0]) if len(index)
                            else empty_record(child, batch.shape[0]))
    if records is not None:
        records.append({"batch_prob": drawn["batch_prob"].numpy(), "selected": drawn["selected"].numpy(),
                        "steps": children})
    return batch


def spread_record(record, index, size):
    """A record of the samples `index` as a record of the whole batch of `size` samples."""
    out = {}
    for key, value in record.items():
        if key == "steps":
            out[key] = [spread_record(child, index, size) for child in value]
            continue
        if value.ndim == 0 or value.shape[0] != len(index):  # not per sample (ColorJiggle's op order)
            continue
        full = np.full((size, *value.shape[1:]), 0.0 if key in ("batch_prob", "selected") else np.nan)
        full[index.numpy()] = value
        out[key] = full
    return out


def empty_record(module, size):
    """The record of a step (or group) that no sample of the batch ran."""
    if hasattr(module, "choose_children"):
        return {"batch_prob": np.zeros(size), "selected": np.zeros((size, len(module.steps))),
                "steps": [empty_record(child, size) for child in module.steps]}
    return {"batch_prob": np.zeros(size)}


def run_kernels(arguments, plans, batch, torch_compile):
    """The kernels of `plans` applied in turn to `batch`, each with its `arguments` (the plan's
    own, or cut to the batch's chunk). A uint8 batch stays uint8 through the first steps that
    runs_on_levels, which write only into levels a kernel before made (`batch` may be the caller's),
    through the colour steps that start a colour run (colours_on_levels: ColorJitters and lookup
    tables, OpenCV on each image's levels, a new batch), the fused geometric runs that OpenCV can
    resample (resample_levels) and the blurs and greys that filter_on_levels takes; it is converted
    before the first other step (uint8 comes back where every step ran on levels: see apply_steps)."""
    given = batch
    for (kernel, *_), kernel_arguments in zip(plans, arguments):
        if kernel is run_step and runs_on_levels(kernel_arguments[0], batch):
            # (levels a kernel before made may be written into: a flip flips their rows in place)
            batch = run_step(batch, *kernel_arguments[:2], owned=not shares_memory(batch, given))
            continue
        if kernel is run_step and filter_on_levels(kernel_arguments[0], batch):
            batch = filter_levels(batch, *kernel_arguments[:2])
            continue
        if kernel is fused_colour:
            batch, kernel_arguments = colours_on_levels(batch, kernel_arguments)
            if not kernel_arguments[0]:  # every step of the run ran on levels
                continue
        if kernel is fused_resample:
            resampled = resample_levels(batch, *kernel_arguments)
            if resampled is not None:
                batch = resampled
                continue
        batch = as_unit(batch)
        # On a CPU torch.compile's grid_sample (gathers) is slower than ATen's vectorised one
        # and the grid is already built in place: only colour runs are compiled there.
        compiled = torch_compile and (kernel is fused_colour or batch.device.type != "cpu")
        batch = run_kernel(kernel, compiled, batch, *kernel_arguments)
    return batch


# torch.compile's compiled functions, and whether it failed here once (then every run is eager).
COMPILED_KERNELS = {"functions": {}, "unavailable": False}


def run_kernel(function, torch_compile, *args):
    """function(*args), through torch.compile when `torch_compile` (fixed shapes: each new shape
    compiles once more). Where torch.compile cannot work here (no compiler, an unsupported
    platform or version) it warns once and runs the function as it is."""
    if not torch_compile or COMPILED_KERNELS["unavailable"]:
        return function(*args)
    compiled = COMPILED_KERNELS["functions"]
    if function not in compiled:
        compiled[function] = torch.compile(function, dynamic=False)
    try:
        return compiled[function](*args)
    except Exception as exc:  # torch.compile's failures have no common type: any of them means eager
        COMPILED_KERNELS["unavailable"] = True
        warnings.warn(f"torch.compile is unavailable here ({type(exc).__name__}: {exc}); running without it",
                      RuntimeWarning, stacklevel=2)
        return function(*args)


def place(augmentation, device):
    """The chain's modules on `device`, drawing their random values on the CPU generator: the
    same draws on every device, and no step mixes CPU and GPU tensors (Kornia keeps some of
    its draws on the CPU whatever the device: MixUp's pairs, RandAugment's magnitudes)."""
    augmentation = augmentation.to(device)
    for module in augmentation.modules():
        if hasattr(module, "set_rng_device_and_dtype"):
            module.set_rng_device_and_dtype(torch.device("cpu"), torch.get_default_dtype())
    if torch.device(device).type == "cpu":
        keep_freed_memory()
    return augmentation


def keep_freed_memory(limit=1 << 30):
    """Have the C library's malloc keep the memory a CPU run frees for the next batch, up to `limit`
    bytes per block, instead of handing it back to the system (glibc's mallopt: M_MMAP_THRESHOLD and
    M_TRIM_THRESHOLD). Returns whether the library took it (False off glibc: macOS, Windows).

    A batch's float tensors are megabytes each, above glibc's threshold for mapping memory of its
    own: every batch mapped fresh pages and the kernel zeroed each on first touch (25,101 page faults,
    61 ms against 33 for Resize, CenterCrop, Normalize of 128 images on 2 cores: bench/cpu_kernels.py). The
    process then keeps its peak heap for reuse, as PyTorch's tuning guide's jemalloc or tcmalloc would.
    Example: keep_freed_memory() is True on Linux with glibc."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):  # no mallopt here (macOS), or no C library by name (Windows)
        return False
    # (mallopt's parameter numbers: M_TRIM_THRESHOLD -1, M_MMAP_THRESHOLD -3.)
    return bool(mallopt(-3, int(limit))) and bool(mallopt(-1, int(limit)))


def on_device(params, device, dtype=None):
    """Sampled parameters (a dict of tensors, or a policy's list of Kornia ParamItems) on `device`;
    floating-point tensors in `dtype` when given."""
    if torch.is_tensor(params):
        cast = dtype if dtype is not None and params.is_floating_point() else params.dtype
        return params.to(device, cast, non_blocking=True)
    if isinstance(params, dict):
        return {key: on_device(value, device, dtype) for key, value in params.items()}
    if isinstance(params, list):
        return [on_device(item, device, dtype) for item in params]
    if isinstance(params, tuple) and hasattr(params, "_replace"):  # kornia's ParamItem(name, data)
        return params._replace(data=on_device(params.data, device, dtype))
    return params


def as_unit(batch):
    """A batch as float32 in [0, 1]: uint8 levels divided by 255 into a contiguous NCHW tensor
    (whatever the levels' memory layout: augment_images stacks HxWx3 images as they lie), a
    float batch as it is."""
    if batch.dtype != torch.uint8:
        return batch
    return torch.empty(batch.shape, dtype=torch.float32, device=batch.device).copy_(batch).div_(255.0)


def to_float(images, device):
    """uint8 NCHW (or CHW) on any device -> float32 in [0, 1] on `device`."""
    return as_unit(images.to(device, non_blocking=True))


# Kornia's bookkeeping entries, not sampled values.
_NOT_SAMPLED = ("forward_input_shape",)


def sampled_params(module, params=None):
    """The values `module` drew for its last batch (or `params`, what it was given), as numpy
    arrays with the batch first."""
    params = module._params if params is None else params
    if isinstance(params, list):  # a kornia.augmentation.auto policy
        return policy_params(module, params)
    return {k: v.detach().cpu().numpy() for k, v in params.items() if k not in _NOT_SAMPLED}


def policy_params(policy, params=None):
    """What a policy (RandAugment, TrivialAugment, AutoAugment) chose for its last batch, per
    sample: the position of each chosen candidate ("policy_choice"; Kornia chooses once per
    batch), whether each op of those ran ("op_applied") and the magnitude it used
    ("op_magnitude": its sampled value, NaN for ops without one)."""
    positions = [name for name, _ in policy.named_children()]
    choice, applied, magnitudes = [], [], []
    for item in policy._params if params is None else params:
        candidate = policy.get_submodule(item.name)
        choice.append(positions.index(item.name))
        for op_item in item.data:
            gate = op_item.data["batch_prob"].float()
            factor = candidate.get_submodule(op_item.name)._factor_name
            value = op_item.data[factor].float() if factor else torch.full_like(gate, float("nan"))
            applied.append(gate)
            magnitudes.append(value.reshape(gate.shape))
    count = applied[0].shape[0]
    return {"batch_prob": np.ones(count, np.float32), "policy_choice": np.tile(np.asarray(choice), (count, 1)),
            "op_applied": torch.stack(applied, 1).cpu().numpy(),
            "op_magnitude": torch.stack(magnitudes, 1).cpu().numpy()}


# Steps that blend samples of one batch (MixUp, CutMix): they mix the labels too.
MIXING_MODULES = (K.RandomMixUpV2, K.RandomCutMixV2)


def mix_draws(module, params=None):
    """A mixing step's per-sample draws (from its last batch, or `params`): `partner` (batch
    index), `weight` (the partner's share of image and label) and, for CutMix, the pasted `box`
    [x0, y0, x1, y1) in pixels; for the choice of the two (WbTorchvisionMixUpOrCutMix), `choice`
    (0 MixUp, 1 CutMix) and a box either way."""
    params = module._params if params is None else params
    draws = {"batch_prob": params["batch_prob"]}
    if "choice" in params:  # one of MixUp and CutMix per batch: which, and a box for either (MixUp's empty)
        draws["choice"] = params["choice"]
    if "mixup_pairs" in params:
        draws.update(partner=params["mixup_pairs"], weight=params["mixup_lambdas"])
        if "choice" in params:
            draws["box"] = torch.zeros((len(params["mixup_pairs"]), 4), dtype=torch.float32)
        return draws
    # CutMix, one box per sample (num_mix=1); far corners are inclusive, so an empty box has size 0.
    corners = params["crop_src"][0]
    x0, y0 = corners[:, 0, 0], corners[:, 0, 1]
    width, height = corners[:, 1, 0] - x0 + 1, corners[:, 2, 1] - y0 + 1
    draws.update(partner=params["mix_pairs"][0],
                 weight=width * height / (params["image_shape"][0] * params["image_shape"][1]),
                 box=torch.stack([x0, y0, x0 + width, y0 + height], dim=1))
    return draws


def mix_labels(labels, draws):
    """Soft targets mixed as the images were: (1 - w) * own + w * the partner's, w = 0 for
    samples the step left alone."""
    weight = (draws["weight"] * draws["batch_prob"]).to(labels.device, labels.dtype)[:, None]
    return labels * (1 - weight) + labels.index_select(0, draws["partner"].to(labels.device)) * weight


def soft_targets(labels, num_classes=None):
    """Labels as float32 soft targets, one row per sample: class ids become one-hot rows (as many
    classes as the largest id + 1 unless `num_classes`); (N, C) rows are taken as they are."""
    labels = torch.as_tensor(np.asarray(labels) if not torch.is_tensor(labels) else labels)
    if labels.dim() == 2:
        return labels.float()
    count = int(labels.max()) + 1 if num_classes is None else num_classes
    return torch.nn.functional.one_hot(labels.long(), count).float()


def mixes_batch(augmentation):
    """Whether any step blends samples of the batch (then labels become mixed soft targets)."""
    return any(isinstance(module, MIXING_MODULES) for module in augmentation)


# ---------------------------------------------------------------------------------------
# Training loader. Worker processes read the files. With the PIL decoder (the default on the
# CPU) they decode them too, and batches are pinned and copied ahead to the GPU. With a GPU
# decoder (the default on CUDA: nvImageCodec, else torchvision) they only read JPEG bytes,
# and the main process decodes each batch's JPEGs on the GPU in one call. A chain that starts
# with RandomResizedCrop crops a batch of mixed sizes in one batched op, not image by image.
# The files are a folder's (ImageFolderDataset) or the samples of WebDataset tar shards
# (TarShardDataset), which shuffle, shard by rank and decode in the same way.
# ---------------------------------------------------------------------------------------
class ImageFolderDataset(Dataset):
    """Image files under `root` (recursive, name order); the label is the index of the
    first-level sub-folder (ImageFolder layout), 0 for files directly in `root`. With
    `annotations` (loader_annotations: a COCO file and/or a mask folder), the annotated files
    only, each labelled with its targets as read (sample_targets), to be moved after the chain.

    An item is (image, label, skipped). A file that cannot be decoded is a BadImageError naming
    it; with `skip_bad` the next readable file (and its label) takes its place, and `skipped`
    names the files passed over. `exclude`: an exclusion list (see read_exclusions) of files to
    leave out; `index`: an index file of the folder (`workbench index`) instead of listing it.
    Items are asked for by EpochSampler's (index, epoch, batch) or by index."""

    def __init__(self, root, annotations=None, skip_bad=False, exclude=None, index=None):
        self.root, self.annotations, self.skip_bad = Path(root), annotations, skip_bad
        files = training_files(self.root, index, None if annotations is None else annotations["files"])
        self.files = without_excluded(files, self.root, exclude)
        if annotations is not None and len(self.files) != len(files):
            raise ValueError("--exclude with --coco/--masks: leave the files out of the annotations instead")
        if not len(self.files):
            raise FileNotFoundError(f"no image files under {self.root}")
        # Numpy arrays, not a list per file: workers read them without copying them (file_table.py).
        self.classes, self.labels = self.files.classes, self.files.labels

    def __len__(self):
        return len(self.files)

    def label(self, i):
        """Sample i's class id, or its targets when the dataset is annotated."""
        return int(self.labels[i]) if self.annotations is None else sample_targets(self.annotations, i)

    def name(self, i):
        """How errors and reports name sample i: its file."""
        return str(self.files[i])

    def encoded(self, i):
        """Sample i's image as a file to open (its header gives its size: batch_megabytes)."""
        return self.files[i]

    def decoded(self, i):
        """Sample i's image (uint8 CHW) and label; a BadImageError where it cannot be decoded."""
        return torch.from_numpy(decode_checked(self.files[i], self.name(i))).permute(2, 0, 1).contiguous(), \
            self.label(i)

    def __getitem__(self, item):
        return readable_item(self, item)


def readable_item(dataset, item):
    """An item of a PIL-decoding dataset (ImageFolderDataset, TarShardDataset): (image, label,
    skipped) of its `decoded` sample, or with its `skip_bad` of the next readable one (readable)."""
    i = sample_index(item)
    if not dataset.skip_bad:
        return (*dataset.decoded(i), ())
    (image, label), skipped = readable(dataset.decoded, i, len(dataset))
    return image, label, skipped


# Every JPEG file starts with these bytes (the start-of-image marker, then another marker).
JPEG_SIGNATURE = bytes([0xFF, 0xD8, 0xFF])


class EncodedImageFolderDataset(ImageFolderDataset):
    """The same files and labels, for decoding on the GPU: a JPEG file comes back undecoded,
    its exact bytes as a 1-D uint8 tensor, to be decoded with its whole batch; other formats
    (PNG, TIFF, ...), which the GPU decoders do not take, are decoded here with PIL (uint8 CHW),
    and so is a JPEG cut short (no end marker: a GPU decoder may fill its missing rows without
    a word, where PIL names it as unreadable, see ImageFolderDataset)."""

    def __getitem__(self, item):
        i = sample_index(item)
        data = np.fromfile(self.files[i], dtype=np.uint8)
        if data[:3].tobytes() != JPEG_SIGNATURE or not ends_whole(data, "JPEG"):
            return (*super().__getitem__(item), None)
        return torch.from_numpy(data), self.label(i), (), self.name(i)


class TarShardDataset(Dataset):
    """The samples of WebDataset tar shards (`shards`: a pattern, see shard_paths), in shard
    order: each sample's image decoded with PIL as decode_image decodes a file, its label the
    class id in its .cls member (0 without one). The shards' headers are read once, here
    (index_shards); each item is then one read at its offset, so that the samples shuffle and
    shard by rank exactly as a folder's files do (EpochSampler)."""

    def __init__(self, shards, skip_bad=False, exclude=None):
        self.shards, self.skip_bad, excluded = shard_paths(shards), skip_bad, read_exclusions(exclude)
        keys, labels, locations = [], [], []
        for k, samples in enumerate(index_shards(self.shards)):
            for key, (_, offset, size), label, _ in samples:
                if shard_sample_name(self.shards[k], key) in excluded:
                    continue
                keys.append(key)
                labels.append(label)
                locations.append((k, offset, size))
        # Arrays, not a Python object per sample: forked worker processes keep sharing their memory,
        # where reading a list's items would copy their pages (touching their reference counts).
        self.keys, self.labels = Strings.of(keys), np.array(labels, dtype=np.int64)
        self.locations = np.array(locations, dtype=np.int64)
        # The class ids are the columns of a mixing step's soft targets: 0 up to the largest.
        self.classes = list(range(int(self.labels.max()) + 1))
        self.annotations = None  # targets come with a folder of images only (see loader_annotations)
        # No file per sample that could be named: an error at a batch of several sizes names the
        # samples by their position in the batch (check_one_size).
        self.files = []

    def __len__(self):
        return len(self.keys)

    def read(self, i):
        """Sample i's image member: its bytes as a 1-D uint8 array."""
        shard, offset, size = self.locations[i].tolist()
        return read_member(self.shards[shard], offset, size)

    def name(self, i):
        """How errors and reports name sample i: SHARD_FILE_NAME:KEY."""
        return shard_sample_name(self.shards[int(self.locations[i][0])], self.keys[i])

    def encoded(self, i):
        """Sample i's image as a file object to open (its header gives its size: batch_megabytes)."""
        return BytesIO(self.read(i).tobytes())

    def decoded(self, i):
        """Sample i's image (uint8 CHW) and label; a BadImageError where it cannot be decoded."""
        return decode_bytes_with_pil(torch.from_numpy(self.read(i)), self.name(i)), int(self.labels[i])

    def __getitem__(self, item):
        return readable_item(self, item)


class EncodedTarShardDataset(TarShardDataset):
    """The same samples, for decoding on the GPU as EncodedImageFolderDataset's files: a JPEG
    comes back undecoded (its bytes as a 1-D uint8 tensor), other formats (and a JPEG cut short)
    decoded with PIL."""

    def __getitem__(self, item):
        i = sample_index(item)
        data = torch.from_numpy(self.read(i))
        if data[:3].numpy().tobytes() != JPEG_SIGNATURE or not ends_whole(data.numpy(), "JPEG"):
            return (*super().__getitem__(item), None)
        return data, int(self.labels[i]), (), self.name(i)


def collate_uint8(batch):
    """Stack same-size images into one uint8 NCHW tensor (a list when sizes differ); the labels
    (collate_labels) and the files skipped for the batch (--skip-bad), as (name, problem)."""
    images, labels, skipped = zip(*batch)
    if len({tuple(i.shape) for i in images}) == 1:
        images = torch.stack(images)
    return images, collate_labels(labels), sum(skipped, ())


def collate_labels(labels):
    """Class ids as one tensor; targets (an annotated dataset's dicts of arrays) as a list."""
    return list(labels) if isinstance(labels[0], dict) else torch.tensor(labels, dtype=torch.long)


def collate_encoded(batch):
    """A batch of EncodedImageFolderDataset items: the JPEG bytes packed into one uint8 tensor
    with each item's byte count (-1 for an image a worker decoded), those images in a list,
    and the labels as one tensor. One packed tensor crosses from a worker process as one block
    of shared memory, where a tensor per file would cost a block (and a file descriptor) each."""
    payloads, labels, skipped, names = zip(*batch)
    encoded = [payload for payload in payloads if payload.dim() == 1]
    packed = torch.cat(encoded) if encoded else torch.empty(0, dtype=torch.uint8)
    sizes = torch.tensor([payload.numel() if payload.dim() == 1 else -1 for payload in payloads])
    decoded = [payload for payload in payloads if payload.dim() != 1]
    return (packed, sizes, decoded, names), collate_labels(labels), sum(skipped, ())


def unpack_payloads(batch):
    """collate_encoded's (packed bytes, sizes, decoded images, names) as one payload per item,
    in order: a view of the packed bytes per JPEG, the decoded image otherwise."""
    packed, sizes, decoded, _ = batch
    payloads, start, images = [], 0, iter(decoded)
    for size in sizes.tolist():
        if size < 0:
            payloads.append(next(images))
        else:
            payloads.append(packed[start:start + size])
            start += size
    return payloads


def seed_worker(worker_id):
    """Seed numpy and random in each DataLoader worker from torch's per-worker seed."""
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


# The loader's `decoder` option (--decoder): "auto" decodes JPEGs on the GPU when the device is
# CUDA and a GPU decoder imports (nvImageCodec first, then torchvision), with PIL otherwise.
DECODERS = ("auto", "pil", "nvimgcodec", "torchvision")
GPU_DECODER_PACKAGES = {"nvimgcodec": "nvidia-nvimgcodec-cu12 or -cu13 (NVIDIA DALI installs it)",
                        "torchvision": "the torchvision built for this torch and CUDA"}


def gpu_decoder_imports(name):
    """Whether the GPU decoder `name` ("nvimgcodec" or "torchvision") imports here."""
    try:
        if name == "nvimgcodec":
            from nvidia import nvimgcodec  # noqa: F401
        else:
            from torchvision.io import decode_jpeg  # noqa: F401
    except (ImportError, OSError, RuntimeError):  # a torchvision built for another torch raises the latter two
        return False
    return True


def resolve_decoder(decoder, device):
    """The decoder the training loader uses on `device`: "pil", "nvimgcodec" or "torchvision".

    "auto" takes a GPU decoder on CUDA when one imports, PIL otherwise. A GPU decoder named
    outright needs a CUDA device and its package: without them this says so (ValueError,
    ImportError) rather than quietly decoding another way.
    """
    if decoder not in DECODERS:
        raise ValueError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
    device = torch.device(device)
    if decoder == "pil":
        return decoder
    if decoder == "auto":
        if device.type != "cuda":
            return "pil"
        return next((name for name in ("nvimgcodec", "torchvision") if gpu_decoder_imports(name)), "pil")
    if device.type != "cuda":
        raise ValueError(f"decoder {decoder!r} decodes on a CUDA device, but the device is {device}; "
                         "use decoder 'pil' or 'auto' there")
    if not gpu_decoder_imports(decoder):
        raise ImportError(f"decoder {decoder!r} does not import here: install {GPU_DECODER_PACKAGES[decoder]}, "
                          "or use decoder 'pil' (or 'auto', which falls back to it)")
    return decoder


# Said once a process (see pil_decoder).
PIL_ON_CUDA_WARNED = []


def pil_decoder(decoder, device):
    """resolve_decoder in an export made without GPU decoding (gpu_decode=False): PIL, in the
    worker processes, on every device; a GPU decoder asked for by name says how to export one,
    and "auto" on CUDA says once that one would decode there."""
    if decoder not in DECODERS:
        raise ValueError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
    if decoder not in ("auto", "pil"):
        left_out("gpu_decode")()
    if decoder == "auto" and torch.device(device).type == "cuda" and not PIL_ON_CUDA_WARNED:
        PIL_ON_CUDA_WARNED.append(device)
        warnings.warn("JPEGs decode with PIL in the worker processes: this script was exported without GPU "
                      "decoding; export it with gpu_decode=True (`workbench export ... --gpu-decode`) to decode them "
                      "on the GPU (nvImageCodec or torchvision), or pass --decoder pil to say PIL is meant",
                      RuntimeWarning, stacklevel=2)
    return "pil"


# Smooth ("fancy") chroma upsampling, as PIL (libjpeg) does: with it nvImageCodec's CPU decoder
# gives PIL's pixels exactly (tested), the GPU's within a level or two.
NVIMGCODEC_OPTIONS = ":fancy_upsampling=1"


def nvimgcodec_params():
    """nvImageCodec's decode parameters for what decode_image gives: interleaved 8-bit sRGB
    (HWC, 3 channels) and no EXIF rotation."""
    from nvidia import nvimgcodec

    return nvimgcodec.DecodeParams(apply_exif_orientation=False, color_spec=nvimgcodec.ColorSpec.SRGB,
                                   allow_any_depth=False, sample_format=nvimgcodec.SampleFormat.I_RGB)


def nvimgcodec_jpeg_decoder(device):
    """A function decoding a list of JPEG byte tensors on the CUDA `device` with nvImageCodec in
    one batched call: uint8 RGB CHW tensors on `device`, None for files it could not decode."""
    from nvidia import nvimgcodec

    index = device.index if device.index is not None else torch.cuda.current_device()
    decoder = nvimgcodec.Decoder(device_id=index, options=NVIMGCODEC_OPTIONS)
    params = nvimgcodec_params()

    def decode(encoded):
        # On torch's current stream: the augmentation queued next runs after the decoding, and
        # nvImageCodec frees each image (when its tensor goes) in that same stream order.
        stream = torch.cuda.current_stream(device).cuda_stream
        streams = [nvimgcodec.CodeStream(data.numpy()) for data in encoded]
        images = decoder.decode(streams, params=params, cuda_stream=stream)
        # Each image is HWC uint8 in GPU memory that the tensor shares (no copy).
        return [None if image is None else torch.as_tensor(image, device=device).permute(2, 0, 1)
                for image in images]

    return decode


def torchvision_jpeg_decoder(device):
    """A function decoding a list of JPEG byte tensors on the CUDA `device` with torchvision's
    nvJPEG decoder in one batched call: uint8 RGB CHW tensors, None for files it refused."""
    from torchvision.io import ImageReadMode, decode_jpeg

    def decode_one(data):
        try:
            return decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
        except RuntimeError:
            return None

    def decode(encoded):
        # torchvision allocates the outputs on torch's current stream but nvJPEG writes them on a
        # stream of its own that does not wait for it: memory the caching allocator hands back
        # may still be read by the augmentation queued before (vision PR 9606). Wait for it.
        torch.cuda.current_stream(device).synchronize()
        try:
            return decode_jpeg(encoded, mode=ImageReadMode.RGB, device=device)
        except RuntimeError:
            # One file nvJPEG refuses (CMYK, corrupt) fails the whole batched call, which returns
            # nothing: decode this batch file by file so that only that file goes to PIL.
            return [decode_one(data) for data in encoded]

    return decode


def decode_bytes_with_pil(data, name="a file of this batch"):
    """A file's bytes (1-D uint8 tensor) decoded as the PIL loader decodes the file: uint8 RGB CHW;
    a BadImageError naming it (`name`) where PIL cannot decode it."""
    return torch.from_numpy(decode_checked(BytesIO(data.numpy().tobytes()), name)).permute(2, 0, 1).contiguous()


def is_rgb_image(image):
    """Whether a decoder's output is what decode_image gives: 3-channel uint8 CHW."""
    return image is not None and image.dim() == 3 and image.shape[0] == 3 and image.dtype == torch.uint8


# Said once a process: a GPU decoder that refuses most files (nvImageCodec without its nvJPEG plugin
# returns None for every one) leaves PIL decoding in the main process, silently slow otherwise.
GPU_DECODE_REFUSALS_WARNED = []


def decode_batch(payloads, decode, device, names=None, skip_bad=False):
    """A batch of EncodedImageFolderDataset payloads as uint8 images on `device`, and the
    positions of the unreadable ones (see below).

    The JPEG byte tensors go to `decode` (a GPU decoder: one call for the batch); any file it
    could not decode is decoded with PIL instead, and the images the workers decoded are moved.
    Images: one uint8 NCHW tensor when every size agrees, else a list of CHW tensors. A file PIL
    cannot decode either is a BadImageError naming it (`names`: each payload's), or with
    `skip_bad` takes a copy of the batch's first readable image ({position: problem} of those).
    """
    images, bad = list(payloads), {}
    names = names or [None] * len(payloads)
    encoded = [i for i, payload in enumerate(payloads) if payload.dim() == 1]
    if encoded:
        refused = 0
        for i, image in zip(encoded, decode([payloads[i] for i in encoded])):
            refused += not is_rgb_image(image)
            try:
                images[i] = image if is_rgb_image(image) else decode_bytes_with_pil(payloads[i], names[i])
            except BadImageError as error:
                if not skip_bad:
                    raise
                bad[i] = error.problem
        if refused * 2 > len(encoded) and not GPU_DECODE_REFUSALS_WARNED:
            GPU_DECODE_REFUSALS_WARNED.append(refused)
            warnings.warn(f"the GPU decoder refused {refused} of the {len(encoded)} JPEGs in a batch; PIL decoded "
                          "them one by one in the main process, which is slow. nvImageCodec needs its nvJPEG "
                          "plugin (pip install nvidia-nvjpeg-cu13, or nvidia-nvjpeg-cu12 for CUDA 12); or choose "
                          "--decoder torchvision or pil", RuntimeWarning, stacklevel=2)
    if bad:
        good = next((i for i in range(len(images)) if i not in bad), None)
        if good is None:
            raise BadImageError(f"no file of a batch of {len(images)} can be decoded (the first: {names[min(bad)]})")
        images = [images[good] if i in bad else image for i, image in enumerate(images)]
    images = [image.to(device, non_blocking=True) for image in images]
    return (torch.stack(images) if len({tuple(image.shape) for image in images}) == 1 else images), bad


class GpuDecodingLoader:
    """A DataLoader over EncodedImageFolderDataset whose batches are decoded on the GPU as they
    come: it yields (images on `device`, labels) as the PIL loader yields them on the CPU.
    `dataset` and `sampler` are the DataLoader's (EpochSampler: set_epoch, shards by rank).
    With `ahead`, a thread decodes the next batch while the caller works on this one (the
    decoder's host wait then overlaps the augmentation's kernel launches); the same batches come
    in the same order."""

    def __init__(self, loader, decode, device, decoder, ahead=False, skip_bad=False):
        self.loader, self.decode, self.device, self.decoder = loader, decode, torch.device(device), decoder
        self.ahead, self.skip_bad = ahead, skip_bad

    @property
    def dataset(self):
        return self.loader.dataset

    @property
    def sampler(self):
        return self.loader.sampler

    def decoded(self, payloads, labels, skipped):
        """One batch decoded: (images, labels, skipped), a file PIL cannot decode either (see
        decode_batch) replaced, label and all, by the batch's first readable one."""
        names = payloads[3]
        images, bad = decode_batch(unpack_payloads(payloads), self.decode, self.device, names, self.skip_bad)
        if bad:
            good = next(i for i in range(len(names)) if i not in bad)
            labels = labels.clone() if torch.is_tensor(labels) else list(labels)
            for i in bad:
                labels[i] = labels[good]
            skipped = skipped + tuple((names[i], problem) for i, problem in bad.items())
        return images, labels_to(labels, self.device), skipped

    def __iter__(self):
        batches = (self.decoded(*batch) for batch in self.loader)
        if not self.ahead:
            yield from batches
            return
        # One thread advances `batches`, one batch at a time: the order stays the loader's. Both
        # threads use the device's default stream, so the decoded images are ready in stream order.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode-ahead") as pool:
            pending = pool.submit(next, batches, None)
            while (batch := pending.result()) is not None:
                pending = pool.submit(next, batches, None)
                yield batch

    def __len__(self):
        return len(self.loader)


def labels_to(labels, device):
    """A batch's labels on `device`: class ids (a tensor) moved; targets (a list) stay on the host,
    where they are moved through the chain's draws (see training_batches)."""
    return labels.to(device, non_blocking=True) if torch.is_tensor(labels) else labels


def make_loader(root=None, batch_size=64, workers=4, seed=SEED, device="cpu", num_samples=None, decoder="auto",
                shards=None, coco=None, masks=None, decode_ahead=False, skip_bad=False, exclude=None, index=None,
                max_prefetch_mb=None):
    """Loader over an image folder (`root`) or WebDataset tar shards (`shards`, e.g.
    "train-{0000..0099}.tar": see shard_paths and TarShardDataset), one of the two: shuffled
    (seeded), sharded by rank under torchrun, reading on `workers` processes. With the PIL
    decoder (see resolve_decoder) the workers decode and a DataLoader with pinned memory (when
    the GPU is used) comes back; with a GPU decoder, a GpuDecodingLoader that decodes each
    batch's JPEGs on `device` in one call.

    Each epoch's order is drawn from (seed, epoch) alone (EpochSampler; the training loop calls
    its set_epoch), so that a run can resume at any batch. Under torchrun each rank takes a
    disjoint 1/world_size of it: together the ranks see every sample once per epoch. When the
    count does not divide by world_size, the sampler repeats a few samples so that every rank has
    as many; each rank then drops its last incomplete batch (drop_last). For exactly once, make
    the count a multiple of world_size x batch_size.
    Batches are (images, labels, skipped). `skip_bad`: a file that cannot be decoded gives its
    place to the next readable one (`skipped` names it), where it would stop the loader with a
    BadImageError naming it; `exclude`: an exclusion list of files to leave out (read_exclusions);
    `index`: the folder's index file (`workbench index`), read instead of listing the folder.
    Each worker keeps PREFETCH_BATCHES batches ready, fewer (then fewer workers) to hold at most
    `max_prefetch_mb` MB (prefetch_plan); `loader.prefetch` says what it holds.
    `num_samples` draws that many samples with replacement (for benchmarks on small folders).
    `coco`, `masks`: a folder's annotated images only, labelled with their targets (see
    ImageFolderDataset and training_batches). `decode_ahead`: a GPU decoder decodes the next
    batch on a thread while this one is augmented (see GpuDecodingLoader; off by default: it
    measured 0.79x the plain loader on an H100).
    """
    if (root is None) == (shards is None):
        raise ValueError("give the training images as a folder (root) or as WebDataset tar shards (shards=), "
                         "one of the two")
    annotations = None if coco is None and masks is None else loader_annotations(root, coco, masks, TARGETS_REFUSED,
                                                                                  shards)
    decoder = resolve_decoder(decoder, device)
    on_gpu = decoder != "pil"
    if shards is not None:
        dataset = (EncodedTarShardDataset if on_gpu else TarShardDataset)(shards, skip_bad, exclude)
    else:
        dataset = (EncodedImageFolderDataset if on_gpu else ImageFolderDataset)(root, annotations, skip_bad, exclude,
                                                                                index)
    rank, world_size, _ = distributed_context()
    generator = torch.Generator().manual_seed(seed)  # the workers' base seed
    sampler = EpochSampler(dataset, batch_size, seed, rank, world_size, num_samples)
    batch_mb = batch_megabytes([dataset.encoded(k) for k in range(min(SIZE_LOOKS, len(dataset)))], batch_size)
    workers, factor = prefetch_plan(workers, batch_mb, max_prefetch_mb)
    # Pinned for the copy to the GPU; file bytes go to the GPU decoder, which stages them itself.
    pinned = torch.device(device).type == "cuda" and not on_gpu
    loader = DataLoader(
        dataset, batch_size=batch_size, sampler=sampler, num_workers=workers,
        collate_fn=collate_encoded if on_gpu else collate_uint8, pin_memory=pinned, drop_last=True,
        worker_init_fn=seed_worker, generator=generator, persistent_workers=workers > 0, prefetch_factor=factor,
    )
    loader.prefetch = prefetch_line(workers, factor, batch_mb, pinned)
    if not on_gpu:
        return loader
    device = torch.device(device)
    decode = nvimgcodec_jpeg_decoder(device) if decoder == "nvimgcodec" else torchvision_jpeg_decoder(device)
    return GpuDecodingLoader(loader, decode, device, decoder, ahead=decode_ahead, skip_bad=skip_bad)


class CudaPrefetcher:
    """Iterate a loader while the next batch is already being copied to the GPU on a side
    stream; on the CPU it simply moves batches to `device`."""

    def __init__(self, loader, device):
        self.loader, self.device = loader, torch.device(device)

    def _to_device(self, batch):
        images, labels, skipped = batch

        def move(t):
            return t.to(self.device, non_blocking=True)

        images = move(images) if torch.is_tensor(images) else [move(i) for i in images]
        return images, labels_to(labels, self.device), skipped

    def __iter__(self):
        if self.device.type != "cuda":
            for batch in self.loader:
                yield self._to_device(batch)
            return
        stream = torch.cuda.Stream(self.device)
        batches = iter(self.loader)
        upcoming = None
        for batch in batches:
            with torch.cuda.stream(stream):
                ready = self._to_device(batch)
            if upcoming is not None:
                yield upcoming
            torch.cuda.current_stream(self.device).wait_stream(stream)
            tensors = (ready[0] if isinstance(ready[0], list) else [ready[0]]) + [ready[1]]
            for t in filter(torch.is_tensor, tensors):  # (targets stay on the host: see labels_to)
                t.record_stream(torch.cuda.current_stream(self.device))
            upcoming = ready
        if upcoming is not None:
            yield upcoming

    def __len__(self):
        return len(self.loader)


def resized_crop_windows(heights, widths, generator=None):
    """One RandomResizedCrop window per image of the given sizes, for the whole batch at once:
    an (N, 4) int64 tensor of [x0, y0, width, height] in pixels.

    Drawn as Kornia's RandomResizedCrop draws a batch of one size (same draws, same windows
    there): 10 attempts per image of an area fraction uniform in RESIZED_CROP's `scale` and a
    log aspect ratio (width / height) uniform in log(`ratio`), sides rounded; the first that
    fits inside the image wins. If none fits: the whole image, cut to the nearest aspect ratio
    in `ratio`. Then a start uniform over the positions that keep the window inside. The values
    come from torch's CPU `generator` (default: the global one, seeded per rank and epoch).
    """
    count = len(heights)
    image_h = torch.as_tensor(heights, dtype=torch.float32)
    image_w = torch.as_tensor(widths, dtype=torch.float32)
    scale = torch.tensor(RESIZED_CROP["scale"], dtype=torch.float32)
    ratio = torch.tensor(RESIZED_CROP["ratio"], dtype=torch.float32)
    fraction = torch.rand((count, 10), generator=generator) * (scale[1] - scale[0]) + scale[0]
    area = fraction * image_h[:, None] * image_w[:, None]
    low, high = torch.log(ratio[0]), torch.log(ratio[1])
    aspect = torch.exp(low + torch.rand((count, 10), generator=generator) * (high - low))
    width = torch.sqrt(area * aspect).round()
    height = torch.sqrt(area / aspect).round()
    fits = (width > 0) & (width <= image_w[:, None]) & (height > 0) & (height <= image_h[:, None])
    # The first attempt that fits: the count of misses before it (no argmax: its choice among
    # ties is not specified on every device).
    first = (fits.int().cumsum(1) == 0).sum(1).clamp(max=9)[:, None]
    found = fits.any(1)
    # The fallback, as torchvision's get_params: an image narrower than the narrowest ratio keeps
    # its width, one wider than the widest keeps its height, one in between is kept whole.
    shape = torch.as_tensor(widths, dtype=torch.float64) / torch.as_tensor(heights, dtype=torch.float64)
    narrowest, widest = min(RESIZED_CROP["ratio"]), max(RESIZED_CROP["ratio"])
    fallback_h = torch.where(shape < narrowest, torch.round(image_w / narrowest), image_h).floor()
    fallback_w = torch.where(shape > widest, torch.round(image_h * widest), image_w).floor()
    crop_h = torch.where(found, height.gather(1, first)[:, 0], fallback_h).clamp(min=1).minimum(image_h)
    crop_w = torch.where(found, width.gather(1, first)[:, 0], fallback_w).clamp(min=1).minimum(image_w)
    x0 = (torch.rand(count, generator=generator) * (image_w - crop_w + 1)).floor()
    y0 = (torch.rand(count, generator=generator) * (image_h - crop_h + 1)).floor()
    return torch.stack([x0, y0, crop_w, crop_h], dim=1).long()


def window_taps(start, length, out_size, nearest):
    """Along one axis, for each sample and output pixel j: the two source pixels read (lo, hi,
    absolute indices) and hi's weight, as F.interpolate (align_corners=False) computes them on
    the window [start, start + length): position (j + 0.5) * length / out_size - 0.5, clamped
    to the window. "nearest" reads floor((j + 0.5) * length / out_size), as Kornia's
    "nearest-exact" resize does, with weight 0."""
    scale = (length.float() / out_size)[:, None]
    last = (length - 1)[:, None]
    j = torch.arange(out_size, device=length.device, dtype=torch.float32)
    if nearest:
        lo = torch.minimum(((j + 0.5) * scale).floor().long(), last)
        return start[:, None] + lo, start[:, None] + lo, torch.zeros_like(lo, dtype=torch.float32)
    position = ((j + 0.5) * scale - 0.5).clamp(min=0)
    lo = torch.minimum(position.long(), last)
    hi = lo + (lo < last).long()
    weight = (position - lo).clamp(0, 1)
    return start[:, None] + lo, start[:, None] + hi, weight


def resized_crops(images, windows):
    """Crop every uint8 CHW image of a list (sizes may differ, all on one device) to its window
    [x0, y0, width, height] and resize it to RESIZED_CROP's size, all at once: float32 NCHW in
    [0, 1], as Kornia's RandomResizedCrop (slice mode: slice the window, then F.interpolate,
    align_corners=False) gives each image alone, up to float rounding.

    The images are packed into one tensor of pixels, without padding (a huge image costs its own
    pixels only), and each output pixel gathers its 2x2 source pixels there, then blends them
    with the interpolation weights (one gather of 1 pixel for "NEAREST").
    """
    out_h, out_w = RESIZED_CROP["size"]
    nearest = RESIZED_CROP["resample"] == "NEAREST"
    count, channels, device = len(images), images[0].shape[0], images[0].device
    # (all pixels, C): each image's rows one after the other.
    pixels = torch.cat([image.permute(1, 2, 0).reshape(-1, channels) for image in images])
    sizes = torch.tensor([tuple(image.shape[-2:]) for image in images], dtype=torch.long)
    starts = sizes.prod(1).cumsum(0) - sizes.prod(1)
    # Per sample: the window, where its image starts among the pixels, and its row length. One
    # pinned copy: a copy from pageable memory would wait for the GPU's queued work first.
    layout = torch.cat([windows.long(), starts[:, None], sizes[:, 1:]], dim=1)
    if device.type == "cuda":
        layout = layout.pin_memory()
    x0, y0, width, height, offsets, row_length = layout.to(device, non_blocking=True).unbind(1)
    cols_lo, cols_hi, weight_x = window_taps(x0, width, out_w, nearest)
    rows_lo, rows_hi, weight_y = window_taps(y0, height, out_h, nearest)

    def gather(rows, cols):
        """The source pixels at (rows x cols) of each sample: (N, out_h, out_w, C) float in [0, 1]."""
        index = offsets[:, None, None] + rows[:, :, None] * row_length[:, None, None] + cols[:, None, :]
        return pixels.index_select(0, index.reshape(-1)).view(count, out_h, out_w, channels).float().div_(255.0)

    if nearest:
        out = gather(rows_lo, cols_lo)
    else:
        # In F.interpolate's order: blend along x in the upper and lower rows, then along y.
        weight_x, weight_y = weight_x[:, None, :, None], weight_y[:, :, None, None]
        top = gather(rows_lo, cols_lo) * (1 - weight_x) + gather(rows_lo, cols_hi) * weight_x
        bottom = gather(rows_hi, cols_lo) * (1 - weight_x) + gather(rows_hi, cols_hi) * weight_x
        out = top * (1 - weight_y) + bottom * weight_y
    return out.permute(0, 3, 1, 2).contiguous()


def augment_training_batch(augmentation, images, device, labels=None, resize=None, torch_compile=False, records=None,
                           boxes=None):
    """augment_batch as the training loader runs it: a list of mixed-size images whose chain
    starts with RandomResizedCrop is cropped in one batched op (resized_crop_windows, then
    resized_crops), then the other steps run on the batch; anything else goes to augment_batch.
    `resize` (height, width): see augment_resized; `torch_compile`: see apply_steps; `records`:
    each enabled step's draws are appended, as augment_batch appends them; `boxes`: see augment_batch."""
    if resize is not None:
        return augment_resized(augmentation, images, device, resize, labels, torch_compile, records, boxes)
    if RESIZED_CROP is None or torch.is_tensor(images) or PER_IMAGE:  # (PER_IMAGE: the crop runs per image too)
        return augment_batch(augmentation, images, device, records, labels, torch_compile=torch_compile, boxes=boxes)
    windows = resized_crop_windows([image.shape[-2] for image in images], [image.shape[-1] for image in images])
    batch = resized_crops([image.to(device, non_blocking=True) for image in images], windows)
    if records is not None:
        records.append(window_record(windows))
    return apply_steps(augmentation[1:], batch, records, labels, torch_compile=torch_compile)


def window_record(windows):
    """resized_crop_windows' [x0, y0, width, height] windows as Kornia's RandomResizedCrop records
    them: every sample applied, "src" its window's corner pixels (clockwise from top left)."""
    x0, y0, width, height = windows.double().numpy().T
    x1, y1 = x0 + width - 1, y0 + height - 1
    corners = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1), np.stack([x0, y1], 1)], 1)
    return {"batch_prob": np.ones(len(windows)), "src": corners.astype(np.float32)}


def resize_batch(batch, size):
    """A float NCHW batch resized to `size` (height, width): bilinear, shrinking through the
    triangle (PIL's) antialias filter, as the DALI export's fn.resize and the Resize step do."""
    return torch.nn.functional.interpolate(batch, size=tuple(size), mode="bilinear", align_corners=False,
                                           antialias=True)


def augment_resized(augmentation, images, device, size, labels=None, torch_compile=False, records=None, boxes=None):
    """The training loader's augmentation with a size asked for (resize=, --resize): the steps
    before RESIZE_AT run at each image's own size (on the whole batch when the sizes agree),
    every image is resized to `size`, then the rest of the chain runs on the batch. A chain that
    fixes the size itself runs as usual and is resized at the end (RESIZE_AT is its length).
    `records`, `boxes`: see augment_training_batch (the resize, not a step of the chain, records nothing)."""
    if FIXES_SIZE:
        out = augment_training_batch(augmentation, images, device, labels, torch_compile=torch_compile,
                                     records=records, boxes=boxes)
        return resize_batch(out, size) if labels is None else (resize_batch(out[0], size), out[1])
    head, tail = augmentation[:RESIZE_AT], augmentation[RESIZE_AT:]
    pieces = [images] if torch.is_tensor(images) and not PER_IMAGE else [image[None] for image in images]
    piece_records = [[] if records is not None else None for _ in pieces]
    if PER_IMAGE:
        batch = torch.cat([resize_batch(apply_image_steps(head, piece[0], device, piece_records[k],
                                                          None if boxes is None else boxes[k],
                                                          torch_compile=torch_compile), size)
                           for k, piece in enumerate(pieces)])
    else:
        batch = torch.cat([resize_batch(apply_steps(head, to_float(piece, device), piece_records[k],
                                                    torch_compile=torch_compile), size)
                           for k, piece in enumerate(pieces)])
    if records is not None:
        records.extend(join_records(piece_records))
    return apply_steps(tail, batch, records, labels, torch_compile=torch_compile)


def targets_on(targets, device):
    """A batch's targets with the masks on the images' device when that is a GPU: there they move
    as tensors, all of a step's at once (runtime/targets.py's warp_masks_on_device), the same
    pixels as on the host; boxes and keypoints stay on the host, where they are cheap."""
    if torch.device(device).type != "cpu" and targets.get("masks") is not None:
        targets["masks"] = [torch.as_tensor(mask).to(device, non_blocking=True) for mask in targets["masks"]]
    return targets


def join_records(parts):
    """The step records of consecutive parts of a batch (one list of records per part) as the
    records of the whole batch: each value joined along the sample axis, a group's children too."""
    return [join_record([part[k] for part in parts]) for k in range(len(parts[0]))] if parts else []


def join_record(pieces):
    """One step's records of consecutive parts joined (see join_records). A value a part lacks (a
    group's child that none of its samples chose draws nothing) is NaN there, as sample_rows reads
    what was not drawn; values of several lengths are padded with NaN to the longest."""
    out = {}
    for key in dict.fromkeys(key for piece in pieces for key in piece):
        if key == "steps":
            out[key] = join_records([piece[key] for piece in pieces])
            continue
        values = [np.asarray(piece[key]) if key in piece else None for piece in pieces]
        tail = tuple(max(sizes) for sizes in zip(*(v.shape[1:] for v in values if v is not None)))
        if any(v is None or v.shape[1:] != tail for v in values):
            values = [np.full((len(piece["batch_prob"]), *tail), np.nan) if v is None else
                      np.pad(v.astype(np.float64), [(0, 0)] + [(0, t - n) for t, n in zip(tail, v.shape[1:])],
                             constant_values=np.nan) for piece, v in zip(pieces, values)]
        out[key] = np.concatenate(values)
    return out


def training_batches(root=None, batch_size=64, epochs=1, workers=4, seed=SEED, device=None, num_samples=None,
                     decoder="auto", resize=None, shards=None, torch_compile=False, coco=None, masks=None,
                     decode_ahead=False, skip_bad=False, exclude=None, resume=None, index=None, max_prefetch_mb=None,
                     said=None):
    """Yield (epoch, augmented float batch on `device`, labels): the loop to train with, over an
    image folder (`root`) or WebDataset tar shards (`shards`; see make_loader), one of the two.

    Labels are class ids; when a step mixes the batch (MixUp, CutMix) they are float soft
    targets (batch x classes) mixed like the images, which torch's cross_entropy takes as
    they are. Every rank, epoch and batch gets its own derived augmentation seed (and each
    epoch's order comes from (seed, epoch): EpochSampler), so runs repeat exactly, and
    `resume=(epoch, batch)` starts a run there with the batches and draws an uninterrupted run
    has from there on (a preempted job goes on as if it had not stopped).
    A file that cannot be decoded stops the loop with a BadImageError naming it; with `skip_bad`
    the next readable file takes its place (batches stay full and every rank keeps its number of
    batches) and the files passed over are named at the end of each epoch. `exclude`: an
    exclusion list (`workbench check` writes one) of files to leave out; `index`: the folder's
    index file (`workbench index`); `max_prefetch_mb`: see make_loader; `said(line)` is given its
    line on what the prefetch holds (the command line prints it).
    `decoder`: see resolve_decoder ("auto": on the GPU when the device is CUDA); `decode_ahead`:
    see make_loader.
    `resize` (height, width): every image is resized to it where the batch must first be one
    size (SIZE_NOTE says where); a chain that does not fix the size needs it for a folder of
    mixed sizes, whose first batch of several sizes raises an error otherwise.
    `torch_compile`: the fused runs of steps go through torch.compile (see apply_steps); the
    first batch of each size compiles.
    `coco` (a COCO instances file) and/or `masks` (a folder of label-map PNGs named after the
    images): the folder's annotated images only, and in place of the labels their targets moved
    as the pixels were, from the draws of this very batch: a list with one dict per image of
    "boxes" (K x 4, xyxy pixels), "box_labels", "keypoints" (K x 2) with "keypoints_visible",
    and "mask" (H x W), those given, on `device`. They move as Chain.run and --save move them:
    boxes and keypoints on the host (numpy), masks too on the CPU and as tensors on a GPU (the
    same pixels; see targets_on); MixUp and CutMix mix them as their definitions say.

    Example:
        for epoch, images, labels in training_batches("train/", 64, resize=(224, 224)):
            loss = criterion(model(images), labels)
        for epoch, images, labels in training_batches(shards="train-{0000..0099}.tar", batch_size=64):
            ...
        for epoch, images, targets in training_batches("train/", 16, coco="instances.json", masks="masks/"):
            boxes = [t["boxes"] for t in targets]
    """
    resize = loader_resize(resize)
    rank, world_size, local_rank = distributed_context()
    if device is None:
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if device.type == "cuda" and device.index is not None:
        # Pinned memory, decoders and kernels with no device of their own use the current one:
        # under torchrun every rank would otherwise build them on GPU 0.
        torch.cuda.set_device(device)
    augmentation = place(build_augmentation(), device)
    if coco is None and any(getattr(module, "reads_boxes", False) for module in augmentation):
        raise ValueError(BOXES_NEEDED)
    start_epoch, start_batch = check_resume(resume, epochs)
    loader = make_loader(root, batch_size, workers, seed, device, num_samples, decoder, shards, coco, masks,
                         decode_ahead, skip_bad, exclude, index, max_prefetch_mb)
    if said is not None:
        said(loader.prefetch if isinstance(loader, DataLoader) else loader.loader.prefetch)
    # GPU-decoded batches are on the device already; PIL batches are copied ahead.
    batches = CudaPrefetcher(loader, device) if isinstance(loader, DataLoader) else loader
    annotated = loader.dataset.annotations is not None
    # Soft targets over classes where the batch mixes; an annotated batch mixes its targets instead.
    mixing = mixes_batch(augmentation) and not annotated
    num_classes = max(1, len(loader.dataset.classes))
    for epoch in range(start_epoch, epochs):
        first = start_batch if epoch == start_epoch else 0
        loader.sampler.set_epoch(epoch, first)
        skipped_in_epoch = []
        # (Persistent workers: they fork in the first epoch only.)
        forks = workers > 0 and epoch == start_epoch
        for number, (images, labels, skipped) in enumerate(one_line_errors(forking_cleanly(batches, forks)),
                                                           start=first):
            # Each batch's draws from (seed, rank, epoch, batch) alone: a resumed run draws the same.
            seed_generators(derive_seed(seed, rank, epoch, number), device)
            skipped_in_epoch += skipped
            if not (FIXES_SIZE or PER_IMAGE or resize or torch.is_tensor(images)):
                # Checked at the first batch of several sizes (the loader makes a list of it), not
                # by reading every header up front: that costs nothing when the sizes agree, where
                # ImageNet's 1.28M headers would take minutes per rank (about 70 us a file); a
                # folder of mixed sizes fails at its first batch all the same. The files named are
                # the first two of different sizes (a scan that stops there).
                check_one_size([tuple(image.shape[-2:]) for image in images], loader.dataset.files, SIZE_FIX)
            records = [] if annotated else None
            with torch.no_grad():
                if mixing:
                    batch, labels = augment_training_batch(augmentation, images, device,
                                                           labels=soft_targets(labels, num_classes), resize=resize,
                                                           torch_compile=torch_compile)
                else:
                    given = batch_targets(labels) if annotated else {}
                    batch = augment_training_batch(augmentation, images, device, resize=resize,
                                                   torch_compile=torch_compile, records=records,
                                                   boxes=given.get("boxes"))
            if annotated:
                sizes = [tuple(image.shape[-2:]) for image in images]
                moved = augment_targets(records, sizes, targets_on(given, device), resize)
                labels = [{kind: torch.as_tensor(value).to(device, non_blocking=True) for kind, value in target.items()}
                          for target in per_image(moved)]
            # Yield outside no_grad: grad mode is global, and the caller trains with it on.
            yield epoch, batch, labels
        report_skipped(skipped_in_epoch, epoch, rank, world_size)


def _save(args):
    # With --coco/--masks: the annotated images only, and their targets moved as the pixels were.
    annotated = args.coco or args.masks
    images, targets = annotated_inputs(args, TARGETS_REFUSED) if annotated else (save_inputs(args), None)
    # A mixing chain also saves its mixed labels, the label of each file being its index, so
    # that each row shows which files were mixed in and by how much (as the workbench preview).
    labels = np.arange(len(images)) if mixes_batch(build_augmentation()) else None
    out, records, *mixed = augment_images(images, seed=args.seed, device=args.device or "cpu", labels=labels,
                                          torch_compile=args.compile, boxes=targets.get("boxes") if annotated else None)
    arrays = {"images": out} if not isinstance(out, list) else {f"image_{i:05d}": o for i, o in enumerate(out)}
    if mixed:
        arrays["labels"] = mixed[0]
    arrays.update(record_arrays(STEPS, records))
    if annotated:
        arrays.update(target_arrays(augment_targets(records, [image.shape[:2] for image in images], targets)))
    np.savez(args.save, **arrays)
    print(f"saved {len(images)} augmented images and their sampled parameters to {args.save}")


def bench_rates(root=None, batch_size=64, batches=20, warmup=3, runs=1, workers=4, seed=SEED, device=None,
                progress=None, decoder="auto", resize=None, shards=None, torch_compile=False, coco=None, masks=None,
                decode_ahead=False, skip_bad=False, exclude=None, index=None, max_prefetch_mb=None, said=None):
    """Images/s of the training loop (read and decode, copy, augment) over `runs` stretches of
    `batches` batches after `warmup`; --bench prints one, the workbench's estimate several.
    `resize`, `shards`, `torch_compile`, `coco`, `masks`, `decode_ahead`, `skip_bad`, `exclude`:
    see training_batches (compiling happens in the warm-up)."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    # Samples to spare: the workers keep decoding (and competing for the cores) until the last
    # timed batch, as they do in training; at the very end of a loader they would be idle.
    spare = 4 * max(1, workers) + 1
    total = batch_size * (warmup + batches * runs + spare)
    loop = training_batches(root, batch_size, epochs=1, workers=workers, seed=seed, device=device, num_samples=total,
                            decoder=decoder, resize=resize, shards=shards, torch_compile=torch_compile, coco=coco,
                            masks=masks, decode_ahead=decode_ahead, skip_bad=skip_bad, exclude=exclude, index=index,
                            max_prefetch_mb=max_prefetch_mb, said=said)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else None
    try:
        return timed_rates(loop, lambda batch: len(batch[1]), batches, warmup, runs, sync, progress)
    finally:
        loop.close()  # stops the decoding processes now, not whenever the loader is collected


def _bench(args):
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    batches = bench_batches(args.batch_size, args.batches)
    rates = bench_rates(args.images, args.batch_size, batches, args.warmup, args.runs, args.workers, args.seed, device,
                        decoder=args.decoder, resize=args.resize, shards=args.shards, torch_compile=args.compile,
                        coco=args.coco, masks=args.masks, decode_ahead=args.decode_ahead, skip_bad=args.skip_bad,
                        exclude=args.exclude, index=args.index, max_prefetch_mb=args.max_prefetch_mb, said=print)
    print(f"device: {device}, decoder: {resolve_decoder(args.decoder, device)}, batch size: {args.batch_size}, "
          f"workers: {args.workers}, {args.runs} run(s) of {batches} batches after {args.warmup} warm-up")
    print_rates(rates)


def _train(args):
    rank, world_size, _ = distributed_context()
    if world_size > 1:
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    seen = boxes = 0
    for epoch, images, labels in training_batches(args.images, args.batch_size, args.epochs, args.workers,
                                                  args.seed, args.device, decoder=args.decoder, resize=args.resize,
                                                  shards=args.shards, torch_compile=args.compile, coco=args.coco,
                                                  masks=args.masks, decode_ahead=args.decode_ahead,
                                                  skip_bad=args.skip_bad, exclude=args.exclude, resume=args.resume,
                                                  index=args.index, max_prefetch_mb=args.max_prefetch_mb,
                                                  said=print if rank == 0 else None):
        # Your training step goes here: loss = criterion(model(images), labels) ...
        # (with --coco/--masks, `labels` holds each image's targets: see training_batches).
        seen += len(labels)
        boxes += box_count(labels)
    print_seen(rank, world_size, seen, boxes, args.coco, args.epochs)
    if world_size > 1:
        torch.distributed.destroy_process_group()


def main(argv=None):
    parser = contract_parser(__doc__.splitlines()[0], SEED, min(4, os.cpu_count() or 1), "decoding processes",
                             shards=True)
    parser.add_argument("--decoder", choices=DECODERS, default="auto",
                        help="JPEG decoding of the training loader: auto (on the GPU when the device is CUDA and "
                             "nvImageCodec or torchvision imports, else PIL), pil (in the worker processes), "
                             "nvimgcodec or torchvision (batched on the GPU); --save always decodes with PIL")
    add_resize_argument(parser, FIXES_SIZE, SIZE_NOTE)
    add_prefetch_argument(parser)
    parser.add_argument("--decode-ahead", action="store_true",
                        help="with a GPU decoder, decode the next batch on a thread while this one is augmented "
                             "(the same batches; off by default: 0.79x the plain loader on an H100)")
    parser.add_argument("--compile", action="store_true",
                        help="run the fused runs of steps through torch.compile (the first batch of each size "
                             "compiles; without a working torch.compile: a warning, then as without the flag)")
    args = parser.parse_args(argv)
    if args.shards:
        check_shards_argument(parser, args)
    reading = any(getattr(module, "reads_boxes", False) for module in build_augmentation())
    one_line_on_bad_image(run_command, args, _save, _bench, _train, BOXES_NEEDED if reading else None)


if __name__ == "__main__":
    main()
