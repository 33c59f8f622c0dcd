"""Code shared by `workbench.load_images` and every exported script.

The exporters copy the functions their program uses, with this module's imports they need, into
the files they write (codegen/source_copy.py), so the preview and the exported code decode the
same files the same way (PIL, RGB, files in name order), and every export takes the same
command-line flags.
"""
import argparse
import gc
import os
import tarfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

IMAGE_EXTENSIONS = (".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")

# The features an export carries only when it is made with them (codegen/options.py), in words.
EXPORT_OPTIONS = {
    "targets": "masks, boxes and keypoints (--coco, --masks)",
    "shards": "WebDataset tar shards (--shards)",
    "gpu_decode": "JPEG decoding on the GPU (--decoder nvimgcodec, torchvision, or auto on CUDA)",
}


def left_out(option):
    """A stand-in for the code of a feature this script was exported without: called, it stops
    with one line that says how to export the feature.

    Example:
        >>> read_webdataset = left_out("shards")
        >>> read_webdataset("train-{0000..0009}.tar")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        SystemExit: WebDataset tar shards (--shards): this script was exported without them. Export ... shards=True...
    """
    flag = "--" + option.replace("_", "-")

    def stand_in(*args, **kwargs):
        raise SystemExit(f"{EXPORT_OPTIONS[option]}: this script was exported without them. Export the chain again "
                         f"with {option}=True: chain.export(..., {option}=True), `workbench export ... {flag}`, "
                         f'or the "{option}" box of the app\'s export panel.')
    return stand_in


def not_in_chain(feature):
    """A stand-in for workbench code this script's chain never runs (the export leaves it out, see
    the export options section): called, it is a bug of the workbench's export, and says so."""

    def stand_in(*args, **kwargs):
        raise RuntimeError(f"this script was exported without the code of {feature}, which its chain was judged "
                           "never to run: a bug of the augmentation workbench's export; please report it with "
                           "the chain (export again from a newer workbench to go on)")
    return stand_in


def image_names(root):
    """The image files under `root` (recursive) as their paths relative to it (posix), sorted:
    one os.scandir pass (each entry's type comes with the listing: no stat per file) and one
    sort, the way the loaders list a folder of millions of files.

    Example:
        >>> image_names("workbench/sample_data")[:2]
        ['astronaut.jpg', 'camera.png']
    """
    names, folders = [], [("", os.fspath(root))]
    while folders:
        prefix, folder = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir() and not entry.is_symlink():  # (as Path.rglob: no loops through links)
                    folders.append((f"{prefix}{entry.name}/", entry.path))
                elif os.path.splitext(entry.name)[1].lower() in IMAGE_EXTENSIONS and entry.is_file():
                    names.append(prefix + entry.name)
    names.sort()
    return names


def list_image_files(root):
    """Image files under `root` (recursive), sorted by their path relative to `root` (image_names)."""
    root = Path(root)
    return [root / name for name in image_names(root)]


def decode_image(path):
    """Decode one file with PIL to an RGB uint8 array of shape (height, width, 3).

    16-bit greyscale keeps its top 8 bits (PIL's own conversion would clip it to white).
    """
    with Image.open(path) as image:
        image.load()
        if image.mode.startswith("I;16") or image.mode == "I":
            grey = (np.asarray(image).astype(np.uint32) >> 8).clip(0, 255).astype(np.uint8)
            return np.repeat(grey[:, :, None], 3, axis=2)
        return np.asarray(image.convert("RGB"), dtype=np.uint8).copy()


