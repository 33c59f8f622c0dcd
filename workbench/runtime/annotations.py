"""Reading targets from files: a COCO instances file and a folder of per-image label maps.

Shared with the exported files (their --save takes --coco and --masks): plain json, numpy and
PIL. Errors are ValueErrors naming the file and what is wrong; the workbench words them as its own.
"""
import json
from pathlib import Path

import numpy as np
from PIL import Image

from .bad_files import decode_files, report_left_out
from .common import list_image_files
from .file_table import FileTable


def coco_index(path):
    """{file_name: (COCO image entry, its annotations)} from a COCO instances file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read COCO file {str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise ValueError(f"{str(path)!r} is not a COCO instances file: it needs an 'images' list (and 'annotations')")
    by_id = {}
    for entry in data["images"]:
        if not isinstance(entry, dict) or "id" not in entry or "file_name" not in entry:
            raise ValueError(f"{str(path)!r}: every entry of 'images' needs 'id' and 'file_name', got {entry!r:.80}")
        by_id[entry["id"]] = (entry, [])
    for ann in data.get("annotations", []):
        if not isinstance(ann, dict) or ann.get("image_id") not in by_id or "bbox" not in ann:
            raise ValueError(f"{str(path)!r}: annotation {ann.get('id') if isinstance(ann, dict) else ann!r} needs a "
                             "'bbox' and an 'image_id' listed in 'images'")
        by_id[ann["image_id"]][1].append(ann)
    return {str(entry["file_name"]): (entry, anns) for entry, anns in by_id.values()}


def coco_name(file, root, names):
    """The COCO file_name naming `file`: its path under the image folder `root`, or its bare name."""
    file = Path(file)
    if root is not None:
        try:
            relative = file.relative_to(root).as_posix()
        except ValueError:
            relative = None
        if relative in names:
            return relative
    return file.name if file.name in names else None


def coco_targets(anns):
    """(boxes [x1, y1, x2, y2], labels, keypoints, visible) of one image's COCO annotations:
    COCO's [x, y, w, h] boxes, category ids as labels; the keypoints of the annotations that have
    them (None when none has), COCO's v = 0 (not labelled) flagged not visible."""
    boxes = np.array([[a["bbox"][0], a["bbox"][1], a["bbox"][0] + a["bbox"][2], a["bbox"][1] + a["bbox"][3]]
                      for a in anns], dtype=np.float64).reshape(-1, 4)
    labels = np.array([int(a.get("category_id", 0)) for a in anns], dtype=np.int64)
    points = [np.asarray(a["keypoints"], dtype=np.float64).reshape(-1, 3) for a in anns if a.get("keypoints")]
    if not points:
        return boxes, labels, None, None
    points = np.concatenate(points)
    return boxes, labels, points[:, :2].copy(), points[:, 2] > 0


