# The program every Albumentations export carries. Its docstring, imports and code are copied into
# each exported file as they stand (codegen/source_copy.py's program_source), with the definitions it
# imports from the workbench's other runtime modules; the names it imports from albumentations_chain
# are the export's chain section (albumentations_chain.py here: the empty chain).
"""Augmentation chain for Albumentations (CPU), exported by the augmentation workbench.

Use it as a module or as a script:
  python THIS_FILE --images DIR --seed N --save out.npz      # augmented images + sampled params
  python THIS_FILE --images DIR --bench --batch-size 64      # throughput of the training loader
  torchrun --nproc-per-node 2 THIS_FILE --images DIR --epochs 1   # the loader under DDP
  python THIS_FILE --images DIR --epochs 90 --skip-bad --resume 3:120   # see "Unreadable files" below

Export options: a program carries masks, boxes and keypoints (--coco, --masks) only when exported
with them (targets); the "Export options" section near the end of this file says whether this one
has them, and without them --coco stops with how to export them.

Reproducibility (`augment_images`, used by --save and by the workbench preview): images are
decoded by PIL to RGB and augmented one by one in file-name order by one `Compose` whose
transforms each have their own seed derived from the chain's seed. The training loader
augments in DataLoader worker processes; the worker making a batch reseeds its copy of the
pipeline from (seed, rank, epoch, batch), and each epoch's order comes from (seed, epoch), so
runs repeat exactly, whatever the number of workers, and --resume EPOCH:BATCH starts a run there
with the batches and draws an uninterrupted run has.

Unreadable files (truncated, empty, not an image): the loader, --save and --bench stop at the
first with one line naming it. --skip-bad puts the next readable file (and its label) in its
place, so that batches stay full and every rank keeps its number of batches, and names the files
at the end of each epoch (--save leaves them out); --exclude FILE leaves out the files a list
names (`workbench check DIR --full --exclude-list FILE` writes one).

Batch mixing (MixUp, CutMix): such a step mixes the whole batch in numpy (WbMixUp, WbCutMix),
the steps around it run one image at a time; the labels become float32 soft targets mixed with
the images' weights (--save writes them, the label of each file being its index). The training
loader's workers run the steps before the first mixing step, its collate the rest, on the batch.
"""

import os
from pathlib import Path

# Importing Albumentations otherwise asks PyPI for a newer version: a network call (up to
# 2 s where there is no network) in every process that imports this file.
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import albumentations as A
import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from .annotations import (annotated_inputs, batch_targets, loader_annotations, per_image, sample_targets,
                          target_arrays)
from .albumentations_chain import SEED, STEPS, TARGETS_REFUSED, augment_targets, build_compose
from .albumentations_mixing import mix_labels, mixes_batch, reads_boxes, split_at_mixing, stages_mix
from .bad_files import (decode_checked, one_line_errors, one_line_on_bad_image, readable, report_skipped,
                        save_folder_inputs, without_excluded)
from .common import (SIZE_LOOKS, add_prefetch_argument, batch_megabytes, bench_batches, box_count, check_resume,
                     contract_parser, derive_seed, distributed_context, forking_cleanly, prefetch_line, prefetch_plan,
                     print_rates, print_seen, record_arrays, run_command, soft_target_array, timed_rates)
from .file_table import training_files
from .sampling import EpochSampler
from .targets import BOXES_NEEDED


def augment_images(images, seed=SEED, device="cpu", labels=None, boxes=None):
    """Augment HxWx3 uint8 arrays in the given order with `seed`, as the workbench preview does.

    Returns (images, params): images as an NxHxWxC array (uint8, or float32 after a
    Normalize; a list when sizes differ), params as one dict per step of the pipeline of
    arrays with the sample index first ("batch_prob": 1 where the step applied; NaN where a
    value was not drawn). Given `labels` (class ids, or soft targets N x classes), also the
    labels as float32 soft targets, mixed by the mixing steps (MixUp, CutMix) with the weights
    they report: (images, params, labels). `boxes`: each image's boxes (K x 4, [x1, y1, x2, y2]
    pixels), which RandomIoUCrop draws its window from; a chain with such a step refuses to run
    without them.
    """
    if device != "cpu":
        raise ValueError(f"Albumentations runs on the CPU; got device {device!r}")
    compose = build_compose()
    stages = split_at_mixing(compose)
    seed_transforms(compose, seed)
    outputs, records, mixed = run_stages(stages, images, None if labels is None else soft_target_array(labels), boxes)
    out = np.stack(outputs) if len({o.shape for o in outputs}) == 1 else outputs
    return (out, records) if labels is None else (out, records, mixed)


