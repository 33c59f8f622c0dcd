"""Emit an Albumentations script for a chain: its chain section (`build_compose()` and the chain's
constants) around the program of runtime/albumentations_program.py, copied with what it uses."""
from __future__ import annotations

from pathlib import Path

from ..errors import UnsupportedOpError
from ..literals import call, comment, group_options, identifier, literal
from ..model import ChainModel
from .. import runtime
from .layout import wrapped
from .program_file import program_file
from .options import ChainFeature, ExportOptions, left_out_names, options_section, reads_boxes, unused_features
from .source_copy import program_source
from .targets_source import TARGET_MODULES, targets_section

# Files, never imported here: exporting needs no Albumentations (see source_copy).
RUNTIME = Path(runtime.__file__).parent
PROGRAM = RUNTIME / "albumentations_program.py"
CHAIN = RUNTIME / "albumentations_chain.py"
TRANSFORMS = RUNTIME / "albumentations_transforms.py"
POLICIES = RUNTIME / "albumentations_policies.py"
TV_POLICIES = RUNTIME / "albumentations_tv_policies.py"
# A class -> the workbench's subclass (runtime/albumentations_transforms.py) the export writes in
# its place and copies.
LOCAL_TRANSFORMS = {"Resize": "WbResize", "LongestMaxSize": "WbLongestMaxSize",
                    "SmallestMaxSize": "WbSmallestMaxSize", "ElasticTransform": "WbElasticTransform",
                    "RandomResizedCrop": "WbRandomResizedCrop"}
# The workbench's transforms of ops Albumentations has no class for (in TRANSFORMS, the policies in
# POLICIES and TV_POLICIES): a lowering names them itself.
OWN_TRANSFORMS = ("WbPad", "WbSharpness", "WbLibjpegCompression", "WbPerspective", "WbRandomSize", "WbRandomZoomOut",
                  "WbRandomIoUCrop", "WbRandAugment", "WbTrivialAugment", "WbAutoAugment", "WbTorchvisionRandAugment",
                  "WbTorchvisionTrivialAugmentWide", "WbTorchvisionAutoAugment",
                  # Batch mixing (runtime/albumentations_mixing.py, which the program imports): they stand in
                  # the Compose, and augment_images and the loader's collate run them on the whole batch.
                  "WbMixUp", "WbCutMix", "WbTorchvisionMixUp", "WbTorchvisionCutMix", "WbTorchvisionMixUpOrCutMix")


def albumentations_transform_call(step) -> str:
    """Source of the Albumentations transform for one validated step.

    Example:
        >>> from workbench.model import Step
        >>> albumentations_transform_call(Step.create("HorizontalFlip", p=0.5))
        'A.HorizontalFlip(p=0.5)'
    """
    spec = step.spec
    if spec.albumentations is None:
        why = spec.unsupported.get("albumentations", "")
        raise UnsupportedOpError(f"{spec.name} cannot run on Albumentations{f' ({why})' if why else ''}; "
                                 f"backends that support it: {', '.join(spec.backends) or 'none'}")
    kwargs = dict(spec.albumentations.args(step.params))
    kwargs["p"] = float(step.p)
    name = identifier(spec.albumentations.transform_for(step.params))
    return call(name if name in OWN_TRANSFORMS else LOCAL_TRANSFORMS.get(name, f"A.{name}"), kwargs)


def local_transforms(steps) -> list[str]:
    """The names of the workbench's own transforms (LOCAL_TRANSFORMS) that `steps` (enabled
    (index, step) pairs, groups searched too) use, each once, in first-use order.

    Example:
        >>> from workbench.model import Step
        >>> local_transforms([(0, Step.create("Resize", size=[8, 8]))])
        ['WbResize']
    """
    names: list[str] = []
    for _, step in steps:
        if step.is_group:
            found = local_transforms(step.enabled_steps())
        else:
            name = step.spec.albumentations.transform_for(step.params) if step.spec.albumentations else None
            found = [LOCAL_TRANSFORMS[name]] if name in LOCAL_TRANSFORMS else [name] if name in OWN_TRANSFORMS else []
        names += [found_name for found_name in found if found_name not in names]
    return names


def albumentations_step_lines(step, label: str, indent: str) -> list[str]:
    """Source lines of one enabled step inside build_compose: a comment and the transform, or
    for a group its StepGroup with its enabled children inside.

    Example:
        >>> from workbench.model import Step
        >>> group = Step.create("SomeOf", n=1, steps=[Step.create("Invert", p=1.0)])
        >>> print("\\n".join(albumentations_step_lines(group, "2", "")))
        # 2. SomeOf(n=1) of 1 step(s) p=1
        StepGroup('some', [
            # 2.1. Invert p=1
            A.InvertImg(p=1.0),
        ], p=1.0, n=1),
    """
    lines = [indent + comment(f"{label}. {step.describe()}")]
    if not step.is_group:
        return lines + [f"{indent}{albumentations_transform_call(step)},"]
    lines.append(f"{indent}StepGroup({literal(step.spec.kind)}, [")
    for k, child in step.enabled_steps():
        lines += albumentations_step_lines(child, f"{label}.{k + 1}", indent + "    ")
    lines.append(indent + "], " + group_options(step) + "),")
    return lines


# Code of the program that only some chains run (see options.ChainFeature).
CHAIN_FEATURES = (
    ChainFeature("crops drawn from the boxes", reads_boxes, ("augment_with_boxes",)),
)


def emit_albumentations(chain: ChainModel, options: ExportOptions = ExportOptions()) -> str:
    """The whole script as text (`export_chain` syntax-checks it), carrying the features of
    `options` (see codegen/options.py)."""
    enabled = chain.enabled_steps()
    lines = [comment(f"Chain (seed {chain.seed}), {len(chain.steps)} step(s):")]
    for i, step in enumerate(chain.steps):
        lines += [comment("  " + line) for line in step.outline(str(i + 1))]
    section = [comment("---- The chain ----"), f"SEED = {literal(chain.seed)}",
               comment("(op name, position in the chain) of each enabled step, in order."),
               f"STEPS = {literal(tuple((identifier(s.op), i) for i, s in enabled))}",
               "", "",
               "def build_compose():",
               '    """The chain\'s enabled steps as one Albumentations pipeline (uint8 HWC in, per image);',
               '    seed it with `seed_transforms`."""',
               "    return A.Compose(["]
    for i, step in enabled:
        section += albumentations_step_lines(step, str(i + 1), "        ")
    section.append("    ])")
    # The targets section names the target functions its plan uses: those, and what they use, are copied.
    targets = wrapped(targets_section(chain, "albumentations")) if options.targets else ""
    unused = unused_features(chain, CHAIN_FEATURES)
    chosen = options_section("albumentations", options, unused)
    program = program_source(PROGRAM, CHAIN, roots=local_transforms(enabled),
                             uses="\n".join([*section, chosen, targets]),
                             available=[TRANSFORMS, POLICIES, TV_POLICIES, *(m.__file__ for m in TARGET_MODULES)],
                             defined=left_out_names("albumentations", options, unused))
    about = [comment("The program (runtime/albumentations_program.py in the workbench) and the workbench code it"),
             comment("uses, copied as it stands: the preview runs this very code.")]
    return program_file(lines, section, program, about, chosen, targets)
