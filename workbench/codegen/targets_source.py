"""The targets section of an exported file: the chain's plan for masks, boxes and keypoints as
literals, for the workbench's own code that moves them (runtime/targets.py, rows.py, annotations.py:
TARGET_MODULES, whose definitions the program copies where its plan or its code uses them);
`augment_targets` moves a batch's targets from the records `augment_images` returned, as `Chain.run`
does, and --save uses it with --coco/--masks.

Example:
    >>> import workbench as wb
    >>> section = targets_section(wb.Chain().add("HorizontalFlip"), "dali")
    >>> "def augment_targets(records, sizes, targets, resize=None, until=None):" in section
    True
"""
from __future__ import annotations

import inspect

from ..errors import ExportError
from ..literals import Name, comment, literal
from ..plans import albumentations_names, kornia_names, row_plan, target_plan, target_settings, unfollowed_op
from ..runtime import annotations, rows, targets
from .source_copy import definitions, with_dependencies

# Where each backend's `augment_images` records come from, and how they become records per step.
RECORDS = {
    "kornia": "records",
    "albumentations": "records",
    "dali": "records_from_draws(TARGET_ROWS, records, len(sizes))",
}
NAMES = {"kornia": kornia_names, "albumentations": albumentations_names, "dali": lambda spec: None}
# The code that moves targets: an export copies the definitions its targets section (the plan's
# functions, augment_targets) and its program use, with what those use (program_source's `uses`).
TARGET_MODULES = (targets, rows, annotations)
# The backends whose training loaders take resize= (RESIZE_AT says where it goes).
RESIZING = ("kornia", "dali")


def _augment_targets(backend: str) -> list[str]:
    """The source lines of the export's augment_targets."""
    resizing = backend in RESIZING
    lines = [
        "def augment_targets(records, sizes, targets" + (", resize=None" if resizing else "") + ", until=None):",
        '    """The targets of a batch ({kind: one entry per image}, as Chain.run takes them) after the chain, from',
        '    the records augment_images (or the training loader) returned for it; `sizes`: each image\'s',
        '    (height, width) as it entered (see runtime/targets.py\'s move_batch).' + (
            '' if not resizing
            else '\n    `resize`: the training loader\'s resize=, which runs before enabled step RESIZE_AT.'),
        '    `until`: the targets as they enter chain step `until`, from the records of the steps before it',
        '    (the boxes RandomIoUCrop draws its window from)."""',
        "    if TARGETS_REFUSED:",
        "        raise ValueError(TARGETS_REFUSED)",
        f"    rows = sample_rows(TARGET_ROWS[:until], {RECORDS[backend]}, len(sizes))",
        "    plan = TARGET_PLAN[:until]",
    ]
    if resizing:
        lines += ["    if resize is not None and (until is None or RESIZE_AT < sum(e[\"enabled\"] for e in plan)):",
                  "        plan, rows = with_resize(plan, rows, RESIZE_AT, resize)"]
    return lines + ["    return move_batch(plan, rows, sizes, targets, TARGET_SETTINGS)"]


def _definitions(module) -> dict:
    """name -> Definition of every top-level definition of a module."""
    return definitions((inspect.getsourcefile(module),))


def _plan_literal(entries, names_entries) -> tuple[list, list]:
    """The target plan and the row plan with functions written as the names they have in the file."""
    plan, row = [], []
    for entry, names in zip(entries, names_entries):
        if entry.get("steps") is not None:
            children, child_rows = _plan_literal(entry["steps"], names["steps"])
            plan.append({"enabled": entry["enabled"], "params": entry["params"], "steps": children})
            row.append({"op": names["op"], "enabled": names["enabled"], "steps": child_rows})
            continue
        plan.append({"enabled": entry["enabled"], "params": entry["params"], "size": entry["size"], "mix": entry["mix"],
                     "keep_centres": entry["keep_centres"],
                     "geometry": Name(entry["geometry"].__name__) if entry["geometry"] else None,
                     "field": Name(entry["field"].__name__) if entry["field"] else None,
                     "erase": Name(entry["erase"].__name__) if entry["erase"] else None})
        # Steps that leave targets alone need no names: their rows only say whether they applied.
        moves = entry["geometry"] or entry["field"] or entry["erase"] or entry["mix"]
        named = names["names"] if moves else {}
        row.append({"op": names["op"], "enabled": names["enabled"],
                    "names": Name(named.__name__) if callable(named) else named})
    return plan, row


def _namers(plan: list, row: list) -> list:
    """The name functions of the steps that move targets (Albumentations' records of an angle from
    a matrix), which the file must define."""
    found = []
    for entry, names in zip(plan, row):
        if entry.get("steps") is not None:
            found += _namers(entry["steps"], names["steps"])
        elif callable(names["names"]) and (entry["geometry"] or entry["field"] or entry["erase"] or entry["mix"]):
            if names["names"].__name__ == "<lambda>":
                raise ExportError(f"{names['op']}: its records are named by a lambda, which cannot be copied into "
                                  "the export; give it a named function (AlbumentationsLowering.record)")
            found.append(names["names"])
    return found


def _listed(entries: list) -> str:
    """A list literal with one entry (one step) per line."""
    return "[\n" + "".join(f"    {literal(entry)},\n" for entry in entries) + "]"


def _refusal(chain) -> str | None:
    op = unfollowed_op(chain)
    return None if op is None else f"{op.op} cannot move masks, boxes or keypoints: {op.spec.targets.unsupported}"


def targets_section(chain, backend: str) -> str:
    """The source text of the targets section of `chain`'s export to `backend`."""
    plan = target_plan(chain.steps)
    names = row_plan(chain.steps, NAMES[backend])
    plan_literal, row_literal = _plan_literal(plan, names)
    namers = _namers(plan, names)
    helpers = sorted({item for f in namers
                      for item in with_dependencies(_definitions(inspect.getmodule(f)), [f.__name__])},
                     key=lambda d: (d.path, d.line))
    settings = target_settings(chain)
    defined = [name for module in TARGET_MODULES for name in _definitions(module)]
    clash = {n for n in (f.__name__ for f in namers)} & set(defined)
    if clash:
        raise ExportError(f"record functions {sorted(clash)} clash with the targets code's names")
    lines = [
        comment("Targets: masks, boxes and keypoints moved as the pixels were, from each sample's draws, by the"),
        comment("workbench's own functions (runtime/targets.py, rows.py, annotations.py, copied below with the"),
        comment("program): Chain.run(images, masks=..., boxes=..., keypoints=...) moves them with these very"),
        comment("functions, so --save --coco/--masks gives what it gives."),
    ]
    if helpers:
        lines += [comment("How this backend's records name what the steps drew (from the workbench's op specs)."), ""]
        lines += [part for helper in helpers for part in (helper.source, "", "")]
    lines += [
        comment("Each step's rows, as RunResult.params reports them: the names its records use."),
        f"TARGET_ROWS = {_listed(row_literal)}",
        comment("What each step does to targets: its map (geometry) and output size, its displacement field, erased"),
        comment("regions or mixing."),
        f"TARGET_PLAN = {_listed(plan_literal)}",
        comment("The chain's target settings (chain.targets)."),
        f"TARGET_SETTINGS = {literal(settings)}",
        comment("Why this chain cannot move targets (None: it can)."),
        f"TARGETS_REFUSED = {literal(_refusal(chain))}",
        "", "",
        *_augment_targets(backend),
    ]
    return "\n".join(lines) + "\n"