def augment_each(compose, images):
    """(images, records): each image through `compose` on its own, and what each of its
    transforms drew, one record per transform (see stack_drawn)."""
    outputs, drawn = [], []
    for image in images:
        outputs.append(compose(image=np.ascontiguousarray(image))["image"])
        drawn.append([drawn_by(t) for t in compose.transforms])
    return outputs, [stack_drawn([d[k] for d in drawn]) for k in range(len(compose.transforms))]


def run_stages(stages, images, labels=None, boxes=None, records=None, sizes=None):
    """(images, records, labels) after `stages` (split_at_mixing's): a Compose runs on each
    image, a mixing step on the batch, which must be one size there; it mixes `labels` (soft
    targets, or None) too; a step that reads boxes on each image with its `boxes` (see
    augment_with_boxes). One record per step, in the chain's order. `records`: the draws of the
    chain's steps that already ran on `images` (which then entered the chain at `sizes`)."""
    records = [] if records is None else list(records)
    done = len(records)
    sizes = [image.shape[:2] for image in images] if sizes is None else sizes
    for first, stage in stages:
        if reads_boxes(stage):
            images, drawn = augment_with_boxes(stage, images, boxes, STEPS[first][1], records, sizes)
            records.append(drawn)
            continue
        if not mixes_batch(stage):
            images, drawn = augment_each(stage, images)
            records += drawn
            continue
        if len({image.shape for image in images}) > 1:
            name, position = STEPS[first]
            raise ValueError(f"step {position + 1} ({name}) mixes samples of one batch, but the images differ in "
                             "size there; add a Resize or a crop (CenterCrop, RandomResizedCrop) before it")
        batch, draws = stage.mix_batch(np.stack(images))
        images, labels = list(batch), mix_labels(labels, draws)
        records.append(draws)
    return images, records[done:], labels


def augment_with_boxes(transform, images, boxes, step, records, sizes):
    """(images, record): a transform that draws from each image's boxes (WbRandomIoUCrop), at chain
    step `step`, run on each image given its boxes as they stand there: `boxes` as the images entered
    the chain (at `sizes`), moved through the steps before it from what they drew (`records`), as the
    targets are moved after the chain (augment_targets' until=)."""
    given = None if boxes is None else {"boxes": list(boxes), "box_labels": [np.arange(len(b)) for b in boxes]}
    here = None if given is None else augment_targets(records, sizes, given, until=step)["boxes"]
    outputs, drawn = [], []
    for n, image in enumerate(images):
        forget(transform)
        transform.boxes = None if here is None else here[n]
        try:
            outputs.append(transform(image=np.ascontiguousarray(image))["image"])
        finally:
            transform.boxes = None
        # A window of None: the image was left as it is, which is not applying.
        drawn.append(drawn_by(transform) if transform.params.get("crop_box") is not None else None)
    return outputs, stack_drawn(drawn)


def drawn_by(transform):
    """What `transform` drew for the last image: its recorded values, None where it did not
    apply; for a group, ("group", applied, selected, what each child drew)."""
    if isinstance(transform, A.BaseCompose):
        return ("group", transform.applied, transform.selected.copy(), [drawn_by(t) for t in transform.transforms])
    return _recorded(transform.params) if transform.params else None


def stack_drawn(rows):
    """One step's draws for every image (see drawn_by) as arrays with the image index first."""
    if rows and isinstance(rows[0], tuple):
        return {"batch_prob": np.array([row[1] for row in rows], dtype=np.float64),
                "selected": np.stack([row[2] for row in rows]),
                "steps": [stack_drawn([row[3][k] for row in rows]) for k in range(len(rows[0][3]))]}
    record = {"batch_prob": np.array([row is not None for row in rows], dtype=np.float64)}
    # Values whose size differs per image (a kernel, a list of holes) are padded with NaN to
    # the largest; values whose number of dimensions differs are kept where they match the first.
    shapes = {}
    for row in rows:
        for key, value in (row or {}).items():
            known = shapes.setdefault(key, value.shape)
            if len(known) == value.ndim:
                shapes[key] = tuple(max(a, b) for a, b in zip(known, value.shape))
    for key, shape in shapes.items():
        record[key] = np.stack([_padded(row.get(key) if row is not None else None, shape) for row in rows])
    return record


