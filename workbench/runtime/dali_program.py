# The program every DALI export carries. Its docstring, imports and code are copied into each
# exported file as they stand (codegen/source_copy.py's program_source), with the definitions it
# imports from the workbench's other runtime modules; the names it imports from dali_chain are the
# export's chain section (dali_chain.py here: the empty chain, so this module runs on its own).
"""Augmentation chain for NVIDIA DALI, exported by the augmentation workbench.

Use it as a module or as a script:
  python THIS_FILE --images DIR --seed N --save out.npz      # augmented images + sampled params
  python THIS_FILE --images DIR --bench --batch-size 64      # throughput of the training pipeline
  torchrun --nproc-per-node 2 THIS_FILE --images DIR --epochs 1   # one shard per rank
  python THIS_FILE --images DIR --resize 224x224             # train on a folder of mixed sizes
  python THIS_FILE --images DIR --epochs 90 --checkpoints ckpt/ --resume 3:120   # see "Resuming" below
  torchrun --nproc-per-node 2 THIS_FILE --shards "train-{0000..0099}.tar"   # WebDataset tar shards

Export options: a program carries masks, boxes and keypoints (--coco, --masks) and WebDataset tar
shards (--shards) only when exported with them; the "Export options" section near the end
of this file says which this one has, and a left-out feature stops with how to export it.

Reproducibility (`augment_images`, used by --save and by the workbench preview): images are
decoded by PIL to RGB, taken in file-name order and fed as one batch; every random value is
a `fn.random.*` operator with its own seed derived from the chain's seed (`op_seed`), so the
same seed and the same batch give the same output. The training pipeline instead decodes with DALI
(libjpeg-turbo on the CPU, nvJPEG with device="mixed" on a GPU) and shuffles; when the chain
starts with a crop (RandomResizedCrop, CenterCrop, RandomCrop), or a Resize and then a
CenterCrop or RandomCrop, it draws the window from each file's header with the step's own
sampler and seed and decodes only the pixels that window needs.

Unreadable files (truncated, empty, not an image): the loader, --save and --bench stop at the
first with one line naming it. DALI cannot skip a file once its pipeline runs: --skip-bad decodes
every file ahead (on --workers processes) and leaves the unreadable ones out of the reader's list,
naming them at the end of each epoch; on a big folder run `workbench check DIR --full
--exclude-list FILE` once and pass --exclude FILE, which leaves out the files the list names.

Resuming: --checkpoints DIR writes DALI's checkpoint of the pipeline (reader position, random
states) every --checkpoint-every batches and at each epoch's end; --resume EPOCH:BATCH starts
from the latest at or before that batch and reads the few batches between, giving the batches
and draws an uninterrupted run has from there on (without checkpoints it reads every batch before
it again: the same, slowly).

Image sizes: a training batch must be one tensor. When no step of the chain fixes the size
(see SIZE_NOTE, also in --help), a folder of mixed sizes stops at its first batch of several
sizes with an error naming two files, unless the loader is given a size (--resize HxW,
make_loader's resize=): a visible fn.resize in training_pipeline.

Labels: a batch mixing step (MixUp, CutMix) blends each sample with a partner of its batch
and makes the labels float soft targets (one row of class weights per sample) mixed with the
same weights; the training loader yields them, `augment_images(labels=...)` returns them,
and --save writes them as "labels" (each file's label being its index).

Shards: instead of a folder (--images, root=), the training pipeline reads WebDataset tar
shards (--shards, shards=): a brace range "train-{0000..0099}.tar", a glob or a comma-separated
list, with fn.readers.webdataset. Members group into samples by the name before the first dot of
their file name; a sample is an image (.jpg, .png, ...) and an optional .cls member holding its
class id in ASCII (0 without one). The loader reads the shards' headers once (index_shards, the
same code as the Kornia export's) and gives DALI an index file per shard, so both exports read the
same samples and DALI need not scan the tars itself. DALI shards the samples by rank
(shard_id/num_shards; each epoch every rank moves on to the next part, so together the ranks
read every sample once per epoch) and shuffles within a buffer of 1024 samples as it reads each
tar in order. --save takes the shards' samples in order, shard by shard.
"""

import os
import tempfile
from pathlib import Path

import numpy as np
import nvidia.dali.fn as fn
import nvidia.dali.types as types
from nvidia.dali import pipeline_def
from nvidia.dali.pipeline import do_not_convert

from .annotations import (annotated_inputs, batch_targets, loader_annotations, per_image, sample_targets,
                          target_arrays)
from .bad_files import (check_files, dali_failure, one_line_on_bad_image, read_exclusions, report_skipped,
                        save_inputs, shard_sample_name, without_excluded)
from .common import (CLASS_ID_DIGITS, IMAGE_EXTENSIONS, SIZE_LOOKS, add_prefetch_argument,
                     add_resize_argument, batch_megabytes, bench_batches, box_count,
                     check_one_size, check_resume, check_shards_argument, contract_parser, derive_seed,
                     distributed_context, first_two_sizes, index_shards, loader_resize, prefetch_plan,
                     mixed_sizes_error, print_rates, print_seen, run_command, shard_paths, soft_target_array,
                     timed_rates)
from .dali_chain import (CONDITIONALS, DRAWN_SIZES, DRAWS, FIXES_SIZE, GPU_ONLY, MIXING_STEPS, ONE_SIZE_BEFORE,
                         REGION_DECODE, REGION_STEPS, RESIZE_AT, SEED, SIZE_FIX, SIZE_NOTE, STEP_DRAWS,
                         STEP_FUNCTIONS, TARGETS_REFUSED, WINDOW_STEPS, augment_targets)
