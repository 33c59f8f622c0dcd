"""What an exported training loader does with images of several sizes: where the loader's
`resize` goes in the chain, whether a folder of mixed sizes needs it, and the note and error
text both loaders (Kornia and DALI) write about it.
"""
from __future__ import annotations

import textwrap

from ..literals import comment, literal
from ..ops import get_op, list_ops


def resize_position(enabled) -> tuple[int, bool]:
    """(position among the enabled steps where the training loader's `resize` goes, whether the
    loader needs it for a folder of mixed sizes).

    The resize goes where the batch must first have one size while no step has fixed it yet:
    before the first step that mixes samples (MixUp, CutMix), else at the end of the chain.
    The loader needs it unless a size-fixing step (Resize, a crop, Pad) comes first.

    Example:
        >>> from workbench.model import Step
        >>> resize_position([(0, Step.create("HorizontalFlip")), (1, Step.create("Brightness"))])
        (2, True)
        >>> resize_position([(0, Step.create("CenterCrop", size=[64, 64])), (1, Step.create("MixUp"))])
        (2, False)
    """
    last_drawn = drawn_sizes(enabled)
    for position, (_, step) in enumerate(enabled):
        if step.spec.fixes_size and (last_drawn is None or position > last_drawn[0]):
            return len(enabled), False
        if step.spec.mixes_batch:
            return position, True
    return len(enabled), True


def drawn_sizes(enabled) -> tuple[int, str] | None:
    """(position among the enabled steps, op) of the last step that draws each image's size
    (Step.draws_sizes: RandomShortestSize, RandomResize, ScaleJitter, RandomZoomOut, or a group with a
    child that changes the size), or None.

    Example:
        >>> from workbench.model import Step
        >>> drawn_sizes([(0, Step.create("RandomResize")), (1, Step.create("HorizontalFlip"))])
        (0, 'RandomResize')
    """
    found = [(position, step.op) for position, (_, step) in enumerate(enabled) if step.draws_sizes()]
    return found[-1] if found else None


# How each exported training loader hands over a batch whose images keep sizes of their own.
DRAWN_BATCHES = {
    "kornia": "as a list of CHW tensors, one per image",
    "dali": "as one batch padded with zeros at the bottom and right to its largest image, with each image's "
            "size (the loader's \"image_sizes\", N x 2: height, width)",
}


def size_texts(enabled, backend: str, option: str) -> tuple[str, str]:
    """(note, fix) about images of several sizes in the exported training loader. The note, for
    the file's comments and its --help: the size the chain gives if a step fixes it, else what a
    folder of mixed sizes needs. The fix, for the error at a batch of several sizes: what to add
    to the chain, or the loader's size option. `option` is how the loader function takes a size,
    written for 224x224 ("make_loader's resize=(224, 224)").

    Example:
        >>> from workbench.model import Step
        >>> note, fix = size_texts([(0, Step.create("Resize", size=[64, 48]))], "dali", "resize=(224, 224)")
        >>> print(note)
        Output size: 64x48, fixed by step 1 (Resize): folders of mixed sizes train as they are.
    """
    at, needed = resize_position(enabled)
    fixing = next(((i, s) for i, s in enabled if s.spec.fixes_size), None)
    fixers = [op for op in list_ops(backend=backend) if get_op(op).fixes_size]
    named = ", ".join(fixers[:-1]) + " or " + fixers[-1]
    if at < len(enabled):
        i, step = enabled[at]
        where = f"step {i + 1} ({step.op}) mixes the samples of a batch before any step fixes their size"
        place, before = f"right before step {i + 1}", f" before step {i + 1}"
    else:
        where, place, before = ("not fixed: no step sets it, so each image keeps its own size",
                                "at the end of the chain", "")
    fix = (f"add a {named} step to the chain{before} in the workbench and export it again, or pass --resize HxW, "
           f"e.g. --resize 224x224 ({option}), which resizes every image {place}")
    if not needed:
        size = "x".join(str(side) for side in fixing[1].params["size"])
        return (f"Output size: {size}, fixed by step {fixing[0] + 1} ({fixing[1].op}): folders of mixed sizes "
                f"train as they are."), fix
    drawn = drawn_sizes(enabled)
    if drawn is not None and needed and at == len(enabled):
        return (f"Output size: drawn for each image by step {enabled[drawn[0]][0] + 1} ({drawn[1]}), so the images "
                f"of a batch keep sizes of their own: the training loader yields them {DRAWN_BATCHES[backend]}, "
                f"as torchvision's detection references feed a model, from folders of any sizes. --resize HxW "
                f"({option}) resizes every image {place} to one size instead (bilinear, antialiased). --save and "
                f"augment_images are not affected."), fix
    note = (f"Output size: {where}. A folder of one size "
            f"trains as it is. On a folder of mixed sizes (ImageNet is one) the training loader stops at the first "
            f"batch of several sizes with an error that names two of its files, unless it is given a size: "
            f"--resize HxW ({option}) resizes every image {place} (bilinear, antialiased). --save and "
            f"augment_images are not affected.")
    return note, fix


def size_section(enabled, backend: str, option: str) -> tuple[list[str], list[str]]:
    """(comment lines for the top of an exported file, source lines of its constants) about
    images of several sizes: SIZE_NOTE and SIZE_FIX (see size_texts), FIXES_SIZE and RESIZE_AT
    (see resize_position), which the exported training loaders read."""
    note, fix = size_texts(enabled, backend, option)
    at, needed = resize_position(enabled)

    def text(name: str, value: str) -> list[str]:
        pieces = textwrap.wrap(value, 96)
        return [f"{name} = ("] + [f"    {literal(p + ' ' if k < len(pieces) - 1 else p)}"
                                  for k, p in enumerate(pieces)] + [")"]

    constants = [comment("What the training loader does with images of several sizes (see --help), and the end of"),
                 comment("its error at a batch of several sizes."),
                 *text("SIZE_NOTE", note), *text("SIZE_FIX", fix),
                 comment("Whether a step fixes the image size before the batch must be one tensor (then a folder"),
                 comment("of mixed sizes trains as it is)."),
                 f"FIXES_SIZE = {literal(not needed)}",
                 comment("Where the training loader's `resize` goes: before this many of the chain's enabled steps."),
                 f"RESIZE_AT = {literal(at)}"]
    if backend == "dali":  # (the Kornia loader hands over what augment_batch gives: a list)
        drawn = drawn_sizes(enabled) is not None and needed and at == len(enabled)
        constants += [comment("Whether the chain ends with each image at a size drawn for it: the training loader"),
                      comment("then pads each batch to its largest image and hands over their sizes."),
                      f"DRAWN_SIZES = {literal(drawn)}"]
    return [comment(line) for line in textwrap.wrap(note, 96)], constants
