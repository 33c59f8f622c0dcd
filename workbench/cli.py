"""The `workbench` command: preview and export chains without a browser.

Example:
    workbench preview chain.yaml --images sample_data -o grid.png
    workbench export chain.yaml --backend kornia -o train_aug.py
    workbench export chain.yaml --backend kornia --targets --shards --gpu-decode -o train_aug.py
    workbench export chain.yaml --backend albumentations --form snippet -o aug_snippet.py
    workbench estimate chain.yaml --backend dali --batch-size 64 --image-size 224 --target 800
    workbench estimate chain.yaml --images data/images --coco data/instances.json --masks data/masks
    workbench check data/train --full --exclude-list bad.txt
    workbench index data/train -o data/train.index
    workbench ops --markdown -o docs/ops.md
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from PIL import Image

from .chain import Chain
from .check import check_images
from .codegen import FORMS
from .codegen.options import export_options, options_of
from .data import load_images
from .targets import annotation_sources, load_annotated
from .errors import InputError, WorkbenchError
from .estimate.files import image_size_from_text
from .runtime.file_table import FileTable
from .ops import REGISTRY
from .render import preview_grid
from .support_matrix import support_matrix_markdown


def _preview(args) -> int:
    chain = Chain.load(args.chain)
    targets = None
    if args.coco or args.masks or args.annotated:
        images, targets = load_annotated(args.images, coco=args.coco, masks=args.masks, limit=args.max_images)
    else:
        images = load_images(args.images)[: args.max_images]
    grid = preview_grid(chain, images, draws=args.draws, backend=args.backend, device=args.device,
                        cell=args.cell, targets=targets)
    Image.fromarray(grid).save(args.output)
    print(f"wrote {args.output}: {len(images)} image(s), original + {args.draws} draw(s) each")
    return 0


def _export(args) -> int:
    chain = Chain.load(args.chain)
    asked = {"targets": args.targets, "shards": args.shards, "gpu_decode": args.gpu_decode}
    source = chain.export(args.backend, path=args.output, overwrite=args.overwrite, form=args.form, **asked)
    if args.form == "snippet":
        print(f"wrote {args.output} ({args.backend} snippet): the chain alone, seeded, to paste into a training "
              "script; its docstring says how to call it and what it reproduces")
    else:
        options = export_options(chain, args.backend, **asked)
        carried = [option for option in options_of(args.backend) if getattr(options, option)]
        print(f"wrote {args.output} ({args.backend} program, {source.count(chr(10)):,} lines, "
              f"{'with ' + ', '.join(carried) if carried else 'no export options'}); run it: python {args.output} "
              f"--images DIR --seed {chain.seed} --save out.npz")
    return 0


def _estimate(args) -> int:
    chain = Chain.load(args.chain)
    options = dict(device=args.device, batch_size=args.batch_size, image_size=args.image_size,
                   workers=args.workers, images=args.images, runs=args.runs, batches=args.batches,
                   progress=not args.quiet, skip_bad=args.skip_bad, exclude=args.exclude)
    if args.compile:
        options["torch_compile"] = True
    if args.coco or args.masks or args.annotated:
        options["images"], options["coco"], options["masks"] = annotation_sources(args.images, args.coco, args.masks)
    if args.compare:
        result = chain.compare_backends(None if args.backend is None else args.backend.split(","), **options)
        estimates = list(result.estimates.values())
        advice = result.advise(args.target)
    else:
        result = chain.estimate(backend=args.backend or "kornia", **options)
        estimates = [result]
        advice = result.advise(args.target)
    for est in estimates:
        print(est.summary())
    if args.compare:
        print(result.summary())
    print(advice)
    if args.plot:
        result.plot(args.target).savefig(args.plot, dpi=100, bbox_inches="tight")
        print(f"wrote {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps([e.to_dict() for e in estimates], indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _check(args) -> int:
    report = check_images(args.source, full=args.full, workers=args.workers, exclude=args.exclude,
                          dali=False if args.no_dali else None)
    print(report.table())
    if args.exclude_list:
        print(f"wrote {report.write_exclusions(args.exclude_list)}: {len(report.bad)} file(s) for the loaders' "
              f"--exclude {args.exclude_list}")
    return 1 if report.bad else 0


def _index(args) -> int:
    started = time.perf_counter()
    table = FileTable.listed(args.folder)
    listed = time.perf_counter() - started
    if not len(table):
        raise InputError(f"no image files under {args.folder}")
    output = args.output or str(Path(args.folder).resolve()) + ".index"
    table.save(output)
    print(f"wrote {output}: {len(table):,} files in {len(table.classes)} class folder(s), listed in {listed:.1f} s; "
          f"pass it to an exported loader as --index {output}")
    return 0


def _image_size(text: str):
    size = image_size_from_text(text)
    if not size:
        raise argparse.ArgumentTypeError(f"image size is N or HxW (e.g. 224 or 240x320), got {text!r}")
    return size


def _ops(args) -> int:
    if args.markdown:
        text = support_matrix_markdown()
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
            print(f"wrote {args.output}")
        else:
            print(text)
        return 0

    for spec in REGISTRY.values():
        print(f"{spec.name:18s} {spec.family:11s} [{', '.join(spec.backends)}]  {spec.doc}")
        for p in spec.params:
            print(f"{'':31s}- {p.describe()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="workbench", description="Compose, preview and export augmentation chains.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("preview", help="write a grid of originals and augmented samples")
    p.add_argument("chain", help="chain file (.yaml, .yml or .json)")
    p.add_argument("--images", default=None, help="folder, glob or file (default: bundled sample_data)")
    p.add_argument("-o", "--output", default="grid.png", help="PNG file to write")
    p.add_argument("--backend", default="kornia", help="kornia, dali or albumentations")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--draws", type=int, default=3, help="augmented samples per image")
    p.add_argument("--max-images", type=int, default=8)
    p.add_argument("--cell", type=int, default=160, help="tile size in pixels")
    p.add_argument("--coco", help="a COCO instances file: draw the boxes and keypoints of the images it lists")
    p.add_argument("--masks", help="a folder of label-map PNGs named after the images: draw them")
    p.add_argument("--annotated", action="store_true",
                   help="without --images: the sample photos that ship with masks, boxes and keypoints")
    p.set_defaults(func=_preview)

    e = sub.add_parser("export", help="write the chain as a runnable, seeded script")
    e.add_argument("chain", help="chain file (.yaml, .yml or .json)")
    e.add_argument("--backend", default="kornia", help="kornia, dali or albumentations")
    e.add_argument("-o", "--output", required=True,
                   help="Python file to write, anywhere (missing folders are created)")
    e.add_argument("--overwrite", action="store_true", help="replace the file if it exists")
    e.add_argument("--form", choices=FORMS, default="program",
                   help="program (default): a runnable script with the loader, --save and --bench; snippet: the "
                        "chain alone in the library's own terms (Kornia, Albumentations), seeded, to paste")
    e.add_argument("--targets", action="store_true",
                   help="the program also moves masks, boxes and keypoints (its --coco and --masks)")
    e.add_argument("--shards", action="store_true",
                   help="the program also reads WebDataset tar shards (its --shards; kornia and dali)")
    e.add_argument("--gpu-decode", action="store_true",
                   help="the Kornia program's loader decodes JPEGs on the GPU (nvImageCodec or torchvision)")
    e.set_defaults(func=_export)

    m = sub.add_parser("estimate", help="measure the exported loader's images/s, with stage and step breakdowns")
    m.add_argument("chain", help="chain file (.yaml, .yml or .json)")
    m.add_argument("--backend", default=None,
                   help="kornia, dali or albumentations (with --compare: a comma list, default all)")
    m.add_argument("--compare", action="store_true", help="measure every backend that can run the chain")
    m.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    m.add_argument("--images", default=None, help="folder or glob of images to decode (default: bundled sample_data)")
    m.add_argument("--batch-size", type=int, default=64)
    m.add_argument("--image-size", type=_image_size, default=None,
                   help="N or HxW: images are re-encoded at this size (default: their own, or the median size)")
    m.add_argument("--workers", type=int, default=None, help="decoding processes (Kornia) / DALI threads")
    m.add_argument("--runs", type=int, default=5, help="timed stretches of the whole loader (median)")
    m.add_argument("--batches", type=int, default=None, help="batches per timed stretch (default: 256 images' worth)")
    m.add_argument("--target", type=float, default=None,
                   help="images/s your model consumes: advice says if it keeps up")
    m.add_argument("--compile", action="store_true",
                   help="Kornia: run the fused steps through torch.compile, as the export's --compile; reports the "
                        "first compiled call")
    m.add_argument("--coco", help="a COCO instances file: the loader reads the images it lists and moves their boxes "
                                  "and keypoints, as the export's --bench --coco")
    m.add_argument("--masks", help="a folder of label-map PNGs named after the images: the loader moves them too")
    m.add_argument("--annotated", action="store_true",
                   help="without --images: the sample photos with their masks, boxes and keypoints")
    m.add_argument("--skip-bad", action="store_true",
                   help="the loader skips files it cannot decode (as the export's --skip-bad) instead of stopping")
    m.add_argument("--exclude", metavar="FILE", help="leave out the files this exclusion list names (workbench check "
                                                     "writes one), as the export's --exclude")
    m.add_argument("--plot", help="write the breakdown plot to this PNG file")
    m.add_argument("--json", help="write the estimate(s) to this JSON file")
    m.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    m.set_defaults(func=_estimate)

    c = sub.add_parser("check", help="find the images the loaders cannot decode; sizes and colour modes of the rest",
                       description="Open every image of a folder (recursive) or every sample of WebDataset shards as "
                                   "the training loaders do, on several processes. Exit status 1 when a file cannot "
                                   "be read, 0 otherwise.")
    c.add_argument("source", help="a folder of images, or WebDataset shards ('train-{0000..0099}.tar', quoted)")
    c.add_argument("--full", action="store_true",
                   help="decode every pixel, with PIL and (where installed) DALI, as the loaders do; without it only "
                        "headers and file endings are read (fast: finds empty, non-image and truncated files)")
    c.add_argument("--workers", type=int, default=None, help="processes (default: every core)")
    c.add_argument("--exclude-list", metavar="FILE",
                   help="write the unreadable files to FILE, for the exported loaders' --exclude FILE")
    c.add_argument("--exclude", metavar="FILE", help="skip the files an earlier list names")
    c.add_argument("--no-dali", action="store_true", help="with --full: decode with PIL only")
    c.set_defaults(func=_check)

    x = sub.add_parser("index", help="list a training folder once into an index file the loaders read (--index)",
                       description="List the image files under FOLDER (recursive, as the exported loaders list it) "
                                   "and their labels (first-level sub-folders) into one index file, which every "
                                   "exported loader reads with --index FILE in place of listing the folder.")
    x.add_argument("folder", help="the training folder")
    x.add_argument("-o", "--output", help="the index file to write (default: FOLDER.index beside the folder)")
    x.set_defaults(func=_index)

    o = sub.add_parser("ops", help="list the ops, their parameters and backends")
    o.add_argument("--markdown", action="store_true", help="the support matrix as Markdown (docs/ops.md)")
    o.add_argument("-o", "--output", help="with --markdown: write to this file")
    o.set_defaults(func=_ops)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `workbench` command; errors print one clear line and exit 2."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except WorkbenchError as exc:
        print(f"workbench {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
