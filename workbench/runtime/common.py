"""Code shared by `workbench.load_images` and every exported script.

The exporters copy these functions' source into the files they write, so the preview and
the exported code decode the same files the same way (PIL, RGB, files in name order), and
every export takes the same command-line flags. Keep them self-contained: only `argparse`,
`os`, `time`, `Path`, `np` and `Image` may be used inside.
"""
import argparse
import os
import time
from pathlib import Path

import numpy as np
from PIL import Image

IMAGE_EXTENSIONS = (".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")


def list_image_files(root):
    """Image files under `root` (recursive), sorted by their path relative to `root`."""
    root = Path(root)
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


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
        ValueError: the training images differ in size: sample 0 of the batch is 4x5, sample 1 of the batch is 6x5 (height x width), and no step of the chain makes them one size before a batch must be one tensor. To train on this folder, pass --resize HxW.
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


def contract_parser(description, seed, workers_default, workers_help):
    """The flags every exported script takes (--images, --seed, --save, --bench, ...)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--images", required=True, help="folder of images (recursive; sub-folders are classes)")
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
    return parser