def distributed_context():
    """(rank, world_size, local_rank) from the torchrun environment; (0, 1, 0) otherwise."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


def derive_seed(seed, *keys):
    """An independent 31-bit seed for (seed, rank, epoch, ...)."""
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1)[0]) % 2**31


def bench_batches(batch_size, batches=None):
    """Batches per timed run: `batches`, or at least 256 images' worth (2 batches or more)."""
    return batches if batches is not None else max(2, -(-256 // batch_size))


def record_arrays(steps, records):
    """The per-step records of a run as flat {name: array} for np.savez: params.step<N>_<op>.<key>,
    a group's children's as params.step<N>_<op>.child<K>.<key> (K-th enabled child)."""
    arrays = {}

    def add(prefix, record):
        for key, value in record.items():
            if key == "steps":
                for k, child in enumerate(value, start=1):
                    add(f"{prefix}.child{k}", child)
            else:
                arrays[f"{prefix}.{key}"] = value

    for (name, position), record in zip(steps, records):
        add(f"params.step{position + 1}_{name}", record)
    return arrays


def median(values):
    """The median of a non-empty list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def timed_rates(batches, count, batch_count, warmup=3, runs=1, sync=None, progress=None):
    """Images/s of `runs` back-to-back stretches of `batch_count` batches drawn from the
    iterator `batches`, after `warmup` untimed batches; `count(batch)` is its image count.

    `--bench` prints one stretch; the workbench's estimate takes the median of several.
    `sync` waits for queued GPU work; `progress(done, total)` is called after each batch.
    """
    total, done = warmup + batch_count * runs, 0

    def take():
        nonlocal done
        try:
            batch = next(batches)
        except StopIteration:
            raise RuntimeError(f"the loader ran out after {done} of the {total} batches to time; "
                               "give it more samples or time fewer batches") from None
        done += 1
        if progress is not None:
            progress(done, total)
        return batch

    for _ in range(warmup):
        take()
    if sync is not None:
        sync()
    rates, start = [], time.perf_counter()
    for _ in range(runs):
        images = 0
        for _ in range(batch_count):
            images += count(take())
        if sync is not None:
            sync()
        now = time.perf_counter()
        rates.append(images / (now - start))
        start = now
    return rates


def print_rates(rates):
    """--bench's last lines: each run's images/s and their median."""
    print("runs (images/s): " + ", ".join(f"{r:.1f}" for r in rates))
    print(f"images/s: {median(rates):.1f}")


def box_count(labels):
    """How many boxes a training batch's targets hold (0 where the labels are class ids).

    Example:
        >>> box_count([{"boxes": [[0, 0, 1, 1]]}, {"boxes": []}]), box_count(np.zeros(4))
        (1, 0)
    """
    return sum(len(target.get("boxes", ())) for target in labels) if isinstance(labels, list) else 0


def print_seen(rank, world_size, seen, boxes, coco, epochs):
    """The training loop's last line: what this rank augmented (and, with --coco, how many boxes)."""
    targets = f", {boxes} boxes" if coco else ""
    print(f"rank {rank}/{world_size}: {seen} augmented images{targets} over {epochs} epoch(s)")


def run_command(args, save, bench, train, refused=None):
    """An export's command: --save, else --bench, else the training loop, each given the parsed args.
    `refused`: why this chain cannot run the command without --coco (a step draws from the boxes:
    RandomIoUCrop), or None; then the command stops with that reason instead of a traceback."""
    if refused and not args.coco:
        raise SystemExit(f"--coco needed: {refused}")
    if getattr(args, "resume", None) is not None:
        try:
            check_resume(args.resume, args.epochs)
        except ValueError as error:
            raise SystemExit(str(error)) from None
    try:
        if args.save:
            save(args)
        elif args.bench:
            bench(args)
        else:
            train(args)
    except PrefetchBoundError as error:
        raise SystemExit(str(error)) from None


def size_argument(text):
    """A --resize value: "HxW" or "N" (square) as (height, width).

    Example:
        >>> size_argument("224x192"), size_argument("256")
        ((224, 192), (256, 256))
    """
    try:
        sides = tuple(int(side) for side in text.lower().split("x"))
    except ValueError:
        sides = ()
    if len(sides) not in (1, 2) or min(sides) < 1:
        raise argparse.ArgumentTypeError(f"expected HxW (e.g. 224x224) or one side, got {text!r}")
    return sides * 2 if len(sides) == 1 else sides


def first_two_sizes(files):
    """The first two of `files`, in order, whose images differ in size, as (path, (height,
    width)) each, or None when they all have one size. Only headers are read (PIL's `size`
    decodes no pixels), and the scan stops at the first difference: at once on a folder of
    mixed sizes. Files PIL cannot open are skipped (their own error comes where they are read).

    Example:
        >>> first_two_sizes(sorted(Path("workbench/sample_data").glob("*.jpg")))[1][1]
        (300, 451)
    """
    first = None
    for path in files:
        try:
            with Image.open(path) as image:
                width, height = image.size
        except OSError:
            continue
        if first is None:
            first = (str(path), (height, width))
        elif (height, width) != first[1]:
            return first, (str(path), (height, width))
    return None


def mixed_sizes_error(first, second, fix):
    """The error for a training batch whose images differ in size while no step of the chain
    has made them one size: it names two of the files, (path, (height, width)) each, and `fix`
    says what to do (the export's SIZE_FIX).

    Example:
        >>> str(mixed_sizes_error(("a.jpg", (512, 512)), ("b.jpg", (427, 640)), "pass --resize HxW"))[:59]
        'the training images differ in size: a.jpg is 512x512, b.jpg'
    """
    (file_a, (h_a, w_a)), (file_b, (h_b, w_b)) = first, second
    return ValueError(f"the training images differ in size: {file_a} is {h_a}x{w_a}, {file_b} is {h_b}x{w_b} "
                      f"(height x width), and no step of the chain makes them one size before a batch must be one "
                      f"tensor. To train on this folder, {fix}.")


def check_one_size(shapes, files, fix, name_of=None):
    """Raise mixed_sizes_error when `shapes` (a training batch's (height, width) per sample)
    differ. It names two samples by `name_of(k)` where that gives a file for both, else the
    first two of `files` whose headers differ (first_two_sizes), else their batch positions.

    Example:
        >>> check_one_size([(4, 5), (4, 5)], [], "pass --resize HxW")
        >>> check_one_size([(4, 5), (6, 5)], [], "pass --resize HxW")
        Traceback (most recent call last):
        ...
        ValueError: the training images differ in size: sample 0 of the batch is 4x5, sample 1 of the batch is 6x5 ...
        To train on this folder, pass --resize HxW.
    """
    other = next((k for k, shape in enumerate(shapes) if shape != shapes[0]), None)
    if other is None:
        return
    pair = [(name_of(k), shapes[k]) for k in (0, other)] if name_of else []
    if not (pair and all(name for name, _ in pair)):
        pair = first_two_sizes(files) or [(f"sample {k} of the batch", shapes[k]) for k in (0, other)]
    raise mixed_sizes_error(*pair, fix)


def loader_resize(resize):
    """A training loader's `resize=` argument checked: None, or (height, width) in pixels.

    Example:
        >>> loader_resize([224, 192]), loader_resize(None)
        ((224, 192), None)
    """
    if resize is None:
        return None
    resize = tuple(int(side) for side in resize)
    if len(resize) != 2 or min(resize) < 1:
        raise ValueError(f"resize must be (height, width) in pixels, got {resize!r}")
    return resize


def add_resize_argument(parser, fixes_size, note):
    """The training loaders' --resize flag, and `note` (the export's SIZE_NOTE) under --help."""
    parser.add_argument("--resize", type=size_argument, metavar="HxW",
                        help="training and --bench: resize every image to HxW (one number: square) where the batch "
                             "must first be one size" + ("" if fixes_size else "; needed for a folder of mixed sizes"))
    parser.epilog = note


# Batches each DataLoader worker keeps ready (its prefetch_factor), unless --max-prefetch-mb bounds them.
PREFETCH_BATCHES = 4
# How many files' headers give the size a batch is reckoned at (the largest of them).
SIZE_LOOKS = 64


def batch_megabytes(sources, batch_size):
    """The size (MB) of a batch of `batch_size` decoded uint8 RGB images as large as the largest
    image among `sources` (paths or file objects: only their headers are read); 0 without any.

    Example:
        >>> round(batch_megabytes(["workbench/sample_data/astronaut.jpg"], 64), 1)  # 512 x 512
        50.3
    """
    largest = 0
    for source in sources:
        try:
            with Image.open(source) as image:
                largest = max(largest, image.width * image.height)
        except OSError:
            continue
    return largest * 3 * batch_size / 1e6


class PrefetchBoundError(ValueError):
    """A --max-prefetch-mb (max_prefetch_mb=) too small for one batch; the command line says it in one line."""


def prefetch_plan(workers, batch_mb, max_mb=None, batches=PREFETCH_BATCHES):
    """(workers, prefetch factor) for a loader whose batches are about `batch_mb` MB: each worker
    keeps `batches` ready, fewer (then fewer workers) to hold at most `max_mb` MB.
    A bound below one batch is a PrefetchBoundError that says what to change.

    Example:
        >>> prefetch_plan(4, 10.0), prefetch_plan(4, 10.0, max_mb=100), prefetch_plan(4, 10.0, max_mb=25)
        ((4, 4), (4, 2), (2, 1))
    """
    if workers == 0:
        return 0, None
    if max_mb is None or batch_mb <= 0:
        return workers, batches
    factor = min(batches, int(max_mb // (workers * batch_mb)))
    if factor >= 1:
        return workers, factor
    if max_mb < batch_mb:
        raise PrefetchBoundError(f"--max-prefetch-mb {max_mb:g} is less than one batch ({batch_mb:.1f} MB): lower "
                                 "--batch-size or raise the bound")
    return int(max_mb // batch_mb), 1


def prefetch_line(workers, factor, batch_mb, pinned):
    """What a loader's prefetch holds, in one line (said at start-up by --bench and training)."""
    if not workers:
        return "prefetch: none (--workers 0: the main process decodes each batch when it is needed)"
    return (f"prefetch: {workers} worker(s) x {factor} batch(es) x {batch_mb:.1f} MB (the largest of the first "
            f"{SIZE_LOOKS} images, decoded) = {workers * factor * batch_mb:.0f} MB of host memory"
            + (", pinned for the copy to the GPU" if pinned else "") + "; --max-prefetch-mb bounds it")


def add_prefetch_argument(parser, how=None):
    """The loaders' --max-prefetch-mb flag; `how` says what the prefetch holds (default: a DataLoader's)."""
    how = how or (f"each of --workers keeps {PREFETCH_BATCHES} batches ready (workers x batches x a batch's decoded "
                  "bytes, pinned on a GPU); with a bound, fewer batches each, then fewer workers")
    parser.add_argument("--max-prefetch-mb", type=float, metavar="MB",
                        help=f"memory the prefetch may hold, said at start-up: {how}")


def forking_cleanly(batches, forks=True):
    """The batches of a DataLoader whose worker processes start (fork) when it is first read, with
    the garbage collected and everything else frozen (gc.freeze) until the first batch is in.
    Garbage the parent holds would otherwise be finalized in a worker, where objects with threads
    of their own cannot be: a worker that collected a DALI pipeline (from a preview, an earlier
    loader) waited forever in its destructor. Frozen, the parent's objects are also not traversed
    by the workers' collections, which would copy their pages (see file_table.py). `forks`: whether
    reading `batches` starts workers (not with --workers 0, nor in a persistent loader's later
    epochs): the batches as they come otherwise (a full collection in a big process is slow).

    Example:
        >>> list(forking_cleanly([1, 2])), gc.get_freeze_count()
        ([1, 2], 0)
    """
    if not forks:
        yield from batches
        return
    gc.collect()
    gc.freeze()
    frozen = True
    try:
        for batch in batches:
            if frozen:
                gc.unfreeze()
                frozen = False
            yield batch
    finally:
        if frozen:
            gc.unfreeze()


def contract_parser(description, seed, workers_default, workers_help, shards=False):
    """The flags every exported script takes (--images, --seed, --save, --bench, ...). With
    `shards` the images come from --images or from --shards (WebDataset tar shards), one of them;
    check_shards_argument then expands --shards."""
    parser = argparse.ArgumentParser(description=description)
    images_help = "folder of images (recursive; sub-folders are classes)"
    if shards:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--images", help=images_help)
        source.add_argument("--shards", metavar="PATTERN",
                            help="WebDataset tar shards instead of a folder: a brace range ('train-{0000..0099}.tar'), "
                                 "a glob ('train-*.tar') or a comma-separated list of them, quoted so that the shell "
                                 "passes it as it is; each sample is an image (.jpg, .png, ...) with an optional .cls "
                                 "member holding its class id (0 without one)")
    else:
        parser.add_argument("--images", required=True, help=images_help)
    parser.add_argument("--seed", type=int, default=seed, help=f"random seed (default {seed})")
    parser.add_argument("--save", help="write augmented images and sampled params to this .npz file")
    parser.add_argument("--bench", action="store_true", help="measure the training loader's throughput")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=None, help="batches per timed run of --bench "
                        "(default: at least 256 images' worth)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of --bench; it prints their median")
    parser.add_argument("--warmup", type=int, default=3, help="batches run before timing")
    parser.add_argument("--workers", type=int, default=workers_default, help=workers_help)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--device", help="cpu, cuda or cuda:N (default: cpu for --save, else cuda if present)")
    parser.add_argument("--coco", help="a COCO instances file: only the images it lists are augmented (saved, timed "
                                       "or trained on), and their boxes, labels and keypoints move with the pixels")
    parser.add_argument("--masks", help="a folder of label-map PNGs named after the images (cat.jpg: cat.png), "
                                        "which move with the pixels (saved, timed or trained on)")
    parser.add_argument("--skip-bad", action="store_true",
                        help="skip files that cannot be decoded (truncated, empty, not an image) and name them at the "
                             "end of each epoch, instead of stopping at the first; training and --bench fill their "
                             "place in the batch with the next readable file (DALI: decodes every file ahead and "
                             "leaves them out), --save leaves them out")
    parser.add_argument("--exclude", metavar="FILE",
                        help="leave out the files this list names (one per line, relative to --images, or "
                             "SHARD:KEY for a shard's sample), as `workbench check DIR --exclude-list FILE` writes it")
    parser.add_argument("--index", metavar="FILE",
                        help="training and --bench: read the folder's list of files and labels from this index file "
                             "(`workbench index DIR -o FILE` writes it) instead of listing the folder: seconds for "
                             "millions of files, on every rank and restart")
    parser.add_argument("--resume", type=resume_argument, metavar="EPOCH:BATCH",
                        help="training: start at this epoch and batch (both from 0) with the batches and draws an "
                             "uninterrupted run has there, e.g. after a preempted job")
    return parser


def resume_argument(text):
    """A --resume value: "EPOCH:BATCH" (both from 0) as (epoch, batch).

    Example:
        >>> resume_argument("2:150")
        (2, 150)
    """
    epoch, _, batch = text.partition(":")
    if not (epoch.strip().isdigit() and batch.strip().isdigit()):
        raise argparse.ArgumentTypeError(f"expected EPOCH:BATCH, both whole numbers from 0 (e.g. 2:150), got {text!r}")
    return int(epoch), int(batch)


def check_resume(resume, epochs):
    """(epoch, batch) to start training at, checked against the number of epochs: (0, 0) for None.

    Example:
        >>> check_resume(None, 3), check_resume((1, 20), 3)
        ((0, 0), (1, 20))
    """
    if resume is None:
        return 0, 0
    epoch, batch = (int(value) for value in resume)
    if epoch < 0 or batch < 0 or epoch >= epochs:
        raise ValueError(f"resume at epoch {epoch}, batch {batch}: the epoch must be from 0 to {epochs - 1} "
                         f"(the run has {epochs} epoch(s): pass --epochs to say how many in all) and the batch from 0")
    return epoch, batch


# ---------------------------------------------------------------------------------------
# WebDataset tar shards (the Kornia and DALI training loaders' `shards=`, --shards).
# ---------------------------------------------------------------------------------------
# A .cls member holds a class id of at most this many decimal digits: the DALI loader reads it
# into a window of this many bytes (int32 arithmetic), the Kornia loader checks the same limit.
CLASS_ID_DIGITS = 9
SHARDS_EXAMPLE = "'data/train-{0000..0099}.tar'"


def split_outside_braces(text, separator=","):
    """`text` split at each `separator` that is not inside braces.

    Example:
        >>> split_outside_braces("a-{0..2}.tar,b-{x,y}.tar")
        ['a-{0..2}.tar', 'b-{x,y}.tar']
    """
    pieces, depth, start = [], 0, 0
    for position, char in enumerate(text):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == separator and depth == 0:
            pieces.append(text[start:position])
            start = position + 1
    return pieces + [text[start:]]


def expand_braces(pattern):
    """Every name `pattern` stands for, as a shell expands braces: {0000..0099} counts (keeping
    the zero padding), {a,b} lists alternatives, and several (or nested) braces combine in order.
    A brace that is not closed, or one that is neither a range nor a list, is a ValueError.

    Example:
        >>> expand_braces("train-{0008..0011}.tar")
        ['train-0008.tar', 'train-0009.tar', 'train-0010.tar', 'train-0011.tar']
        >>> expand_braces("{a,b}-{1..2}.tar")
        ['a-1.tar', 'a-2.tar', 'b-1.tar', 'b-2.tar']
    """
    opening = pattern.find("{")
    if opening < 0:
        if "}" in pattern:
            raise ValueError(f"a '}}' without its '{{' at character {pattern.index('}') + 1}")
        return [pattern]
    depth = 0
    for closing in range(opening, len(pattern)):
        depth += {"{": 1, "}": -1}.get(pattern[closing], 0)
        if depth == 0:
            break
    else:
        raise ValueError(f"the '{{' at character {opening + 1} is not closed")
    if "}" in pattern[:opening]:
        raise ValueError(f"a '}}' without its '{{' at character {pattern.index('}') + 1}")
    body, head, tail = pattern[opening + 1:closing], pattern[:opening], pattern[closing + 1:]
    first, dots, last = body.partition("..")
    if dots and first.isdigit() and last.isdigit():
        low, high = int(first), int(last)
        if low > high:
            raise ValueError(f"the range {{{body}}} counts down; write it from low to high")
        # Zero padding as the shell keeps it: {0008..0011} gives 0008, ..., 0011.
        width = max(len(first), len(last)) if first.startswith("0") or last.startswith("0") else 0
        choices = [str(n).zfill(width) for n in range(low, high + 1)]
    else:
        choices = split_outside_braces(body)
        if len(choices) < 2:
            raise ValueError(f"{{{body}}} is neither a range of whole numbers ({{0000..0099}}) nor a list ({{a,b}})")
    return [name for choice in choices for name in expand_braces(head + choice + tail)]


def glob_paths(pattern):
    """The existing paths matching a glob pattern (*, ?, [...] in any of its parts), sorted."""
    parts = Path(pattern).parts
    fixed = next(k for k, part in enumerate(parts) if any(char in part for char in "*?["))
    base = Path(*parts[:fixed]) if fixed else Path(".")
    return sorted(base.glob("/".join(parts[fixed:])))


def shard_paths(shards):
    """The tar files that `shards` names, in order: a pattern with brace ranges
    ("train-{0000..0099}.tar"), a glob ("train-*.tar"), several of them separated by commas, or
    a list of any of these (or of paths). Every name must be an existing file, and together they
    must name at least one: a missing shard would silently leave part of the data out, so it
    is an error (FileNotFoundError) that names the pattern, what is missing and how to write it.

    Example:
        >>> [p.name for p in shard_paths("workbench/sample_data/{astronaut,coffee}.jpg")]
        ['astronaut.jpg', 'coffee.jpg']
    """
    patterns = [shards] if isinstance(shards, (str, Path)) else list(shards)
    fix = (f"Write the shards as a brace range such as {SHARDS_EXAMPLE} (zero padding kept), a glob such as "
           "'data/train-*.tar', or a comma-separated list, and quote it on the command line so that the shell "
           "passes it as it is")
    paths = []
    for spec in patterns:
        for pattern in split_outside_braces(str(spec)) if isinstance(spec, str) else [str(spec)]:
            pattern = pattern.strip()
            try:
                names = expand_braces(pattern)
            except ValueError as error:
                raise ValueError(f"shards {pattern!r}: {error}. {fix}.") from None
            missing = []
            for name in names:
                if any(char in name for char in "*?["):
                    found = [path for path in glob_paths(name) if path.is_file()]
                    missing += [] if found else [name]
                    paths += found
                elif Path(name).is_dir():
                    raise FileNotFoundError(f"shards {pattern!r}: {name} is a folder, not a tar file. For a folder "
                                            f"of images use --images (root=); for the shards in it, e.g. "
                                            f"{str(Path(name) / '*.tar')!r}.")
                elif Path(name).is_file():
                    paths.append(Path(name))
                else:
                    missing.append(name)
            if missing:
                what = "matches no file" if len(missing) == len(names) else \
                    f"names {len(names)} files, {len(missing)} of them missing"
                raise FileNotFoundError(f"shards {pattern!r} {what} (first missing: {missing[0]}; working folder "
                                        f"{Path.cwd()}). Check the folder and the shard numbers. {fix}.")
    if not paths:
        raise FileNotFoundError(f"shards {shards!r} name no file. {fix}.")
    return paths


def check_shards_argument(parser, args):
    """--shards expanded to its files (shard_paths), or the parser's usage error naming the
    pattern and how to write it (exit status 2)."""
    if getattr(args, "shards", None):
        try:
            args.shards = shard_paths(args.shards)
        except (ValueError, OSError) as error:
            parser.error(str(error))


def class_id(data, where):
    """The class id in a .cls member's bytes: a non-negative whole number in ASCII, with
    whitespace around it allowed (b"3", b"12\\n"), of at most CLASS_ID_DIGITS digits."""
    text = data.strip(b" \t\r\n")
    if not (text.isdigit() and len(text) <= CLASS_ID_DIGITS):
        raise ValueError(f"{where} holds {bytes(data[:32])!r}, not a class id: a .cls member holds a non-negative "
                         f"whole number in ASCII of at most {CLASS_ID_DIGITS} digits, e.g. b'3'")
    return int(text)


def shard_samples(path):
    """The samples of one WebDataset tar shard, in their order in the file, as
    (key, image, label, label_member): image and label_member are (member name, data offset,
    size) in the tar (label_member None, label 0 without a .cls member; its size leaves out
    trailing whitespace).

    Members group into samples as WebDataset and DALI's fn.readers.webdataset group them: by
    key, the member's path up to the first dot of its file name, consecutive members only; the
    extension is the rest of the name ("n01.jpg": key "n01", extension "jpg"), compared without
    case. A sample's image is its first member with an image extension (IMAGE_EXTENSIONS);
    samples without one (metadata alone) are left out. Files whose name starts with a dot and
    entries that are not files (folders, links) are skipped, as DALI skips them. Only the
    headers and the .cls members are read. A compressed or damaged tar is a ValueError.
    """
    samples, key, image, label, label_member = [], None, None, 0, None

    def close():  # the sample of the members read since the key changed
        if image is not None:
            samples.append((key, image, label, label_member))

    try:
        # "r:": uncompressed only, which both loaders read by offset. The .cls bytes are read through
        # a second handle (a seek and a read: half the time of tarfile's extractfile).
        with tarfile.open(path, "r:") as tar, open(path, "rb") as raw:
            for member in tar:
                folder, _, name = member.name.rpartition("/")
                stem, _, extension = name.partition(".")
                if not member.isfile() or not stem:
                    continue
                member_key = f"{folder}/{stem}" if folder else stem
                if member_key != key:
                    close()
                    key, image, label, label_member = member_key, None, 0, None
                extension = extension.lower()
                if image is None and "." + extension in IMAGE_EXTENSIONS:
                    image = (member.name, member.offset_data, member.size)
                elif extension == "cls" and label_member is None:
                    raw.seek(member.offset_data)
                    data = raw.read(member.size)
                    label = class_id(data, f"{path}: {member.name}")
                    label_member = (member.name, member.offset_data, len(data.rstrip(b" \t\r\n")))
            close()
    except tarfile.TarError as error:
        raise ValueError(f"{path} is not an uncompressed tar file ({error}); the loaders read shards made with "
                         "tar -cf (or webdataset's ShardWriter), not .tar.gz") from None
    return samples


def index_shards(paths):
    """shard_samples of every shard in `paths`: one list per shard. At least one sample in all
    is needed: without any, a FileNotFoundError says what a sample must hold."""
    samples = [shard_samples(path) for path in paths]
    if not any(samples):
        raise FileNotFoundError(f"no samples in the shards {', '.join(map(str, paths[:3]))}"
                                f"{', ...' if len(paths) > 3 else ''}: a sample is an image member "
                                f"({', '.join(IMAGE_EXTENSIONS)}) with an optional .cls member holding its class id, "
                                "grouped by the name before the first dot (n01.jpg, n01.cls)")
    return samples


def read_member(path, offset, size):
    """`size` bytes of the file `path` from `offset` (a tar member's data) as a uint8 array."""
    with open(path, "rb") as file:
        file.seek(offset)
        data = np.fromfile(file, dtype=np.uint8, count=size)
    if data.size != size:
        raise ValueError(f"{path} ends inside a member ({data.size} of {size} bytes at offset {offset}): "
                         "the shard is truncated")
    return data


def soft_target_array(labels, num_classes=None):
    """Labels as float32 soft targets, one row per sample: class ids become one-hot rows (as many
    classes as the largest id + 1 unless `num_classes`); (N, C) rows are taken as they are."""
    labels = np.asarray(labels)
    if labels.ndim == 2:
        return labels.astype(np.float32)
    count = int(labels.max()) + 1 if num_classes is None else num_classes
    return np.eye(count, dtype=np.float32)[labels.astype(np.int64)]