from .dali_ops.geometric import window_input
from .file_table import training_files
from .targets import BOXES_NEEDED, iou_crop_window


def augment_images(images, seed=SEED, device="cpu", first=0, keep=False, labels=None, boxes=None):
    """Augment HxWx3 arrays in the given order with `seed`, as the workbench preview does.

    Returns (images, params): images as an NxHxWxC array (uint8 0-255, or float32 after a
    Normalize; a list when sizes differ), params as {name: per-sample array} (see DRAWS).
    `first` starts at that step (images are then that step's input); `keep` adds a result:
    the images after each step. `labels` (class ids, or soft targets N x classes) adds the
    last result: float32 soft targets mixed by the mixing steps (MixUp, CutMix). `boxes`: each
    image's boxes (K x 4, [x1, y1, x2, y2] pixels), which a step of WINDOW_STEPS (RandomIoUCrop)
    draws its window from (see augment_in_stretches); such a chain refuses to run without them.
    """
    if any(position >= first for position, _, _ in WINDOW_STEPS):
        return augment_in_stretches(images, seed, device, first, keep, labels, boxes)
    return collect_images(start_images(images, seed, device, first, keep, labels))


def augment_in_stretches(images, seed, device, first, keep, labels, boxes):
    """augment_images for a chain with steps that draw their window from the boxes (WINDOW_STEPS): a
    pipeline runs the steps up to each such step; then the host draws each image's window from its
    boxes as the steps before moved them (augment_targets' until=), with RandomIoUCrop's sampler
    (iou_crop_window) and a generator seeded by (the step's op_seed, the image's index), and the
    next pipeline starts at that step with the windows fed (fed_window)."""
    if boxes is None:
        raise ValueError(BOXES_NEEDED)
    if first > 0:
        raise ValueError("a chain with RandomIoUCrop runs from its first step: the boxes are given as the images "
                         "enter the chain")
    sizes = [np.shape(image)[:2] for image in images]
    given = {"boxes": list(boxes), "box_labels": [np.arange(len(b)) for b in boxes]}
    params, kept, windows, start = {}, [], None, 0
    for position, step, settings in (*WINDOW_STEPS, (None, None, None)):
        out = collect_images(start_images(images, seed, device, start, keep, labels, last=position, windows=windows))
        images = out[0]
        params.update(out[1])
        kept += out[2] if keep else []
        labels = out[-1] if labels is not None else None
        if position is None:
            break
        here = augment_targets(params, sizes, given, until=step - 1)["boxes"]
        windows = {window_input(step): [drawn_window(image, box, settings, op_seed(seed, step, 0), n)
                                        for n, (image, box) in enumerate(zip(images, here))]}
        start = position
    return (images, params) + ((kept,) if keep else ()) + ((labels,) if labels is not None else ())


def drawn_window(image, boxes, settings, seed, index):
    """[applied, x0, y0, x1, y1] (float32), the window fed_window reads, that RandomIoUCrop's sampler
    (iou_crop_window) draws for `image` with its `boxes` from a generator seeded by (seed, index);
    applied 0 and the whole image where the image is left as it is."""
    rng = np.random.default_rng([seed, index])
    height, width = np.shape(image)[:2]
    window = iou_crop_window(boxes, height, width, settings, lambda count: int(rng.integers(count)),
                             lambda: rng.random(2, dtype=np.float32))
    return np.array([0.0, 0, 0, width, height] if window is None else [1.0, *window], dtype=np.float32)


def start_images(images, seed=SEED, device="cpu", first=0, keep=False, labels=None, last=None, windows=None):
    """The first half of augment_images: defines the pipeline, feeds it and starts it (DALI runs
    it on its own threads); collect_images(what this returns) waits for it and gives
    augment_images' result. Several started at once overlap (the workbench's preview starts
    every draw's pipeline before it collects the first). `last`: the pipeline stops before that
    step; `windows`: {input name: per-sample windows} for its WINDOW_STEPS (see augment_in_stretches)."""
    gpu = device != "cpu"
    check_gpu_only(gpu, first)
    device_id = int(device.split(":")[1]) if ":" in device else (0 if gpu else None)
    batch = [np.ascontiguousarray(image) for image in images]
    if ONE_SIZE_BEFORE is not None and first <= ONE_SIZE_BEFORE[0] and len({b.shape for b in batch}) > 1:
        raise ValueError(f"{ONE_SIZE_BEFORE[1]} mixes samples of one batch, but the images differ in size there; "
                         "add a Resize or a crop (CenterCrop, RandomResizedCrop) before it")
    dtype = types.UINT8 if batch[0].dtype == np.uint8 else types.FLOAT
    labelled = labels is not None
    pipe = preview_pipeline(aug_seed=seed, gpu=gpu, first=first, dtype=dtype, keep=keep, labelled=labelled,
                            last=last, batch_size=len(batch), num_threads=_threads(), device_id=device_id, seed=seed,
                            prefetch_queue_depth=1)
    pipe.build()
    pipe.feed_input("images", batch)
    if labelled:
        pipe.feed_input("labels", list(soft_target_array(labels)))
    for name, fed in (windows or {}).items():
        pipe.feed_input(name, fed)
    pipe.schedule_run()
    return pipe, first, keep, labelled, last


