"""The `workbench` command: preview and export chains without a browser.

Example:
    workbench preview chain.yaml --images sample_data -o grid.png
    workbench export chain.yaml --backend kornia -o train_aug.py
    workbench ops --markdown -o docs/ops.md
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import WorkbenchError


def _preview(args) -> int:
    from PIL import Image

    from .chain import Chain
    from .data import load_images
    from .render import preview_grid

    chain = Chain.load(args.chain)
    images = load_images(args.images)[: args.max_images]
    grid = preview_grid(chain, images, draws=args.draws, backend=args.backend, device=args.device,
                        cell=args.cell)
    Image.fromarray(grid).save(args.output)
    print(f"wrote {args.output}: {len(images)} image(s), original + {args.draws} draw(s) each")
    return 0


def _export(args) -> int:
    from .chain import Chain

    chain = Chain.load(args.chain)
    out = Path(args.output)
    chain.export(args.backend, path=out.name, folder=out.parent if str(out.parent) else ".")
    print(f"wrote {args.output} ({args.backend}); run it: python {args.output} --images DIR --seed {chain.seed} "
          "--save out.npz")
    return 0


def _ops(args) -> int:
    from .ops import REGISTRY

    if args.markdown:
        from .support_matrix import support_matrix_markdown

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
    p.add_argument("--backend", default="kornia")
    p.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or auto")
    p.add_argument("--draws", type=int, default=3, help="augmented samples per image")
    p.add_argument("--max-images", type=int, default=8)
    p.add_argument("--cell", type=int, default=160, help="tile size in pixels")
    p.set_defaults(func=_preview)

    e = sub.add_parser("export", help="write the chain as a runnable, seeded script")
    e.add_argument("chain", help="chain file (.yaml, .yml or .json)")
    e.add_argument("--backend", default="kornia")
    e.add_argument("-o", "--output", required=True, help="Python file to write")
    e.set_defaults(func=_export)

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
