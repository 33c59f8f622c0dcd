"""Emit a Kornia script for a chain: its chain section (`build_augmentation()` and the chain's
constants) around the program of runtime/kornia_program.py, copied with what it uses."""
from __future__ import annotations

from pathlib import Path

from ..errors import UnsupportedOpError
from ..literals import call, comment, group_options, identifier, literal
from ..model import ChainModel
from .. import runtime
from ..runtime.kornia_modules.fusion import LONE_COLOUR_RUNS
from ..runtime.kornia_modules.levels import SLICED_CROPS
from .loader_sizes import resize_position, size_section
from .layout import wrapped
from .program_file import program_file
from .options import ChainFeature, ExportOptions, left_out_names, options_section, unused_features
from .source_copy import program_source
from .targets_source import TARGET_MODULES, targets_section

# Files, never imported here: exporting needs neither torch nor Kornia (see source_copy).
RUNTIME = Path(runtime.__file__).parent
PROGRAM = RUNTIME / "kornia_program.py"
CHAIN = RUNTIME / "kornia_chain.py"
# The workbench's own Kornia modules (augmentations kornia.augmentation lacks): a chain's export
# copies those its steps name.
LOCAL_MODULES = tuple(sorted((RUNTIME / "kornia_modules").glob("[!_]*.py")))


def kornia_module_call(step) -> str:
    """Source of the Kornia module for one validated step.

    Example:
        >>> from workbench.model import Step
        >>> kornia_module_call(Step.create("Rotate", p=1.0, degrees=[-5, 5]))
        "K.RandomRotation(degrees=(-5.0, 5.0), resample='BILINEAR', align_corners=False, p=1.0)"
        >>> kornia_module_call(Step.create("AutoAugment", policy="svhn"))
        "K.auto.AutoAugment(policy='svhn')"
    """
    spec = step.spec
    if spec.kornia is None:
        raise UnsupportedOpError(f"{spec.name} cannot run on Kornia; backends that support it: "
                                 f"{', '.join(spec.backends) or 'none'}")
    kwargs = dict(spec.kornia.args(step.params))
    name, local = spec.kornia.module_for(step.params)
    if local:  # defined in the exported file itself (see LOCAL_MODULES)
        kwargs["p"] = float(step.p)
        return call(identifier(name), kwargs)
    # A dotted path ("auto.RandAugment") is checked piece by piece. The policies of
    # kornia.augmentation.auto take no p: their own draws decide what runs (their p is always 1).
    module = ".".join(identifier(piece) for piece in name.split("."))
    if not module.startswith("auto."):
        kwargs["p"] = float(step.p)
    return call(f"K.{module}", kwargs)


def kornia_step_lines(step, label: str, indent: str) -> list[str]:
    """Source lines of one enabled step inside build_augmentation: a comment and the module
    call, or for a group its StepGroup call with its enabled children inside.

    Example:
        >>> from workbench.model import Step
        >>> group = Step.create("OneOf", p=0.5, steps=[Step.create("Invert", p=1.0)])
        >>> print("\\n".join(kornia_step_lines(group, "1", "")))
        # 1. OneOf(weights=[]) of 1 step(s) p=0.5
        StepGroup('one', [
            # 1.1. Invert p=1
            K.RandomInvert(max_val=1.0, p=1.0),
        ], p=0.5),
    """
    lines = [indent + comment(f"{label}. {step.describe()}")]
    if not step.is_group:
        return lines + [f"{indent}{kornia_module_call(step)},"]
    lines.append(f"{indent}StepGroup({literal(step.spec.kind)}, [")
    for k, child in step.enabled_steps():
        lines += kornia_step_lines(child, f"{label}.{k + 1}", indent + "    ")
    lines.append(indent + "], " + group_options(step) + "),")
    return lines