def collect_images(started):
    """augment_images' result of a pipeline start_images started (waits until it is done)."""
    pipe, first, keep, labelled, last = started
    arrays = [_to_numpy(out) for out in pipe.outputs()]
    names = [name for step in STEP_DRAWS[first:last] for name in step]
    params = {name: values if isinstance(values, np.ndarray) else np.stack(values)
              for name, values in zip(names, arrays[1:])}
    result = (arrays[0], params)
    if keep:
        result += (arrays[1 + len(names):len(arrays) - labelled],)
    return result + ((np.stack(arrays[-1]),) if labelled else ())


def _to_numpy(tensor_list):
    """One array for a batch of samples of one shape (one copy), else a list of arrays."""
    if hasattr(tensor_list, "as_cpu"):
        tensor_list = tensor_list.as_cpu()
    if tensor_list.is_dense_tensor():
        return tensor_list.as_array()
    samples = [np.array(tensor_list[i]) for i in range(len(tensor_list))]
    if len({s.shape for s in samples}) == 1:
        return np.stack(samples)
    return samples


@pipeline_def(enable_conditionals=CONDITIONALS)
def preview_pipeline(aug_seed=SEED, gpu=False, first=0, dtype=types.UINT8, keep=False, labelled=False, last=None):
    """Augment a batch fed through the "images" input, steps `first` to `last` - 1 (to the end when
    None); outputs the images, every draw, with `keep` the images after each step and, when
    `labelled`, the soft targets fed through the "labels" input, mixed by the mixing steps. A step of
    WINDOW_STEPS among them reads its windows from an input of its own (fed_window)."""
    images = fn.external_source(name="images", layout="HWC", dtype=dtype)
    if gpu:
        images = images.gpu()
    labels = fn.external_source(name="labels", dtype=types.FLOAT) if labelled else None
    images, draws, after, *labels = augment(images, aug_seed, first, last, True, labels)
    return (images, *draws, *(after if keep else []), *labels)


def augment(images, seed=SEED, first=0, last=None, keep=False, labels=None):
    """Steps first..last-1 of the chain on a batch of HWC images (CPU or GPU nodes).

    Returns (images, draws), plus the images after each step when `keep` (the workbench's
    preview caches them and resumes from the step you edit), plus the labels when `labels`
    (soft targets, one float row per sample) are given: mixing steps mix them like the images."""
    draws, after = [], []
    for step in STEP_FUNCTIONS[first:last]:
        if step in MIXING_STEPS:
            images, step_draws, labels = step(images, seed, labels)
        else:
            images, step_draws = step(images, seed)
        draws += step_draws
        after.append(images)
    out = (images, draws, after) if keep else (images, draws)
    return out if labels is None else out + (labels,)


@do_not_convert  # integer arithmetic only: DALI's autograph would rewrite it (and derive_seed) for each new chain
def op_seed(seed, step, k):
    """The seed of step `step`'s k-th random operator: every operator is seeded explicitly, so
    any stretch of the chain can run in a pipeline of its own and draw the same values. A step
    inside a group is a path: (group's step, child, ...)."""
    return derive_seed(seed, *(step if isinstance(step, tuple) else (step,)), k)


def mix_labels(labels, partner, weight):
    """Soft targets mixed as a mixing step mixed the images: (1 - weight) * own + weight * the
    partner's (nothing to do without labels)."""
    if labels is None:
        return None
    # -weight + 1.0 is 1.0 - weight exactly, but not the image blend's node: DALI 2.4 merges identical CPU
    # operators, and a merged one feeding GPU operators breaks the GPU build (tests/dali_graph_check.py).
    return labels * (weight * -1.0 + 1.0) + fn.permute_batch(labels, indices=partner) * weight


def check_gpu_only(gpu, first=0):
    """Refuse to define a CPU pipeline (`gpu` False) that runs a step DALI has on the GPU only (GPU_ONLY;
    from step `first` on), naming the steps, why, and what to do instead."""
    steps = [text for position, text in GPU_ONLY if position >= first]
    if steps and not gpu:
        raise ValueError("; ".join(steps) + ": run on an NVIDIA GPU (--device cuda; augment_images(device=\"cuda\"), "
                         "make_loader(gpu=True)), or export the chain for Kornia or Albumentations")


def _threads():
    return max(1, min(4, os.cpu_count() or 1))


# ---------------------------------------------------------------------------------------
# Training: file reader or WebDataset reader (sharded per rank), DALI decoding, the chain, a
# PyTorch iterator.
# ---------------------------------------------------------------------------------------
def image_folder(root, exclude=None, index=None):
    """(files, labels) under `root`: recursive, name order; the label is the index of the
    first-level sub-folder (ImageFolder layout), 0 for files directly in `root`. The exclusion
    list `exclude` (read_exclusions) leaves files out (the labels count every folder); `index`:
    the folder's index file (`workbench index`), read instead of listing the folder. (The lists
    go to DALI's reader, which keeps them in C++.)"""
    table = without_excluded(training_files(root, index), root, exclude)
    return [str(path) for path in table], table.labels.tolist()


# DALI cannot skip a file once its pipeline runs (a decoding failure ends the pipeline): with
# --skip-bad the loader decodes every file ahead, on this many processes at most, and leaves the
# unreadable ones out of the reader's list.
def readable_only(names, paths, threads):
    """(positions of the readable ones among `names` (with `paths`: (path, offset, size) each),
    (name, problem) of the others): a full decode of each (check_files)."""
    rows = check_files([(name, *path) for name, path in zip(names, paths)], full=True, workers=threads)
    return [k for k, row in enumerate(rows) if not row[5]], [(row[0], row[5]) for row in rows if row[5]]