def seed_transforms(compose, seed, *path):
    """Give each transform its own random stream, derived from `seed` and its position (a
    group's children from the group's position and theirs: 3, then 3.1, 3.2, ...).

    Compose(seed=...) hands every transform the same seed, so transforms with the same
    probability would flip their coins together (two flips at p=0.5 always co-occur)."""
    if not path:
        compose.set_random_seed(seed)
    for position, transform in enumerate(compose.transforms, start=1):
        transform.set_random_seed(derive_seed(seed, *path, position))
        if isinstance(transform, A.BaseCompose):
            seed_transforms(transform, seed, *path, position)
    return compose


def _recorded(params):
    """The numeric values a transform drew for one image (shapes and settings left out).

    A string drawn from a known finite set is kept as its index in that set (other strings are
    left out): `group_element` (A.D4, A.SquareSymmetry) is A's own order of the symmetries,
    "e" 0, "r90" 1, "r180" 2, "r270" 3, "v" 4, "hvt" 5, "h" 6, "t" 7
    (albumentations.core.type_definitions.d4_group_elements)."""
    choices = {"group_element": ("e", "r90", "r180", "r270", "v", "hvt", "h", "t")}
    out = {}
    for key, value in params.items():
        if isinstance(value, str):
            if key in choices and str(value) in choices[key]:
                out[key] = np.asarray(float(choices[key].index(str(value))))
            continue
        try:
            array = np.asarray(value) if isinstance(value, (int, float, list, tuple, np.ndarray, np.number)) else None
        except ValueError:  # nested items of uneven shapes ((alpha, (x, y), r)): one flat row per item
            rows = [_flat(item) for item in value]
            array = np.asarray(rows) if rows and len({len(r) for r in rows}) == 1 else None
        if array is not None and array.dtype.kind in "biuf" and key != "shape":
            out[key] = array.astype(np.float64)
    return out


def _flat(item):
    """The numbers of a nested item, in order: (0.5, (3, 4), 2) -> [0.5, 3, 4, 2]."""
    if isinstance(item, (list, tuple, np.ndarray)):
        return [v for part in item for v in _flat(part)]
    return [item]


def _padded(value, shape):
    """`value` in an array of `shape` (NaN where it has no entry), or all NaN if it cannot fit."""
    out = np.full(shape, np.nan)
    if value is not None and value.ndim == len(shape):
        out[tuple(slice(0, n) for n in value.shape)] = value
    return out


