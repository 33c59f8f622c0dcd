"""Image files the loaders cannot decode: the one-line error that names such a file, skipping
them (--skip-bad, `skip_bad=True`), the exclusion lists every loader takes (--exclude, which
`workbench check` writes), and the check of a whole folder or set of shards.

A training job meets a damaged file hours in, inside a DataLoader worker or a DALI thread, where
the decoder's own error names neither the file nor what to do. Every exported loader decodes
through `decode_checked` (or, on DALI, reads its failure through `dali_failure`), so the error a
user sees is one line: the file, what is wrong with it, and the two ways to go on.

Example:
    >>> from io import BytesIO
    >>> decode_checked(BytesIO(b"hello"), "cat/notes.jpg")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    workbench.runtime.bad_files.BadImageError: cat/notes.jpg: not an image file (it starts b'hello'); to skip ...
"""
import os
import re
import struct
import tarfile
import zlib
from concurrent.futures import ProcessPoolExecutor
from io import BytesIO
from pathlib import Path

from PIL import Image

from .common import IMAGE_EXTENSIONS, decode_image, index_shards, list_image_files, read_member

# What to do about such a file, said by every error and report that names one.
BAD_FILE_FIXES = ("to skip unreadable files pass --skip-bad (skip_bad=True), or list them once with "
                  "`workbench check DIR --full --exclude-list bad.txt` and pass --exclude bad.txt")

# What PIL raises for a file it cannot decode (a broken PNG chunk: SyntaxError or zlib.error; a
# truncated JPEG: OSError; a size it refuses: DecompressionBombError).
DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, zlib.error, struct.error, Image.DecompressionBombError)


class BadImageError(ValueError):
    """A file no loader can decode. Its text is one line: the file, what is wrong, the fixes.
    `name` is the file (or shard:key); `problem` what is wrong, in a few words."""

    def __init__(self, name, problem=None):
        # One argument (the whole line) is how a DataLoader re-raises a worker's error in the
        # main process: the worker's traceback then comes before the line (see bad_image_line).
        self.name, self.problem = (name, problem) if problem is not None else (None, None)
        super().__init__(name if problem is None else f"{name}: {problem}; {BAD_FILE_FIXES}")


def bad_image_line(error):
    """The one line of a BadImageError, also when a DataLoader re-raised it from a worker with
    the worker's traceback before it.

    Example:
        >>> bad_image_line(BadImageError("Caught BadImageError in DataLoader worker\\n...\\nBadImageError: a.jpg: x"))
        'a.jpg: x'
    """
    text = str(error)
    marker = "BadImageError: "
    return text[text.rindex(marker) + len(marker):].strip() if marker in text else text.strip()


def image_problem(error, data):
    """What is wrong with a file, in a few words, from PIL's error and the file's first bytes."""
    text = str(error)
    if not data:
        return "empty file (0 bytes)"
    if "truncated" in text:
        return "truncated (the file ends before its image does)"
    if isinstance(error, Image.UnidentifiedImageError) or "cannot identify" in text:
        return f"not an image file (it starts {bytes(data[:16])!r})"
    return f"damaged ({type(error).__name__}: {text.splitlines()[0] if text else 'no detail'})"


def _first_bytes(source):
    if isinstance(source, (str, Path)):
        try:
            with open(source, "rb") as file:
                return file.read(16)
        except OSError:
            return b""
    return source.getvalue()[:16] if isinstance(source, BytesIO) else b""


def decode_checked(source, name=None):
    """decode_image(source) (a path, or a file's bytes in a BytesIO), with a file it cannot
    decode (or one gone since the folder was listed) raised as a BadImageError that names it
    (`name`, default the path)."""
    name = str(name if name is not None else source)
    try:
        return decode_image(source)
    except FileNotFoundError:
        raise BadImageError(name, "missing (gone since its folder was listed)") from None
    except DECODE_ERRORS as error:
        raise BadImageError(name, image_problem(error, _first_bytes(source))) from None