# Said at each epoch's end, after the files --skip-bad left out.
LEFT_OUT_AHEAD = "left out of the reader's list by a full decode before training (DALI cannot skip a file mid-epoch)"

# Batches DALI's pipeline keeps ready (its prefetch_queue_depth) unless --max-prefetch-mb bounds them.
DALI_PREFETCH = 2

# --checkpoints: where the loader writes DALI's checkpoint of its pipeline (reader position and
# every random state), so that --resume EPOCH:BATCH can start from the nearest one.
CHECKPOINT_EVERY = 100


def checkpoint_path(folder, rank, epoch, batch):
    """The file of rank `rank`'s checkpoint taken before epoch `epoch`'s batch `batch`."""
    return Path(folder) / f"dali-rank{rank}-epoch{epoch:05d}-batch{batch:07d}.ckpt"


def nearest_checkpoint(folder, rank, epoch, batch):
    """((epoch, batch), its bytes) of rank `rank`'s latest checkpoint in `folder` at or before
    (epoch, batch), or ((0, 0), None) when there is none (the run starts from the beginning)."""
    best = ((0, 0), None)
    for path in Path(folder).glob(f"dali-rank{rank}-epoch*-batch*.ckpt") if folder else ():
        parts = path.stem.split("-")
        at = (int(parts[2][5:]), int(parts[3][5:]))
        if at <= (epoch, batch) and (best[1] is None or at > best[0]):
            best = (at, path)
    return best if best[1] is None else (best[0], best[1].read_bytes())


def write_shard_index(samples, path):
    """An index file for fn.readers.webdataset (the format of DALI's wds2idx, version 1.2) of one
    shard's samples (shard_samples): a line per sample with its image member and, when it has
    one, its .cls member. DALI then reads exactly the samples the Kornia loader reads (samples
    without an image left out, each one's first image only) without scanning the tar again. The
    .cls size leaves out trailing whitespace (class_ids reads the last bytes); DALI splits the
    lines at spaces, so spaces in member names (shown in errors only) become "_"."""
    lines = [f"v1.2 {len(samples)}"]
    for _, (name, offset, size), _, label_member in samples:
        extension = name.rpartition("/")[2].partition(".")[2].lower()
        components = [(extension, offset, size, name)]
        if label_member is not None:
            label_name, label_offset, label_size = label_member
            components.append(("cls", label_offset, label_size, label_name))
        lines.append(" ".join(f"{ext} {start} {length} {'_'.join(member.split())}"
                              for ext, start, length, member in components))
    Path(path).write_text("\n".join(lines) + "\n")


# The extensions a sample's image member may have, as fn.readers.webdataset takes them.
SHARD_IMAGE_EXTENSIONS = ";".join(extension.lstrip(".") for extension in IMAGE_EXTENSIONS)


def class_ids(text):
    """Each sample's .cls bytes (a class id in ASCII, maybe after spaces: see class_id; empty
    for a sample without one) as its class id: int32 of shape (1,), as fn.readers.file gives
    labels. The last CLASS_ID_DIGITS bytes, padded in front with "0" (byte 48), are read as
    decimal digits; a byte that is not a digit (a leading space) counts as 0."""
    length = text.shape(dtype=types.INT32)[0]
    window = fn.slice(text, fn.stack(length - CLASS_ID_DIGITS), types.Constant(np.array([CLASS_ID_DIGITS], np.int32)),
                      axes=[0], out_of_bounds_policy="pad", fill_values=48)
    digits = fn.cast(window, dtype=types.INT32) - 48
    place_values = types.Constant(10 ** np.arange(CLASS_ID_DIGITS - 1, -1, -1, dtype=np.int32))
    value = fn.reductions.sum(digits * ((digits >= 0) & (digits <= 9)) * place_values, axes=0)
    return fn.reshape(fn.cast(value, dtype=types.INT32), shape=[1])


def webdataset_reader(shards, index_paths, shard_id, num_shards):
    """The training pipeline's reader of WebDataset tar `shards` (with their `index_paths`, see
    write_shard_index): each sample's encoded image and its class id (see class_ids)."""
    # "empty": a sample without a .cls member gets no bytes there, which class_ids reads as 0.
    encoded, text = fn.readers.webdataset(paths=shards, index_paths=index_paths, ext=[SHARD_IMAGE_EXTENSIONS, "cls"],
                                          missing_component_behavior="empty", random_shuffle=True,
                                          shard_id=shard_id, num_shards=num_shards, name="Reader")
    return encoded, class_ids(text)