def resized_crop_constant(enabled) -> list[str]:
    """Source lines defining RESIZED_CROP: the first enabled step's RandomResizedCrop arguments,
    which the training loader uses to crop mixed-size batches in one op, or None.

    Example:
        >>> from workbench.model import Step
        >>> resized_crop_constant([(0, Step.create("RandomResizedCrop", size=[64, 48]))])[-1]
        "RESIZED_CROP = dict(size=(64, 48), scale=(0.08, 1.0), ratio=(0.75, 1.3333), resample='BILINEAR')"
    """
    first = enabled[0][1] if enabled else None
    if first is None or first.op != "RandomResizedCrop":
        return [comment("The first step is not a RandomResizedCrop: mixed sizes run the head steps image by image."),
                "RESIZED_CROP = None"]
    if first.params.get("antialias") or first.params.get("interpolation") == "bicubic":
        return [comment("The first step, RandomResizedCrop, filters or resamples bicubically: mixed sizes run it"),
                comment("image by image (the batched crop samples bilinearly, without a filter)."),
                "RESIZED_CROP = None"]
    args = first.spec.kornia.args(first.params)
    return [comment("The first step, RandomResizedCrop: the training loader crops a batch of mixed sizes with it in"),
            comment("one batched op (resized_crop_windows, resized_crops); the preview crops image by image."),
            "RESIZED_CROP = " + call("dict", {key: args[key] for key in ("size", "scale", "ratio", "resample")})]


def per_image_head(enabled) -> tuple[int, bool]:
    """(HEAD_STEPS, PER_IMAGE) of an export: how many of the enabled (index, step) pairs run image by
    image, and whether every batch runs them so. Mixed input sizes run per image up to the first
    step that fixes the size; a step that draws each sample's size (Step.draws_sizes: such an op,
    or a group with a child that changes the size) makes every batch run per image, up to the first
    size-fixing step after it. Without such a step, the whole chain.

    Example:
        >>> from workbench.model import Step
        >>> per_image_head([(0, Step.create("CenterCrop", size=[8, 8])), (1, Step.create("HorizontalFlip"))])
        (1, False)
        >>> per_image_head([(0, Step.create("CenterCrop", size=[8, 8])), (1, Step.create("RandomResize"))])
        (2, True)
    """
    drawn = [position for position, (_, step) in enumerate(enabled) if step.draws_sizes()]
    start = drawn[-1] + 1 if drawn else 0
    fixing = next((position for position, (_, step) in enumerate(enabled)
                   if position >= start and step.spec.fixes_size), None)
    return (len(enabled) if fixing is None else fixing + 1), bool(drawn)


def _may_fuse(chain) -> bool:
    """Whether apply_steps may fuse a run (fusion_segments): it takes two steps, or one of
    LONE_COLOUR_RUNS alone (a ColorJitter, a Normalize, a step a CPU's levels look up)."""
    ops = chain.enabled_ops()
    return len(ops) > 1 or any(op.spec.kornia.module_for(op.params)[0] in LONE_COLOUR_RUNS for op in ops)


def _runs_module(names):
    """ChainFeature.needed of code that runs only for the Kornia modules `names` (a group's children count)."""
    return lambda chain: any(op.spec.kornia.module_for(op.params)[0] in names for op in chain.enabled_ops())


def _checks_one_size(chain) -> bool:
    """Whether training_batches may check that a batch is of one size (check_one_size): unless a step
    fixes the size first (FIXES_SIZE) or every batch runs its head per image (PER_IMAGE)."""
    enabled = chain.enabled_steps()
    return resize_position(enabled)[1] and not per_image_head(enabled)[1]