# ---------------------------------------------------------------------------------------
# Training loader: decode and augment on worker processes, hand batches to PyTorch.
# ---------------------------------------------------------------------------------------
class AugmentedImageFolder(Dataset):
    """Image files under `root` (recursive, name order), augmented by the chain; the label is
    the index of the first-level sub-folder (ImageFolder layout), 0 for files directly in `root`.

    With `coco` (a COCO instances file) and/or `masks` (a folder of label-map PNGs), the files
    that have annotations only, and each sample's label is its targets moved as its pixels were:
    a dict of "boxes", "box_labels", "keypoints", "keypoints_visible" and "mask" (those given),
    moved by the very code --save and the workbench use (augment_targets).

    Items are asked for by EpochSampler's (index, epoch, batch): the pipeline is seeded from
    (seed, rank, epoch, batch) at each batch's first item (a batch is made by one worker, in
    order), so a batch's draws do not depend on which worker made it nor on the batches before:
    a resumed run (training_batches' resume=) draws what an uninterrupted one draws. A file that
    cannot be decoded is a BadImageError naming it; with `skip_bad` the next readable file (and its
    label) takes its place, the item's third part naming the files passed over. `exclude`: an
    exclusion list (see read_exclusions) of files to leave out; `index`: the folder's index file
    (`workbench index`), read instead of listing the folder."""

    def __init__(self, root, seed=SEED, coco=None, masks=None, skip_bad=False, exclude=None, index=None):
        self.root, self.skip_bad = Path(root), skip_bad
        self.annotations = None if coco is None and masks is None else loader_annotations(root, coco, masks,
                                                                                          TARGETS_REFUSED)
        files = training_files(self.root, index, None if self.annotations is None else self.annotations["files"])
        self.files = without_excluded(files, self.root, exclude)
        if self.annotations is not None and len(self.files) != len(files):
            raise ValueError("--exclude with --coco/--masks: leave the files out of the annotations instead")
        if not len(self.files):
            raise FileNotFoundError(f"no image files under {self.root}")
        # Numpy arrays, not a list per file: workers read them without copying them (file_table.py).
        self.classes, self.labels = self.files.classes, self.files.labels
        self.seed, self.compose = seed, build_compose()
        if self.annotations is None and any(reads_boxes(t) for t in self.compose.transforms):
            raise ValueError(BOXES_NEEDED)
        self.reseed(0, 0)

    def reseed(self, epoch, batch):
        """Seed this copy of the pipeline from (seed, rank, epoch, batch)."""
        rank = distributed_context()[0]
        # Split first: the stretches' Composes share the transforms seeded here.
        self.stages = split_at_mixing(self.compose)
        seed_transforms(self.compose, derive_seed(self.seed, rank, epoch, batch))
        self.seeded_for = (epoch, batch)

    def __len__(self):
        return len(self.files)

    def decoded(self, i):
        """File i's image (uint8 HWC) and its position; a BadImageError where it cannot be decoded."""
        return decode_checked(self.files[i]), i

    def __getitem__(self, item):
        i, epoch, batch = item if isinstance(item, tuple) else (item, *self.seeded_for)
        if (epoch, batch) != self.seeded_for:
            self.reseed(epoch, batch)
        if self.skip_bad:
            (image, i), skipped = readable(self.decoded, i, len(self))
        else:
            (image, i), skipped = self.decoded(i), ()
        return (*self.augmented(image, i), skipped)

    def augmented(self, image, i):
        """File i's image augmented (uint8 CHW) and its label (see the class)."""
        if stages_mix(self.stages):
            # A chain that mixes the batch: the steps before its first mixing step (collate runs the rest,
            # and moves the targets from what every step drew).
            first = self.stages[0][1]
            alone = mixes_batch(first) or reads_boxes(first)  # (then collate runs every stage)
            out = image if alone else first(image=image)["image"]
            label = int(self.labels[i]) if self.annotations is None else {
                "targets": sample_targets(self.annotations, i), "size": image.shape[:2],
                "drawn": [] if alone else [drawn_by(transform) for transform in first.transforms]}
        elif self.annotations is None:
            out, label = self.compose(image=image)["image"], int(self.labels[i])
        else:
            out, label = self.augment_annotated(image, i)
        return torch.from_numpy(np.ascontiguousarray(out)).permute(2, 0, 1), label

    def augment_annotated(self, image, i):
        """File i's image augmented, and its targets moved from what the pipeline drew for it."""
        targets = batch_targets([sample_targets(self.annotations, i)])
        (out,), records, _ = run_stages(self.stages, [image], boxes=targets.get("boxes"))
        return out, per_image(augment_targets(records, [image.shape[:2]], targets))[0]

    def collate(self, batch):
        """collate's batch; for a chain that mixes the batch, after the steps from its first mixing
        step on (__getitem__ ran the others), with the labels as float32 soft targets over the
        classes, mixed as the images were (with annotations: the targets, moved and mixed as the
        pixels were, one dict per image)."""
        if not stages_mix(self.stages):
            return collate(batch)
        images, labels, skipped = zip(*batch)
        arrays = [image.permute(1, 2, 0).numpy() for image in images]
        first = self.stages[0][1]
        stages = self.stages if mixes_batch(first) or reads_boxes(first) else self.stages[1:]
        if self.annotations is None:
            rows = soft_target_array(np.asarray(labels), max(1, len(self.classes)))
            arrays, _, targets = run_stages(stages, arrays, rows)
            targets = torch.from_numpy(targets)
        else:
            head = [stack_drawn([label["drawn"][k] for label in labels]) for k in range(len(labels[0]["drawn"]))]
            given, sizes = batch_targets([label["targets"] for label in labels]), [label["size"] for label in labels]
            arrays, records, _ = run_stages(stages, arrays, boxes=given.get("boxes"), records=head, sizes=sizes)
            moved = augment_targets(head + records, sizes, given)
            targets = [{kind: torch.as_tensor(value) for kind, value in target.items()} for target in per_image(moved)]
        out = [torch.from_numpy(np.ascontiguousarray(a)).permute(2, 0, 1) for a in arrays]
        return (torch.stack(out) if len({tuple(o.shape) for o in out}) == 1 else out), targets, sum(skipped, ())