@pipeline_def(enable_conditionals=CONDITIONALS)
def training_pipeline(files, labels, shard_id=0, num_shards=1, gpu=False, aug_seed=SEED, augmented=True,
                      num_classes=None, resize=None, shards=None, index_paths=None, annotated=False):
    """Read, decode (nvJPEG when gpu), augment; outputs (images, labels), and when `annotated`
    each file's size as decoded and every draw (DRAWS), from which its targets are moved.

    The files come from `files` (with `labels`), or from the WebDataset tar files `shards` with
    their `index_paths` (write_shard_index; `labels` then lists the samples' class ids).
    Labels are class ids; when a step mixes the batch (MixUp, CutMix) they are float soft
    targets over `num_classes` (default: the largest label + 1) mixed like the images.
    `resize` (height, width) resizes every image before step RESIZE_AT (see SIZE_NOTE).
    `augmented=False` stops after decoding (the workbench's estimate times decoding alone).
    `annotated`: `labels` are the files' positions (make_loader reads their targets) and stay
    unmixed; mixing steps mix the targets instead."""
    if shards:
        encoded, label = webdataset_reader(shards, index_paths, shard_id, num_shards)
    else:
        encoded, label = fn.readers.file(files=files, labels=labels, random_shuffle=True, shard_id=shard_id,
                                         num_shards=num_shards, name="Reader")
    decoder = "mixed" if gpu else "cpu"
    first, draws = 0, []
    if augmented and REGION_DECODE is not None:
        images, draws = REGION_DECODE(encoded, aug_seed, decoder)  # decodes only the first crop's window
        first = REGION_STEPS
    else:
        images = fn.decoders.image(encoded, device=decoder, output_type=types.RGB)
    if augmented:
        soft = None
        if MIXING_STEPS and not annotated:
            soft = fn.one_hot(label, num_classes=num_classes or max(labels) + 1, dtype=types.FLOAT)
        images, step_draws, *mixed = augment(images, aug_seed, first=first, last=RESIZE_AT if resize else None,
                                             labels=soft)
        draws = draws + step_draws
        if resize:
            # The size asked for, where the batch must first be one size (see SIZE_NOTE), then the rest.
            images = fn.resize(images, size=list(resize), interp_type=types.INTERP_LINEAR, antialias=True)
            images, step_draws, *mixed = augment(images, aug_seed, first=RESIZE_AT, labels=mixed[0] if mixed else None)
            draws = draws + step_draws
        label = mixed[0] if mixed else label
    drawn = augmented and DRAWN_SIZES and not resize
    if drawn:
        # Each image keeps the size a step drew for it: one batch, padded with zeros at the bottom
        # and right to its largest image, and each image's size, which the padding would hide.
        image_sizes = fn.slice(images.shape(), 0, 2, axes=[0])
        images = fn.pad(images, axes=(0, 1), fill_value=0)
    outputs = (images, (label.gpu() if gpu else label)) + ((image_sizes,) if drawn else ())
    # The size each file decodes to (its header's, as the decoder reads it), before any step.
    return outputs + ((fn.peek_image_shape(encoded), *draws) if annotated else ())