def readable(read, i, count):
    """(read(i), skipped) where sample i decodes; else the next one that does, in the dataset's
    order (i + 1, i + 2, ..., wrapping around), so that a batch stays full and every rank keeps
    its number of batches. `skipped`: a tuple of (name, problem) of the samples passed over.
    Every sample unreadable is a BadImageError."""
    skipped = []
    for k in range(count):
        try:
            return read((i + k) % count), tuple(skipped)
        except BadImageError as error:
            skipped.append((error.name, error.problem))
    raise BadImageError(f"none of the {count} files can be decoded (the first: {skipped[0][0]}: {skipped[0][1]})")


def one_line_errors(batches):
    """The loader's batches; a BadImageError a worker process raised comes out as its one line
    (bad_image_line), without the worker's traceback in it."""
    try:
        yield from batches
    except BadImageError as error:
        raise BadImageError(bad_image_line(error)) from None


# How the torch loaders skip a file (readable), said in their end-of-epoch report.
REPLACED = "each replaced in its batch by the next readable file"


def report_skipped(skipped, epoch, rank=0, world_size=1, how=REPLACED):
    """The end-of-epoch line (and one line per file) naming the files --skip-bad passed over."""
    names = sorted(dict.fromkeys(skipped))
    if not names:
        return
    where = f"rank {rank}/{world_size}, " if world_size > 1 else ""
    print(f"{where}epoch {epoch}: skipped {len(names)} unreadable file(s), {how} (`workbench check` lists them "
          "all; --exclude leaves them out):", flush=True)
    for name, problem in names:
        print(f"  {name}: {problem}", flush=True)


# ---------------------------------------------------------------------------------------
# Exclusion lists (--exclude FILE): one file per line, relative to the folder the check was
# given (or absolute); a shard's sample as SHARD_FILE_NAME:KEY. A tab and a note may follow the
# name, and lines starting with # are comments.
# ---------------------------------------------------------------------------------------
def read_exclusions(path):
    """The names an exclusion list holds (a set of strings), or an empty set for None."""
    if path is None:
        return set()
    names = set()
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        name = line.split("\t", 1)[0].strip()
        if name and not name.startswith("#"):
            names.add(name)
    return names


def excluded_file(path, root, names, absolute=None):
    """Whether the file `path` under `root` is in `names` (by its path relative to root, as
    given, or absolute). Its path is resolved (a system call per file, for millions of files) only
    where `names` holds absolute paths (`absolute`; looked up when not given)."""
    path = Path(path)
    if {path.relative_to(root).as_posix(), str(path)} & names:
        return True
    if absolute is None:
        absolute = any(os.path.isabs(name) for name in names)
    return absolute and str(path.resolve()) in names


def without_excluded(files, root, exclude):
    """`files` (under `root`: a list of paths, or a FileTable) less those the exclusion list
    `exclude` names, or all of them for None."""
    names = read_exclusions(exclude)
    if not names:
        return files
    absolute = any(os.path.isabs(name) for name in names)
    if hasattr(files, "select"):
        return files.select([k for k, path in enumerate(files) if not excluded_file(path, root, names, absolute)])
    return [f for f in files if not excluded_file(f, root, names, absolute)]


def shard_sample_name(shard, key):
    """How an exclusion list names the sample `key` of the shard file `shard`."""
    return f"{Path(shard).name}:{key}"


# ---------------------------------------------------------------------------------------
# The check: every file opened as the loaders open it, on several processes.
# ---------------------------------------------------------------------------------------
# The last bytes a whole file of these formats ends with (JPEG's end-of-image marker, PNG's IEND
# chunk): a file cut short lacks them, which a header-only check can see without decoding.
END_MARKERS = {"JPEG": b"\xff\xd9", "PNG": b"IEND\xaeB`\x82"}
# How far from the end the marker may sit (some cameras and tools pad after it).
END_SLACK = 4096


def ends_whole(data, image_format):
    """Whether a file's bytes end as a whole file of `image_format` ("JPEG", "PNG") does."""
    marker = END_MARKERS.get(image_format)
    return marker is None or marker in bytes(data[-END_SLACK:])