def opencv_alone(worker_id):
    """A worker runs OpenCV without its thread pool: the parent's pool does not survive the fork (a
    forked worker entering it can wait forever), and workers x cores threads would only contend
    for the cores the workers already share."""
    cv2.setNumThreads(0)


def collate(batch):
    """Stack same-size images into one NCHW tensor (a list when sizes differ); the labels as one
    tensor, or the targets as a list of dicts of tensors, one per image; and the files skipped
    for the batch (--skip-bad), as (name, problem)."""
    images, labels, skipped = zip(*batch)
    if len({tuple(i.shape) for i in images}) == 1:
        images = torch.stack(images)
    if isinstance(labels[0], dict):
        labels = [{kind: torch.as_tensor(value) for kind, value in label.items()} for label in labels]
    else:
        labels = torch.tensor(labels, dtype=torch.long)
    return images, labels, sum(skipped, ())


def to_device(value, device):
    """A tensor, or a list or tuple of tensors (images of several sizes) or of dicts of them
    (targets), on `device`; a list comes back for a list or a tuple."""
    if isinstance(value, dict):
        return {key: to_device(item, device) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_device(item, device) for item in value]
    return value.to(device, non_blocking=True)


def make_loader(root, batch_size, workers=4, seed=SEED, num_samples=None, pin_memory=False, coco=None, masks=None,
                skip_bad=False, exclude=None, index=None, max_prefetch_mb=None):
    """DataLoader over an image folder: shuffled (each epoch's order from (seed, epoch): call
    `loader.sampler.set_epoch(epoch)`), sharded by rank under torchrun, augmenting on `workers`
    processes; batches are (images, labels, skipped). `skip_bad`, `exclude`: see
    AugmentedImageFolder.

    `num_samples` draws that many samples with replacement (for benchmarks on small folders).
    `coco`, `masks`: the annotated images only, with their targets (see AugmentedImageFolder).
    Each worker keeps PREFETCH_BATCHES batches ready, fewer (then fewer workers) to hold at most
    `max_prefetch_mb` MB, reckoned at the files' decoded size (prefetch_plan); `loader.prefetch`
    says what it holds.
    A chain that mixes the batch (MixUp, CutMix) mixes it in the collate, in the worker that
    made it, labels with it (see AugmentedImageFolder.collate).
    """
    dataset = AugmentedImageFolder(root, seed, coco, masks, skip_bad, exclude, index)
    rank, world_size, _ = distributed_context()
    sampler = EpochSampler(dataset, batch_size, seed, rank, world_size, num_samples)
    batch_mb = batch_megabytes([dataset.files[k] for k in range(min(SIZE_LOOKS, len(dataset)))], batch_size)
    workers, factor = prefetch_plan(workers, batch_mb, max_prefetch_mb)
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=workers,
                        collate_fn=dataset.collate, pin_memory=pin_memory, drop_last=True, worker_init_fn=opencv_alone,
                        generator=torch.Generator().manual_seed(seed), prefetch_factor=factor)
    loader.prefetch = prefetch_line(workers, factor, batch_mb, pin_memory)
    return loader