def make_loader(root=None, batch_size=64, seed=SEED, gpu=None, threads=None, augmented=True, resize=None,
                shards=None, coco=None, masks=None, skip_bad=False, exclude=None, checkpoints=None,
                checkpoint_every=CHECKPOINT_EVERY, resume=None, index=None, max_prefetch_mb=None):
    """A DALIGenericIterator over the training pipeline: shard = rank under torchrun, each
    rank seeded from (seed, rank); yields [{"images": tensor NHWC, "labels": tensor}]. It reads
    an image folder (`root`) or WebDataset tar shards (`shards`, e.g. "train-{0000..0099}.tar":
    see shard_paths and shard_samples), one of the two.

    Each epoch the ranks read disjoint parts that together hold every sample once (DALI moves
    each rank to the next part every epoch); each rank drops its last incomplete batch, unless
    its part holds less than one batch (then repeated samples fill it). For every sample exactly
    once per epoch, make the count a multiple of world_size x batch_size.

    `resize` (height, width): every image is resized to it where the batch must first be one
    size (SIZE_NOTE says where); a chain that does not fix the size needs it for a folder of
    mixed sizes, whose first batch of several sizes raises an error otherwise. A chain that ends
    with sizes drawn per image (DRAWN_SIZES: RandomShortestSize, RandomResize, ScaleJitter,
    RandomZoomOut) takes folders of any sizes without it: each batch is padded with zeros at the
    bottom and right to its largest image, and batch[0]["image_sizes"] (N x 2) gives each image's
    height and width.

    `coco` (a COCO instances file) and/or `masks` (a folder of label-map PNGs named after the
    images): the folder's annotated images only, and in place of the labels their targets moved
    as the pixels were, from what this very batch drew (the pipeline outputs its draws): a list
    with one dict per image of "boxes" (K x 4, xyxy pixels), "box_labels", "keypoints" (K x 2)
    with "keypoints_visible", and "mask" (H x W), those given, as torch tensors where the images
    are. They move by the code --save and the workbench use: boxes and keypoints on the host
    (numpy), masks too on the CPU and as tensors on a GPU (the same pixels; see moved_targets).

    A file that cannot be decoded stops the loader with a BadImageError naming it. DALI cannot
    skip a file once its pipeline runs: with `skip_bad` every file is decoded ahead (on `threads`
    processes) and the unreadable ones are left out of the reader's list (`loader.skipped` names
    them); `exclude`: an exclusion list (`workbench check` writes one) of files to leave out;
    `index`: the folder's index file (`workbench index`), read instead of listing the folder.
    DALI keeps DALI_PREFETCH batches ready (its prefetch queue; on a GPU in GPU memory), one when
    `max_prefetch_mb` MB cannot hold more; `loader.prefetch` says what it holds.

    `checkpoints` (a folder): the loader writes DALI's checkpoint of its pipeline there every
    `checkpoint_every` batches and at each epoch's end; `resume=(epoch, batch)` starts from the
    latest one at or before that batch (from the start without one): `loader.position` is where
    the pipeline stands, `loader.start` where the run starts, and training_epochs reads and drops
    the batches between, then yields the batches and draws an uninterrupted run has from there on.

    Example:
        loader = make_loader("train/", 64, resize=(224, 224))   # or make_loader(shards="train-{0000..0099}.tar")
        for batch in loader:
            images, labels = batch[0]["images"], batch[0]["labels"]
        for batch in make_loader("train/", 16, coco="instances.json", masks="masks/"):
            images, targets = batch[0]["images"], batch[0]["labels"]   # targets[k]["boxes"], ...
    """
    if WINDOW_STEPS:
        raise ValueError(training_refusal())
    from nvidia.dali.plugin.base_iterator import LastBatchPolicy
    from nvidia.dali.plugin.pytorch import DALIGenericIterator

    class OneSizeIterator(DALIGenericIterator):
        # The first batch of several sizes gets an error that names two files and what to do,
        # instead of DALI's "Assert on IsDenseTensor() failed" when it makes the batch one tensor.
        # Checked batch by batch, not by reading every file's header up front: that costs
        # nothing when the sizes agree, where a header scan of ImageNet's 1.28M files would take
        # minutes on every rank before the first step (about 70 us a file, measured); a folder
        # of mixed sizes fails at its very first batch all the same. (_get_outputs is where
        # the iterator takes each batch from the pipeline; should DALI rename it, DALI's own
        # error shows again.)
        def _get_outputs(self):
            try:
                outputs = super()._get_outputs()
            except RuntimeError as error:
                bad = dali_failure(error, files)
                if bad is not None:
                    raise bad from None
                # A step that mixes samples (CutMix) can fail inside the pipeline on several sizes.
                pair = first_two_sizes(files) if RESIZE_AT < len(STEP_FUNCTIONS) and resize is None else None
                if pair:
                    raise mixed_sizes_error(*pair, SIZE_FIX) from error
                raise
            for images, *_ in outputs:
                # DALI carries each sample's file path (source_info), except through a mixing step.
                check_one_size([tuple(shape[:2]) for shape in images.shape()], files, SIZE_FIX,
                               name_of=lambda k: images[k].source_info())
            return outputs

        def __next__(self):
            try:
                batches = super().__next__()
            except StopIteration:
                self.position = (self.position[0] + 1, 0)
                self.save_checkpoint()
                raise
            self.position = (self.position[0], self.position[1] + 1)
            if self.position[1] % checkpoint_every == 0:
                self.save_checkpoint()
            if annotations is not None:
                for batch in batches:
                    batch["labels"] = moved_targets(batch, annotations, resize)
            return batches

        def save_checkpoint(self):
            if checkpoints is not None:
                Path(checkpoints).mkdir(parents=True, exist_ok=True)
                checkpoint_path(checkpoints, rank, *self.position).write_bytes(self.checkpoints()[0])

    resize = loader_resize(resize)
    if (root is None) == (shards is None):
        raise ValueError("give the training images as a folder (root) or as WebDataset tar shards (shards=), "
                         "one of the two")
    annotations = None if coco is None and masks is None else loader_annotations(root, coco, masks, TARGETS_REFUSED,
                                                                                  shards)
    rank, world_size, local_rank = distributed_context()
    if gpu is None:
        import torch

        gpu = torch.cuda.is_available()
    check_gpu_only(gpu)
    rank_seed = derive_seed(seed, rank)
    skipped = []
    # DALI reads the shards' index files while it builds the pipeline: they can go afterwards.
    with tempfile.TemporaryDirectory(prefix="dali-shard-index-") as folder:
        if shards is not None:
            files, labels, reader, skipped = shard_reader(shards, folder, skip_bad, exclude, threads)
        else:
            (files, labels), reader = image_folder(root, exclude, index), {}
            if annotations is not None:
                # Each sample's label is its file's position: its targets are read by it (moved_targets).
                files = [str(f) for f in annotations["files"]]
                labels = list(range(len(files)))
            if skip_bad:
                keep, skipped = readable_only(files, [(f, None, None) for f in files], threads or _threads())
                files, labels = [files[k] for k in keep], [labels[k] for k in keep]
            if not files:
                raise SystemExit(f"no readable image files ({', '.join(IMAGE_EXTENSIONS)}) under {root}")
        (start, checkpoint) = nearest_checkpoint(checkpoints, rank, *resume) if resume else ((0, 0), None)
        batch_mb = batch_megabytes(files[:SIZE_LOOKS], batch_size) if files else 0.0
        _, depth = prefetch_plan(1, batch_mb, max_prefetch_mb, DALI_PREFETCH)  # (DALI's queue: one "worker")
        pipe = training_pipeline(files, labels, shard_id=rank, num_shards=world_size, gpu=gpu, aug_seed=rank_seed,
                                 augmented=augmented, resize=resize, batch_size=batch_size,
                                 num_threads=threads or _threads(), device_id=local_rank if gpu else None,
                                 seed=rank_seed, annotated=annotations is not None,
                                 enable_checkpointing=checkpoints is not None or resume is not None,
                                 checkpoint=checkpoint, prefetch_queue_depth=depth, **reader)
        pipe.build()
    # Drop the ragged last batch, unless a shard holds less than one batch (small folders):
    # then fill it by repeating samples, or there would be nothing to train on.
    policy = LastBatchPolicy.DROP if len(labels) // world_size >= batch_size else LastBatchPolicy.FILL
    outputs = (["images", "labels"] + (["image_sizes"] if augmented and DRAWN_SIZES and resize is None else [])
               + (["sizes", *DRAWS] if annotations is not None else []))
    loader = OneSizeIterator([pipe], outputs, reader_name="Reader", last_batch_policy=policy, auto_reset=True)
    # Where the pipeline stands (the checkpoint's batch), where the run starts, and what lies between.
    loader.position, loader.start, loader.skipped = start, tuple(resume or start), skipped
    loader.prefetch = (f"prefetch: DALI's queue of {depth} batch(es) x {batch_mb:.1f} MB (the largest of the first "
                       f"{SIZE_LOOKS} images, decoded) = {depth * batch_mb:.0f} MB of "
                       + ("GPU memory" if gpu else "host memory") + "; --max-prefetch-mb bounds it")
    return loader


