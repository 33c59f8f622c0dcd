"""Export options: the features a program carries only when it is exported with them.

A program copies the workbench code its main block reaches (source_copy.program_source). A
feature left out is reached through a few entry points only: the export binds each of them to
a stand-in (runtime/common.py's `left_out`) that stops with what to do, so that the code behind
them is never copied, and a user who asks for the feature (--coco, --shards, --decoder nvimgcodec)
learns in one line how to export it. A chain that needs a feature to run at all (a step that
draws from the boxes needs targets) turns it on itself.

Example:
    >>> import workbench as wb
    >>> chain = wb.Chain().add("HorizontalFlip")
    >>> export_options(chain, "kornia", shards=True)
    ExportOptions(targets=False, shards=True, gpu_decode=False)
    >>> export_options(chain, "albumentations", shards=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    workbench.errors.ExportError: shards=True: the albumentations export reads a folder of images only; ...
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, fields
from typing import Callable

from ..errors import ExportError
from ..literals import comment
from ..runtime.common import EXPORT_OPTIONS


@dataclass(frozen=True)
class ExportOptions:
    """What an exported program carries besides the chain, its --save, --bench and training loop."""
    targets: bool = False  # masks, boxes and keypoints moved with the pixels (--coco, --masks)
    shards: bool = False  # WebDataset tar shards instead of a folder (--shards)
    gpu_decode: bool = False  # the Kornia loader decodes JPEGs on the GPU (--decoder)


# What each option is, in the words of the stand-ins' message and the app's boxes.
FEATURES = EXPORT_OPTIONS
# The backends whose programs have each feature, and what the others do instead.
BACKENDS = {
    "targets": {"kornia": "", "dali": "", "albumentations": ""},
    "shards": {"kornia": "", "dali": "",
               "albumentations": "the albumentations export reads a folder of images only; export to kornia or "
                                 "dali for WebDataset tar shards (--shards)"},
    "gpu_decode": {"kornia": "",
                   "dali": "the dali export decodes on the GPU whenever it runs there (its mixed decoder); "
                           "there is nothing to add",
                   "albumentations": "the albumentations export runs on the CPU; export to kornia or dali to decode "
                                     "on the GPU"},
}

# The entry points of each feature's code in each program: names its definitions call only when
# the feature is used. An export made without the feature binds them to stand-ins instead.
LEFT_OUT = {
    "kornia": {
        "targets": ("loader_annotations", "annotated_inputs", "sample_targets", "batch_targets", "per_image",
                    "target_arrays", "augment_targets", "targets_on"),
        "shards": ("TarShardDataset", "EncodedTarShardDataset", "check_shards_argument", "decode_shard_images"),
        "gpu_decode": ("EncodedImageFolderDataset", "EncodedTarShardDataset", "collate_encoded", "GpuDecodingLoader",
                       "nvimgcodec_jpeg_decoder", "torchvision_jpeg_decoder"),
    },
    "dali": {
        "targets": ("loader_annotations", "annotated_inputs", "sample_targets", "batch_targets", "per_image",
                    "target_arrays", "augment_targets", "moved_targets"),
        "shards": ("shard_reader", "webdataset_reader", "check_shards_argument", "decode_shard_images"),
    },
    "albumentations": {
        "targets": ("loader_annotations", "annotated_inputs", "sample_targets", "batch_targets", "per_image",
                    "target_arrays", "augment_targets"),
    },
}
# What an export made without an option binds besides the stand-ins (each name's value without it).
PLAIN = {
    ("kornia", "gpu_decode"): {"resolve_decoder": "pil_decoder"},
}


def export_options(chain, backend: str, targets: bool = False, shards: bool = False,
                   gpu_decode: bool = False) -> ExportOptions:
    """The options of `chain`'s program for `backend`, checked: each must be a bool and have code on
    that backend; targets are on whenever a step draws from the boxes (RandomIoUCrop, ...).

    Example:
        >>> import workbench as wb
        >>> export_options(wb.Chain().add("RandomIoUCrop"), "kornia").targets
        True
    """
    asked = {"targets": targets, "shards": shards, "gpu_decode": gpu_decode}
    for option, value in asked.items():
        if not isinstance(value, bool):
            raise ExportError(f"{option} must be True or False, got {value!r}")
        reason = BACKENDS[option].get(backend, "")
        if value and reason:
            raise ExportError(f"{option}=True: {reason}")
    if reads_boxes(chain):
        asked["targets"] = True
    return ExportOptions(**asked)


def options_of(backend: str) -> tuple[str, ...]:
    """The options a `backend` program takes, in order.

    Example:
        >>> options_of("albumentations")
        ('targets',)
    """
    return tuple(f.name for f in fields(ExportOptions) if not BACKENDS[f.name].get(backend, ""))


def everything(backend: str) -> ExportOptions:
    """Every option `backend` takes, on: the program the workbench itself loads to preview, run and
    estimate a chain (codegen.emit), so that one module serves them all. An export made without an
    option is that program less the option's code: the same pixels (tests/test_export_options.py).

    Example:
        >>> everything("dali")
        ExportOptions(targets=True, shards=True, gpu_decode=False)
    """
    return ExportOptions(**{option: True for option in options_of(backend)})


def left_out_names(backend: str, options: ExportOptions, unused=()) -> tuple[str, ...]:
    """Every name an export made with `options` binds in its options section, `unused` (ChainFeature)
    included (see options_section)."""
    names: dict[str, None] = {name: None for feature in unused for name in feature.names}
    for option in options_of(backend):
        if not getattr(options, option):
            names.update(dict.fromkeys(LEFT_OUT[backend][option]))
            names.update(dict.fromkeys(PLAIN.get((backend, option), {})))
    return tuple(names)


@dataclass(frozen=True)
class ChainFeature:
    """Code a program reaches only for some chains: what it is, whether `chain` needs it (a
    function of the chain, erring towards yes), and the entry points an export of a chain without
    it binds to stand-ins that a correct export never calls (runtime/common.py's not_in_chain)."""
    words: str
    needed: Callable
    names: tuple[str, ...]


def reads_boxes(chain) -> bool:
    """Whether a step of `chain` draws from the boxes (RandomIoUCrop): ChainFeature.needed of the code
    that feeds it them.

    Example:
        >>> import workbench as wb
        >>> reads_boxes(wb.Chain().add("RandomIoUCrop")), reads_boxes(wb.Chain().add("Rotate"))
        (True, False)
    """
    return any(op.spec.reads_boxes for op in chain.enabled_ops())


def unused_features(chain, features) -> list[ChainFeature]:
    """The `features` (ChainFeature) `chain` does not need."""
    return [feature for feature in features if not feature.needed(chain)]


def options_section(backend: str, options: ExportOptions, unused=()) -> str:
    """The options section of a program: which features it was exported with, and for each one it
    was made without, its entry points bound to stand-ins (the text starts with its banner);
    then the same for the `unused` ChainFeatures, the code its chain never runs.

    Example:
        >>> print(options_section("albumentations", ExportOptions()))
        # ---- Export options ----
        # Made with: none of the options.
        # Left out (each stand-in below says how to export it):
        #   targets: masks, boxes and keypoints (--coco, --masks)
        loader_annotations = annotated_inputs = sample_targets = batch_targets = left_out("targets")
        per_image = target_arrays = augment_targets = left_out("targets")
        TARGETS_REFUSED = None  # (what the program gives the stand-ins, which do not read it)
    """
    taken = options_of(backend)
    with_ = [option for option in taken if getattr(options, option)]
    without = [option for option in taken if not getattr(options, option)]
    lines = [comment("---- Export options ----"), comment(f"Made with: {', '.join(with_) or 'none of the options'}.")]
    if without:
        lines.append(comment("Left out (each stand-in below says how to export it):"))
        lines += [comment(f"  {option}: {FEATURES[option]}") for option in without]
    bound: set[str] = set()
    for option in without:
        names = [name for name in LEFT_OUT[backend][option] if name not in bound]
        bound.update(names)
        lines += _bindings(names, f'left_out("{option}")')
        lines += [f"{name} = {value}" for name, value in PLAIN.get((backend, option), {}).items()]
        if option == "targets":
            lines.append("TARGETS_REFUSED = None  # (what the program gives the stand-ins, which do not read it)")
    if unused:
        lines += [comment(line) for line in textwrap.wrap(
            "Code this chain never runs, left out (its stand-ins are never called): "
            + ", ".join(feature.words for feature in unused) + ".", 100)]
    for feature in unused:
        names = [name for name in feature.names if name not in bound]
        bound.update(names)
        lines += _bindings(names, f'not_in_chain("{feature.words}")')
    return "\n".join(lines)


def _bindings(names, value: str, width: int = 100) -> list[str]:
    """`names = ... = value` statements, as many names to a line as fit in `width` characters."""
    lines, line = [], []
    for name in names:
        if line and len(" = ".join([*line, name, value])) > width:
            lines.append(" = ".join([*line, value]))
            line = []
        line.append(name)
    return lines + ([" = ".join([*line, value])] if line else [])