def training_batches(root, batch_size, epochs=1, workers=4, seed=SEED, device=None, num_samples=None, coco=None,
                     masks=None, skip_bad=False, exclude=None, resume=None, index=None, max_prefetch_mb=None,
                     said=None):
    """Yield (epoch, augmented batch NCHW on `device`, labels): the loop to train with.

    Labels are class ids; when a step mixes the batch (MixUp, CutMix) they are float32 soft
    targets (batch x classes) mixed like the images, which torch's cross_entropy takes as they are.

    With `coco` (a COCO instances file) and/or `masks` (a folder of label-map PNGs named after
    the images), the annotated images only, and in place of the labels their targets moved as
    the pixels were: a list with one dict per image of "boxes" (K x 4, xyxy pixels), "box_labels",
    "keypoints" (K x 2) with "keypoints_visible", and "mask" (H x W), those given, on `device`.

    Each batch is augmented from (seed, rank, epoch, batch) and each epoch's order comes from
    (seed, epoch) (EpochSampler): `resume=(epoch, batch)` starts a run there with the batches and
    draws an uninterrupted run has from there on. A file that cannot be decoded stops the loop
    with a BadImageError naming it; with `skip_bad` the next readable file takes its place
    (batches stay full, every rank keeps its number of batches) and the files passed over are
    named at the end of each epoch. `exclude`: an exclusion list of files to leave out.

    Example:
        for epoch, images, labels in training_batches("train/", 64):
            loss = criterion(model(images.float() / 255), labels)
        for epoch, images, targets in training_batches("train/", 16, coco="instances.json"):
            boxes = [t["boxes"] for t in targets]
    """
    rank, world_size, local_rank = distributed_context()
    if device is None:
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device)  # pinned memory and copies use the current device: this rank's
    start_epoch, start_batch = check_resume(resume, epochs)
    loader = make_loader(root, batch_size, workers, seed, num_samples, pin_memory=device.type == "cuda", coco=coco,
                         masks=masks, skip_bad=skip_bad, exclude=exclude, index=index, max_prefetch_mb=max_prefetch_mb)
    if said is not None:
        said(loader.prefetch)
    for epoch in range(start_epoch, epochs):
        loader.sampler.set_epoch(epoch, start_batch if epoch == start_epoch else 0)
        skipped_in_epoch = []
        for images, labels, skipped in one_line_errors(forking_cleanly(loader, workers > 0)):
            skipped_in_epoch += skipped
            yield epoch, to_device(images, device), to_device(labels, device)
        report_skipped(skipped_in_epoch, epoch, rank, world_size)


def _save(args):
    # With --coco/--masks: the annotated images only, and their targets moved as the pixels were.
    annotated = args.coco or args.masks
    if annotated:
        images, targets = annotated_inputs(args, TARGETS_REFUSED)
    else:
        images = save_folder_inputs(args)
    # A mixing chain also saves its mixed labels, the label of each file being its index, so
    # that each row shows which files were mixed in and by how much (as the workbench preview).
    labels = np.arange(len(images)) if any(mixes_batch(t) for t in build_compose().transforms) else None
    out, records, *mixed = augment_images(images, seed=args.seed, device=args.device or "cpu", labels=labels,
                                          boxes=targets.get("boxes") if annotated else None)
    arrays = {"images": out} if not isinstance(out, list) else {f"image_{i:05d}": o for i, o in enumerate(out)}
    if mixed:
        arrays["labels"] = mixed[0]
    arrays.update(record_arrays(STEPS, records))
    if annotated:
        arrays.update(target_arrays(augment_targets(records, [image.shape[:2] for image in images], targets)))
    np.savez(args.save, **arrays)
    print(f"saved {len(images)} augmented images and their sampled parameters to {args.save}")


def bench_rates(root, batch_size, batches=20, warmup=3, runs=1, workers=4, seed=SEED, device=None,
                progress=None, coco=None, masks=None, skip_bad=False, exclude=None, index=None, max_prefetch_mb=None,
                said=None):
    """Images/s of the training loader (decode and augment on workers, collate, hand over)
    over `runs` stretches of `batches` batches after `warmup`; --bench prints one, the
    workbench's estimate several. `coco`, `masks`: with targets; `skip_bad`, `exclude`: see
    training_batches."""
    device = torch.device(device or "cpu")
    # Samples to spare: the workers keep working until the last timed batch, as in training.
    spare = 4 * max(1, workers) + 1
    total = batch_size * (warmup + batches * runs + spare)
    loop = training_batches(root, batch_size, epochs=1, workers=workers, seed=seed, device=device, num_samples=total,
                            coco=coco, masks=masks, skip_bad=skip_bad, exclude=exclude, index=index,
                            max_prefetch_mb=max_prefetch_mb, said=said)
    try:
        return timed_rates(loop, lambda batch: len(batch[2]), batches, warmup, runs, None, progress)
    finally:
        loop.close()  # stops the worker processes now, not whenever the loader is collected