def training_epochs(loader, epochs):
    """(epoch, batch) for every batch of `epochs` epochs from the loader's start on (make_loader's
    resume; the batches between its checkpoint and that start are read and dropped), the
    files --skip-bad left out named at the end of each epoch."""
    rank, world_size, _ = distributed_context()
    check_resume(loader.start, epochs)
    if loader.position != loader.start:
        origin = "the start" if loader.position == (0, 0) else "the checkpoint at epoch {}, batch {}".format(
            *loader.position)
        print(f"resuming at epoch {loader.start[0]}, batch {loader.start[1]}: reading the batches from {origin} "
              "on again to get there" + ("" if loader.position != (0, 0) else
                                         " (--checkpoints DIR writes checkpoints that save this)"), flush=True)
    while loader.position[0] < epochs:
        epoch = loader.position[0]
        for batch in loader:
            if loader.position > (loader.start[0], loader.start[1]):  # (position: the batch after this one)
                yield epoch, batch
        if epoch >= loader.start[0]:
            report_skipped(loader.skipped, epoch, rank, world_size, LEFT_OUT_AHEAD)


def shard_reader(shards, folder, skip_bad=False, exclude=None, threads=None):
    """What the training pipeline reads WebDataset tar `shards` (a pattern, see shard_paths) with:
    (files: none, labels: the samples' class ids in shard order, the reader's arguments: the
    shards and an index file per shard, written into `folder`, see write_shard_index, and the
    samples `skip_bad` left out). The samples the exclusion list `exclude` names are left out,
    and with `skip_bad` those a full decode refuses (see readable_only)."""
    paths = shard_paths(shards)
    names = read_exclusions(exclude)
    indexed = [(str(path), [sample for sample in samples if shard_sample_name(path, sample[0]) not in names])
               for path, samples in zip(paths, index_shards(paths))]
    skipped = []
    if skip_bad:
        every = [(shard_sample_name(path, sample[0]), (path, sample[1][1], sample[1][2]))
                 for path, samples in indexed for sample in samples]
        keep, skipped = readable_only([name for name, _ in every], [where for _, where in every], threads or _threads())
        kept = {every[k][0] for k in keep}
        indexed = [(path, [sample for sample in samples if shard_sample_name(path, sample[0]) in kept])
                   for path, samples in indexed]
    # (DALI refuses an index of no samples: a shard without any stays out.)
    indexed = [(path, samples) for path, samples in indexed if samples]
    index_paths = [str(Path(folder) / f"{k:05d}.idx") for k in range(len(indexed))]
    for (_, samples), index_path in zip(indexed, index_paths):
        write_shard_index(samples, index_path)
    labels = [label for _, samples in indexed for _, _, label, _ in samples]
    return [], labels, dict(shards=[path for path, _ in indexed], index_paths=index_paths), skipped


def training_refusal():
    """Why the training pipeline cannot run this chain (a step of WINDOW_STEPS), or None."""
    if not WINDOW_STEPS:
        return None
    return (f"step {WINDOW_STEPS[0][1]} (RandomIoUCrop) draws its window from each image's boxes as they stand at "
            "its step, which DALI's training pipeline (one graph, from the files) cannot hand it; train with the "
            "chain's Kornia or Albumentations export (--coco), or use augment_images(images, boxes=...) and --save "
            "--coco here")


def moved_targets(batch, annotations, resize=None):
    """An annotated training batch's targets (see make_loader), read by each sample's position
    ("labels") and moved with what the pipeline drew for it; the draws and sizes leave `batch`."""
    import torch

    positions = batch.pop("labels").reshape(-1).tolist()
    sizes = [tuple(size[:2]) for size in batch.pop("sizes").cpu().tolist()]
    draws = {name: batch.pop(name).cpu().numpy() for name in DRAWS}
    device = batch["images"].device
    given = batch_targets([sample_targets(annotations, i) for i in positions])
    if device.type != "cpu" and given.get("masks") is not None:
        # The masks move on the device, as tensors, all of a step's at once (runtime/targets.py's
        # warp_masks_on_device): the same pixels as on the host; boxes and keypoints stay there.
        given["masks"] = [torch.as_tensor(mask).to(device, non_blocking=True) for mask in given["masks"]]
    moved = augment_targets(draws, sizes, given, resize)
    return [{kind: torch.as_tensor(value).to(device, non_blocking=True) for kind, value in target.items()}
            for target in per_image(moved)]


