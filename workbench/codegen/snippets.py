"""The snippet form of an export: the chain in the library's own terms, seeded, one line per step
under its comment, to paste into a training script. Ops the library lacks bring the workbench's
class (copied with what it uses, as the program form copies it: source_copy.copied_source), and
the snippet says so. What a snippet reproduces of the preview is in its docstring, and
tests/test_snippets.py checks each claim.

Example:
    >>> import workbench as wb
    >>> print(emit_snippet(wb.Chain(seed=3).add("HorizontalFlip", p=0.5), "kornia").split("SEED = 3")[1])
    <BLANKLINE>
    augmentation = torch.nn.Sequential(
        # 1. HorizontalFlip p=0.5
        K.RandomHorizontalFlip(p=0.5),
    )
    <BLANKLINE>
"""
from __future__ import annotations

from ..errors import ExportError
from ..literals import comment, literal
from ..model import ChainModel
from .albumentations import POLICIES, TRANSFORMS, TV_POLICIES, albumentations_step_lines, local_transforms
from .albumentations import PROGRAM as ALBUMENTATIONS_PROGRAM, CHAIN as ALBUMENTATIONS_CHAIN
from .dali import CHAIN as DALI_CHAIN, DALI_OPS, PROGRAM as DALI_PROGRAM, STEP_IMPORTS, step_functions
from .dali import POLICIES as DALI_POLICIES, TV_POLICIES as DALI_TV_POLICIES
from .kornia import CHAIN as KORNIA_CHAIN, LOCAL_MODULES, PROGRAM as KORNIA_PROGRAM, kornia_step_lines
from .layout import wrapped
from .source_copy import copied_source

FORMS = ("program", "snippet")


def _refuse_what_snippets_cannot_carry(chain: ChainModel, backend: str) -> None:
    """A snippet carries images only: steps that mix labels or read boxes need the program form."""
    mixing = [step.op for step in chain.enabled_ops() if step.spec.mixes_batch]
    if mixing:
        raise ExportError(f"{', '.join(mixing)} mixes the samples of a batch and their labels, which a {backend} "
                          "snippet cannot carry; export the program form (form='program', the default), whose "
                          "loader mixes images and labels together")
    boxes = [step.op for step in chain.enabled_ops() if step.spec.reads_boxes]
    if boxes:
        raise ExportError(f"{', '.join(boxes)} draws its window from each image's boxes, which a {backend} snippet "
                          "cannot carry; export the program form (form='program', the default), whose --coco "
                          "loader reads them")


def _with_groups(chain: ChainModel, own: list[str]) -> list[str]:
    """The classes a snippet copies: the workbench's own (`own`), and its StepGroup where the chain has a group."""
    return [*own, *(["StepGroup"] if any(step.is_group for _, step in chain.enabled_steps()) else [])]


def _own_classes(copied, library: str, names: list[str]) -> list[str]:
    """The copied definitions under a line that says which classes are the workbench's own."""
    if not names:
        return []
    return ["", "", comment(f"{library} has no class for {', '.join(names)}: the workbench's own, copied with what it"),
            comment("uses (the preview runs this very code)."), "", copied.definitions]