def _bench(args):
    device = args.device or "cpu"
    batches = bench_batches(args.batch_size, args.batches)
    rates = bench_rates(args.images, args.batch_size, batches, args.warmup, args.runs, args.workers, args.seed, device,
                        coco=args.coco, masks=args.masks, skip_bad=args.skip_bad, exclude=args.exclude,
                        index=args.index, max_prefetch_mb=args.max_prefetch_mb, said=print)
    print(f"device: {device}, batch size: {args.batch_size}, workers: {args.workers}, "
          f"{args.runs} run(s) of {batches} batches after {args.warmup} warm-up")
    print_rates(rates)


def _train(args):
    rank, world_size, _ = distributed_context()
    if world_size > 1:
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    seen = boxes = 0
    for epoch, images, labels in training_batches(args.images, args.batch_size, args.epochs, args.workers,
                                                  args.seed, args.device, coco=args.coco, masks=args.masks,
                                                  skip_bad=args.skip_bad, exclude=args.exclude, resume=args.resume,
                                                  index=args.index, max_prefetch_mb=args.max_prefetch_mb,
                                                  said=print if rank == 0 else None):
        # Your training step goes here: loss = criterion(model(images.float() / 255), labels) ...
        # (with --coco/--masks, `labels` holds each image's targets: see training_batches).
        seen += len(labels)
        boxes += box_count(labels)
    print_seen(rank, world_size, seen, boxes, args.coco, args.epochs)
    if world_size > 1:
        torch.distributed.destroy_process_group()


def main(argv=None):
    parser = contract_parser(__doc__.splitlines()[0], SEED, min(4, os.cpu_count() or 1), "augmenting processes")
    add_prefetch_argument(parser)
    args = parser.parse_args(argv)
    reading = any(reads_boxes(transform) for transform in build_compose().transforms)
    one_line_on_bad_image(run_command, args, _save, _bench, _train, BOXES_NEEDED if reading else None)



# Groups (OneOf, SomeOf, Sequential): build_compose writes them as StepGroup transforms.
class StepGroup(A.BaseCompose):
    """A group of steps that chooses per image which of them run: kind "one" (OneOf) runs one
    child, chosen by `weights`; "some" (SomeOf) runs `n` children, chosen uniformly without
    replacement, in their order; "all" (Sequential) runs every child. `p` gates the whole
    group; a chosen child still applies with its own p (Albumentations' own OneOf would force
    it, and take the children's p as weights)."""

    def __init__(self, kind, transforms, p=1.0, weights=None, n=1):
        super().__init__(transforms, p)
        self.kind, self.n = kind, n
        weights = np.asarray(weights if weights else [1.0] * len(transforms), dtype=np.float64)
        self.weights = weights / weights.sum()
        self.applied, self.selected = False, np.zeros(len(transforms))

    def __call__(self, *args, force_apply=False, **data):
        for transform in self.transforms:
            forget(transform)
        self.selected = np.zeros(len(self.transforms))
        self.applied = bool(self.py_random.random() < self.p)
        if not self.applied:
            return data
        if self.kind == "one":
            chosen = [int(self.random_generator.choice(len(self.transforms), p=self.weights))]
        elif self.kind == "some":
            chosen = sorted(self.random_generator.choice(len(self.transforms), size=self.n, replace=False))
        else:
            chosen = range(len(self.transforms))
        for k in chosen:
            self.selected[k] = 1.0
            data = self.transforms[k](**data)
        return data


def forget(transform):
    """Clear what a transform (or group) drew, so that one not run for this image reports nothing."""
    if isinstance(transform, StepGroup):
        transform.applied, transform.selected = False, np.zeros(len(transform.transforms))
        for child in transform.transforms:
            forget(child)
    else:
        transform.params = {}


if __name__ == "__main__":
    main()