def _save(args):
    # With --coco/--masks: the annotated images only, and their targets moved as the pixels were.
    annotated = args.coco or args.masks
    images, targets = annotated_inputs(args, TARGETS_REFUSED) if annotated else (save_inputs(args), None)
    # A mixing chain also saves its mixed labels, the label of each file being its index, so
    # that each row shows which files were mixed in and by how much (as the workbench preview).
    labels = np.arange(len(images)) if MIXING_STEPS else None
    out, params, *mixed = augment_images(images, seed=args.seed, device=args.device or "cpu", labels=labels,
                                         boxes=targets.get("boxes") if annotated else None)
    arrays = {"images": out} if not isinstance(out, list) else {f"image_{i:05d}": o for i, o in enumerate(out)}
    arrays.update({f"params.{name}": value for name, value in params.items()})
    if mixed:
        arrays["labels"] = mixed[0]
    if annotated:
        arrays.update(target_arrays(augment_targets(params, [image.shape[:2] for image in images], targets)))
    np.savez(args.save, **arrays)
    print(f"saved {len(images)} augmented images and their sampled parameters to {args.save}")


def endless(loader):
    """The loader's batches, epoch after epoch (`auto_reset` starts the next epoch; iterating
    the loader again with `for` would ask it to reset mid-epoch)."""
    while True:
        try:
            yield next(loader)
        except StopIteration:
            continue


def bench_rates(root=None, batch_size=64, batches=20, warmup=3, runs=1, threads=None, seed=SEED, gpu=None,
                progress=None, augmented=True, resize=None, shards=None, coco=None, masks=None, skip_bad=False,
                exclude=None, index=None, max_prefetch_mb=None, said=None):
    """Images/s of the training loader (read, decode, augment, hand to PyTorch) over `runs`
    stretches of `batches` batches after `warmup`; --bench prints one, the workbench's
    estimate several (and, with `augmented=False`, times decoding alone). `resize`, `shards`,
    `coco`, `masks`, `skip_bad`, `exclude`, `index`, `max_prefetch_mb`: see make_loader (--skip-bad's
    check ahead is not timed); `said(line)` is given its line on what the prefetch holds."""
    loader = make_loader(root, batch_size, seed=seed, gpu=gpu, threads=threads, augmented=augmented, resize=resize,
                         shards=shards, coco=coco, masks=masks, skip_bad=skip_bad, exclude=exclude, index=index,
                         max_prefetch_mb=max_prefetch_mb)
    if said is not None:
        said(loader.prefetch)
    return timed_rates(endless(loader), lambda batch: batch[0]["images"].shape[0], batches, warmup, runs,
                       progress=progress)


def _bench(args):
    gpu = None if args.device is None else args.device != "cpu"
    batches = bench_batches(args.batch_size, args.batches)
    rates = bench_rates(args.images, args.batch_size, batches, args.warmup, args.runs, args.workers, args.seed, gpu,
                        resize=args.resize, shards=args.shards, coco=args.coco, masks=args.masks,
                        skip_bad=args.skip_bad, exclude=args.exclude, index=args.index,
                        max_prefetch_mb=args.max_prefetch_mb, said=print)
    print(f"batch size: {args.batch_size}, threads: {args.workers}, "
          f"{args.runs} run(s) of {batches} batches after {args.warmup} warm-up")
    print_rates(rates)


def _train(args):
    rank, world_size, _ = distributed_context()
    loader = make_loader(args.images, args.batch_size, seed=args.seed,
                         gpu=None if args.device is None else args.device != "cpu", threads=args.workers,
                         resize=args.resize, shards=args.shards, coco=args.coco, masks=args.masks,
                         skip_bad=args.skip_bad, exclude=args.exclude, index=args.index, checkpoints=args.checkpoints,
                         checkpoint_every=args.checkpoint_every, resume=args.resume,
                         max_prefetch_mb=args.max_prefetch_mb)
    if rank == 0:
        print(loader.prefetch, flush=True)
    seen = boxes = 0
    for epoch, batch in training_epochs(loader, args.epochs):
        images, labels = batch[0]["images"], batch[0]["labels"]
        # Your training step goes here: loss = criterion(model(images.permute(0, 3, 1, 2)), labels) ...
        # (with --coco/--masks, `labels` holds each image's targets: see make_loader).
        seen += images.shape[0]
        boxes += box_count(labels)
    print_seen(rank, world_size, seen, boxes, args.coco, args.epochs)


def main(argv=None):
    parser = contract_parser(__doc__.splitlines()[0], SEED, _threads(), "DALI CPU threads", shards=True)
    add_resize_argument(parser, FIXES_SIZE, SIZE_NOTE)
    add_prefetch_argument(parser, "DALI's pipeline keeps 2 batches ready (on a GPU in GPU memory); with a bound, one")
    parser.add_argument("--checkpoints", metavar="DIR",
                        help="training: write DALI's checkpoint of the pipeline (reader position, random states) into "
                             "DIR every --checkpoint-every batches and at each epoch's end, so that --resume starts "
                             "from the nearest one instead of reading every batch before it again")
    parser.add_argument("--checkpoint-every", type=int, default=CHECKPOINT_EVERY, metavar="N",
                        help=f"batches between checkpoints (default {CHECKPOINT_EVERY})")
    args = parser.parse_args(argv)
    if args.shards:
        check_shards_argument(parser, args)
    if training_refusal() and not args.save:
        raise SystemExit(training_refusal())
    one_line_on_bad_image(run_command, args, _save, _bench, _train, BOXES_NEEDED if WINDOW_STEPS else None)


if __name__ == "__main__":
    main()