def read_mask(path, image):
    """The label map of `image` at `path` (a single-channel PNG: L, I;16 or I)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"image {str(image)!r} has no mask: {str(path)!r} is missing (every image needs one)")
    try:
        with Image.open(path) as handle:
            mask = np.asarray(handle)
    except Exception as exc:  # PIL raises many types for corrupt data
        raise ValueError(f"cannot read mask {str(path)!r} ({type(exc).__name__}: {exc})") from None
    if mask.ndim != 2:
        raise ValueError(f"mask {str(path)!r} has {mask.shape[2]} channels; a mask is a single-channel label map "
                         "(PNG mode L, I;16 or I)")
    return mask


def annotated_files(files, root, coco=None, masks=None):
    """The image files that have annotations, in the given order: those the COCO file lists, or
    without one, those with a mask PNG named after them (cat.jpg: cat.png) in `masks`. Returns
    (files, COCO index or None)."""
    index = coco_index(coco) if coco is not None else None
    if masks is not None and not Path(masks).is_dir():
        raise ValueError(f"mask folder {str(masks)!r} does not exist")
    if index is not None:
        return [f for f in files if coco_name(f, root, index) is not None], index
    return [f for f in files if (Path(masks) / f"{Path(f).stem}.png").is_file()], None


def any_keypoints(files, root, index):
    """Whether any annotation of `files` in the COCO `index` (None: no COCO file) has keypoints."""
    return index is not None and any(a.get("keypoints") for f in files for a in index[coco_name(f, root, index)][1])


def image_targets(file, root, index=None, masks=None, keypoints=False):
    """One image's targets {kind: value}: boxes and box_labels from the COCO `index`, with
    `keypoints` its keypoints and keypoints_visible too (none: (0, 2)); its mask from the folder
    `masks`. What the training loaders read for each sample."""
    targets = {}
    if index is not None:
        boxes, labels, points, visible = coco_targets(index[coco_name(file, root, index)][1])
        targets["boxes"], targets["box_labels"] = boxes, labels
        if keypoints:
            targets["keypoints"] = points if points is not None else np.zeros((0, 2))
            targets["keypoints_visible"] = visible if visible is not None else np.zeros(0, bool)
    if masks is not None:
        targets["mask"] = read_mask(Path(masks) / f"{Path(file).stem}.png", file)
    return targets


def read_targets(files, root, index=None, masks=None):
    """The targets of `files` ({kind: one entry per file}, as chain.run takes them): boxes,
    box_labels and (where any annotation has them) keypoints and keypoints_visible from the COCO
    `index`; masks from the folder `masks`."""
    keypoints = any_keypoints(files, root, index)
    return batch_targets([image_targets(f, root, index, masks, keypoints) for f in files])


def batch_targets(samples):
    """Per-image targets (image_targets) as {kind: one entry per image}, as chain.run takes them."""
    kinds = samples[0].keys() if samples else ()
    return {("masks" if kind == "mask" else kind): [sample[kind] for sample in samples] for kind in kinds}


def per_image(moved):
    """Moved targets (runtime/targets.py's move_batch: {kind: one entry per image}) as one dict
    per image: "masks" becomes "mask"; "sizes" is left out."""
    kinds = [kind for kind in moved if kind != "sizes"]
    count = len(moved[kinds[0]]) if kinds else 0
    return [{("mask" if kind == "masks" else kind): moved[kind][n] for kind in kinds} for n in range(count)]


def annotated_folder(root, coco=None, masks=None):
    """The annotated images under the folder `root` (see annotated_files) for a training loader
    or --save: (files, COCO index or None, whether their annotations have keypoints). A
    ValueError when none has annotations."""
    root = Path(root)
    files, index = annotated_files(list_image_files(root), root, coco, masks)
    if not files:
        raise ValueError(f"no image under {str(root)!r} has annotations in {str(coco or masks)!r}")
    return files, index, any_keypoints(files, root, index)


class PackedTargets:
    """Every annotated image's COCO boxes, labels and keypoints in a few numpy arrays (one row per
    box or keypoint, and where each image's rows start), not the COCO file's dicts per image: a
    DataLoader worker reads them without copying their pages (see file_table.py).

    Example:
        >>> index = {"a.jpg": ({}, [{"bbox": [1, 2, 3, 4], "category_id": 5}]), "b.jpg": ({}, [])}
        >>> packed = PackedTargets([Path("a.jpg"), Path("b.jpg")], Path("."), index, keypoints=False)
        >>> packed.of(0)["boxes"].tolist(), packed.of(1)["boxes"].shape
        ([[1.0, 2.0, 4.0, 6.0]], (0, 4))
    """

    def __init__(self, files, root, index, keypoints):
        each = [coco_targets(index[coco_name(file, root, index)][1]) for file in files]
        self.keypoints = keypoints
        self.boxes = np.concatenate([boxes for boxes, _, _, _ in each] or [np.zeros((0, 4))])
        self.box_labels = np.concatenate([labels for _, labels, _, _ in each] or [np.zeros(0, np.int64)])
        self.box_starts = np.cumsum([0] + [len(labels) for _, labels, _, _ in each])
        if keypoints:
            points = [np.zeros((0, 2)) if points is None else points for _, _, points, _ in each]
            self.points = np.concatenate(points)
            self.visible = np.concatenate([np.zeros(0, bool) if visible is None else visible
                                           for _, _, _, visible in each])
            self.point_starts = np.cumsum([0] + [len(p) for p in points])

    def of(self, i):
        """Image i's targets, as image_targets gives them (copies)."""
        box = slice(self.box_starts[i], self.box_starts[i + 1])
        targets = {"boxes": self.boxes[box].copy(), "box_labels": self.box_labels[box].copy()}
        if self.keypoints:
            point = slice(self.point_starts[i], self.point_starts[i + 1])
            targets["keypoints"], targets["keypoints_visible"] = self.points[point].copy(), self.visible[point].copy()
        return targets


def loader_annotations(root, coco=None, masks=None, refused=None, shards=None):
    """What a training loader reads targets from: None without `coco` and `masks`, else
    {"root", "files" (the annotated images, see annotated_folder, as a FileTable), "packed" (their
    COCO targets as PackedTargets, or None), "masks", "keypoints"}, which sample_targets reads:
    arrays, not a Python object per image. A ValueError saying why when the chain cannot move
    targets (`refused`) or the images come as `shards`."""
    if coco is None and masks is None:
        return None
    if refused:
        raise ValueError(f"coco/masks: {refused}")
    if shards is not None or root is None:
        raise ValueError("coco= and masks= (--coco, --masks) annotate a folder of images (root=, --images), not shards")
    files, index, keypoints = annotated_folder(root, coco, masks)
    packed = None if index is None else PackedTargets(files, Path(root), index, keypoints)
    return {"root": Path(root), "files": FileTable.of_paths(root, files), "packed": packed, "masks": masks,
            "keypoints": keypoints}


def sample_targets(annotations, i):
    """The targets of the training loader's sample i (see loader_annotations), as image_targets
    gives them."""
    targets = {} if annotations["packed"] is None else annotations["packed"].of(i)
    if annotations["masks"] is not None:
        file = annotations["files"][i]
        targets["mask"] = read_mask(Path(annotations["masks"]) / f"{Path(file).stem}.png", file)
    return targets


def annotated_inputs(args, refused=None):
    """--save's images and targets with --coco and/or --masks: the files of --images that have
    annotations (see annotated_files), decoded as decode_image decodes them, and their targets.
    `refused`: why this chain cannot move targets (then nothing is read). A file that cannot be
    decoded stops it with one line, or with --skip-bad is left out with its targets (and named)."""
    if refused:
        raise SystemExit(f"--coco/--masks: {refused}")
    if getattr(args, "shards", None):
        raise SystemExit("--coco and --masks read a folder of images (--images), not --shards")
    try:
        files, index, _ = annotated_folder(args.images, args.coco, args.masks)
        targets = read_targets(files, Path(args.images), index, args.masks)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    images, skipped = decode_files(files, getattr(args, "skip_bad", False))
    report_left_out(skipped)
    kept = [k for k, f in enumerate(files) if str(f) not in {name for name, _ in skipped}]
    return images, {kind: [values[k] for k in kept] for kind, values in targets.items()}


def target_arrays(moved):
    """Moved targets (runtime/targets.py's move_batch) as flat arrays for np.savez: "masks"
    (N x H x W; "mask_00000", ... when sizes differ), "boxes" and "box_labels" of all images one
    after another with "box_counts" per image, likewise "keypoints" and "keypoints_visible" with
    "keypoint_counts". targets_from_arrays reads them back."""
    arrays = {}
    if moved.get("masks") is not None:
        masks = moved["masks"]
        if len({m.shape for m in masks}) == 1:
            arrays["masks"] = np.stack(masks)
        else:
            arrays.update({f"mask_{i:05d}": m for i, m in enumerate(masks)})
    for kind, extra, count, width in (("boxes", "box_labels", "box_counts", 4),
                                      ("keypoints", "keypoints_visible", "keypoint_counts", 2)):
        if moved.get(kind) is not None:
            arrays[kind] = np.concatenate([np.reshape(v, (-1, width)) for v in moved[kind]]).astype(np.float32)
            arrays[extra] = np.concatenate([np.reshape(v, -1) for v in moved[extra]])
            arrays[count] = np.array([len(v) for v in moved[kind]], dtype=np.int64)
    return arrays


def targets_from_arrays(arrays):
    """The per-image targets that target_arrays flattened ({kind: one entry per image})."""
    out = {}
    if "masks" in arrays:
        out["masks"] = list(arrays["masks"])
    elif "mask_00000" in arrays:
        out["masks"] = [arrays[k] for k in sorted(k for k in arrays if k.startswith("mask_"))]
    for kind, extra, count in (("boxes", "box_labels", "box_counts"),
                               ("keypoints", "keypoints_visible", "keypoint_counts")):
        if count in arrays:
            ends = np.cumsum(arrays[count])
            out[kind] = np.split(arrays[kind], ends[:-1])
            out[extra] = np.split(arrays[extra], ends[:-1])
    return out