def check_bytes(data, full):
    """(format, mode, height, width, problem) of one file's bytes: problem is "" when the
    loaders can decode it. `full` decodes the pixels as the loaders do (decode_checked); else
    only the header is read, and whether the file ends as a whole file of its format does."""
    if not data:
        return "", "", 0, 0, "empty file (0 bytes)"
    try:
        with Image.open(BytesIO(data)) as image:
            image_format, mode, (width, height) = image.format or "", image.mode, image.size
        if full:
            decode_checked(BytesIO(data), "")
        elif not ends_whole(data, image_format):
            return image_format, mode, height, width, "truncated (no end-of-image marker at its end)"
    except BadImageError as error:
        return image_format, mode, height, width, error.problem
    except DECODE_ERRORS as error:
        return "", "", 0, 0, image_problem(error, data)
    return image_format, mode, height, width, ""


def _check_file(task):
    name, path, offset, size, full = task
    try:
        data = read_member(path, offset, size).tobytes() if offset is not None else Path(path).read_bytes()
    except (OSError, ValueError) as error:
        return (name, *("", "", 0, 0), f"unreadable ({error})")
    return (name, *check_bytes(data, full))


def check_tasks(source, exclude=None):
    """What the check reads: (name, path, offset, size) per file of a folder (names relative to
    it) or per sample of shards (a list of tar paths; names SHARD:KEY), less those excluded."""
    if isinstance(source, (str, Path)) and Path(source).is_dir():
        root = Path(source)
        return [(f.relative_to(root).as_posix(), str(f), None, None)
                for f in without_excluded(list_image_files(root), root, exclude)]
    names = read_exclusions(exclude)
    paths = [Path(p) for p in ([source] if isinstance(source, (str, Path)) else source)]
    return [(shard_sample_name(path, key), str(path), offset, size)
            for path, samples in zip(paths, index_shards(paths))
            for key, (_, offset, size), _, _ in samples if shard_sample_name(path, key) not in names]