def kornia_snippet(chain: ChainModel) -> str:
    """The chain as a `torch.nn.Sequential` of Kornia modules (not yet syntax-checked: codegen.emit
    compiles it).

    Example:
        >>> import workbench as wb
        >>> "WbGaussianBlur(" in kornia_snippet(wb.Chain().add("GaussianBlur"))
        True
    """
    _refuse_what_snippets_cannot_carry(chain, "Kornia")
    enabled = chain.enabled_steps()
    roots = _with_groups(chain, sorted({name for step in chain.enabled_ops()
                                        for name, local in [step.spec.kornia.module_for(step.params)] if local}))
    # torch and K are the snippet's own: the import section sorts them in with the copied classes' imports.
    copied = copied_source([*LOCAL_MODULES, KORNIA_PROGRAM], roots, KORNIA_CHAIN, uses="torch K",
                           chain_imports=("import torch", "import kornia.augmentation as K"))
    lines = [f'"""Kornia augmentation of a workbench chain (seed {chain.seed}), to paste.',
             "",
             "`augmentation` takes a float N x 3 x H x W batch in [0, 1] (uint8 levels / 255) and returns it",
             "augmented, each sample with its own draws:",
             "",
             "    torch.manual_seed(SEED)",
             "    batch = augmentation(images)",
             "",
             "Against the workbench preview (chain.run(images, backend=\"kornia\")), given its images in the",
             "same order as one batch, right after torch.manual_seed(SEED), on the same device: the same",
             "draws, and the pixels of its step-by-step run (the program form's augment_images(..., fuse=False))",
             "bit for bit. The preview fuses steps: it resamples once per run of geometric steps where this",
             "resamples per step: after two or more resampling steps in a row a mean difference up to 1.5/255",
             "(in [0, 1] units, before a Normalize divides by its std), within 1e-4 otherwise. On a CPU the",
             "preview runs its first crops, flips, resizes, warps and ColorJitters on the images' uint8 levels",
             "as OpenCV does (each result a level, within a level or two of these), a difference the later",
             "steps carry as they carry any change of their input (a mean up to 2/255 after a Normalize). The",
             "program form adds the loader, targets and the command line.",
             '"""',
             copied.imports, *_own_classes(copied, "Kornia", roots), "", "",
             f"SEED = {literal(chain.seed)}", "", "augmentation = torch.nn.Sequential("]
    for i, step in enabled:
        lines += kornia_step_lines(step, str(i + 1), "    ")
    lines.append(")")
    return "\n".join(lines) + "\n"


def albumentations_snippet(chain: ChainModel) -> str:
    """The chain as an `A.Compose`, each transform seeded as the preview seeds it (not yet
    syntax-checked: codegen.emit compiles it).

    Example:
        >>> import workbench as wb
        >>> "A.HorizontalFlip(p=0.5)," in albumentations_snippet(wb.Chain().add("HorizontalFlip"))
        True
    """
    _refuse_what_snippets_cannot_carry(chain, "Albumentations")
    enabled = chain.enabled_steps()
    roots = _with_groups(chain, local_transforms(enabled))
    copied = copied_source([TRANSFORMS, POLICIES, TV_POLICIES, ALBUMENTATIONS_PROGRAM], [*roots, "seed_transforms"],
                           ALBUMENTATIONS_CHAIN)
    own = " and its own classes" if roots else ""
    lines = [f'"""Albumentations augmentation of a workbench chain (seed {chain.seed}), to paste.',
             "",
             "`augmentation` takes one uint8 H x W x 3 image at a time and returns it augmented (float32",
             "after a Normalize):",
             "",
             "    augmented = [augmentation(image=image)[\"image\"] for image in images]",
             "",
             "Against the workbench preview (chain.run(images, backend=\"albumentations\")): for its images in",
             "the same order, straight after this file runs (or seed_transforms(augmentation, SEED) again), the",
             "same draws and the same pixels, bit for bit. Each transform draws from a stream of its own",
             "(seed_transforms): Compose(seed=...) alone gives every transform the same seed, so two flips at",
             "p=0.5 would always flip together. The program form adds the loader, targets and the command line.",
             '"""',
             copied.imports, "", "",
             comment(f"The workbench's code that seeds the transforms{own}, copied as it stands."),
             "", copied.definitions, "", "",
             f"SEED = {literal(chain.seed)}", "", "augmentation = A.Compose(["]
    for i, step in enabled:
        lines += albumentations_step_lines(step, str(i + 1), "    ")
    lines += ["])", "seed_transforms(augmentation, SEED)"]
    return "\n".join(lines) + "\n"