# Code of the program that only some chains run (see options.ChainFeature).
CHAIN_FEATURES = (
    ChainFeature("fused runs of steps", _may_fuse,
                 ("fused_geometry_plan", "fused_resample", "fusion_gate", "fusion_jitter_branches", "fused_colour",
                  "colours_on_levels", "levels_plan", "resample_levels",
                  "level_warp_plan", "window_source")),
    ChainFeature("batch mixing", lambda chain: any(op.spec.mixes_batch for op in chain.enabled_ops()),
                 ("mix_draws", "mix_labels", "soft_targets")),
    ChainFeature("groups", lambda chain: any(step.is_group for _, step in chain.enabled_steps()), ("run_group",)),
    ChainFeature("Kornia's policies", lambda chain: any(
        op.spec.kornia.module_for(op.params)[0].startswith("auto.") for op in chain.enabled_ops()), ("policy_params",)),
    ChainFeature("the batched RandomResizedCrop",
                 lambda chain: resized_crop_constant(chain.enabled_steps())[-1] != "RESIZED_CROP = None",
                 ("resized_crop_windows", "resized_crops", "window_record")),
    ChainFeature("the check of a batch of mixed sizes", _checks_one_size, ("check_one_size",)),
    ChainFeature("flips on levels", _runs_module(("RandomHorizontalFlip", "RandomVerticalFlip")), ("flips_levels",)),
    ChainFeature("crops resized on levels", _runs_module(SLICED_CROPS),
                 ("sliced_crop_on_levels", "sliced_crops_levels")),
    ChainFeature("RandomResizedCrop's draws in numpy", _runs_module(SLICED_CROPS), ("resized_crop_draws",)),
    ChainFeature("CenterCrop's corners and window on levels", _runs_module(("CenterCrop",)),
                 ("center_crop_draws", "centre_crop_levels")),
    ChainFeature("a first shrinking Resize in parts", _runs_module(("WbResize",)),
                 ("leading_resize", "resized_images")),
)


def emit_kornia(chain: ChainModel, options: ExportOptions = ExportOptions()) -> str:
    """The whole script as text (not yet syntax-checked; `export_chain` does that), carrying the
    features of `options` (see codegen/options.py)."""
    enabled = chain.enabled_steps()
    head, per_image = per_image_head(enabled)
    local = sorted({name for s in chain.enabled_ops() for name, is_local in [s.spec.kornia.module_for(s.params)]
                    if is_local})
    lines = [comment(f"Chain (seed {chain.seed}), {len(chain.steps)} step(s):")]
    for i, step in enumerate(chain.steps):
        lines += [comment("  " + line) for line in step.outline(str(i + 1))]
    # (The same texts and rules as the DALI export: the two loaders treat mixed sizes alike.)
    size_comments, size_constants = size_section(enabled, "kornia", "training_batches' resize=(224, 224)")
    lines += size_comments
    section = [comment("---- The chain ----"), f"SEED = {literal(chain.seed)}",
               comment("With mixed input sizes the first HEAD_STEPS steps run per image (the last one fixes the "
                       "size);"),
               comment("with PER_IMAGE (a step draws each sample's size) every batch runs them so."),
               f"HEAD_STEPS = {literal(head)}",
               f"PER_IMAGE = {literal(per_image)}",
               comment("(op name, position in the chain) of each enabled step, in order."),
               f"STEPS = {literal(tuple((identifier(s.op), i) for i, s in enabled))}",
               *resized_crop_constant(enabled),
               *size_constants,
               "", "",
               "def build_augmentation():",
               '    """The chain\'s enabled steps as Kornia modules, applied in order to float NCHW in [0, 1]."""',
               "    return torch.nn.Sequential("]
    for i, step in enabled:
        section += kornia_step_lines(step, str(i + 1), "        ")
    section.append("    )")
    # The targets section names the target functions its plan uses: those, and what they use, are copied.
    targets = wrapped(targets_section(chain, "kornia")) if options.targets else ""
    unused = unused_features(chain, CHAIN_FEATURES)
    chosen = options_section("kornia", options, unused)
    program = program_source(PROGRAM, CHAIN, roots=local, uses="\n".join([*section, chosen, targets]),
                             available=[*LOCAL_MODULES, *(m.__file__ for m in TARGET_MODULES)],
                             defined=left_out_names("kornia", options, unused))
    about = [comment("The program (runtime/kornia_program.py in the workbench) and the workbench code it uses,"),
             comment("copied as it stands: the preview runs this very code. Fusion (kornia_modules/fusion.py): one"),
             comment("resampling per run of geometric steps, one pass per run of colour steps; apply_steps uses it"),
             comment("unless fuse=False.")]
    return program_file(lines, section, program, about, chosen, targets)