def check_files(tasks, full=False, workers=None):
    """check_bytes of every (name, path, offset, size) task, on `workers` processes (default:
    every core), in the tasks' order: a list of (name, format, mode, height, width, problem)."""
    workers = workers if workers is not None else (os.cpu_count() or 1)
    jobs = [(*task, full) for task in tasks]
    if workers <= 1 or len(jobs) < 64:
        return [_check_file(job) for job in jobs]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_check_file, jobs, chunksize=max(16, min(512, len(jobs) // (8 * workers)))))


def unreadable_among(tasks, workers=None):
    """The (name, problem) of the tasks a full decode refuses (see check_files)."""
    return [(row[0], row[5]) for row in check_files(tasks, True, workers) if row[5]]


def first_unreadable(files, root):
    """The first of `files` (in order) whose header or ending shows it unreadable, as
    (relative name, problem), or None: how a loader finds the file behind a decoder's failure
    that named none (DALI's nvImageCodec). Stops at the first one found."""
    for path in files:
        path = Path(path)
        name = path.relative_to(root).as_posix() if root is not None else str(path)
        problem = _check_file((name, str(path), None, None, False))[5]
        if problem:
            return name, problem
    return None



# ---------------------------------------------------------------------------------------
# What --save augments: every file in name order (or every shard sample in order), decoded
# through decode_checked; with --skip-bad an unreadable one is left out (and named).
# ---------------------------------------------------------------------------------------
def decode_shard_images(paths, skip_bad=False, exclude=None):
    """Every sample of the shards `paths` decoded as decode_image decodes a file (PIL, RGB), in
    order (shard by shard, each in its member order), with its key and label: (images, keys,
    labels, skipped). --save uses it, as it uses a folder's files in name order. Samples the
    exclusion list `exclude` names are left out, and so, with `skip_bad`, are unreadable ones
    (in `skipped`, as (name, problem)); without it an unreadable one is a BadImageError."""
    names = read_exclusions(exclude)
    images, keys, labels, skipped = [], [], [], []
    for path, samples in zip(paths, index_shards(paths)):
        for key, (_, offset, size), label, _ in samples:
            name = shard_sample_name(path, key)
            if name in names:
                continue
            try:
                images.append(decode_checked(BytesIO(read_member(path, offset, size).tobytes()), name))
            except BadImageError as error:
                if not skip_bad:
                    raise
                skipped.append((error.name, error.problem))
                continue
            keys.append(key)
            labels.append(label)
    return images, keys, labels, skipped


def decode_files(files, skip_bad=False):
    """decode_checked of each file, in order: (images, skipped); with
    `skip_bad` an unreadable file is left out and listed in `skipped` as (name, problem)."""
    images, skipped = [], []
    for path in files:
        try:
            images.append(decode_checked(path))
        except BadImageError as error:
            if not skip_bad:
                raise
            skipped.append((error.name, error.problem))
    return images, skipped


def report_left_out(skipped):
    """The lines naming the files --save left out (--skip-bad)."""
    if skipped:
        print(f"left out {len(skipped)} unreadable file(s) (--skip-bad):", flush=True)
        for name, problem in skipped:
            print(f"  {name}: {problem}", flush=True)


def save_inputs(args):
    """The images --save augments: the shards' samples in order (--shards), else the folder's
    (save_folder_inputs)."""
    if not args.shards:
        return save_folder_inputs(args)
    images, _, _, skipped = decode_shard_images(args.shards, args.skip_bad, args.exclude)
    report_left_out(skipped)
    if not images:
        raise SystemExit("no readable image left to save")
    return images


def save_folder_inputs(args):
    """The images --save augments from a folder (--images): its image files in name order,
    decoded as decode_image decodes them, less those --exclude names; an unreadable file stops it
    with one line, or with --skip-bad is left out (and named)."""
    files = without_excluded(list_image_files(args.images), args.images, args.exclude)
    if not files:
        raise SystemExit(f"no image files ({', '.join(IMAGE_EXTENSIONS)}) under {args.images}")
    images, skipped = decode_files(files, args.skip_bad)
    report_left_out(skipped)
    if not images:
        raise SystemExit("no readable image left to save")
    return images


def one_line_on_bad_image(command, *args):
    """command(*args); a BadImageError (from this process, a DataLoader worker or DALI) stops the
    script with its one line and exit status 1, not a traceback."""
    try:
        return command(*args)
    except BadImageError as error:
        raise SystemExit(bad_image_line(error)) from None


# DALI's errors name the file they failed on: its decoders (on the CPU and "mixed") and its
# file reader (which maps each file, an empty one failing); a shard's sample as TAR:OFFSET:MEMBER.
DALI_FAILURES = (re.compile(r"Failed to decode sample #\d+ : (.+)"), re.compile(r"File mapping failed: (.+)"))
DALI_SHARD_SAMPLE = re.compile(r"(.+\.tar):\d+:(.+)")


def dali_failure(error, files):
    """The BadImageError behind a DALI pipeline's error, or None when it is not a decoding
    failure: the file DALI names (a shard's sample as SHARD:KEY), with what is wrong with it as
    the check sees it; where DALI names none (nvImageCodec's "failure" of a file that is no
    image), the first of `files` whose header or ending shows it unreadable (first_unreadable)."""
    text = str(error)
    named = next((found for pattern in DALI_FAILURES for found in [pattern.search(text)] if found), None)
    if named:
        name = named.group(1).strip()
        in_shard = DALI_SHARD_SAMPLE.fullmatch(name)
        if in_shard:
            shard, member = in_shard.groups()
            folder, _, file_name = member.rpartition("/")
            key = f"{folder}/{file_name.partition('.')[0]}" if folder else file_name.partition(".")[0]
            return BadImageError(shard_sample_name(shard, key), shard_member_problem(shard, member))
        problem = _check_file((name, name, None, None, True))[5] if Path(name).is_file() else ""
        return BadImageError(name, problem or "DALI's decoder cannot decode it")
    if "decoders" in text and ("nvImageCodec" in text or "decode" in text.lower()):
        found = first_unreadable(files, None)
        return BadImageError(*found) if found else None
    return None


def shard_member_problem(shard, member):
    """What is wrong with the member `member` of the tar `shard`, as the full check sees it."""
    try:
        with tarfile.open(shard, "r:") as tar:
            info = tar.getmember(member)
        problem = _check_file(("", str(shard), info.offset_data, info.size, True))[5]
    except (KeyError, OSError, tarfile.TarError):
        problem = ""
    return problem or "DALI's decoder cannot decode it"