def dali_snippet(chain: ChainModel) -> str:
    """The chain as DALI step functions, `augment(images)` that runs them in order, and a
    `@pipeline_def` that reads, decodes and augments a folder (not yet syntax-checked: codegen.emit
    compiles it).

    Example:
        >>> import workbench as wb
        >>> "def augmentation_pipeline(" in dali_snippet(wb.Chain().add("HorizontalFlip"))
        True
    """
    _refuse_what_snippets_cannot_carry(chain, "DALI")
    functions, names, _, conditionals = step_functions(chain)
    uses = "\n".join(functions) + "\npipeline_def fn types"
    copied = copied_source([DALI_POLICIES, DALI_TV_POLICIES, *DALI_OPS, DALI_PROGRAM], ["op_seed"], DALI_CHAIN,
                           uses=uses, chain_imports=STEP_IMPORTS)
    lines = [f'"""DALI augmentation of a workbench chain (seed {chain.seed}), to paste.',
             "",
             "`augment(images)` applies the chain's enabled steps to a batch node of H x W x 3 uint8 images (CPU or",
             "GPU) inside a DALI pipeline; each random operator has a seed of its own, derived from SEED and its step,",
             "so the draws do not depend on the pipeline's seed. `augmentation_pipeline` (below) reads a folder",
             "with one subfolder per class, decodes and augments it:",
             "",
             "    pipe = augmentation_pipeline(\"data/train\", batch_size=64, num_threads=4, device_id=0)",
             "",
             "Against the workbench preview (chain.run(images, backend=\"dali\", device=...)): for its images fed",
             "in the same order as one batch (fn.external_source) and run through augment, on the same device, the",
             "same draws and the same pixels, bit for bit. The program form adds region decoding, the loader for",
             "PyTorch, targets and the command line.",
             '"""',
             copied.imports, "", "", f"SEED = {literal(chain.seed)}",
             comment("Whether a step branches on its draws: pipelines calling augment then need DALI's conditionals."),
             f"CONDITIONALS = {conditionals}", "", "", *functions,
             comment("The workbench's code that the steps call, copied as it stands (the preview runs this code)."),
             "", copied.definitions, "", "",
             "def augment(images, seed=SEED):",
             '    """The chain\'s enabled steps, in order, on a batch node; their draws are left out."""',
             f"    for step in ({', '.join(names)}{',' if len(names) == 1 else ''}):",
             "        images, _ = step(images, seed)",
             "    return images",
             "", "",
             "@pipeline_def(enable_conditionals=CONDITIONALS)",
             "def augmentation_pipeline(file_root, gpu=True):",
             '    """(augmented images, labels) of a folder of class subfolders, shuffled; decoded on the GPU',
             '    ("mixed") unless `gpu` is False."""',
             "    encoded, labels = fn.readers.file(file_root=file_root, random_shuffle=True, seed=SEED)",
             '    images = fn.decoders.image(encoded, device="mixed" if gpu else "cpu", output_type=types.RGB)',
             "    return augment(images), labels"]
    return "\n".join(lines) + "\n"


SNIPPETS = {"kornia": kornia_snippet, "albumentations": albumentations_snippet, "dali": dali_snippet}


def check_form(form: str, backend: str) -> None:
    """ExportError unless `form` is one of FORMS and, for a snippet, `backend` has one.

    Example:
        >>> check_form("snippet", "kornia")
        >>> check_form("page", "kornia")
        Traceback (most recent call last):
        ...
        workbench.errors.ExportError: unknown export form 'page'; choose 'program' (a runnable script: loader, \
--save, --bench) or 'snippet' (the chain alone, to paste)
    """
    if form not in FORMS:
        raise ExportError(f"unknown export form {form!r}; choose 'program' (a runnable script: loader, --save, "
                          "--bench) or 'snippet' (the chain alone, to paste)")
    if form == "snippet" and backend not in SNIPPETS:
        raise ExportError(f"no snippet form for {backend!r}; snippets: {', '.join(SNIPPETS)}; export the program "
                          "form (form='program') instead")


def emit_snippet(chain: ChainModel, backend: str) -> str:
    """The snippet of `chain` for `backend` (see SNIPPETS); codegen.emit validates the chain and
    syntax-checks the result."""
    check_form("snippet", backend)
    return wrapped(SNIPPETS[backend](chain))
